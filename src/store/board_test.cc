#include "store/board.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

const Caller kLead{"lead", true};

TaskDraft Draft(const std::string& subject, std::vector<int64_t> blocked_by = {}) {
  TaskDraft d;
  d.subject = subject;
  d.blocked_by = std::move(blocked_by);
  return d;
}

TEST(BoardTest, IdsStartAtOneAndAreNeverReused) {
  TempDir dir;
  {
    Board board(dir.path());
    EXPECT_EQ(board.Create(Draft("a"))->id, 1);
    EXPECT_EQ(board.Create(Draft("b"))->id, 2);
    TaskPatch del;
    del.status = TaskStatus::kDeleted;
    ASSERT_TRUE(board.Update(2, del, kLead).ok());
  }
  fs::remove(dir.path() / "2.json");  // even if the file goes away
  Board fresh(dir.path());
  EXPECT_EQ(fresh.Create(Draft("c"))->id, 3);
  EXPECT_EQ(testing::ReadAll(dir.path() / ".highwatermark"), "3\n");
}

TEST(BoardTest, TaskFileHasTheDesignShape) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("Implement resolvers")).ok());
  auto j = ParseJson(testing::ReadAll(dir.path() / "1.json"));
  ASSERT_TRUE(j.ok());
  for (const char* key : {"id", "subject", "description", "activeForm", "status", "owner",
                          "blockedBy", "blocks", "metadata", "created_at", "updated_at"}) {
    EXPECT_TRUE(j->contains(key)) << key;
  }
  EXPECT_EQ((*j)["status"], "pending");
}

TEST(BoardTest, DependenciesAreKeptOnBothSides) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("analyze")).ok());
  ASSERT_TRUE(board.Create(Draft("design", {1})).ok());
  ASSERT_TRUE(board.Create(Draft("implement")).ok());
  EXPECT_EQ(board.Get(1)->blocks, std::vector<int64_t>{2});
  TaskPatch p;
  p.add_blocked_by = {2};
  ASSERT_TRUE(board.Update(3, p, kLead).ok());
  EXPECT_EQ(board.Get(3)->blocked_by, std::vector<int64_t>{2});
  EXPECT_EQ(board.Get(2)->blocks, std::vector<int64_t>{3});
  TaskPatch q;
  q.add_blocks = {3};
  ASSERT_TRUE(board.Update(1, q, kLead).ok());
  EXPECT_EQ(board.Get(3)->blocked_by, (std::vector<int64_t>{2, 1}));
}

