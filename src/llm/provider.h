// Provider: one interface for every model backend (DESIGN §6): anthropic,
// openai (compatible servers), scripted. Implementations are thread-safe:
// one provider serves every agent of a process.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "llm/types.h"

namespace mates::llm {

// Cancels a call from another thread: an HTTP transfer within a second, a
// backoff wait at once.
class CancelToken {
 public:
  void Cancel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_.store(true);
    }
    cv_.notify_all();
  }
  void Reset() { cancelled_.store(false); }
  bool cancelled() const { return cancelled_.load(); }
  const std::atomic<bool>* flag() const { return &cancelled_; }
  // Waits `seconds`; true if cancelled meanwhile.
  bool WaitFor(double seconds) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                        [&] { return cancelled_.load(); });
  }

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

struct StreamCallbacks {
  // Text as it is generated. Across retries nothing is delivered twice: a
  // retried stream's text is passed on only past what was already shown.
  std::function<void(std::string_view delta)> on_text;
  // A failed attempt that will be retried after `delay_s`.
  std::function<void(int attempt, const Status& why, double delay_s)> on_retry;
};

class Provider {
 public:
  virtual ~Provider() = default;
  // One model call. Errors: FailedPrecondition when the API refused the
  // request (400/401/403/404/413…, with its message as is, not retried),
  // Unavailable when the retries ran out, Cancelled.
  virtual Result<Response> Complete(const Request& request, const StreamCallbacks& callbacks,
                                    CancelToken* cancel) = 0;
  virtual std::string_view name() const = 0;
  virtual std::string default_model() const = 0;
  // The context window of `model` in tokens (for the auto-compact budget).
  virtual int64_t ContextWindow(const std::string& model) const = 0;
};

}  // namespace mates::llm
