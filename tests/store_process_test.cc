// The store across processes: many writers, readers killed with SIGKILL,
// lock holders killed, racing `mates tasks claim`, wake-ups across processes.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "core/file_lock.h"
#include "core/clock.h"
#include "core/ids.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/merges.h"
#include "store/roster.h"
#include "store/team_store.h"
#include "support/pg_server.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

// Ids of a drain sink, in order, with duplicates kept.
std::vector<std::string> SinkIds(const fs::path& sink) {
  std::vector<std::string> ids;
  std::istringstream in(ReadAll(sink));
  std::string line;
  while (std::getline(in, line)) {
    auto m = ParseMessageLine(line);
    EXPECT_TRUE(m.ok()) << "torn sink line: " << line;
    if (m.ok()) ids.push_back(m->id);
  }
  return ids;
}

void ExpectEachExactlyOnceInWriterOrder(const std::vector<std::string>& ids, int writers,
                                        int each) {
  ASSERT_EQ(ids.size(), static_cast<size_t>(writers * each));
  std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size()) << "a message was delivered twice";
  std::map<std::string, int> next;  // per writer, messages arrive in order
  for (const auto& id : ids) {
    auto dash = id.rfind('-');
    std::string tag = id.substr(0, dash);
    int n = std::stoi(id.substr(dash + 1));
    EXPECT_EQ(n, next[tag]) << id;
    next[tag] = n + 1;
  }
  EXPECT_EQ(next.size(), static_cast<size_t>(writers));
}

// The contract tests below run on both stores (DESIGN §13): the files of
// a folder, and a fresh database on a private PostgreSQL server (team
// "procs", as the store helper uses it).
class BothStores : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "postgres") {
      where_ = dir_.str();
      return;
    }
    auto server = testing::PgServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    where_ = server_->Url();
    auto target = pg::ParseTarget(where_);
    ASSERT_TRUE(target.ok());
    auto c = pg::Connection::Open(*target);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(pg::InitSchema(*c).ok());
    auto store = pg::Store::Open(*target);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    ASSERT_TRUE(store_->rosters().CreateTeam("procs").ok());
  }
  // The store as a TeamStore, with team "procs" (the folder's made now).
  std::unique_ptr<TeamStore> Teams() {
    if (store_) return pg::StoreTeams(*store_);
    EXPECT_TRUE(Roster(Workspace(dir_.path())).CreateTeam("procs").ok());
    return FileTeamStore(Workspace(dir_.path()), testing::TestEnv());
  }
  // Where the helper's DIR points: the folder, or the database's URL.
  const std::string& where() const { return where_; }
  void CreateTasks(int n) {
    std::unique_ptr<Board> board;
    if (!store_) board = std::make_unique<Board>(dir_.path());
    for (int i = 0; i < n; ++i) {
      TaskDraft d;
      d.subject = "task " + std::to_string(i);
      auto t = store_ ? store_->tasks().Create("procs", d) : board->Create(d);
      ASSERT_TRUE(t.ok()) << t.status().message();
    }
  }

  TempDir dir_;  // the file store's folder, and each test's scratch files
  std::unique_ptr<testing::PgServer> server_;
  std::unique_ptr<pg::Store> store_;
  std::string where_;
};

INSTANTIATE_TEST_SUITE_P(Stores, BothStores, ::testing::Values("file", "postgres"),
                         [](const auto& info) { return info.param; });

// Test 1: 8 writer processes x 5,000 messages while a reader drains.
TEST_P(BothStores, EightWriterProcessesAndAReaderDeliverEveryMessageOnce) {
  TempDir& dir = dir_;
  constexpr int kWriters = 8, kEach = 5000;
  fs::path sink = dir.path() / "sink.jsonl";
  auto reader = testing::Start({testing::StoreHelperBinary(), "drain", where(), "lead",
                                sink.string(), std::to_string(kWriters * kEach)});
  std::vector<Subprocess> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.push_back(testing::Start({testing::StoreHelperBinary(), "write", where(), "lead",
                                      std::to_string(kEach), "w" + std::to_string(w)}));
  }
  for (auto& w : writers) EXPECT_EQ(w.Wait().exit_code, 0);
  auto r = reader.Wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectEachExactlyOnceInWriterOrder(SinkIds(sink), kWriters, kEach);
}

