#include "llm/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mates::llm {
namespace {

// An Anthropic stream as the API sends it: multi-byte UTF-8, a ping, a
// comment, CRLF line ends in places.
const char kStream[] =
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":12}}}\r\n"
    "\r\n"
    ": keep-alive comment\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n"
    "\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80\"}}\n"
    "\n"
    "event: multi\r"
    "data: line one\r"
    "data: line two\r"
    "\r"
    "data:no-space\n"
    "id: 7\n"
    "\n";

std::vector<SseEvent> ParseWhole(const std::string& s) {
  std::vector<SseEvent> out;
  SseParser p([&](const SseEvent& e) { out.push_back(e); });
  p.Feed(s);
  return out;
}

TEST(SseTest, ParsesFieldsLineEndsAndComments) {
  auto ev = ParseWhole(kStream);
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].event, "message_start");
  EXPECT_EQ(ev[1].event, "ping");
  EXPECT_NE(ev[2].data.find("\"text\":\"h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80\"}"),
            std::string::npos)
      << ev[2].data;
  EXPECT_EQ(ev[3].event, "multi");
  EXPECT_EQ(ev[3].data, "line one\nline two");
  EXPECT_EQ(ev[4].event, "");
  EXPECT_EQ(ev[4].data, "no-space");
  EXPECT_EQ(ev[4].id, "7");
}

bool Same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].event != b[i].event || a[i].data != b[i].data || a[i].id != b[i].id) return false;
  }
  return true;
}

// Every way of cutting the stream in two or three pieces (mid-line, between
// \r and \n, inside a UTF-8 sequence) gives the same events.
TEST(SseTest, EverySplitOfTheStreamGivesTheSameEvents) {
  const std::string s = kStream;
  const auto whole = ParseWhole(s);
  for (size_t i = 0; i <= s.size(); ++i) {
    std::vector<SseEvent> out;
    SseParser p([&](const SseEvent& e) { out.push_back(e); });
    p.Feed(std::string_view(s).substr(0, i));
    p.Feed(std::string_view(s).substr(i));
    ASSERT_TRUE(Same(out, whole)) << "split at " << i;
  }
  for (size_t i = 0; i <= s.size(); i += 3) {
    for (size_t j = i; j <= s.size(); j += 5) {
      std::vector<SseEvent> out;
      SseParser p([&](const SseEvent& e) { out.push_back(e); });
      p.Feed(std::string_view(s).substr(0, i));
      p.Feed(std::string_view(s).substr(i, j - i));
      p.Feed(std::string_view(s).substr(j));
      ASSERT_TRUE(Same(out, whole)) << "splits at " << i << ", " << j;
    }
  }
  // And byte by byte.
  std::vector<SseEvent> out;
  SseParser p([&](const SseEvent& e) { out.push_back(e); });
  for (char c : s) p.Feed(std::string_view(&c, 1));
  EXPECT_TRUE(Same(out, whole));
}

TEST(SseTest, AnEventWithoutItsBlankLineIsNotDispatched) {
  std::vector<SseEvent> out;
  SseParser p([&](const SseEvent& e) { out.push_back(e); });
  p.Feed("data: cut off");
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(p.Finish());
  EXPECT_TRUE(out.empty());
}

// What a client resuming a stream needs (MCP's streamable HTTP): the last
// id seen, also on an event without data, and `retry` when it is digits.
TEST(SseTest, KeepsTheLastIdAndTheRetryTime) {
  std::vector<SseEvent> events;
  SseParser p([&](const SseEvent& e) { events.push_back(e); });
  EXPECT_EQ(p.last_id(), "");
  EXPECT_EQ(p.retry_ms(), -1);
  p.Feed("id: event-1\nretry: 500\ndata: \n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "");
  EXPECT_EQ(p.last_id(), "event-1");
  EXPECT_EQ(p.retry_ms(), 500);
  p.Feed("id: event-2\n\n");  // no data: not dispatched, the id still counts
  EXPECT_EQ(events.size(), 1u);
  EXPECT_EQ(p.last_id(), "event-2");
  p.Feed("retry: 5s\nretry: 12345678901\nretry:\ndata: x\n\n");  // not digits, too long, empty: ignored
  EXPECT_EQ(p.retry_ms(), 500);
  p.Feed(std::string("id: a\0b\n\n", 9));  // a NUL in an id: ignored
  EXPECT_EQ(p.last_id(), "event-2");
}

}  // namespace
}  // namespace mates::llm
