// A host's session: the lead's work and the team's after it (see session.h).
#include "host/session.h"

#include <map>
#include <set>

#include "agent/activity.h"
#include "agent/spend.h"
#include "agent/subagents.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/process_tree.h"
#include "core/waker.h"
#include "store/archive.h"
#include "store/merges.h"
#include "store/watcher.h"

namespace mates::host {
namespace {

// Pane agents of the team (backend tmux, fed by a cluster's router) still
// owe an answer: a message waits in an inbox, or the router is typing one
// into a pane. Agents of a cluster that is down (shutdown) owe nothing.
bool PaneAgentsOwe(const tools::ToolContext& ctx, TeamStore& store) {
  auto team = store.LoadTeam(ctx.team);
  if (!team.ok()) return false;
  for (const auto& m : team->members) {
    if (m.backend != MemberBackend::kTmux || m.status == MemberStatus::kShutdown) continue;
    if (m.status == MemberStatus::kActive) return true;
    auto n = store.InboxOf(ctx.team, m.name)->PendingCount();
    if (n.ok() && *n > 0) return true;
  }
  return false;
}

// The lead's inboxes, watched by `waker`: the one of the team it is in
// (followed when TeamCreate or TeamDelete move it) and, while it works in
// a team it made, its home team's, where a person writes to it.
class LeadInboxes {
 public:
  LeadInboxes(TeamStore& store, const tools::ToolContext& ctx, std::shared_ptr<Waker> waker)
      : store_(store), ctx_(ctx), waker_(std::move(waker)) {
    if (!ctx_.home_team.empty()) home_ = Watch(ctx_.home_team);
  }
  // Watches the inbox of the lead's team now; true if it changed team
  // since the last call (and on the first).
  bool Follow() {
    if (watched_team_ == ctx_.team) return false;
    here_ = Watch(ctx_.team);
    watched_team_ = ctx_.team;
    return true;
  }
  // Every inbox the lead reads is watched (else: look every second).
  bool watched() const { return here_ != nullptr && (!Away() || home_ != nullptr); }
  bool MayHavePending() {
    if (store_.InboxOf(ctx_.team, ctx_.agent)->MayHavePending()) return true;
    return Away() && store_.InboxOf(ctx_.home_team, ctx_.agent)->MayHavePending();
  }

