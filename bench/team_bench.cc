// team_bench: what self-organisation costs, next to the seeds' idle loop
// (check, sleep 1 s: TeamOptions::seed_polling).
//
//   makespan   a 50-task graph (17 levels of 3, each task blocked by the
//              whole level before) worked by 8 teammates on the scripted
//              provider at 50 ms per model call, against its critical path:
//              (1 + levels) x 50 ms (the first turn, then one TaskUpdate
//              call per level; 8 teammates never bind at width 3).
//              The same at scale: 1,000 tasks in 34 levels of 30, 100
//              teammates in one process (DESIGN §16: <= 2 %). Each shape
//              is followed by its floor on this machine: the same graph
//              worked by bare threads that only wait and wake (ThreadFloor).
//   idle       1,000 idle teammates in one process: CPU and RSS.
//   handoff    a task completed -> its dependent claimed by an idle teammate
//              and that teammate's model call started; completed in-process,
//              and from another process.
//
//   makespan-otlp  the small shape with OTLP export on, in turn with it off
//              (DESIGN §29: <= 1 % apart), to a collector in this process.
//
//   team_bench [--quick] [makespan|makespan-small|makespan-large|makespan-pg|makespan-otlp|idle|handoff]
//              (default: all; makespan-small, -large and -pg run one
//              shape: -pg the small one kept in PostgreSQL)
//
// To see where a makespan goes: MATES_BENCH_TRACE=1 prints, per level, the
// time from the level before's last reply to this level's first call (the
// completion, the hand-out, the wake-up, the loop), the spread of its calls'
// starts and the mock's lateness, and the CPU the run took per task;
// MATES_PERF_CTL=FIFO enables `perf record --control=fifo:FIFO -D -1` for
// the run alone, not the board's setup; MATES_BENCH_DIR puts the workspaces
// elsewhere than /tmp (a new file's cost is the file system's, and on ext4
// without a journal it grows with the files deleted in the last minutes).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "agent/agent_loop.h"
#include "bench_util.h"
#include "core/cancel.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/waker.h"
#include "llm/scenario.h"
#include "llm/scripted.h"
#include "support/test_env.h"
#include "telemetry/otlp.h"
#include "telemetry/trace.h"
#include "pg/connection.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "store/board.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "support/pg_server.h"
#include "team/team_manager.h"
#include "tools/builtin_tools.h"

using namespace mates;
using namespace mates::bench;
namespace fs = std::filesystem;

