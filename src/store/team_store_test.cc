#include "store/team_store.h"

#include <gtest/gtest.h>

#include <optional>

#include "agent/process_env.h"
#include "core/clock.h"
#include "core/file_lock.h"
#include "store/forwarding_store.h"
#include "store/host_info.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

// The file store, with a say in what its liveness looks are answered: the
// lock file of `member` is held (here, by this test) until `release` is
// called from inside the Nth look — a predecessor whose lock the kernel
// frees a moment after the host starts looking.
class Looked : public ForwardingTeamStore {
 public:
  Looked(Workspace ws, std::function<void(int)> after_look)
      : ForwardingTeamStore(FileTeamStore(std::move(ws), testing::TestEnv())), after_look_(std::move(after_look)) {}
  Result<std::unique_ptr<Hold>> HoldLiveness(const std::string& t, const std::string& m) override {
    auto held = inner().HoldLiveness(t, m);
    after_look_(++looks);
    return held;
  }
  bool IsHosted(const std::string& t, const std::string& m) override {
    bool hosted = inner().IsHosted(t, m);
    after_look_(++looks);
    return hosted;
  }

  int looks = 0;

 private:
  std::function<void(int)> after_look_;
};

// A host that starts right after its predecessor was killed finds the
// predecessor's locks freed a moment later, not at once: it takes the
// liveness once they are, and says "hosted" only of a holder that keeps it
// past the grace.
TEST(TeamStoreTest, TakingALivenessAllowsForAHolderThatIsDying) {
  TempDir dir;
  Workspace ws(dir.path());
  ASSERT_TRUE(EnsureDir(ws.AgentsDir("t")).ok());
  const fs::path lock = ws.AgentsDir("t") / "lead.lock";
  std::optional<FileLock> dying;
  auto hold = [&] {
    auto l = FileLock::TryAcquire(lock);
    ASSERT_TRUE(l.ok());
    dying.emplace(std::move(*l));
  };
  hold();
  Looked store(ws, [&](int look) {
    if (look == 3) dying.reset();  // freed after the third look
  });
  auto taken = HoldLivenessAllowingForTheDead(store, "t", "lead", DeadlineIn(kDeadHostGraceS));
  EXPECT_TRUE(taken.ok()) << taken.status().message();
  EXPECT_EQ(store.looks, 4);
  taken = Status::Conflict("");  // let go

  hold();
  store.looks = 0;
  EXPECT_FALSE(StillHostedAt(store, "t", "lead", DeadlineIn(kDeadHostGraceS)));
  EXPECT_EQ(store.looks, 4);

  // Held for good: Conflict, and hosted, once the grace is over.
  hold();
  Looked kept(ws, [](int) {});
  auto start = SteadyClock::now();
  taken = HoldLivenessAllowingForTheDead(kept, "t", "lead", DeadlineIn(0.05));
  EXPECT_EQ(taken.status().code(), StatusCode::kConflict);
  EXPECT_TRUE(StillHostedAt(kept, "t", "lead", DeadlineIn(0.05)));
  EXPECT_GE(SteadyClock::now() - start, std::chrono::milliseconds(100));
  EXPECT_GT(kept.looks, 2);
}

// host.json names the other teams its host hosts (a lead's home team and
// the team it made); a hand-edited list is refused, not half read.
TEST(HostInfoTest, TheOtherTeamsRoundTripAndABadListIsRefused) {
  TempDir dir;
  Workspace ws(dir.path());
  fs::create_directories(ws.TeamDir("made"));
  HostInfo h;
  h.pid = 4242;
  h.mode = HostMode::kUp;
  h.also = {{"home", "http://127.0.0.1:1/?token=t"}, {"other", ""}};
  ASSERT_TRUE(WriteHostInfo(ws, "made", h).ok());
  auto back = ReadHostInfo(ws, "made");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->also.size(), 2u);
  EXPECT_EQ(back->also[0].team, "home");
  EXPECT_EQ(back->also[0].dashboard, "http://127.0.0.1:1/?token=t");
  EXPECT_EQ(back->also[1].team, "other");
  EXPECT_EQ(back->also[1].dashboard, "");
  // Written by a host before the list was: none.
  testing::WriteAll(HostInfoPath(ws, "made"), R"({"pid": 7, "mode": "up"})");
  ASSERT_TRUE(ReadHostInfo(ws, "made").ok());
  EXPECT_TRUE(ReadHostInfo(ws, "made")->also.empty());
  std::string many = "[";
  for (int i = 0; i < 17; ++i)
    many += std::string(i ? "," : "") + R"({"team": "t)" + std::to_string(i) + R"("})";
  many += "]";
  for (const auto& [also, says] : std::vector<std::pair<std::string, std::string>>{
           {R"("made")", "also must be a list"},
           {many, "at most 16"},
           {R"([7])", "must be an object"},
           {R"([{"dashboard": "x"}])", "team"},
           {R"([{"team": "../etc"}])", "also's team"},
           {R"([{"team": "ok", "dashboard": 3}])", "dashboard"}}) {
    testing::WriteAll(HostInfoPath(ws, "made"), R"({"pid": 7, "also": )" + also + "}");
    auto r = ReadHostInfo(ws, "made");
    ASSERT_FALSE(r.ok()) << also;
    EXPECT_NE(r.status().message().find(says), std::string::npos)
        << also << ": " << r.status().message();
  }
}

