#include "llm/anthropic.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "llm/recycled_test_util.h"

namespace mates::llm {
namespace {

const BodyFormat kAnthropic{[](const Request& r) { return AnthropicRequestBody(r, "m", false); },
                            RecycleAnthropicBody};

std::vector<SseEvent> Events(const std::vector<std::pair<std::string, std::string>>& evs) {
  std::vector<SseEvent> out;
  for (const auto& [name, data] : evs) out.push_back({name, data, ""});
  return out;
}

const std::vector<std::pair<std::string, std::string>> kToolStream = {
    {"message_start", R"({"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":50,"output_tokens":1}}})"},
    {"ping", R"({"type":"ping"})"},
    {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"},
    {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me "}})"},
    {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"look."}})"},
    {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
    {"content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"read_file","input":{}}})"},
    {"content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}})"},
    {"content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\": \"a.txt\"}"}})"},
    {"content_block_stop", R"({"type":"content_block_stop","index":1})"},
    {"content_block_start", R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"bash","input":{}}})"},
    {"content_block_delta", R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ls\", "}})"},
    {"content_block_stop", R"({"type":"content_block_stop","index":2})"},
    {"some_future_event", R"({"type":"some_future_event"})"},
    {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}})"},
    {"message_stop", R"({"type":"message_stop"})"},
};

TEST(AnthropicStreamTest, AssemblesTextToolsUsageAndStopReason) {
  std::string streamed;
  TextDeduper text([&](std::string_view d) { streamed += d; });
  AnthropicStreamAccumulator acc(&text);
  for (const auto& e : Events(kToolStream)) acc.OnEvent(e);
  EXPECT_TRUE(acc.complete());
  EXPECT_TRUE(acc.error().ok());
  Response r = acc.TakeResponse();
  EXPECT_EQ(streamed, "Let me look.");
  ASSERT_EQ(r.content.size(), 3u);
  EXPECT_EQ(r.content[0].text, "Let me look.");
  EXPECT_EQ(r.content[1].input_json, R"({"path":"a.txt"})");
  EXPECT_TRUE(r.content[1].input_error.empty());
  // Malformed input JSON becomes an error the model will see, not a crash.
  EXPECT_EQ(r.content[2].input_json, "{}");
  EXPECT_NE(r.content[2].input_error.find("not a valid JSON object"), std::string::npos);
  EXPECT_EQ(r.stop_reason, "tool_use");
  EXPECT_EQ(r.usage.input_tokens, 100);
  EXPECT_EQ(r.usage.output_tokens, 42);
  EXPECT_EQ(r.usage.cache_creation_input_tokens, 20);
  EXPECT_EQ(r.usage.cache_read_input_tokens, 50);
}

TEST(AnthropicStreamTest, AnErrorEventIsARetryableFailure) {
  AnthropicStreamAccumulator acc(nullptr);
  acc.OnEvent({"message_start", R"({"type":"message_start","message":{"id":"m"}})", ""});
  acc.OnEvent({"error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})", ""});
  EXPECT_EQ(acc.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(acc.error().message().find("overloaded_error"), std::string::npos);
  EXPECT_FALSE(acc.complete());
}

TEST(AnthropicRequestTest, BodyHasCacheBreakpointsMetadataAndStream) {
  Request req;
  req.system = "You are teammate 'frontend'.";
  req.agent_id = "frontend@t";
  req.tools = {{"bash", "Run a command", R"({"type":"object"})"},
               {"read_file", "Read", R"({"type":"object"})"}};
  for (int i = 0; i < 5; ++i) {
    req.messages.push_back({Role::kUser, {ContentBlock::Text("u" + std::to_string(i))}});
    req.messages.push_back({Role::kAssistant, {ContentBlock::Text("a" + std::to_string(i))}});
  }
  req.messages.push_back({Role::kUser, {ContentBlock::Text("last")}});
  Json b = AnthropicRequestBody(req, "claude-x", true);
  EXPECT_EQ(b["model"], "claude-x");
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["metadata"]["user_id"], "frontend@t");
  EXPECT_TRUE(b["system"][0].contains("cache_control"));
  EXPECT_TRUE(b["tools"][1].contains("cache_control"));
  EXPECT_FALSE(b["tools"][0].contains("cache_control"));
  int marks = 0;
  for (const auto& m : b["messages"]) {
    for (const auto& blk : m["content"]) marks += blk.contains("cache_control") ? 1 : 0;
  }
  EXPECT_EQ(marks, 2);  // the two newest user turns: 4 breakpoints in all
  EXPECT_TRUE(b["messages"].back()["content"].back().contains("cache_control"));
  req.cache = false;
  EXPECT_FALSE(AnthropicRequestBody(req, "m", false).contains("stream"));
  EXPECT_FALSE(AnthropicRequestBody(req, "m", false)["system"][0].contains("cache_control"));
}

