// sandbox_bench: what the sandbox costs (DESIGN §18, §25).
//
//   spawn     `true` run by the bash tool with --sandbox off, workspace,
//             strict (each from the agent's launcher, and, the baseline, in
//             a sandbox per command) and workspace with network.allow (the
//             relay first), interleaved in one run: p50 and p90, and what
//             each adds to off. Target: a sandboxed command adds <= 1.5 ms at p50.
//   makespan  a 30-task graph (10 levels of 3) worked by 6 teammates on the
//             scripted provider at 50 ms per call, each task a bash command
//             writing a file: the sandbox on (workspace, the launcher) next
//             to off, and to a sandbox per command. Target: <= 5 % over off.
//
//   hooks     a tool call (read_file) with no hook, and with a PreToolUse
//             hook that exits 0 at once (DESIGN §22), in the workspace
//             sandbox (the agent's hook launcher; and, the baseline, a
//             sandbox per hook) and with the sandbox off, interleaved:
//             what the hook adds per call. Target: <= 5 ms at p50.
//
//   sandbox_bench [--quick] [spawn|makespan|hooks]   (default: all)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_loop.h"
#include "bench_util.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "core/waker.h"
#include "llm/scenario.h"
#include "llm/scripted.h"
#include "sandbox/sandbox.h"
#include "store/board.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "support/test_env.h"
#include "team/team_manager.h"
#include "tools/builtin_tools.h"
#include "tools/hook_calls.h"

using namespace mates;
using namespace mates::bench;
namespace fs = std::filesystem;

namespace {

bool g_quick = false;

template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, r.status().message().c_str());
    std::exit(1);
  }
  return std::move(*r);
}
void Must(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

// A workspace that is a git repository with one commit, removed at the end.
struct Repo {
  fs::path root;
  Workspace ws{"."};
  Repo() {
    std::string tmpl = (fs::temp_directory_path() / "mates-sandbox-bench-XXXXXX").string();  // mkdtemp's template
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    root = tmpl;
    ws = Workspace(root);
    SubprocessOptions o;
    o.argv = {"/bin/sh", "-c", "git init -q && git -c user.email=b@x -c user.name=b commit -q --allow-empty -m init"};
    o.cwd = root.string();
    Must(RunSubprocess(o).status(), "git init");
  }
  ~Repo() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

std::shared_ptr<sandbox::Sandbox> MakeSandbox(const Repo& repo, sandbox::Mode mode, std::vector<std::string> allow,
                                              const std::string& name, const std::string& relay = MATES_RELAY) {
  sandbox::Settings s;
  s.mode = mode;
  s.network_allow = std::move(allow);
  s.relay = relay;
  return Must(sandbox::Sandbox::Make(repo.root, s, repo.root.parent_path() / (repo.root.filename().string() + "-" + name)),
              "sandbox");
}

// ---------------------------------------------------------------- spawn

// `true` run by the bash tool, as an agent's command runs: in a sandbox
// from the agent's launcher (the relay given), or in a sandbox of its own
// (none: the baseline, and what every command cost before the launcher).
double SpawnMs(tools::ToolContext& ctx, const tools::Tool& bash) {
  int64_t t0 = NowNs();
  auto r = bash.Run(Json{{"command", "true"}}, ctx);
  if (r.is_error) {
    std::fprintf(stderr, "a sandboxed `true` failed: %s\n", r.content.c_str());
    std::exit(1);
  }
  return static_cast<double>(NowNs() - t0) / 1e6;
}

void SpawnBench() {
  Repo repo;
  Must(Roster(repo.ws).CreateTeam("bench").status(), "team");
  auto store = FileTeamStore(repo.ws, mates::testing::TestEnv());
  auto bash = tools::MakeBashTool();
  struct Mode {
    const char* name;
    std::shared_ptr<sandbox::Sandbox> box;
    std::vector<double> ms;
  };
  std::vector<Mode> modes;
  const std::string none = "/nonexistent/mates-relay";
  modes.push_back({"off", MakeSandbox(repo, sandbox::Mode::kOff, {}, "off"), {}});
  modes.push_back({"workspace", MakeSandbox(repo, sandbox::Mode::kWorkspace, {}, "ws"), {}});
  modes.push_back({"  a sandbox per command", MakeSandbox(repo, sandbox::Mode::kWorkspace, {}, "ws1", none), {}});
  modes.push_back({"strict", MakeSandbox(repo, sandbox::Mode::kStrict, {}, "strict"), {}});
  modes.push_back({"  a sandbox per command", MakeSandbox(repo, sandbox::Mode::kStrict, {}, "strict1", none), {}});
  modes.push_back({"workspace + network.allow", MakeSandbox(repo, sandbox::Mode::kWorkspace, {"example.com"}, "net"), {}});
  std::vector<std::unique_ptr<tools::ToolContext>> contexts;
  for (auto& m : modes) {
    auto ctx = std::make_unique<tools::ToolContext>(repo.ws, *store);
    ctx->team = "bench";
    ctx->agent = "w1";
    ctx->sandbox = m.box;
    contexts.push_back(std::move(ctx));
  }
  const int rounds = g_quick ? 30 : 200;
  for (size_t i = 0; i < modes.size(); ++i) (void)SpawnMs(*contexts[i], *bash);  // warm: caches, the launcher
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < modes.size(); ++i) modes[i].ms.push_back(SpawnMs(*contexts[i], *bash));
  }
  std::printf("spawn: `true` run by the bash tool, %d rounds, modes interleaved\n", rounds);
  const double off50 = Percentile(modes[0].ms, 50);
  for (const auto& m : modes) {
    double p50 = Percentile(m.ms, 50), p90 = Percentile(m.ms, 90);
    if (&m == &modes[0]) {
      std::printf("  %-28s p50 %6.2f ms   p90 %6.2f ms\n", m.name, p50, p90);
    } else {
      std::printf("  %-28s p50 %6.2f ms   p90 %6.2f ms   (%+.2f ms at p50)\n", m.name, p50, p90, p50 - off50);
    }
  }
  std::printf("  target: a sandboxed command adds <= 1.5 ms at p50\n\n");
}