// host.json's mode is read as the enum it is; one this mates does not know
// (a newer host's, a hand edit) reads as unknown, not as an error that
// would hide the host.
TEST(HostInfoTest, TheModeRoundTripsAndAnUnknownOneReadsAsUnknown) {
  TempDir dir;
  Workspace ws(dir.path());
  fs::create_directories(ws.TeamDir("t"));
  for (HostMode m : {HostMode::kRun, HostMode::kUp, HostMode::kDemo, HostMode::kTeammates}) {
    HostInfo h;
    h.pid = 4242;
    h.mode = m;
    ASSERT_TRUE(WriteHostInfo(ws, "t", h).ok());
    auto back = ReadHostInfo(ws, "t");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->mode, m) << HostModeName(m);
    EXPECT_EQ(HostModeOf(HostModeName(m)), m);
  }
  for (const char* text : {R"({"pid": 7, "mode": "later"})", R"({"pid": 7, "mode": "UP"})", R"({"pid": 7})"}) {
    testing::WriteAll(HostInfoPath(ws, "t"), text);
    auto back = ReadHostInfo(ws, "t");
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().message();
    EXPECT_EQ(back->mode, HostMode::kUnknown) << text;
  }
  EXPECT_EQ(HostModeName(HostMode::kUnknown), "");
}

