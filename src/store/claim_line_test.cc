#include "store/claim_line.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

// Idle claimers as a teammate's IdleWait runs them: in the line, a task
// handed over taken, else a look (ClaimNext) when woken, the task
// completed out of the line
// (which unblocks the next level), back in the line. No timeout on the
// waits: a change the line lost would leave tasks nobody claims, and the
// test's own deadline says so.
class Claimers {
 public:
  Claimers(std::shared_ptr<Board> board, std::shared_ptr<ClaimLine> line, int n)
      : board_(std::move(board)), line_(std::move(line)) {
    for (int i = 0; i < n; ++i) wakers_.push_back(std::make_shared<Waker>());
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { Run(i); });
  }
  ~Claimers() { Stop(); }

  void Stop() {
    done_ = true;
    for (auto& w : wakers_) w->Notify();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int64_t looks() const { return looks_.load(); }
  int64_t handed() const { return handed_.load(); }
  std::map<int64_t, std::string> claimed() {
    std::lock_guard<std::mutex> lock(mu_);
    return claimed_;
  }
  int doubles() const { return doubles_.load(); }

 private:
  void Run(int i) {
    const std::string name = "c" + std::to_string(i);
    const auto& waker = wakers_[i];
    while (!done_) {
      std::optional<Task> task;
      {
        ClaimLine::Place place = line_->Join(name, waker);
        while (!done_) {
          uint64_t seen = waker->generation();
          auto look = place.BeginLook();
          if (look.handed) {
            task = std::move(look.handed);
            ++handed_;
            break;
          }
          Board::ClaimOutlook outlook;
          auto r = board_->ClaimNext(name, &outlook);
          ++looks_;
          place.Looked(look.bumps, outlook);
          ASSERT_TRUE(r.ok()) << r.status().message();
          if (r->has_value()) {
            task = std::move(**r);
            break;
          }
          waker->WaitChange(seen, std::nullopt);
        }
      }
      if (!task) return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!claimed_.emplace(task->id, name).second) ++doubles_;
      }
      auto u = board_->Update(task->id, TaskPatch{TaskStatus::kCompleted}, Caller{name, false});
      ASSERT_TRUE(u.ok()) << u.status().message();
    }
  }

  std::shared_ptr<Board> board_;
  std::shared_ptr<ClaimLine> line_;
  std::vector<std::shared_ptr<Waker>> wakers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> done_{false};
  std::atomic<int64_t> looks_{0};
  std::atomic<int64_t> handed_{0};
  std::atomic<int> doubles_{0};
  std::mutex mu_;
  std::map<int64_t, std::string> claimed_;  // guarded by mu_
};

// Waits until every task is completed or `seconds` pass; the ids left.
std::vector<int64_t> WaitAllCompleted(Board& board, const fs::path& dir, double seconds) {
  auto waker = std::make_shared<Waker>();
  auto sub = testing::TestEnv().watcher.Subscribe(dir, "*.json", waker);
  Deadline deadline = DeadlineIn(seconds);
  for (;;) {
    uint64_t g = waker->generation();
    std::vector<int64_t> left;
    auto tasks = board.List(false);
    if (tasks.ok()) {
      for (const auto& t : *tasks) {
        if (t.status != TaskStatus::kCompleted) left.push_back(t.id);
      }
    }
    if (left.empty() || Expired(deadline)) return left;
    waker->WaitChange(g, deadline);
  }
}

// Until `n` claimers wait in the line and none is looking: each looked
// once, found nothing and rests. (No event says "settled": looked at again
// every millisecond.)
void WaitSettled(const ClaimLine& line, size_t n) {
  auto waker = std::make_shared<Waker>();
  Deadline deadline = DeadlineIn(10);
  while (!(line.waiting() == n && line.looking() == 0)) {
    ASSERT_FALSE(Expired(deadline)) << "the claimers never settled: " << line.waiting() << " waiting, "
                                    << line.looking() << " looking";
    waker->WaitChange(waker->generation(), DeadlineIn(0.001));
  }
}

// A task the lead holds in progress, for others to wait behind.
Result<Task> HeldGate(Board& board) {
  auto gate = board.Create(TaskDraft{"gate"});
  if (!gate.ok()) return gate;
  return board.Update(gate->id, TaskPatch{TaskStatus::kInProgress, std::string("lead")}, Caller{"lead", true});
}