// ---------------------------------------------------------------- makespan

double DagMakespanMs(sandbox::Mode mode, int turn_ms, const std::string& relay = MATES_RELAY) {
  const int kTasks = 30, kWidth = 3, kTeammates = 6;
  const std::string delay = std::to_string(turn_ms);
  auto scenario = Must(llm::Scenario::Parse(
                           "rules:\n"
                           "  - agent: \"w*\"\n"
                           "    when: \"Task #(\\\\d+):\"\n"
                           "    once: false\n"
                           "    delay_ms: " + delay + "\n"
                           "    reply: [{type: tool_use, name: bash, input: {command: \"echo task $1 > t$1.txt\"}},\n"
                           "            {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
                           "  - agent: \"*\"\n"
                           "    once: false\n"
                           "    delay_ms: " + delay + "\n"
                           "    reply: [{type: text, text: \"Done.\"}]\n",
                           "sandbox_bench.yaml"),
                       "scenario");
  llm::ScriptedProvider provider(std::make_shared<llm::Scenario>(std::move(scenario)));
  Repo repo;
  auto box = MakeSandbox(repo, mode, {}, "team", relay);
  Must(Roster(repo.ws).CreateTeam("bench").status(), "team");
  team::TeamOptions opt;
  opt.idle_timeout_s = 0;
  opt.sandbox = box;
  std::unique_ptr<TeamStore> store = FileTeamStore(repo.ws, mates::testing::TestEnv());
  tools::ToolContext ctx(repo.ws, *store);
  ctx.team = "bench";
  ctx.agent = "lead";
  ctx.is_lead = true;
  ctx.sandbox = box;
  auto tools = tools::MakeToolRegistry(tools::Scope::kLead);
  agent::AgentSpec spec;
  spec.name = "lead";
  spec.system = "bench lead";
  agent::AgentLoop lead(spec, &provider, tools.get(), &ctx, nullptr);
  team::TeamManager teams(repo.ws, &provider, nullptr, opt, &lead, &ctx);
  ctx.teams = &teams;
  auto waker = std::make_shared<Waker>();
  auto board = mates::testing::TestEnv().folders.BoardOf(repo.ws.TasksDir("bench"));
  for (int i = 0; i < kTasks; ++i) {
    int level = i / kWidth;
    TaskDraft d;
    d.subject = "t" + std::to_string(i + 1);
    for (int j = (level - 1) * kWidth; level > 0 && j < level * kWidth; ++j) d.blocked_by.push_back(j + 1);
    (void)board->Create(d);
  }
  auto sub = mates::testing::TestEnv().watcher.Subscribe(repo.ws.TasksDir("bench"), "*.json", waker);
  int64_t t0 = NowNs();
  for (int i = 1; i <= kTeammates; ++i) {
    Must(teams.SpawnTeammate({.team = "bench", .name = "w" + std::to_string(i), .prompt = "Work from the board."})
             .status(),
         "spawn");
  }
  for (;;) {
    uint64_t g = waker->generation();
    auto tasks = board->List(false);
    bool all = tasks.ok() && std::all_of(tasks->begin(), tasks->end(),
                                         [](const Task& t) { return t.status == TaskStatus::kCompleted; });
    if (all) break;
    waker->WaitChange(g, DeadlineIn(1));
  }
  double ms = static_cast<double>(NowNs() - t0) / 1e6;
  teams.StopAll();
  for (int i = 1; i <= kTasks; ++i) {
    if (!fs::exists(repo.root / ("t" + std::to_string(i) + ".txt"))) {
      std::fprintf(stderr, "task %d wrote nothing\n", i);
      std::exit(1);
    }
  }
  return ms;
}

