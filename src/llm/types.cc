#include "llm/types.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <mutex>
#include <unordered_map>

#include "core/ids.h"

namespace mates::llm {

Json ToolSchema(const ToolDef& tool) {
  // Bounded: tools come and go with MCP servers; past the bound the cache
  // starts over.
  constexpr size_t kMaxSchemas = 1024;
  static std::mutex mu;
  static auto* parsed = new std::unordered_map<std::string, Json>();  // guarded by mu
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = parsed->find(tool.input_schema_json);
    if (it != parsed->end()) return it->second;
  }
  auto schema = ParseJson(tool.input_schema_json);
  Json j = schema.ok() ? std::move(*schema) : Json{{"type", "object"}};
  std::lock_guard<std::mutex> lock(mu);
  if (parsed->size() >= kMaxSchemas) parsed->clear();
  parsed->emplace(tool.input_schema_json, j);
  return j;
}

ContentBlock ContentBlock::Text(std::string text) {
  ContentBlock b;
  b.type = BlockType::kText;
  b.text = std::move(text);
  return b;
}

ContentBlock ContentBlock::ToolUse(std::string id, std::string name, std::string input_json) {
  ContentBlock b;
  b.type = BlockType::kToolUse;
  b.id = std::move(id);
  b.name = std::move(name);
  b.input_json = std::move(input_json);
  return b;
}

ContentBlock ContentBlock::ToolResult(std::string tool_use_id, std::string content,
                                      bool is_error) {
  ContentBlock b;
  b.type = BlockType::kToolResult;
  b.tool_use_id = std::move(tool_use_id);
  b.text = std::move(content);
  b.is_error = is_error;
  return b;
}

std::string ChatMessage::Text() const {
  std::string out;
  for (const auto& b : content) {
    if (b.type != BlockType::kText) continue;
    if (!out.empty()) out += "\n";
    out += b.text;
  }
  return out;
}

// Counts come from outside (a server's reply, another program's
// transcript): a sum saturates rather than overflows.
Usage& Usage::operator+=(const Usage& o) {
  auto add = [](int64_t& into, int64_t more) {
    if (__builtin_add_overflow(into, more, &into)) into = more < 0 ? INT64_MIN : INT64_MAX;
  };
  add(input_tokens, o.input_tokens);
  add(output_tokens, o.output_tokens);
  add(cache_creation_input_tokens, o.cache_creation_input_tokens);
  add(cache_read_input_tokens, o.cache_read_input_tokens);
  return *this;
}

StopReason StopReasonOf(std::string_view word) {
  if (word == "end_turn") return StopReason::kEndTurn;
  if (word == "tool_use") return StopReason::kToolUse;
  if (word == "max_tokens") return StopReason::kMaxTokens;
  if (word == "stop_sequence") return StopReason::kStopSequence;
  if (word == "refusal") return StopReason::kRefusal;
  if (word == "pause_turn") return StopReason::kPauseTurn;
  return StopReason::kOther;
}

bool Response::HasToolUse() const {
  for (const auto& b : content) {
    if (b.type == BlockType::kToolUse) return true;
  }
  return false;
}

std::string Response::Text() const {
  std::string out;
  for (const auto& b : content) {
    if (b.type == BlockType::kText) out += b.text;
  }
  return out;
}

std::string_view RoleName(Role r) { return r == Role::kUser ? "user" : "assistant"; }

std::string NewToolUseId() {
  std::string id = NewId("toolu");
  id[5] = '_';  // "toolu_…", as the API names them
  return id;
}

// Built a member at a time, moved, not through initializer lists: those
// copy every value they hold, and a request body is all of a conversation's
// blocks on every call.
Json BlockToJson(const ContentBlock& b) {
  Json j = JsonObject(5);  // room for a cache breakpoint
  switch (b.type) {
    case BlockType::kText:
      j["type"] = "text";
      j["text"] = b.text;
      return j;
    case BlockType::kToolUse: {
      j["type"] = "tool_use";
      j["id"] = b.id;
      j["name"] = b.name;
      auto input = ParseJson(b.input_json);
      j["input"] = input.ok() && input->is_object() ? std::move(*input) : Json::object();
      if (!b.input_error.empty()) j["mates_input_error"] = b.input_error;
      if (!b.signature.empty()) j["mates_signature"] = b.signature;
      return j;
    }
    case BlockType::kToolResult:
      j["type"] = "tool_result";
      j["tool_use_id"] = b.tool_use_id;
      j["content"] = b.text;
      if (b.is_error) j["is_error"] = true;
      return j;
  }
  return j;
}

Result<ContentBlock> BlockFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a content block must be an object");
  MATES_ASSIGN_OR_RETURN(std::string type, JsonString(j, "type", true));
  ContentBlock b;
  if (type == "text") {
    b.type = BlockType::kText;
    MATES_ASSIGN_OR_RETURN(b.text, JsonString(j, "text", true));
  } else if (type == "tool_use") {
    b.type = BlockType::kToolUse;
    MATES_ASSIGN_OR_RETURN(b.id, JsonString(j, "id", true));
    MATES_ASSIGN_OR_RETURN(b.name, JsonString(j, "name", true));
    auto input = j.find("input");
    if (input != j.end() && !input->is_null()) {
      if (!input->is_object()) return Status::InvalidArgument("tool_use input must be an object");
      b.input_json = DumpJson(*input);
    }
    MATES_ASSIGN_OR_RETURN(b.input_error, JsonString(j, "mates_input_error", false));
    MATES_ASSIGN_OR_RETURN(b.signature, JsonString(j, "mates_signature", false));
  } else if (type == "tool_result") {
    b.type = BlockType::kToolResult;
    MATES_ASSIGN_OR_RETURN(b.tool_use_id, JsonString(j, "tool_use_id", true));
    MATES_ASSIGN_OR_RETURN(b.is_error, JsonBool(j, "is_error", false));
    auto content = j.find("content");
    if (content != j.end() && content->is_string()) {
      b.text = content->get<std::string>();
    } else if (content != j.end() && content->is_array()) {
      for (const auto& part : *content) {
        auto ptype = JsonString(part, "type", false);
        if (!ptype.ok() || *ptype != "text") continue;
        MATES_ASSIGN_OR_RETURN(std::string text, JsonString(part, "text", false));
        if (!b.text.empty()) b.text += "\n";
        b.text += text;
      }
    }
  } else {
    return Status::InvalidArgument("unsupported content block type '" + type + "'");
  }
  return b;
}

