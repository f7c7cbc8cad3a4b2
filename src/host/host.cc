// See host.h.
#include "host/host.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/frames.h"
#include "agent/journal.h"
#include "agent/prices.h"
#include "agent/prompts.h"
#include "agent/spend.h"
#include "core/clock.h"
#include "git/git.h"
#include "core/files.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "core/trace_context.h"
#include "host/leases.h"
#include "host/machine.h"
#include "host/person_asker.h"
#include "host/sampling.h"
#include "host/telemetry_report.h"
#include "store/messenger.h"
#include "stores/open_store.h"
#include "dashboard/prometheus.h"
#include "view/team_view.h"

namespace mates::host {
namespace {

// How many teams a lead's journals are followed through to find where it
// went on (a lead may have made one from another): a few at most.
constexpr int kMaxLeadHops = 8;

// The lead's spec: its prompt (with the skills it may load) and limits.
agent::AgentSpec LeadSpec(const HostOptions& a, const std::string& lead_name, const tools::SkillLibrary& skills,
                          const TeamGit& git, std::shared_ptr<agent::TeamSpend> spend) {
  agent::PromptFacts facts;
  facts.ws = a.ws;
  facts.team = a.team;
  facts.name = lead_name;
  facts.lead = lead_name;
  facts.skills = skills.PromptSection();
  if (git.isolation == Isolation::kWorktree || a.git.isolation == Isolation::kWorktree) {
    facts.target_branch = git.configured() ? git.target_branch : a.git.target_branch;
  }
  agent::AgentSpec spec;
  spec.name = lead_name;
  spec.system = agent::LeadSystemPrompt(facts);
  spec.identity = agent::LeadIdentity(facts);
  spec.model = a.model;
  spec.max_calls = a.max_turns;
  spec.read_inbox = true;
  spec.context.budget_tokens = a.context_budget;
  spec.team_spend = std::move(spend);
  spec.cache = !a.naive_baseline;
  spec.after_failure = "tries again at its next message, or in 30 s";
  return spec;
}

// A lead's journal in one team, made to agree with its copy in the store
// (once: AttachJournal is told so), and the team it says the lead moved to
// and went on in ("" if none, or unreadable).
struct LeadJournal {
  std::string team;
  std::optional<int64_t> reconciled;  // lines of the file in the copy; nullopt: not reconciled
  std::string moved_to;
};

LeadJournal ReadLeadJournal(TeamStore& store, const Workspace& ws, const std::string& team,
                            const std::string& lead_name) {
  LeadJournal j;
  j.team = team;
  const fs::path path = ws.JournalPath(team, lead_name);
  if (std::unique_ptr<JournalCopy> copy = store.JournalOf(team, lead_name)) {
    auto copied = agent::Journal::Reconcile(path, *copy);
    if (!copied.ok()) return j;
    j.reconciled = *copied;
  } else {
    j.reconciled = 0;  // no copy: nothing to reconcile
  }
  auto st = agent::Journal::Load(path);
  if (st.ok()) j.moved_to = st->moved_to;
  return j;
}

// Kills what a dead predecessor's tools left running in `team` (it would
// work on beside the resumed conversation).
void KillLeadLeftovers(const Workspace& ws, const std::string& team, const std::string& lead_name,
                       const std::function<void(const std::string&)>& say) {
  auto leftovers = ProcessJournal(ws.AgentsDir(team) / (lead_name + ".procs")).KillLeftovers();
  if (leftovers.ok() && *leftovers > 0) {
    say("stopped " + std::to_string(*leftovers) + " process tree(s) the lead's last host left running");
  }
}

}  // namespace

namespace {

HostOutput ThroughHub(HostOutput output, AttachHub* hub) {
  output.events = hub;
  output.say = [hub](const std::string& text) { hub->Say(text); };
  return output;
}

}  // namespace

Host::Host(HostOptions options, llm::Provider* provider, HostOutput output)
    : parts_(Watcher::OptionsFromVariables(), Clock::Real(), options.prices),  // first: `options` is whole yet
      options_(std::move(options)),
      provider_(provider),
      attach_(std::make_unique<AttachHub>(output.events, output.say)),
      out_(ThroughHub(std::move(output), attach_.get())) {}

Result<std::unique_ptr<Host>> Host::Start(HostOptions options, llm::Provider* provider, HostOutput output) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", options.team));
  if (options.max_turns < 1) return Status::InvalidArgument("--max-turns must be at least 1");
  if (!output.say) output.say = [](const std::string&) {};
  std::unique_ptr<Host> host(new Host(std::move(options), provider, std::move(output)));
  MATES_RETURN_IF_ERROR(host->Build());
  return host;
}