// Test 2: a reader killed with SIGKILL at random instants, restarted.
TEST_P(BothStores, ReaderKilledAtRandomMomentsLosesAndRepeatsNothing) {
  TempDir& dir = dir_;
  constexpr int kWriters = 4, kEach = 3000;
  const std::string total = std::to_string(kWriters * kEach);
  fs::path sink = dir.path() / "sink.jsonl";
  std::vector<Subprocess> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.push_back(testing::Start({testing::StoreHelperBinary(), "write", where(), "lead",
                                      std::to_string(kEach), "w" + std::to_string(w)}));
  }
  std::mt19937 rng(12345);
  int kills = 0;
  for (int round = 0; round < 40; ++round) {
    auto reader = testing::Start(
        {testing::StoreHelperBinary(), "drain", where(), "lead", sink.string(), total});
    // Fault injection: the kill lands at a random instant of the reader's life.
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    reader.Signal(SIGKILL);
    auto r = reader.Wait();
    if (r.term_signal == SIGKILL) ++kills;
  }
  for (auto& w : writers) EXPECT_EQ(w.Wait().exit_code, 0);
  auto last = testing::Start(
      {testing::StoreHelperBinary(), "drain", where(), "lead", sink.string(), total});
  auto r = last.Wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(kills, 20);
  ExpectEachExactlyOnceInWriterOrder(SinkIds(sink), kWriters, kEach);
}

// Test 3: a process killed while holding an inbox or the board lock.
TEST(StoreProcessTest, OthersGoOnWithinMillisecondsWhenALockHolderDies) {
  TempDir dir;
  Workspace ws(dir.path());
  ASSERT_TRUE(Roster(ws).CreateTeam("t").ok());
  struct Case {
    fs::path lock;
    std::function<Status()> op;
  };
  Board board(ws.TasksDir("t"));
  Mailbox box(ws.TeamDir("t"), "lead");
  std::vector<Case> cases = {
      {ws.TeamDir("t") / "lead_inbox.lock",
       [&] {
         Message m;
         m.id = NewId("m");
         m.sender = "x";
         m.content = "after the holder died";
         return box.Append(m);
       }},
      {ws.TasksDir("t"), [&] {
         TaskDraft d;
         d.subject = "after the holder died";
         return board.Create(d).status();
       }}};
  for (auto& c : cases) {
    auto holder = testing::Start({testing::StoreHelperBinary(), "hold-lock", c.lock.string(), "0"});
    ASSERT_EQ(*holder.ReadLine(DeadlineIn(10)), "locked");
    auto op = std::async(std::launch::async, [&] {
      Status s = c.op();
      return std::make_pair(s, std::chrono::steady_clock::now());
    });
    EXPECT_EQ(op.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
        << "the operation did not wait for the lock";
    auto killed = std::chrono::steady_clock::now();
    holder.Signal(SIGKILL);
    auto [status, done] = op.get();
    EXPECT_TRUE(status.ok()) << status.message();
    // A lock taken by polling (the seeds' loop looks once a second) fails
    // this; a blocked flock goes on at once. The margin is for a loaded
    // machine: under ThreadSanitizer with a 100-thread benchmark beside it,
    // going on took 100.5 ms once.
    EXPECT_LT(done - killed, std::chrono::milliseconds(300)) << c.lock;
    holder.Wait();
  }
  EXPECT_EQ(box.Drain()->size(), 1u);
  EXPECT_EQ(board.List()->size(), 1u);
}

// Test 4 through the CLI: 16 processes racing `mates tasks claim` over
// 1,000 tasks. (Each claim starts a process: ~45 ms, so the time goes to
// start-ups. The 2,000-task race of DESIGN's figures runs between
// long-lived claimers below, on both stores.)
TEST(StoreProcessTest, SixteenProcessesRacingTheCliClaimEachTaskOnce) {
  TempDir dir;
  Workspace ws(dir.path());
  ASSERT_TRUE(Roster(ws).CreateTeam("race").ok());
  constexpr int kTasks = 1000, kClaimers = 16;
  for (int c = 0; c < kClaimers; ++c) {  // only members claim
    Member m;
    m.name = "p" + std::to_string(c);
    ASSERT_TRUE(Roster(ws).AddMember("race", m).ok());
  }
  {
    Board board(ws.TasksDir("race"));
    for (int i = 0; i < kTasks; ++i) {
      TaskDraft d;
      d.subject = "task " + std::to_string(i);
      ASSERT_TRUE(board.Create(d).ok());
    }
  }
  std::vector<Subprocess> claimers;
  for (int c = 0; c < kClaimers; ++c) {
    // Each claimer is a shell loop of real CLI calls, until nothing is left.
    // The loop ends on the first failed claim, which must be exit 1.
    std::string script = "while :; do id=$(\"$0\" --workspace \"$1\" tasks --team race claim "
                         "--owner p" + std::to_string(c) +
                         "); rc=$?; [ $rc -ne 0 ] && break; echo \"$id\"; done; test $rc -eq 1";
    std::vector<std::string> argv = {"/bin/bash", "-c", script, testing::MatesBinary(),
                                     dir.str()};
    claimers.push_back(testing::Start(argv));
  }
  std::map<int, std::string> owner_of;
  int doubles = 0;
  for (int c = 0; c < kClaimers; ++c) {
    auto r = claimers[c].Wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("nothing claimable"), std::string::npos);
    std::istringstream in(r.out);
    int id;
    while (in >> id) {
      if (!owner_of.emplace(id, "p" + std::to_string(c)).second) ++doubles;
    }
  }
  EXPECT_EQ(doubles, 0);
  ASSERT_EQ(owner_of.size(), static_cast<size_t>(kTasks));
  EXPECT_EQ(owner_of.begin()->first, 1);
  EXPECT_EQ(owner_of.rbegin()->first, kTasks);
  // The files agree with what each claimer was told.
  Board board(ws.TasksDir("race"));
  auto tasks = board.List();
  ASSERT_TRUE(tasks.ok());
  for (const auto& t : *tasks) {
    EXPECT_EQ(t.status, TaskStatus::kInProgress);
    EXPECT_EQ(t.owner, owner_of[static_cast<int>(t.id)]);
  }
}

