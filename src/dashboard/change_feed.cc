// See change_feed.h.
#include "dashboard/change_feed.h"

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/json.h"
#include "dashboard/http_guard.h"

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
  if (streams_.fetch_add(1) >= kMaxStreams) {
    streams_.fetch_sub(1);
    return SendError(res, 503, "too many open dashboards (" + std::to_string(kMaxStreams) + ")");
  }
  auto seen = std::make_shared<std::array<uint64_t, kKinds>>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    *seen = seq_;
  }
  auto first = std::make_shared<bool>(true);
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, seen, first](size_t, httplib::DataSink& sink) {
        if (*first) {
          *first = false;
          const std::string hello = "retry: 1000\nevent: hello\ndata: {}\n\n";
          return sink.write(hello.data(), hello.size());
        }
        std::vector<std::string> kinds;
        {
          std::unique_lock<std::mutex> lock(mu_);
          changed_.wait_for(lock, std::chrono::duration<double>(kKeepAliveSeconds),
                            [&] { return stopping_ || seq_ != *seen; });
          if (stopping_) return false;
          for (int k = 0; k < kKinds; ++k) {
            if (seq_[k] != (*seen)[k]) kinds.push_back(kKindNames[k]);
          }
          *seen = seq_;
        }
        const std::string event = kinds.empty()
                                      ? std::string(": keep-alive\n\n")
                                      : "event: change\ndata: " + DumpJson(Json{{"kinds", kinds}}) + "\n\n";
        return sink.write(event.data(), event.size());
      },
      [this](bool) { streams_.fetch_sub(1); });
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
