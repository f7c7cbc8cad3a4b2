// The lead and its team hosted in this process (see lead_session.h).
#include "cli/lead_session.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "agent/agent_loop.h"
#include "agent/journal.h"
#include "agent/prompts.h"
#include "agent/subagents.h"
#include "cli/cli_common.h"
#include "cli/session_signals.h"
#include "host/host.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "store/archive.h"
#include "store/host_info.h"
#include "store/liveness.h"
#include "store/mailbox.h"
#include "store/merges.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "tools/skills.h"

namespace mates::cli {
namespace {

void PrintUsage(LiveOutput& out, const agent::AgentLoop& lead, const agent::SubagentManager& subs,
                team::TeamManager& teams, const std::string& mates) {
  out.Line("", "usage: " + lead.spec().name + ": " + lead.usage().Summary(lead.model()));
  if (subs.usage().calls() > 0) out.Line("", "usage: subagents: " + subs.usage().Summary(lead.model()));
  std::string t = teams.UsageSummary();
  size_t start = 0;
  while (start < t.size()) {
    size_t nl = t.find('\n', start);
    out.Line("", "usage: " + t.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  // Each team this run worked in, every run so far (what `mates usage`
  // shows): those it deleted, in that order, from their archives; the team
  // it began in, if the lead is elsewhere now; then the lead's team now.
  auto say = [&](const std::string& team, const fs::path& agents_dir, const std::string& how) {
    auto u = agent::ReadTeamUsage(agents_dir);
    if (u.ok() && u->calls > 0) out.Line("", "usage: team " + team + how + ": " + agent::DescribeTeamUsage(*u));
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
}

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

// After a lead turn: while teammates (or pane agents) work, the lead waits
// for their messages and the team's news, and takes them in; it returns
// when the lead ended its turn with nobody working and nothing unread.
Result<agent::TurnResult> WaitForTeam(Result<agent::TurnResult> r, agent::AgentLoop& lead,
                                      tools::ToolContext& ctx, team::TeamManager& teams,
                                      const SessionSignals& signals) {
  std::shared_ptr<Waker> waker = teams.news().waker();
  TeamStore& store = teams.store();
  LeadInboxes inboxes(store, ctx, waker);
  Watcher::Subscription team_files;
  auto stopping = [&] { return signals.interrupts() > 0 || signals.exit_code() != 0; };
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
      if (panes && !ctx.store().spans_machines()) {
        auto t = Watcher::Default().Subscribe(ctx.ws.TeamDir(ctx.team), "", waker);
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
    if (!teams.AnyActive() && !PaneAgentsOwe(ctx, store)) {
      // Nobody works now, so whatever they had for the lead is out: a
      // last word (the merge queue's review notice, say) may have come
      // after the look above but before its sender went idle.
      if (for_the_lead()) continue;
      LogDebug("the lead stops waiting: nobody is working, nothing is queued");
      break;
    }
    // Without a watch on the inbox, a send from another process is seen
    // at the next look.
    waker->WaitChange(g, inboxes.watched() ? std::nullopt : DeadlineIn(1.0));
  }
  if (r.ok() && stopping()) r->interrupted = true;
  return r;
}

// What the team's merge queue did, at the end of a run.
void ReportMerges(TeamStore& store, const std::string& team, LiveOutput& out, const std::string& mates) {
  auto list = store.Merges(team)->List();
  if (!list.ok() || list->empty()) return;
  std::map<std::string, int> by_state;
  for (const auto& m : *list) by_state[std::string(MergeStateName(m.status))]++;
  std::string counts;
  for (const auto& [state, n] : by_state) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  out.Line("", "merges: " + counts + " (" + mates + " merges --team " + team + " list)");
  for (const auto& m : *list) {
    out.Line("", "merge " + std::to_string(m.id) + ": task #" + std::to_string(m.task) + " by " + m.owner + ": " +
                     std::string(MergeStateName(m.status)) +
                     (m.status == MergeState::kMerged ? " (" + m.merged_commit.substr(0, 10) + " on " + m.target + ")"
                      : m.files.empty()               ? ""
                                                      : " in " + m.files.front() + (m.files.size() > 1 ? ", …" : "")));
  }
}

// The lead's status in the roster (written only when it changes).
void SetLeadStatus(const tools::ToolContext& ctx, TeamStore& store, MemberStatus status) {
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
void HostForever(agent::AgentLoop& lead, tools::ToolContext& ctx, team::TeamManager& teams,
                 SessionSignals& signals, LiveOutput& out) {
  std::shared_ptr<Waker> waker = teams.news().waker();
  LeadInboxes inboxes(teams.store(), ctx, waker);
  bool said_spent = false;
  while (signals.exit_code() == 0) {
    inboxes.Follow();
    uint64_t g = waker->generation();
    bool unread = inboxes.MayHavePending();
    if (unread || teams.news().Pending() || lead.HasPendingInput()) {
      SetLeadStatus(ctx, teams.store(), MemberStatus::kActive);
      lead.ClearInterrupt();
      signals.SetTurnRunning(true);
      auto r = WaitForTeam(lead.Continue(), lead, ctx, teams, signals);
      signals.SetTurnRunning(false);
      signals.ResetInterrupts();
      if (!r.ok()) {
        out.Line("", "the lead's turn failed: " + r.status().message() + " (the next message tries again)");
        // No retry storm: wait for something new, or a while.
        waker->WaitChange(waker->generation(), DeadlineIn(30));
      } else if (r->end == agent::TurnEnd::kBreaker) {
        // Paused: the team's news does not wake it, a message does.
        out.Line("", "the lead was " + r->why + "; a message lets it go on (`mates send --team " + ctx.team +
                         " --to " + ctx.agent + " TEXT`, or `mates attach`)");
        SetLeadStatus(ctx, teams.store(), MemberStatus::kIdle);
        while (signals.exit_code() == 0 && !inboxes.MayHavePending()) {
          uint64_t seen = waker->generation();
          if (inboxes.MayHavePending()) break;
          waker->WaitChange(seen, inboxes.watched() ? DeadlineIn(60) : DeadlineIn(1.0));
        }
      } else if (r->end == agent::TurnEnd::kBudget) {
        // What waits stays unread: the host goes on showing the team, but
        // nobody calls the model until a person gives the team more
        // (`mates budget set`, which this host follows): then the next
        // message, or a minute, goes on.
        if (!said_spent) out.Line("", r->why + ": no agent calls the model any more (`mates budget set --team " +
                                          ctx.team + "` with more lets it go on)");
        said_spent = true;
        // Not "waiting for work": it will not work (DESIGN §20).
        lead.ReportStopped("budget: " + r->why);
        SetLeadStatus(ctx, teams.store(), MemberStatus::kIdle);
        waker->WaitChange(waker->generation(), DeadlineIn(60));
      } else {
        said_spent = false;  // it went on: a budget spent again is news again
      }
      continue;
    }
    SetLeadStatus(ctx, teams.store(), MemberStatus::kIdle);
    waker->WaitChange(g, inboxes.watched() ? std::nullopt : DeadlineIn(1.0));
  }
}

// `mates up --teammates`: no lead here; the adopting thread brings the
// teammates, and what the lead would hear of them goes to the host's log
// (the lead, at its own host, hears it through its inbox and the roster).
int HostTeammates(team::TeamManager& teams, SessionSignals& signals, LiveOutput& out) {
  std::shared_ptr<Waker> waker = teams.news().waker();
  while (signals.exit_code() == 0) {
    uint64_t g = waker->generation();
    if (std::string news = teams.news().Take(); !news.empty()) out.Line("", news);
    waker->WaitChange(g, DeadlineIn(60));
  }
  return 0;
}

int ExitFor(const Result<agent::TurnResult>& r, LiveOutput& out) {
  if (!r.ok()) return Fail(r.status().code() == StatusCode::kInvalidArgument
                               ? Status::FailedPrecondition(r.status().message())
                               : r.status());
  if (r->interrupted) return 130;
  if (r->end == agent::TurnEnd::kRefusal) return Fail(Status::FailedPrecondition("the model refused"));
  if (r->end == agent::TurnEnd::kBreaker) return Fail(Status::FailedPrecondition("the lead was " + r->why));
  if (r->end == agent::TurnEnd::kBudget) {
    return Fail(Status::FailedPrecondition(r->why + ": no agent calls the model any more (a larger "
                                           "--budget-tokens / --budget-usd lets the team go on)"));
  }
  if (r->end == agent::TurnEnd::kMaxCalls) {
    return Fail(Status::FailedPrecondition("the turn hit --max-turns before the model finished"));
  }
  (void)out;
  return 0;
}

// Lines typed at the REPL, read from stdin beside the session's stop fd:
// a stopping session is never stuck in a read.
class LineReader {
 public:
  explicit LineReader(int stop_fd) : stop_fd_(stop_fd) {}
  // The next line (without '\n'); nullopt at the end of input or when the
  // session stops.
  std::optional<std::string> Next() {
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      if (eof_) {
        if (buf_.empty()) return std::nullopt;
        std::string line = std::move(buf_);
        buf_.clear();
        return line;
      }
      struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      int rc = ::poll(fds, 2, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || (fds[1].revents & POLLIN) != 0) return std::nullopt;
      char chunk[4096];
      ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
      } else {
        buf_.append(chunk, static_cast<size_t>(n));
      }
    }
  }

 private:
  int stop_fd_;
  std::string buf_;
  bool eof_ = false;
};

// Announces messages for the lead that arrive while the person types (they
// reach the lead at its next turn), on a thread of its own. The lead's team
// is read from the TeamManager (TeamCreate moves it).
class InboxNotifier {
 public:
  InboxNotifier(std::string agent, team::TeamManager& teams, LiveOutput& out, const SessionSignals& signals)
      : agent_(std::move(agent)), teams_(teams), out_(out), signals_(signals) {
    thread_ = std::thread([this] {
      NameThisThread("mates-notifier");
      RunGuarded("the inbox notifier", [this] { Main(); });
    });
  }
  ~InboxNotifier() {
    done_.store(true);
    waker_->Notify();
    thread_.join();
  }

 private:
  void Main() {
    size_t shown = 0;
    std::string watched;
    std::unique_ptr<Hold> sub;
    while (!done_.load()) {
      std::string team = teams_.place().team();
      if (team != watched) {
        auto s = teams_.store().InboxOf(team, agent_)->WatchWith(waker_);
        sub = s.ok() ? std::move(*s) : nullptr;
        watched = team;
        shown = 0;
      }
      uint64_t g = waker_->generation();
      auto n = teams_.store().InboxOf(team, agent_)->PendingCount();
      if (n.ok() && *n > shown && !signals_.turn_running()) {
        out_.Line("", "✉ " + std::to_string(*n) + " new message(s) for " + agent_ +
                          " (they reach the lead with your next line; /inbox shows them)");
      }
      if (n.ok()) shown = *n;
      // The team can change under a lead turn: look again now and then.
      waker_->WaitChange(g, DeadlineIn(sub ? 2.0 : 0.5));
    }
  }

  const std::string agent_;
  team::TeamManager& teams_;
  LiveOutput& out_;
  const SessionSignals& signals_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  std::atomic<bool> done_{false};
  std::thread thread_;
};

void Repl(agent::AgentLoop& lead, tools::ToolContext& ctx, LiveOutput& out, SessionSignals& signals,
          agent::SubagentManager& subs, team::TeamManager& teams, const llm::Provider& provider,
          const std::string& mates) {
  std::cout << "mates REPL — lead '" << ctx.agent << "' of team " << ctx.team << ", " << provider.name() << " ("
            << lead.model() << "), workspace " << ctx.ws.root().string()
            << "\nType a goal, or /help; /quit (or Ctrl-D) ends it. Others reach the lead with: " << mates << " send --team "
            << ctx.team << " --to " << ctx.agent << " TEXT" << std::endl;
  InboxNotifier notifier(ctx.agent, teams, out, signals);
  TeamStore& store = teams.store();
  bool tty = ::isatty(STDIN_FILENO) == 1;
  LineReader reader(signals.stop_fd());
  for (;;) {
    if (tty) {
      std::cout << "mates> " << std::flush;
    }
    std::cout << std::flush;  // what the last line printed, also into a pipe, before waiting for the next
    auto next = reader.Next();
    if (!next) break;
    const std::string& line = *next;
    signals.ResetInterrupts();
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/help") {
      std::cout << "/team  /inbox  /tasks  /send NAME TEXT  /compact  /usage  /quit\n";
      continue;
    }
    if (line == "/team") {
      auto c = store.LoadTeam(ctx.team);
      if (!c.ok()) {
        std::cout << c.status().message() << "\n";
        continue;
      }
      std::cout << "team " << c->name << "\n";
      for (const auto& m : c->members) {
        bool hosted = m.status == MemberStatus::kShutdown || store.IsHosted(c->name, m.name);
        std::cout << "  " << m.name << "  " << MemberRoleName(m.role) << "  " << ShownStatus(m, hosted) << "\n";
      }
      continue;
    }
    if (line == "/inbox") {
      auto msgs = store.InboxOf(ctx.team, ctx.agent)->Peek();
      if (msgs.ok() && msgs->empty()) std::cout << "(no new messages)\n";
      if (msgs.ok()) {
        for (const auto& m : *msgs) std::cout << FormatMessage(m) << "\n";
      }
      continue;
    }
    if (line == "/tasks") {
      auto tasks = store.Board(ctx.team)->List(false);
      if (tasks.ok() && tasks->empty()) std::cout << "(no tasks)\n";
      if (tasks.ok()) {
        for (const auto& t : *tasks) std::cout << FormatTaskLine(t) << "\n";
      }
      continue;
    }
    if (line.rfind("/send ", 0) == 0) {
      std::string rest = line.substr(6);
      size_t sp = rest.find(' ');
      if (sp == std::string::npos) {
        std::cout << "usage: /send NAME TEXT\n";
        continue;
      }
      SendRequest r;
      r.sender = ctx.agent;
      r.recipient = rest.substr(0, sp);
      r.content = rest.substr(sp + 1);
      auto receipt = Messenger(*store.Mail(ctx.team)).Send(r);
      std::cout << (receipt.ok() ? "sent to " + r.recipient : receipt.status().message()) << "\n";
      continue;
    }
    if (line == "/compact") {
      Status s = lead.Compact();
      if (!s.ok()) std::cout << "compaction failed: " << s.message() << "\n";
      continue;
    }
    if (line == "/usage") {
      PrintUsage(out, lead, subs, teams, mates);
      continue;
    }
    if (line[0] == '/') {
      std::cout << "unknown command " << line << " (/help)\n";
      continue;
    }
    lead.ClearInterrupt();  // a Ctrl-C before this line was not meant for it
    signals.SetTurnRunning(true);
    auto r = WaitForTeam(lead.RunPrompt(line), lead, ctx, teams, signals);
    signals.SetTurnRunning(false);
    if (!r.ok()) std::cerr << "mates: error: " << r.status().message() << std::endl;
    if (signals.exit_code() != 0) break;
  }
}

// What the signal thread does: a first Ctrl-C interrupts the lead's turn;
// stopping interrupts every agent for good and kills every tree.
SessionSignals::Hooks SignalHooks(host::Host& host, LiveOutput& out) {
  SessionSignals::Hooks hooks;
  hooks.interrupt_turn = [&host] {
    host.lead().Interrupt();
    host.teams().news().waker()->Notify();
  };
  hooks.stop_all = [&host] { host.InterruptAll(); };
  hooks.say = [&out](const std::string& text) { out.Line("", text); };
  return hooks;
}

// The session's work: resumed teammates, then the goal, or what a resumed
// conversation left and the REPL. Returns the exit code.
int Work(const LeadSessionConfig& a, agent::AgentLoop& lead, tools::ToolContext& ctx, team::TeamManager& teams,
         agent::SubagentManager& subs, SessionSignals& signals, LiveOutput& out, const llm::Provider& provider) {
  // Teammates whose host died come back from their journals.
  auto resumed = teams.ResumeTeam(kDeadHostGraceS);
  bool pending_work = resumed.ok() && !resumed->empty();
  if (pending_work) {
    std::string names;
    for (const auto& n : *resumed) names += (names.empty() ? "" : ", ") + n;
    out.Line("", "resumed teammates of team " + ctx.team + ": " + names);
  }
  if (a.hosted) {
    if (!a.goal.empty()) {
      signals.SetTurnRunning(true);
      auto r = WaitForTeam(lead.RunPrompt(a.goal), lead, ctx, teams, signals);
      signals.SetTurnRunning(false);
      if (!r.ok()) out.Line("", "the goal's turn failed: " + r.status().message());
    }
    HostForever(lead, ctx, teams, signals, out);
    return 0;
  }
  if (!a.goal.empty()) {
    signals.SetTurnRunning(true);
    auto r = WaitForTeam(lead.RunPrompt(a.goal), lead, ctx, teams, signals);
    signals.SetTurnRunning(false);
    return ExitFor(r, out);
  }
  if (pending_work || lead.HasPendingInput()) {
    signals.SetTurnRunning(true);
    auto r = WaitForTeam(lead.Continue(), lead, ctx, teams, signals);
    signals.SetTurnRunning(false);
    if (!r.ok()) std::cerr << "mates: error: " << r.status().message() << std::endl;
  }
  if (signals.exit_code() == 0) Repl(lead, ctx, out, signals, subs, teams, provider, a.mates);
  return 0;
}

}  // namespace

LeadSessionResult RunLeadSession(const LeadSessionConfig& a, llm::Provider* provider, LiveOutput& out) {
  // Signals blocked before any thread starts; acted on once the hooks are set.
  SessionSignals signals;
  host::HostOutput output;
  output.events = &out;
  output.say = [&out](const std::string& text) { out.Line("", text); };
  output.on_spawn = [&out](const Member& m) {
    out.SetColor(m.name, m.color);
    out.SetMulti(true);
  };
  auto started = host::Host::Start(a, provider, std::move(output));
  if (!started.ok()) return {Fail(started.status()), std::nullopt};
  host::Host& host = **started;
  signals.SetHooks(SignalHooks(host, out));
  team::TeamManager& teams = host.teams();
  int code = a.teammates_only ? HostTeammates(teams, signals, out)
                              : Work(a, host.lead(), host.lead_context(), teams, host.subagents(), signals, out,
                                     *provider);
  host.StopWork();
  if (!a.teammates_only) ReportMerges(host.store(), teams.place().team(), out, a.mates);
  if (signals.exit_code() != 0) {
    KillTagged(HostTagPrefix());  // whatever a tool started since
    code = signals.exit_code();
  }
  if (host.lead_taken_over()) {
    out.Line("", "another host took over the lead of team " + a.team +
                     " (this host lost its liveness lock with its connection to " + host.store().where() +
                     "): this host stopped");
    code = 1;
  }
  // No hook runs from now on: the host may go.
  signals.Finished();
  PrintUsage(out, host.lead(), host.subagents(), teams, a.mates);
  if (!a.teammates_only) {
    host.lead().ReportStopped(code == 0 ? "its session ended"
                                        : "its host stopped (exit " + std::to_string(code) + ")");
  }
  agent::ActivityFile::FlushAll();  // the last states are on disk before the host exits
  return {code, teams.last_deleted()};
}

}  // namespace mates::cli
