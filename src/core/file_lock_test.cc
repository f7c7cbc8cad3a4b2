#include "core/file_lock.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

TEST(FileLockTest, ExcludesThreadsOfOneProcess) {
  TempDir dir;
  fs::path lock = dir.path() / "x.lock";
  int counter = 0;  // deliberately unsynchronised but for the file lock
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        auto l = FileLock::Acquire(lock);
        ASSERT_TRUE(l.ok());
        int v = counter;
        std::this_thread::yield();
        counter = v + 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, 2000);
}

TEST(FileLockTest, TryAcquireSeesAHolderAndRangesAreIndependent) {
  TempDir dir;
  fs::path lock = dir.path() / "x.lock";
  auto held = FileLock::Acquire(lock, FileLock::Range::kAppend);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(FileLock::TryAcquire(lock, FileLock::Range::kAppend).status().code(),
            StatusCode::kConflict);
  EXPECT_TRUE(FileLock::TryAcquire(lock, FileLock::Range::kDrain).ok());
}

TEST(FileLockTest, ReleasedWhenTheHolderIsDestroyed) {
  TempDir dir;
  fs::path lock = dir.path() / "x.lock";
  { auto held = FileLock::Acquire(lock); }
  EXPECT_TRUE(FileLock::TryAcquire(lock).ok());
}

TEST(FileLockTest, MissingFolderIsNotFound) {
  TempDir dir;
  EXPECT_EQ(FileLock::Acquire(dir.path() / "gone" / "x.lock").status().code(),
            StatusCode::kNotFound);
}

// The seeds' O_EXCL lock file stayed behind when its holder died; an OFD
// lock goes with its holder.
TEST(FileLockTest, AHolderKilledWithSigkillReleasesAtOnce) {
  TempDir dir;
  fs::path lock = dir.path() / "x.lock";
  auto holder = testing::Start({testing::StoreHelperBinary(), "hold-lock", lock.string(), "0"});
  auto line = holder.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok()) << line.status().message();
  ASSERT_EQ(*line, "locked");
  ASSERT_EQ(FileLock::TryAcquire(lock).status().code(), StatusCode::kConflict);

  auto waiter = std::async(std::launch::async, [&] {
    auto l = FileLock::Acquire(lock);
    return std::make_pair(l.ok(), std::chrono::steady_clock::now());
  });
  // The waiter is blocked, not spinning: the holder still has it.
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  auto killed_at = std::chrono::steady_clock::now();
  holder.Signal(SIGKILL);
  auto [ok, got_at] = waiter.get();
  EXPECT_TRUE(ok);
  EXPECT_LT(got_at - killed_at, std::chrono::milliseconds(100));
  holder.Wait();
}

}  // namespace
}  // namespace mates
