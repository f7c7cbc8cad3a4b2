// Request validation as the real APIs do it (DESIGN §6), used by
// `mates mock-llm` and by the scripted provider, so that a conversation the
// real API would refuse fails offline too. Messages follow the APIs' wording.
#pragma once

#include "core/json.h"
#include "core/status.h"

namespace mates::llm {

// Anthropic Messages: model and max_tokens present, messages non-empty, the
// first turn the user's, non-empty text blocks, every tool_use answered by a
// tool_result in the very next user turn, no orphan tool_result, unique
// tool_use ids, well-formed tools (names, object schemas, unique), at most
// 4 cache_control breakpoints. `strict_alternation`: roles must alternate
// (the API merges consecutive same-role turns; mates' own loop never sends
// them, and the scripted provider holds it to that).
Status ValidateAnthropicRequest(const Json& body, bool strict_alternation);

// OpenAI chat completions: model, non-empty messages with known roles, every
// assistant tool_call answered by a "tool" message before the next
// non-tool message, no tool message without its call, well-formed tools.
Status ValidateOpenAIRequest(const Json& body);

}  // namespace mates::llm
