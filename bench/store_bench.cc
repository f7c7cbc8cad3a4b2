// store_bench: the store's figures of DESIGN §9, measured across real
// processes, each next to the seeds' mechanism (seed_baseline.h).
//
//   store_bench            run everything and print the tables
//   store_bench --quick    fewer samples (a smoke run)
//   store_bench child ...  one process of a measurement (spawned by itself)
//
// The second table is the PostgreSQL store (DESIGN §13, §16) next to the
// file store, on a private server this benchmark starts (settings printed).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/ids.h"
#include "core/subprocess.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "seed_baseline.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/watcher.h"
#include "store/workspace.h"
#include "support/pg_server.h"
#include "support/test_env.h"

using namespace mates;
using namespace mates::bench;
namespace fs = std::filesystem;

namespace {

std::string g_self;  // path of this binary, for children
bool g_quick = false;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/mates-bench-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Subprocess Child(const std::vector<std::string>& args) {
  SubprocessOptions o;
  o.argv = {g_self, "child"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.max_output = 64 << 20;
  auto p = Subprocess::Start(o);
  if (!p.ok()) {
    std::fprintf(stderr, "spawn: %s\n", p.status().message().c_str());
    std::exit(1);
  }
  return std::move(*p);
}

// The PostgreSQL store of mode "pg" (its URL is in $MATES_BENCH_PG, set by
// the parent), one per process; `team` is the measurement's.
pg::Store& Pg() {
  static std::unique_ptr<pg::Store> store = [] {
    const char* url = std::getenv("MATES_BENCH_PG");
    auto t = pg::ParseTarget(url != nullptr ? url : "");
    auto s = t.ok() ? pg::Store::Open(*t) : Result<std::unique_ptr<pg::Store>>(t.status());
    if (!s.ok()) {
      std::fprintf(stderr, "pg: %s\n", s.status().message().c_str());
      std::exit(1);
    }
    return std::move(*s);
  }();
  return *store;
}

// Waits for a wake-up on `key` (the pg side of WaitDrain).
template <typename Fn>
auto PgWaitFor(const std::string& key, Fn&& attempt) {
  auto waker = std::make_shared<Waker>();
  auto sub = Pg().listener().Subscribe(key, waker);
  for (;;) {
    uint64_t g = waker->generation();
    auto got = attempt();
    if (got.ok() && !got->empty()) return *got;
    waker->WaitChange(g, DeadlineIn(5));
  }
}

Message Msg(const std::string& id, const std::string& content) {
  Message m;
  m.id = id;
  m.sender = "bench";
  m.content = content;
  m.timestamp = WallSeconds();
  return m;
}

// Waits (event-driven) until `box` has messages, returns them.
std::vector<Message> WaitDrain(Mailbox& box, Waker& waker) {
  for (;;) {
    uint64_t g = waker.generation();
    auto got = box.Drain();
    if (got.ok() && !got->empty()) return *got;
    waker.WaitChange(g, DeadlineIn(5));
  }
}

// ---------------------------------------------------------------- children

// Says "ready" and blocks until the parent creates `dir`/go, so that timing
// starts when every process is up (process start-up is not the race).
void ReadyThenWaitForGo(const fs::path& dir) {
  auto waker = std::make_shared<Waker>();
  auto sub = mates::testing::TestEnv().watcher.Subscribe(dir, "go", waker);
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    uint64_t g = waker->generation();
    if (fs::exists(dir / "go")) return;
    waker->WaitChange(g, DeadlineIn(1));
  }
}

// Starts the race: waits for every child's "ready", creates the go file.
int64_t Go(const fs::path& dir, std::vector<Subprocess>& children) {
  for (auto& c : children) (void)c.ReadLine(DeadlineIn(60));
  int64_t t0 = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
  (void)WriteFileAtomic(dir / "go", "go");
  return t0;
}

// Receives `n` messages on "lead", prints each one's latency (ns), acks each
// on "ack". mode: mates (event-driven wait) or seed (1 s polling).
int ChildReceiver(const std::string& mode, const fs::path& dir, int n) {
  Mailbox ack(dir, "ack");
  std::vector<int64_t> lat;
  auto on_messages = [&](const std::vector<std::string>& contents) {
    int64_t now = NowNs();
    for (const auto& c : contents) {
      lat.push_back(now - std::stoll(c));
      (void)ack.Append(Msg(NewId("a"), "ok"));
    }
  };
  if (mode == "pg") {
    auto waker = std::make_shared<Waker>();
    auto sub = Pg().listener().Subscribe(pg::InboxKey("wake", "lead"), waker);
    std::printf("ready\n");
    std::fflush(stdout);
    while (static_cast<int>(lat.size()) < n) {
      uint64_t g = waker->generation();
      auto got = Pg().mail().Drain("wake", "lead");
      if (!got.ok() || got->empty()) {
        waker->WaitChange(g, DeadlineIn(5));
        continue;
      }
      int64_t now = NowNs();
      for (const auto& m : *got) {
        lat.push_back(now - std::stoll(m.content));
        (void)Pg().mail().Append("wake", "ack", Msg(NewId("a"), "ok"));
      }
    }
  } else if (mode == "mates") {
    Mailbox box(dir, "lead");
    auto waker = std::make_shared<Waker>();
    auto sub = mates::testing::TestEnv().watcher.Subscribe(dir, "lead_inbox.jsonl", waker);
    std::printf("ready\n");
    std::fflush(stdout);
    while (static_cast<int>(lat.size()) < n) {
      std::vector<std::string> contents;
      for (auto& m : WaitDrain(box, *waker)) contents.push_back(m.content);
      on_messages(contents);
    }
  } else {
    seed::SeedMailbox box(dir, "lead");
    std::printf("ready\n");
    std::fflush(stdout);
    while (static_cast<int>(lat.size()) < n) {
      std::vector<std::string> contents;
      for (auto& line : box.Drain()) {
        auto j = ParseMessageLine(line);
        if (j.ok()) contents.push_back(j->content);
      }
      if (contents.empty()) {
        std::this_thread::sleep_for(std::chrono::seconds(1));  // the seeds' poll
        continue;
      }
      on_messages(contents);
    }
  }
  for (int64_t l : lat) std::printf("%lld\n", static_cast<long long>(l));
  return 0;
}

int ChildWriter(const std::string& mode, const fs::path& dir, int n, const std::string& tag) {
  if (mode == "pg") (void)Pg();  // connected before the race
  ReadyThenWaitForGo(dir);
  if (mode == "pg") {
    for (int i = 0; i < n; ++i) (void)Pg().mail().Append("tput", "lead", Msg(tag + "-" + std::to_string(i), "payload"));
  } else if (mode == "mates") {
    Mailbox box(dir, "lead");
    for (int i = 0; i < n; ++i) (void)box.Append(Msg(tag + "-" + std::to_string(i), "payload"));
  } else {
    seed::SeedMailbox box(dir, "lead");
    for (int i = 0; i < n; ++i) {
      box.Append(MessageToLine(Msg(tag + "-" + std::to_string(i), "payload")));
    }
  }
  return 0;
}

// Drains until the "END" message (or 3 s of silence); prints
// "unique duplicates last_message_ns".
int ChildReader(const std::string& mode, const fs::path& dir) {
  std::set<std::string> ids;
  long dups = 0;
  int64_t last = NowNs();
  bool end = false;
  auto take = [&](const std::string& id) {
    if (id == "END") {
      end = true;
      return;
    }
    if (!ids.insert(id).second) ++dups;
    last = NowNs();
  };
  if (mode == "pg") {
    auto waker = std::make_shared<Waker>();
    auto sub = Pg().listener().Subscribe(pg::InboxKey("tput", "lead"), waker);
    while (!end) {
      uint64_t g = waker->generation();
      auto got = Pg().mail().Drain("tput", "lead");
      if (got.ok() && !got->empty()) {
        for (auto& m : *got) take(m.id);
        continue;
      }
      if (waker->WaitChange(g, DeadlineIn(3)) == g) break;
    }
  } else if (mode == "mates") {
    Mailbox box(dir, "lead");
    auto waker = std::make_shared<Waker>();
    auto sub = mates::testing::TestEnv().watcher.Subscribe(dir, "lead_inbox.jsonl", waker);
    while (!end) {
      uint64_t g = waker->generation();
      auto got = box.Drain();
      if (got.ok() && !got->empty()) {
        for (auto& m : *got) take(m.id);
        continue;
      }
      if (waker->WaitChange(g, DeadlineIn(3)) == g) break;
    }
  } else {
    seed::SeedMailbox box(dir, "lead");
    int64_t idle_since = NowNs();
    while (!end && NowNs() - idle_since < 3'000'000'000LL) {
      auto lines = box.Drain();
      for (auto& line : lines) {
        auto m = ParseMessageLine(line);
        if (m.ok()) take(m->id);
      }
      if (!lines.empty()) idle_since = NowNs();
      if (!end) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  std::printf("%zu %ld %lld\n", ids.size(), dups, static_cast<long long>(last));
  return 0;
}

int ChildClaimLoop(const std::string& mode, const fs::path& dir, const std::string& owner,
                   double seconds) {
  std::string out;
  int64_t last = 0;
  if (mode == "pg") {
    (void)Pg();
    ReadyThenWaitForGo(dir.parent_path());
    Deadline stop = DeadlineIn(seconds);
    for (;;) {
      auto t = Pg().tasks().ClaimNext("race", owner);
      if (!t.ok() || !t->has_value()) break;
      last = NowNs();
      out += std::to_string((*t)->id) + "\n";
      if (Expired(stop)) break;
    }
  } else if (mode == "mates") {
    Board board(dir);
    (void)board.Get(1);  // the first (cold) load, before the race
    ReadyThenWaitForGo(dir.parent_path());
    Deadline stop = DeadlineIn(seconds);
    for (;;) {
      auto t = board.ClaimNext(owner);
      if (!t.ok() || !t->has_value()) break;
      last = NowNs();
      out += std::to_string((*t)->id) + "\n";
      if (Expired(stop)) break;
    }
  } else {
    ReadyThenWaitForGo(dir.parent_path());
    Deadline stop = DeadlineIn(seconds);
    for (;;) {
      auto id = seed::SeedClaimNext(dir, owner);
      if (!id) break;
      last = NowNs();
      out += std::to_string(*id) + "\n";
      if (Expired(stop)) break;
    }
  }
  std::printf("last %lld\n", static_cast<long long>(last));
  std::fputs(out.c_str(), stdout);
  return 0;
}

// Claims dependents as they unblock: prints "idle" when it starts waiting
// (mates only) and "claimed ID NS" per claim, completing each one at once.
int ChildDepClaimer(const std::string& mode, const fs::path& dir, int n) {
  int got = 0;
  if (mode == "pg") {
    auto waker = std::make_shared<Waker>();
    auto sub = Pg().listener().Subscribe(pg::BoardKey("dep"), waker);
    while (got < n) {
      uint64_t g = waker->generation();
      auto t = Pg().tasks().ClaimNext("dep", "claimer");
      if (t.ok() && t->has_value()) {
        int64_t at = NowNs();
        std::printf("claimed %lld %lld\n", static_cast<long long>((*t)->id), static_cast<long long>(at));
        std::fflush(stdout);
        (void)Pg().tasks().Complete("dep", (*t)->id, "claimer");
        ++got;
        continue;
      }
      std::printf("idle\n");
      std::fflush(stdout);
      waker->WaitChange(g, std::nullopt);
    }
    return 0;
  }
  if (mode == "mates") {
    Board board(dir);
    auto waker = std::make_shared<Waker>();
    auto sub = mates::testing::TestEnv().watcher.Subscribe(dir, "*.json", waker);
    while (got < n) {
      uint64_t g = waker->generation();
      auto t = board.ClaimNext("claimer");
      if (t.ok() && t->has_value()) {
        int64_t at = NowNs();
        std::printf("claimed %lld %lld\n", static_cast<long long>((*t)->id),
                    static_cast<long long>(at));
        std::fflush(stdout);
        TaskPatch done;
        done.status = TaskStatus::kCompleted;
        (void)board.Update((*t)->id, done, Caller{"claimer", false});
        ++got;
        continue;
      }
      std::printf("idle\n");
      std::fflush(stdout);
      waker->WaitChange(g, std::nullopt);
    }
  } else {
    while (got < n) {
      auto id = seed::SeedClaimNext(dir, "claimer");
      if (id) {
        std::printf("claimed %lld %lld\n", static_cast<long long>(*id),
                    static_cast<long long>(NowNs()));
        std::fflush(stdout);
        ++got;
        continue;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the seeds' poll
    }
  }
  return 0;
}


// `n` idle waiters in this process for `seconds`; prints "cpu_pct rss_mb woke".
int ChildIdle(const std::string& mode, const fs::path& dir, int n, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<int> woke{0};
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<Waker>> wakers;
  std::vector<Watcher::Subscription> subs;
  for (int i = 0; i < n; ++i) {
    std::string name = "m" + std::to_string(i);
    if (mode == "mates") {
      auto w = std::make_shared<Waker>();
      auto s = mates::testing::TestEnv().watcher.Subscribe(dir, Workspace::InboxFileName(name), w);
      subs.push_back(std::move(*s));
      wakers.push_back(w);
      threads.emplace_back([&, w, name] {
        Mailbox box(dir, name);
        while (!stop) {
          uint64_t g = w->generation();
          auto got = box.Drain();
          if (got.ok() && !got->empty()) ++woke;
          if (stop) break;
          w->WaitChange(g, std::nullopt);
        }
      });
    } else {
      threads.emplace_back([&, name] {
        seed::SeedMailbox box(dir, name);
        while (!stop) {
          if (!box.Drain().empty()) ++woke;
          std::this_thread::sleep_for(std::chrono::seconds(1));  // the seeds' poll
        }
      });
    }
  }
  // Let every thread reach its idle wait, then measure.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  double cpu0 = CpuSeconds();
  int64_t t0 = NowNs();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  double cpu = CpuSeconds() - cpu0;
  double wall = static_cast<double>(NowNs() - t0) / 1e9;
  double rss = RssMb();
  // Still responsive: one message to one waiter.
  if (mode == "mates") {
    (void)Mailbox(dir, "m" + std::to_string(n / 2)).Append(Msg("x", "wake"));
  } else {
    seed::SeedMailbox(dir, "m" + std::to_string(n / 2)).Append(MessageToLine(Msg("x", "wake")));
  }
  for (int i = 0; i < 300 && woke.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  for (auto& w : wakers) w->Notify();
  for (auto& t : threads) t.join();
  std::printf("%.3f %.1f %d\n", cpu / wall * 100.0, rss, woke.load());
  return 0;
}

int ChildMain(int argc, char** argv) {
  std::vector<std::string> a(argv + 2, argv + argc);
  if (a.size() >= 1 && a[0] == "receiver") return ChildReceiver(a[1], a[2], std::stoi(a[3]));
  if (a.size() >= 1 && a[0] == "writer") return ChildWriter(a[1], a[2], std::stoi(a[3]), a[4]);
  if (a.size() >= 1 && a[0] == "reader") return ChildReader(a[1], a[2]);
  if (a.size() >= 1 && a[0] == "claim-loop") {
    return ChildClaimLoop(a[1], a[2], a[3], std::stod(a[4]));
  }
  if (a.size() >= 1 && a[0] == "dep-claimer") return ChildDepClaimer(a[1], a[2], std::stoi(a[3]));
  if (a.size() >= 1 && a[0] == "idle") return ChildIdle(a[1], a[2], std::stoi(a[3]), std::stod(a[4]));
  std::fprintf(stderr, "unknown child role\n");
  return 2;
}

// ---------------------------------------------------------------- measures

struct Row {
  std::string what, seed, mates, target;
};
std::vector<Row> g_rows;

std::string Fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// send -> idle recipient wakes, across processes.
std::pair<double, double> WakeLatency(const std::string& mode, int n) {
  TempDir dir;
  auto receiver = Child({"receiver", mode, dir.path, std::to_string(n)});
  (void)receiver.ReadLine(DeadlineIn(30));  // "ready"
  Mailbox ack(dir.path, "ack");
  auto waker = std::make_shared<Waker>();
  auto sub = mates::testing::TestEnv().watcher.Subscribe(dir.path, "ack_inbox.jsonl", waker);
  std::mt19937 rng(7);
  seed::SeedMailbox seed_box(dir.path, "lead");
  Mailbox box(dir.path, "lead");
  for (int i = 0; i < n; ++i) {
    if (mode == "pg") {
      (void)Pg().mail().Append("wake", "lead", Msg(NewId("m"), std::to_string(NowNs())));
      PgWaitFor(pg::InboxKey("wake", "ack"), [] { return Pg().mail().Drain("wake", "ack"); });
      continue;
    }
    if (mode == "seed") {
      // Messages arrive at random instants of the receiver's poll period.
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 1000));
      seed_box.Append(MessageToLine(Msg(NewId("m"), std::to_string(NowNs()))));
    } else {
      (void)box.Append(Msg(NewId("m"), std::to_string(NowNs())));
    }
    WaitDrain(ack, *waker);
  }
  auto r = receiver.Wait();
  std::vector<double> ms;
  std::istringstream in(r.out);
  long long ns;
  while (in >> ns) ms.push_back(static_cast<double>(ns) / 1e6);
  return {Percentile(ms, 50), Percentile(ms, 99)};
}

struct Throughput {
  double per_s = 0;
  long lost = 0, dups = 0;
};

Throughput InboxThroughput(const std::string& mode, int writers, int each) {
  TempDir dir;
  auto reader = Child({"reader", mode, dir.path});
  std::vector<Subprocess> ws;
  for (int w = 0; w < writers; ++w) {
    ws.push_back(Child({"writer", mode, dir.path, std::to_string(each), "w" + std::to_string(w)}));
  }
  int64_t t0 = Go(dir.path, ws);
  for (auto& w : ws) w.Wait();
  Message end = Msg("END", "end");
  if (mode == "pg") {
    (void)Pg().mail().Append("tput", "lead", end);
  } else if (mode == "mates") {
    (void)Mailbox(dir.path, "lead").Append(end);
  } else {
    seed::SeedMailbox(dir.path, "lead").Append(MessageToLine(end));
  }
  auto r = reader.Wait();
  long unique = 0, dups = 0;
  long long last = 0;
  std::istringstream(r.out) >> unique >> dups >> last;
  Throughput t;
  t.per_s = static_cast<double>(unique) / (static_cast<double>(last - t0) / 1e9);
  t.lost = static_cast<long>(writers) * each - unique;
  t.dups = dups;
  return t;
}

struct Claims {
  double per_s = 0;
  long claims = 0, doubles = 0;
};

Claims RacingClaims(const std::string& mode, int procs, int tasks, double limit_s) {
  TempDir top;
  fs::path dir = top.path / "tasks";
  fs::create_directories(dir);
  if (mode == "pg") {
    for (int i = 0; i < tasks; ++i) {
      TaskDraft d;
      d.subject = "task " + std::to_string(i);
      (void)Pg().tasks().Create("race", d);
    }
  } else if (mode == "mates") {
    Board board(dir);
    for (int i = 0; i < tasks; ++i) {
      TaskDraft d;
      d.subject = "task " + std::to_string(i);
      (void)board.Create(d);
    }
  } else {
    seed::SeedCreateTasks(dir, tasks);
  }
  std::vector<Subprocess> ps;
  for (int p = 0; p < procs; ++p) {
    ps.push_back(Child({"claim-loop", mode, dir, "p" + std::to_string(p),
                        std::to_string(limit_s)}));
  }
  int64_t t0 = Go(top.path, ps);
  std::map<long, int> count;
  long long last = t0;
  for (auto& p : ps) {
    auto r = p.Wait();
    std::istringstream in(r.out);
    std::string word;
    long long at = 0;
    in >> word >> at;  // "last NS"
    last = std::max(last, at);
    long id;
    while (in >> id) ++count[id];
  }
  double secs = static_cast<double>(last - t0) / 1e9;
  Claims c;
  for (auto& [id, n] : count) {
    c.claims += n;
    if (n > 1) c.doubles += n - 1;
  }
  c.per_s = static_cast<double>(c.claims) / secs;
  return c;
}

// When the claimer says it claimed a task, passing over its "idle" lines:
// its own writes wake it too, so an "idle" may come after the one waited
// for before a completion (read as the claim, it was a time of 0). Null if
// the claimer says nothing more.
std::optional<int64_t> ClaimedAt(Subprocess& claimer) {
  for (;;) {
    auto line = claimer.ReadLine(DeadlineIn(30));
    if (!line.ok()) return std::nullopt;
    long long id = 0, at = 0;
    if (std::sscanf(line->c_str(), "claimed %lld %lld", &id, &at) == 2) return at;
  }
}

// Completion -> dependent claimed by a waiting claimer in another process.
std::pair<double, double> DependentClaimLatency(const std::string& mode, int n) {
  TempDir dir;
  std::vector<double> ms;
  if (mode == "pg") {
    std::vector<int64_t> blockers;
    for (int i = 0; i < n; ++i) {
      TaskDraft d;
      d.subject = "blocker";
      auto a = Pg().tasks().Create("dep", d);
      blockers.push_back(a->id);
      d.subject = "dependent";
      d.blocked_by = {a->id};
      (void)Pg().tasks().Create("dep", d);
    }
    // The blockers are the parent's: claimed before the claimer starts.
    for (int i = 0; i < n; ++i) (void)Pg().tasks().ClaimNext("dep", "parent");
    auto claimer = Child({"dep-claimer", mode, dir.path, std::to_string(n)});
    for (int i = 0; i < n; ++i) {
      for (;;) {  // wait until it is blocked in its wait
        auto line = claimer.ReadLine(DeadlineIn(30));
        if (!line.ok() || *line == "idle") break;
      }
      int64_t t0 = NowNs();
      (void)Pg().tasks().Complete("dep", blockers[i], "parent");
      if (auto at = ClaimedAt(claimer)) ms.push_back(static_cast<double>(*at - t0) / 1e6);
    }
    claimer.Wait();
  } else if (mode == "mates") {
    Board board(dir.path);
    for (int i = 0; i < n; ++i) {
      TaskDraft d;
      d.subject = "blocker";
      auto a = board.Create(d);
      (void)board.Claim(a->id, "parent");
      d.subject = "dependent";
      d.blocked_by = {a->id};
      (void)board.Create(d);
    }
    auto claimer = Child({"dep-claimer", mode, dir.path, std::to_string(n)});
    auto tasks = board.List();
    std::vector<int64_t> blockers;
    for (auto& t : *tasks) {
      if (t.subject == "blocker") blockers.push_back(t.id);
    }
    for (int i = 0; i < n; ++i) {
      for (;;) {  // wait until it is blocked in its wait
        auto line = claimer.ReadLine(DeadlineIn(30));
        if (!line.ok() || *line == "idle") break;
      }
      int64_t t0 = NowNs();
      TaskPatch done;
      done.status = TaskStatus::kCompleted;
      (void)board.Update(blockers[i], done, Caller{"parent", true});
      if (auto at = ClaimedAt(claimer)) ms.push_back(static_cast<double>(*at - t0) / 1e6);
    }
    claimer.Wait();
  } else {
    // Seed: the dependent's blockedBy is cleared when its blocker completes.
    seed::SeedCreateTasks(dir.path, 0);
    auto claimer = Child({"dep-claimer", mode, dir.path, std::to_string(n)});
    std::mt19937 rng(3);
    for (int i = 1; i <= n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 1000));
      int64_t t0 = NowNs();
      std::ofstream(dir.path / ("task_" + std::to_string(i) + ".json"))
          << R"({"id":)" << i << R"(,"subject":"dependent","status":"pending","owner":"","blockedBy":[]})";
      if (auto at = ClaimedAt(claimer)) ms.push_back(static_cast<double>(*at - t0) / 1e6);
    }
    claimer.Wait();
  }
  return {Percentile(ms, 50), Percentile(ms, 99)};
}

std::pair<double, double> Idle(const std::string& mode, int n, double seconds, int* woke) {
  TempDir dir;
  auto r = Child({"idle", mode, dir.path, std::to_string(n), std::to_string(seconds)}).Wait();
  double cpu = 0, rss = 0;
  std::istringstream(r.out) >> cpu >> rss >> *woke;
  return {cpu, rss};
}

void Print() {
  std::printf("\n%-58s %-26s %-26s %s\n", "figure (DESIGN §9)", "seed mechanism", "mates", "target");
  std::printf("%s\n", std::string(130, '-').c_str());
  for (const auto& r : g_rows) {
    std::printf("%-58s %-26s %-26s %s\n", r.what.c_str(), r.seed.c_str(), r.mates.c_str(),
                r.target.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  g_self = fs::canonical("/proc/self/exe").string();
  if (argc > 1 && std::string(argv[1]) == "child") return ChildMain(argc, argv);
  g_quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::printf("store_bench: %s run on %u cores (figures vary with the machine)\n",
              g_quick ? "quick" : "full", std::thread::hardware_concurrency());

  std::fprintf(stderr, "  wake latency...\n");
  auto wm = WakeLatency("mates", g_quick ? 50 : 500);
  auto ws = WakeLatency("seed", g_quick ? 4 : 20);
  g_rows.push_back({"send -> idle recipient wakes, cross-process, p50 / p99",
                    Fmt("%.0f / %.0f ms", ws.first, ws.second),
                    Fmt("%.3f / %.3f ms", wm.first, wm.second), "<= 1 / <= 10 ms"});

  std::fprintf(stderr, "  inbox throughput...\n");
  auto tm = InboxThroughput("mates", 8, g_quick ? 1000 : 5000);
  auto ts = InboxThroughput("seed", 8, g_quick ? 100 : 500);
  g_rows.push_back({"inbox throughput, 8 writer processes, 1 reader",
                    Fmt("%.0f msg/s", ts.per_s), Fmt("%.0f msg/s", tm.per_s), ">= 50k msg/s"});
  g_rows.push_back({"  lost / duplicated", Fmt("%.0f / %.0f", ts.lost, ts.dups),
                    Fmt("%.0f / %.0f", tm.lost, tm.dups), "0 / 0"});

  std::fprintf(stderr, "  racing claims...\n");
  auto cm = RacingClaims("mates", 16, 2000, 120);
  auto cs = RacingClaims("seed", 16, 2000, g_quick ? 3 : 10);
  g_rows.push_back({"racing claims, 16 processes over 2,000 tasks",
                    Fmt("%.0f claims/s", cs.per_s), Fmt("%.0f claims/s", cm.per_s),
                    ">= 5k claims/s"});
  g_rows.push_back({"  double claims (claims made)", Fmt("%.0f (%.0f)", cs.doubles, cs.claims),
                    Fmt("%.0f (%.0f)", cm.doubles, cm.claims), "0"});

  std::fprintf(stderr, "  completion -> dependent claimed...\n");
  auto dm = DependentClaimLatency("mates", g_quick ? 10 : 100);
  auto ds = DependentClaimLatency("seed", g_quick ? 3 : 12);
  g_rows.push_back({"task completed -> dependent claimed (other process) p50/p99",
                    Fmt("%.0f / %.0f ms", ds.first, ds.second),
                    Fmt("%.2f / %.2f ms", dm.first, dm.second), "<= 5 ms"});

  std::fprintf(stderr, "  1,000 idle waiters...\n");
  int wm_woke = 0, ws_woke = 0;
  auto im = Idle("mates", 1000, g_quick ? 2 : 5, &wm_woke);
  auto is = Idle("seed", 1000, g_quick ? 2 : 5, &ws_woke);
  g_rows.push_back({"1,000 idle waiters in one process: CPU of one core, RSS",
                    Fmt("%.2f %%, %.0f MB", is.first, is.second),
                    Fmt("%.3f %%, %.0f MB", im.first, im.second), "<= 1 %, <= 200 MB"});
  if (wm_woke == 0) std::fprintf(stderr, "warning: the mates waiter did not wake\n");

  Print();
  std::printf("\nclaim cost at 10,000 tasks: see claim_cost_bench (Google Benchmark)\n");

  // The PostgreSQL store next to the file store (the figures above).
  std::printf("\n");
  auto server = testing::PgServer::Start();
  if (!server.ok()) {
    std::printf("*** PostgreSQL store: SKIPPED: %s ***\n", server.status().message().c_str());
    return 0;
  }
  {
    ::setenv("MATES_BENCH_PG", (*server)->Url().c_str(), 1);
    auto target = pg::ParseTarget((*server)->Url());
    auto c = pg::Connection::Open(*target);
    if (!c.ok() || !pg::InitSchema(*c).ok()) {
      std::printf("*** PostgreSQL store: SKIPPED: the schema could not be created ***\n");
      return 0;
    }
    auto version = c->Exec("SHOW server_version");
    for (const char* team : {"wake", "tput", "race", "dep"}) (void)Pg().rosters().CreateTeam(team);
    std::printf("PostgreSQL store: a private server (PostgreSQL %s, 127.0.0.1 TCP, fsync=off, "
                "synchronous_commit=off, full_page_writes=off, shared_buffers=64MB) on this machine\n",
                version.ok() ? std::string(version->text(0, 0)).c_str() : "?");
    g_rows.clear();
    std::fprintf(stderr, "  pg: wake latency...\n");
    auto wp = WakeLatency("pg", g_quick ? 50 : 500);
    g_rows.push_back({"send -> idle recipient wakes, cross-process, p50 / p99",
                      Fmt("%.3f / %.3f ms", wm.first, wm.second), Fmt("%.3f / %.3f ms", wp.first, wp.second),
                      "<= 2 / <= 10 ms"});
    std::fprintf(stderr, "  pg: inbox throughput...\n");
    auto tp = InboxThroughput("pg", 8, g_quick ? 1000 : 5000);
    g_rows.push_back({"inbox throughput, 8 writer processes, 1 reader", Fmt("%.0f msg/s", tm.per_s),
                      Fmt("%.0f msg/s", tp.per_s), ""});
    g_rows.push_back({"  lost / duplicated", Fmt("%.0f / %.0f", tm.lost, tm.dups),
                      Fmt("%.0f / %.0f", tp.lost, tp.dups), "0 / 0"});
    std::fprintf(stderr, "  pg: racing claims...\n");
    auto cp = RacingClaims("pg", 16, 2000, 120);
    g_rows.push_back({"racing claims, 16 processes over 2,000 tasks", Fmt("%.0f claims/s", cm.per_s),
                      Fmt("%.0f claims/s", cp.per_s), ">= 2k claims/s"});
    g_rows.push_back({"  double claims (claims made)", Fmt("%.0f (%.0f)", cm.doubles, cm.claims),
                      Fmt("%.0f (%.0f)", cp.doubles, cp.claims), "0"});
    std::fprintf(stderr, "  pg: completion -> dependent claimed...\n");
    auto dp = DependentClaimLatency("pg", g_quick ? 10 : 100);
    g_rows.push_back({"task completed -> dependent claimed (other process) p50/p99",
                      Fmt("%.2f / %.2f ms", dm.first, dm.second), Fmt("%.2f / %.2f ms", dp.first, dp.second), ""});
    std::printf("\n%-58s %-26s %-26s %s\n", "figure (DESIGN §13, §16)", "file store", "PostgreSQL store", "target");
    std::printf("%s\n", std::string(130, '-').c_str());
    for (const auto& r : g_rows) {
      std::printf("%-58s %-26s %-26s %s\n", r.what.c_str(), r.seed.c_str(), r.mates.c_str(), r.target.c_str());
    }
  }
  return 0;
}
