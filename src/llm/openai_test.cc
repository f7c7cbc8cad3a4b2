#include "llm/openai.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "llm/recycled_test_util.h"

namespace mates::llm {
namespace {

const BodyFormat kOpenAI{[](const Request& r) { return OpenAIRequestBody(r, "m", true); },
                         RecycleOpenAIBody};

Json Chunk(const std::string& s) { return *ParseJson(s); }

TEST(OpenAIStreamTest, ToolCallDeltasInFragmentsAreAssembledByIndex) {
  std::string streamed;
  TextDeduper text([&](std::string_view d) { streamed += d; });
  OpenAIStreamAccumulator acc(&text);
  for (const char* c : {
           R"({"id":"c1","model":"llama","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking"}}]})",
           R"({"choices":[{"index":0,"delta":{"content":" now."}}]})",
           // Two parallel calls whose fragments interleave.
           R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_","arguments":""}}]}}]})",
           R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"bash","arguments":"{\"comm"}}]}}]})",
           R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"file","arguments":"{\"path\":"}}]}}]})",
           R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"and\":\"ls\"}"}}]}}]})",
           R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x.txt\"}"}}]}}]})",
           R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})",
           R"({"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"prompt_tokens_details":{"cached_tokens":10}}})"}) {
    acc.OnChunk(Chunk(c));
  }
  acc.MarkDone();
  Response r = *acc.TakeResponse();
  EXPECT_EQ(streamed, "Checking now.");
  ASSERT_EQ(r.content.size(), 3u);
  EXPECT_EQ(r.content[1].id, "call_1");
  EXPECT_EQ(r.content[1].name, "read_file");
  EXPECT_EQ(r.content[1].input_json, R"({"path":"x.txt"})");
  EXPECT_EQ(r.content[2].name, "bash");
  EXPECT_EQ(r.content[2].input_json, R"({"command":"ls"})");
  EXPECT_EQ(r.stop_reason, "tool_use");
  EXPECT_EQ(r.usage.input_tokens, 20);
  EXPECT_EQ(r.usage.cache_read_input_tokens, 10);
  EXPECT_EQ(r.usage.output_tokens, 12);
}

TEST(OpenAIStreamTest, ObjectArgumentsMissingAndRepeatedIdsAndBadJson) {
  OpenAIStreamAccumulator acc(nullptr);
  // Ollama: arguments as an object, no id; llama.cpp: the same id twice.
  acc.OnChunk(Chunk(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a","arguments":{"x":1}}}]}}]})"));
  acc.OnChunk(Chunk(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"dup","function":{"name":"b","arguments":"{}"}}]}}]})"));
  acc.OnChunk(Chunk(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"dup","function":{"name":"c","arguments":"{\"broken"}}]}}]})"));
  acc.OnChunk(Chunk(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"));
  Response r = *acc.TakeResponse();
  ASSERT_EQ(r.content.size(), 3u);
  EXPECT_EQ(r.content[0].input_json, R"({"x":1})");
  EXPECT_FALSE(r.content[0].id.empty());
  EXPECT_EQ(r.content[1].id, "dup");
  EXPECT_NE(r.content[2].id, "dup");
  EXPECT_NE(r.content[2].input_error.find("not a valid JSON object"), std::string::npos);
  EXPECT_EQ(r.stop_reason, "tool_use");  // "stop" with tool calls still means tool use
}

TEST(OpenAIStreamTest, FinishReasonsMapToAnthropicNames) {
  for (auto [finish, expect] : std::vector<std::pair<std::string, std::string>>{
           {"stop", "end_turn"}, {"length", "max_tokens"}, {"content_filter", "refusal"}}) {
    OpenAIStreamAccumulator acc(nullptr);
    acc.OnChunk(Chunk(R"({"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":")" + finish + R"("}]})"));
    EXPECT_EQ(acc.TakeResponse()->stop_reason, expect);
  }
}

TEST(OpenAIRequestTest, ToolResultsFollowTheirCallsAsToolMessages) {
  Request req;
  req.system = "sys";
  req.agent_id = "lead@t";
  req.tools = {{"bash", "Run", R"({"type":"object","properties":{"command":{"type":"string"}}})"}};
  req.messages.push_back({Role::kUser, {ContentBlock::Text("go")}});
  req.messages.push_back({Role::kAssistant, {ContentBlock::Text("ok"),
                                             ContentBlock::ToolUse("t1", "bash", R"({"command":"ls"})")}});
  req.messages.push_back({Role::kUser, {ContentBlock::ToolResult("t1", "a.txt", false),
                                        ContentBlock::Text("<teammate-message>hi</teammate-message>")}});
  Json b = OpenAIRequestBody(req, "m", true);
  const Json& m = b["messages"];
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], R"({"command":"ls"})");
  EXPECT_EQ(m[3]["role"], "tool");
  EXPECT_EQ(m[3]["tool_call_id"], "t1");
  EXPECT_EQ(m[4]["role"], "user");
  EXPECT_EQ(b["tools"][0]["function"]["name"], "bash");
  EXPECT_EQ(b["user"], "lead@t");
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
}