// A recycled body's tools array serves the next body on the same thread
// only for the same tools and the same breakpoints: each body is what a
// fresh one would be, whatever was recycled before it.
TEST(AnthropicRequestTest, ARecycledToolsArrayServesOnlyTheSameTools) {
  Request a;
  a.messages.push_back({Role::kUser, {ContentBlock::Text("hi")}});
  a.tools = {
      {"bash", "Run a command", R"({"type":"object","properties":{"command":{"type":"string"}}})"},
      {"read_file", "Read", R"({"type":"object"})"}};
  Request b = a;
  b.tools[1].description = "Read a file";  // one field differs
  Request c = a;
  c.tools.pop_back();
  Request d = a;
  d.cache = false;
  // Every order of two: recycle the first's body, then make the second's.
  ExpectEveryPairWhole(kAnthropic, {&a, &b, &c, &d});
  // Taken, it is gone: two bodies made after one recycle are both whole.
  RecycleAnthropicBody(a, AnthropicRequestBody(a, "m", false));
  Json one = AnthropicRequestBody(a, "m", false);
  Json two = AnthropicRequestBody(a, "m", false);
  EXPECT_EQ(DumpJson(one), FreshBody(kAnthropic, a));
  EXPECT_EQ(DumpJson(two), FreshBody(kAnthropic, a));
  // A body that is not one, or was changed, is not taken back.
  RecycleAnthropicBody(a, Json::array());
  Json cut = AnthropicRequestBody(a, "m", false);
  cut["tools"].erase(0);
  RecycleAnthropicBody(a, std::move(cut));
  ExpectFresh(kAnthropic, a);
}

// The messages array comes back too: the next body takes it as far as its
// conversation begins with the same messages, and is always what a body
// made afresh would be.
TEST(AnthropicRequestTest, ARecycledMessagesArrayServesOnlyTheConversationItBeganWith) {
  Request a;
  a.messages.push_back({Role::kUser, {ContentBlock::Text("Task #1: build it")}});
  a.messages.push_back({Role::kAssistant,
                        {ContentBlock::Text("On it."),
                         ContentBlock::ToolUse("tu_1", "bash", R"({"command":"make"})")}});
  a.messages.push_back({Role::kUser, {ContentBlock::ToolResult("tu_1", "ok", false)}});
  NextCalls n = NextCallsOf(a);
  auto& [longer, edited, flagged, input, shorter, big] = n;
  Request other;
  other.messages.push_back({Role::kUser, {ContentBlock::Text("something else")}});
  Request uncached = longer;
  uncached.cache = false;
  ExpectEveryPairWhole(kAnthropic,
                       {&a, &longer, &edited, &flagged, &input, &shorter, &other, &uncached, &big});
  // Three calls in a row, each recycled: the breakpoints move with the
  // newest user turns, none is left behind.
  RecycleAnthropicBody(a, AnthropicRequestBody(a, "m", false));
  RecycleAnthropicBody(longer, AnthropicRequestBody(longer, "m", false));
  ExpectFresh(kAnthropic, edited);
  // Only the body made last, given back with its own request, is taken.
  ExpectOnlyTheLastBodyTakenBack(kAnthropic, a, flagged);
}

}  // namespace
}  // namespace mates::llm
