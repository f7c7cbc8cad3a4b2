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

#include "core/cancel.h"
#include "core/status.h"
#include "llm/types.h"

namespace mates::llm {

// The context window of current Claude models, in tokens (the scripted
// provider answers as one).
inline constexpr int64_t kClaudeContextWindow = 200000;

// Cancels a call from another thread: an HTTP transfer within a second, a
// backoff wait at once (core/cancel.h).
using CancelToken = mates::CancelToken;

struct StreamCallbacks {
  // Text as it is generated. Across retries nothing is delivered twice: a
  // retried stream's text is passed on only past what was already shown.
  std::function<void(std::string_view delta)> on_text;
  // Attempt `attempt` (1-based) of at most `of` failed with `why`; the next
  // starts in `delay_s`.
  std::function<void(int attempt, int of, const Status& why, double delay_s)> on_retry;
  // The call waits `delay_s` before its attempt: the provider backs off
  // after a rate limit another call met (`why`, its words).
  std::function<void(const std::string& why, double delay_s)> on_backoff;
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