 private:
  // Working in a team other than its home team.
  bool Away() const { return !ctx_.home_team.empty() && ctx_.home_team != ctx_.team; }
  std::unique_ptr<Hold> Watch(const std::string& team) {
    auto s = store_.InboxOf(team, ctx_.agent)->WatchWith(waker_);
    if (s.ok()) return std::move(*s);
    LogWarning("the lead cannot watch its inbox in team " + team + " (" + s.status().message() +
               "); it looks every second");
    return nullptr;
  }
  TeamStore& store_;
  const tools::ToolContext& ctx_;
  const std::shared_ptr<Waker> waker_;
  std::unique_ptr<Hold> here_, home_;
  std::string watched_team_;
};

// Why a goal's turn failed, if it did (an interrupted one did not: its exit
// code says so).
Status TurnFailure(const Result<agent::TurnResult>& r) {
  if (!r.ok()) {
    return r.status().code() == StatusCode::kInvalidArgument ? Status::FailedPrecondition(r.status().message())
                                                             : r.status();
  }
  if (r->interrupted) return Status::Ok();
  switch (r->end) {
    case agent::TurnEnd::kRefusal:
      return Status::FailedPrecondition("the model refused");
    case agent::TurnEnd::kBreaker:
      return Status::FailedPrecondition("the lead was " + r->why);
    case agent::TurnEnd::kBudget:
      return Status::FailedPrecondition(r->why + ": no agent calls the model any more (a larger "
                                                 "--budget-tokens / --budget-usd lets the team go on)");
    case agent::TurnEnd::kMaxCalls:
      return Status::FailedPrecondition("the turn hit --max-turns before the model finished");
    default:
      return Status::Ok();
  }
}

// What the signal thread does: a first Ctrl-C interrupts the lead's turn;
// stopping interrupts every agent for good and kills every tree.
SessionSignals::Hooks SignalHooks(Host& host, std::function<void(const std::string&)> say) {
  SessionSignals::Hooks hooks;
  hooks.interrupt_turn = [&host] {
    host.lead().Interrupt();
    host.teams().news().waker()->Notify();
  };
  hooks.stop_all = [&host] { host.InterruptAll(); };
  hooks.say = std::move(say);
  return hooks;
}

}  // namespace

Session::Session(const SessionOptions& options, Host& host, SessionSignals& signals, const SessionOutput& output)
    : options_(options), host_(host), signals_(signals), output_(output) {}

void Session::Say(const std::string& line) const {
  if (output_.say) output_.say(line);
}

SessionResult Session::Run(const SessionOptions& options, llm::Provider* provider, SessionOutput output) {
  // Signals blocked before any thread starts; acted on once the hooks are set.
  SessionSignals signals;
  auto started = Host::Start(options, provider, output);
  if (!started.ok()) return {0, started.status(), std::nullopt};
  Host& host = **started;
  Session session(options, host, signals, output);
  signals.SetHooks(SignalHooks(host, output.say));
  int code = 0;
  if (options.teammates_only) {
    session.HostTeammates();
  } else {
    code = session.Work();
  }
  host.StopWork();
  if (!options.teammates_only) {
    for (const auto& line : session.MergeLines()) session.Say(line);
  }
  if (signals.exit_code() != 0) {
    KillTagged(HostTagPrefix());  // whatever a tool started since
    code = signals.exit_code();
  }
  if (host.lead_taken_over()) {
    session.Say("another host took over the lead of team " + options.team +
                " (this host lost its liveness lock with its connection to " + host.store().where() +
                "): this host stopped");
    code = 1;
  }
  // No hook runs from now on: the host may go.
  signals.Finished();
  for (const auto& line : session.UsageLines()) session.Say(line);
  if (!options.teammates_only) {
    const int shown = code != 0 ? code : session.failed_.ok() ? 0 : ExitCodeFor(session.failed_);
    host.lead().ReportStopped(shown == 0 ? "its session ended" : "its host stopped (exit " + std::to_string(shown) + ")");
  }
  host.env().files.Flush();  // the last states are on disk before the host exits
  return {code, session.failed_, host.teams().last_deleted()};
}

Result<agent::TurnResult> Session::Prompt(const std::string& text) {
  host_.lead().ClearInterrupt();  // a Ctrl-C before this line was not meant for it
  signals_.SetTurnRunning(true);
  auto r = WaitForTeam(host_.lead().RunPrompt(text));
  signals_.SetTurnRunning(false);
  return r;
}

// After a lead turn: while teammates (or pane agents) work, the lead waits
// for their messages and the team's news, and takes them in; it returns
// when the lead ended its turn with nobody working and nothing unread.
Result<agent::TurnResult> Session::WaitForTeam(Result<agent::TurnResult> r) {
  agent::AgentLoop& lead = host_.lead();
  tools::ToolContext& ctx = host_.lead_context();
  team::TeamManager& teams = host_.teams();
  std::shared_ptr<Waker> waker = teams.news().waker();
  TeamStore& store = teams.store();
  LeadInboxes inboxes(store, ctx, waker);
  Watcher::Subscription team_files;
  auto stopping = [&] { return signals_.interrupts() > 0 || signals_.exit_code() != 0; };
  for (;;) {
    if (!r.ok() || r->interrupted || stopping()) break;
    if (r->end == agent::TurnEnd::kRefusal || r->end == agent::TurnEnd::kMaxCalls ||
        r->end == agent::TurnEnd::kBudget || r->end == agent::TurnEnd::kBreaker) {
      break;
    }
    if (inboxes.Follow()) {  // the lead changes team with TeamCreate/TeamDelete
      // A team with pane agents (the file store's): their inboxes and
      // statuses (any file of the team) wake the lead too.
      auto team = store.LoadTeam(ctx.team);
      bool panes = false;
      for (const auto& m : team.ok() ? team->members : std::vector<Member>{}) panes |= m.backend == MemberBackend::kTmux;
      team_files.Reset();
      if (panes && ctx.store().FilesHere()) {
        auto t = host_.env().watcher.Subscribe(ctx.ws.TeamDir(ctx.team), "", waker);
        if (t.ok()) team_files = std::move(*t);
      }
    }
    uint64_t g = waker->generation();
    auto for_the_lead = [&] {
      return inboxes.MayHavePending() || teams.news().Pending() || lead.HasPendingInput();
    };
    if (for_the_lead()) {
      r = lead.Continue();
      continue;
    }
    // A replay's record may still hold work (a turn its pacer starts).
    const bool replaying = options_.pacer && options_.pacer->Pending();
    if (!teams.AnyActive() && !PaneAgentsOwe(ctx, store) && !replaying) {
      // Nobody works now, so whatever they had for the lead is out: a
      // last word (the merge queue's review notice, say) may have come
      // after the look above but before its sender went idle.
      if (for_the_lead()) continue;
      LogDebug("the lead stops waiting: nobody is working, nothing is queued");
      break;
    }
    // Without a watch on the inbox, a send from another process is seen
    // at the next look.
    waker->WaitChange(g, replaying ? DeadlineIn(0.05) : inboxes.watched() ? std::nullopt : DeadlineIn(1.0));
  }
  if (r.ok() && stopping()) r->interrupted = true;
  return r;
}

// The session's work: resumed teammates, then the goal, or what a resumed
// conversation left and the REPL. Returns the exit code.
int Session::Work() {
  agent::AgentLoop& lead = host_.lead();
  team::TeamManager& teams = host_.teams();
  // Teammates whose host died come back from their journals (unless they
  // are left to other hosts: --no-adopt).
  Result<std::vector<std::string>> resumed = std::vector<std::string>{};
  if (options_.adopt) resumed = teams.ResumeTeam(kDeadHostGraceS);
  const bool pending_work = resumed.ok() && !resumed->empty();
  if (pending_work) {
    std::string names;
    for (const auto& n : *resumed) names += (names.empty() ? "" : ", ") + n;
    Say("resumed teammates of team " + host_.lead_context().team + ": " + names);
  }
  // A turn runs (the first Ctrl-C interrupts it) from before the lead's
  // call until the team's work after it is done.
  auto turn = [&](const std::function<Result<agent::TurnResult>()>& call) {
    signals_.SetTurnRunning(true);
    auto r = WaitForTeam(call());
    signals_.SetTurnRunning(false);
    return r;
  };
  if (options_.hosted) {
    if (!options_.goal.empty()) {
      auto r = turn([&] { return lead.RunPrompt(options_.goal); });
      if (!r.ok()) Say("the goal's turn failed: " + r.status().message());
    }
    HostForever();
    return 0;
  }
  if (!options_.goal.empty()) {
    auto r = turn([&] { return lead.RunPrompt(options_.goal); });
    failed_ = TurnFailure(r);
    return r.ok() && r->interrupted ? 130 : 0;
  }
  if (pending_work || lead.HasPendingInput()) {
    auto r = turn([&] { return lead.Continue(); });
    if (!r.ok()) Say("the resumed work's turn failed: " + r.status().message());
  }
  if (signals_.exit_code() == 0 && output_.repl) output_.repl(*this);
  return 0;
}

// The lead's status in the roster (written only when it changes).
void Session::SetLeadStatus(MemberStatus status) {
  const tools::ToolContext& ctx = host_.lead_context();
  TeamStore& store = host_.teams().store();
  auto team = store.LoadTeam(ctx.team);
  if (!team.ok()) return;
  const Member* m = team->Find(ctx.agent);
  if (m == nullptr || m->status == status) return;
  auto set = store.UpdateTeam(ctx.team, [&](TeamConfig& c) {
    if (Member* lead = c.Find(ctx.agent)) lead->status = status;
    return Status::Ok();
  });
  WarnIfFailed(set.status(), "the lead's status");
}

// `mates up`: the lead answers what people and teammates send it, for as
// long as the host runs. A failed turn (the provider down, say) is logged
// and the host goes on; the next message or news tries again.
void Session::HostForever() {
  agent::AgentLoop& lead = host_.lead();
  tools::ToolContext& ctx = host_.lead_context();
  team::TeamManager& teams = host_.teams();
  std::shared_ptr<Waker> waker = teams.news().waker();
  LeadInboxes inboxes(teams.store(), ctx, waker);
  bool said_spent = false;
  while (signals_.exit_code() == 0) {
    inboxes.Follow();
    uint64_t g = waker->generation();
    bool unread = inboxes.MayHavePending();
    if (unread || teams.news().Pending() || lead.HasPendingInput()) {
      SetLeadStatus(MemberStatus::kActive);
      lead.ClearInterrupt();
      signals_.SetTurnRunning(true);
      auto r = WaitForTeam(lead.Continue());
      signals_.SetTurnRunning(false);
      signals_.ResetInterrupts();
      if (!r.ok()) {
        Say("the lead's turn failed: " + r.status().message() + " (the next message tries again)");
        // No retry storm: wait for something new, or a while.
        waker->WaitChange(waker->generation(), DeadlineIn(30));
      } else if (r->end == agent::TurnEnd::kBreaker) {
        // Paused: the team's news does not wake it, a message does.
        Say("the lead was " + r->why + "; a message lets it go on (`mates send --team " + ctx.team + " --to " +
            ctx.agent + " TEXT`, or `mates attach`)");
        SetLeadStatus(MemberStatus::kIdle);
        while (signals_.exit_code() == 0 && !inboxes.MayHavePending()) {
          uint64_t seen = waker->generation();
          if (inboxes.MayHavePending()) break;
          waker->WaitChange(seen, inboxes.watched() ? DeadlineIn(60) : DeadlineIn(1.0));
        }
      } else if (r->end == agent::TurnEnd::kBudget) {
        // What waits stays unread: the host goes on showing the team, but
        // nobody calls the model until a person gives the team more
        // (`mates budget set`, which this host follows): then the next
        // message, or a minute, goes on.
        if (!said_spent) {
          Say(r->why + ": no agent calls the model any more (`mates budget set --team " + ctx.team +
              "` with more lets it go on)");
        }
        said_spent = true;
        // Not "waiting for work": it will not work (DESIGN §20).
        lead.ReportStopped("budget: " + r->why);
        SetLeadStatus(MemberStatus::kIdle);
        waker->WaitChange(waker->generation(), DeadlineIn(60));
      } else {
        said_spent = false;  // it went on: a budget spent again is news again
      }
      continue;
    }
    SetLeadStatus(MemberStatus::kIdle);
    waker->WaitChange(g, inboxes.watched() ? std::nullopt : DeadlineIn(1.0));
  }
}

// `mates up --teammates`: no lead here; the adopting thread brings the
// teammates, and what the lead would hear of them goes to the host's log
// (the lead, at its own host, hears it through its inbox and the roster).
void Session::HostTeammates() {
  std::shared_ptr<Waker> waker = host_.teams().news().waker();
  while (signals_.exit_code() == 0) {
    uint64_t g = waker->generation();
    if (std::string news = host_.teams().news().Take(); !news.empty()) Say(news);
    waker->WaitChange(g, DeadlineIn(60));
  }
}

// What the team's merge queue did, at the end of a run.
std::vector<std::string> Session::MergeLines() {
  team::TeamManager& teams = host_.teams();
  const std::string team = teams.place().team();
  auto list = host_.store().Merges(team)->List();
  if (!list.ok() || list->empty()) return {};
  std::map<std::string, int> by_state;
  for (const auto& m : *list) by_state[std::string(MergeStateName(m.status))]++;
  std::string counts;
  for (const auto& [state, n] : by_state) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  std::vector<std::string> lines = {"merges: " + counts + " (" + options_.mates + " merges --team " + team + " list)"};
  for (const auto& m : *list) {
    lines.push_back("merge " + std::to_string(m.id) + ": task #" + std::to_string(m.task) + " by " + m.owner + ": " +
                    std::string(MergeStateName(m.status)) +
                    (m.status == MergeState::kMerged ? " (" + m.merged_commit.substr(0, 10) + " on " + m.target + ")"
                     : m.files.empty()               ? ""
                                                     : " in " + m.files.front() + (m.files.size() > 1 ? ", …" : "")));
  }
  return lines;
}

std::vector<std::string> Session::UsageLines() {
  const agent::AgentLoop& lead = host_.lead();
  team::TeamManager& teams = host_.teams();
  const std::string& mates = options_.mates;
  std::vector<std::string> lines = {"usage: " + lead.spec().name + ": " + lead.usage().Summary(lead.model(), host_.env().prices)};
  if (host_.subagents().usage().calls() > 0) {
    lines.push_back("usage: subagents: " + host_.subagents().usage().Summary(lead.model(), host_.env().prices));
  }
  const std::string t = teams.UsageSummary(host_.env().prices);
  for (size_t start = 0; start < t.size();) {
    size_t nl = t.find('\n', start);
    lines.push_back("usage: " + t.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  // Each team this run worked in, every run so far (what `mates usage`
  // shows): those it deleted, in that order, from their archives; the team
  // it began in, if the lead is elsewhere now; then the lead's team now.
  auto say = [&](const std::string& team, const fs::path& agents_dir, const std::string& how) {
    auto u = agent::ReadTeamUsage(agents_dir, host_.env().prices);
    if (u.ok() && u->calls > 0) lines.push_back("usage: team " + team + how + ": " + agent::DescribeTeamUsage(*u));
  };
  std::set<std::string> said;
  for (const std::string& team : teams.deleted_teams()) {
    auto archive = FindArchive(teams.ws(), team, "");
    if (!said.insert(team).second || !archive.ok()) continue;
    say(team, Workspace(archive->root).AgentsDir(team),
        ", deleted (all runs, " + mates + " usage --team " + team + " --archived)");
  }
  const std::string team = teams.place().team();
  const std::string& home = teams.place().home();
  if (home != team && said.count(home) == 0) {
    say(home, teams.ws().AgentsDir(home), " (all runs, " + mates + " usage --team " + home + ")");
  }
  say(team, teams.ws().AgentsDir(team), " (all runs, " + mates + " usage --team " + team + ")");
  return lines;
}

}  // namespace mates::host
