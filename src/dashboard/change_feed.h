// ChangeFeed: what tells the dashboard's pages that something changed
// (DESIGN §11). One thread of its own turns the Source's wake-ups (and,
// once a second, its Tick: liveness, watches made late) into a sequence
// number per kind; each open page holds an event stream (SSE) that waits
// on those numbers and names the kinds that moved, so the page refetches
// only those. At most kMaxStreams streams at once; a closed page frees
// its own.
#pragma once

#include <httplib.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
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
  // the kinds that moved, or a keep-alive comment; 503 past kMaxStreams.
  void Serve(httplib::Response& res);

 private:
  void Main(Source& source);

  KindWakers kind_wakers_;
  const std::shared_ptr<Waker> any_ = std::make_shared<Waker>();
  std::atomic<size_t> streams_{0};
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable changed_;  // seq_ moved, or stopping_
  std::array<uint64_t, kKinds> seq_{};  // guarded by mu_
  bool stopping_ = false;               // guarded by mu_
};

}  // namespace mates::dashboard
