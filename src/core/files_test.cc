#include "core/files.h"

#include <gtest/gtest.h>

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
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(WriteFileAtomic(p, i % 2 ? a : b).ok());
    stop = true;
  });
  int reads = 0;
  while (!stop) {
    auto r = ReadFile(p);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(*r == a || *r == b);
    ++reads;
  }
  writer.join();
  EXPECT_GT(reads, 0);
}

TEST(FilesTest, WriteToMissingFolderFails) {
  TempDir dir;
  Status s = WriteFileAtomic(dir.path() / "no" / "such" / "file", "x");
  EXPECT_EQ(s.code(), StatusCode::kIOError);
}

}  // namespace
}  // namespace mates
