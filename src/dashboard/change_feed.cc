// See change_feed.h.
#include "dashboard/change_feed.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/json.h"
#include "dashboard/http_guard.h"
#include "store/team_store.h"

namespace mates::dashboard {
namespace {

constexpr double kKeepAliveSeconds = 15;  // a comment on an idle stream

}  // namespace

ChangeFeed::ChangeFeed() {
  for (auto& w : kind_wakers_) w = std::make_shared<Waker>();
}

ChangeFeed::~ChangeFeed() { Stop(); }

void ChangeFeed::Start(Source& source) {
  source.Subscribe(kind_wakers_, any_);
  thread_ = std::thread([this, &source] {
    NameThisThread("mates-dashwatch");
    NeverWaitOutOutagesOnThisThread();  // a store out of reach is said at once, not waited for
    RunGuarded("dashboard watch", [this, &source] { Main(source); });
  });
}

void ChangeFeed::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  any_->Notify();
  if (thread_.joinable()) thread_.join();
}

void ChangeFeed::Serve(httplib::Response& res) {
  auto seen = std::make_shared<std::array<uint64_t, kKinds>>();
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    *seen = seq_;
    id = ++last_stream_;
    if (open_.size() >= kMaxStreams) {
      ended_.insert(open_.front());
      open_.pop_front();
      changed_.notify_all();
    }
    open_.push_back(id);
  }
  auto first = std::make_shared<bool>(true);
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, seen, first, id](size_t, httplib::DataSink& sink) {
        if (*first) {
          *first = false;
          const std::string hello = "retry: 1000\nevent: hello\ndata: {}\n\n";
          return sink.write(hello.data(), hello.size());
        }
        std::vector<std::string> kinds;
        // In slices of a second, so that a page gone (its socket closed:
        // not writable, llm/http_server.h) frees its stream at once.
        const auto keep_alive_at =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(kKeepAliveSeconds);
        for (bool news = false; !news;) {
          {
            std::unique_lock<std::mutex> lock(mu_);
            news = changed_.wait_for(lock, std::chrono::seconds(1),
                                     [&] { return stopping_ || seq_ != *seen || ended_.count(id) > 0; });
            if (stopping_ || ended_.count(id) > 0) return false;
            for (int k = 0; news && k < kKinds; ++k) {
              if (seq_[k] != (*seen)[k]) kinds.push_back(kKindNames[k]);
            }
            *seen = seq_;
          }
          if (!news && !sink.is_writable()) return false;
          news = news || std::chrono::steady_clock::now() >= keep_alive_at;
        }
        const std::string event = kinds.empty()
                                      ? std::string(": keep-alive\n\n")
                                      : "event: change\ndata: " + DumpJson(Json{{"kinds", kinds}}) + "\n\n";
        return sink.write(event.data(), event.size());
      },
      [this, id](bool) {
        std::lock_guard<std::mutex> lock(mu_);
        ended_.erase(id);
        if (auto it = std::find(open_.begin(), open_.end(), id); it != open_.end()) open_.erase(it);
      });
}

size_t ChangeFeed::open_streams() {
  std::lock_guard<std::mutex> lock(mu_);
  return open_.size();
}

void ChangeFeed::Main(Source& source) {
  std::array<uint64_t, kKinds> last{};
  for (int k = 0; k < kKinds; ++k) last[k] = kind_wakers_[k]->generation();
  uint64_t seen = any_->generation();
  auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  double next_tick = now() + 1;
  for (;;) {
    seen = any_->WaitChange(seen, DeadlineIn(std::max(0.0, next_tick - now())));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    std::array<bool, kKinds> bump{};
    for (int k = 0; k < kKinds; ++k) {
      uint64_t g = kind_wakers_[k]->generation();
      if (g != last[k]) {
        last[k] = g;
        bump[k] = true;
      }
    }
    if (now() >= next_tick) {
      next_tick = now() + 1;
      KindFlags ticked = source.Tick();
      for (int k = 0; k < kKinds; ++k) bump[k] = bump[k] || ticked[k];
    }
    bool any = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int k = 0; k < kKinds; ++k) {
        if (bump[k]) {
          ++seq_[k];
          any = true;
        }
      }
    }
    if (any) changed_.notify_all();
  }
}

}  // namespace mates::dashboard