TEST(BoardTest, CyclesAndUnknownIdsAreRefusedWithoutWriting) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("a")).ok());
  ASSERT_TRUE(board.Create(Draft("b", {1})).ok());
  ASSERT_TRUE(board.Create(Draft("c", {2})).ok());
  TaskPatch cycle;
  cycle.add_blocked_by = {3};
  auto r = board.Update(1, cycle, kLead);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("cycle"), std::string::npos);
  TaskPatch cycle2;
  cycle2.add_blocks = {1};
  EXPECT_EQ(board.Update(3, cycle2, kLead).status().code(), StatusCode::kFailedPrecondition);
  TaskPatch self;
  self.add_blocked_by = {1};
  EXPECT_EQ(board.Update(1, self, kLead).status().code(), StatusCode::kInvalidArgument);
  TaskPatch unknown;
  unknown.add_blocked_by = {99};
  unknown.subject = "changed";
  EXPECT_EQ(board.Update(1, unknown, kLead).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(board.Get(1)->subject, "a");  // nothing written
  EXPECT_TRUE(board.Get(1)->blocked_by.empty());
  EXPECT_EQ(board.Create(Draft("d", {42})).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(board.Get(42).status().code(), StatusCode::kNotFound);
}

TEST(BoardTest, ClaimIsACompareAndSet) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("a")).ok());
  ASSERT_TRUE(board.Create(Draft("b", {1})).ok());
  EXPECT_EQ(board.Claim(2, "bob").status().code(), StatusCode::kFailedPrecondition);  // blocked
  auto t = board.Claim(1, "alice");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->owner, "alice");
  EXPECT_EQ(t->status, TaskStatus::kInProgress);
  EXPECT_TRUE(board.Claim(1, "alice").ok());  // idempotent for the owner
  auto lost = board.Claim(1, "bob");
  EXPECT_EQ(lost.status().code(), StatusCode::kConflict);
  EXPECT_NE(lost.status().message().find("alice"), std::string::npos);
  EXPECT_EQ(board.Claim(7, "bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(board.Claim(1, "../x").status().code(), StatusCode::kInvalidArgument);
}

// Every teammate's process watches the board's folder (its claim line, its
// watcher thread): a task written must be one piece of news there, the new
// version moving in, not the spare's writing too (DESIGN §3, `SpareIn`).
TEST(BoardTest, ATaskWrittenIsOneMoveInTheBoardsFolder) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("a")).ok());
  ASSERT_TRUE(board.Create(Draft("b", {1})).ok());
  ScopedFd watch = testing::WatchFolder(dir.path());
  ASSERT_TRUE(watch.valid());
  auto claimed = board.ClaimNext("alice");
  ASSERT_TRUE(claimed.ok() && claimed->has_value());
  EXPECT_EQ(testing::Heard(watch.get()),
            (std::vector<std::string>{"moved_to 1.json", "moved_from 1.json"}));
  TaskPatch done;
  done.status = TaskStatus::kCompleted;
  ASSERT_TRUE(board.Update(1, done, Caller{"alice", false}).ok());
  EXPECT_EQ(testing::Heard(watch.get()),
            (std::vector<std::string>{"moved_to 1.json", "moved_from 1.json"}));
  EXPECT_EQ(board.Get(1)->status, TaskStatus::kCompleted);
}

TEST(BoardTest, ClaimNextTakesTheLowestUnblockedId) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("1")).ok());
  ASSERT_TRUE(board.Create(Draft("2", {1})).ok());
  ASSERT_TRUE(board.Create(Draft("3")).ok());
  EXPECT_EQ((*board.ClaimNext("a"))->id, 1);
  EXPECT_EQ((*board.ClaimNext("b"))->id, 3);  // 2 waits on 1
  EXPECT_FALSE(board.ClaimNext("c")->has_value());
  TaskPatch done;
  done.status = TaskStatus::kCompleted;
  ASSERT_TRUE(board.Update(1, done, Caller{"a", false}).ok());
  EXPECT_EQ((*board.ClaimNext("c"))->id, 2);
}

TEST(BoardTest, ClaimNextTakesTasksAssignedToTheClaimerFirst) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("1")).ok());
  ASSERT_TRUE(board.Create(Draft("2")).ok());
  ASSERT_TRUE(board.Create(Draft("3", {2})).ok());
  TaskPatch to_bob;
  to_bob.owner = "bob";
  ASSERT_TRUE(board.Update(2, to_bob, kLead).ok());
  ASSERT_TRUE(board.Update(3, to_bob, kLead).ok());
  EXPECT_EQ((*board.ClaimNext("bob"))->id, 2);    // his, though #1 is lower
  EXPECT_EQ((*board.ClaimNext("alice"))->id, 1);  // not bob's tasks
  EXPECT_FALSE(board.ClaimNext("alice")->has_value());
  EXPECT_FALSE(board.ClaimNext("bob")->has_value());  // #3 waits on #2
  TaskPatch done;
  done.status = TaskStatus::kCompleted;
  ASSERT_TRUE(board.Update(2, done, Caller{"bob", false}).ok());
  EXPECT_FALSE(board.ClaimNext("alice")->has_value());
  EXPECT_EQ((*board.ClaimNext("bob"))->id, 3);
}

