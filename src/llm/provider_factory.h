// Builds the Provider a command asked for (DESIGN §6): --provider, --model,
// --base-url, --scenario, then the environment: ANTHROPIC_API_KEY,
// ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL (openai and
// openai-responses), GEMINI_API_KEY or GOOGLE_API_KEY,
// GOOGLE_GEMINI_BASE_URL (gemini, as Gemini CLI names them), MATES_MODEL.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "llm/provider.h"

namespace mates::llm {

struct ProviderConfig {
  std::string kind;      // anthropic | openai | openai-responses | gemini | scripted | "" (anthropic if a key is set)
  std::string model;     // "" = $MATES_MODEL, else the provider's default
  std::string base_url;  // "" = $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, else the public API
  std::string scenario;  // scripted: the scenario file
  double request_timeout_s = 0;  // one HTTP attempt, reply included; 0 = none
};

// InvalidArgument with what to do when the choice is incomplete (no
// provider and no key, scripted without a scenario, an unknown kind, a
// broken scenario file).
Result<std::unique_ptr<Provider>> MakeProvider(const ProviderConfig& config);

// One minimal call to `model` (16 tokens, "Reply with the word: ok"), its
// first failure the answer, no retry waited out (`doctor`, and `up` before
// it hosts anything, DESIGN §27): whether the provider is reachable, takes
// the key and knows the model. FailedPrecondition when the API refused it
// (the key, the model), else the failure as it came.
Status PreflightCall(Provider& provider, const std::string& model);

}  // namespace mates::llm