// The makespan shape: levels of tasks each blocked by the whole level
// before, more claimers than a level holds. Every task is claimed once, and
// the claimers look a few times per task, not once per claimer per change.
TEST(ClaimLineTest, ManyClaimersLoseNoTaskAndDoNotStampede) {
  TempDir dir;
  fs::path tasks_dir = dir.path() / "tasks";
  auto board = testing::TestEnv().folders.BoardOf(tasks_dir);
  // The first level waits behind a gate the lead holds, so that it opens
  // with every claimer resting in the line.
  auto gate = HeldGate(*board);
  ASSERT_TRUE(gate.ok());
  const int kLevels = 12, kWidth = 10, kClaimers = 24;
  for (int level = 0; level < kLevels; ++level) {
    for (int k = 0; k < kWidth; ++k) {
      TaskDraft d;
      d.subject = "t";
      if (level == 0) d.blocked_by.push_back(gate->id);
      for (int j = (level - 1) * kWidth; level > 0 && j < level * kWidth; ++j) d.blocked_by.push_back(gate->id + 1 + j);
      ASSERT_TRUE(board->Create(d).ok());
    }
  }
  auto line = testing::TestEnv().folders.LineOf(tasks_dir);
  ASSERT_TRUE(line.ok()) << line.status().message();
  Claimers claimers(board, *line, kClaimers);
  ASSERT_NO_FATAL_FAILURE(WaitSettled(**line, kClaimers));
  ASSERT_TRUE(board->Update(gate->id, TaskPatch{TaskStatus::kCompleted}, Caller{"lead", true}).ok());
  std::vector<int64_t> left = WaitAllCompleted(*board, tasks_dir, 60);
  claimers.Stop();
  EXPECT_TRUE(left.empty()) << left.size() << " tasks never completed, the first #" << left.front();
  EXPECT_EQ(claimers.claimed().size(), static_cast<size_t>(kLevels * kWidth));
  EXPECT_EQ(claimers.doubles(), 0);
  // Each task written twice (claim, completion) and each change looked at by
  // every idle claimer would be thousands of looks; the line keeps it to a
  // handful per task.
  const int64_t tasks = kLevels * kWidth;
  EXPECT_LE(claimers.looks(), 6 * tasks) << "looks per task: " << static_cast<double>(claimers.looks()) / tasks;
  // A level's tasks are handed out by the completion that unblocked them
  // (claimed for a waiting claimer, not by it). The gate's completion opens
  // the first level with all claimers resting, so it hands out all ten;
  // how many of the later levels are handed out depends on who is waiting
  // when each opens, which the scheduler decides.
  EXPECT_GE(claimers.handed(), kWidth) << "handed " << claimers.handed() << " of " << tasks;
  EXPECT_EQ((*line)->waiting(), 0u);
}

// A task the lead assigned to one claimer wakes that claimer, whoever is
// at the front of the line; tasks for nobody in particular go to the others.
TEST(ClaimLineTest, AnAssignedTaskReachesItsOwner) {
  TempDir dir;
  fs::path tasks_dir = dir.path() / "tasks";
  auto board = testing::TestEnv().folders.BoardOf(tasks_dir);
  // A gate the assigned tasks wait behind (held by the lead before any
  // claimer is there: a task is created unowned).
  auto gate = HeldGate(*board);
  ASSERT_TRUE(gate.ok());
  auto line = testing::TestEnv().folders.LineOf(tasks_dir);
  ASSERT_TRUE(line.ok());
  Claimers claimers(board, *line, 6);
  ASSERT_NO_FATAL_FAILURE(WaitSettled(**line, 6));
  // Held back by the gate until assigned, then let go at once: one change,
  // twenty tasks, one owner.
  for (int i = 0; i < 20; ++i) {
    TaskDraft d{"for c5"};
    d.blocked_by = {gate->id};
    auto t = board->Create(d);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(board->Update(t->id, TaskPatch{std::nullopt, std::string("c5")}, Caller{"lead", true}).ok());
  }
  ASSERT_TRUE(board->Update(gate->id, TaskPatch{TaskStatus::kCompleted}, Caller{"lead", true}).ok());
  std::vector<int64_t> left = WaitAllCompleted(*board, tasks_dir, 30);
  claimers.Stop();
  EXPECT_TRUE(left.empty()) << left.size() << " assigned tasks never completed";
  auto claimed = claimers.claimed();
  EXPECT_EQ(claimed.size(), 20u);
  for (const auto& [id, who] : claimed) EXPECT_EQ(who, "c5") << "task #" << id;
}