// Who a task is assigned to is kept in an index by each instance: one
// assigned, taken back and assigned again elsewhere is seen here.
TEST(BoardTest, AssignmentsMadeByAnotherInstanceDecideWhatClaimNextTakes) {
  TempDir dir;
  Board lead(dir.path());
  Board bobs(dir.path());
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(lead.Create(Draft(std::to_string(i))).ok());
  ASSERT_TRUE(bobs.Get(1).ok());  // warm
  TaskPatch to_bob;
  to_bob.owner = "bob";
  ASSERT_TRUE(lead.Update(3, to_bob, kLead).ok());
  ASSERT_TRUE(lead.Update(4, to_bob, kLead).ok());
  TaskPatch unassigned;
  unassigned.owner = "";
  ASSERT_TRUE(lead.Update(3, unassigned, kLead).ok());
  EXPECT_EQ((*bobs.ClaimNext("bob"))->id, 4);  // his; #3 is his no more
  EXPECT_EQ((*bobs.ClaimNext("bob"))->id, 1);  // then the lowest open one
  TaskPatch to_carol;
  to_carol.owner = "carol";
  ASSERT_TRUE(lead.Update(2, to_carol, kLead).ok());
  EXPECT_EQ((*bobs.ClaimNext("bob"))->id, 3);  // not carol's #2
  Board::ClaimOutlook outlook;
  EXPECT_FALSE(bobs.ClaimNext("bob", &outlook)->has_value());
  EXPECT_EQ(outlook.unowned, 0);
  EXPECT_EQ(outlook.assigned_to, std::vector<std::string>{"carol"});
  EXPECT_EQ((*lead.ClaimNext("carol"))->id, 2);
}

TEST(BoardTest, DeletingABlockerReleasesItsDependents) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("1")).ok());
  ASSERT_TRUE(board.Create(Draft("2", {1})).ok());
  TaskPatch del;
  del.status = TaskStatus::kDeleted;
  ASSERT_TRUE(board.Update(1, del, kLead).ok());
  EXPECT_TRUE(board.Get(2)->blocked_by.empty());
  EXPECT_EQ((*board.ClaimNext("a"))->id, 2);
  EXPECT_EQ(board.List()->size(), 1u);
  EXPECT_EQ(board.List(true)->size(), 2u);
}

TEST(BoardTest, OwnerRulesForTeammates) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("x")).ok());
  ASSERT_TRUE(board.Claim(1, "alice").ok());
  TaskPatch steal;
  steal.owner = "bob";
  EXPECT_EQ(board.Update(1, steal, Caller{"bob", false}).status().code(),
            StatusCode::kFailedPrecondition);
  TaskPatch finish;
  finish.status = TaskStatus::kCompleted;
  EXPECT_EQ(board.Update(1, finish, Caller{"bob", false}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(board.Update(1, steal, kLead).ok());  // the lead may reassign
  EXPECT_TRUE(board.Update(1, finish, Caller{"bob", false}).ok());
}

TEST(BoardTest, StartingATaskAssignsItAndRespectsBlockers) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("1")).ok());
  ASSERT_TRUE(board.Create(Draft("2", {1})).ok());
  TaskPatch start;
  start.status = TaskStatus::kInProgress;
  EXPECT_EQ(board.Update(2, start, Caller{"bob", false}).status().code(),
            StatusCode::kFailedPrecondition);
  auto t = board.Update(1, start, Caller{"bob", false});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->owner, "bob");
}

TEST(BoardTest, MetadataIsMerged) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("x")).ok());
  TaskPatch p;
  p.metadata_json = R"({"a":1,"b":2})";
  ASSERT_TRUE(board.Update(1, p, kLead).ok());
  p.metadata_json = R"({"b":null,"c":3})";
  ASSERT_TRUE(board.Update(1, p, kLead).ok());
  EXPECT_EQ(board.Get(1)->metadata_json, R"({"a":1,"c":3})");
  p.metadata_json = "[1]";
  EXPECT_EQ(board.Update(1, p, kLead).status().code(), StatusCode::kInvalidArgument);
}

TEST(BoardTest, OtherInstancesSeeChangesWithoutReloadingEverything) {
  TempDir dir;
  Board a(dir.path());
  Board b(dir.path());
  ASSERT_TRUE(a.Create(Draft("x")).ok());
  EXPECT_EQ(b.Get(1)->subject, "x");
  ASSERT_TRUE(b.Claim(1, "bob").ok());
  EXPECT_EQ(a.Claim(1, "alice").status().code(), StatusCode::kConflict);
  // A change made by someone else entirely (a person with an editor).
  auto j = ParseJson(testing::ReadAll(dir.path() / "1.json"));
  (*j)["subject"] = "edited by hand";
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "1.json", DumpJson(*j)).ok());
  EXPECT_EQ(a.Get(1)->subject, "edited by hand");
  EXPECT_EQ(b.Get(1)->subject, "edited by hand");
}

