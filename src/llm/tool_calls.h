// Tool calls as a server other than Anthropic's sends them (OpenAI Chat,
// Responses, Gemini), made into tool_use blocks the one way.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "llm/types.h"

namespace mates::llm {

struct RawToolCall {
  std::string id;         // may be empty or repeated: made present and unique
  std::string name;
  std::string arguments;  // a JSON text ("" = none)
  bool arguments_object = false;  // the server sent an object (Ollama, Gemini), not a text
};

// Appends `calls` to `r` as tool_use blocks: ids present and unique,
// arguments parsed (one over kMaxToolInputBytes, or not a JSON object,
// becomes the block's input_error, which the model is told). Unavailable
// (a malformed reply) when a call names no function.
Status AppendToolUses(std::vector<RawToolCall> calls, Response* r);

}  // namespace mates::llm
