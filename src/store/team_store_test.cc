#include "store/team_store.h"

#include <gtest/gtest.h>

#include <optional>

#include "core/clock.h"
#include "core/file_lock.h"
#include "store/forwarding_store.h"
#include "store/host_info.h"
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
      : ForwardingTeamStore(FileTeamStore(std::move(ws))), after_look_(std::move(after_look)) {}
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

}  // namespace
}  // namespace mates
