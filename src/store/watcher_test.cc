#include "store/watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/mailbox.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

// Writes like another process would: no NotifyLocal.
void ForeignAppend(const fs::path& path, const std::string& line) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_TRUE(WriteAll(fd.get(), line, "test").ok());
}

class WatcherModeTest : public ::testing::TestWithParam<Watcher::Mode> {};

TEST_P(WatcherModeTest, WakesOnAWriteToTheWatchedFileOnly) {
  TempDir dir;
  Watcher::Options o;
  o.mode = GetParam();
  o.poll_interval = std::chrono::milliseconds(50);
  Watcher watcher(o);
  auto alice = std::make_shared<Waker>();
  auto bob = std::make_shared<Waker>();
  auto sa = watcher.Subscribe(dir.path(), "alice_inbox.jsonl", alice);
  auto sb = watcher.Subscribe(dir.path(), "bob_inbox.jsonl", bob);
  ASSERT_TRUE(sa.ok() && sb.ok());
  uint64_t a0 = alice->generation(), b0 = bob->generation();
  ForeignAppend(dir.path() / "alice_inbox.jsonl", "x\n");
  EXPECT_NE(alice->WaitChange(a0, DeadlineIn(5)), a0);
  // bob's waker was not touched by alice's file (checked after alice woke,
  // so any event for this write has been dispatched).
  EXPECT_EQ(bob->generation(), b0);
}

TEST_P(WatcherModeTest, SuffixPatternsSeeRenamesInto) {
  TempDir dir;
  Watcher::Options o;
  o.mode = GetParam();
  o.poll_interval = std::chrono::milliseconds(50);
  Watcher watcher(o);
  auto board = std::make_shared<Waker>();
  auto s = watcher.Subscribe(dir.path(), "*.json", board);
  ASSERT_TRUE(s.ok());
  uint64_t g = board->generation();
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "3.json", "{}").ok());
  EXPECT_NE(board->WaitChange(g, DeadlineIn(5)), g);
}

INSTANTIATE_TEST_SUITE_P(Modes, WatcherModeTest,
                         ::testing::Values(Watcher::Mode::kInotify, Watcher::Mode::kPoll));

TEST(WatcherTest, NotifyLocalWakesWithoutTheKernel) {
  TempDir dir;
  Watcher watcher(Watcher::Options{Watcher::Mode::kPoll, std::chrono::hours(1)});
  auto w = std::make_shared<Waker>();
  auto s = watcher.Subscribe(dir.path(), "lead_inbox.jsonl", w);
  uint64_t g = w->generation();
  watcher.NotifyLocal(dir.path(), "lead_inbox.jsonl");
  EXPECT_NE(w->generation(), g);
}

TEST(WatcherTest, UnsubscribedWakersAreLeftAlone) {
  TempDir dir;
  Watcher watcher(Watcher::Options{});
  auto w = std::make_shared<Waker>();
  {
    auto s = watcher.Subscribe(dir.path(), "", w);
    ASSERT_TRUE(s.ok());
  }
  uint64_t g = w->generation();
  watcher.NotifyLocal(dir.path(), "anything");
  EXPECT_EQ(w->generation(), g);
}

TEST(WatcherTest, MissingFolderIsNotFound) {
  TempDir dir;
  Watcher watcher(Watcher::Options{});
  EXPECT_EQ(watcher.Subscribe(dir.path() / "nope", "", std::make_shared<Waker>()).status().code(),
            StatusCode::kNotFound);
}

TEST(WatcherTest, DefaultWatcherWakesAMailboxWaiterOnAppend) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  auto w = std::make_shared<Waker>();
  auto s = testing::TestEnv().watcher.Subscribe(dir.path(), "alice_inbox.jsonl", w);
  ASSERT_TRUE(s.ok());
  uint64_t g = w->generation();
  std::thread sender([&] {
    Message m;
    m.id = "m-1";
    m.sender = "lead";
    m.content = "wake up";
    ASSERT_TRUE(box.Append(m).ok());
  });
  EXPECT_NE(w->WaitChange(g, DeadlineIn(5)), g);
  sender.join();
  EXPECT_EQ(box.Drain()->size(), 1u);
}

}  // namespace
}  // namespace mates
