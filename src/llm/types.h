// The conversation as every provider sees it: messages made of content
// blocks (text, tool_use, tool_result), tool definitions, usage, response.
// The canonical JSON form is the Anthropic Messages API's (also what agent
// journals store); the OpenAI provider translates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace mates::llm {

enum class BlockType { kText, kToolUse, kToolResult };
enum class Role { kUser, kAssistant };

struct ContentBlock {
  BlockType type = BlockType::kText;
  std::string text;  // text; the content of a tool_result
  // tool_use
  std::string id;
  std::string name;
  std::string input_json = "{}";  // a compact JSON object
  // Set when the model's tool input could not be parsed (malformed JSON):
  // the tool is not run and the model is told this instead.
  std::string input_error;
  // What the provider signed the call with, sent back with it as it came
  // (Gemini's thoughtSignature; journals keep it as mates_signature).
  std::string signature;
  // tool_result
  std::string tool_use_id;
  bool is_error = false;

  static ContentBlock Text(std::string text);
  static ContentBlock ToolUse(std::string id, std::string name, std::string input_json);
  static ContentBlock ToolResult(std::string tool_use_id, std::string content, bool is_error);

  bool operator==(const ContentBlock&) const = default;
};

struct ChatMessage {
  Role role = Role::kUser;
  std::vector<ContentBlock> content;

  // The text blocks joined with newlines.
  std::string Text() const;

  bool operator==(const ChatMessage&) const = default;
};

struct ToolDef {
  std::string name;
  std::string description;
  std::string input_schema_json;  // a JSON Schema object
};

// A tool's input schema as JSON ({"type": "object"} if it does not parse).
// Every model call sends every definition: each distinct schema text is
// parsed once per process, not once per call (it was most of the time a
// request body took to build).
Json ToolSchema(const ToolDef& tool);

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
  int64_t cache_read_input_tokens = 0;

  Usage& operator+=(const Usage& o);
};

// Why the model stopped, as the agent acts on it. Unknown words (a
// provider's new reason) are kOther: the turn ends, as at end_turn.
enum class StopReason { kEndTurn, kToolUse, kMaxTokens, kStopSequence, kRefusal, kPauseTurn, kOther };
// Mapped once, here, from the provider's word (Anthropic's names; OpenAI's
// are mapped to them by its provider).
StopReason StopReasonOf(std::string_view word);

// Why the model stopped: end_turn, tool_use, max_tokens, stop_sequence,
// refusal, pause_turn (the word, for journals and people; stop() to act).
struct Response {
  std::vector<ContentBlock> content;
  std::string stop_reason;
  Usage usage;
  std::string model;
  std::string id;

  bool HasToolUse() const;
  std::string Text() const;
  StopReason stop() const { return StopReasonOf(stop_reason); }
};

struct Request {
  std::string model;  // "" = the provider's default
  std::string system;
  std::vector<ChatMessage> messages;
  std::vector<ToolDef> tools;
  int max_tokens = 8192;
  std::string agent_id;  // "name@team": metadata.user_id / user
  bool cache = true;     // prompt-caching breakpoints (Anthropic)
  double temperature = -1;  // < 0: the provider's default
};

// Canonical (Anthropic) JSON.
Json BlockToJson(const ContentBlock& b);
Result<ContentBlock> BlockFromJson(const Json& j);
Json MessageToJson(const ChatMessage& m);
Result<ChatMessage> MessageFromJson(const Json& j);
Json UsageToJson(const Usage& u);
// Lenient, for journals: what is not a count is 0.
Usage UsageFromJson(const Json& j);
// Strict, for server replies: each counter present must be an integer >= 0;
// `keys` name input, output, cache write and cache read (a key "" is not
// read). InvalidArgument naming the field otherwise.
struct UsageKeys {
  const char* input;
  const char* output;
  const char* cache_write;
  const char* cache_read;
};
inline constexpr UsageKeys kAnthropicUsageKeys = {"input_tokens", "output_tokens",
                                                  "cache_creation_input_tokens",
                                                  "cache_read_input_tokens"};
// What the server said of each counter: absent counters stay unset.
struct UsageReport {
  Usage usage;
  bool has_input = false, has_output = false, has_cache_write = false, has_cache_read = false;
};
Result<UsageReport> ParseUsage(const Json& j, const UsageKeys& keys);
Json ResponseToJson(const Response& r);
// A journal's or a test's response (every block type mates models).
Result<Response> ResponseFromJson(const Json& j);

std::string_view RoleName(Role r);
std::string NewToolUseId();

}  // namespace mates::llm
