// ClaimLine: the idle claimers of one task board in this process. Tasks
// are handed to them in the lock hold of the change that made the tasks
// claimable; a change the line only hears about (another process wrote
// it) wakes one of them to look.
//
// An idle teammate used to watch the board itself: every task written woke
// every idle teammate, and each took the board lock to find nothing (100
// teammates, a level of 30 tasks: thousands of looks per level, all queued
// on one lock while the completions the next level waits for queue behind
// them). Then a change woke one waiter, whose look woke as many more as it
// left tasks: still one lock hold, one wake-up and one refresh per claim,
// in a chain. Now the line is the board's Claimers (TaskFolders sets
// it): a write in this process that leaves tasks claimable reserves as many
// idle waiters, claims one task for each in the same lock hold, and hands
// each its task with its wake-up.
//
// No task is lost on the way. A reserved waiter cannot begin a look or
// leave until its reservation ends (the board ends it within the lock hold
// that made it); a task handed over is taken by the next BeginLook or by
// Leave, and one left at a Place's end is given back to the board. And the
// line keeps count of changes from outside: every change it passes to a
// waiter is covered by a look (or a hand-out) that began after it, or
// passed on to another when that waiter leaves.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/waker.h"
#include "store/board.h"
#include "store/watcher.h"

namespace mates {

class ClaimLine : public Board::Claimers, public std::enable_shared_from_this<ClaimLine> {
  struct Waiter {
    std::string name;
    std::shared_ptr<Waker> waker;
    std::atomic<bool>* busy = nullptr;  // set while a task is on its way to it
    uint64_t bumps = 0;     // changes passed to it
    uint64_t covered = 0;   // of those, the ones a finished look began after
    bool looking = false;   // woken, its look not finished
    bool in_look = false;   // between BeginLook and Looked
    bool reserved = false;  // a hand-out for it is under way
    uint64_t reserved_at = 0;    // its bumps then
    std::optional<Task> handed;  // claimed for it, not yet taken
  };

 public:
  // A place in the line, left when destroyed.
  class Place {
   public:
    Place() = default;
    Place(Place&& o) noexcept : line_(std::move(o.line_)), it_(o.it_) { o.line_.reset(); }
    Place& operator=(Place&& o) noexcept;
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;
    ~Place();

    // Before a look (a ClaimNext): a task handed to this waiter, to take
    // instead of looking (the place is left with it); else the count the
    // look begins at. Waits out a hand-out under way.
    struct Look {
      std::optional<Task> handed;
      uint64_t bumps = 0;
      int64_t others = 0;  // the other waiters in the line: as many tasks are worth counting
    };
    Look BeginLook();
    // After the look that began at `bumps`: what it left, to wake as many.
    void Looked(uint64_t bumps, const Board::ClaimOutlook& outlook);
    // Leaves the line now; a task handed over meanwhile is the caller's,
    // to take or to give back (GiveBack). Waits out a hand-out under way.
    std::optional<Task> Leave();

   private:
    friend class ClaimLine;
    void LeaveGivingBack();
    Place(std::shared_ptr<ClaimLine> line, std::list<Waiter>::iterator it) : line_(std::move(line)), it_(it) {}
    std::shared_ptr<ClaimLine> line_;
    std::list<Waiter>::iterator it_;
  };

  // The line of `board`, hearing of its folder's changes from `watcher`
  // from now on.
  static Result<std::shared_ptr<ClaimLine>> Create(std::shared_ptr<Board> board, Watcher& watcher);
  // A line whose board is elsewhere (a PostgreSQL store's): its owner
  // tells it of every change that may leave a task claimable (Changed),
  // and a task given back goes through `update`.
  using Update = std::function<Result<Task>(int64_t id, const TaskPatch& patch, const Caller& caller)>;
  static std::shared_ptr<ClaimLine> Told(Update update);
  // The board changed: one waiter is to look (again), and as many as
  // `wanted` in all if the change says it made that much work (a count a
  // look's outlook then corrects: more looks if it was short, none if not).
  void Changed(int64_t wanted = 1);
  ClaimLine(const ClaimLine&) = delete;
  ClaimLine& operator=(const ClaimLine&) = delete;

  // `waker` is notified when this waiter should look at the board, or has
  // a task handed to it. `busy`, if given, is set while a task is on its
  // way to it (reserved, handed, not yet taken): whoever asks whether the
  // team is idle counts it as working. The waiter clears it.
  Place Join(const std::string& name, std::shared_ptr<Waker> waker, std::atomic<bool>* busy = nullptr);

  // Board::Claimers.
  std::vector<std::string> Reserve(int64_t unowned, const std::vector<std::string>& assigned) override;
  void Hand(const std::string& name, std::optional<Task> task, bool assigned) override;

  // A handed task its claimer will not work on goes back on the board:
  // pending, and unowned unless it had been assigned to the claimer (the
  // lead's assignment stands).
  void GiveBack(const std::string& name, const Task& task);

  // Every waiter looks: the board is gone (a team deleted under its
  // teammates), which one look learns and all must.
  void WakeAll();

  // Waiters, and of those the ones looking now (tests).
  size_t waiting() const;
  size_t looking() const;

 private:
  // The wakers to notify once mu_ is let go, declared before the lock so
  // that it ends first. Notified under mu_, a waiter woke, took the CPU
  // from whoever held mu_ (a hand-out, in the middle of a level's claims)
  // and slept again on mu_: the hand-out and every claim after it waited
  // for the CPU back, ~0.2 ms a level on two cores.
  class Wakes {
   public:
    Wakes() = default;
    Wakes(const Wakes&) = delete;
    Wakes& operator=(const Wakes&) = delete;
    ~Wakes() { Notify(); }
    void Add(std::shared_ptr<Waker> w) { wakers_.push_back(std::move(w)); }

   private:
    void Notify();
    std::vector<std::shared_ptr<Waker>> wakers_;
  };

  explicit ClaimLine(Update update) : update_(std::move(update)) {}
  void OnChange();
  void OnChangeLocked(Wakes* wakes);
  void WakeLocked(std::list<Waiter>::iterator it, Wakes* wakes);
  // Wakes as many waiters as `unowned` tasks need (counting those looking
  // already) and those with a task `assigned`, none of them `except`.
  void WakeForLocked(int64_t unowned, const std::vector<std::string>& assigned, std::list<Waiter>::iterator except,
                     Wakes* wakes);
  // Leaves; a handed task not taken is returned.
  std::optional<Task> Leave(std::list<Waiter>::iterator it);
  std::optional<Task> LeaveLocked(std::list<Waiter>::iterator it, Wakes* wakes);
  // Until `it` has no hand-out under way; `lock` holds mu_.
  void AwaitReservationLocked(std::unique_lock<std::mutex>& lock, std::list<Waiter>::iterator it);

  const Update update_;
  mutable std::mutex mu_;
  std::condition_variable reservations_;  // a reservation ended
  std::list<Waiter> waiters_;  // guarded by mu_; front: longest since woken
  size_t handing_ = 0;         // guarded by mu_; reservations under way
  std::set<int64_t> handed_assigned_;  // guarded by mu_; handed, had been assigned to their claimer
  Watcher::Subscription sub_;  // set once, by Create (a file board's line)
};

}  // namespace mates
