#include "core/file_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

// This process's descriptors open on files under `dir` (deleted ones too).
size_t OpenDescriptorsUnder(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    fs::path target = fs::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind(dir.string() + "/", 0) == 0) ++n;
  }
  return n;
}

// A process keeps a descriptor per lock file it took (opening it at every
// acquisition was an inotify event at every close), but not for files that
// are gone: a host that outlives twenty teams, each deleted after it locked
// 51 of their files, ends with the live files' descriptors only. Before,
// it kept all 1,020 until RLIMIT_NOFILE ran out.
TEST(FileLockTest, ALongLivedProcessDoesNotKeepTheDescriptorsOfDeletedLockFiles) {
  TempDir dir;
  for (int team = 0; team < 20; ++team) {
    fs::path t = dir.path() / ("team-" + std::to_string(team));
    fs::create_directories(t);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(FileLock::Acquire(t / (std::to_string(i) + ".lock")).ok());
    ASSERT_TRUE(FileLock::AcquireFolder(t).ok());
    fs::remove_all(t);
  }
  fs::path live = dir.path() / "live";
  fs::create_directories(live);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(FileLock::Acquire(live / (std::to_string(i) + ".lock")).ok());
  // The live files' 64, and at most the last team's 51 not looked at yet.
  const size_t after = OpenDescriptorsUnder(dir.path());
  EXPECT_LE(after, 64u + 51u) << "descriptors of deleted lock files are kept";
  EXPECT_GE(after, 64u) << "the live files' descriptors were closed";
  // The live files keep theirs: taking them again opens nothing.
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(FileLock::Acquire(live / (std::to_string(i) + ".lock")).ok());
  EXPECT_EQ(OpenDescriptorsUnder(dir.path()), after);
}

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
  // The waiter is blocked in the kernel, not spinning: it is queued on the
  // lock, and over a fifth of a second this process uses next to no CPU (a
  // retry loop would burn the whole window).
  struct stat st {};
  ASSERT_EQ(::stat(lock.c_str(), &st), 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return testing::LockWaiterOn(st.st_ino); }));
  auto cpu = [] {
    struct rusage ru {};
    ::getrusage(RUSAGE_SELF, &ru);
    return std::chrono::seconds(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           std::chrono::microseconds(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  };
  auto cpu_before = cpu();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the measuring window
  EXPECT_LT(cpu() - cpu_before, std::chrono::milliseconds(40)) << "the waiter spins";
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  auto killed_at = std::chrono::steady_clock::now();
  holder.Signal(SIGKILL);
  auto [ok, got_at] = waiter.get();
  EXPECT_TRUE(ok);
  EXPECT_LT(got_at - killed_at, std::chrono::milliseconds(100));
  holder.Wait();
}


uint64_t InodeOf(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

// DESIGN §10: a waiter blocked on a lock file that is deleted (and created
// anew by someone else) must not get in beside the new file's holder: it
// checks, once granted, that the path still names the file it locked.
TEST(FileLockTest, AWaiterOnADeletedLockFileWaitsForTheNewFilesHolder) {
  TempDir dir;
  fs::path lock = dir.path() / "x.lock";
  auto first = testing::Start({testing::StoreHelperBinary(), "hold-lock", lock.string(), "0"});
  ASSERT_EQ(*first.ReadLine(DeadlineIn(10)), "locked");
  const uint64_t old_ino = InodeOf(lock);
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    auto l = FileLock::Acquire(lock);
    ASSERT_TRUE(l.ok()) << l.status().message();
    acquired = true;
  });
  ASSERT_TRUE(testing::WaitUntil([&] { return testing::LockWaiterOn(old_ino); }));
  // Someone deletes the lock file; a newcomer creates and holds a new one.
  ASSERT_TRUE(fs::remove(lock));
  auto second = testing::Start({testing::StoreHelperBinary(), "hold-lock", lock.string(), "0"});
  ASSERT_EQ(*second.ReadLine(DeadlineIn(10)), "locked");
  const uint64_t new_ino = InodeOf(lock);
  ASSERT_NE(new_ino, old_ino);
  // The old holder dies: the waiter is granted the deleted file, sees it is
  // not the one at the path, and queues behind the newcomer.
  first.Signal(SIGKILL);
  first.Wait();
  EXPECT_TRUE(testing::WaitUntil([&] { return testing::LockWaiterOn(new_ino) || acquired.load(); }));
  EXPECT_FALSE(acquired.load()) << "got in while another process held the lock file at the path";
  second.Signal(SIGKILL);
  second.Wait();
  waiter.join();
  EXPECT_TRUE(acquired.load());
}

TEST(FileLockTest, AFolderLockExcludesProcessesAndOutlivesItsFolderBeingReplaced) {
  TempDir dir;
  fs::path folder = dir.path() / "board";
  ASSERT_TRUE(EnsureDir(folder).ok());
  auto holder = testing::Start({testing::StoreHelperBinary(), "hold-lock", folder.string(), "0"});
  ASSERT_EQ(*holder.ReadLine(DeadlineIn(10)), "locked");
  auto waiting = std::async(std::launch::async, [&] { return FileLock::AcquireFolder(folder).status(); });
  ASSERT_TRUE(testing::WaitUntil([&] { return testing::LockWaiterOn(InodeOf(folder)); }));
  holder.Signal(SIGKILL);
  holder.Wait();
  EXPECT_TRUE(waiting.get().ok());
  // A folder moved away and made anew: the lock follows the path.
  { auto held = FileLock::AcquireFolder(folder); ASSERT_TRUE(held.ok()); }
  fs::rename(folder, dir.path() / "old");
  ASSERT_TRUE(EnsureDir(folder).ok());
  auto old_holder = testing::Start({testing::StoreHelperBinary(), "hold-lock", (dir.path() / "old").string(), "0"});
  ASSERT_EQ(*old_holder.ReadLine(DeadlineIn(10)), "locked");
  EXPECT_TRUE(FileLock::AcquireFolder(folder).ok());  // not the old folder's lock
  EXPECT_EQ(FileLock::AcquireFolder(dir.path() / "gone").status().code(), StatusCode::kNotFound);
  old_holder.Signal(SIGKILL);
  old_holder.Wait();
}

}  // namespace
}  // namespace mates