Status Host::Build() {
  const HostOptions& a = options_;
  // The sandbox first: a machine that cannot make it stops the host before
  // anything started (DESIGN §18).
  MATES_ASSIGN_OR_RETURN(const fs::path run_dir, sandbox::RuntimeDirFor(a.team));
  run_dir_ = run_dir;
  MATES_ASSIGN_OR_RETURN(sandbox_, sandbox::Sandbox::Make(a.ws.root(), a.sandbox, run_dir));
  // Where the team is kept: the workspace's files, or a PostgreSQL store
  // (DESIGN §13) whose connections are this process's own.
  MATES_ASSIGN_OR_RETURN(store_, OpenTeamStore(a.store_url, a.ws, env()));
  // A server restarted or briefly away is waited for: the agents go on
  // when it is back (a stop cuts the wait short).
  store_->WaitOutOutages(kStoreOutagePatienceS);
  // A sandboxed tool's `mates` reaches the team through its agent's gate
  // (DESIGN §19); with the sandbox off it reaches the store itself.
  if (sandbox_->on()) {
    gate_ = std::make_unique<AgentGate>(AgentGate::Options{a.ws, a.store_url, run_dir / "gate"});
    sandbox_->SetGate([gate = gate_.get()](const std::string& team, const std::string& agent) {
      return gate->SocketFor(team, agent);
    });
  }
  StartTelemetry();
  // What the host starts as it builds (MCP servers) is in the session.
  std::optional<ScopedTrace> in_session;
  if (session_span_.context().valid()) in_session.emplace(session_span_.context());
  TeamConfig team;
  MATES_RETURN_IF_ERROR(OpenTeam(&team));
  // What this host's tools start stays its own (DESIGN §10).
  BecomeSubreaper();
  MATES_RETURN_IF_ERROR(MakeLead(team));
  if (!a.teammates_only) MATES_RETURN_IF_ERROR(HostTheLead());
  MATES_RETURN_IF_ERROR(StartTeam());
  MATES_RETURN_IF_ERROR(ServePages());
  if (a.on_ready) a.on_ready();
  // On a store other machines share, a host takes on the team's
  // teammates whose host died or stopped (DESIGN §13).
  // Under `up --respawn on-work` (DESIGN §27), a task that waits with no
  // live teammate brings a stopped one back.
  const bool adopt = store_->HostsApart() && a.hosted && a.adopt;
  if (adopt || a.respawn) {
    teams_->StartLookingAfter(adopt ? 1.0 : 5.0, adopt, a.respawn, [this](const std::string& line) { out_.say(line); });
  }
  return Status::Ok();
}

void Host::StartTelemetry() {
  const telemetry::OtlpConfig& c = options_.telemetry;
  for (const auto& w : c.warnings) out_.say("telemetry: " + w);
  if (!c.enabled()) return;
  // The metrics: what the agents counted, and the team as the store has it.
  auto read = [this] {
    std::vector<telemetry::MetricReading> out = metrics_->Read();
    auto v = view::LookAtTeam(*store_, options_.team, 0);
    if (v.ok()) {
      for (auto& r : dashboard::TeamReadings(*v)) out.push_back(std::move(r));
    }
    return out;
  };
  // Its figures beside host.json, for status and doctor.
  auto report = [ws = options_.ws, team = options_.team, c](const telemetry::OtlpExporter::Stats& s) {
    WarnIfFailed(WriteTelemetryReport(ws, team, c, s), "telemetry: its report for status");
  };
  exporter_ = std::make_unique<telemetry::OtlpExporter>(c, read, report);
  tracer_ = std::make_shared<telemetry::Tracer>(
      c.sampler, [exporter = exporter_.get()](telemetry::SpanRecord r) { exporter->Add(std::move(r)); },
      c.max_attribute_bytes, c.max_attributes, c.gen_ai_latest);
  // The session: a root (or a child of a TRACEPARENT the host was started
  // in), every agent's spans under it.
  TraceContext parent;
  if (const char* tp = std::getenv("TRACEPARENT")) {
    const char* ts = std::getenv("TRACESTATE");
    parent = ParseTraceparent(tp, ts != nullptr ? ts : "").value_or(TraceContext{});
  }
  session_span_ = tracer_->Start("session " + options_.team, telemetry::SpanKind::kInternal, parent);
  session_span_.Set("mates.team", options_.team);
  session_span_.Set("mates.host.mode", std::string(HostModeName(options_.mode)));
  session_span_.Set("mates.host.pid", static_cast<int64_t>(::getpid()));
  tracer_->SetSession(session_span_.context());
  // mates' own log lines, in the span they were written in.
  if (!c.logs_url.empty()) {
    SetLogTap([exporter = exporter_.get()](bool warning, const std::string& line) {
      telemetry::LogRecord r;
      r.time_ns = telemetry::UnixNanos();
      r.severity = warning ? 13 : 9;
      r.severity_text = warning ? "WARN" : "INFO";
      r.body = line;
      r.context = CurrentTrace();
      exporter->Add(std::move(r));
    });
  }
}