// The bookkeeping, one step at a time (changes made with NotifyLocal, as a
// board write in this process makes them).
struct LineSteps : ::testing::Test {
  void SetUp() override {
    fs::create_directories(dir.path() / "tasks");
    auto l = testing::TestEnv().folders.LineOf(dir.path() / "tasks");
    ASSERT_TRUE(l.ok());
    line = *l;
  }
  void Change() { testing::TestEnv().watcher.NotifyLocal(dir.path() / "tasks", "1.json"); }
  TempDir dir;
  std::shared_ptr<ClaimLine> line;
  std::shared_ptr<Waker> wa = std::make_shared<Waker>(), wb = std::make_shared<Waker>();
};

TEST_F(LineSteps, AChangeWakesOneWaiterNotAll) {
  ClaimLine::Place a = line->Join("a", wa);
  ClaimLine::Place b = line->Join("b", wb);
  uint64_t ga = wa->generation(), gb = wb->generation();
  Change();
  EXPECT_NE(wa->generation(), ga);  // the front of the line
  EXPECT_EQ(wb->generation(), gb);
  EXPECT_EQ(line->looking(), 1u);
}

// A change while the one woken is already looking: its look may have
// begun before the change, so it must look again.
TEST_F(LineSteps, AChangeDuringALookMakesItLookAgain) {
  ClaimLine::Place a = line->Join("a", wa);
  ClaimLine::Place b = line->Join("b", wb);
  Change();  // a looks
  uint64_t seen = wa->generation(), gb = wb->generation();
  uint64_t bumps = a.BeginLook().bumps;
  Change();  // during a's look
  a.Looked(bumps, {});
  EXPECT_NE(wa->generation(), seen);  // a's wait returns at once: it looks again
  EXPECT_EQ(wb->generation(), gb);
  EXPECT_EQ(line->looking(), 1u);
  bumps = a.BeginLook().bumps;
  a.Looked(bumps, {});  // nothing came during this one
  EXPECT_EQ(line->looking(), 0u);
}

// One woken that leaves without a look covering the change passes it on.
TEST_F(LineSteps, LeavingWithAChangeUnlookedPassesItOn) {
  ClaimLine::Place b = line->Join("b", wb);
  uint64_t gb;
  {
    ClaimLine::Place a = line->Join("a", wa);
    Change();  // b, the front, looks...
    uint64_t bumps = b.BeginLook().bumps;
    b.Looked(bumps, {});  // ...and finds nothing: b rests
    Change();  // a is woken
    gb = wb->generation();
  }  // a goes (a message came, say) without looking
  EXPECT_NE(wb->generation(), gb);
  EXPECT_EQ(line->looking(), 1u);
}

// The board gone: the one that learns it wakes everyone.
TEST_F(LineSteps, WakeAllWakesEveryWaiter) {
  ClaimLine::Place a = line->Join("a", wa);
  ClaimLine::Place b = line->Join("b", wb);
  uint64_t ga = wa->generation(), gb = wb->generation();
  line->WakeAll();
  EXPECT_NE(wa->generation(), ga);
  EXPECT_NE(wb->generation(), gb);
}

// Claimers waiting in the line when the board's folder goes (a team
// deleted from another process): every one of them finds out and goes.
TEST(ClaimLineTest, EveryWaiterLearnsTheBoardIsGone) {
  TempDir dir;
  fs::path tasks_dir = dir.path() / "tasks";
  auto board = testing::TestEnv().folders.BoardOf(tasks_dir);
  auto line = testing::TestEnv().folders.LineOf(tasks_dir);
  ASSERT_TRUE(line.ok());
  std::atomic<int> looked{0}, gone{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] {
      auto waker = std::make_shared<Waker>();
      ClaimLine::Place place = (*line)->Join("c" + std::to_string(i), waker);
      for (;;) {
        uint64_t seen = waker->generation();
        uint64_t bumps = place.BeginLook().bumps;
        Board::ClaimOutlook outlook;
        auto r = board->ClaimNext("c" + std::to_string(i), &outlook);
        if (!r.ok() && r.status().code() == StatusCode::kNotFound) {
          (*line)->WakeAll();  // as a teammate does
          ++gone;
          return;
        }
        place.Looked(bumps, outlook);
        ++looked;
        waker->WaitChange(seen, std::nullopt);
      }
    });
  }
  // Every claimer has looked once and rests (no event says so: looked at
  // again every millisecond).
  auto waker = std::make_shared<Waker>();
  Deadline settle = DeadlineIn(10);
  while (!(looked.load() >= 5 && (*line)->looking() == 0)) {
    ASSERT_FALSE(Expired(settle));
    waker->WaitChange(waker->generation(), DeadlineIn(0.001));
  }
  // Moved away, as a team's archive does (a removal would not be seen
  // while the board holds the folder open).
  fs::rename(tasks_dir, dir.path() / "archived");
  for (auto& t : threads) t.join();  // a claimer never told would hang here
  EXPECT_EQ(gone.load(), 5);
}