// Test 4 again without process start-up in the way: 16 long-lived claimer
// processes (as teammates are) racing over 2,000 tasks.
TEST_P(BothStores, SixteenClaimerProcessesClaimEachTaskOnce) {
  TempDir& dir = dir_;
  constexpr int kTasks = 2000, kClaimers = 16;
  CreateTasks(kTasks);
  std::vector<Subprocess> claimers;
  for (int c = 0; c < kClaimers; ++c) {
    claimers.push_back(testing::Start({testing::StoreHelperBinary(), "claim-loop", where(),
                                       "p" + std::to_string(c),
                                       (dir.path() / ("claims." + std::to_string(c))).string()}));
  }
  std::map<int, int> claims;
  for (int c = 0; c < kClaimers; ++c) {
    EXPECT_EQ(claimers[c].Wait().exit_code, 0);
    std::istringstream in(ReadAll(dir.path() / ("claims." + std::to_string(c))));
    int id;
    while (in >> id) ++claims[id];
  }
  ASSERT_EQ(claims.size(), static_cast<size_t>(kTasks));
  for (const auto& [id, n] : claims) EXPECT_EQ(n, 1) << "task " << id << " claimed " << n << " times";
}

// File leases (DESIGN §30) on both stores: a claim passes over a ready
// task whose lease overlaps one in progress while another is ready, takes
// it when none other is; a lease is kept, changed by an update, shown;
// and one that is no lease is refused.
TEST_P(BothStores, AClaimPassesOverATaskWhoseLeaseOverlapsOneInProgress) {
  std::unique_ptr<TeamStore> teams = Teams();
  auto board = teams->Board("procs");
  auto make = [&](const std::string& subject, std::vector<std::string> paths) {
    TaskDraft d;
    d.subject = subject;
    d.paths = std::move(paths);
    auto t = board->Create(d);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? t->id : 0;
  };
  const int64_t auth = make("auth", {"src/auth/**"});
  const int64_t login = make("login page", {"src/auth/login.cc"});
  const int64_t docs = make("docs", {"docs/*.md"});
  const int64_t free = make("anything", {});
  EXPECT_EQ(board->Get(auth)->paths, (std::vector<std::string>{"src/auth/**"}));
  auto first = board->ClaimNext("a", nullptr);
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->id, auth);
  // #2 overlaps #1 in progress: the next claims go past it.
  auto second = board->ClaimNext("b", nullptr);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->id, docs);
  auto third = board->ClaimNext("c", nullptr);
  ASSERT_TRUE(third.ok() && third->has_value());
  EXPECT_EQ((*third)->id, free);
  // Nothing else is ready: it is taken after all.
  auto fourth = board->ClaimNext("d", nullptr);
  ASSERT_TRUE(fourth.ok() && fourth->has_value());
  EXPECT_EQ((*fourth)->id, login);
  // An update sets a lease anew; bad ones are refused, one error each.
  TaskPatch p;
  p.paths = std::vector<std::string>{"README.md"};
  auto updated = board->Update(docs, p, Caller{"lead", true});
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  EXPECT_EQ(board->Get(docs)->paths, (std::vector<std::string>{"README.md"}));
  for (const std::string bad : {"/etc/passwd", "../out", "a/../../b", ""}) {
    TaskDraft d;
    d.subject = "bad";
    d.paths = {bad};
    auto refused = board->Create(d);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("no lease path"), std::string::npos) << refused.status().message();
  }
  TaskDraft many;
  many.subject = "many";
  many.paths = std::vector<std::string>(kMaxLeasePaths + 1, "x");
  EXPECT_FALSE(board->Create(many).ok());
}

