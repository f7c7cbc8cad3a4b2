// What a host's teams are run with (host/host.h gives them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent/breaker.h"
#include "agent/pacer.h"
#include "agent/spend.h"
#include "core/env.h"
#include "telemetry/metrics.h"
#include "telemetry/trace.h"
#include "store/roster.h"
#include "tools/tool.h"

namespace mates::team {

struct TeamOptions {
  double idle_timeout_s = 60;      // an idle teammate stops after this; 0 = waits forever
  double shutdown_timeout_s = 60;  // time to answer a shutdown request
  int teammate_max_calls = 100;    // model calls per teammate turn
  // Circuit breakers (agent/breaker.h): the stall limit is the teammates'
  // (a lead's work is talk); the turns' costs are the host's agents'.
  int stall_calls = 50;
  std::shared_ptr<agent::TurnCosts> turn_costs;
  int64_t context_budget = 0;      // 0 = 3/4 of the model's window
  // The seeds' idle loop (check, sleep 1 s), for the benchmark baseline only.
  bool seed_polling = false;
  // Worktree isolation (DESIGN §12): what teams of this host get unless
  // TeamCreate or Task says otherwise; target_branch "" = mates/<team>.
  TeamGit git;
  // What this session's agents spent, against the team's budget (DESIGN
  // §15); null = no budget. Teams created by the lead get the same budget.
  std::shared_ptr<agent::TeamSpend> spend;
  std::shared_ptr<telemetry::Metrics> metrics;  // the host's (DESIGN §29); may be null
  std::shared_ptr<telemetry::Tracer> tracer;    // the host's spans (DESIGN §29); may be null
  // The token benchmark's naive baseline: no cache breakpoints, every
  // teammate's change a lead turn of its own.
  bool naive_baseline = false;
  // More tools for each teammate (the host's MCP servers, DESIGN §14):
  // called with its registry and name as it is made.
  std::function<void(tools::ToolRegistry&, const std::string&)> extra_tools;
  // Where the teammates' tools run their processes (DESIGN §18).
  std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off();
  // The person's hooks (DESIGN §22): null = none.
  std::shared_ptr<const hooks::Runner> hooks;
  // The host's parts (core/env.h), which write and price the teammates'
  // status files; null: none is written.
  const Env* host_env = nullptr;
  // After each tool a teammate ran: its team, name, call and result (the
  // host's conflict forecast and file leases, DESIGN §30). Null = none.
  std::function<void(const std::string& team, const std::string& name, const llm::ContentBlock& call,
                     const tools::ToolResult& result)>
      after_tool;
  // A replay's pacer (agent/pacer.h); null in every other session.
  std::shared_ptr<agent::Pacer> pacer;
};

}  // namespace mates::team
