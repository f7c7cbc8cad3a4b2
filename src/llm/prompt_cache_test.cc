// The mock's prompt-cache accounting on hand-made request sequences: hits,
// misses after a changed prefix, expiry on an injected clock, the lookback
// window, per-agent caches, OpenAI's 1,024-token floor and 128-token steps.
#include "llm/prompt_cache.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mates::llm {
namespace {

Json Cc() { return Json{{"type", "ephemeral"}}; }

Json Text(const std::string& t, bool breakpoint = false) {
  Json b = {{"type", "text"}, {"text", t}};
  if (breakpoint) b["cache_control"] = Cc();
  return b;
}

// A body of tools, a system prompt and a conversation of `turns` exchanges
// and a new question (so Body(n) extends Body(n - 1)); the breakpoints where
// mates puts them: the last tool, the system prompt, the newest user block.
Json Body(const std::string& system, int turns, bool breakpoints = true) {
  Json tool = {{"name", "bash"}, {"description", std::string(400, 'd')}, {"input_schema", {{"type", "object"}}}};
  if (breakpoints) tool["cache_control"] = Cc();
  Json body = {{"model", "m"}, {"max_tokens", 100}, {"tools", Json::array({tool})}};
  body["system"] = Json::array({Text(system, breakpoints)});
  auto question = [](int i) { return "question " + std::to_string(i) + std::string(200, 'q'); };
  Json msgs = Json::array();
  for (int i = 0; i < turns; ++i) {
    msgs.push_back({{"role", "user"}, {"content", Json::array({Text(question(i))})}});
    msgs.push_back({{"role", "assistant"}, {"content", Json::array({Text("answer " + std::to_string(i) + std::string(200, 'a'))})}});
  }
  msgs.push_back({{"role", "user"}, {"content", Json::array({Text(question(turns), breakpoints)})}});
  body["messages"] = msgs;
  return body;
}

int64_t In(const Usage& u) { return u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens; }

class PromptCacheTest : public ::testing::Test {
 protected:
  double now_ = 1000;
  PromptCache cache_{[this] { return now_; }};
};

TEST_F(PromptCacheTest, AnthropicFirstWritesThenTheGrowingConversationReadsItsPrefix) {
  const std::string system(4000, 's');
  Usage first = cache_.Anthropic("alice", Body(system, 0));
  EXPECT_EQ(first.cache_read_input_tokens, 0);
  EXPECT_EQ(first.input_tokens, 0);  // the last block is a breakpoint: all of it is written
  EXPECT_GT(first.cache_creation_input_tokens, 1000);
  Usage second = cache_.Anthropic("alice", Body(system, 1));
  // Everything up to the first request's last breakpoint is read, the new
  // turn written.
  EXPECT_EQ(second.cache_read_input_tokens, first.cache_creation_input_tokens);
  EXPECT_GT(second.cache_creation_input_tokens, 0);
  EXPECT_LT(second.cache_creation_input_tokens, 200);
  EXPECT_EQ(In(second), In(first) + second.cache_creation_input_tokens);
  // The same request again: all read.
  Usage again = cache_.Anthropic("alice", Body(system, 1));
  EXPECT_EQ(again.cache_read_input_tokens, In(second));
  EXPECT_EQ(again.cache_creation_input_tokens, 0);
}

TEST_F(PromptCacheTest, AnthropicAChangedPrefixMissesAndOnlyItsOwnBreakpointsCount) {
  cache_.Anthropic("alice", Body(std::string(4000, 's'), 1));
  // A system prompt changed by one character: tools still read (their
  // breakpoint comes first), the rest written again.
  Usage changed = cache_.Anthropic("alice", Body(std::string(3999, 's') + "t", 1));
  EXPECT_GT(changed.cache_read_input_tokens, 100);
  EXPECT_LT(changed.cache_read_input_tokens, 150);  // the tool only (~110 tokens)
  EXPECT_GT(changed.cache_creation_input_tokens, 1000);
  // Another agent has its own cache.
  Usage bob = cache_.Anthropic("bob", Body(std::string(4000, 's'), 1));
  EXPECT_EQ(bob.cache_read_input_tokens, 0);
  // No breakpoints: nothing cached, nothing read.
  Usage plain = cache_.Anthropic("carol", Body(std::string(4000, 's'), 1, /*breakpoints=*/false));
  EXPECT_EQ(plain.cache_read_input_tokens + plain.cache_creation_input_tokens, 0);
  Usage plain2 = cache_.Anthropic("carol", Body(std::string(4000, 's'), 1, /*breakpoints=*/false));
  EXPECT_EQ(plain2.cache_read_input_tokens, 0);
  EXPECT_EQ(plain2.input_tokens, In(plain));
}

TEST_F(PromptCacheTest, AnthropicEntriesLiveFiveMinutesFromTheirLastUse) {
  const std::string system(4000, 's');
  Usage first = cache_.Anthropic("alice", Body(system, 0));
  now_ += 200;
  EXPECT_EQ(cache_.Anthropic("alice", Body(system, 0)).cache_read_input_tokens, In(first));  // refreshed
  now_ += 299;  // 499 s after the write, 299 after the read
  EXPECT_EQ(cache_.Anthropic("alice", Body(system, 0)).cache_read_input_tokens, In(first));
  now_ += 301;
  Usage expired = cache_.Anthropic("alice", Body(system, 0));
  EXPECT_EQ(expired.cache_read_input_tokens, 0);
  EXPECT_EQ(expired.cache_creation_input_tokens, In(first));
}

TEST_F(PromptCacheTest, AnthropicLooksBackTwentyBlocksFromABreakpoint) {
  const std::string system(4000, 's');
  Usage first = cache_.Anthropic("alice", Body(system, 0));
  // 12 exchanges = 24 blocks between the cached conversation prefix and the
  // new breakpoint: out of reach; the tool and system breakpoints still hit.
  Usage far = cache_.Anthropic("alice", Body(system, 12));
  EXPECT_GT(far.cache_read_input_tokens, 1000);           // tool + system
  EXPECT_LT(far.cache_read_input_tokens, In(first) - 40);  // not the first question
  // 9 exchanges (18 blocks) back is within reach.
  Usage first_bob = cache_.Anthropic("bob", Body(system, 0));
  Usage near = cache_.Anthropic("bob", Body(system, 9));
  EXPECT_EQ(near.cache_read_input_tokens, In(first_bob));
}

Json OpenAIBody(const std::string& system, int turns) {
  Json msgs = Json::array({{{"role", "system"}, {"content", system}}});
  for (int i = 0; i < turns; ++i) {
    msgs.push_back({{"role", "user"}, {"content", "question " + std::to_string(i) + std::string(300, 'q')}});
    msgs.push_back({{"role", "assistant"}, {"content", "answer " + std::to_string(i) + std::string(300, 'a')}});
  }
  msgs.push_back({{"role", "user"}, {"content", "now"}});
  return {{"model", "gpt-x"}, {"messages", msgs}};
}

TEST_F(PromptCacheTest, OpenAICachesTheLongestPrefixFrom1024TokensIn128TokenSteps) {
  // Short prompts are never cached.
  cache_.OpenAI("alice", OpenAIBody("short", 0));
  EXPECT_EQ(cache_.OpenAI("alice", OpenAIBody("short", 0)).cache_read_input_tokens, 0);
  // A long one: the second request reads its common prefix, rounded down.
  const std::string system(6000, 's');
  Usage first = cache_.OpenAI("alice", OpenAIBody(system, 0));
  EXPECT_EQ(first.cache_read_input_tokens, 0);
  Usage second = cache_.OpenAI("alice", OpenAIBody(system, 3));
  EXPECT_GE(second.cache_read_input_tokens, 1024);
  EXPECT_EQ((second.cache_read_input_tokens - 1024) % 128, 0);
  EXPECT_LE(second.cache_read_input_tokens, first.input_tokens);
  EXPECT_GT(second.cache_read_input_tokens, first.input_tokens - 128);
  EXPECT_GT(second.input_tokens, second.cache_read_input_tokens);  // prompt_tokens counts all
  // A changed first message: nothing matches.
  EXPECT_EQ(cache_.OpenAI("alice", OpenAIBody("x" + system, 3)).cache_read_input_tokens, 0);
  // Five minutes later it is gone.
  now_ += 301;
  EXPECT_EQ(cache_.OpenAI("alice", OpenAIBody(system, 3)).cache_read_input_tokens, 0);
}

TEST_F(PromptCacheTest, HostileBodiesAreCountedNotTrusted) {
  // Shapes a validator would refuse still do not crash the accounting.
  for (const char* raw : {R"({})", R"({"messages": 5})", R"({"messages": [1, "x", {"content": 3}]})",
                          R"({"system": {"a": 1}, "tools": "x"})",
                          R"({"messages": [{"role": 7, "content": [{"cache_control": 1}]}]})"}) {
    auto j = ParseJson(raw);
    ASSERT_TRUE(j.ok());
    Usage a = cache_.Anthropic("z", *j);
    Usage o = cache_.OpenAI("z", *j);
    EXPECT_GE(a.input_tokens, 0);
    EXPECT_GE(o.input_tokens, 0);
  }
}

}  // namespace
}  // namespace mates::llm