TEST(OpenAIResponseTest, NonStreamedCompletion) {
  auto r = OpenAIResponseFromJson(Chunk(R"({"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"pwd\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3}})"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->content.size(), 1u);
  EXPECT_EQ(r->content[0].input_json, R"({"command":"pwd"})");
  EXPECT_EQ(r->stop_reason, "tool_use");
  EXPECT_FALSE(OpenAIResponseFromJson(Chunk(R"({"choices":[]})")).ok());
}

// A recycled body's arrays serve the next body on the same thread as far
// as it has the same system prompt, tools and first messages, and every
// body is what one made afresh would be, whatever was recycled before it.
// A user turn here may be several entries (its tool results, then its
// text), which are taken or made together.
TEST(OpenAIRequestTest, ARecycledBodyServesOnlyWhatTheNextHasInCommonWithIt) {
  Request a;
  a.system = "You are w1.";
  a.tools = {
      {"bash", "Run a command", R"({"type":"object","properties":{"command":{"type":"string"}}})"},
      {"read_file", "Read", R"({"type":"object"})"}};
  a.messages.push_back({Role::kUser, {ContentBlock::Text("Task #1: build it")}});
  a.messages.push_back(
      {Role::kAssistant,
       {ContentBlock::Text("On it."), ContentBlock::ToolUse("c1", "bash", R"({"command":"make"})"),
        ContentBlock::ToolUse("c2", "read_file", R"({"path":"log"})")}});
  a.messages.push_back({Role::kUser,
                        {ContentBlock::ToolResult("c1", "ok", false),
                         ContentBlock::ToolResult("c2", "no such file", true),
                         ContentBlock::Text("(a note from the lead)")}});
  NextCalls n = NextCallsOf(a);
  auto& [longer, edited, flagged, input, shorter, big] = n;
  Request other_system = longer;
  other_system.system = "You are w2.";
  Request no_system = longer;
  no_system.system.clear();
  Request other_tools = longer;
  other_tools.tools[1].description = "Read a file";
  Request no_tools = longer;
  no_tools.tools.clear();
  Request silent = a;  // an assistant turn with calls and no text
  silent.messages[1].content.erase(silent.messages[1].content.begin());
  Request empty;
  ExpectEveryPairWhole(kOpenAI, {&a, &longer, &edited, &flagged, &input, &shorter, &other_system,
                                 &no_system, &other_tools, &no_tools, &silent, &empty, &big});
  // Calls in a row, each recycled, each whole.
  RecycleOpenAIBody(a, OpenAIRequestBody(a, "m", true));
  RecycleOpenAIBody(longer, OpenAIRequestBody(longer, "m", true));
  ExpectFresh(kOpenAI, edited);
  // Taken, it is gone: two bodies made after one recycle are both whole.
  RecycleOpenAIBody(a, OpenAIRequestBody(a, "m", true));
  Json one = OpenAIRequestBody(a, "m", true);
  Json two = OpenAIRequestBody(a, "m", true);
  EXPECT_EQ(DumpJson(one), FreshBody(kOpenAI, a));
  EXPECT_EQ(DumpJson(two), FreshBody(kOpenAI, a));
  // Only the body made last, given back with its own request, is taken;
  // one that is not a body, or was cut, is not.
  ExpectOnlyTheLastBodyTakenBack(kOpenAI, a, flagged);
  RecycleOpenAIBody(a, Json::array());
  ExpectFresh(kOpenAI, a);
  Json cut = OpenAIRequestBody(a, "m", true);
  cut["messages"].erase(1);
  cut["tools"].erase(0);
  RecycleOpenAIBody(a, std::move(cut));
  ExpectFresh(kOpenAI, a);
}

}  // namespace
}  // namespace mates::llm
