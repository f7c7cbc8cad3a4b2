#include "llm/retry.h"

#include <gtest/gtest.h>

#include <ctime>

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