// The lead's team: created when missing (a host of teammates only serves
// a team that exists), with the isolation and budget given written in.
Status Host::OpenTeam(TeamConfig* out) {
  const HostOptions& a = options_;
  auto team = store_->LoadTeam(a.team);
  if (!team.ok() && team.status().code() == StatusCode::kNotFound && !a.teammates_only) {
    team = store_->CreateTeam(a.team, "lead", "");
  }
  MATES_RETURN_IF_ERROR(team.status());
  lead_name_ = team->lead;
  // This session, and where the checkout was: where a replay starts (DESIGN §31).
  const git::Checkout at = git::CheckoutAt(a.ws.root());
  team = store_->UpdateTeam(a.team, [&](TeamConfig& c) {
    c.NoteSession({WallSeconds(), std::string(HostModeName(a.mode)), at.commit, at.branch});
    return Status::Ok();
  });
  MATES_RETURN_IF_ERROR(team.status());
  if (a.isolation_given || a.git.isolation == Isolation::kWorktree) {
    team = store_->UpdateTeam(a.team, [&](TeamConfig& c) {
      if (a.git.isolation == Isolation::kWorktree) {
        TeamGit git = a.git;
        git.KeepRecordOf(c.git);
        c.git = git;
      } else {
        c.git.isolation = Isolation::kShared;
      }
      return Status::Ok();
    });
    MATES_RETURN_IF_ERROR(team.status());
  }
  // The team's budget (DESIGN §15): given here, it is the team's from now on.
  if (a.budget_tokens || a.budget_usd) {
    team = store_->UpdateTeam(a.team, [&](TeamConfig& c) {
      c.budget.Give(a.budget_tokens, a.budget_usd);
      return Status::Ok();
    });
    MATES_RETURN_IF_ERROR(team.status());
  }
  MATES_RETURN_IF_ERROR(OpenSpend(*team));
  *out = std::move(*team);
  return Status::Ok();
}

// What the team's agents may still spend (DESIGN §15): its budget against
// what its journals hold, shared with its other hosts, following `mates
// budget set|clear`.
Status Host::OpenSpend(const TeamConfig& team) {
  const HostOptions& a = options_;
  if (team.budget.any()) {
    const std::string model = a.model.empty() ? provider_->default_model() : a.model;
    if (team.budget.usd > 0 && !env().prices.Find(model)) {
      return Status::InvalidArgument("the team's budget is in dollars but model '" + model +
                                     "' has no price: give one with mates --prices FILE (see docs), or budget "
                                     "tokens instead");
    }
    // What the team's journals hold already counts: on a shared store,
    // those of every machine (their copies), else this workspace's.
    MATES_ASSIGN_OR_RETURN(std::optional<agent::TeamUsage> copies,
                           agent::ReadTeamUsage(*store_, a.team, env().prices, a.ws.AgentsDir(a.team)));
    agent::TeamUsage before;
    if (copies) {
      before = std::move(*copies);
    } else {
      MATES_ASSIGN_OR_RETURN(before, agent::ReadTeamUsage(a.ws.AgentsDir(a.team), env().prices));
    }
    spend_ = std::make_shared<agent::TeamSpend>(team.budget, before, a.team, env().prices);
    if (std::string over = spend_->Exceeded(); !over.empty()) {
      return Status::FailedPrecondition(over + " in team '" + a.team +
                                        "': no agent calls the model (a larger --budget-tokens / --budget-usd lets "
                                        "it go on)");
    }
  } else {
    // No budget yet: one a person sets while the host runs binds from then
    // on, counting what the team's journals held when it started.
    MATES_ASSIGN_OR_RETURN(agent::TeamUsage before, agent::ReadTeamUsage(a.ws.AgentsDir(a.team), env().prices));
    spend_ = std::make_shared<agent::TeamSpend>(team.budget, before, a.team, env().prices);
  }
  // The team's hosts share its budget: a check counts every machine's
  // calls where the store keeps them (DESIGN §15).
  spend_->Share([store = store_.get(), team_name = a.team,
                 &prices = env().prices]() -> std::optional<std::pair<int64_t, double>> {
    auto spent = store->Spent(team_name);
    if (!spent.ok() || !*spent) return std::nullopt;
    return agent::PriceSpent(**spent, prices);
  });
  // `mates budget set|clear` reaches the running host (DESIGN §15).
  auto changed = std::make_shared<Waker>();
  MATES_ASSIGN_OR_RETURN(budget_watch_, store_->Watch(a.team, TeamPart::kRoster, changed));
  spend_->Follow(
      [store = store_.get(), team_name = a.team]() -> std::optional<TeamBudget> {
        auto c = store->LoadTeam(team_name);
        if (!c.ok()) return std::nullopt;
        return c->budget;
      },
      changed);
  return Status::Ok();
}

