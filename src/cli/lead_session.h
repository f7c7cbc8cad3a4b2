// LeadSession: what `mates run` and `mates demo` share: the lead agent and
// its team hosted in this process, on a goal or in a REPL, with live output,
// Ctrl-C handling and the usage summary.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cli/live_output.h"
#include "llm/provider.h"
#include "store/host_info.h"
#include "store/workspace.h"
#include "team/team_manager.h"

namespace mates::cli {

struct LeadSessionConfig {
  Workspace ws{"."};
  std::string team = "default";
  // The store the team is kept in (DESIGN §13): "" = the workspace's
  // files, else a PostgreSQL URL (checked), opened by the session.
  std::string store_url;
  std::string goal;  // "" = the REPL (after any resumed work)
  std::string model;
  int max_turns = 100;
  int64_t context_budget = 0;
  double idle_timeout_s = 60;
  double shutdown_timeout_s = 60;
  bool fresh = false;
  // What hosts the team, as host.json says: run, demo, up.
  HostMode mode = HostMode::kRun;
  // `mates up` (DESIGN §11): after the goal (if any), keep hosting: the
  // lead answers what arrives, teammates keep claiming, until a signal.
  bool hosted = false;
  // `mates up --teammates` (DESIGN §13): the host hosts no lead (the team
  // and its lead are another host's), only the team's teammates that no
  // process hosts, now and whenever one's host dies or stops.
  bool teammates_only = false;
  // The dashboard this host serves (DESIGN §11): -1 = none, 0 = on any
  // free port, else that port. Its URL goes into host.json.
  int dashboard_port = -1;
  // Worktree isolation and merging (DESIGN §12): the team's setting when
  // isolation was asked for (target prepared), else defaults for TeamCreate
  // and Task{isolation}.
  TeamGit git;
  bool isolation_given = false;
  // The team's budget from the command line (stored in its config); unset =
  // what the config says.
  std::optional<int64_t> budget_tokens;
  std::optional<double> budget_usd;
  // The token benchmark's naive baseline (MATES_BASELINE=naive): no cache
  // breakpoints, team news one change per lead turn. Never for real work.
  bool naive_baseline = false;
  // Called once the lead's host lock is taken and host.json is written.
  std::function<void()> on_ready;
};

struct LeadSessionResult {
  int exit_code = 0;
  std::optional<team::TeamSummary> deleted_team;  // what TeamDelete saw, if it ran
};

// Errors before the lead starts (bad team name, a lead already running)
// are printed and become the exit code.
LeadSessionResult RunLeadSession(const LeadSessionConfig& config, llm::Provider* provider,
                                 LiveOutput& out);

}  // namespace mates::cli
