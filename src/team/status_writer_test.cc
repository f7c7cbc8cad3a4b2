#include "team/status_writer.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

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
  StatusWriter writer(ws);
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
  StatusWriter writer(ws);
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
  StatusWriter writer(ws);
  Status s = writer.Write("gone", "m1", MemberStatus::kIdle);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.message();
  EXPECT_TRUE(writer.Write("t", "m3", MemberStatus::kIdle).ok());
  EXPECT_EQ(OnDisk(ws, "t", "m3"), MemberStatus::kIdle);
}

}  // namespace
}  // namespace mates::team
