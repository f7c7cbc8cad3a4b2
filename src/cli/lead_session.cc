// The lead and its team hosted in this process (see lead_session.h).
#include "cli/lead_session.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/agent_loop.h"
#include "agent/prompts.h"
#include "agent/subagents.h"
#include "cli/cli_common.h"
#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/names.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "tools/skills.h"

namespace mates::cli {
namespace {

// Ctrl-C: the first interrupts the running turn, the second exits.
struct Interrupts {
  std::atomic<bool> turn_running{false};
  std::atomic<int> count{0};
  agent::AgentLoop* lead = nullptr;
  LiveOutput* out = nullptr;
  std::shared_ptr<Waker> waiting;  // the lead's wait for its team
};

void StartSignalThread(Interrupts* st) {
  std::thread([st] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (sig == SIGINT && st->count.fetch_add(1) == 0) {
        if (st->turn_running.load()) {
          st->lead->Interrupt();
          if (st->waiting) st->waiting->Notify();
          st->out->Line("", "interrupted (Ctrl-C again to exit)");
        } else {
          st->out->Line("", "(Ctrl-C again, or /quit, to exit)");
        }
        continue;
      }
      // Second Ctrl-C, or SIGTERM: stop what runs, then leave. Everything on
      // disk is consistent at any instant (journals are appended line by
      // line, files replaced atomically).
      st->lead->Interrupt();
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(sig == SIGTERM ? 143 : 130);
    }
  }).detach();
}

void PrintUsage(LiveOutput& out, const agent::AgentLoop& lead, const agent::SubagentManager& subs,
                team::TeamManager& teams) {
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
}

// Pane agents of the team (backend tmux, fed by a cluster's router) still
// owe an answer: a message waits in an inbox, or the router is typing one
// into a pane. Agents of a cluster that is down (shutdown) owe nothing.
bool PaneAgentsOwe(const tools::ToolContext& ctx) {
  auto team = Roster(ctx.ws).Load(ctx.team);
  if (!team.ok()) return false;
  for (const auto& m : team->members) {
    if (m.backend != "tmux" || m.status == MemberStatus::kShutdown) continue;
    if (m.status == MemberStatus::kActive) return true;
    auto n = Mailbox(ctx.ws.TeamDir(ctx.team), m.name).PendingCount();
    if (n.ok() && *n > 0) return true;
  }
  return false;
}

// After a lead turn: while teammates (or pane agents) work, the lead waits
// for their messages and the team's news, and takes them in; it returns
// when the lead ended its turn with nobody working and nothing unread.
Result<agent::TurnResult> WaitForTeam(Result<agent::TurnResult> r, agent::AgentLoop& lead,
                                      tools::ToolContext& ctx, team::TeamManager& teams, Interrupts& st) {
  std::shared_ptr<Waker> waker = teams.lead_waker();
  st.waiting = waker;
  std::string watched_team;
  Watcher::Subscription inbox, team_files;
  for (;;) {
    if (!r.ok() || r->interrupted || st.count.load() > 0) break;
    if (r->stop_reason == "refusal" || r->stop_reason == "max_calls") break;
    if (watched_team != ctx.team) {  // the lead changes team with TeamCreate/TeamDelete
      auto s = Watcher::Default().Subscribe(ctx.ws.TeamDir(ctx.team), Workspace::InboxFileName(ctx.agent), waker);
      if (s.ok()) inbox = std::move(*s);
      // A team with pane agents: their inboxes and statuses (any file of
      // the team) wake the lead too.
      auto team = Roster(ctx.ws).Load(ctx.team);
      bool panes = false;
      for (const auto& m : team.ok() ? team->members : std::vector<Member>{}) panes |= m.backend == "tmux";
      team_files.Reset();
      if (panes) {
        auto t = Watcher::Default().Subscribe(ctx.ws.TeamDir(ctx.team), "", waker);
        if (t.ok()) team_files = std::move(*t);
      }
      watched_team = ctx.team;
    }
    uint64_t g = waker->generation();
    bool unread = Mailbox(ctx.ws.TeamDir(ctx.team), ctx.agent).MayHavePending();
    if (unread || teams.HasNewsForLead()) {
      r = lead.Continue();
      continue;
    }
    if (!teams.AnyActive() && !PaneAgentsOwe(ctx)) break;
    waker->WaitChange(g, std::nullopt);
  }
  if (r.ok() && st.count.load() > 0) r->interrupted = true;
  st.waiting.reset();
  return r;
}