// The file at `path` (0: none).
uint64_t InodeOf(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// Whether the last line of the index at `path` is about task `id`.
bool IndexEndsWith(const fs::path& path, int64_t id) {
  std::string data = testing::ReadAll(path);
  if (data.empty() || data.back() != '\n') return false;
  size_t start = data.rfind('\n', data.size() - 2);
  start = start == std::string::npos ? 0 : start + 1;
  return data.compare(start, std::to_string(id).size() + 1, std::to_string(id) + " ") == 0;
}

// Each instance keeps the index open and checks it is still the file at
// the path with one stat: one compacted (a new file) or deleted by someone
// else is followed, not read on from the old file.
TEST(BoardTest, OtherInstancesFollowTheIndexWhenItIsCompactedOrDeleted) {
  TempDir dir;
  const fs::path index = dir.path() / ".index";
  Board a(dir.path());
  Board b(dir.path());
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(a.Create(Draft("t" + std::to_string(i))).ok());
  ASSERT_TRUE(b.Get(1).ok());  // b has read the index
  const uint64_t first = InodeOf(index);
  ASSERT_NE(first, 0u);
  // Enough changes for a to compact the index (a new file at the path),
  // several times over: the last one may get the first file's inode back
  // (the file system reuses a freed one), so any change of it counts.
  std::map<int64_t, std::string> latest;
  bool compacted = false;
  for (int i = 0; i < 120; ++i) {
    TaskPatch p;
    const int64_t id = 1 + i % 3;
    p.description = "step " + std::to_string(i);
    latest[id] = *p.description;
    ASSERT_TRUE(a.Update(id, p, kLead).ok());
    compacted = compacted || InodeOf(index) != first;
  }
  ASSERT_TRUE(compacted) << "the index was not compacted";
  for (const auto& [id, text] : latest) EXPECT_EQ(b.Get(id)->description, text) << "task " << id;
  // What b writes goes to the index there now, not to the file it had open.
  TaskPatch by_b;
  by_b.description = "b after the compaction";
  ASSERT_TRUE(b.Update(1, by_b, kLead).ok());
  EXPECT_TRUE(IndexEndsWith(index, 1));
  // Deleted by hand: changes are still seen both ways, and the index comes back.
  ASSERT_TRUE(fs::remove(index));
  TaskPatch p;
  p.description = "after the index went";
  ASSERT_TRUE(a.Update(2, p, kLead).ok());
  EXPECT_EQ(b.Get(2)->description, "after the index went");
  p.description = "written by b";
  ASSERT_TRUE(b.Update(3, p, kLead).ok());
  EXPECT_EQ(a.Get(3)->description, "written by b");
  EXPECT_TRUE(IndexEndsWith(index, 3));
}

TEST(BoardTest, CorruptOrTruncatedTaskFilesAreReportedAndSkipped) {
  TempDir dir;
  Board board(dir.path());
  ASSERT_TRUE(board.Create(Draft("good")).ok());
  ASSERT_TRUE(board.Create(Draft("will break")).ok());
  ASSERT_TRUE(board.Create(Draft("waits on the broken one", {2})).ok());
  std::string two = testing::ReadAll(dir.path() / "2.json");
  testing::WriteAll(dir.path() / "2.json", two.substr(0, two.size() / 2));
  testing::WriteAll(dir.path() / "9.json", "garbage");
  ::testing::internal::CaptureStderr();
  auto list = board.List();
  std::string warnings = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_NE(warnings.find("2.json"), std::string::npos);
  EXPECT_NE(warnings.find("9.json"), std::string::npos);
  // The dependent of a broken task stays blocked; the rest goes on.
  EXPECT_EQ((*board.ClaimNext("a"))->id, 1);
  EXPECT_FALSE(board.ClaimNext("a")->has_value());
  // New ids go past the broken files.
  EXPECT_EQ(board.Create(Draft("next"))->id, 10);
}

TEST(BoardTest, RacingClaimersInThreadsEachWinDistinctTasks) {
  TempDir dir;
  {
    Board setup(dir.path());
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(setup.Create(Draft("t" + std::to_string(i))).ok());
  }
  std::mutex mu;
  std::map<int64_t, std::string> owners;
  std::atomic<int> doubles{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 6; ++w) {
    threads.emplace_back([&, w] {
      Board board(dir.path());  // each its own instance, as separate processes
      std::string me = "w" + std::to_string(w);
      for (;;) {
        auto t = board.ClaimNext(me);
        ASSERT_TRUE(t.ok());
        if (!t->has_value()) return;
        std::lock_guard<std::mutex> lock(mu);
        if (!owners.emplace((*t)->id, me).second) ++doubles;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(doubles.load(), 0);
  EXPECT_EQ(owners.size(), 300u);
}

// Updaters that go on updating as fast as they are answered, through one
// board: each gets its own answer every time (a refusal among them too),
// nobody waits forever, and each task ends as its last update
// left it.
TEST(BoardTest, ManyUpdatersInARowEachGetTheirAnswersAndTheirLastWriteStands) {
  TempDir dir;
  Board board(dir.path());
  constexpr int kUpdaters = 8, kRounds = 150;
  for (int k = 0; k < kUpdaters; ++k)
    ASSERT_TRUE(board.Create(Draft("t" + std::to_string(k))).ok());
  ASSERT_TRUE(board.Create(Draft("alice's")).ok());
  ASSERT_TRUE(board.Claim(kUpdaters + 1, "alice").ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kUpdaters; ++k) {
    threads.emplace_back([&, k] {
      TaskPatch steal;
      steal.owner = "bob";
      for (int i = 0; i < kRounds; ++i) {
        TaskPatch p;
        p.subject = "t" + std::to_string(k) + " round " + std::to_string(i);
        auto r = board.Update(k + 1, p, kLead);
        if (!r.ok() || r->subject != *p.subject) ++wrong;
        if (i % 10 == 0 && board.Update(kUpdaters + 1, steal, Caller{"bob", false}).ok()) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  Board fresh(dir.path(), Board::Options{.watch = false});
  for (int k = 0; k < kUpdaters; ++k) {
    EXPECT_EQ(fresh.Get(k + 1)->subject,
              "t" + std::to_string(k) + " round " + std::to_string(kRounds - 1));
  }
  EXPECT_EQ(fresh.Get(kUpdaters + 1)->owner, "alice");
}

// What ClaimNext(owner) must take, worked out from the task files alone:
// the lowest pending task assigned to `owner` none of whose blockers is
// open (pending, in progress, or not on the board), else the lowest such
// unowned one.
std::optional<int64_t> ClaimableFromFiles(const fs::path& dir, const std::string& owner) {
  Board fresh(dir, Board::Options{.watch = false});
  auto all = fresh.List(true);
  if (!all.ok()) return std::nullopt;
  std::map<int64_t, TaskStatus> status;
  for (const auto& t : *all) status[t.id] = t.status;
  auto ready = [&](const Task& t) {
    if (t.status != TaskStatus::kPending) return false;
    for (int64_t b : t.blocked_by) {
      auto it = status.find(b);
      if (it == status.end() ||
          (it->second != TaskStatus::kCompleted && it->second != TaskStatus::kDeleted)) {
        return false;
      }
    }
    return true;
  };
  for (const auto& t : *all) {
    if (t.owner == owner && ready(t)) return t.id;
  }
  for (const auto& t : *all) {
    if (t.owner.empty() && ready(t)) return t.id;
  }
  return std::nullopt;
}

// The claim candidates are kept as tasks change rather than found by a walk
// of the board. Whatever happens to the tasks — completed, reopened,
// deleted, assigned, blockers added, imported ahead of their blockers, files
// deleted behind the board's back — what a warm board (this instance or
// another) would claim is what the files say.
TEST(BoardTest, WhatIsClaimableFollowsEveryChangeOfTheGraph) {
  TempDir dir;
  Board board(dir.path());
  Board other(dir.path());
  std::mt19937 rng(20261125);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const TaskStatus kStatuses[] = {TaskStatus::kPending, TaskStatus::kInProgress,
                                  TaskStatus::kCompleted, TaskStatus::kDeleted};
  int checks = 0;
  for (int step = 0; step < 600; ++step) {
    Board& b = pick(3) == 0 ? other : board;
    auto list = b.List(true);
    ASSERT_TRUE(list.ok());
    const int n = static_cast<int>(list->size());
    auto some_id = [&] { return (*list)[static_cast<size_t>(pick(n))].id; };
    switch (n < 4 ? 0 : pick(8)) {
      case 0: {  // a task blocked by up to three others
        TaskDraft d = Draft("t" + std::to_string(step));
        for (int k = pick(4); n > 0 && k > 0; --k) d.blocked_by.push_back(some_id());
        (void)b.Create(d);
        break;
      }
      case 1:
      case 2: {  // a status changed, even back to pending
        TaskPatch p;
        p.status = kStatuses[pick(4)];
        (void)b.Update(some_id(), p, kLead);
        break;
      }
      case 3: {  // assigned, or the assignment taken back
        TaskPatch p;
        p.owner = pick(2) == 0 ? "" : (pick(2) == 0 ? "x" : "y");
        (void)b.Update(some_id(), p, kLead);
        break;
      }
      case 4: {  // a blocker added
        TaskPatch p;
        p.add_blocked_by.push_back(some_id());
        (void)b.Update(some_id(), p, kLead);
        break;
      }
      case 5: {  // claimed
        (void)b.ClaimNext(pick(2) == 0 ? "x" : "y");
        break;
      }
      case 6: {  // imported blocked by a task that comes only later, if at all
        const int64_t hwm = std::stoll(testing::ReadAll(dir.path() / ".highwatermark"));
        Task t;
        t.id = hwm + 2;
        t.subject = "imported";
        t.blocked_by = {hwm + 1};
        if (pick(2) == 0) t.blocked_by.push_back(some_id());
        ASSERT_TRUE(b.Import(t).ok());
        if (pick(2) == 0) {
          Task blocker;
          blocker.id = hwm + 1;
          blocker.subject = "its blocker";
          blocker.status = pick(2) == 0 ? TaskStatus::kCompleted : TaskStatus::kPending;
          ASSERT_TRUE(b.Import(blocker).ok());
        }
        break;
      }
      default: {  // a file deleted by hand: its dependents wait on nothing there
        fs::remove(dir.path() / TaskFileName(some_id()));
        break;
      }
    }
    for (const std::string owner : {"x", "y", "z"}) {
      auto want = ClaimableFromFiles(dir.path(), owner);
      for (Board* warm : {&board, &other}) {
        auto got = warm->NextClaimable(owner);
        ASSERT_TRUE(got.ok());
        ASSERT_EQ(*got, want) << "step " << step << ", owner " << owner;
        ++checks;
      }
    }
  }
  EXPECT_EQ(checks, 600 * 3 * 2);
}

// The overlap rule of file leases (DESIGN §30), the same in both stores.
TEST(LeaseTest, OverlapIsConservativeAndExactPathsMeetOnlyOnAFile) {
  auto o = [](std::vector<std::string> a, std::vector<std::string> b) { return LeasesOverlap(a, b); };
  EXPECT_TRUE(o({"src/a.cc"}, {"src/a.cc"}));
  EXPECT_FALSE(o({"src/a.cc"}, {"src/a.cc.bak"}));
  EXPECT_TRUE(o({"src"}, {"src/a.cc"}));  // a folder and a file in it
  EXPECT_FALSE(o({"src/a"}, {"src/ab"}));
  EXPECT_TRUE(o({"src/auth/**"}, {"src/auth/login.cc"}));
  EXPECT_TRUE(o({"src/*.h"}, {"src/*.cc"}));  // conservative: both under src/
  EXPECT_FALSE(o({"docs/*.md"}, {"src/**"}));
  EXPECT_TRUE(o({"**"}, {"anything"}));
  EXPECT_FALSE(o({}, {"src/a.cc"}));
}

}  // namespace
}  // namespace mates
