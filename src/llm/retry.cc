#include "llm/retry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/clock.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/secrets.h"

namespace mates::llm {

bool IsRetryableStatus(int status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

namespace {

double Jitter(double v) {
  thread_local std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> d(0.75, 1.25);
  return v * d(rng);
}

}  // namespace

double RetryDelay(const RetryPolicy& policy, int attempt,
                  const std::map<std::string, std::string>& headers) {
  auto get = [&](const char* k) -> const std::string* {
    auto it = headers.find(k);
    return it == headers.end() ? nullptr : &it->second;
  };
  if (const std::string* ms = get("retry-after-ms")) {
    char* end = nullptr;
    double v = std::strtod(ms->c_str(), &end);
    if (end != ms->c_str() && v >= 0) return std::min(v / 1000.0, policy.max_server_delay_s);
  }
  if (const std::string* ra = get("retry-after")) {
    char* end = nullptr;
    double v = std::strtod(ra->c_str(), &end);
    if (end != ra->c_str() && v >= 0) return std::min(v, policy.max_server_delay_s);
    std::tm tm{};
    if (::strptime(ra->c_str(), "%a, %d %b %Y %H:%M:%S", &tm) != nullptr) {
      double wait = static_cast<double>(::timegm(&tm)) - WallSeconds();
      return std::clamp(wait, 0.0, policy.max_server_delay_s);
    }
  }
  double reset = 0;
  for (const char* k : {"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset",
                        "anthropic-ratelimit-input-tokens-reset",
                        "anthropic-ratelimit-output-tokens-reset"}) {
    const std::string* v = get(k);
    if (v == nullptr) continue;
    if (std::optional<double> t = ParseIsoTime(*v)) reset = std::max(reset, *t);
  }
  if (reset > 0) return std::clamp(reset - WallSeconds(), 0.0, policy.max_server_delay_s);
  double backoff = policy.base_delay_s * std::pow(2.0, attempt - 1);
  return Jitter(std::min(backoff, policy.max_delay_s));
}

void TextDeduper::Text(std::string_view delta) {
  if (diverged_ || pos_ >= shown_.size()) {
    pos_ += delta.size();
    shown_.append(delta);
    if (sink_) sink_(delta);
    return;
  }
  // Part (or all) of this delta was shown by an earlier attempt.
  size_t overlap = std::min(delta.size(), shown_.size() - pos_);
  size_t same = 0;
  while (same < overlap && shown_[pos_ + same] == delta[same]) ++same;
  if (same < overlap) {
    // The retry says something else from here: show it from where it differs.
    diverged_ = true;
    pos_ += same;
    shown_.resize(pos_);
    delta.remove_prefix(same);
    Text(delta);
    return;
  }
  pos_ += overlap;
  delta.remove_prefix(overlap);
  if (!delta.empty()) Text(delta);
}

void SharedBackoff::HoldUntil(SteadyClock::time_point t) {
  std::lock_guard<std::mutex> lock(mu_);
  until_ = std::max(until_, t);
}

SteadyClock::time_point SharedBackoff::until() const {
  std::lock_guard<std::mutex> lock(mu_);
  return until_;
}

std::string SharedBackoff::why() const {
  std::lock_guard<std::mutex> lock(mu_);
  return why_;
}

void SharedBackoff::SetWhy(std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  why_ = std::move(why);
}

Result<Response> RunWithRetries(const RetryPolicy& policy, const StreamCallbacks& callbacks,
                                CancelToken* cancel,
                                const std::function<Result<Response>(AttemptFailure*)>& attempt) {
  Clock& clock = policy.clock != nullptr ? *policy.clock : Clock::Real();
  for (int n = 0;; ++n) {
    if (cancel != nullptr && cancel->cancelled()) return Status::Cancelled("request cancelled");
    // Another call met a rate limit: this one waits it out too.
    // Looked at again after the wait: a call may have met another since.
    for (double wait; policy.backoff &&
                      (wait = std::chrono::duration<double>(policy.backoff->until() - clock.Now()).count()) > 0;) {
      if (callbacks.on_backoff) callbacks.on_backoff(policy.backoff->why(), wait);
      if (clock.Sleep(wait, cancel)) return Status::Cancelled("request cancelled");
    }
    AttemptFailure failure;
    Result<Response> r = attempt(&failure);
    if (r.ok()) return r;
    if (failure.status.ok()) failure.status = r.status();  // an attempt that forgot to say
    if (!failure.retryable || n >= policy.max_retries) {
      if (failure.retryable) {
        return Status(failure.status.code(), failure.status.message() + " (gave up after " +
                                                 std::to_string(n + 1) + " attempts)");
      }
      return failure.status;
    }
    double delay = RetryDelay(policy, n + 1, failure.headers);
    const bool said_when = failure.headers.count("retry-after") > 0 || failure.headers.count("retry-after-ms") > 0;
    if (policy.backoff && (failure.http_status == 429 || said_when)) {
      policy.backoff->SetWhy(failure.status.message());
      policy.backoff->HoldUntil(clock.Now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                  std::chrono::duration<double>(delay)));
    }
    if (callbacks.on_retry) callbacks.on_retry(n + 1, policy.max_retries + 1, failure.status, delay);
    if (clock.Sleep(delay, cancel)) return Status::Cancelled("request cancelled");
  }
}

Status MalformedReply(const std::string& where, const Status& why) {
  return Status::Unavailable("malformed reply from the server: " + where + ": " + why.message());
}

Status StreamFailure(bool sse_overflowed, const Status& malformed, const Status& error, AttemptFailure* failure) {
  if (sse_overflowed) {
    failure->status = MalformedReply(
        "stream", Status::InvalidArgument("a line longer than " + std::to_string(kMaxSseLineBytes) + " bytes"));
  } else if (!malformed.ok()) {
    failure->status = malformed;
  } else if (!error.ok()) {
    failure->status = error;
    failure->retryable = true;
  }
  return failure->status;
}

Status StatusForHttpError(int status, const std::string& body, const std::string& url) {
  std::string message;
  std::string type;
  auto j = ParseJson(body);
  if (j.ok() && j->is_object()) {
    auto err = j->find("error");
    if (err != j->end() && err->is_object()) {
      // Strings only: a server reply of the wrong shape is said as it is.
      auto m = JsonString(*err, "message", false);
      auto t = JsonString(*err, "type", false);
      auto gemini_status = JsonString(*err, "status", false);  // Gemini's word
      if (m.ok()) message = *m;
      if (t.ok()) type = *t;
      if (type.empty() && gemini_status.ok()) type = *gemini_status;
    } else if (err != j->end() && err->is_string()) {
      message = err->get<std::string>();  // some compatible servers
    }
  }
  if (message.empty()) message = body.empty() ? "no details" : body.substr(0, 500);
  // A server may echo what it was sent (a 401 quoting the key).
  std::string text = "HTTP " + std::to_string(status) + (type.empty() ? "" : " " + type) + ": " + message;
  if (status == 404 && !url.empty()) {
    text += " (POST " + url + "; is --base-url right? an OpenAI-compatible server's usually ends in /v1, "
            "e.g. http://127.0.0.1:8080/v1; Anthropic's and Gemini's have none)";
  }
  text = Secrets::Redact(text);
  // Not InvalidArgument even for 400: at the CLI that would read as bad
  // usage (exit 2); the request was ours, the refusal is an API failure.
  if (IsRetryableStatus(status)) return Status::Unavailable(text);
  return Status::FailedPrecondition(text);
}

Result<Json> PostAttempt(HttpTransport& transport, const HttpRequest& http, bool stream,
                         const std::function<bool(std::string_view)>& feed, CancelToken* cancel,
                         AttemptFailure* failure) {
  std::string plain;  // the non-streaming body
  size_t received = 0;
  bool too_big = false;
  auto on_data = [&](std::string_view chunk) {
    received += chunk.size();
    if (received > kMaxReplyBytes) {
      too_big = true;
      return false;
    }
    if (stream) return feed(chunk);
    plain.append(chunk);
    return true;
  };
  auto resp = transport.Send(http, on_data, cancel != nullptr ? cancel->flag() : nullptr);
  if (too_big) {
    // Not retried: the same request would bring the same flood.
    failure->status = Status::Unavailable("the reply was over " + std::to_string(kMaxReplyBytes >> 20) +
                                          " MiB; it was cut off and refused");
    failure->retryable = false;
    return failure->status;
  }
  if (!resp.ok()) {
    failure->status = resp.status();
    failure->retryable = resp.status().code() == StatusCode::kUnavailable;
    return resp.status();
  }
  if (resp->status < 200 || resp->status >= 300) {
    failure->status = StatusForHttpError(resp->status, resp->body, http.url);
    failure->retryable = IsRetryableStatus(resp->status);
    failure->http_status = resp->status;
    failure->headers = resp->headers;
    return failure->status;
  }
  if (stream) return Json();
  auto j = ParseJson(plain);
  if (!j.ok()) {
    // The whole body came (a cut connection is a transport error above):
    // the server meant it, and would send it again.
    failure->status = Status::Unavailable("malformed reply from the server: reply: " + j.status().message());
    failure->retryable = false;
    return failure->status;
  }
  return j;
}

}  // namespace mates::llm