// The hub, the lead's tools and context, its subagents and its loop.
Status Host::MakeLead(const TeamConfig& team) {
  const HostOptions& a = options_;
  skills_ = tools::SkillLibrary::Load(a.ws);
  // The MCP servers of W/.mcp.json, started once for this host's agents
  // (DESIGN §14); each agent gets the tools its role may use.
  MATES_ASSIGN_OR_RETURN(hub_, mcp::Hub::Load(a.ws, trust::TrustStore(), sandbox_));
  // Their questions go to a person through the team (DESIGN §23).
  mcp::ClientServices services;
  services.ask = [store = store_.get(), team = a.team, asker = lead_name_](
                     const std::string& server, const Json& params, double timeout_s, const CancelToken& stop) {
    return AskPerson(*store, team, asker, server, params, timeout_s, stop);
  };
  // Their samplings go to the lead's model, within the team's budget.
  Sampler sampler;
  sampler.provider = provider_;
  sampler.model = a.model;
  sampler.agent_id = lead_name_ + "@" + a.team;
  sampler.spend = spend_;
  const std::string sampled_as = lead_name_ + ".mcp";
  sampler.record = [journal = sampling_usage_, store = store_.get(), path = a.ws.JournalPath(a.team, sampled_as),
                    team = a.team, name = sampled_as](const llm::Usage& u, const std::string& model) {
    return journal->Append(
        path, [&]() -> std::unique_ptr<JournalCopy> { return store->JournalOf(team, name); }, u, model);
  };
  services.sample = [sampler](const std::string& server, const Json& params, const CancelToken& stop) {
    return Sample(sampler, server, params, stop);
  };
  hub_->SetServices(std::move(services));
  hub_->Start();
  registry_ = tools::MakeToolRegistry(tools::Scope::kLead);
  if (!hub_->empty()) registry_->AddSource(hub_->SourceFor(lead_name_, /*is_lead=*/true));
  ctx_ = std::make_unique<tools::ToolContext>(a.ws, *store_);
  tools::ToolContext& ctx = *ctx_;
  ctx.team = a.team;
  ctx.home_team = a.team;
  ctx.agent = lead_name_;
  ctx.is_lead = true;
  ctx.skills = &skills_;
  ctx.sandbox = sandbox_;
  ctx.hooks = options_.hooks;
  subs_ = std::make_unique<agent::SubagentManager>(provider_, ctx, out_.events, [this](std::string notice) {
    if (lead_) lead_->AddNotice(std::move(notice));
  });
  ctx.subagents = subs_.get();
  // The subagents' usage: one journal beside the lead's, and on a shared
  // store its copy, so that every machine's count has it. (No subagent
  // runs before the team manager is there.)
  subs_->SetSpend(spend_, [this](const llm::Usage& u, const std::string& model) {
    const std::string team = teams_->place().team();
    const std::string name = lead_name_ + ".subagents";
    return subagents_usage_->Append(
        options_.ws.JournalPath(team, name),
        [&]() -> std::unique_ptr<JournalCopy> { return store_->JournalOf(team, name); }, u, model);
  });
  // The lead's turns are of another kind (a spawn of ten teammates, a
  // wait for the team's news): they are not weighed against the
  // teammates' (the spike breaker is theirs), and repeated failures still
  // pause it.
  agent::AgentSpec spec = LeadSpec(a, lead_name_, skills_, team.git, spend_);
  spec.breaker.spike = 0;
  spec.metrics = metrics_;
  spec.tracer = tracer_;
  spec.pacer = a.pacer;
  spec.host_env = &env();
  lead_ = std::make_unique<agent::AgentLoop>(std::move(spec), provider_,
                                             registry_.get(), &ctx, out_.events);
  ctx.cancel = lead_->cancel_token();
  if (a.pacer) {
    a.pacer->SetNudge(lead_name_, this, [this](const std::string& note) {
      if (!note.empty()) lead_->AddNotice(note);
      if (teams_) teams_->WakeWaiters();
    });
  }
  return Status::Ok();
}