void MakespanBench() {
  const int turn_ms = 50;
  std::printf("makespan: 30 tasks in 10 levels of 3, 6 teammates, %d ms per model call, each task a bash command\n",
              turn_ms);
  const int runs = g_quick ? 1 : 3;
  std::vector<double> off, on, per_command;
  for (int i = 0; i < runs; ++i) {
    off.push_back(DagMakespanMs(sandbox::Mode::kOff, turn_ms));
    on.push_back(DagMakespanMs(sandbox::Mode::kWorkspace, turn_ms));
    per_command.push_back(DagMakespanMs(sandbox::Mode::kWorkspace, turn_ms, "/nonexistent/mates-relay"));
  }
  const double off50 = Percentile(off, 50), on50 = Percentile(on, 50), per50 = Percentile(per_command, 50);
  std::printf("  %-28s %7.0f ms\n", "--sandbox off", off50);
  std::printf("  %-28s %7.0f ms   (+%.1f %%; target <= 5 %%)\n", "--sandbox workspace", on50, (on50 - off50) / off50 * 100);
  std::printf("  %-28s %7.0f ms   (+%.1f %%)\n\n", "  a sandbox per command", per50, (per50 - off50) / off50 * 100);
}

}  // namespace

// ---------------------------------------------------------------- hooks

