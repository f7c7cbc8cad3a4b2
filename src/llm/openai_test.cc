#include "llm/openai.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mates::llm {
namespace {

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

}  // namespace
}  // namespace mates::llm
