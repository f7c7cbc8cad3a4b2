// ChangeFeed: what tells the dashboard's pages that something changed
// (DESIGN §11). One thread of its own turns the Source's wake-ups (and,
// once a second, its Tick: liveness, watches made late) into a sequence
// number per kind; each open page holds an event stream (SSE) that waits
// on those numbers and names the kinds that moved, so the page refetches
// only those. At most kMaxStreams streams at once: a new one past that
// ends the oldest (a page closed lately is noticed only at its next write,
// up to a keep-alive later, and must not keep a page from opening; a page
// still open reconnects).
#pragma once

#include <httplib.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "core/waker.h"
#include "dashboard/source.h"

namespace mates::dashboard {

class ChangeFeed {
 public:
  static constexpr size_t kMaxStreams = 8;  // open event streams

  ChangeFeed();
  ~ChangeFeed();
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  // Subscribes to `source` (which outlives the feed) and starts the thread.
  void Start(Source& source);
  // Ends every stream and the thread.
  void Stop();
  // An event stream on `res`: `hello` first, then a `change` event naming
  // the kinds that moved, or a keep-alive comment.
  void Serve(httplib::Response& res);
  // Streams open now (tests).
  size_t open_streams();

 private:
  void Main(Source& source);

  KindWakers kind_wakers_;
  const std::shared_ptr<Waker> any_ = std::make_shared<Waker>();
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable changed_;  // seq_ moved, or stopping_
  std::array<uint64_t, kKinds> seq_{};  // guarded by mu_
  bool stopping_ = false;               // guarded by mu_
  uint64_t last_stream_ = 0;            // guarded by mu_: the newest stream's number
  std::deque<uint64_t> open_;           // guarded by mu_: open streams, oldest first
  std::set<uint64_t> ended_;            // guarded by mu_: streams told to end
};

}  // namespace mates::dashboard
