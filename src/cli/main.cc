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
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "agent/prices.h"
#include "cli/cli_common.h"
#include "core/secrets.h"
#include "core/text.h"
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

std::vector<CLI::App*> SubcommandsOf(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

// The command a person meant (DESIGN §21): the subcommands `args` name, as
// far as they go, from the root; options of those commands and their
// values are stepped over. `unknown`: a word where a command of the last
// was expected, and none is so named.
struct Meant {
  std::vector<CLI::App*> path;
  std::string unknown;
  std::string unknown_option;  // the first option before it that none on the path knows
  std::string Name() const {
    std::string out;
    for (const CLI::App* a : path) out += (out.empty() ? "" : " ") + a->get_name();
    return out;
  }
};

Meant WalkCommands(CLI::App& root, const std::vector<std::string>& args) {
  Meant m;
  m.path.push_back(&root);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg.find('=') != std::string::npos) continue;
      // An option of this command or of one above it (they fall through):
      // one that takes a value has it next.
      const CLI::Option* opt = nullptr;
      for (auto it = m.path.rbegin(); it != m.path.rend() && opt == nullptr; ++it) {
        opt = (*it)->get_option_no_throw(arg);
      }
      if (opt == nullptr && m.unknown_option.empty()) m.unknown_option = arg;
      if (opt != nullptr && opt->get_type_size_max() > 0 && opt->get_expected_min() > 0) ++i;
      continue;
    }
    std::vector<CLI::App*> subs = SubcommandsOf(m.path.back());
    if (subs.empty()) break;  // a command's own arguments from here
    auto named = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == arg; });
    if (named == subs.end()) {
      m.unknown = arg;
      break;
    }
    m.path.push_back(*named);
  }
  return m;
}

// Its "Usage: …" line, the command named in full (`name`).
std::string UsageOf(CLI::App* app, const std::string& name) {
  const std::string help = app->help();
  const std::string own = "Usage: " + app->get_name();
  size_t at = help.find(own);
  if (at == std::string::npos) return "";
  return "Usage: " + name + help.substr(at + own.size(), help.find('\n', at) - at - own.size());
}

// What follows an error of the command `m` meant, on the same line (an
// error is one line): its usage and where its help is.
std::string Guidance(const Meant& m) {
  std::string usage = UsageOf(m.path.back(), m.Name());
  if (!usage.empty()) usage = "; u" + usage.substr(1);
  return usage + " (see " + m.Name() + " --help)";
}

// The long options (--name) of the commands on `m`'s path.
std::vector<std::string> OptionNamesOf(const Meant& m) {
  std::vector<std::string> out;
  for (const CLI::App* a : m.path) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    }
  }
  return out;
}

// mates' own options and every command, on `app`.
void AddEverything(CLI::App& app, mates::cli::Globals& g) {
  app.set_version_flag("--version,-V", "mates " MATES_VERSION);
  // Options of a parent (e.g. --workspace, --team) may follow a subcommand.
  app.fallthrough();
  app.add_option("--workspace,-w", g.workspace,
                 "Workspace folder (default: $MATES_WORKSPACE, else the current folder)");
  app.add_option("--prices", g.prices,
                 "A price table (YAML or JSON: {models: {PREFIX: {input, output, cache_write, cache_read}}}, "
                 "USD per million tokens) over the built-in one (default: $MATES_PRICES)");
  // The team and the store, before the subcommand or after it (DESIGN §21).
  mates::cli::AddTeamOption(&app, g);
  mates::cli::AddStoreOption(&app, g);
  app.require_subcommand(1);

  mates::cli::AddTeamCommands(app, g);
  mates::cli::AddSendCommand(app, g);
  mates::cli::AddInboxCommand(app, g);
  mates::cli::AddAnswerCommand(app, g);
  mates::cli::AddTasksCommands(app, g);
  mates::cli::AddLogCommand(app, g);
  mates::cli::AddMockLlmCommand(app, g);
  mates::cli::AddRunCommand(app, g);
  mates::cli::AddHostCommands(app, g);
  mates::cli::AddLeverCommands(app, g);
  mates::cli::AddAttachCommand(app, g);
  mates::cli::AddPsCommand(app, g);
  mates::cli::AddLogsCommand(app, g);
  mates::cli::AddReportCommand(app, g);
  mates::cli::AddBundleCommands(app, g);
  mates::cli::AddReplayCommand(app, g);
  mates::cli::AddStatusCommand(app, g);
  mates::cli::AddDashboardCommand(app, g);
  mates::cli::AddDemoCommand(app, g);
  mates::cli::AddClusterCommands(app, g);
  mates::cli::AddMergesCommands(app, g);
  mates::cli::AddUsageCommand(app, g);
  mates::cli::AddBudgetCommands(app, g);
  mates::cli::AddInitCommand(app, g);
  mates::cli::AddDoctorCommand(app, g);
  mates::cli::AddDocsCommands(app, g);
  mates::cli::AddMcpCommands(app, g);
  mates::cli::AddStoreCommands(app, g);
  mates::cli::AddTrustCommand(app, g);
  mates::cli::AddHooksCommands(app, g);
  mates::cli::AddClaudeCommands(app, g);
}