// A look that claimed and saw three more claimable wakes three more.
TEST_F(LineSteps, ALookThatSawMoreWakesAsManyMore) {
  std::vector<std::shared_ptr<Waker>> w;
  std::vector<ClaimLine::Place> places;
  for (int i = 0; i < 6; ++i) {
    w.push_back(std::make_shared<Waker>());
    places.push_back(line->Join("w" + std::to_string(i), w.back()));
  }
  Change();  // w0 looks
  std::vector<uint64_t> g;
  for (auto& x : w) g.push_back(x->generation());
  Board::ClaimOutlook outlook;
  outlook.unowned = 3;
  uint64_t bumps = places[0].BeginLook().bumps;
  places[0].Looked(bumps, outlook);
  int woken = 0;
  for (size_t i = 1; i < w.size(); ++i) woken += w[i]->generation() != g[i] ? 1 : 0;
  EXPECT_EQ(woken, 3);
  EXPECT_EQ(line->looking(), 3u);
}

// Waiters settled in the line (each looked, found nothing, rests).
void Settle(ClaimLine& line, std::vector<ClaimLine::Place>& places) {
  for (auto& p : places) p.Looked(p.BeginLook().bumps, {});
  ASSERT_EQ(line.looking(), 0u);
}

// A completion that unblocks tasks hands them to the idle waiters in its
// own lock hold: each is claimed for one waiter, who finds it at its next
// BeginLook without looking at the board, counted busy meanwhile.
TEST(ClaimLineTest, ACompletionHandsTheTasksItUnblocksToIdleWaiters) {
  TempDir dir;
  fs::path tasks_dir = dir.path() / "tasks";
  auto board = testing::TestEnv().folders.BoardOf(tasks_dir);
  auto gate = HeldGate(*board);
  ASSERT_TRUE(gate.ok());
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    TaskDraft d{"after the gate"};
    d.blocked_by = {gate->id};
    ids.push_back(board->Create(d)->id);
  }
  auto line = testing::TestEnv().folders.LineOf(tasks_dir);
  ASSERT_TRUE(line.ok());
  const int kWaiters = 4;
  std::vector<std::shared_ptr<Waker>> wakers;
  std::vector<std::atomic<bool>> busy(kWaiters);
  std::vector<ClaimLine::Place> places;
  for (int i = 0; i < kWaiters; ++i) {
    wakers.push_back(std::make_shared<Waker>());
    places.push_back((*line)->Join("w" + std::to_string(i), wakers.back(), &busy[i]));
  }
  Settle(**line, places);
  ASSERT_TRUE(board->Update(gate->id, TaskPatch{TaskStatus::kCompleted}, Caller{"lead", true}).ok());
  // Handed before the completion returned: three waiters busy, one not.
  std::map<int64_t, std::string> owner;
  int busy_count = 0;
  for (int i = 0; i < kWaiters; ++i) {
    busy_count += busy[i].load() ? 1 : 0;
    auto look = places[i].BeginLook();
    if (look.handed) {
      EXPECT_TRUE(busy[i].load());
      owner[look.handed->id] = "w" + std::to_string(i);
      EXPECT_EQ(look.handed->status, TaskStatus::kInProgress);
    } else {
      places[i].Looked(look.bumps, {});
    }
  }
  EXPECT_EQ(busy_count, 3);
  ASSERT_EQ(owner.size(), 3u);
  for (int64_t id : ids) {
    auto t = board->Get(id);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->status, TaskStatus::kInProgress);
    EXPECT_EQ(t->owner, owner[id]) << "task #" << id;
  }
  // The three took theirs and left the line with them.
  EXPECT_EQ((*line)->waiting(), 1u);
}