void HooksBench() {
  Repo repo;
  Must(WriteFileAtomic(repo.root / "a.txt", "hello\n"), "a.txt");
  auto events = Must(hooks::ParseHooksSection("hooks:\n  PreToolUse:\n    - matcher: Read\n"
                                              "      hooks: [{type: command, command: 'exit 0'}]\n",
                                              "bench"),
                     "hooks");
  hooks::HookSet set;
  set.sources.push_back({"bench", true, events});
  auto runner = std::make_shared<const hooks::Runner>(std::move(set));
  auto registry = tools::MakeToolRegistry(tools::Scope::kSubagent);
  auto store = FileTeamStore(repo.ws, mates::testing::TestEnv());
  struct Case {
    const char* name;
    std::shared_ptr<sandbox::Sandbox> box;
    bool hook;
    std::vector<double> ms;
  };
  std::vector<Case> cases;
  cases.push_back({"no hook", MakeSandbox(repo, sandbox::Mode::kWorkspace, {}, "h0"), false, {}});
  cases.push_back({"hook, sandbox workspace", MakeSandbox(repo, sandbox::Mode::kWorkspace, {}, "h1"), true, {}});
  // The baseline: no launcher (its program missing), a bubblewrap per hook.
  cases.push_back({"  a sandbox per hook", MakeSandbox(repo, sandbox::Mode::kWorkspace, {}, "h3", "/nonexistent/relay"),
                   true, {}});
  cases.push_back({"hook, sandbox off", MakeSandbox(repo, sandbox::Mode::kOff, {}, "h2"), true, {}});
  llm::ContentBlock call = llm::ContentBlock::ToolUse("t1", "read_file", R"({"path":"a.txt"})");
  const auto once = [&](Case& c) {
    tools::ToolContext ctx(repo.ws, *store);
    ctx.team = "bench";
    ctx.agent = "w1";
    ctx.sandbox = c.box;
    if (c.hook) ctx.hooks = runner;
    int64_t t0 = NowNs();
    if (ctx.hooks) {
      Json in = tools::HookInput(ctx);
      in["tool_name"] = "Read";
      in["tool_input"] = {{"file_path", (repo.root / "a.txt").string()}};
      hooks::Outcome o = tools::RunHooks(ctx, hooks::Event::kPreToolUse, tools::HookToolNames("read_file"), in);
      if (o.ran != 1 || o.blocked || !o.errors.empty()) {
        std::fprintf(stderr, "the bench's hook did not run as it should\n");
        std::exit(1);
      }
    }
    auto r = registry->Run(call, ctx);
    if (r.is_error) {
      std::fprintf(stderr, "read_file failed: %s\n", r.content.c_str());
      std::exit(1);
    }
    return static_cast<double>(NowNs() - t0) / 1e6;
  };
  for (auto& c : cases) (void)once(c);  // warm
  const int rounds = g_quick ? 30 : 200;
  for (int i = 0; i < rounds; ++i) {
    for (auto& c : cases) c.ms.push_back(once(c));
  }
  std::printf("hooks: a read_file call, %d rounds, interleaved\n", rounds);
  const double base = Percentile(cases[0].ms, 50);
  for (const auto& c : cases) {
    const double p50 = Percentile(c.ms, 50), p90 = Percentile(c.ms, 90);
    std::printf("  %-28s p50 %6.2f ms   p90 %6.2f ms", c.name, p50, p90);
    if (c.hook) std::printf("   (+%.2f ms at p50; target <= 5)", p50 - base);
    std::printf("\n");
  }
}

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      g_quick = true;
    } else if (a == "spawn" || a == "makespan" || a == "hooks") {
      only = a;
    } else {
      std::fprintf(stderr, "usage: sandbox_bench [--quick] [spawn|makespan|hooks]\n");
      return 2;
    }
  }
  if (std::string missing = sandbox::WhatIsMissing(); !missing.empty()) {
    std::fprintf(stderr, "sandbox_bench: the sandbox cannot be made here: %s\n", missing.c_str());
    return 1;
  }
  std::printf("sandbox_bench (%s run, %u cores, bubblewrap + seccomp)\n\n", g_quick ? "quick" : "full",
              std::thread::hardware_concurrency());
  if (only.empty() || only == "spawn") SpawnBench();
  if (only.empty() || only == "makespan") MakespanBench();
  if (only.empty() || only == "hooks") HooksBench();
  return 0;
}
