#include "support/test_env.h"
#include "team/status_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "store/forwarding_store.h"
#include "support/test_util.h"

namespace mates::team {
namespace {

using testing::TempDir;

MemberStatus OnDisk(const Workspace& ws, const std::string& team, const std::string& member) {
  auto c = Roster(ws).Load(team);
  EXPECT_TRUE(c.ok()) << c.status().message();
  const Member* m = c.ok() ? c->Find(member) : nullptr;
  return m == nullptr ? MemberStatus::kShutdown : m->status;
}

struct StatusWriterTest : ::testing::Test {
  void SetUp() override {
    ASSERT_TRUE(Roster(ws).CreateTeam("t").ok());
    for (int i = 0; i < 16; ++i) {
      Member m;
      m.name = "m" + std::to_string(i);
      ASSERT_TRUE(Roster(ws).AddMember("t", m).ok());
      ASSERT_TRUE(Roster(ws).SetStatus("t", m.name, MemberStatus::kActive).ok());
    }
  }
  TempDir dir;
  Workspace ws{dir.path()};
};

// Sixteen going idle at once: each Write returns with its own status on
// disk, however the writes were grouped.
TEST_F(StatusWriterTest, AWriteIsOnDiskWhenItReturns) {
  StatusWriter writer(FileTeamStore(ws, testing::TestEnv()));
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      std::string name = "m" + std::to_string(i);
      for (int round = 0; round < 20; ++round) {
        MemberStatus s = round % 2 == 0 ? MemberStatus::kIdle : MemberStatus::kActive;
        ASSERT_TRUE(writer.Write("t", name, s).ok());
        ASSERT_EQ(OnDisk(ws, "t", name), s) << name << " round " << round;
      }
    });
  }
  for (auto& t : threads) t.join();
}

// `active` posted (written a moment later), then `idle` written: the
// roster ends on idle, never on the stale active.
TEST_F(StatusWriterTest, AWriteSupersedesWhatWasPosted) {
  StatusWriter writer(FileTeamStore(ws, testing::TestEnv()));
  for (int round = 0; round < 50; ++round) {
    writer.Post("t", "m1", MemberStatus::kActive);
    ASSERT_TRUE(writer.Write("t", "m1", MemberStatus::kIdle).ok());
    writer.Flush();
    ASSERT_EQ(OnDisk(ws, "t", "m1"), MemberStatus::kIdle) << "round " << round;
  }
  writer.Post("t", "m2", MemberStatus::kIdle);
  writer.Flush();
  EXPECT_EQ(OnDisk(ws, "t", "m2"), MemberStatus::kIdle);
}

// A team that is not there is an error for the writer that waited, and
// the next write to a good team goes through.
TEST_F(StatusWriterTest, AMissingTeamIsAnError) {
  StatusWriter writer(FileTeamStore(ws, testing::TestEnv()));
  Status s = writer.Write("gone", "m1", MemberStatus::kIdle);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.message();
  EXPECT_TRUE(writer.Write("t", "m3", MemberStatus::kIdle).ok());
  EXPECT_EQ(OnDisk(ws, "t", "m3"), MemberStatus::kIdle);
}

// The files' roster, each update of it taking `slow` longer, and each
// recorded: when it began and ended, how many members it changed. The
// sleep stands for a slow store (it is what the writer's rest is measured
// against); the test synchronises on WaitFor, never on time.
class SlowRoster : public ForwardingTeamStore {
 public:
  SlowRoster(Workspace ws, std::chrono::milliseconds slow)
      : ForwardingTeamStore(FileTeamStore(std::move(ws), testing::TestEnv())), slow_(slow) {}
  struct Update {
    SteadyClock::time_point began, ended;
    int changed = 0;
  };
  // Waits until `n` updates have ended.
  std::vector<Update> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return updates_.size() >= n; });
    return updates_;
  }

  Result<TeamConfig> UpdateTeam(const std::string& team,
                                const std::function<Status(TeamConfig&)>& mutate) override {
    Update u;
    u.began = SteadyClock::now();
    auto before = inner().LoadTeam(team);
    auto r = inner().UpdateTeam(team, mutate);
    std::this_thread::sleep_for(slow_);
    if (r.ok() && before.ok()) {
      for (const Member& m : r->members) u.changed += before->Find(m.name)->status != m.status;
    }
    u.ended = SteadyClock::now();
    std::lock_guard<std::mutex> lock(mu_);
    updates_.push_back(u);
    cv_.notify_all();
    return r;
  }
  // Through the slow UpdateTeam, as TeamStore does it.
  Status SetStatuses(const std::string& team,
                     const std::vector<std::pair<std::string, MemberStatus>>& changes) override {
    return TeamStore::SetStatuses(team, changes);
  }

 private:
  const std::chrono::milliseconds slow_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Update> updates_;  // guarded by mu_
};

// After an update that took d, the writer rests 2d (at most a third of a
// core on rosters), and what is posted meanwhile is one update.
TEST_F(StatusWriterTest, TheWriterRestsAfterEachUpdateAndGathersWhatComesMeanwhile) {
  SlowRoster slow(ws, std::chrono::milliseconds(100));
  StatusWriter writer(slow);
  writer.Post("t", "m0", MemberStatus::kIdle);
  auto first = slow.WaitFor(1);
  // Posted while it rests (200 ms): three changes, one update.
  writer.Post("t", "m1", MemberStatus::kIdle);
  writer.Post("t", "m2", MemberStatus::kIdle);
  writer.Post("t", "m3", MemberStatus::kIdle);
  // A Write waits out the rest too, and goes with them.
  ASSERT_TRUE(writer.Write("t", "m4", MemberStatus::kIdle).ok());
  auto updates = slow.WaitFor(2);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].changed, 1);
  EXPECT_EQ(updates[1].changed, 4) << "what came during the rest is one update";
  const auto took = updates[0].ended - updates[0].began;
  EXPECT_GE(updates[1].began - updates[0].ended, 2 * took) << "no rest after the first update";
  for (const char* m : {"m0", "m1", "m2", "m3", "m4"})
    EXPECT_EQ(OnDisk(ws, "t", m), MemberStatus::kIdle) << m;
}

}  // namespace
}  // namespace mates::team