// The file store is a TeamStore like any other: its teams are listed and
// deleted through the interface, its parts are watched through it, and a
// watch of a part whose folder is not there is NotFound (a watcher asks
// again), not a crash or a silent nothing.
TEST(TeamStoreTest, TheFileStoreListsDeletesAndWatchesThroughTheInterface) {
  TempDir dir;
  Workspace ws(dir.path());
  std::unique_ptr<TeamStore> store = FileTeamStore(ws, testing::TestEnv());
  EXPECT_FALSE(store->spans_machines());
  ASSERT_TRUE(store->CreateTeam("b", "lead", "").ok());
  ASSERT_TRUE(store->CreateTeam("a", "lead", "").ok());
  auto teams = store->ListTeams();
  ASSERT_TRUE(teams.ok());
  EXPECT_EQ(*teams, (std::vector<std::string>{"a", "b"}));
  auto waker = std::make_shared<Waker>();
  auto ghost = store->Watch("ghost", TeamPart::kBoard, waker);
  EXPECT_EQ(ghost.status().code(), StatusCode::kNotFound) << "no such team, no folder to watch";
  auto roster = store->Watch("a", TeamPart::kRoster, waker);
  ASSERT_TRUE(roster.ok()) << roster.status().message();
  uint64_t seen = waker->generation();
  ASSERT_TRUE(store->AddMember("a", Member{.name = "w1"}).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "the roster's change woke the watch";
  EXPECT_EQ(store->HasTeam("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->CheckedBoard("nope").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store->DeleteTeam("b").ok());
  EXPECT_EQ(store->HasTeam("b").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->DeleteTeam("b").code(), StatusCode::kNotFound);
}

// A store tells its own Env's watcher of what it writes (DESIGN §33: the
// parts are handed down, not reached for): a watcher that polls once an
// hour hears nothing from the kernel in a test's time, so only the store's
// NotifyLocal on that very watcher wakes its waiters, for a message, a
// line of the log, the roster and the board alike.
TEST(TeamStoreTest, AStoreWakesTheWaitersOfItsOwnEnv) {
  TempDir dir;
  ProcessEnv deaf(Watcher::Options{Watcher::Mode::kPoll, std::chrono::hours(1)});
  std::unique_ptr<TeamStore> store = FileTeamStore(Workspace(dir.path()), deaf.env());
  ASSERT_TRUE(store->CreateTeam("t", "lead", "").ok());
  ASSERT_TRUE(store->AddMember("t", Member{.name = "w1"}).ok());
  auto waker = std::make_shared<Waker>();
  auto inbox = store->InboxOf("t", "w1")->WatchWith(waker);
  ASSERT_TRUE(inbox.ok()) << inbox.status().message();
  auto log = store->Watch("t", TeamPart::kLog, waker);
  ASSERT_TRUE(log.ok()) << log.status().message();
  Message m;
  m.id = "m-1";
  m.sender = "lead";
  m.recipient = "w1";
  m.content = "hi";
  m.timestamp = WallSeconds();
  uint64_t seen = waker->generation();
  ASSERT_TRUE(store->Mail("t")->Deliver("w1", m).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "a delivery wakes the inbox's waiter";
  seen = waker->generation();
  ASSERT_TRUE(store->Mail("t")->Log(m).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "a line of the log wakes its waiter";
  auto roster = store->Watch("t", TeamPart::kRoster, waker);
  ASSERT_TRUE(roster.ok());
  seen = waker->generation();
  ASSERT_TRUE(store->SetStatuses("t", {{"w1", MemberStatus::kActive}}).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "a roster's change wakes its waiter";
  auto board = store->Watch("t", TeamPart::kBoard, waker);
  ASSERT_TRUE(board.ok());
  seen = waker->generation();
  ASSERT_TRUE(store->Board("t")->Create(TaskDraft{.subject = "x"}).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "a task written wakes the board's waiter";
  // And another process's parts are not told: the same write through a
  // store of another Env leaves this deaf watcher's waiters asleep.
  std::unique_ptr<TeamStore> other = FileTeamStore(Workspace(dir.path()), testing::TestEnv());
  seen = waker->generation();
  ASSERT_TRUE(other->Mail("t")->Deliver("w1", m).ok());
  EXPECT_EQ(waker->WaitChange(seen, DeadlineIn(0.2)), seen) << "another Env's write is the kernel's to tell";
}

// The conflicts forecast (DESIGN §30) are their writer's while it lives:
// a file another process left says nothing; a change of them wakes a
// watch (the page draws them again).
TEST(TeamStoreTest, TheFileStoresForecastsAreTheirLiveWritersAndWakeTheirWatch) {
  TempDir dir;
  Workspace ws(dir.path());
  std::unique_ptr<TeamStore> store = FileTeamStore(ws, testing::TestEnv());
  ASSERT_TRUE(store->CreateTeam("a", "lead", "").ok());
  auto waker = std::make_shared<Waker>();
  auto watch = store->Watch("a", TeamPart::kForecasts, waker);
  ASSERT_TRUE(watch.ok()) << watch.status().message();
  ConflictForecast f;
  f.members = {"w1"};
  f.tasks = {2};
  f.files = {"a.txt"};
  f.with_target = true;
  // Left by a process that is gone (pid 1 is another process now).
  testing::WriteAll(ForecastPath(ws, "a"), R"({"forecasts": [{"members": ["w1"], "files": ["a.txt"]}], )"
                                           R"("pid": 1, "start_time": 7})");
  EXPECT_TRUE(store->Forecasts("a").empty()) << "a file left behind says nothing";
  EXPECT_EQ(ReadForecasts(ws, "a").size(), 1u) << "(a report still reads it)";
  uint64_t seen = waker->generation();
  ASSERT_TRUE(store->PutForecasts("a", {f}).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "the forecast's change woke the watch";
  auto now = store->Forecasts("a");
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].members, std::vector<std::string>{"w1"});
  EXPECT_TRUE(now[0].with_target);
  seen = waker->generation();
  ASSERT_TRUE(store->PutForecasts("a", {}).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen);
  EXPECT_TRUE(store->Forecasts("a").empty());
}

}  // namespace
}  // namespace mates
