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
#include "host/host.h"
#include "team/team_manager.h"

namespace mates::cli {

// What the session hosts (host/host.h), and what the lead is to do.
struct LeadSessionConfig : host::HostOptions {
  std::string goal;  // "" = the REPL (after any resumed work)
  // How the command lines the session prints start (Globals::Mates: with
  // the -w and --store it was given), so that they work as printed.
  std::string mates = "mates";
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
