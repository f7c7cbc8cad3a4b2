// mates: a runtime for teams of LLM agents. Entry point of the CLI
// (DESIGN §7): parse, run the chosen subcommand, map failures to exit codes
// 0 (success), 1 (operation failed) and 2 (bad usage or input).
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "cli/cli_common.h"
#include "core/secrets.h"

int main(int argc, char** argv) {
  using mates::cli::Globals;
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
  mates::cli::AddDemoCommand(app, g);
  mates::cli::AddClusterCommands(app, g);

  // Name an unknown command plainly (CLI11 would only say one is required).
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--workspace" || arg == "-w") {
      ++i;
      continue;
    }
    if (arg.rfind("-", 0) == 0) continue;
    auto subs = app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == arg; });
    if (subs.empty()) {
      std::cerr << "mates: error: unknown command '" << arg << "' (see mates --help)" << std::endl;
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
