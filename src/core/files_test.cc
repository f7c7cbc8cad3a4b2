#include "core/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

TEST(FilesTest, ReadMissingIsNotFound) {
  TempDir dir;
  auto r = ReadFile(dir.path() / "nope");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(FilesTest, AtomicReplaceLeavesNoTempFiles) {
  TempDir dir;
  fs::path p = dir.path() / "config.json";
  ASSERT_TRUE(WriteFileAtomic(p, "one").ok());
  ASSERT_TRUE(WriteFileAtomic(p, "two").ok());
  EXPECT_EQ(*ReadFile(p), "two");
  EXPECT_EQ(testing::ListFiles(dir.path()), std::vector<std::string>{"config.json"});
}

TEST(FilesTest, AtomicReplaceWithFsync) {
  TempDir dir;
  SetFsyncEnabled(true);
  EXPECT_TRUE(WriteFileAtomic(dir.path() / "x", "durable").ok());
  SetFsyncEnabled(false);
  EXPECT_EQ(*ReadFile(dir.path() / "x"), "durable");
}

TEST(FilesTest, ReadersNeverSeeAMixOfTwoVersions) {
  TempDir dir;
  fs::path p = dir.path() / "doc";
  std::string a(100000, 'a'), b(100000, 'b');
  ASSERT_TRUE(WriteFileAtomic(p, a).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread writer([&] {
    while (reads.load() < 1) std::this_thread::yield();  // the reader reads first
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(WriteFileAtomic(p, i % 2 ? a : b).ok());
    stop = true;
  });
  do {
    auto r = ReadFile(p);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(*r == a || *r == b);
    ++reads;
  } while (!stop);
  writer.join();
  EXPECT_GT(reads, 0);
}

// The same through a spare, read without the writer's lock: the previous
// version becomes the spare and is overwritten in place by the next write,
// so a reader still in it would read a mix unless it reads through
// ReadReplacedFile (seen in the roster: a teammate's task update failed on
// a "corrupt" config.json with 100 teammates writing statuses).
TEST(FilesTest, SpareReadersNeverSeeAMixOfTwoVersions) {
  TempDir dir;
  fs::path p = dir.path() / "doc", spare = dir.path() / ".spare";
  // Versions of different lengths and letters: a mix is never one of them.
  auto version = [](int i) { return std::string(60000 + (i % 26) * 100, static_cast<char>('a' + i % 26)); };
  auto whole = [&](const std::string& r) {
    return !r.empty() && r.size() == version(r[0] - 'a').size() &&
           r.find_first_not_of(r[0]) == std::string::npos;
  };
  ASSERT_TRUE(ReplaceFileViaSpare(p, version(0), spare).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, mixed{0};
  // The writer starts once every reader is reading (on a loaded machine
  // its 3,000 writes could otherwise be over before a reader ran).
  std::thread writer([&] {
    while (reads.load() < 3) std::this_thread::yield();
    for (int i = 1; i <= 3000; ++i) ASSERT_TRUE(ReplaceFileViaSpare(p, version(i), spare).ok());
    stop = true;
  });
  std::vector<std::thread> readers;
  for (int k = 0; k < 3; ++k) {
    readers.emplace_back([&] {
      do {
        auto r = ReadReplacedFile(p, 1 << 20);
        ASSERT_TRUE(r.ok()) << r.status().message();
        if (!whole(*r)) ++mixed;
        ++reads;
      } while (!stop);
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(mixed.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 0);
}

// A reader that stops inside a version (a process frozen mid-read) holds its
// lock: the writer that would reuse that version waits a moment, then writes
// a fresh file instead, and the reader's version stays whole.
TEST(FilesTest, AStalledSpareReaderDoesNotStopTheWriter) {
  TempDir dir;
  fs::path p = dir.path() / "doc", spare = dir.path() / ".spare";
  ASSERT_TRUE(ReplaceFileViaSpare(p, "first", spare).ok());
  ScopedFd held(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(held.valid());
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(held.get(), F_OFD_SETLK, &fl), 0);
  // "first" becomes the spare after this write; the next one would reuse it.
  ASSERT_TRUE(ReplaceFileViaSpare(p, "second", spare).ok());
  ASSERT_TRUE(ReplaceFileViaSpare(p, "third!", spare).ok());
  EXPECT_EQ(*ReadReplacedFile(p, 100), "third!");
  char buf[16] = {};
  ASSERT_EQ(::pread(held.get(), buf, sizeof buf, 0), 5);
  EXPECT_EQ(std::string(buf, 5), "first");
  // Let go, the spare is reused again.
  held.reset();
  ASSERT_TRUE(ReplaceFileViaSpare(p, "fourth", spare).ok());
  EXPECT_EQ(*ReadReplacedFile(p, 100), "fourth");
}

// The folder's watchers hear a replace as the new version moving in (and
// the old one out), nothing of the spare being written: with the spare in
// the folder, its close and its own move were two more events, each waking
// the process's watcher thread inside the writer's system call.
TEST(FilesTest, AReplaceThroughASpareApartIsOneEventForTheFoldersWatchers) {
  TempDir dir;
  const fs::path p = dir.path() / "doc", spare = SpareIn(dir.path(), "doc");
  ASSERT_TRUE(ReplaceFileViaSpare(p, "first", spare).ok());  // the spares' folder made on the way
  ScopedFd watch = testing::WatchFolder(dir.path());
  ASSERT_TRUE(watch.valid());
  ASSERT_TRUE(ReplaceFileViaSpare(p, "second", spare).ok());
  EXPECT_EQ(testing::Heard(watch.get()),
            (std::vector<std::string>{"moved_to doc", "moved_from doc"}));
  EXPECT_EQ(testing::ReadAll(p), "second");
  EXPECT_EQ(testing::ReadAll(spare), "first");  // the previous version, for next time
  // A new file: the spare is renamed in, and a new one made apart.
  ASSERT_TRUE(ReplaceFileViaSpare(dir.path() / "other", "new", SpareIn(dir.path(), "other")).ok());
  EXPECT_EQ(testing::Heard(watch.get()), (std::vector<std::string>{"moved_to other"}));
}

// A write into a folder that is gone (a team deleted under its writer)
// fails; it does not make the folder again to keep a spare in.
TEST(FilesTest, NoSparesFolderIsMadeWhereTheFolderIsGone) {
  TempDir dir;
  const fs::path gone = dir.path() / "gone";
  Status s = ReplaceFileViaSpare(gone / "doc", "x", SpareIn(gone, "doc"));
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(fs::exists(gone));
}

// Something else where the spares go (a stray file named `.spares`): the
// documents are still replaced, atomically, the long way.
TEST(FilesTest, AStrayFileWhereTheSparesGoDoesNotStopWrites) {
  TempDir dir;
  testing::WriteAll(dir.path() / ".spares", "not a folder");
  const fs::path p = dir.path() / "doc";
  ASSERT_TRUE(ReplaceFileViaSpare(p, "first", SpareIn(dir.path(), "doc")).ok());
  ASSERT_TRUE(ReplaceFileViaSpare(p, "second", SpareIn(dir.path(), "doc")).ok());
  EXPECT_EQ(testing::ReadAll(p), "second");
  EXPECT_EQ(testing::ReadAll(dir.path() / ".spares"), "not a folder");
}

TEST(FilesTest, ReadPrefixIsBoundedAndSizedByTheFile) {
  TempDir dir;
  fs::path p = dir.path() / "doc";
  ASSERT_TRUE(WriteFileAtomic(p, std::string(300000, 'x')).ok());
  EXPECT_EQ(ReadFilePrefix(p, 1000)->size(), 1000u);
  EXPECT_EQ(ReadReplacedFile(p, 1 << 30)->size(), 300000u);
  EXPECT_EQ(ReadFilePrefix(p, 300000)->size(), 300000u);
  EXPECT_EQ(ReadReplacedFile(dir.path() / "none", 10).status().code(), StatusCode::kNotFound);
}

TEST(FilesTest, WriteToMissingFolderFails) {
  TempDir dir;
  Status s = WriteFileAtomic(dir.path() / "no" / "such" / "file", "x");
  EXPECT_EQ(s.code(), StatusCode::kIOError);
}

}  // namespace
}  // namespace mates
