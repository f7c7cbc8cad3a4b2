// worktree_bench: what worktree isolation costs (DESIGN §12, §16).
//
//   create    a teammate's worktree on a generated 10,000-file repository,
//             next to the naive isolation: a full copy of the checkout
//             (cp -a without .git). Target: <= 1 s.
//   merges    clean merges per minute through the merge queue (in memory,
//             a note, the check in the scratch worktree, CAS), with a
//             trivial check (`true`) and with none; next to the baseline,
//             the same merges made in a checkout. Target: >= 5,000 / min
//             with the check `true` (DESIGN §30).
//   makespan  a 30-task graph (10 levels of 3) worked by 6 teammates on the
//             scripted provider at 50 ms per call, each task writing a file:
//             --isolation worktree (commit, merge queue, then completed)
//             next to shared, in the same run.
//
//   forecast  from a write to its conflict forecast on a 10,000-file
//             repository, 8 teammates in flight. Target: p50 <= 1 s.
//
//   worktree_bench [--quick] [create|merges|forecast|makespan]   (default: all)
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_loop.h"
#include "bench_util.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "core/waker.h"
#include "git/git.h"
#include "git/forecast.h"
#include "git/merge_queue.h"
#include "git/submit.h"
#include "git/worktrees.h"
#include "llm/scenario.h"
#include "llm/scripted.h"
#include "store/board.h"
#include "store/forecast.h"
#include "store/merges.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "support/test_env.h"
#include "team/team_manager.h"
#include "tools/builtin_tools.h"

using namespace mates;
using namespace mates::bench;
namespace fs = std::filesystem;

