// Request validation as the real APIs do it (DESIGN §6), used by
// `mates mock-llm` and by the scripted provider, so that a conversation the
// real API would refuse fails offline too. Messages follow the APIs' wording.
#pragma once

#include <string>

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

// OpenAI Responses: model and input present, input items well-formed (types
// mates does not model pass), every function_call answered by a
// function_call_output with its call_id and no output without its call,
// function tools well-formed and unique, no previous_response_id (the mock
// stores nothing), max_output_tokens >= 16.
Status ValidateResponsesRequest(const Json& body);

// Gemini generateContent for `model`: non-empty contents with known roles
// and well-formed parts, a function response turn right after its call
// turn with as many parts, on a Gemini 3 model the first call of each model
// turn of the current turn signed (thoughtSignature), well-formed and
// unique function declarations.
Status ValidateGeminiRequest(const Json& body, const std::string& model);

}  // namespace mates::llm
