// Host (DESIGN §17): what serves a team's lead and teammates in this
// process — the store, the MCP hub, the lead's tools, context, subagents
// and loop, the team manager, the merge queue and the dashboard — built in
// one place (Host::Start) in the order its members are declared, and torn
// down in the reverse order. `mates run`, `up` and `demo` (src/cli) turn
// their flags into HostOptions and drive the lead; nothing is wired
// anywhere else.
//
// Start, in order: the store is opened (a database's outages are waited
// out from then on); the team is made if missing, and the isolation and
// budget given are written into it; the hub's servers start; the lead's
// loop is made and its host lock taken (a lead whose journal says it went
// on in a team it made goes on there); the team manager and merge queue
// start; the dashboard binds; host.json says who hosts the team; and on a
// shared store the adoption of teammates whose host died begins.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/agent_loop.h"
#include "agent/prices.h"
#include "agent/process_env.h"
#include "agent/subagents.h"
#include "agent/usage.h"
#include "core/status.h"
#include "dashboard/dashboard.h"
#include "git/forecast.h"
#include "git/merge_queue.h"
#include "hooks/hooks.h"
#include "host/agent_gate.h"
#include "host/attach.h"
#include "host/levers.h"
#include "llm/provider.h"
#include "mcp/hub.h"
#include "sandbox/sandbox.h"
#include "store/host_info.h"
#include "store/team_store.h"
#include "store/workspace.h"
#include "team/team_manager.h"
#include "telemetry/metrics.h"
#include "telemetry/otlp.h"
#include "telemetry/trace.h"
#include "tools/skills.h"
#include "tools/tool.h"

namespace mates::host {

struct HostOptions {
  Workspace ws{"."};
  std::string team = "default";
  // The store the team is kept in (DESIGN §13): "" = the workspace's
  // files, else a PostgreSQL URL (checked), opened by the host.
  std::string store_url;
  std::string model;
  int max_turns = 100;
  int stall_calls = 50;  // teammates' circuit breaker (agent/breaker.h); 0 = off
  int64_t context_budget = 0;
  double idle_timeout_s = 60;
  double shutdown_timeout_s = 60;
  bool fresh = false;
  // What hosts the team, as host.json says: run, demo, up, teammates.
  HostMode mode = HostMode::kRun;
  // Hosted (`mates up`): on a shared store, teammates whose host died are
  // adopted.
  bool hosted = false;
  // `up --respawn on-work` (DESIGN §27): a task that waits with no live
  // teammate to take it brings a stopped one back.
  bool respawn = false;
  // `mates up --teammates` (DESIGN §13): no lead here (the team and its
  // lead are another host's), only the team's teammates that no process
  // hosts, now and whenever one's host dies or stops.
  bool teammates_only = false;
  // `mates up --no-adopt` (DESIGN §13): on a shared store, this host takes
  // over no teammate another host held or let go (not at its start, not
  // later); those its lead spawns it hosts.
  bool adopt = true;
  // The dashboard this host serves (DESIGN §11): -1 = none, 0 = on any
  // free port, else that port. Its URL goes into host.json.
  int dashboard_port = -1;
  // Worktree isolation and merging (DESIGN §12): the team's setting when
  // isolation was asked for (target prepared), else defaults for TeamCreate
  // and Task{isolation}.
  TeamGit git;
  bool isolation_given = false;
  // The team's budget given to this host (written into its config); unset =
  // what the config says.
  std::optional<int64_t> budget_tokens;
  std::optional<double> budget_usd;
  // The token benchmark's naive baseline: no cache breakpoints, team news
  // one change per lead turn. Never for real work.
  bool naive_baseline = false;
  // The sandbox of every process the agents' tools start (DESIGN §18),
  // as chosen from the flag and the config files (sandbox/policy.h). The
  // host makes it first and it goes last.
  sandbox::Settings sandbox;
  // The person's hooks (DESIGN §22), from the same files: null = none.
  std::shared_ptr<const hooks::Runner> hooks;
  // OTLP export of its traces, metrics and logs (DESIGN §29): from the
  // OTEL_* variables and the person's config; off when neither says where.
  telemetry::OtlpConfig telemetry;
  // Called once the lead's host lock is taken and host.json is written.
  std::function<void()> on_ready;
  // A replay's pacer (agent/pacer.h), given to every agent; null in every
  // other session.
  std::shared_ptr<agent::Pacer> pacer;
  // What model calls cost (DESIGN §15): the built-in table with the
  // person's `--prices` over it. The host's Env carries it.
  agent::PriceTable prices = agent::PriceTable::Builtin();
};

// Where a host's agents and the host itself are heard.
struct HostOutput {
  agent::AgentEvents* events = nullptr;                 // the agents' turns (outlives the host)
  std::function<void(const std::string&)> say;          // a line from the host
  std::function<void(const Member&)> on_spawn;          // a teammate started (its colour)
};

class Host {
 public:
  // Errors before the lead starts (a bad team name, a lead already
  // running, a dollar budget without a price) are the Status.
  static Result<std::unique_ptr<Host>> Start(HostOptions options, llm::Provider* provider, HostOutput output);
  // host.json goes, then the rest in reverse order of making.
  ~Host();
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  const HostOptions& options() const { return options_; }
  // The parts its agents share (core/env.h), made by the host.
  const Env& env() const { return parts_.env(); }
  TeamStore& store() { return *store_; }
  const sandbox::Sandbox& sandbox() const { return *sandbox_; }
  agent::AgentLoop& lead() { return *lead_; }
  tools::ToolContext& lead_context() { return *ctx_; }
  agent::SubagentManager& subagents() { return *subs_; }
  team::TeamManager& teams() { return *teams_; }
  const std::string& lead_name() const { return lead_name_; }
  // Set when another host took the lead's liveness lock after this one
  // lost it with its connection (two hosts must not run one lead): the
  // session stops, as if told to.
  bool lead_taken_over() const { return lead_taken_over_.load(); }