Json MessageToJson(const ChatMessage& m) {
  Json content = Json::array();
  content.get_ref<Json::array_t&>().reserve(m.content.size());
  for (const auto& b : m.content) content.push_back(BlockToJson(b));
  Json j = JsonObject(2);
  j["role"] = std::string(RoleName(m.role));
  j["content"] = std::move(content);
  return j;
}

Result<ChatMessage> MessageFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a message must be an object");
  ChatMessage m;
  MATES_ASSIGN_OR_RETURN(std::string role, JsonString(j, "role", true));
  if (role == "user") {
    m.role = Role::kUser;
  } else if (role == "assistant") {
    m.role = Role::kAssistant;
  } else {
    return Status::InvalidArgument("unknown role '" + role + "'");
  }
  auto content = j.find("content");
  if (content == j.end()) return Status::InvalidArgument("a message needs content");
  if (content->is_string()) {
    m.content.push_back(ContentBlock::Text(content->get<std::string>()));
  } else if (content->is_array()) {
    for (const auto& jb : *content) {
      MATES_ASSIGN_OR_RETURN(ContentBlock b, BlockFromJson(jb));
      m.content.push_back(std::move(b));
    }
  } else {
    return Status::InvalidArgument("message content must be a string or an array");
  }
  return m;
}

Json UsageToJson(const Usage& u) {
  return {{"input_tokens", u.input_tokens},
          {"output_tokens", u.output_tokens},
          {"cache_creation_input_tokens", u.cache_creation_input_tokens},
          {"cache_read_input_tokens", u.cache_read_input_tokens}};
}

Usage UsageFromJson(const Json& j) {
  Usage u;
  if (!j.is_object()) return u;
  auto get = [&](const char* k) -> int64_t {
    // One call reads at most a few million tokens: a larger count is
    // hostile or broken, and capped so that sums cannot overflow.
    constexpr int64_t kMaxTokensOfOneCall = 1'000'000'000'000;
    auto n = JsonInt(j, k, false, 0);
    return n.ok() && *n >= 0 ? std::min(*n, kMaxTokensOfOneCall) : 0;
  };
  u.input_tokens = get("input_tokens");
  u.output_tokens = get("output_tokens");
  u.cache_creation_input_tokens = get("cache_creation_input_tokens");
  u.cache_read_input_tokens = get("cache_read_input_tokens");
  return u;
}

Result<UsageReport> ParseUsage(const Json& j, const UsageKeys& keys) {
  if (!j.is_object()) {
    return Status::InvalidArgument(std::string("usage must be an object, got ") + j.type_name());
  }
  UsageReport r;
  auto read = [&](const char* key, int64_t* into, bool* has) -> Status {
    if (key == nullptr || *key == '\0') return Status::Ok();
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return Status::Ok();
    auto n = JsonInt(j, key, true);
    if (!n.ok()) return Status::InvalidArgument("usage: " + n.status().message());
    if (*n < 0) return Status::InvalidArgument(std::string("usage field '") + key + "' is negative");
    *into = *n;
    *has = true;
    return Status::Ok();
  };
  MATES_RETURN_IF_ERROR(read(keys.input, &r.usage.input_tokens, &r.has_input));
  MATES_RETURN_IF_ERROR(read(keys.output, &r.usage.output_tokens, &r.has_output));
  MATES_RETURN_IF_ERROR(read(keys.cache_write, &r.usage.cache_creation_input_tokens, &r.has_cache_write));
  MATES_RETURN_IF_ERROR(read(keys.cache_read, &r.usage.cache_read_input_tokens, &r.has_cache_read));
  return r;
}

Json ResponseToJson(const Response& r) {
  Json content = Json::array();
  for (const auto& b : r.content) content.push_back(BlockToJson(b));
  return {{"id", r.id},           {"type", "message"},
          {"role", "assistant"},  {"model", r.model},
          {"content", content},   {"stop_reason", r.stop_reason},
          {"stop_sequence", nullptr}, {"usage", UsageToJson(r.usage)}};
}

Result<Response> ResponseFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a response must be an object");
  Response r;
  MATES_ASSIGN_OR_RETURN(r.id, JsonString(j, "id", false));
  MATES_ASSIGN_OR_RETURN(r.model, JsonString(j, "model", false));
  MATES_ASSIGN_OR_RETURN(r.stop_reason, JsonString(j, "stop_reason", false));
  auto content = j.find("content");
  if (content != j.end() && content->is_array()) {
    for (const auto& jb : *content) {
      MATES_ASSIGN_OR_RETURN(ContentBlock b, BlockFromJson(jb));
      r.content.push_back(std::move(b));
    }
  }
  auto usage = j.find("usage");
  if (usage != j.end()) r.usage = UsageFromJson(*usage);
  return r;
}

}  // namespace mates::llm
