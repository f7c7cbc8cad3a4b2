// ClaimLine: the idle claimers of one task board in this process, woken as
// many as there is work for instead of all of them at every change.
//
// An idle teammate used to watch the board itself: every task written woke
// every idle teammate, and each took the board lock to find nothing (100
// teammates, a level of 30 tasks: thousands of looks per level, all queued
// on one lock while the completions the next level waits for queue behind
// them). In a line, a change wakes one waiter (or tells one already looking
// to look again); a look that claimed says how many claimable tasks are
// left, and that many more are woken, plus whoever has a task assigned.
//
// Nothing is claimed on anyone's behalf: each teammate claims for itself,
// so a task can only be lost if a change is seen by nobody. The line keeps
// count: every change it passes to a waiter is either covered by a look
// that waiter begins after it, or passed on to another when it leaves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "core/waker.h"
#include "store/board.h"
#include "store/watcher.h"

namespace mates {

class ClaimLine : public std::enable_shared_from_this<ClaimLine> {
  struct Waiter {
    std::string name;
    std::shared_ptr<Waker> waker;
    uint64_t bumps = 0;     // changes passed to it
    uint64_t covered = 0;   // of those, the ones a finished look began after
    bool looking = false;   // woken, its look not finished
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

    // Read just before a look begins (a ClaimNext).
    uint64_t Bumps() const;
    // After the look that began at `bumps`: what it left, to wake as many.
    void Looked(uint64_t bumps, const Board::ClaimOutlook& outlook);

   private:
    friend class ClaimLine;
    Place(std::shared_ptr<ClaimLine> line, std::list<Waiter>::iterator it) : line_(std::move(line)), it_(it) {}
    std::shared_ptr<ClaimLine> line_;
    std::list<Waiter>::iterator it_;
  };

  // Watching `dir` (the board's folder) from now on.
  static Result<std::shared_ptr<ClaimLine>> Create(const fs::path& dir);
  ClaimLine(const ClaimLine&) = delete;
  ClaimLine& operator=(const ClaimLine&) = delete;

  // `waker` is notified when this waiter should look at the board.
  Place Join(const std::string& name, std::shared_ptr<Waker> waker);

  // Every waiter looks: the board is gone (a team deleted under its
  // teammates), which one look learns and all must.
  void WakeAll();

  // Waiters, and of those the ones looking now (tests).
  size_t waiting() const;
  size_t looking() const;

 private:
  ClaimLine() = default;
  // A board file changed: one waiter is to look (again).
  void OnChange();
  void OnChangeLocked();
  void WakeLocked(std::list<Waiter>::iterator it);
  void Leave(std::list<Waiter>::iterator it);

  mutable std::mutex mu_;
  std::list<Waiter> waiters_;  // guarded by mu_; front: longest since woken
  Watcher::Subscription sub_;  // set once, by Create
};

// The process's line for the board in `dir` (shared like SharedBoard).
Result<std::shared_ptr<ClaimLine>> SharedClaimLine(const fs::path& dir);

}  // namespace mates
