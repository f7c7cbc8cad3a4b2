// Wake-ups for the PostgreSQL store (DESIGN §13): one LISTEN connection per
// process, its notifications fanned out to the waiters of each key (an
// inbox, a board), the way the Watcher fans out inotify events for the file
// store.
//
// Each key has its own channel (a hash of the key: names may be longer than
// PostgreSQL's 63-byte identifiers), listened to while someone waits on it,
// so a process hears only what it waits for: 8 writers to one inbox wake
// its reader, not each other. A process that never waits opens no
// listening connection.
//
// A lost connection is not a lost wake-up: the listener reconnects with
// backoff (50 ms doubling to 2 s), listens again to every channel, and then
// wakes every waiter, each of which looks again (whatever was sent while
// nobody listened is found by that look). Waiters are also woken at the
// loss and at the first reconnect that fails, to look and learn that the
// store is away (a look at the loss itself may still have been answered
// by a server shutting down). Nor is a busy connection: a
// notification libpq read along with a LISTEN's answer wakes its waiters
// before the listener polls the socket again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/waker.h"
#include "pg/connection.h"

namespace mates::pg {

// What is waited on, and the channel it is notified on.
std::string InboxKey(const std::string& team, const std::string& member);
std::string BoardKey(const std::string& team);
std::string TeamKey(const std::string& team);  // its roster
std::string LogKey(const std::string& team);   // its message log
std::string ActivityKey(const std::string& team);  // its members' activity
std::string ForecastKey(const std::string& team);  // the conflicts its host forecasts
std::string JournalKey(const std::string& team);
std::string MergeKey(const std::string& team);     // its merge requests   // its members' journal copies
std::string ChannelOf(const std::string& key);

class Listener {
 public:
  explicit Listener(const Target& target) : target_(target) {}
  ~Listener();  // stops and joins the listening thread
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& o) noexcept : l_(o.l_), id_(o.id_) { o.l_ = nullptr; }
    Subscription& operator=(Subscription&& o) noexcept;
    ~Subscription();

   private:
    friend class Listener;
    Subscription(Listener* l, uint64_t id) : l_(l), id_(id) {}
    Listener* l_ = nullptr;
    uint64_t id_ = 0;
  };
  // From the return on, `waker` is notified for every notification on
  // `key`'s channel and at every reconnect. Waits (up to 10 s) until the
  // channel is listened to; Unavailable if the server cannot be reached
  // (nothing is subscribed then).
  Result<Subscription> Subscribe(const std::string& key, std::shared_ptr<Waker> waker);
  // The same with `notify` called instead, on the listening thread with
  // the listener's lock held: it must be quick, must not throw, and must
  // not subscribe or unsubscribe (a claim line's Changed). Its argument is
  // how many waiters the notifications read together ask to wake: the sum
  // of their payloads, each a count from 1 to kMaxWanted (any other
  // payload, and a reconnect, counts 1).
  using Notify = std::function<void(int64_t wanted)>;
  static constexpr int64_t kMaxWanted = 1000;
  Result<Subscription> Subscribe(const std::string& key, Notify notify);

  // A count that moves, for `key`'s channel, before any subscriber is told
  // of a notification on it or of a reconnect: whoever is woken by one
  // finds it moved already, whichever subscriber the listener told first.
  // (A cache of what a channel's notifications announce compares it.)
  uint64_t Told(const std::string& key);

  // Times the connection was re-established, and attempts that failed (tests).
  uint64_t reconnects() const { return reconnects_.load(); }
  uint64_t failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }

 private:
  void Run();
  // On the listening thread: connect and LISTEN to every wanted channel.
  Status ConnectLocked(std::unique_lock<std::mutex>& lock);
  void Signal();
  // Wakes the waiters on `channels` (notifications received).
  void WakeLocked(const std::vector<Connection::Notification>& received);
  void Unsubscribe(uint64_t id);

  Target target_;
  Connection conn_;  // the listening thread's only
  int stop_fd_ = -1;  // an eventfd: stop, or channels to (un)listen
  std::atomic<uint64_t> reconnects_{0};

  std::mutex mu_;
  std::condition_variable cv_;  // a channel became listened to, or a failure
  bool stop_ = false;           // guarded by mu_
  struct Entry {
    std::string channel;
    Notify notify;
  };
  std::map<uint64_t, Entry> subs_;        // guarded by mu_
  std::map<std::string, int> wanted_;     // channel -> subscribers; guarded by mu_
  std::map<std::string, uint64_t, std::less<>> told_;  // channel -> notifications; guarded by mu_
  uint64_t told_all_ = 0;                 // reconnects and losses told to all; guarded by mu_
  std::set<std::string> listening_;       // channels LISTENed on conn_; guarded by mu_
  uint64_t failures_ = 0;                 // connection attempts failed; guarded by mu_
  uint64_t next_id_ = 1;                  // guarded by mu_
  std::thread thread_;                    // started by the first Subscribe
};

}  // namespace mates::pg
