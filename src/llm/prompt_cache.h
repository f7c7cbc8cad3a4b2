// PromptCache: prompt caching as the APIs account it, for `mates mock-llm`
// (DESIGN §15), so that cache efficiency can be measured offline.
//
// Tokens are estimated at 4 characters each, of the request as it is laid
// out for the cache: Anthropic's order is tools, then system, then
// messages; each tool, system block and message content block is a block.
//
// - Anthropic: a block with `cache_control` is a breakpoint. The longest
//   prefix ending at a block boundary that was written to the cache in the
//   last 5 minutes (looked for from each breakpoint back over at most 20
//   blocks, as the API does) is read (`cache_read_input_tokens`); from
//   there to the last breakpoint is written (`cache_creation_input_tokens`);
//   the rest is `input_tokens`. The prefixes ending at this request's
//   breakpoints are then in the cache (a read refreshes its 5 minutes).
// - OpenAI: caching is automatic. The longest common prefix with a prompt
//   of the same agent in the last 5 minutes, if at least 1,024 tokens, is
//   cached (in steps of 128 tokens beyond 1,024), reported as
//   `prompt_tokens_details.cached_tokens`; `prompt_tokens` counts them too.
//   The Responses API caches the same way (tools, instructions, input),
//   reported as `input_tokens_details.cached_tokens`.
// - Gemini: implicit caching, accounted as OpenAI's (tools, system
//   instruction, contents), reported as `cachedContentTokenCount` within
//   `promptTokenCount`.
//
// Caches are per agent (the request's metadata.user_id / user), bounded in
// entries, and the clock is injected so expiry can be tested.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/json.h"
#include "llm/types.h"

namespace mates::llm {

class PromptCache {
 public:
  using Clock = std::function<double()>;  // seconds
  static constexpr double kTtlSeconds = 300;
  static constexpr int kLookbackBlocks = 20;
  static constexpr int64_t kOpenAIMinTokens = 1024;
  static constexpr int64_t kOpenAIStepTokens = 128;

  explicit PromptCache(Clock now);

  // Usage of a valid Messages request body (input, cache write, cache read).
  Usage Anthropic(const std::string& agent, const Json& body);
  // Usage of a valid chat completions body: input_tokens = every prompt
  // token (cached ones included, as prompt_tokens), cache_read = cached.
  Usage OpenAI(const std::string& agent, const Json& body);
  // The same for a Responses API body and a Gemini generateContent body.
  Usage Responses(const std::string& agent, const Json& body);
  Usage Gemini(const std::string& agent, const Json& body);

 private:
  struct AgentCache {
    std::unordered_map<uint64_t, double> prefixes;  // Anthropic: prefix hash -> expiry
    std::deque<std::pair<double, std::string>> prompts;  // OpenAI: (time, prompt), newest last
  };
  AgentCache& For(const std::string& agent);
  // Automatic caching of `prompt` (OpenAI's rule).
  Usage Automatic(const std::string& agent, const std::string& prompt);

  const Clock now_;
  std::mutex mu_;
  std::map<std::string, AgentCache> agents_;  // guarded by mu_
};

}  // namespace mates::llm