// Takes the lead's host lock (one process hosts a team's lead at a time;
// the kernel, or the database, frees it when that process dies), kills
// what a dead predecessor's tools left running, and attaches the journal
// (set aside first with --fresh). A lead that last worked in a team it
// made goes on there, where its conversation is, if that team is still
// there and no other process hosts its lead (else in its own team).
Status Host::HostTheLead() {
  const HostOptions& a = options_;
  const Workspace& ws = a.ws;
  MATES_RETURN_IF_ERROR(EnsureDir(ws.AgentsDir(a.team)));
  auto held = HoldLivenessAllowingForTheDead(*store_, a.team, lead_name_, DeadlineIn(kDeadHostGraceS));
  if (!held.ok()) {
    if (held.status().code() != StatusCode::kConflict) return held.status();
    std::string where = store_->ElsewhereWords();
    if (auto host = store_->LiveHost(a.team); host && host->mode == HostMode::kUp && !host->control.empty()) {
      where = " (`mates up`, pid " + std::to_string(host->pid) + "): `mates attach --team " + a.team +
              "` joins its conversation";
    } else if (host && host->mode == HostMode::kRun) {
      where = " (`mates run` in a terminal, pid " + std::to_string(host->pid) + "): type there";
    }
    return Status::FailedPrecondition("the lead of team '" + a.team + "' is already running in another process" +
                                      where);
  }
  home_hold_ = std::move(*held);
  KillLeadLeftovers(ws, a.team, lead_name_, out_.say);
  fs::path journal = ws.JournalPath(a.team, lead_name_);
  LeadJournal read;
  if (a.fresh) {
    std::unique_ptr<JournalCopy> copy = store_->JournalOf(a.team, lead_name_);
    std::error_code ec;
    if (fs::exists(journal, ec)) {
      fs::rename(journal,
                 ws.AgentsDir(a.team) /
                     (lead_name_ + "." + std::to_string(static_cast<int64_t>(WallSeconds())) + ".jsonl"),
                 ec);
    }
    if (copy) MATES_RETURN_IF_ERROR(copy->Replace({}));  // or it would bring the old one back
  } else {
    // Followed team by team; the team the session is for ends it.
    std::string from = a.team;
    for (int hop = 0; hop < kMaxLeadHops; ++hop) {
      read = ReadLeadJournal(*store_, ws, from, lead_name_);
      const std::string to = read.moved_to;
      if (to.empty() || to == a.team || to == from) break;
      if (!store_->LoadTeam(to).ok()) {
        out_.say("the lead last worked in team " + to + ", which is gone: it goes on in team " + from);
        break;
      }
      auto there = HoldLivenessAllowingForTheDead(*store_, to, lead_name_, DeadlineIn(kDeadHostGraceS));
      if (!there.ok()) {
        out_.say("the lead last worked in team " + to +
                 ", whose lead another process hosts now: it goes on in team " + from);
        break;
      }
      away_ = to;
      away_hold_ = std::move(*there);
      from = to;
    }
    if (!away_.empty()) {
      KillLeadLeftovers(ws, away_, lead_name_, out_.say);
      journal = ws.JournalPath(away_, lead_name_);
      out_.say("the lead goes on in team " + away_ + ", the team it made and worked in (this session is team " +
               a.team + "'s)");
    }
  }
  const std::string& team = away_.empty() ? a.team : away_;
  // The journal it goes on from was read (and reconciled) on the way, unless
  // the way ended past the last one read.
  std::optional<int64_t> reconciled = read.team == team ? read.reconciled : std::nullopt;
  MATES_RETURN_IF_ERROR(lead_->AttachJournal(journal, /*resume=*/true, store_->JournalOf(team, lead_name_), reconciled));
  for (Hold* hold : {home_hold_.get(), away_hold_.get()}) {
    if (hold == nullptr) continue;
    hold->OnLost([this] {
      lead_taken_over_.store(true);
      ::kill(::getpid(), SIGTERM);  // the signal thread stops the session
    });
  }
  if (!away_.empty()) ctx_->team = away_;  // it goes on where it worked
  return Status::Ok();
}

