// mates: a runtime for teams of LLM agents. Entry point of the CLI
// (DESIGN §7): parse, run the chosen subcommand, map failures to exit codes
// 0 (success), 1 (operation failed) and 2 (bad usage or input).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "agent/prices.h"
#include "cli/cli_common.h"
#include "core/secrets.h"
#include "host/agent_gate.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MATES_ASAN_BUILD 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define MATES_ASAN_BUILD 1
#endif
#ifdef MATES_ASAN_BUILD
// The sanitizer build only: LeakSanitizer stops the world with ptrace,
// which the sandbox refuses (DESIGN §18), so a mates run inside one
// checks no leaks rather than failing at its exit. (Called before libc's
// getenv works: the environment is read from /proc.)
extern "C" const char* __asan_default_options() {
  // Raw system calls and plain loops: the sanitizer's interceptors of
  // open, read, strlen are not ready yet.
  static char env[65536];
  long fd = ::syscall(SYS_openat, AT_FDCWD, "/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  long n = ::syscall(SYS_read, fd, env, sizeof env - 1);
  ::syscall(SYS_close, fd);
  static const char kWanted[] = "MATES_SANDBOX=";
  for (long at = 0; at < n;) {
    long k = 0;
    while (kWanted[k] != '\0' && at + k < n && env[at + k] == kWanted[k]) ++k;
    if (kWanted[k] == '\0') return "detect_leaks=0";
    while (at < n && env[at] != '\0') ++at;  // the next variable
    ++at;
  }
  return "";
}
#endif

namespace {

// Edits between `a` and `b` (Levenshtein), for "did you mean".
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean 'status'?)" for a near miss among `app`'s commands.
std::string DidYouMean(CLI::App& app, const std::string& typed) {
  std::string best;
  size_t best_d = std::max<size_t>(2, typed.size() / 3) + 1;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    size_t d = Distance(typed, sub->get_name());
    if (d < best_d) {
      best_d = d;
      best = sub->get_name();
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace

int main(int argc, char** argv) {
  using mates::cli::Globals;
  // In an agent's sandbox (DESIGN §19) the team's own commands go to the
  // host, which runs them as that agent; the rest run here, as usual.
  if (const char* gate = std::getenv("MATES_HOST_SOCKET"); gate != nullptr && *gate != '\0') {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (mates::host::GoesThroughTheGate(args)) return mates::host::RunThroughTheGate(gate, args);
  }
  // Keys are read once, here (DESIGN §10); commands that run agents then
  // scrub them from the environment.
  if (mates::Status s = mates::Secrets::Load(); !s.ok()) {
    std::cerr << "mates: error: " << s.message() << std::endl;
    return 2;
  }
  Globals g;
  CLI::App app{"mates: teams of LLM agents working on one workspace", "mates"};
  app.set_version_flag("--version", "mates 0.1.0");
  // Options of a parent (e.g. --workspace, --team) may follow a subcommand.
  app.fallthrough();
  app.add_option("--workspace,-w", g.workspace,
                 "Workspace folder (default: $MATES_WORKSPACE, else the current folder)");
  app.add_option("--prices", g.prices,
                 "A price table (YAML or JSON: {models: {PREFIX: {input, output, cache_write, cache_read}}}, "
                 "USD per million tokens) over the built-in one (default: $MATES_PRICES)");
  app.require_subcommand(1);

  mates::cli::AddTeamCommands(app, g);
  mates::cli::AddSendCommand(app, g);
  mates::cli::AddInboxCommand(app, g);
  mates::cli::AddTasksCommands(app, g);
  mates::cli::AddLogCommand(app, g);
  mates::cli::AddMockLlmCommand(app, g);
  mates::cli::AddRunCommand(app, g);
  mates::cli::AddHostCommands(app, g);
  mates::cli::AddStatusCommand(app, g);
  mates::cli::AddDashboardCommand(app, g);
  mates::cli::AddDemoCommand(app, g);
  mates::cli::AddClusterCommands(app, g);
  mates::cli::AddMergesCommands(app, g);
  mates::cli::AddUsageCommand(app, g);
  mates::cli::AddMcpCommands(app, g);
  mates::cli::AddStoreCommands(app, g);
  mates::cli::AddTrustCommand(app, g);
  mates::cli::AddHooksCommands(app, g);

  // Name an unknown command plainly (CLI11 would only say one is required).
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--workspace" || arg == "-w" || arg == "--prices") {
      ++i;
      continue;
    }
    if (arg.rfind("-", 0) == 0) continue;
    auto subs = app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == arg; });
    if (subs.empty()) {
      std::string hint = DidYouMean(app, arg);
      std::cerr << "mates: error: unknown command '" << arg << "'" << (hint.empty() ? " (see mates --help)" : hint)
                << std::endl;
      return 2;
    }
    break;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "mates: error: " << e.what() << " (see mates --help)" << std::endl;
    return 2;
  }
  // Prices before anything shows a cost (and before any thread starts).
  if (mates::Status s = mates::agent::LoadPrices(g.prices); !s.ok()) {
    std::cerr << "mates: error: " << s.message() << std::endl;
    return 2;
  }
  if (!g.action) {
    std::cerr << "mates: error: nothing to do (see mates --help)" << std::endl;
    return 2;
  }
  try {
    return g.action();
  } catch (const std::exception& e) {
    // Last resort: nothing below throws on purpose.
    std::cerr << "mates: error: internal: " << e.what() << std::endl;
    return 1;
  }
}