int ExitFor(const Result<agent::TurnResult>& r, LiveOutput& out) {
  if (!r.ok()) return Fail(r.status().code() == StatusCode::kInvalidArgument
                               ? Status::FailedPrecondition(r.status().message())
                               : r.status());
  if (r->interrupted) return 130;
  if (r->stop_reason == "refusal") return Fail(Status::FailedPrecondition("the model refused"));
  if (r->stop_reason == "max_calls") {
    return Fail(Status::FailedPrecondition("the turn hit --max-turns before the model finished"));
  }
  (void)out;
  return 0;
}

void Repl(agent::AgentLoop& lead, tools::ToolContext& ctx, LiveOutput& out, Interrupts& st,
          agent::SubagentManager& subs, team::TeamManager& teams) {
  // Messages for the lead that arrive while the user types are announced
  // (they reach the lead at its next turn).
  auto waker = std::make_shared<Waker>();
  auto sub = Watcher::Default().Subscribe(ctx.ws.TeamDir(ctx.team), Workspace::InboxFileName(ctx.agent), waker);
  std::atomic<bool> done{false};
  std::thread notifier([&] {
    size_t shown = 0;
    while (!done.load()) {
      uint64_t g = waker->generation();
      auto n = Mailbox(ctx.ws.TeamDir(ctx.team), ctx.agent).PendingCount();
      if (n.ok() && *n > shown && !st.turn_running.load()) {
        out.Line("", "✉ " + std::to_string(*n) + " new message(s) for " + ctx.agent +
                         " (they reach the lead with your next line; /inbox shows them)");
      }
      if (n.ok()) shown = *n;
      waker->WaitChange(g, DeadlineIn(0.5));
    }
  });
  bool tty = ::isatty(STDIN_FILENO) == 1;
  std::string line;
  for (;;) {
    if (tty) {
      std::cout << "mates> " << std::flush;
    }
    if (!std::getline(std::cin, line)) break;
    st.count = 0;
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/help") {
      std::cout << "/team  /inbox  /tasks  /send NAME TEXT  /compact  /usage  /quit\n";
      continue;
    }
    if (line == "/team") {
      auto c = Roster(ctx.ws).Load(ctx.team);
      if (!c.ok()) {
        std::cout << c.status().message() << "\n";
        continue;
      }
      std::cout << "team " << c->name << "\n";
      for (const auto& m : c->members) {
        std::cout << "  " << m.name << "  " << m.role << "  " << MemberStatusName(m.status) << "\n";
      }
      continue;
    }
    if (line == "/inbox") {
      auto msgs = Mailbox(ctx.ws.TeamDir(ctx.team), ctx.agent).Peek();
      if (msgs.ok() && msgs->empty()) std::cout << "(no new messages)\n";
      if (msgs.ok()) {
        for (const auto& m : *msgs) std::cout << FormatMessage(m) << "\n";
      }
      continue;
    }
    if (line == "/tasks") {
      auto tasks = SharedBoard(ctx.ws.TasksDir(ctx.team))->List(false);
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
      auto receipt = Messenger(ctx.ws, ctx.team).Send(r);
      std::cout << (receipt.ok() ? "sent to " + r.recipient : receipt.status().message()) << "\n";
      continue;
    }
    if (line == "/compact") {
      Status s = lead.Compact();
      if (!s.ok()) std::cout << "compaction failed: " << s.message() << "\n";
      continue;
    }
    if (line == "/usage") {
      PrintUsage(out, lead, subs, teams);
      continue;
    }
    if (line[0] == '/') {
      std::cout << "unknown command " << line << " (/help)\n";
      continue;
    }
    st.turn_running = true;
    auto r = WaitForTeam(lead.Run(line), lead, ctx, teams, st);
    st.turn_running = false;
    if (!r.ok()) std::cerr << "mates: error: " << r.status().message() << std::endl;
  }
  done = true;
  waker->Notify();
  notifier.join();
}

}  // namespace