// `mates help [COMMAND…]` (as `COMMAND… --help`, in `args`), and an
// unknown command named plainly, at whatever depth (CLI11 would only say
// one is required), with what was near it: an exit status once it said
// so, else what `args` meant.
std::variant<int, Meant> CommandMeant(CLI::App& app, std::vector<std::string>& args) {
  // `mates help [COMMAND…]` is `mates COMMAND… --help`.
  size_t first_word = 0;  // past mates' own options (-w DIR …)
  while (first_word < args.size() && args[first_word].size() > 1 && args[first_word][0] == '-') {
    const CLI::Option* opt = app.get_option_no_throw(args[first_word]);
    first_word += opt != nullptr && opt->get_type_size_max() > 0 && opt->get_expected_min() > 0 ? 2 : 1;
  }
  if (first_word < args.size() && args[first_word] == "help") {
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(first_word));
    Meant m = WalkCommands(app, args);
    if (!m.unknown.empty()) {
      std::cerr << "mates: error: no command '" << m.unknown << "' in '" << m.Name() << "'"
                << mates::DidYouMean([&] {
                     std::vector<std::string> names;
                     for (CLI::App* s : SubcommandsOf(m.path.back())) names.push_back(s->get_name());
                     return names;
                   }(),
                   m.unknown)
                << Guidance(m) << std::endl;
      return 2;
    }
    args.push_back("--help");  // parsed below: help as the command itself gives it
  }
  const Meant meant = WalkCommands(app, args);
  if (!meant.unknown.empty() && !meant.unknown_option.empty()) {
    // `--tem x up`: the option is the mistake, and took the word after it.
    std::cerr << "mates: error: unknown option '" << meant.unknown_option << "'"
              << mates::DidYouMean(OptionNamesOf(meant), meant.unknown_option) << Guidance(meant) << std::endl;
    return 2;
  }
  if (!meant.unknown.empty()) {
    std::vector<std::string> names;
    for (CLI::App* s : SubcommandsOf(meant.path.back())) names.push_back(s->get_name());
    std::cerr << "mates: error: unknown command '" << meant.unknown << "'"
              << (meant.path.size() > 1 ? " for '" + meant.Name() + "'" : "") << mates::DidYouMean(names, meant.unknown)
              << Guidance(meant) << std::endl;
    return 2;
  }
  return meant;
}

// Parses `args`; an exit status when the command line ends there (help,
// the version, a mistake, said with what was meant and the nearest option).
std::optional<int> Parse(CLI::App& app, const std::vector<std::string>& args, const Meant& meant) {
  try {
    // (CLI11 takes the words last first.)
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An option not known: the nearest of the command's (and its parents').
    std::string hint;
    for (const auto& a : args) {
      if (a.rfind("--", 0) != 0 || a == "--") continue;
      const std::string name = a.substr(0, a.find('='));
      const std::vector<std::string> known = OptionNamesOf(meant);
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        hint = mates::DidYouMean(known, name);
        if (!hint.empty()) break;
      }
    }
    std::cerr << "mates: error: " << e.what() << hint << Guidance(meant) << std::endl;
    return 2;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  using mates::cli::Globals;
  // In an agent's sandbox (DESIGN §19) the team's own commands go to the
  // host, which runs them as that agent; the person's own (the levers, up,
  // down…) are refused; the rest run here, as usual.
  if (const char* gate = std::getenv("MATES_HOST_SOCKET"); gate != nullptr && *gate != '\0') {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (mates::host::GoesThroughTheGate(args)) return mates::host::RunThroughTheGate(gate, args);
    if (std::string why = mates::host::RefusedInTheSandbox(args); !why.empty()) {
      std::cerr << "mates: error: " << why << std::endl;
      return 2;
    }
  }
  // Keys are read once, here (DESIGN §10); commands that run agents then
  // scrub them from the environment.
  if (mates::Status s = mates::Secrets::Load(); !s.ok()) {
    std::cerr << "mates: error: " << s.message() << std::endl;
    return 2;
  }
  // What a command prints passes one filter: no stored text reaches the
  // person's terminal with a control sequence in it (DESIGN §26).
  mates::TerminalSafeBuf safe_out(std::cout.rdbuf()), safe_err(std::cerr.rdbuf());
  std::streambuf* const raw_out = std::cout.rdbuf(&safe_out);
  std::streambuf* const raw_err = std::cerr.rdbuf(&safe_err);
  struct Restore {
    std::streambuf* out;
    std::streambuf* err;
    ~Restore() {
      std::cout.flush();
      std::cerr.flush();
      std::cout.rdbuf(out);
      std::cerr.rdbuf(err);
    }
  } restore{raw_out, raw_err};
  Globals g;
  CLI::App app{"mates: teams of LLM agents working on one workspace", "mates"};
  AddEverything(app, g);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto meant = CommandMeant(app, args);
  if (const int* code = std::get_if<int>(&meant)) return *code;
  // A command an agent's gate runs for a sandboxed tool: judged on what
  // CLI11 parsed, before anything runs.
  if (!mates::cli::SandboxedAgent().empty()) {
    app.parse_complete_callback([&app] {
      if (std::string why = mates::cli::RefusedAtTheGate(app); !why.empty()) throw CLI::ValidationError(why);
    });
  }
  if (auto code = Parse(app, args, std::get<Meant>(meant))) return *code;
  // Prices before anything shows a cost (and before any thread starts).
  if (auto prices = mates::agent::LoadPrices(g.prices); prices.ok()) {
    g.price_table = std::move(*prices);
  } else {
    std::cerr << "mates: error: " << prices.status().message() << std::endl;
    return 2;
  }
  if (!g.action) {
    std::cerr << "mates: error: nothing to do (see mates --help)" << std::endl;
    return 2;
  }
  if (mates::Status s = mates::cli::ResolveTeamAndStore(g); !s.ok()) {
    std::cerr << "mates: error: " << s.message() << std::endl;
    return mates::ExitCodeFor(s);
  }
  try {
    return g.action();
  } catch (const std::exception& e) {
    // Last resort: nothing below throws on purpose.
    std::cerr << "mates: error: internal: " << e.what() << std::endl;
    return 1;
  }
}