namespace {

bool g_quick = false;

std::string BenchDir() {
  const char* dir = std::getenv("MATES_BENCH_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// A workspace with one team ("bench") whose lead is this process: the lead's
// loop never runs; the TeamManager hosts the teammates.
struct Host {
  // MATES_BENCH_DIR: where the workspaces go (default /tmp): the file
  // system's cost for a new file is part of a spawn's.
  std::string tmpl = BenchDir() + "/mates-team-bench-XXXXXX";
  fs::path dir;
  Workspace ws{"."};
  std::unique_ptr<TeamStore> files;  // the workspace's files, when given no store
  TeamStore* store = nullptr;        // the team's store
  std::unique_ptr<tools::ToolContext> ctx_holder;
  std::unique_ptr<tools::ToolRegistry> tools;
  std::unique_ptr<agent::AgentLoop> lead;
  std::unique_ptr<team::TeamManager> teams;

  // `shared`: a store other hosts share (null: the workspace's files).
  Host(llm::Provider* provider, team::TeamOptions options, TeamStore* shared) {
    const char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) {
      std::fprintf(stderr, "team_bench: cannot make a workspace in %s: %s\n", BenchDir().c_str(), std::strerror(errno));
      std::exit(1);
    }
    dir = made;
    ws = Workspace(dir);
    if (shared == nullptr) files = FileTeamStore(ws, mates::testing::TestEnv());
    store = shared != nullptr ? shared : files.get();
    (void)store->CreateTeam("bench", "lead", "");
    ctx_holder = std::make_unique<tools::ToolContext>(ws, *store);
    tools::ToolContext& ctx = *ctx_holder;
    ctx.team = "bench";
    ctx.agent = "lead";
    ctx.is_lead = true;
    tools = tools::MakeToolRegistry(tools::Scope::kLead);
    agent::AgentSpec spec;
    spec.name = "lead";
    spec.system = "bench lead";
    lead = std::make_unique<agent::AgentLoop>(spec, provider, tools.get(), &ctx, nullptr);
    teams = std::make_unique<team::TeamManager>(ws, provider, nullptr, options, lead.get(), &ctx);
    ctx.teams = teams.get();
  }
  ~Host() {
    teams->StopAll();
    teams.reset();
    fs::remove_all(dir);
  }
  std::shared_ptr<Board> board() { return mates::testing::TestEnv().folders.BoardOf(ws.TasksDir("bench")); }
  // The board wherever the team is kept, and a wake-up for changes to the
  // tasks `ids` (in PostgreSQL: to any task). Watching only those keeps the
  // watcher out of the run: a wake-up at every change of the board is a
  // thread woken and a look under the lock the teammates claim under.
  std::unique_ptr<TaskBoard> any_board() { return files ? FileTaskBoard(board()) : store->Board("bench"); }
  std::vector<std::unique_ptr<Hold>> WatchTasks(const std::vector<int64_t>& ids, const std::shared_ptr<Waker>& waker) {
    std::vector<std::unique_ptr<Hold>> holds;
    if (!files) {
      auto w = store->WatchBoard("bench", waker);
      if (w.ok()) holds.push_back(std::move(*w));
      return holds;
    }
    for (int64_t id : ids) {
      auto sub = mates::testing::TestEnv().watcher.Subscribe(ws.TasksDir("bench"), TaskFileName(id), waker);
      if (sub.ok()) holds.push_back(Holding(std::move(*sub)));
    }
    return holds;
  }
  void Spawn(int n, const std::string& prefix) {
    for (int i = 1; i <= n; ++i) {
      auto r = teams->SpawnTeammate({.team = "bench", .name = prefix + std::to_string(i),
                                     .prompt = "Work from the board."});
      if (!r.ok()) {
        std::fprintf(stderr, "spawn failed: %s\n", r.status().message().c_str());
        std::exit(1);
      }
    }
  }
};

// An OTLP/HTTP collector that takes every export and counts its bytes.
class Collector {
 public:
  Collector() {
    server_.Post(R"(/v1/\w+)", [this](const httplib::Request& req, httplib::Response& res) {
      bytes_ += req.body.size();
      res.set_content("", "application/x-protobuf");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Collector() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  uint64_t bytes() const { return bytes_.load(); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::atomic<uint64_t> bytes_{0};
  std::thread thread_;
};

std::shared_ptr<llm::Scenario> MustParse(const std::string& yaml) {
  auto s = llm::Scenario::Parse(yaml, "team_bench.yaml");
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().message().c_str());
    std::exit(1);
  }
  return std::make_shared<llm::Scenario>(std::move(*s));
}

// ---------------------------------------------------------------- makespan

struct Makespan {
  double ms = 0;
  double bound_ms = 0;      // (1 + levels) x the nominal call time
  double call_ms = 0;       // what a model call really took, on average
  double effective_ms = 0;  // (1 + levels) x call_ms: the bound for this mock
};

// Times every call of the provider it wraps (the scripted provider spends
// a little on validating each request, on top of its delay).
class TimingProvider : public llm::Provider {
 public:
  explicit TimingProvider(llm::Provider* inner) : inner_(inner) {}
  Result<llm::Response> Complete(const llm::Request& req, const llm::StreamCallbacks& cb,
                                 llm::CancelToken* cancel) override {
    int64_t t0 = NowNs();
    auto r = inner_->Complete(req, cb, cancel);
    int64_t t1 = NowNs();
    total_ns_ += t1 - t0;
    ++calls_;
    if (tracing_) {
      std::string newest = llm::NewestUserText(req.messages);
      int64_t task = 0;
      if (newest.rfind("Task #", 0) == 0) task = std::atoll(newest.c_str() + 6);
      std::lock_guard<std::mutex> lock(trace_mu_);
      trace_.push_back({task, t0, t1});
    }
    return r;
  }
  struct Call {
    int64_t task;  // the task a call started (0: another call)
    int64_t entry_ns, exit_ns;
  };
  void Trace() { tracing_ = true; }
  std::vector<Call> calls() {
    std::lock_guard<std::mutex> lock(trace_mu_);
    return trace_;
  }
  std::string_view name() const override { return inner_->name(); }
  std::string default_model() const override { return inner_->default_model(); }
  int64_t ContextWindow(const std::string& m) const override { return inner_->ContextWindow(m); }
  double mean_ms() const { return calls_ == 0 ? 0 : static_cast<double>(total_ns_) / 1e6 / static_cast<double>(calls_); }

 private:
  llm::Provider* inner_;
  std::atomic<int64_t> total_ns_{0};
  std::atomic<int64_t> calls_{0};
  bool tracing_ = false;
  std::mutex trace_mu_;
  std::vector<Call> trace_;
};

// With MATES_PERF_CTL=FIFO (perf record --control=fifo:FIFO -D -1), perf
// samples only while one of these is open. Opened without blocking: a FIFO
// nobody reads (no perf running) is said, and that run goes on unprofiled.
class PerfWindow {
 public:
  PerfWindow() {
    const char* fifo = std::getenv("MATES_PERF_CTL");
    if (fifo == nullptr) return;
    fd_ = ::open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      std::fprintf(stderr, "team_bench: MATES_PERF_CTL=%s: %s (is perf reading it?); not profiling\n", fifo,
                   std::strerror(errno));
      return;
    }
    Say("enable\n");
  }
  ~PerfWindow() { End(); }
  PerfWindow(const PerfWindow&) = delete;
  PerfWindow& operator=(const PerfWindow&) = delete;
  void End() {
    if (fd_ < 0) return;
    Say("disable\n");
    ::close(fd_);
    fd_ = -1;
  }

 private:
  void Say(const char* what) { (void)!::write(fd_, what, std::strlen(what)); }
  int fd_ = -1;
};

struct DagShape {
  int tasks = 50, width = 3, teammates = 8;
};

// `store`: where the team is kept (null: the workspace's files);
// `tracer`: where the teammates' spans go (null: none, DESIGN §29).
Makespan DagMakespan(bool seed_polling, int turn_ms, DagShape shape = {}, TeamStore* store = nullptr,
                     std::shared_ptr<telemetry::Tracer> tracer = nullptr) {
  const int kTasks = shape.tasks, kWidth = shape.width, kTeammates = shape.teammates;
  std::string delay = std::to_string(turn_ms);
  auto scenario = MustParse(
      "rules:\n"
      "  - agent: \"w*\"\n"
      "    when: \"Task #(\\\\d+):\"\n"
      "    once: false\n"
      "    delay_ms: " +
      delay +
      "\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: "
      "completed}}]\n"
      "  - agent: \"*\"\n"
      "    once: false\n"
      "    delay_ms: " +
      delay +
      "\n"
      "    reply: [{type: text, text: \"Done.\"}]\n");
  llm::ScriptedProvider scripted(scenario);
  TimingProvider provider(&scripted);
  const bool trace = std::getenv("MATES_BENCH_TRACE") != nullptr;
  if (trace) provider.Trace();
  team::TeamOptions opt;
  opt.idle_timeout_s = 0;
  opt.seed_polling = seed_polling;
  opt.metrics = std::make_shared<telemetry::Metrics>();
  opt.tracer = std::move(tracer);
  Host host(&provider, opt, store);
  auto board = host.any_board();
  int levels = 0;
  for (int i = 0; i < kTasks; ++i) {
    int level = i / kWidth;
    levels = level + 1;
    TaskDraft d;
    d.subject = "t" + std::to_string(i + 1);
    for (int j = (level - 1) * kWidth; level > 0 && j < level * kWidth; ++j)
      d.blocked_by.push_back(j + 1);
    (void)board->Create(d);
  }
  // Done when the last level is: it waits on every task before it. Looking
  // at those few, not listing the whole board at every change, keeps the
  // watching out of the figure (a list of 1,000 tasks per change took ~5 %
  // of the CPU of the large shape).
  const int last_level_first = (levels - 1) * kWidth + 1;
  std::vector<int64_t> last_level;
  for (int id = last_level_first; id <= kTasks; ++id) last_level.push_back(id);
  auto waker = std::make_shared<Waker>();
  auto subs = host.WatchTasks(last_level, waker);
  PerfWindow perf;  // profiles the run, not the board's setup
  const double cpu0 = CpuSeconds();
  int64_t t0 = NowNs();
  host.Spawn(kTeammates, "w");
  const int64_t spawned = NowNs();
  for (;;) {
    uint64_t g = waker->generation();
    bool all = true;
    for (int id = kTasks; all && id >= last_level_first; --id) {  // mostly one look
      auto t = board->Get(id);
      all = t.ok() && t->status == TaskStatus::kCompleted;
    }
    if (all) break;
    waker->WaitChange(g, DeadlineIn(1));
  }
  Makespan m;
  m.ms = static_cast<double>(NowNs() - t0) / 1e6;
  perf.End();
  const double cpu_ms = (CpuSeconds() - cpu0) * 1e3;
  m.bound_ms = static_cast<double>((1 + levels) * turn_ms);
  m.call_ms = provider.mean_ms();
  m.effective_ms = (1 + levels) * m.call_ms;
  if (trace) {
    // Per level: from the last reply of the level before to the first call
    // of this one (completion, hand-out, wake-up, the loop), the spread of
    // this level's calls, and the mock's lateness.
    // Level 0's "gap" runs from the start (the spawns and the first turns).
    std::vector<int64_t> first(levels, INT64_MAX), last(levels, 0), last_exit(levels, 0), late(levels, 0);
    for (const auto& c : provider.calls()) {
      if (c.task < 1 || c.task > kTasks) continue;
      int l = static_cast<int>((c.task - 1) / kWidth);
      first[l] = std::min(first[l], c.entry_ns);
      last[l] = std::max(last[l], c.entry_ns);
      last_exit[l] = std::max(last_exit[l], c.exit_ns);
      late[l] = std::max(late[l], c.exit_ns - c.entry_ns - int64_t{turn_ms} * 1000000);
    }
    double sum_gap = 0, sum_spread = 0, sum_late = 0;
    for (int l = 0; l < levels; ++l) {
      int64_t before = l == 0 ? t0 : last_exit[l - 1];
      double gap = static_cast<double>(first[l] - before) / 1e3, spread = static_cast<double>(last[l] - first[l]) / 1e3;
      double lt = static_cast<double>(late[l]) / 1e3;
      if (l > 0) {
        sum_gap += gap;
        sum_spread += spread;
        sum_late += lt;
      }
      std::printf("    level %2d: gap %7.0f us  spread %7.0f us  late %6.0f us\n", l, gap, spread, lt);
    }
    std::printf("    %d teammates spawned in %.1f ms; the last level-0 call began at %.1f ms\n", kTeammates,
                static_cast<double>(spawned - t0) / 1e6, static_cast<double>(last[0] - t0) / 1e6);
    std::printf("    CPU %.0f ms in the run: %.0f us per task\n", cpu_ms, cpu_ms * 1e3 / kTasks);
    std::printf("    levels 1..: gap %.1f ms, spread %.1f ms, late %.1f ms; end after the last reply %.1f ms\n",
                sum_gap / 1e3, sum_spread / 1e3, sum_late / 1e3,
                static_cast<double>(t0 + static_cast<int64_t>(m.ms * 1e6) - last_exit[levels - 1]) / 1e6);
  }
  return m;
}

// The machine's floor for a shape: the same graph worked by as many
// threads that do only what the timing needs, and none of mates' work. Each
// "call" is the scripted provider's two waits (halfway, then on time); a
// completion takes one mutex, counts its level down, and the level's last
// hands the next level's tasks to idle threads, each woken on a condition
// variable of its own after the mutex is let go (as the claim line does).
// No files, no JSON, no loop: what is left over the critical path is this
// machine's wake-ups and timers at the team's rhythm, which no team on it
// goes under.
Makespan ThreadFloor(int turn_ms, DagShape shape) {
  const int levels = (shape.tasks + shape.width - 1) / shape.width;
  struct Worker {
    std::condition_variable cv;
    int task = -1;  // handed to it; -1: none yet
    CancelToken model;
  };
  std::vector<Worker> workers(static_cast<size_t>(shape.teammates));
  std::mutex mu;
  std::vector<int> open(static_cast<size_t>(levels), 0);  // guarded by mu
  std::vector<int> ready, idle;                           // guarded by mu
  bool done = false;                                      // guarded by mu
  std::condition_variable finished;
  for (int t = 0; t < shape.tasks; ++t) ++open[static_cast<size_t>(t / shape.width)];
  for (int t = 0; t < std::min(shape.width, shape.tasks); ++t) ready.push_back(t);
  std::atomic<int64_t> call_ns{0}, calls{0};
  auto call = [&](Worker& w) {
    const auto start = SteadyClock::now();
    (void)w.model.WaitFor(turn_ms / 2000.0);
    (void)w.model.WaitUntilOnTime(start + std::chrono::milliseconds(turn_ms));
    call_ns +=
        std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - start).count();
    ++calls;
  };
  auto work = [&](int me) {
    Worker& w = workers[static_cast<size_t>(me)];
    call(w);  // the first turn
    for (;;) {
      int task;
      {
        std::unique_lock<std::mutex> lock(mu);
        if (!ready.empty()) {
          task = ready.back();
          ready.pop_back();
        } else {
          idle.push_back(me);
          w.cv.wait(lock, [&] { return w.task >= 0 || done; });
          if (w.task < 0) return;
          task = std::exchange(w.task, -1);
        }
      }
      call(w);  // the task's call, which completes it
      std::vector<int> wake;
      {
        std::lock_guard<std::mutex> lock(mu);
        const int level = task / shape.width;
        if (--open[static_cast<size_t>(level)] == 0) {
          if (level + 1 == levels) {
            done = true;
            finished.notify_all();
            for (int i : idle) wake.push_back(i);
            idle.clear();
          }
          for (int t = (level + 1) * shape.width;
               t < std::min((level + 2) * shape.width, shape.tasks); ++t) {
            if (idle.empty()) {
              ready.push_back(t);
              continue;
            }
            int i = idle.back();
            idle.pop_back();
            workers[static_cast<size_t>(i)].task = t;
            wake.push_back(i);
          }
        }
      }
      for (int i : wake) workers[static_cast<size_t>(i)].cv.notify_one();
      call(w);  // the follow-up turn
      std::lock_guard<std::mutex> lock(mu);
      if (done) return;
    }
  };
  const int64_t t0 = NowNs();
  std::vector<std::thread> threads;
  for (int i = 0; i < shape.teammates; ++i) threads.emplace_back(work, i);
  Makespan m;
  {
    std::unique_lock<std::mutex> lock(mu);
    finished.wait(lock, [&] { return done; });
    m.ms = static_cast<double>(NowNs() - t0) / 1e6;
  }
  for (auto& t : threads) t.join();
  m.bound_ms = static_cast<double>((1 + levels) * turn_ms);
  m.call_ms = calls == 0 ? 0 : static_cast<double>(call_ns) / 1e6 / static_cast<double>(calls);
  m.effective_ms = (1 + levels) * m.call_ms;
  return m;
}

// -------------------------------------------------------------------- idle

struct IdleCost {
  double cpu_pct = 0;
  double rss_mb = 0;
  double spawn_s = 0;
};

IdleCost IdleTeammates(int n, bool seed_polling, double seconds) {
  auto scenario = MustParse("rules: []\ndefault_reply: [{type: text, text: \"Ready.\"}]\n");
  llm::ScriptedProvider provider(scenario);
  team::TeamOptions opt;
  opt.idle_timeout_s = 0;
  opt.seed_polling = seed_polling;
  double rss0 = RssMb();
  IdleCost c;
  {
    Host host(&provider, opt, nullptr);
    int64_t t0 = NowNs();
    host.Spawn(n, "i");
    // Wait until every one of them has said it is idle.
    auto waker = std::make_shared<Waker>();
    auto sub = mates::testing::TestEnv().watcher.Subscribe(host.ws.TeamDir("bench"), "config.json", waker);
    for (;;) {
      uint64_t g = waker->generation();
      auto cfg = Roster(host.ws).Load("bench");
      int idle = 0;
      if (cfg.ok()) {
        for (const auto& m : cfg->members) idle += m.status == MemberStatus::kIdle ? 1 : 0;
      }
      if (idle >= n) break;
      waker->WaitChange(g, DeadlineIn(1));
    }
    c.spawn_s = static_cast<double>(NowNs() - t0) / 1e9;
    double cpu0 = CpuSeconds();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));  // the measurement window
    c.cpu_pct = (CpuSeconds() - cpu0) / seconds * 100;
    c.rss_mb = RssMb() - rss0;
  }
  return c;
}

