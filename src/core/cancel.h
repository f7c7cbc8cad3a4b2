// CancelToken: stops a call from another thread (DESIGN §10, STYLE "time
// and waiting"). Whoever waits on it is woken at once: a condition
// variable for threads that wait (retry backoff, idle waits), an eventfd
// for those that poll file descriptors (a child's pipes, see Subprocess).
//
// Two strengths: Cancel() stops what runs now (Ctrl-C on one turn) and is
// cleared by Reset() before the next turn; Cancel(kForGood) (an agent being
// stopped) survives Reset(), so a stop that lands just before a new turn
// starts is never erased by it.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/clock.h"

namespace mates {

class CancelToken {
 public:
  enum Strength { kThisCall, kForGood };

  CancelToken() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~CancelToken() {
    if (fd_ >= 0) ::close(fd_);
  }
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  void Cancel(Strength strength = kThisCall) {
    std::vector<CancelToken*> children;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (strength == kForGood) for_good_ = true;
      cancelled_.store(true);
      children = children_;
      // Woken under the lock: a child cannot unlink and go away meanwhile.
      for (CancelToken* c : children) c->Cancel();
    }
    cv_.notify_all();
    if (fd_ >= 0) {
      uint64_t one = 1;
      (void)!::write(fd_, &one, sizeof one);
    }
  }

  // While linked, cancelling this token cancels `child` too (a subagent's
  // own token under its parent's); a child linked to a cancelled token is
  // cancelled at once. Unlink before `child` goes away.
  void Link(CancelToken* child) {
    std::lock_guard<std::mutex> lock(mu_);
    children_.push_back(child);
    if (cancelled_.load()) child->Cancel();
  }
  void Unlink(CancelToken* child) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(children_, child);
  }
  // Clears a kThisCall cancellation; a kForGood one stays.
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    if (for_good_) return;
    cancelled_.store(false);
    if (fd_ >= 0) {
      uint64_t n;
      (void)!::read(fd_, &n, sizeof n);
    }
  }
  bool cancelled() const { return cancelled_.load(); }
  bool for_good() const {
    std::lock_guard<std::mutex> lock(mu_);
    return for_good_;
  }
  const std::atomic<bool>* flag() const { return &cancelled_; }
  // Readable (POLLIN) once cancelled, until Reset(); -1 if none could be made.
  int wake_fd() const { return fd_; }
  // Waits `seconds`; true if cancelled meanwhile.
  bool WaitFor(double seconds) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return cancelled_.load(); });
  }
  // Waits until `until`, to within tens of microseconds (SleepUntilOnTime);
  // true if cancelled meanwhile.
  bool WaitUntilOnTime(SteadyClock::time_point until) const {
    std::unique_lock<std::mutex> lock(mu_);
    auto cancelled = [&] { return cancelled_.load(); };
    if (cv_.wait_until(lock, until - kFineWait, cancelled)) return true;
    FineTimerSlack fine;
    return cv_.wait_until(lock, until, cancelled);
  }

 private:
  const int fd_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool for_good_ = false;  // guarded by mu_
  std::vector<CancelToken*> children_;  // guarded by mu_
};

// Links `child` under `parent` for its lifetime.
class CancelLink {
 public:
  CancelLink(CancelToken* parent, CancelToken* child) : parent_(parent), child_(child) {
    if (parent_ != nullptr) parent_->Link(child_);
  }
  ~CancelLink() {
    if (parent_ != nullptr) parent_->Unlink(child_);
  }
  CancelLink(const CancelLink&) = delete;
  CancelLink& operator=(const CancelLink&) = delete;

 private:
  CancelToken* parent_;
  CancelToken* child_;
};

}  // namespace mates