LeadSessionResult RunLeadSession(const LeadSessionConfig& a, llm::Provider* provider, LiveOutput& out) {
  LeadSessionResult result;
  const Workspace& ws = a.ws;
  Status s = ValidateName("team name", a.team);
  if (!s.ok()) return {Fail(s), std::nullopt};
  if (a.max_turns < 1) return {Usage("--max-turns must be at least 1"), std::nullopt};

  // The lead's team: created when missing.
  Roster roster(ws);
  auto team = roster.Load(a.team);
  if (!team.ok() && team.status().code() == StatusCode::kNotFound) team = roster.CreateTeam(a.team);
  if (!team.ok()) return {Fail(team.status()), std::nullopt};
  const std::string lead_name = team->lead;

  // Signals are taken by one thread; every thread started from here on
  // inherits the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  tools::SkillLibrary skills = tools::SkillLibrary::Load(ws);
  auto registry = tools::MakeToolRegistry(tools::Scope::kLead);
  tools::ToolContext ctx;
  ctx.ws = ws;
  ctx.team = a.team;
  ctx.agent = lead_name;
  ctx.is_lead = true;
  ctx.skills = &skills;

  agent::PromptFacts facts;
  facts.ws = ws;
  facts.team = a.team;
  facts.name = lead_name;
  facts.lead = lead_name;
  facts.skills = skills.PromptSection();
  agent::AgentSpec spec;
  spec.name = lead_name;
  spec.system = agent::LeadSystemPrompt(facts);
  spec.identity = agent::LeadIdentity(facts);
  spec.model = a.model;
  spec.max_calls = a.max_turns;
  spec.read_inbox = true;
  spec.context.budget_tokens = a.context_budget;

  agent::AgentLoop* lead_ptr = nullptr;
  agent::SubagentManager subs(provider, ctx, &out, [&lead_ptr](std::string notice) {
    if (lead_ptr != nullptr) lead_ptr->AddNotice(std::move(notice));
  });
  ctx.subagents = &subs;
  agent::AgentLoop lead(spec, provider, registry.get(), &ctx, &out);
  lead_ptr = &lead;
  ctx.cancel = lead.cancel_token();

  // One process hosts a team's lead at a time (the kernel frees the lock if
  // that process dies).
  s = EnsureDir(ws.AgentsDir(a.team));
  if (!s.ok()) return {Fail(s), std::nullopt};
  auto host = FileLock::TryAcquire(ws.AgentsDir(a.team) / (lead_name + ".lock"));
  if (!host.ok()) {
    return {Fail(Status::FailedPrecondition("the lead of team '" + a.team +
                                            "' is already running in another process")),
            std::nullopt};
  }
  fs::path journal = ws.AgentsDir(a.team) / (lead_name + ".jsonl");
  std::error_code ec;
  if (a.fresh && fs::exists(journal, ec)) {
    fs::rename(journal, ws.AgentsDir(a.team) / (lead_name + "." +
                                                std::to_string(static_cast<int64_t>(WallSeconds())) + ".jsonl"),
               ec);
  }
  s = lead.AttachJournal(journal, /*resume=*/true);
  if (!s.ok()) return {Fail(s), std::nullopt};

  team::TeamOptions topt;
  topt.idle_timeout_s = a.idle_timeout_s;
  topt.shutdown_timeout_s = a.shutdown_timeout_s;
  topt.teammate_max_calls = a.max_turns;
  topt.context_budget = a.context_budget;
  team::TeamManager teams(ws, provider, &out, topt, &lead, &ctx, [&out](const Member& m) {
    out.SetColor(m.name, m.color);
    out.SetMulti(true);
  });
  ctx.teams = &teams;
  lead.SetNoticeSource([&teams] { return teams.TakeNewsForLead(); });

  Interrupts st;
  st.lead = &lead;
  st.out = &out;
  StartSignalThread(&st);

  // Teammates whose host died come back from their journals.
  auto resumed = teams.ResumeTeam();
  bool pending_work = resumed.ok() && !resumed->empty();
  if (pending_work) {
    std::string names;
    for (const auto& n : *resumed) names += (names.empty() ? "" : ", ") + n;
    out.Line("", "resumed teammates of team " + ctx.team + ": " + names);
  }
  int code = 0;
  if (a.goal.empty()) {
    if (pending_work || lead.HasPendingInput()) {
      st.turn_running = true;
      auto r = WaitForTeam(lead.Continue(), lead, ctx, teams, st);
      st.turn_running = false;
      if (!r.ok()) std::cerr << "mates: error: " << r.status().message() << std::endl;
    }
    Repl(lead, ctx, out, st, subs, teams);
  } else {
    st.turn_running = true;
    auto r = WaitForTeam(lead.Run(a.goal), lead, ctx, teams, st);
    st.turn_running = false;
    code = ExitFor(r, out);
  }
  teams.StopAll();
  PrintUsage(out, lead, subs, teams);
  result.exit_code = code;
  result.deleted_team = teams.last_deleted();
  return result;
}


}  // namespace mates::cli