// The team manager (its teammates get the hub's tools their role may use)
// and the team's merge queue (DESIGN §12): one queue per team, in the
// lead's host; a host of teammates only leaves it to that one (on a shared
// store it may be another machine).
// The lead's merge queue (DESIGN §12, §30): its words to the lead, the
// team it serves, and what it reports of each merge.
git::MergeQueue::Options Host::QueueOptions() {
  git::MergeQueue::Options mq;
  mq.sandbox = sandbox_;
  mq.hooks = options_.hooks;
  mq.ws = options_.ws;
  mq.team = [this] { return teams_->place().team(); };
  mq.on_change = [this] { teams_->WakeWaiters(); };
  mq.tell_lead = [this](const std::string& text) {
    // The queue's words carry a request's subject, anyone's text: it
    // cannot forge a frame (DESIGN §19).
    lead_->AddNotice(agent::NeutraliseFrames(text));
    teams_->WakeWaiters();
  };
  mq.running = [this](const std::string& name) { return teams_->Running(name); };
  mq.work_of = [this](const std::string& team, const MergeRequest& m) {
    return agent::TaskWork(*store_, team, m.task, m.owner, env().prices);
  };
  // What a merge took, for the metrics; and merge #N (DESIGN §29), from the
  // queue taking it to its decision, with how long its check ran, under the
  // session.
  mq.on_processed = [tracer = tracer_, metrics = metrics_, forecast = forecast_](
                        const std::string& team, const MergeRequest& m, double taken, double done, double check_s) {
    if (m.status == MergeState::kMerged) forecast->Landed(team, m.owner);
    metrics->Observe(telemetry::kMergeDuration, {{"team", team}, {"state", std::string(MergeStateName(m.status))}},
                     std::max(0.0, done - taken));
    if (!tracer) return;
    {
      telemetry::SpanRecord r;
      r.name = "merge #" + std::to_string(m.id);
      r.start_ns = static_cast<int64_t>(taken * 1e9);
      r.end_ns = static_cast<int64_t>(done * 1e9);
      r.attributes = {{"mates.team", team},
                      {"mates.merge.id", m.id},
                      {"mates.merge.state", std::string(MergeStateName(m.status))},
                      {"mates.merge.owner", m.owner},
                      {"mates.merge.check.duration", check_s}};
      if (m.task > 0) r.attributes.push_back({"mates.task.id", m.task});
      if (m.status == MergeState::kFailed || m.status == MergeState::kConflict) {
        r.error = true;
        r.attributes.push_back({"error.type", std::string(MergeStateName(m.status))});
      }
      tracer->Record(std::move(r), tracer->session());
    }
  };
  return mq;
}

Status Host::StartTeam() {
  const HostOptions& a = options_;
  team::TeamOptions topt;
  topt.sandbox = sandbox_;
  topt.hooks = options_.hooks;
  topt.idle_timeout_s = a.idle_timeout_s;
  topt.shutdown_timeout_s = a.shutdown_timeout_s;
  topt.teammate_max_calls = a.max_turns;
  topt.stall_calls = a.stall_calls;
  topt.turn_costs = turn_costs_;
  topt.pacer = a.pacer;
  topt.context_budget = a.context_budget;
  topt.git = a.git;
  topt.spend = spend_;
  topt.metrics = metrics_;
  topt.tracer = tracer_;
  topt.host_env = &env();
  topt.naive_baseline = a.naive_baseline;
  // The conflict forecast (DESIGN §30) hears of every write, edit and
  // command of an isolated teammate; it forecasts once the team is known
  // (below), in the lead's host only.
  git::Forecaster::Options fo;
  fo.ws = a.ws;
  fo.panes = true;  // and of its pane agents, by their activity
  fo.tell_lead = [this](const std::string& text) {
    lead_->AddNotice(agent::NeutraliseFrames(text));
    teams_->WakeWaiters();
  };
  forecast_ = std::make_shared<git::Forecaster>(*store_, fo);
  // A task's lease, when none was given, from its owner's first edits.
  auto leases = std::make_shared<LeaseInference>(*store_, a.ws);
  topt.after_tool = [forecast = forecast_, leases](const std::string& team, const std::string& name,
                                                   const llm::ContentBlock& call, const tools::ToolResult& result) {
    if (call.name == "write_file" || call.name == "edit_file" || call.name == "bash") forecast->Changed(team, name);
    leases->AfterTool(team, name, call, result);
  };
  topt.extra_tools = [hub = hub_](tools::ToolRegistry& r, const std::string& name) {
    if (!hub->empty()) r.AddSource(hub->SourceFor(name, /*is_lead=*/false));
  };
  teams_ = std::make_unique<team::TeamManager>(a.ws, provider_, out_.events, topt, lead_.get(), ctx_.get(),
                                               out_.on_spawn);
  ctx_->teams = teams_.get();
  if (away_hold_) teams_->place().KeepAway(std::move(away_hold_));
  lead_->SetNoticeSource([this] { return teams_->news().Take(); });
  if (a.teammates_only) return Status::Ok();
  forecast_->Follow([this] { return teams_->place().team(); });
  merges_.emplace(*store_, QueueOptions());
  teams_->SetBusyElsewhere([this] { return merges_->Busy(); });
  return Status::Ok();
}