// ----------------------------------------------------------------- handoff

// Notes when a teammate's model call for "Task #N:" starts; answers at once.
class StampingProvider : public llm::Provider {
 public:
  Result<llm::Response> Complete(const llm::Request& req, const llm::StreamCallbacks&,
                                 llm::CancelToken*) override {
    int64_t now = NowNs();
    std::string text = llm::NewestUserText(req.messages);
    static const std::regex re("Task #(\\d+):");
    std::smatch m;
    if (std::regex_search(text, m, re)) {
      std::lock_guard<std::mutex> lock(mu_);
      started_[std::stoll(m[1])] = now;
      waker_->Notify();
    }
    llm::Response r;
    r.content.push_back(llm::ContentBlock::Text("ok"));
    r.stop_reason = "end_turn";
    return r;
  }
  std::string_view name() const override { return "stamping"; }
  std::string default_model() const override { return "stamping"; }
  int64_t ContextWindow(const std::string&) const override { return 10000000; }

  // Waits for task `id`'s turn to start; its start time, or -1.
  int64_t WaitStarted(int64_t id, double timeout_s) {
    Deadline d = DeadlineIn(timeout_s);
    for (;;) {
      uint64_t g = waker_->generation();
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = started_.find(id);
        if (it != started_.end()) return it->second;
      }
      if (Expired(d)) return -1;
      waker_->WaitChange(g, d);
    }
  }

 private:
  std::mutex mu_;
  std::map<int64_t, int64_t> started_;  // guarded by mu_
  std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
};