  // Interrupts every agent of the host for good (a stop signal): waits of
  // a database's store give up too.
  void InterruptAll();
  // The work is over: the teammates stop, what the teams still there spent
  // is recorded for the next session, and the merge queue stops.
  void StopWork();

 private:
  Host(HostOptions options, llm::Provider* provider, HostOutput output);
  Status Build();
  Status OpenTeam(TeamConfig* team);
  Status OpenSpend(const TeamConfig& team);
  Status MakeLead(const TeamConfig& team);
  Status HostTheLead();
  Status StartTeam();
  git::MergeQueue::Options QueueOptions();
  Status ServePages();
  // The options of a page of `team` on `port` (0: any free one): through
  // this host's store, with its merge hooks, metrics and levers.
  dashboard::DashboardOptions PageOf(const std::string& team, int port);
  // The exporter and the session's span, if telemetry is on.
  void StartTelemetry();
  // A person's lever (`mates stop|restart|interrupt`, DESIGN §27), on the
  // levers' thread.
  Result<std::string> Pull(const LeverRequest& r);
  // `mates attach`: the terminal at `conn` joins the lead's conversation.
  Status Attach(const LeverRequest& r, ScopedFd& conn);
  // The lead moved from one team to another (TeamCreate, TeamDelete):
  // host.json and a page for the team it works in.
  void LeadMoved(const std::string& to);

  // Constant after construction. The parts first: they go last, after
  // everything that holds a subscription or a board of theirs.
  const ProcessEnv parts_;
  const HostOptions options_;
  llm::Provider* const provider_;
  // Attached terminals hear what the output does (attach.h): the agents
  // report to it, and it passes on to the caller's.
  const std::unique_ptr<AttachHub> attach_;
  const HostOutput out_;

  // Made by Start in this order, and gone in the reverse.
  std::shared_ptr<sandbox::Sandbox> sandbox_;
  std::unique_ptr<TeamStore> store_;
  // How `mates` in an agent's sandbox reaches the team, as that agent.
  std::unique_ptr<AgentGate> gate_;
  std::string lead_name_;
  std::shared_ptr<agent::TeamSpend> spend_;
  // What its agents do, counted for /metrics (DESIGN §29).
  std::shared_ptr<telemetry::Metrics> metrics_ = std::make_shared<telemetry::Metrics>();
  // Its OTLP export (DESIGN §29), when configured: made before the agents
  // and gone after them (they end spans as they stop); the session's span
  // is every agent's parent.
  std::unique_ptr<telemetry::OtlpExporter> exporter_;
  std::shared_ptr<telemetry::Tracer> tracer_;
  telemetry::Span session_span_;
  // What its teammates' turns cost, for the spend-spike breaker.
  const std::shared_ptr<agent::TurnCosts> turn_costs_ = std::make_shared<agent::TurnCosts>();
  std::unique_ptr<Hold> budget_watch_;  // the roster, for a budget a person changes
  tools::SkillLibrary skills_;
  // Its servers' samplings' use (host/sampling.h): before the hub, which
  // may still sample while it goes.
  const std::shared_ptr<agent::UsageJournal> sampling_usage_ = std::make_shared<agent::UsageJournal>();
  std::shared_ptr<mcp::Hub> hub_;
  std::unique_ptr<tools::ToolRegistry> registry_;
  std::unique_ptr<tools::ToolContext> ctx_;
  std::unique_ptr<agent::SubagentManager> subs_;
  const std::shared_ptr<agent::UsageJournal> subagents_usage_ = std::make_shared<agent::UsageJournal>();
  std::unique_ptr<agent::AgentLoop> lead_;
  std::unique_ptr<Hold> home_hold_;  // the lead's host lock in its own team
  std::string away_;                 // the team it made and goes on in ("" = home)
  std::unique_ptr<Hold> away_hold_;  // its host lock there, until the manager keeps it
  std::atomic<bool> lead_taken_over_{false};
  // The conflict forecast (DESIGN §30): made before the manager (whose
  // teammates tell it of their writes), stopped before it goes.
  std::shared_ptr<git::Forecaster> forecast_;
  std::unique_ptr<team::TeamManager> teams_;
  std::optional<git::MergeQueue> merges_;
  std::unique_ptr<dashboard::Dashboard> page_;
  fs::path run_dir_;                // its runtime folder (sandbox::RuntimeDirFor)
  std::unique_ptr<Levers> levers_;  // before host.json names them
  // host.json: what this host writes of itself, and the team the lead
  // works in away from home with that team's page (the manager's thread
  // moves the lead; LeadMoved runs on it).
  HostInfo info_;
  std::string away_team_;
  std::unique_ptr<dashboard::Dashboard> away_page_;
};

}  // namespace mates::host