dashboard::DashboardOptions Host::PageOf(const std::string& team, int port) {
  dashboard::DashboardOptions d;
  d.ws = options_.ws;
  d.store_url = options_.store_url;
  d.store = store_.get();
  d.team = team;
  d.port = port;
  d.merge_hooks = {options_.hooks, sandbox_, options_.ws};
  d.metrics = metrics_;
  d.levers = [this, team](const std::string& op, const std::string& agent) {
    return Pull(LeverRequest{op, team, agent, ""});
  };
  return d;
}

// The dashboard first: a port that cannot be had is an error before the
// host says it is ready. Then host.json, which names the page; and a team
// the lead made and works in is hosted here too.
Status Host::ServePages() {
  const HostOptions& a = options_;
  if (a.dashboard_port >= 0) {
    MATES_ASSIGN_OR_RETURN(page_, dashboard::Dashboard::Start(PageOf(a.team, a.dashboard_port), env()));
  }
  if (page_) info_.dashboard = page_->url();
  // The person's levers: in the runtime folder, which no sandbox sees.
  MATES_RETURN_IF_ERROR(EnsureDir(run_dir_));
  ::chmod(run_dir_.c_str(), 0700);
  MATES_ASSIGN_OR_RETURN(levers_, Levers::Start(
                                     run_dir_ / "control", [this](const LeverRequest& r) { return Pull(r); },
                                     [this](const LeverRequest& r, ScopedFd& conn) { return Attach(r, conn); }));
  info_.control = levers_->path().string();
  info_.pid = ::getpid();
  info_.start_time = ProcessStartTime(::getpid());
  info_.started_at = WallSeconds();
  info_.mode = a.mode;
  info_.lead = lead_name_;
  info_.sandbox = std::string(sandbox::ModeName(sandbox_->mode()));
  // What the workspace's own files asked for and did not get (DESIGN §19):
  // status and the dashboard say so.
  for (const auto& s : hub_->States()) {
    if (s.run != mcp::ServerRun::kSkipped || info_.mcp_skipped.size() >= kMaxSkippedServers) continue;
    info_.mcp_skipped.push_back({s.name, s.why});
  }
  WarnIfFailed(WriteHostInfo(a.ws, a.team, info_), "host.json");
  // Found by `mates ps` in any folder.
  WarnIfFailed(NoteHostHere(run_dir_, a.ws, a.team), "where.json");
  teams_->place().SetOnMoved([this](const std::string&, const std::string& to) { LeadMoved(to); });
  if (ctx_->team != a.team) LeadMoved(ctx_->team);  // it went on where its last session left it
  return Status::Ok();
}

// `status`, `up` and `down` of the team the lead works in find this host,
// and a host with a page serves one for that team as well, until the lead
// leaves it. Each team's host.json names the other, so that either page
// leads to the other.
void Host::LeadMoved(const std::string& to) {
  const Workspace& ws = options_.ws;
  const std::string& home_team = options_.team;
  if (!away_team_.empty()) RemoveHostInfo(ws, away_team_);
  away_team_.clear();
  away_page_.reset();
  if (to == home_team) {
    WarnIfFailed(WriteHostInfo(ws, home_team, info_), "host.json");  // hosting its own team alone again
    return;
  }
  HostInfo there = info_;
  there.dashboard.clear();
  there.also = {{home_team, info_.dashboard}};
  if (page_) {
    auto started = dashboard::Dashboard::Start(PageOf(to, /*port=*/0), env());
    if (started.ok()) {
      away_page_ = std::move(*started);
      there.dashboard = away_page_->url();
    } else {
      out_.say("no page for team " + to + ": " + started.status().message());
    }
  }
  WarnIfFailed(WriteHostInfo(ws, to, there), "host.json");
  away_team_ = to;
  HostInfo home = info_;
  home.also = {{to, there.dashboard}};
  WarnIfFailed(WriteHostInfo(ws, home_team, home), "host.json");
}

