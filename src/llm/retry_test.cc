#include "llm/retry.h"

#include <gtest/gtest.h>

#include <ctime>
#include <future>
#include <thread>

#include "core/clock.h"

namespace mates::llm {
namespace {

TEST(RetryTest, RetryableStatuses) {
  for (int s : {408, 409, 429, 500, 502, 503, 529}) EXPECT_TRUE(IsRetryableStatus(s)) << s;
  for (int s : {400, 401, 403, 404, 413, 422}) EXPECT_FALSE(IsRetryableStatus(s)) << s;
}

TEST(RetryTest, ServerHintsComeFirst) {
  RetryPolicy p;
  EXPECT_DOUBLE_EQ(RetryDelay(p, 1, {{"retry-after", "3"}}), 3.0);
  EXPECT_DOUBLE_EQ(RetryDelay(p, 1, {{"retry-after-ms", "250"}, {"retry-after", "3"}}), 0.25);
  EXPECT_DOUBLE_EQ(RetryDelay(p, 1, {{"retry-after", "9999"}}), p.max_server_delay_s);
  // An HTTP date ~10 s ahead.
  time_t ahead = static_cast<time_t>(WallSeconds()) + 10;
  char date[64];
  std::tm tm{};
  ::gmtime_r(&ahead, &tm);
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  double d = RetryDelay(p, 1, {{"retry-after", date}});
  EXPECT_GT(d, 8.0);
  EXPECT_LE(d, 10.5);
  // Anthropic's rate-limit reset (RFC 3339), the later one wins.
  char reset[64];
  time_t later = static_cast<time_t>(WallSeconds()) + 5;
  ::gmtime_r(&later, &tm);
  std::strftime(reset, sizeof reset, "%Y-%m-%dT%H:%M:%SZ", &tm);
  d = RetryDelay(p, 1, {{"anthropic-ratelimit-requests-reset", reset},
                        {"anthropic-ratelimit-tokens-reset", "2000-01-01T00:00:00Z"}});
  EXPECT_GT(d, 3.0);
  EXPECT_LE(d, 5.5);
}

TEST(RetryTest, BackoffGrowsWithJitterAndIsCapped) {
  RetryPolicy p;
  for (int attempt = 1; attempt <= 8; ++attempt) {
    double d = RetryDelay(p, attempt, {});
    double nominal = std::min(p.base_delay_s * (1 << (attempt - 1)), p.max_delay_s);
    EXPECT_GE(d, nominal * 0.75 - 1e-9) << attempt;
    EXPECT_LE(d, nominal * 1.25 + 1e-9) << attempt;
  }
}

TEST(TextDeduperTest, ARetriedStreamShowsNothingTwice) {
  std::string shown;
  TextDeduper d([&](std::string_view t) { shown += t; });
  d.NewAttempt();
  d.Text("Hello, wo");  // cut here
  d.NewAttempt();
  d.Text("Hel");
  d.Text("lo, world");
  d.Text("!");
  EXPECT_EQ(shown, "Hello, world!");
}

TEST(TextDeduperTest, ARetryThatSaysSomethingElseGoesOnFromWhereItDiffers) {
  std::string shown;
  TextDeduper d([&](std::string_view t) { shown += t; });
  d.NewAttempt();
  d.Text("Hello there");
  d.NewAttempt();
  d.Text("Hello world");
  EXPECT_EQ(shown, "Hello thereworld");
}

// A 429 one call meets holds the provider's other calls too (DESIGN §27):
// a call that starts after it waits out the retry-after before its first
// attempt, and is told why; without a shared backoff it goes at once.
TEST(RetryTest, ARateLimitOneCallMeetsHoldsTheOthers) {
  for (bool shared : {true, false}) {
    RetryPolicy policy;
    if (shared) policy.backoff = std::make_shared<SharedBackoff>();
    std::promise<SteadyClock::time_point> limited;
    std::thread first([&] {
      int n = 0;
      StreamCallbacks told_of_retry;
      told_of_retry.on_retry = [&](int, int, const Status&, double) { limited.set_value(SteadyClock::now()); };
      auto r = RunWithRetries(policy, told_of_retry, nullptr, [&](AttemptFailure* f) -> Result<Response> {
        if (n++ > 0) return Response{};
        f->status = Status::Unavailable("HTTP 429 rate_limit_error: slow down");
        f->retryable = true;
        f->http_status = 429;
        f->headers["retry-after-ms"] = "400";
        return f->status;
      });
      EXPECT_TRUE(r.ok());
    });
    const SteadyClock::time_point at = limited.get_future().get();
    StreamCallbacks cb;
    std::string told;
    cb.on_backoff = [&](const std::string& why, double) { told = why; };
    SteadyClock::time_point went{};
    auto r = RunWithRetries(policy, cb, nullptr, [&](AttemptFailure*) -> Result<Response> {
      went = SteadyClock::now();
      return Response{};
    });
    first.join();
    ASSERT_TRUE(r.ok());
    const double waited = std::chrono::duration<double>(went - at).count();
    if (shared) {
      // Not before the hold the 429 set (the retry-after from the failure).
      EXPECT_GT(policy.backoff->until(), at);
      EXPECT_GE(went, policy.backoff->until()) << "the second call did not wait for the first one's 429";
      EXPECT_GT(waited, 0.0);
      EXPECT_EQ(told, "HTTP 429 rate_limit_error: slow down");
    } else {
      EXPECT_LT(waited, 0.3);
      EXPECT_EQ(told, "");
    }
  }
}

TEST(RetryTest, HttpErrorsKeepTheApiMessage) {
  Status s = StatusForHttpError(
      400, R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}})");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "HTTP 400 invalid_request_error: max_tokens: too big");
  Status o = StatusForHttpError(401, R"({"error":{"message":"Incorrect API key","type":"invalid_api_key"}})");
  EXPECT_NE(o.message().find("Incorrect API key"), std::string::npos);
  EXPECT_EQ(StatusForHttpError(529, "").code(), StatusCode::kUnavailable);
  // A first-time user's base URL without /v1: the URL and the likely fix.
  Status nf = StatusForHttpError(404, "", "http://127.0.0.1:9/chat/completions");
  EXPECT_NE(nf.message().find("HTTP 404: no details (POST http://127.0.0.1:9/chat/completions; is --base-url right?"),
            std::string::npos)
      << nf.message();
  EXPECT_NE(nf.message().find("ends in /v1"), std::string::npos);
  EXPECT_NE(StatusForHttpError(502, "<html>bad gateway</html>").message().find("bad gateway"),
            std::string::npos);
}

}  // namespace
}  // namespace mates::llm