// Merge requests (DESIGN §12, §13) on both stores: 4 threads creating at
// once get dense ids 1..N, each once; 8 threads racing to take one queued
// request (queued -> checking, refused otherwise) take it once; a watcher
// is woken by a change; bad ids and unknown requests are one error each.
TEST_P(BothStores, MergeRequestsAreNumberedOnceAndTakenOnce) {
  std::unique_ptr<TeamStore> teams = Teams();
  auto waker = std::make_shared<Waker>();
  auto watch = teams->WatchMerges("procs", waker);
  ASSERT_TRUE(watch.ok()) << watch.status().message();
  const uint64_t before = waker->generation();

  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::vector<int64_t>> ids(kThreads);
  std::vector<std::thread> makers;
  for (int t = 0; t < kThreads; ++t) {
    makers.emplace_back([&, t] {
      auto book = teams->Merges("procs");
      for (int i = 0; i < kEach; ++i) {
        MergeRequest m;
        m.task = t * kEach + i + 1;
        m.owner = "w" + std::to_string(t);
        m.branch = "mates/" + m.owner + "@procs";
        m.commit = std::string(40, 'c');
        auto made = book->Create(m);
        EXPECT_TRUE(made.ok()) << made.status().message();
        if (made.ok()) ids[t].push_back(made->id);
      }
    });
  }
  for (auto& t : makers) t.join();
  std::set<int64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kEach)) << "an id was given twice";
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kEach);
  EXPECT_TRUE(waker->WaitChange(before, DeadlineIn(10))) << "no wake-up for new requests";

  auto book = teams->Merges("procs");
  auto list = book->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), all.size());
  for (size_t i = 0; i < list->size(); ++i) EXPECT_EQ((*list)[i].id, static_cast<int64_t>(i + 1));

  std::atomic<int> taken{0};
  std::vector<std::thread> racers;
  for (int t = 0; t < 8; ++t) {
    racers.emplace_back([&] {
      auto mine = teams->Merges("procs");
      auto r = mine->Update(7, [](MergeRequest& m) {
        if (m.status != MergeState::kQueued) return Status::FailedPrecondition("no longer queued");
        m.status = MergeState::kChecking;
        return Status::Ok();
      });
      if (r.ok()) {
        ++taken;
      } else {
        EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().message();
      }
    });
  }
  for (auto& t : racers) t.join();
  EXPECT_EQ(taken.load(), 1);
  auto seven = book->Get(7);
  ASSERT_TRUE(seven.ok());
  EXPECT_EQ(seven->status, MergeState::kChecking);
  EXPECT_GE(seven->updated_at, seven->created_at);

  auto missing = book->Get(kThreads * kEach + 1);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no merge request"), std::string::npos) << missing.status().message();
  EXPECT_EQ(book->Get(0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(book->Update(-3, [](MergeRequest&) { return Status::Ok(); }).status().code(),
            StatusCode::kInvalidArgument);
}

// `mates inbox --team t alice --wait 30 --json`, returned once it has said
// (on stderr, merged) that it is blocked in its wait.
Subprocess StartWaitingReader(const fs::path& ws, std::vector<std::string> env) {
  SubprocessOptions o;
  o.argv = {testing::MatesBinary(), "--workspace", ws.string(), "inbox", "--team", "t", "alice",
            "--wait", "30", "--json"};
  env.push_back("MATES_DEBUG=1");
  env.push_back("PATH=/usr/bin:/bin");
  o.env = env;
  o.merge_stderr = true;
  auto started = Subprocess::Start(o);
  EXPECT_TRUE(started.ok());
  auto waiting = started->ReadLine(DeadlineIn(30));
  EXPECT_TRUE(waiting.ok());
  EXPECT_NE(waiting->find("waiting for a message to alice"), std::string::npos) << *waiting;
  return std::move(*started);
}

// The message log's order is causal (DESIGN §27): two processes play 200
// rounds of ping/pong through the Messenger, the other core kept busy, and
// no pong is logged before its ping. (Delivered first and logged after, 16
// of 40 replies were logged before what they answered.)
TEST_P(BothStores, NoReplyIsLoggedBeforeWhatItAnswers) {
  std::unique_ptr<TeamStore> teams = Teams();
  for (const char* name : {"alice", "bob"}) {
    Member m;
    m.name = name;
    ASSERT_TRUE(teams->AddMember("procs", m).ok());
  }
  std::atomic<bool> done{false};
  std::thread busy([&] {
    while (!done.load(std::memory_order_relaxed)) {
    }
  });
  constexpr int kRounds = 200;
  const std::string store = store_ ? where() : "file";
  const std::string rounds = std::to_string(kRounds);
  Subprocess pong = testing::Start(
      {testing::StoreHelperBinary(), "pingpong", store, dir_.str(), "procs", "bob", "alice", rounds, "pong"});
  Subprocess ping = testing::Start(
      {testing::StoreHelperBinary(), "pingpong", store, dir_.str(), "procs", "alice", "bob", rounds, "ping"});
  SubprocessResult pinged = ping.Wait();
  SubprocessResult ponged = pong.Wait();
  done = true;
  busy.join();
  ASSERT_EQ(pinged.exit_code, 0) << pinged.err;
  ASSERT_EQ(ponged.exit_code, 0) << ponged.err;

  std::map<std::string, size_t> at;  // content -> its place in the log
  size_t n = 0;
  ASSERT_TRUE(teams->ReadLog("procs", [&](const Message& m) { at.emplace(m.content, n++); }).ok());
  ASSERT_EQ(n, 2u * kRounds);
  int early = 0;
  for (int i = 0; i < kRounds; ++i) {
    const std::string k = std::to_string(i);
    ASSERT_TRUE(at.count("ping " + k) && at.count("pong " + k)) << k;
    if (at["pong " + k] < at["ping " + k]) ++early;
  }
  EXPECT_EQ(early, 0) << "replies logged before what they answer, of " << kRounds;
}

// Test 7: an `inbox --wait` reader is woken by a send from another process.
TEST(StoreProcessTest, WaitingReaderWakesOnASendFromAnotherProcess) {
  TempDir dir;
  ASSERT_EQ(testing::RunMates(dir.path(), {"team", "create", "t", "--members", "alice"}).exit_code,
            0);
  Subprocess reader = StartWaitingReader(dir.path(), {});
  // The sender runs beside the reader: its own exit does not delay the read.
  auto sender = testing::StartMates(dir.path(), {"send", "--team", "t", "--to", "alice", "wake up"});
  auto line = reader.ReadLine(DeadlineIn(10));
  double woke_at = WallSeconds();
  EXPECT_EQ(sender.Wait().exit_code, 0);
  ASSERT_TRUE(line.ok());
  auto m = ParseMessageLine(*line);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->content, "wake up");
  EXPECT_EQ(reader.Wait().exit_code, 0);
  // From the instant the sender stamped the message to the reader's line:
  // event-driven, far below the seeds' 1 s poll.
  EXPECT_LT(woke_at - m->timestamp, 0.5);
  // Drained: nothing left.
  EXPECT_EQ(testing::RunMates(dir.path(), {"inbox", "--team", "t", "alice"}).out, "");
}

// The stat-polling fallback wakes a waiter too (NFS-like file systems).
TEST(StoreProcessTest, PollingFallbackWakesAcrossProcesses) {
  TempDir dir;
  ASSERT_EQ(testing::RunMates(dir.path(), {"team", "create", "t", "--members", "alice"}).exit_code,
            0);
  Subprocess reader = StartWaitingReader(dir.path(), {"MATES_WATCH=poll", "MATES_POLL_MS=100"});
  ASSERT_EQ(testing::RunMates(dir.path(), {"send", "--team", "t", "--to", "alice", "polled"})
                .exit_code,
            0);
  auto line = reader.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  EXPECT_NE(line->find("polled"), std::string::npos);
}

}  // namespace
}  // namespace mates