Result<std::string> Host::Pull(const LeverRequest& r) {
  if (r.op == "attach") return Status::InvalidArgument("attach is no lever: `mates attach` joins the lead");
  const std::string here = teams_->place().team();
  if (r.agent == lead_name_ && !options_.teammates_only && (r.team == here || r.team == options_.team)) {
    if (r.op != "interrupt") {
      return Status::FailedPrecondition("'" + r.agent + "' is the team's lead: it runs as long as its host (`mates "
                                        "down` stops it, `mates up` brings it back)");
    }
    if (!lead_->InterruptToRest("The person interrupted your last turn (mates interrupt): what you were doing was "
                                "stopped. Wait for their message before you go on.")) {
      return Status::FailedPrecondition("the lead '" + r.agent + "' is idle: nothing to interrupt");
    }
    return "interrupted the lead '" + r.agent + "': its turn ends now, and it waits for a message";
  }
  if (r.team != here) {
    return Status::FailedPrecondition("this host's teammates are in team '" + here + "', not '" + r.team + "'");
  }
  if (r.op == "stop") {
    return teams_->StopTeammate(r.agent, r.reason.empty() ? "The person asks you to stop (mates stop): wrap up, "
                                                            "answer with shutdown_response, then stop."
                                                          : r.reason + " (asked by the person, mates stop)");
  }
  if (r.op == "restart") return teams_->RestartTeammate(r.agent);
  return teams_->InterruptTeammate(r.agent);
}

Status Host::Attach(const LeverRequest& r, ScopedFd& conn) {
  if (!options_.hosted || options_.teammates_only) {
    return Status::FailedPrecondition(options_.teammates_only
                                          ? "this host runs teammates of team '" + options_.team +
                                                "' only: its lead is hosted elsewhere"
                                          : "the lead of team '" + options_.team +
                                                "' runs in a terminal (`mates run`, pid " +
                                                std::to_string(::getpid()) + "): type there");
  }
  if (r.team != options_.team || r.agent != lead_name_) {
    return Status::FailedPrecondition("this host's lead is '" + lead_name_ + "' of team '" + options_.team + "'");
  }
  AttachActions actions;
  // As the person: the lead takes it at its next look, hooks and all.
  actions.say = [this](const std::string& text) -> Status {
    SendRequest s;
    s.sender = kUserName;
    s.recipient = lead_name_;
    s.content = text;
    return Messenger(*store_->Mail(options_.team)).Send(std::move(s)).status();
  };
  actions.interrupt = [this] { return Pull(LeverRequest{"interrupt", options_.team, lead_name_, ""}); };
  return attach_->Attach(conn,
                         "attached to '" + lead_name_ + "', the lead of team " + options_.team +
                             ": what you type goes to it; Ctrl-C interrupts its turn, Ctrl-D detaches (the "
                             "host goes on)",
                         std::move(actions));
}

void Host::InterruptAll() {
  store_->StopWaiting();
  lead_->Interrupt(CancelToken::kForGood);
  subs_->InterruptAll();
  teams_->InterruptAll("its host was told to stop");
  KillTagged(HostTagPrefix());
  teams_->news().waker()->Notify();
}

void Host::StopWork() {
  teams_->StopAll();
  teams_->RecordSpendElsewhere();  // what the teams still there spent, for the next session
  if (merges_) merges_->Stop();
  if (forecast_) forecast_->Stop();
  teams_->SetBusyElsewhere(nullptr);
}

Host::~Host() {
  if (options_.pacer) options_.pacer->SetNudge(lead_name_, this, {});
  // Its thread asks the manager for the team: it stops before that goes.
  if (forecast_) forecast_->Stop();
  // The session's span ends and is sent with what is queued; the agents'
  // last spans follow as they go (the exporter goes after them).
  if (exporter_) {
    SetLogTap({});
    session_span_.End();
    exporter_->Flush();
  }
  // No terminal attaches from now on, and none stays: what its lines do
  // needs what goes next.
  levers_.reset();
  attach_->DetachAll();
  if (teams_) teams_->place().SetOnMoved(nullptr);
  if (!away_team_.empty()) RemoveHostInfo(options_.ws, away_team_);
  if (!info_.lead.empty()) RemoveHostInfo(options_.ws, options_.team);
}

}  // namespace mates::host
