// What `mates run` and `mates up` share: the options that choose a
// provider and shape the lead's session, and their checks.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "host/session.h"
#include "llm/provider.h"

namespace mates::cli {

struct RunArgs {
  std::vector<std::string> goal;
  std::string provider, model, base_url, scenario;
  int max_turns = 100;
  int stall_calls = 50;  // a teammate's model calls in a row without progress before it is paused; 0 = never
  int64_t context_budget = 0;
  double idle_timeout = 60;
  double shutdown_timeout = 60;
  double request_timeout = 0;
  bool fresh = false;
  std::string log;  // --log FILE: the whole trace, appended
  // Worktree isolation and the merge queue (DESIGN §12).
  std::string isolation;  // "" = the team's setting (shared for a new team)
  std::string target_branch;
  std::string git_remote;  // on a shared store: the remote branches travel through ("" = origin)
  std::string merge_check;
  double merge_timeout = 600;
  std::string merge = "auto";
  // Budgets (DESIGN §15): unset = the team's stays, 0 = none.
  std::optional<int64_t> budget_tokens;
  std::optional<double> budget_usd;
  // `up` only: host the team's teammates that no host has, not its lead
  // (a team on a shared store, DESIGN §13).
  bool teammates_only = false;
  // `up` only: --no-adopt, take over no teammate another host held (a team
  // on a shared store, DESIGN §13).
  bool no_adopt = false;
  // `up` only: the host's dashboard (DESIGN §11).
  int dashboard_port = 0;  // 0 = any free port
  bool no_dashboard = false;
  // `up` only: --no-preflight (DESIGN §27).
  bool no_preflight = false;
  // `up` only: --respawn on-work|off (DESIGN §27).
  std::string respawn = "on-work";
  // --sandbox off|workspace|strict (DESIGN §18): "" = the config's, else
  // workspace.
  std::string sandbox;
};

// Adds GOAL and the options above to `cmd`.
void AddRunOptions(CLI::App* cmd, Globals& g, RunArgs& a);
// The session `a` asks for (an empty goal given as words is refused:
// InvalidArgument).
Result<host::SessionOptions> SessionConfig(Globals& g, const RunArgs& a);
Result<std::unique_ptr<llm::Provider>> SessionProvider(const RunArgs& a);
// The sandbox of the session's tools, from --sandbox and the config files
// (sandbox/policy.h): after AdmitWorkspaceFiles, which may trust the
// workspace. What an untrusted file would have widened is said on stderr.
Status ChooseSandbox(host::HostOptions& c, const std::string& flag);
// Telemetry (DESIGN §29): the OTEL_* variables over the person's own
// config's `telemetry:` section — never the workspace's, which would let a
// repository send a team's work to a server of its choosing. A section
// that does not read is one clear error.
Result<telemetry::OtlpConfig> ChooseTelemetry();
Result<sandbox::Settings> ChooseSandboxSettings(const Workspace& ws, const std::string& flag);
// The sandbox a host of W would give what a command runs on its own
// (`mcp list`'s servers, `hooks test`'s hooks): the config files' settings,
// a runtime folder `name`.PID.
Result<std::shared_ptr<sandbox::Sandbox>> HostsSandbox(const Workspace& ws, const std::string& name);
// The person's hooks and, if trusted, the workspace's (DESIGN §22); null
// when none would run. Untrusted ones are said in a warning each.
Result<std::shared_ptr<const hooks::Runner>> ChooseHooks(const Workspace& ws);
// Adds --sandbox to `cmd`.
void AddSandboxOption(CLI::App* cmd, std::string& mode);

}  // namespace mates::cli