// One idle teammate; each round: task A (held by "bench"), B blocked by A;
// A completed at t0 (here, or by a child process that reports t0), B's turn
// starts at t1. Returns t1 - t0 in ms.
std::vector<double> Handoff(int rounds, bool seed_polling, const std::string& self,
                            bool cross_process) {
  StampingProvider provider;
  team::TeamOptions opt;
  opt.idle_timeout_s = 0;
  opt.seed_polling = seed_polling;
  Host host(&provider, opt, nullptr);
  auto board = host.board();
  host.Spawn(1, "h");
  FILE* child = nullptr;
  fs::path stamps = host.dir / "stamps.txt";
  if (cross_process) {
    std::string cmd =
        self + " --complete-child " + host.ws.TasksDir("bench").string() + " " + stamps.string();
    child = ::popen(cmd.c_str(), "w");
  }
  std::vector<double> ms;
  std::vector<std::pair<int64_t, int64_t>> b_started;  // (A id, B start)
  for (int i = 0; i < rounds; ++i) {
    TaskDraft a;
    a.subject = "a" + std::to_string(i);
    auto ta = board->Create(a);
    (void)board->Update(ta->id, TaskPatch{TaskStatus::kInProgress, std::string("bench")},
                        Caller{"bench", true});
    TaskDraft b;
    b.subject = "b" + std::to_string(i);
    b.blocked_by = {ta->id};
    auto tb = board->Create(b);
    // Let the teammate settle back to waiting (its wake-up for these
    // files); a seed-style teammate is caught at a random point of its 1 s
    // sleep, as a real completion would be.
    std::this_thread::sleep_for(std::chrono::milliseconds(seed_polling ? std::rand() % 1000 : 20));
    int64_t t0 = 0;
    if (cross_process) {
      std::fprintf(child, "%lld\n", static_cast<long long>(ta->id));
      std::fflush(child);
    } else {
      t0 = NowNs();
      (void)board->Update(ta->id, TaskPatch{TaskStatus::kCompleted}, Caller{"bench", true});
    }
    int64_t t1 = provider.WaitStarted(tb->id, 10);
    if (t1 < 0) {
      std::fprintf(stderr, "handoff: task #%lld never started\n", static_cast<long long>(tb->id));
      break;
    }
    if (cross_process) {
      b_started.push_back({ta->id, t1});
    } else {
      ms.push_back(static_cast<double>(t1 - t0) / 1e6);
    }
  }
  if (cross_process) {
    ::pclose(child);  // the child exits at end of input, its stamps written
    std::map<int64_t, int64_t> completed_at;
    std::ifstream in(stamps);
    long long id = 0, t = 0;
    while (in >> id >> t) completed_at[id] = t;
    for (const auto& [a, t1] : b_started) {
      if (completed_at.count(a)) ms.push_back(static_cast<double>(t1 - completed_at[a]) / 1e6);
    }
  }
  return ms;
}

