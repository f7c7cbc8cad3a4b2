#include "store/mailbox.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

Message Msg(const std::string& id, const std::string& content = "hi") {
  Message m;
  m.id = id;
  m.sender = "lead";
  m.recipient = "alice";
  m.content = content;
  m.timestamp = WallSeconds();
  return m;
}

std::vector<std::string> Ids(const std::vector<Message>& ms) {
  std::vector<std::string> ids;
  for (const auto& m : ms) ids.push_back(m.id);
  return ids;
}

TEST(MailboxTest, AppendWritesOneDesignLinePerMessage) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  Message m = Msg("m-1", "line one\nline two");
  m.summary = "two lines";
  ASSERT_TRUE(box.Append(m).ok());
  std::string data = ReadAll(dir.path() / "alice_inbox.jsonl");
  EXPECT_EQ(std::count(data.begin(), data.end(), '\n'), 1);
  EXPECT_EQ(data.rfind(R"({"id":"m-1","type":"message","sender":"lead","recipient":"alice")", 0),
            0u);
}

TEST(MailboxTest, DrainReturnsEachMessageOnceInOrder) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(box.Append(Msg("m-" + std::to_string(i))).ok());
  auto first = box.Drain();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Ids(*first), (std::vector<std::string>{"m-0", "m-1", "m-2", "m-3", "m-4"}));
  auto second = box.Drain();
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->empty());
  EXPECT_FALSE(fs::exists(dir.path() / "alice_inbox.draining"));
}

TEST(MailboxTest, PeekDoesNotConsume) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  ASSERT_TRUE(box.Append(Msg("m-1")).ok());
  EXPECT_EQ(Ids(*box.Peek()), std::vector<std::string>{"m-1"});
  EXPECT_EQ(*box.PendingCount(), 1u);
  EXPECT_EQ(Ids(*box.Drain()), std::vector<std::string>{"m-1"});
  EXPECT_EQ(*box.PendingCount(), 0u);
}

TEST(MailboxTest, AnUncommittedDrainIsDeliveredAgain) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  ASSERT_TRUE(box.Append(Msg("m-1")).ok());
  {
    auto batch = box.BeginDrain();
    ASSERT_TRUE(batch.ok());
    EXPECT_EQ(Ids(batch->messages), std::vector<std::string>{"m-1"});
    // Dropped without Commit: as if the reader had died here.
  }
  ASSERT_TRUE(box.Append(Msg("m-2")).ok());
  // Peek shows both: in flight first.
  EXPECT_EQ(Ids(*box.Peek()), (std::vector<std::string>{"m-1", "m-2"}));
  auto again = box.BeginDrain();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->redelivery);
  EXPECT_EQ(Ids(again->messages), std::vector<std::string>{"m-1"});
  ASSERT_TRUE(box.Commit(*again).ok());
  EXPECT_EQ(Ids(*box.Drain()), std::vector<std::string>{"m-2"});
}

TEST(MailboxTest, DrainTakesWhatADeadReaderLeftAndTheNewOnes) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  ASSERT_TRUE(box.Append(Msg("m-1")).ok());
  { auto abandoned = box.BeginDrain(); }
  ASSERT_TRUE(box.Append(Msg("m-2")).ok());
  EXPECT_EQ(Ids(*box.Drain()), (std::vector<std::string>{"m-1", "m-2"}));
}

TEST(MailboxTest, AlreadyDeliveredIdsAreSuppressed) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  ASSERT_TRUE(box.Append(Msg("m-1")).ok());
  ASSERT_TRUE(box.Append(Msg("m-2")).ok());
  ASSERT_TRUE(box.Append(Msg("m-1")).ok());  // a duplicate line
  auto got = box.Drain([](const std::string& id) { return id == "m-2"; });
  EXPECT_EQ(Ids(*got), std::vector<std::string>{"m-1"});
}

TEST(MailboxTest, GarbageAndTornLinesAreQuarantinedNotBlocking) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  ASSERT_TRUE(box.Append(Msg("m-1")).ok());
  {
    std::string data = ReadAll(box.inbox_path());
    data += "this is not json\n";
    data += R"({"id":"m-x","type":"nonsense","sender":"a","content":"c"})" "\n";
    data += R"({"type":"message","sender":"a","content":"no id"})" "\n";
    data += R"({"id":"m-torn","type":"mess)";  // a writer died mid-line
    testing::WriteAll(box.inbox_path(), data);
  }
  // The next append starts on a fresh line: only the torn one is lost.
  ASSERT_TRUE(box.Append(Msg("m-2")).ok());
  ::testing::internal::CaptureStderr();
  auto got = box.Drain();
  std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Ids(*got), (std::vector<std::string>{"m-1", "m-2"}));
  EXPECT_NE(warnings.find("quarantined"), std::string::npos);
  std::string q = ReadAll(dir.path() / "alice_inbox.quarantine");
  EXPECT_NE(q.find("this is not json"), std::string::npos);
  EXPECT_NE(q.find("nonsense"), std::string::npos);
  EXPECT_NE(q.find("no id"), std::string::npos);
  EXPECT_NE(q.find("m-torn"), std::string::npos);
}

TEST(MailboxTest, AcceptsTheS09FromField) {
  TempDir dir;
  Mailbox box(dir.path(), "bob");
  testing::WriteAll(box.inbox_path(),
                    R"({"id":"m-1","type":"message","from":"alice","content":"hi","timestamp":1.5})"
                    "\n");
  auto got = box.Drain();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].sender, "alice");
}

TEST(MailboxTest, ConcurrentWritersAndAReaderLoseNothing) {
  TempDir dir;
  Mailbox box(dir.path(), "alice");
  constexpr int kWriters = 4, kEach = 500;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE(box.Append(Msg("w" + std::to_string(w) + "-" + std::to_string(i))).ok());
      }
    });
  }
  std::set<std::string> got;
  size_t total = 0;
  while (got.size() < kWriters * kEach) {
    auto batch = box.Drain();
    ASSERT_TRUE(batch.ok());
    total += batch->size();
    for (const auto& m : *batch) got.insert(m.id);
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(total, static_cast<size_t>(kWriters * kEach));  // no duplicate
  EXPECT_TRUE(box.Drain()->empty());
}

}  // namespace
}  // namespace mates