namespace {

bool g_quick = false;

void Must(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

void Sh(const fs::path& dir, const std::string& cmd) {
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", cmd};
  o.cwd = dir.string();
  o.timeout_s = 600;
  auto r = RunSubprocess(o);
  if (!r.ok() || r->exit_code != 0) {
    std::fprintf(stderr, "%s: %s\n", cmd.c_str(), r.ok() ? r->err.c_str() : r.status().message().c_str());
    std::exit(1);
  }
}

struct TempRepo {
  char tmpl[64] = "/tmp/mates-worktree-bench-XXXXXX";
  fs::path dir;
  Workspace ws{"."};
  // A repository with `files` files of ~1 KiB in folders of 100, committed.
  explicit TempRepo(int files) {
    dir = ::mkdtemp(tmpl);
    ws = Workspace(dir);
    std::string line(1000, 'x');
    for (int i = 0; i < files; ++i) {
      fs::path p = dir / ("src" + std::to_string(i / 100)) / ("f" + std::to_string(i) + ".txt");
      if (i % 100 == 0) fs::create_directories(p.parent_path());
      std::ofstream(p) << i << line << "\n";
    }
    Sh(dir, "git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -q -m initial");
  }
  ~TempRepo() { fs::remove_all(dir); }
};

// ------------------------------------------------------------------ create

void CreateBench() {
  const int kFiles = 10000;
  int64_t t0 = NowNs();
  TempRepo repo(kFiles);
  std::printf("create: a worktree per teammate on a %d-file repository (made in %.1f s)\n", kFiles,
              static_cast<double>(NowNs() - t0) / 1e9);
  TeamGit g;
  g.isolation = Isolation::kWorktree;
  auto target = git::PrepareTarget(repo.ws, "bench", g);
  Must(target.status(), "prepare");
  Sh(repo.dir, "git status --porcelain >/dev/null");  // the index refreshed once, as in a repository in use
  const int n = g_quick ? 3 : 8;
  std::vector<double> wt, copy;
  // The copies are removed after the last measurement, not between: on an
  // ext4 without a journal, a file made in the minutes after many were
  // deleted costs several times as much (the kernel's time), and that
  // would be the bench's own clean-up charged to the next worktree.
  std::vector<fs::path> copies;
  for (int i = 0; i < n; ++i) {
    int64_t s = NowNs();
    auto p = git::EnsureTeammateWorktree(repo.ws, "bench", "w" + std::to_string(i), *target);
    Must(p.status(), "worktree");
    wt.push_back(static_cast<double>(NowNs() - s) / 1e6);
    fs::path dest = repo.dir.parent_path() / (repo.dir.filename().string() + "-copy" + std::to_string(i));
    s = NowNs();
    Sh(repo.dir, "mkdir " + dest.string() + " && tar -C . --exclude=./.git --exclude=./.mates -cf - . | tar -C " +
                     dest.string() + " -xf -");
    copy.push_back(static_cast<double>(NowNs() - s) / 1e6);
    copies.push_back(dest);
  }
  for (const auto& dest : copies) fs::remove_all(dest);
  std::printf("  %-34s p50 %7.0f ms   max %7.0f ms   (n=%d; target <= 1000 ms)\n", "git worktree (mates)",
              Percentile(wt, 50), Percentile(wt, 100), n);
  std::printf("  %-34s p50 %7.0f ms   max %7.0f ms   (n=%d)\n\n", "naive: copy the checkout", Percentile(copy, 50),
              Percentile(copy, 100), n);
}

// ------------------------------------------------------------------ merges

// `k` teammates' commits queued, then the queue runs until all are merged.
// `remote`: through a bare repository beside it (a team across machines,
// DESIGN §13): each submit pushes, each merge fetches the target and moves
// it by a push with a lease.
double MergesPerMinute(int k, const std::string& check, bool remote = false) {
  TempRepo repo(50);
  const fs::path bare = repo.dir / ".mates" / "origin.git";  // in W, so it goes with it
  if (remote) {
    Sh(repo.dir, "git clone -q --bare . " + bare.string() + " && git remote add origin " + bare.string());
  }
  Roster roster(repo.ws);
  Must(roster.CreateTeam("bench").status(), "team");
  TeamGit g;
  g.isolation = Isolation::kWorktree;
  g.merge_check = check;
  if (remote) g.remote = "origin";
  auto prepared = git::PrepareTarget(repo.ws, "bench", g);
  Must(prepared.status(), "prepare");
  Must(roster.Update("bench", [&](TeamConfig& c) {
    c.git = *prepared;
    return Status::Ok();
  }).status(), "config");
  auto board = mates::testing::TestEnv().folders.BoardOf(repo.ws.TasksDir("bench"));
  auto store = FileTeamStore(repo.ws, mates::testing::TestEnv());
  for (int i = 1; i <= k; ++i) {
    std::string name = "w" + std::to_string(i);
    Member m;
    m.name = name;
    m.worktree = true;
    Must(roster.AddMember("bench", m).status(), "member");
    auto path = git::EnsureTeammateWorktree(repo.ws, "bench", name, *prepared);
    Must(path.status(), "worktree");
    std::ofstream(*path / ("out" + std::to_string(i) + ".txt")) << "work of " << name << "\n";
    auto t = board->Create({"task " + std::to_string(i), "", "", {}, ""});
    Must(t.status(), "task");
    Must(board->Claim(t->id, name).status(), "claim");
    auto s = git::SubmitForMerge(repo.ws, *store, "bench", t->id, Caller{name, false});
    Must(s.status(), "submit");
  }
  auto waker = std::make_shared<Waker>();
  git::MergeQueue::Options o;
  o.ws = repo.ws;
  o.team = [] { return std::string("bench"); };
  o.on_change = [waker] { waker->Notify(); };
  o.running = [](const std::string&) { return true; };
  int64_t t0 = NowNs();
  git::MergeQueue queue(*store, o);
  for (;;) {
    uint64_t gen = waker->generation();
    auto list = MergeStore(repo.ws, "bench").List();
    int done = 0;
    for (const auto& m : list.ok() ? *list : std::vector<MergeRequest>{}) {
      if (m.status == MergeState::kMerged) ++done;
      if (m.status == MergeState::kConflict || m.status == MergeState::kFailed) {
        std::fprintf(stderr, "merge %lld bounced: %s\n", static_cast<long long>(m.id), m.output.c_str());
        std::exit(1);
      }
    }
    if (done == k) break;
    waker->WaitChange(gen, DeadlineIn(1));
  }
  double s = static_cast<double>(NowNs() - t0) / 1e9;
  queue.Stop();
  return k / s * 60;
}

// The baseline: what the queue did before DESIGN §30, each merge made in
// the scratch worktree's checkout — moved to the target (`checkout
// --force`, `clean`), `git merge`, HEAD read, the check run there, the
// target moved by `update-ref` — on `k` commits like the queue's, with
// the same git settings (mates' Git).
double CheckoutMergesPerMinute(int k) {
  TempRepo repo(50);
  Sh(repo.dir, "git branch target && git worktree add -q --detach .scratch HEAD");
  std::vector<std::string> commits;
  for (int i = 1; i <= k; ++i) {
    Sh(repo.dir, "git checkout -q -B w" + std::to_string(i) + " main && echo work > out" + std::to_string(i) +
                     ".txt && git add -A && git -c user.name=b -c user.email=b@b commit -q -m w");
    commits.push_back("w" + std::to_string(i));
  }
  const git::Git w(repo.dir);
  const git::Git scratch(repo.dir / ".scratch");
  int64_t t0 = NowNs();
  for (const auto& c : commits) {
    auto old = git::ResolveCommit(w, "refs/heads/target");
    Must(old.status(), "resolve");
    Must(scratch.Ok({"checkout", "--quiet", "--force", "--detach", *old}).status(), "checkout");
    Must(scratch.Ok({"clean", "-ffdq"}).status(), "clean");
    Must(scratch.Ok({"merge", "--no-ff", "--no-edit", "--quiet", "-m", "merge " + c, c}).status(), "merge");
    auto head = git::ResolveCommit(scratch, "HEAD");
    Must(head.status(), "head");
    Sh(repo.dir / ".scratch", "true");
    Must(w.Ok({"update-ref", "refs/heads/target", *head, *old}).status(), "cas");
  }
  return k / (static_cast<double>(NowNs() - t0) / 1e9) * 60;
}

void MergesBench() {
  const int k = g_quick ? 10 : 30;
  std::printf("merges: %d teammates' commits (one file each) through the merge queue\n", k);
  std::printf("  %-34s %7.0f merges/min   (target >= 5,000)\n", "check `true`", MergesPerMinute(k, "true"));
  std::printf("  %-34s %7.0f merges/min   (baseline: before DESIGN §30; no store, no note)\n",
              "check `true`, merged in a checkout", CheckoutMergesPerMinute(k));
  std::printf("  %-34s %7.0f merges/min\n", "no check", MergesPerMinute(k, ""));
  std::printf("  %-34s %7.0f merges/min   (a team across machines)\n\n", "check `true`, through a remote",
              MergesPerMinute(k, "true", /*remote=*/true));
}

// ---------------------------------------------------------------- forecast

// From a write to its conflict forecast (DESIGN §30) on a 10,000-file
// repository with 8 teammates in flight, each with a change of its own: a
// teammate changes the file another changed, the forecaster is told (as
// the host is after a tool), and the time to forecast.json naming it is
// taken; then the change is undone and the forecast waited out.
void ForecastBench() {
  const int kFiles = g_quick ? 2000 : 10000, kMates = 8, kRounds = g_quick ? 5 : 15;
  TempRepo repo(kFiles);
  Must(Roster(repo.ws).CreateTeam("bench").status(), "team");
  TeamGit g;
  g.isolation = Isolation::kWorktree;
  auto prepared = git::PrepareTarget(repo.ws, "bench", g);
  Must(prepared.status(), "prepare");
  Must(Roster(repo.ws).Update("bench", [&](TeamConfig& c) {
    c.git = *prepared;
    return Status::Ok();
  }).status(), "config");
  std::vector<fs::path> trees;
  for (int i = 0; i < kMates; ++i) {
    Member m;
    m.name = "w" + std::to_string(i);
    m.worktree = true;
    Must(Roster(repo.ws).AddMember("bench", m).status(), "member");
    auto path = git::EnsureTeammateWorktree(repo.ws, "bench", m.name, *prepared);
    Must(path.status(), "worktree");
    trees.push_back(*path);
    // Its own change: the first line of file i*100.
    std::ofstream(*path / ("src" + std::to_string(i)) / ("f" + std::to_string(i * 100) + ".txt")) << "w" << i << "\n";
  }
  auto store = FileTeamStore(repo.ws, mates::testing::TestEnv());
  auto waker = std::make_shared<Waker>();
  git::Forecaster::Options o;
  o.ws = repo.ws;
  o.team = [] { return std::string("bench"); };
  o.on_change = [waker] { waker->Notify(); };
  git::Forecaster forecast(*store, o);
  auto count = [&] { return ReadForecasts(repo.ws, "bench").size(); };
  auto settle = [&](size_t want) {
    for (int64_t until = NowNs() + 60'000'000'000; count() != want && NowNs() < until;) {
      uint64_t gen = waker->generation();
      if (count() == want) break;
      waker->WaitChange(gen, DeadlineIn(1));
    }
    if (count() != want) {
      std::fprintf(stderr, "forecast: %zu forecasts, not %zu\n", count(), want);
      std::exit(1);
    }
  };
  // Everyone in flight, nothing conflicting yet.
  for (int i = 0; i < kMates; ++i) forecast.Changed("bench", "w" + std::to_string(i));
  while (forecast.passes() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  settle(0);
  std::vector<double> raise, clear;
  for (int r = 0; r < kRounds; ++r) {
    const int k = r % kMates, other = (k + 1) % kMates;
    const fs::path file = trees[k] / ("src" + std::to_string(other)) / ("f" + std::to_string(other * 100) + ".txt");
    std::string before;
    {
      std::ifstream in(file);
      std::getline(in, before, '\0');
    }
    int64_t t0 = NowNs();
    std::ofstream(file) << "clash " << r << "\n";
    forecast.Changed("bench", "w" + std::to_string(k));
    settle(1);
    raise.push_back(static_cast<double>(NowNs() - t0) / 1e6);
    t0 = NowNs();
    std::ofstream(file) << before;
    forecast.Changed("bench", "w" + std::to_string(k));
    settle(0);
    clear.push_back(static_cast<double>(NowNs() - t0) / 1e6);
  }
  forecast.Stop();
  std::printf("forecast: %d-file repository, %d teammates in flight, %d rounds\n", kFiles, kMates, kRounds);
  std::printf("  %-34s p50 %7.0f ms   max %7.0f ms   (target p50 <= 1000 ms)\n", "a write to its forecast",
              Percentile(raise, 50), Percentile(raise, 100));
  std::printf("  %-34s p50 %7.0f ms   max %7.0f ms\n\n", "its undoing to the forecast gone", Percentile(clear, 50),
              Percentile(clear, 100));
}

// ---------------------------------------------------------------- makespan

struct Makespan {
  double ms = 0;
  double bound_ms = 0;
};

Makespan DagMakespan(bool isolated, int turn_ms) {
  const int kTasks = 30, kWidth = 3, kTeammates = 6;
  const std::string delay = std::to_string(turn_ms);
  auto scenario = llm::Scenario::Parse(
      "rules:\n"
      "  - agent: \"w*\"\n"
      "    when: \"Task #(\\\\d+):\"\n"
      "    once: false\n"
      "    delay_ms: " + delay + "\n"
      "    reply: [{type: tool_use, name: write_file, input: {path: \"t$1.txt\", content: \"task $1\"}},\n"
      "            {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
      "  - agent: \"*\"\n"
      "    once: false\n"
      "    delay_ms: " + delay + "\n"
      "    reply: [{type: text, text: \"Done.\"}]\n",
      "worktree_bench.yaml");
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", scenario.status().message().c_str());
    std::exit(1);
  }
  llm::ScriptedProvider provider(std::make_shared<llm::Scenario>(std::move(*scenario)));
  TempRepo repo(50);
  Must(Roster(repo.ws).CreateTeam("bench").status(), "team");
  team::TeamOptions opt;
  opt.idle_timeout_s = 0;
  if (isolated) {
    opt.git.isolation = Isolation::kWorktree;
    auto prepared = git::PrepareTarget(repo.ws, "bench", opt.git);
    Must(prepared.status(), "prepare");
    opt.git = *prepared;
    Must(Roster(repo.ws).Update("bench", [&](TeamConfig& c) {
      c.git = opt.git;
      return Status::Ok();
    }).status(), "config");
  }
  std::unique_ptr<TeamStore> store = FileTeamStore(repo.ws, mates::testing::TestEnv());
  tools::ToolContext ctx(repo.ws, *store);
  ctx.team = "bench";
  ctx.agent = "lead";
  ctx.is_lead = true;
  auto tools = tools::MakeToolRegistry(tools::Scope::kLead);
  agent::AgentSpec spec;
  spec.name = "lead";
  spec.system = "bench lead";
  agent::AgentLoop lead(spec, &provider, tools.get(), &ctx, nullptr);
  team::TeamManager teams(repo.ws, &provider, nullptr, opt, &lead, &ctx);
  ctx.teams = &teams;
  auto waker = std::make_shared<Waker>();
  std::unique_ptr<git::MergeQueue> queue;
  if (isolated) {
    git::MergeQueue::Options o;
    o.ws = repo.ws;
    o.team = [] { return std::string("bench"); };
    o.running = [&teams](const std::string& n) { return teams.Running(n); };
    queue = std::make_unique<git::MergeQueue>(*store, o);
  }
  auto board = mates::testing::TestEnv().folders.BoardOf(repo.ws.TasksDir("bench"));
  int levels = 0;
  for (int i = 0; i < kTasks; ++i) {
    int level = i / kWidth;
    levels = level + 1;
    TaskDraft d;
    d.subject = "t" + std::to_string(i + 1);
    for (int j = (level - 1) * kWidth; level > 0 && j < level * kWidth; ++j) d.blocked_by.push_back(j + 1);
    (void)board->Create(d);
  }
  auto sub = mates::testing::TestEnv().watcher.Subscribe(repo.ws.TasksDir("bench"), "*.json", waker);
  int64_t t0 = NowNs();
  for (int i = 1; i <= kTeammates; ++i) {
    auto r = teams.SpawnTeammate({.team = "bench", .name = "w" + std::to_string(i), .prompt = "Work from the board."});
    Must(r.status(), "spawn");
  }
  for (;;) {
    uint64_t g = waker->generation();
    auto tasks = board->List(false);
    bool all = tasks.ok() && std::all_of(tasks->begin(), tasks->end(),
                                         [](const Task& t) { return t.status == TaskStatus::kCompleted; });
    if (all) break;
    waker->WaitChange(g, DeadlineIn(1));
  }
  Makespan m;
  m.ms = static_cast<double>(NowNs() - t0) / 1e6;
  m.bound_ms = static_cast<double>((1 + levels) * turn_ms);
  teams.StopAll();
  if (queue) queue->Stop();
  return m;
}

void MakespanBench() {
  const int turn_ms = 50;
  std::printf("makespan: 30 tasks in 10 levels of 3, 6 teammates, %d ms per model call, each task writes a file\n",
              turn_ms);
  int runs = g_quick ? 1 : 3;
  std::vector<double> shared, isolated;
  double bound = 0;
  for (int i = 0; i < runs; ++i) {
    Makespan s = DagMakespan(false, turn_ms);
    Makespan w = DagMakespan(true, turn_ms);
    shared.push_back(s.ms);
    isolated.push_back(w.ms);
    bound = s.bound_ms;
  }
  double s50 = Percentile(shared, 50), w50 = Percentile(isolated, 50);
  std::printf("  %-34s %7.0f ms   (critical path %.0f ms: +%.1f %%)\n", "--isolation shared", s50, bound,
              (s50 - bound) / bound * 100);
  std::printf("  %-34s %7.0f ms   (+%.1f %%; +%.0f ms per level: commit, merge, check-less CAS, refresh)\n\n",
              "--isolation worktree", w50, (w50 - bound) / bound * 100, (w50 - s50) / 10);
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      g_quick = true;
    } else if (a == "create" || a == "merges" || a == "forecast" || a == "makespan") {
      only = a;
    } else {
      std::fprintf(stderr, "usage: worktree_bench [--quick] [create|merges|forecast|makespan]\n");
      return 2;
    }
  }
  std::printf("worktree_bench (%s run, %u cores, git through its command)\n\n", g_quick ? "quick" : "full",
              std::thread::hardware_concurrency());
  if (only.empty() || only == "create") CreateBench();
  if (only.empty() || only == "merges") MergesBench();
  if (only.empty() || only == "forecast") ForecastBench();
  if (only.empty() || only == "makespan") MakespanBench();
  return 0;
}
