// mates run [GOAL] [--provider P] [--model M] [--base-url URL] [--scenario FILE]
//           [--team T] [--max-turns N] [--context-budget TOKENS] [--fresh]
// With a GOAL: the lead works on it and the command returns when it is done.
// Without: the lead's REPL (/team /inbox /tasks /send /compact /usage /quit).
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
#include "cli/live_output.h"
#include "core/clock.h"
#include "core/names.h"
#include "llm/provider_factory.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "tools/skills.h"

namespace mates::cli {
namespace {

struct RunArgs {
  std::vector<std::string> goal;
  std::string provider, model, base_url, scenario;
  std::string team = "default";
  int max_turns = 100;
  int64_t context_budget = 0;
  double idle_timeout = 60;
  bool fresh = false;
};

// Ctrl-C: the first interrupts the running turn, the second exits.
struct Interrupts {
  std::atomic<bool> turn_running{false};
  std::atomic<int> count{0};
  agent::AgentLoop* lead = nullptr;
  LiveOutput* out = nullptr;
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

void PrintUsage(LiveOutput& out, const agent::AgentLoop& lead, const agent::SubagentManager& subs) {
  out.Line("", "usage: " + lead.spec().name + ": " + lead.usage().Summary(lead.model()));
  if (subs.usage().calls() > 0) out.Line("", "usage: subagents: " + subs.usage().Summary(lead.model()));
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
          agent::SubagentManager& subs) {
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
      PrintUsage(out, lead, subs);
      continue;
    }
    if (line[0] == '/') {
      std::cout << "unknown command " << line << " (/help)\n";
      continue;
    }
    st.turn_running = true;
    auto r = lead.Run(line);
    st.turn_running = false;
    if (!r.ok()) std::cerr << "mates: error: " << r.status().message() << std::endl;
  }
  done = true;
  waker->Notify();
  notifier.join();
}

int Run(Globals& g, const RunArgs& a) {
  Workspace ws = g.ws();
  Status s = ValidateName("team name", a.team);
  if (!s.ok()) return Fail(s);
  if (a.max_turns < 1) return Usage("--max-turns must be at least 1");
  llm::ProviderConfig pc{a.provider, a.model, a.base_url, a.scenario};
  auto provider = llm::MakeProvider(pc);
  if (!provider.ok()) return Fail(provider.status());

  // The lead's team: created when missing.
  Roster roster(ws);
  auto team = roster.Load(a.team);
  if (!team.ok() && team.status().code() == StatusCode::kNotFound) team = roster.CreateTeam(a.team);
  if (!team.ok()) return Fail(team.status());
  const std::string lead_name = team->lead;

  // Signals are taken by one thread; every thread started from here on
  // inherits the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  LiveOutput out(WantColor(), /*multi=*/false);
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
  agent::SubagentManager subs(provider->get(), ctx, &out, [&lead_ptr](std::string notice) {
    if (lead_ptr != nullptr) lead_ptr->AddNotice(std::move(notice));
  });
  ctx.subagents = &subs;
  agent::AgentLoop lead(spec, provider->get(), registry.get(), &ctx, &out);
  lead_ptr = &lead;
  ctx.cancel = lead.cancel_token();

  fs::path journal = ws.AgentsDir(a.team) / (lead_name + ".jsonl");
  std::error_code ec;
  if (a.fresh && fs::exists(journal, ec)) {
    fs::rename(journal, ws.AgentsDir(a.team) / (lead_name + "." +
                                                std::to_string(static_cast<int64_t>(WallSeconds())) + ".jsonl"),
               ec);
  }
  s = lead.AttachJournal(journal, /*resume=*/true);
  if (!s.ok()) return Fail(s);

  Interrupts st;
  st.lead = &lead;
  st.out = &out;
  StartSignalThread(&st);

  if (a.goal.empty()) {
    Repl(lead, ctx, out, st, subs);
    PrintUsage(out, lead, subs);
    return 0;
  }
  std::string goal;
  for (const auto& w : a.goal) goal += (goal.empty() ? "" : " ") + w;
  st.turn_running = true;
  auto r = lead.Run(goal);
  st.turn_running = false;
  PrintUsage(out, lead, subs);
  return ExitFor(r, out);
}

}  // namespace

void AddRunCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Work on a goal with the lead agent (no GOAL: a REPL)");
  run->add_option("GOAL", a->goal, "What to do");
  run->add_option("--provider", a->provider, "anthropic, openai or scripted (default: anthropic if ANTHROPIC_API_KEY is set)");
  run->add_option("--model", a->model, "Model (default: $MATES_MODEL, else the provider's)");
  run->add_option("--base-url", a->base_url, "API base URL (anthropic: without /v1; openai: with /v1)");
  run->add_option("--scenario", a->scenario, "Scenario file for --provider scripted");
  run->add_option("--team", a->team, "The lead's team (created if missing)")->capture_default_str();
  run->add_option("--max-turns", a->max_turns, "Model calls at most per goal")->capture_default_str();
  run->add_option("--context-budget", a->context_budget, "Tokens before the context is compacted (default: 3/4 of the model's window)");
  run->add_option("--idle-timeout", a->idle_timeout, "Seconds an idle teammate waits before it stops (0 = forever)")->capture_default_str();
  run->add_flag("--fresh", a->fresh, "Start a new lead conversation instead of resuming the last one");
  run->callback([&g, a] { g.action = [&g, a] { return Run(g, *a); }; });
}

}  // namespace mates::cli
