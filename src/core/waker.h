// Waker: the per-agent wake-up primitive. A generation counter under a mutex
// with a condition variable: a waiter remembers the generation it has seen,
// checks its condition, then waits for the generation to move. No notify is
// ever lost between the check and the wait, and waiting costs no CPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "core/clock.h"

namespace mates {

class Waker {
 public:
  Waker() = default;
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  uint64_t generation() const {
    std::lock_guard<std::mutex> lock(mu_);
    return generation_;
  }
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++generation_;
    }
    cv_.notify_all();
  }
  // Waits until the generation differs from `seen` or `deadline` passes;
  // returns the current generation (== seen on timeout).
  uint64_t WaitChange(uint64_t seen, const Deadline& deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    auto changed = [&] { return generation_ != seen; };
    if (deadline) {
      cv_.wait_until(lock, *deadline, changed);
    } else {
      cv_.wait(lock, changed);
    }
    return generation_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;  // guarded by mu_
};

}  // namespace mates