// A waiter that goes without taking what was handed to it (stopped, say)
// gives it back: pending and unowned again, not in progress under nobody.
TEST(ClaimLineTest, AHandedTaskNotTakenGoesBackToTheBoard) {
  TempDir dir;
  fs::path tasks_dir = dir.path() / "tasks";
  auto board = testing::TestEnv().folders.BoardOf(tasks_dir);
  auto line = testing::TestEnv().folders.LineOf(tasks_dir);
  ASSERT_TRUE(line.ok());
  auto waker = std::make_shared<Waker>();
  int64_t id = 0;
  {
    std::vector<ClaimLine::Place> places;
    places.push_back((*line)->Join("w", waker));
    Settle(**line, places);
    uint64_t g = waker->generation();
    auto t = board->Create(TaskDraft{"work"});
    ASSERT_TRUE(t.ok());
    id = t->id;
    EXPECT_NE(waker->generation(), g);  // told its task is there
    EXPECT_EQ(board->Get(id)->owner, "w");
  }
  auto t = board->Get(id);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->status, TaskStatus::kPending);
  EXPECT_EQ(t->owner, "");
  EXPECT_EQ((*line)->waiting(), 0u);
}

// A line told of its board's changes (a PostgreSQL store's): a change that
// says it made work for three wakes three, counting one already looking,
// and a task handed over and not taken goes back through its update.
TEST(ClaimLineTest, ALineToldOfChangesWakesAsManyAsTheChangeSays) {
  std::vector<std::pair<int64_t, TaskPatch>> given_back;
  auto line = ClaimLine::Told([&](int64_t id, const TaskPatch& patch, const Caller& caller) -> Result<Task> {
    EXPECT_EQ(caller.name, "w0");
    given_back.emplace_back(id, patch);
    Task t;
    t.id = id;
    return t;
  });
  std::vector<std::shared_ptr<Waker>> w;
  std::vector<ClaimLine::Place> places;
  for (int i = 0; i < 5; ++i) {
    w.push_back(std::make_shared<Waker>());
    places.push_back(line->Join("w" + std::to_string(i), w.back()));
  }
  Settle(*line, places);
  auto woken = [&](const std::vector<uint64_t>& g) {
    int n = 0;
    for (size_t i = 0; i < w.size(); ++i) n += w[i]->generation() != g[i] ? 1 : 0;
    return n;
  };
  auto generations = [&] {
    std::vector<uint64_t> g;
    for (auto& x : w) g.push_back(x->generation());
    return g;
  };
  auto g = generations();
  line->Changed();
  EXPECT_EQ(woken(g), 1);
  EXPECT_EQ(line->looking(), 1u);
  g = generations();
  line->Changed(3);
  EXPECT_EQ(woken(g), 3) << "the one looking looks again, two more";
  EXPECT_EQ(line->looking(), 3u);
  g = generations();
  line->Changed(100);
  EXPECT_EQ(woken(g), 3) << "the first of those looking, and the two not looking yet";
  EXPECT_EQ(line->looking(), 5u) << "no more than there are";
  Settle(*line, places);
  // Handed a task (as a hand-out would), w0 goes without taking it.
  ASSERT_EQ(line->Reserve(1, {}), std::vector<std::string>{"w0"});
  Task t;
  t.id = 7;
  t.owner = "w0";
  t.status = TaskStatus::kInProgress;
  line->Hand("w0", t, false);
  places.erase(places.begin());
  ASSERT_EQ(given_back.size(), 1u);
  EXPECT_EQ(given_back[0].first, 7);
  EXPECT_EQ(given_back[0].second.status, TaskStatus::kPending);
  EXPECT_EQ(given_back[0].second.owner, std::optional<std::string>(""));
}

// Places leave the line when they go, moved or not.
TEST(ClaimLineTest, PlacesLeaveWhenDestroyedOrMoved) {
  TempDir dir;
  fs::path tasks_dir = dir.path() / "tasks";
  fs::create_directories(tasks_dir);
  auto line = testing::TestEnv().folders.LineOf(tasks_dir);
  ASSERT_TRUE(line.ok());
  auto w = std::make_shared<Waker>();
  {
    ClaimLine::Place a = (*line)->Join("a", w);
    ClaimLine::Place b = (*line)->Join("b", w);
    EXPECT_EQ((*line)->waiting(), 2u);
    ClaimLine::Place c = std::move(a);
    EXPECT_EQ((*line)->waiting(), 2u);
    b = std::move(c);
    EXPECT_EQ((*line)->waiting(), 1u);
  }
  EXPECT_EQ((*line)->waiting(), 0u);
  // No line for a folder that is not there.
  EXPECT_FALSE(testing::TestEnv().folders.LineOf(dir.path() / "missing").ok());
}

}  // namespace
}  // namespace mates
