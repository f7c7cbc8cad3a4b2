// Retries: which failures are worth another try, and how long to wait.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"
#include "llm/http.h"
#include "llm/provider.h"

namespace mates::llm {

// One provider's calls back off together (DESIGN §27): a rate limit one
// call meets (a 429, or any failure that says retry-after) holds every
// call of the provider, of every agent, until it has passed, rather than
// only the retry of the call that met it.
class SharedBackoff {
 public:
  void HoldUntil(SteadyClock::time_point t);
  // When calls may go again, and why they wait ("" = they need not).
  SteadyClock::time_point until() const;
  std::string why() const;
  void SetWhy(std::string why);

 private:
  mutable std::mutex mu_;
  SteadyClock::time_point until_{};  // guarded by mu_
  std::string why_;                  // guarded by mu_
};

struct RetryPolicy {
  int max_retries = 4;
  double base_delay_s = 0.5;
  double max_delay_s = 16;
  double max_server_delay_s = 120;  // a retry-after above this is capped
  Clock* clock = nullptr;           // how waits happen; null = Clock::Real()
  // Shared by the provider's calls; a provider makes one if none is given.
  std::shared_ptr<SharedBackoff> backoff;
};

// A provider's options with a SharedBackoff of its own if they had none.
template <typename Options>
Options WithSharedBackoff(Options o) {
  if (!o.retry.backoff) o.retry.backoff = std::make_shared<SharedBackoff>();
  return o;
}

// 408, 409, 429, 5xx (529 = overloaded included).
bool IsRetryableStatus(int status);

// Seconds to wait before retry `attempt` (1-based): the server's
// retry-after-ms / retry-after (seconds or an HTTP date), else the later of
// the Anthropic rate-limit reset times (RFC 3339), else exponential backoff
// with ±25 % jitter.
double RetryDelay(const RetryPolicy& policy, int attempt,
                  const std::map<std::string, std::string>& headers);

// The outcome of one attempt as the retry loop needs it.
struct AttemptFailure {
  Status status;
  bool retryable = false;
  int http_status = 0;  // the answer's, if one came
  std::map<std::string, std::string> headers;
};

// Keeps streamed text from being shown twice when an attempt is retried: a
// new attempt's text is forwarded only past what earlier attempts showed.
class TextDeduper {
 public:
  explicit TextDeduper(std::function<void(std::string_view)> sink) : sink_(std::move(sink)) {}
  void NewAttempt() { pos_ = 0; }
  void Text(std::string_view delta);

 private:
  std::function<void(std::string_view)> sink_;
  std::string shown_;  // everything forwarded so far
  size_t pos_ = 0;     // how far the current attempt has got
  bool diverged_ = false;
};

// Runs `attempt` until it succeeds, fails for good, the retries run out or
// `cancel` fires. `attempt` reports failures through `failure`.
Result<Response> RunWithRetries(const RetryPolicy& policy, const StreamCallbacks& callbacks,
                                CancelToken* cancel,
                                const std::function<Result<Response>(AttemptFailure*)>& attempt);

// One HTTP attempt of a provider. Streaming: each chunk goes to `feed`,
// which returns false to end the attempt (e.g. after an error event); the
// result is null. Not streaming: the body parsed as JSON. Failures are
// classified for the retry loop in `failure`: transport errors and
// unreadable bodies retryable, HTTP statuses as IsRetryableStatus says
// (with their headers, for retry-after).
Result<Json> PostAttempt(HttpTransport& transport, const HttpRequest& http, bool stream,
                         const std::function<bool(std::string_view)>& feed, CancelToken* cancel,
                         AttemptFailure* failure);

// A reply that broke the API's shape, named where: not retried (the
// server meant it, and would send it again).
Status MalformedReply(const std::string& where, const Status& why);

// What ended a streamed attempt, in the order that matters: an SSE line
// over the bound, a malformed event, an `error` event (retryable). Sets
// `failure` and returns its status, or OK when the stream was clean.
Status StreamFailure(bool sse_overflowed, const Status& malformed, const Status& error, AttemptFailure* failure);

// A Status for a non-2xx HTTP answer: the API's own error message as is.
// Anthropic: {"type":"error","error":{"type","message"}}; OpenAI:
// {"error":{"message","type"}}.
// `url` (the request's) is named on a 404, with what usually causes it: a
// base URL without (OpenAI-compatible) or with (Anthropic) `/v1`.
Status StatusForHttpError(int status, const std::string& body, const std::string& url = "");

}  // namespace mates::llm
