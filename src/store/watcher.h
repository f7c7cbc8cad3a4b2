// Watcher: turns changes to files under W into wake-ups (DESIGN §1).
//
// One per process (Env::watcher). With inotify (the default) it watches folders, not files
// (an inbox is renamed away by every drain, so a watch on the file would go
// stale), reacts to close-after-write and rename-into, and wakes every
// subscriber whose file name matches; on queue overflow it wakes everyone so
// they rescan. Where inotify is unavailable (NFS, or MATES_WATCH=poll) a
// thread compares stat() signatures every interval (default 1 s, the seeds'
// period; MATES_POLL_MS). Sends inside this process call NotifyLocal and skip
// the kernel round trip. Waiting costs no CPU in either mode.
#pragma once

#include <limits.h>
#include <sys/inotify.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/files.h"
#include "core/status.h"
#include "core/waker.h"

namespace mates {

// After a read() of `n` bytes from an inotify descriptor into a buffer of
// `size`: whether the queue was empty (the kernel hands out every queued
// event that fits, so a read that left room for the largest took them all
// and another read would only say EAGAIN).
inline bool InotifyDrained(ssize_t n, size_t size) {
  return n <= 0 || static_cast<size_t>(n) + sizeof(struct inotify_event) + NAME_MAX + 1 <= size;
}

class Watcher {
 public:
  enum class Mode { kInotify, kPoll };
  struct Options {
    Mode mode = Mode::kInotify;
    std::chrono::milliseconds poll_interval{1000};
  };

  // RAII handle: the waker stops being woken when it is destroyed.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Watcher* w, uint64_t id) : watcher_(w), id_(id) {}
    Subscription(Subscription&& o) noexcept : watcher_(o.watcher_), id_(o.id_) { o.watcher_ = nullptr; }
    Subscription& operator=(Subscription&& o) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription() { Reset(); }
    void Reset();
    // Whether it is subscribed (a failed Subscribe leaves it empty).
    bool active() const { return watcher_ != nullptr; }

   private:
    Watcher* watcher_ = nullptr;
    uint64_t id_ = 0;
  };

  // As MATES_WATCH ("poll") and MATES_POLL_MS say: a process's watcher
  // (Env::watcher) is made with these.
  static Options OptionsFromVariables();

  explicit Watcher(Options options);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Wakes `waker` when a file in `dir` whose name matches `pattern` is
  // written or renamed in. Pattern: an exact name, "*suffix", or "" (any).
  // The folder must exist.
  Result<Subscription> Subscribe(const fs::path& dir, std::string pattern,
                                 std::shared_ptr<Waker> waker);
  // The same, calling `call` instead: on the watcher's thread, or on the
  // thread of a NotifyLocal, possibly just after the subscription ended. It
  // must be quick and must not take a lock held around a NotifyLocal.
  Result<Subscription> Subscribe(const fs::path& dir, std::string pattern,
                                 std::function<void()> call);
  // Wakes the subscribers of dir/name now (a change made by this process).
  void NotifyLocal(const fs::path& dir, std::string_view name);

  Mode mode() const { return mode_; }

 private:
  // Whom a change wakes: a waker or a call.
  struct Target {
    std::shared_ptr<Waker> waker;
    std::shared_ptr<const std::function<void()>> call;
    void Fire() const;
  };
  struct Sub {
    std::string dir;
    std::string pattern;
    Target target;
    uint64_t poll_signature = 0;  // poll mode only
  };
  Result<Subscription> Add(const fs::path& dir, std::string pattern, Target target);
  struct Dir {
    int wd = -1;
    std::vector<uint64_t> subs;
  };

  // The thread, once; mu_ held.
  void StartLocked();
  void Unsubscribe(uint64_t id);
  void InotifyLoop();
  void PollLoop();
  static bool Matches(const std::string& pattern, std::string_view name);
  static uint64_t Signature(const std::string& dir, const std::string& pattern);

  // Constant after construction.
  Mode mode_;
  std::chrono::milliseconds poll_interval_;
  ScopedFd inotify_fd_;
  ScopedFd stop_fd_;  // eventfd that ends InotifyLoop

  // State below is protected by mu_.
  std::mutex mu_;
  std::condition_variable stop_cv_;  // ends PollLoop
  bool stopping_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Sub> subs_;
  std::unordered_map<std::string, Dir> dirs_;
  std::unordered_map<int, std::string> wd_dirs_;

  std::thread thread_;  // guarded by mu_ until joined (the destructor)
};

}  // namespace mates
