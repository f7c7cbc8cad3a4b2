#include "llm/validation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mates::llm {
namespace {

Json J(const std::string& s) { return *ParseJson(s); }

Json Req(const std::string& messages) {
  return J(R"({"model":"m","max_tokens":10,"messages":)" + messages + "}");
}

TEST(ValidationTest, AcceptsAWellFormedToolConversation) {
  EXPECT_TRUE(ValidateAnthropicRequest(Req(R"([
    {"role":"user","content":"go"},
    {"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"bash","input":{}},{"type":"tool_use","id":"t2","name":"bash","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t2","content":"b"},{"type":"text","text":"more"}]}])"),
                                       true).ok());
}

TEST(ValidationTest, RefusesWhatTheApiRefuses) {
  struct Case {
    std::string messages, expect;
  };
  std::vector<Case> cases = {
      {R"([])", "at least one message"},
      {R"([{"role":"assistant","content":"hi"}])", "first message must use the \"user\" role"},
      {R"([{"role":"user","content":[{"type":"text","text":""}]}])", "must be non-empty"},
      {R"([{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},{"role":"user","content":"no result"}])",
       "`tool_use` ids were found without `tool_result` blocks immediately after: t1"},
      {R"([{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"x"}]}])",
       "unexpected `tool_use_id` found in `tool_result` blocks: zz"},
      {R"([{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"tool_use","id":"t","name":"x","input":{}}]}])",
       "must be unique"},
      {R"([{"role":"robot","content":"a"}])", ".role"},
      {R"([{"role":"user","content":[]}])", "non-empty content"},
  };
  for (const auto& c : cases) {
    Status s = ValidateAnthropicRequest(Req(c.messages), false);
    EXPECT_FALSE(s.ok()) << c.messages;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.messages << " -> " << s.message();
  }
  EXPECT_FALSE(ValidateAnthropicRequest(J(R"({"max_tokens":1,"messages":[{"role":"user","content":"x"}]})"), false).ok());
  EXPECT_FALSE(ValidateAnthropicRequest(J(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), false).ok());
}

TEST(ValidationTest, ConsecutiveTurnsMergeUnlessStrict) {
  Json twice = Req(R"([{"role":"user","content":"a"},{"role":"user","content":"b"}])");
  EXPECT_TRUE(ValidateAnthropicRequest(twice, false).ok());
  EXPECT_NE(ValidateAnthropicRequest(twice, true).message().find("roles must alternate"),
            std::string::npos);
  // System messages between turns (as current Claude Code sends) are fine.
  EXPECT_TRUE(ValidateAnthropicRequest(
                  Req(R"([{"role":"user","content":"a"},{"role":"system","content":"note"}])"), true)
                  .ok());
}

// Merged turns (not strict) pair as one; what is missing is named in the
// calls' order; a turn of thousands of calls answered in another order is
// fine, and one result too many is named.
TEST(ValidationTest, ToolPairingAcrossMergedTurnsAndLargeTurns) {
  EXPECT_TRUE(ValidateAnthropicRequest(Req(R"([{"role":"user","content":"go"},
    {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"x","input":{}}]},
    {"role":"assistant","content":[{"type":"tool_use","id":"b","name":"x","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"1"}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"2"}]}])"),
                                       false)
                  .ok());
  Status missing = ValidateAnthropicRequest(Req(R"([{"role":"user","content":"go"},
    {"role":"assistant","content":[{"type":"tool_use","id":"c","name":"x","input":{}},
      {"type":"tool_use","id":"a","name":"x","input":{}},{"type":"tool_use","id":"b","name":"x","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"1"}]}])"),
                                            true);
  EXPECT_NE(
      missing.message().find("messages.2: `tool_use` ids were found without `tool_result` blocks "
                             "immediately after: c, a."),
      std::string::npos)
      << missing.message();

  Json body = Req(
      R"([{"role":"user","content":"go"},{"role":"assistant","content":[]},{"role":"user","content":[]}])");
  Json& calls = body["messages"][1]["content"];
  Json& results = body["messages"][2]["content"];
  const int kCalls = 5000;
  for (int i = 0; i < kCalls; ++i) {
    calls.push_back({{"type", "tool_use"},
                     {"id", "t" + std::to_string(i)},
                     {"name", "x"},
                     {"input", Json::object()}});
  }
  for (int i = kCalls - 1; i >= 0; --i) {
    results.push_back(
        {{"type", "tool_result"}, {"tool_use_id", "t" + std::to_string(i)}, {"content", "r"}});
  }
  EXPECT_TRUE(ValidateAnthropicRequest(body, true).ok());
  results.push_back({{"type", "tool_result"}, {"tool_use_id", "zz"}, {"content", "r"}});
  EXPECT_NE(ValidateAnthropicRequest(body, true)
                .message()
                .find("unexpected `tool_use_id` found in `tool_result` "
                      "blocks: zz."),
            std::string::npos);
  calls.push_back({{"type", "tool_use"}, {"id", "t17"}, {"name", "x"}, {"input", Json::object()}});
  EXPECT_NE(ValidateAnthropicRequest(body, true)
                .message()
                .find("messages.1.content.5000: `tool_use` ids must be unique"),
            std::string::npos);
}

// Any field of a well-formed request, replaced by null, a number, an empty
// string, array or object: one clear refusal (or a pass), never a crash or
// an exception (run under ASan in CI).
TEST(ValidationTest, EveryFieldRetypedIsRefusedCleanly) {
  const Json anthropic = J(
      R"({"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],
    "tools":[{"name":"bash","description":"d","input_schema":{"type":"object"}}],"metadata":{"user_id":"u"},
    "messages":[{"role":"user","content":"go"},
      {"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"bash","input":{}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}]})");
  const Json openai = J(
      R"({"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
    "messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"u"}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"r"}]})");
  ASSERT_TRUE(ValidateAnthropicRequest(anthropic, true).ok());
  ASSERT_TRUE(ValidateOpenAIRequest(openai).ok());
  const std::vector<Json> replacements = {nullptr, 1, "", Json::array(), Json::object()};
  int refused = 0;
  for (const Json* base : {&anthropic, &openai}) {
    const Json flat = base->flatten();
    std::vector<std::string> pointers;
    for (auto it = flat.begin(); it != flat.end(); ++it) {
      // Every leaf and every object or array above it.
      std::string p = it.key();
      while (!p.empty()) {
        pointers.push_back(p);
        p = p.substr(0, p.rfind('/'));
      }
    }
    for (const auto& p : pointers) {
      for (const Json& r : replacements) {
        Json body = *base;
        body[Json::json_pointer(p)] = r;
        Status s =
            base == &anthropic ? ValidateAnthropicRequest(body, true) : ValidateOpenAIRequest(body);
        if (!s.ok()) {
          ++refused;
          EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << p << " = " << r.dump();
          EXPECT_FALSE(s.message().empty()) << p;
          EXPECT_EQ(s.message().find("malformed request"), std::string::npos)
              << p << " = " << r.dump() << ": " << s.message();
        }
      }
    }
  }
  EXPECT_GT(refused, 100);
}

TEST(ValidationTest, ToolsAndCacheControl) {
  Json bad_tool = Req(R"([{"role":"user","content":"a"}])");
  bad_tool["tools"] = J(R"([{"name":"bad name!","input_schema":{"type":"object"}}])");
  EXPECT_NE(ValidateAnthropicRequest(bad_tool, false).message().find("tools.0.name"), std::string::npos);
  bad_tool["tools"] = J(R"([{"name":"a","input_schema":{"type":"object"}},{"name":"a","input_schema":{"type":"object"}}])");
  EXPECT_NE(ValidateAnthropicRequest(bad_tool, false).message().find("unique"), std::string::npos);
  bad_tool["tools"] = J(R"([{"name":"a","input_schema":{"type":"string"}}])");
  EXPECT_FALSE(ValidateAnthropicRequest(bad_tool, false).ok());
  // Names: ^[a-zA-Z0-9_-]{1,128}$.
  auto named = [&](const std::string& name) {
    Json body = Req(R"([{"role":"user","content":"a"}])");
    body["tools"] = Json::array({{{"name", name}, {"input_schema", {{"type", "object"}}}}});
    return ValidateAnthropicRequest(body, false).ok();
  };
  EXPECT_TRUE(named("Az09_-"));
  EXPECT_TRUE(named(std::string(128, 'x')));
  EXPECT_FALSE(named(std::string(129, 'x')));
  EXPECT_FALSE(named(""));
  for (const std::string& bad : std::vector<std::string>{"a.b", "a b", "a/b", "ä", std::string("a\0b", 3), "a\n"}) {
    EXPECT_FALSE(named(bad)) << bad;
  }
  Json cache = Req(R"([{"role":"user","content":[
    {"type":"text","text":"1","cache_control":{"type":"ephemeral"}},{"type":"text","text":"2","cache_control":{"type":"ephemeral"}},
    {"type":"text","text":"3","cache_control":{"type":"ephemeral"}},{"type":"text","text":"4","cache_control":{"type":"ephemeral"}},
    {"type":"text","text":"5","cache_control":{"type":"ephemeral"}}]}])");
  EXPECT_NE(ValidateAnthropicRequest(cache, false).message().find("maximum of 4"), std::string::npos);
}

TEST(ValidationTest, OpenAIToolMessagesMustAnswerCalls) {
  auto req = [&](const std::string& msgs) { return J(R"({"model":"m","messages":)" + msgs + "}"); };
  EXPECT_TRUE(ValidateOpenAIRequest(req(R"([{"role":"system","content":"s"},{"role":"user","content":"u"},
    {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"more"}])")).ok());
  EXPECT_NE(ValidateOpenAIRequest(req(R"([{"role":"user","content":"u"},{"role":"tool","tool_call_id":"x","content":"r"}])"))
                .message().find("must be a response to a preceeding message"),
            std::string::npos);
  EXPECT_NE(ValidateOpenAIRequest(req(R"([{"role":"user","content":"u"},
    {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
    {"role":"user","content":"skipped the result"}])")).message().find("did not have response messages: c1"),
            std::string::npos);
  EXPECT_FALSE(ValidateOpenAIRequest(req("[]")).ok());
  EXPECT_FALSE(ValidateOpenAIRequest(J(R"({"messages":[{"role":"user","content":"u"}]})")).ok());
}

}  // namespace
}  // namespace mates::llm