// The other process: completes the ids it reads, stamping each (the
// monotonic clock is the same for every process).
int CompleteChild(const std::string& tasks_dir, const std::string& stamps) {
  Board board{fs::path(tasks_dir)};
  std::ofstream out(stamps);
  long long id = 0;
  while (std::fscanf(stdin, "%lld", &id) == 1) {
    int64_t t0 = NowNs();
    auto r = board.Update(id, TaskPatch{TaskStatus::kCompleted}, Caller{"bench", true});
    if (!r.ok()) std::fprintf(stderr, "child: %s\n", r.status().message().c_str());
    out << id << " " << t0 << "\n" << std::flush;
  }
  return 0;
}

// The makespan with the team in a private PostgreSQL server (a database
// of its own per run); says SKIPPED if no server can be started.
void PgMakespans(int runs, int turn_ms, const std::function<void(int, const Makespan&)>& each) {
  auto server = testing::PgServer::Start();
  if (!server.ok()) {
    std::printf("  PostgreSQL: SKIPPED: %s\n", server.status().message().c_str());
    return;
  }
  for (int i = 0; i < runs; ++i) {
    auto url = (*server)->CreateDatabase("makespan" + std::to_string(i));
    auto target = url.ok() ? pg::ParseTarget(*url) : Result<pg::Target>(url.status());
    auto c = target.ok() ? pg::Connection::Open(*target) : Result<pg::Connection>(target.status());
    Status schema = c.ok() ? pg::InitSchema(*c).status() : c.status();
    auto store = schema.ok() ? pg::Store::Open(*target) : Result<std::unique_ptr<pg::Store>>(schema);
    if (!store.ok()) {
      std::printf("  PostgreSQL: SKIPPED: %s\n", store.status().message().c_str());
      return;
    }
    std::unique_ptr<TeamStore> teams = pg::StoreTeams(**store);
    each(i, DagMakespan(false, turn_ms, {}, teams.get()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--complete-child")
    return CompleteChild(argv[2], argv[3]);
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      g_quick = true;
    } else if (a == "makespan" || a == "makespan-small" || a == "makespan-large" ||
               a == "makespan-pg" || a == "makespan-otlp" || a == "idle" || a == "handoff") {
      only = a;
    } else {
      std::fprintf(stderr,
                   "usage: team_bench [--quick] "
                   "[makespan|makespan-small|makespan-large|makespan-pg|makespan-otlp|idle|handoff]\n");
      return 2;
    }
  }
  auto want = [&](const char* part) { return only.empty() || only == part; };
  std::string self = fs::canonical("/proc/self/exe").string();
  std::printf("team_bench (%s run, %u cores)\n\n", g_quick ? "quick" : "full",
              std::thread::hardware_concurrency());

  const int turn_ms = 50;
  auto row = [](const std::string& label, const Makespan& m) {
    std::printf("  %-22s %8.0f ms %9.0f ms %9.1f %% %11.2f ms %9.1f %%\n", label.c_str(), m.ms, m.bound_ms,
                (m.ms - m.bound_ms) / m.bound_ms * 100, m.call_ms, (m.ms - m.effective_ms) / m.effective_ms * 100);
  };
  // The machine's floor next to each shape (ThreadFloor).
  auto FloorRows = [&](int runs, int ms, DagShape shape) {
    std::vector<double> over;
    for (int i = 0; i < runs; ++i) {
      Makespan f = ThreadFloor(ms, shape);
      over.push_back((f.ms - f.bound_ms) / f.bound_ms * 100);
      row("threads alone, run " + std::to_string(i + 1), f);
    }
    if (runs > 1)
      std::printf("  threads alone median: %.1f %% (the machine's floor for this shape)\n",
                  Percentile(over, 50));
  };
  if (want("makespan") || want("makespan-small")) {
    std::printf(
        "makespan: 50 tasks in 17 levels of 3, 8 teammates, scripted provider at %d ms per call\n",
        turn_ms);
    std::printf("  %-22s %10s %12s %10s %14s %10s\n", "", "makespan", "crit. path", "overhead",
                "call (real)", "own share");
    int runs = g_quick ? 1 : 3;
    std::vector<double> over, own;
    for (int i = 0; i < runs; ++i) {
      Makespan m = DagMakespan(false, turn_ms);
      over.push_back((m.ms - m.bound_ms) / m.bound_ms * 100);
      own.push_back((m.ms - m.effective_ms) / m.effective_ms * 100);
      row("mates, run " + std::to_string(i + 1), m);
    }
    std::printf("  mates median: %.1f %% over the critical path; %.1f %% once the mock model's own time per\n"
                "  call is counted as model time (own share: claims, wake-ups, tools, statuses, the loop)\n",
                Percentile(over, 50), Percentile(own, 50));
    FloorRows(runs, turn_ms, {});
    if (only == "makespan-small") return 0;
    row("seed (1 s polling)", DagMakespan(true, turn_ms));
  }
  if (want("makespan") || want("makespan-pg")) {
    // The same team kept in PostgreSQL (DESIGN §13): claims, statuses,
    // messages and journal copies go to a private server on this machine.
    if (only == "makespan-pg") {
      std::printf(
          "makespan on PostgreSQL: 50 tasks in 17 levels of 3, 8 teammates, %d ms per call\n",
          turn_ms);
    }
    const int runs = g_quick ? 1 : 3;
    std::vector<double> pg_over;
    PgMakespans(runs, turn_ms, [&](int i, const Makespan& m) {
      pg_over.push_back((m.ms - m.bound_ms) / m.bound_ms * 100);
      row("PostgreSQL, run " + std::to_string(i + 1), m);
    });
    if (!pg_over.empty()) std::printf("  PostgreSQL median: %.1f %% over the critical path\n", Percentile(pg_over, 50));
    std::printf("\n");
  }
  if (want("makespan") || want("makespan-large")) {
    // The large shape: 100 teammates in one process on 1,000 tasks (34
    // levels of 30: each teammate's task takes two calls, so 100 never bind).
    DagShape large{1000, 30, 100};
    std::printf("makespan, large: 1,000 tasks in 34 levels of 30, 100 teammates, %d ms per call\n", turn_ms);
    Makespan l = DagMakespan(false, turn_ms, large);
    row("mates", l);
    FloorRows(1, turn_ms, large);
    std::printf("\n");
  }

  if (want("makespan-otlp")) {
    // The same team exporting its spans and metrics to a collector on this
    // machine (DESIGN §29: <= 1 % apart), runs taken in turn with export
    // off so that both see the same machine.
    std::printf("makespan with OTLP export: 50 tasks in 17 levels of 3, 8 teammates, %d ms per call\n", turn_ms);
    Collector collector;
    const std::string endpoint = "http://127.0.0.1:" + std::to_string(collector.port());
    auto config = telemetry::OtlpConfig::From(
        [&](const char* name) -> const char* {
          if (std::string_view(name) == "OTEL_EXPORTER_OTLP_ENDPOINT") return endpoint.c_str();
          if (std::string_view(name) == "OTEL_METRIC_EXPORT_INTERVAL") return "1000";
          return nullptr;
        },
        Json::object());
    const int runs = g_quick ? 1 : 7;
    std::vector<double> off, on;
    uint64_t spans = 0;
    for (int i = 0; i < runs; ++i) {
      Makespan m = DagMakespan(false, turn_ms);
      off.push_back(m.ms);
      row("export off, run " + std::to_string(i + 1), m);
      auto metrics = std::make_shared<telemetry::Metrics>();
      telemetry::OtlpExporter exporter(config, [metrics] { return metrics->Read(); });
      auto tracer = std::make_shared<telemetry::Tracer>(
          config.sampler, [&exporter](telemetry::SpanRecord r) { exporter.Add(std::move(r)); });
      m = DagMakespan(false, turn_ms, {}, nullptr, tracer);
      on.push_back(m.ms);
      row("export on, run " + std::to_string(i + 1), m);
      exporter.Shutdown();
      spans += exporter.stats().spans_sent;
    }
    const double a = Percentile(off, 50), b = Percentile(on, 50);
    std::printf("  median: off %.0f ms, on %.0f ms: %+.2f %%; %llu spans and %llu bytes received\n\n", a, b,
                (b - a) / a * 100, static_cast<unsigned long long>(spans),
                static_cast<unsigned long long>(collector.bytes()));
  }

  if (want("idle")) {
    const int n = g_quick ? 200 : 1000;
    const double window = g_quick ? 2 : 10;
    std::printf("idle: %d idle teammates in one process, measured over %.0f s\n", n, window);
    IdleCost ic = IdleTeammates(n, false, window);
    std::printf("  %-22s %8.3f %% of a core %8.1f MB RSS   (all idle after %.1f s)\n",
                "mates (event-driven)", ic.cpu_pct, ic.rss_mb, ic.spawn_s);
    IdleCost is = IdleTeammates(n, true, window);
    std::printf("  %-22s %8.3f %% of a core %8.1f MB RSS   (all idle after %.1f s)\n\n",
                "seed (1 s polling)", is.cpu_pct, is.rss_mb, is.spawn_s);
  }

  if (want("handoff")) {
    int rounds = g_quick ? 20 : 200;
    std::printf(
        "handoff: task completed -> dependent claimed by an idle teammate, its model call "
        "started\n");
    auto in = Handoff(rounds, false, self, false);
    std::printf("  %-22s p50 %7.3f ms   p99 %7.3f ms   (n=%zu)\n", "mates, in-process", Percentile(in, 50),
                Percentile(in, 99), in.size());
    auto cross = Handoff(rounds, false, self, true);
    std::printf("  %-22s p50 %7.3f ms   p99 %7.3f ms   (n=%zu)\n", "mates, cross-process",
                Percentile(cross, 50), Percentile(cross, 99), cross.size());
    auto seed = Handoff(g_quick ? 3 : 10, true, self, false);
    std::printf("  %-22s p50 %7.3f ms   p99 %7.3f ms   (n=%zu)\n", "seed (1 s polling)",
                Percentile(seed, 50), Percentile(seed, 99), seed.size());
  }
  return 0;
}
