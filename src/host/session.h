// host::Session: what `mates run`, `mates up` (its forked host) and `mates
// demo` share (DESIGN §17, §33): a Host, the lead's work in it — a goal,
// work a resumed conversation left, the REPL's turns, or hosting until
// stopped — under the process's signals, and what the person is told at
// the end (merges, usage). src/cli parses the command line and prints; the
// REPL's loop (reading lines, its slash commands) is the CLI's, each line
// for the lead a Prompt here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_loop.h"
#include "core/status.h"
#include "host/host.h"
#include "host/session_signals.h"
#include "llm/provider.h"
#include "team/team_manager.h"

namespace mates::host {

class Session;

// What the session hosts (HostOptions), and what the lead is to do.
struct SessionOptions : HostOptions {
  std::string goal;  // "" = the REPL (after any resumed work)
  // How the command lines the session prints start (the CLI's `mates` with
  // the -w and --store it was given), so that they work as printed.
  std::string mates = "mates";
};

// How the session reaches the person: the host's events and lines, and the
// REPL, which reads lines (each for the lead a Session::Prompt) until the
// person ends it; without one a session with no goal ends after any
// resumed work.
struct SessionOutput : HostOutput {
  std::function<void(Session&)> repl;
};

struct SessionResult {
  // 0, or a signal's exit code (130, 143, 129), or 1 when another host
  // took the lead over; `status` says why a session failed otherwise.
  int exit_code = 0;
  Status status;
  std::optional<team::TeamSummary> deleted_team;  // what TeamDelete saw, if it ran
};

class Session {
 public:
  // Runs a session to its end: starts its host (an error before the lead
  // starts is the result's status), does what `options` say, stops the
  // host and says what the team merged and spent.
  static SessionResult Run(const SessionOptions& options, llm::Provider* provider, SessionOutput output);

  // A lead turn on `text` (the REPL's line), then the team's work after it:
  // while anybody works the lead takes in their messages and news, until
  // nobody works and nothing is unread, or a Ctrl-C.
  Result<agent::TurnResult> Prompt(const std::string& text);
  // The usage lines said at the end (and by the REPL's /usage): the lead's,
  // its subagents', each teammate's, and each team's over every run.
  std::vector<std::string> UsageLines();

  Host& host() { return host_; }
  SessionSignals& signals() { return signals_; }
  const SessionOptions& options() const { return options_; }

 private:
  Session(const SessionOptions& options, Host& host, SessionSignals& signals, const SessionOutput& output);
  int Work();
  Result<agent::TurnResult> WaitForTeam(Result<agent::TurnResult> r);
  void HostForever();
  void HostTeammates();
  void Say(const std::string& line) const;
  std::vector<std::string> MergeLines();
  void SetLeadStatus(MemberStatus status);

  const SessionOptions& options_;
  Host& host_;
  SessionSignals& signals_;
  const SessionOutput& output_;
  Status failed_;  // why the lead's work failed (a goal's turn)
};

}  // namespace mates::host
