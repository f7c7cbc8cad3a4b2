#include "llm/validation.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>

namespace mates::llm {
namespace {

Status Bad(const std::string& msg) { return Status::InvalidArgument(msg); }

// OpenAI's words for tool calls left without their tool messages.
Status UnansweredToolCalls(const std::set<std::string>& pending) {
  std::string ids;
  for (const auto& id : pending) ids += (ids.empty() ? "" : ", ") + id;
  return Bad("An assistant message with 'tool_calls' must be followed by tool messages "
             "responding to each 'tool_call_id'. The following tool_call_ids did not have "
             "response messages: " + ids);
}

// ^[a-zA-Z0-9_-]{1,128}$, checked by hand: every request names every tool,
// and std::regex took ~0.35 µs a name, a fifth of validating a teammate's
// request (bench/serialize_bench).
bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

Status ValidateTools(const Json& tools, bool openai) {
  if (!tools.is_array()) return Bad("tools: Input should be a valid list");
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string at = "tools." + std::to_string(i);
    const Json& t = tools[i];
    if (!t.is_object()) return Bad(at + ": Input should be an object");
    const Json* fn = &t;
    if (openai) {
      if (StringOr(t, "type") != "function") return Bad(at + ".type: must be 'function'");
      if (!t.contains("function") || !t["function"].is_object()) return Bad(at + ".function: Field required");
      fn = &t["function"];
    }
    if (!fn->contains("name") || !(*fn)["name"].is_string()) return Bad(at + ".name: Field required");
    std::string name = (*fn)["name"].get<std::string>();
    if (!ValidToolName(name)) {
      return Bad(at + ".name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'");
    }
    if (!names.insert(name).second) return Bad("tools: Tool names must be unique.");
    const char* schema_key = openai ? "parameters" : "input_schema";
    if (!openai || fn->contains(schema_key)) {
      if (!fn->contains(schema_key) || !(*fn)[schema_key].is_object()) {
        return Bad(at + "." + schema_key + ": Field required");
      }
      if (!openai && StringOr((*fn)[schema_key], "type") != "object") {
        return Bad(at + ".input_schema.type: Input should be 'object'");
      }
    }
    if (fn->contains("description") && !(*fn)["description"].is_string()) {
      return Bad(at + ".description: Input should be a valid string");
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {

// The request's head: model, max_tokens, messages present, system, tools,
// metadata. Counts the cache breakpoints it holds into `cache_points`.
Status ValidateAnthropicHead(const Json& body, int* cache_points) {
  auto count_cache = [&](const Json& b) {
    if (b.is_object() && b.contains("cache_control")) ++*cache_points;
  };

  if (!body.is_object()) return Bad("request body must be a JSON object");
  if (!body.contains("model") || !body["model"].is_string() || body["model"].get<std::string>().empty()) {
    return Bad("model: Field required");
  }
  if (!body.contains("max_tokens") || !body["max_tokens"].is_number_integer() ||
      body["max_tokens"].get<int64_t>() < 1) {
    return Bad("max_tokens: Field required (an integer >= 1)");
  }
  if (!body.contains("messages") || !body["messages"].is_array()) return Bad("messages: Field required");
  if (body["messages"].empty()) return Bad("messages: at least one message is required");
  if (body.contains("system")) {
    const Json& sys = body["system"];
    if (sys.is_array()) {
      for (const auto& b : sys) {
        if (!b.is_object() || StringOr(b, "type") != "text" || !b.contains("text") ||
            !b["text"].is_string()) {
          return Bad("system: Input should be a valid list of text blocks");
        }
        count_cache(b);
      }
    } else if (!sys.is_string()) {
      return Bad("system: Input should be a valid string or list");
    }
  }
  if (body.contains("tools")) {
    MATES_RETURN_IF_ERROR(ValidateTools(body["tools"], /*openai=*/false));
    for (const auto& t : body["tools"]) count_cache(t);
  }
  if (body.contains("metadata")) {
    const Json& md = body["metadata"];
    if (!md.is_object()) return Bad("metadata: Input should be an object");
    if (md.contains("user_id") && !md["user_id"].is_null() &&
        (!md["user_id"].is_string() || md["user_id"].get<std::string>().size() > 256)) {
      return Bad("metadata.user_id: String should have at most 256 characters");
    }
  }

  return Status::Ok();
}

// Turns as the API sees them: consecutive same-role messages merged.
struct Turn {
  std::string role;
  std::vector<const Json*> blocks;
  size_t first_index;
};

// The messages, each block checked, gathered into turns.
Result<std::vector<Turn>> AnthropicTurns(const Json& msgs, bool strict_alternation, int* cache_points) {
  auto count_cache = [&](const Json& b) {
    if (b.is_object() && b.contains("cache_control")) ++*cache_points;
  };
  std::vector<Turn> turns;
  std::set<std::string> tool_use_ids;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Json& m = msgs[i];
    // Where, made only when something is wrong there: not two strings for
    // every block of every request.
    auto at = [i] { return "messages." + std::to_string(i); };
    if (!m.is_object()) return Bad(at() + ": Input should be an object");
    std::string role = StringOr(m, "role");
    if (!m.contains("content")) return Bad(at() + ".content: Field required");
    if (role == "system") {
      // Instructions between turns (current Claude Code sends them): text
      // only, and outside the user/assistant alternation.
      const Json& c = m["content"];
      bool text_only = c.is_string();
      if (c.is_array()) {
        text_only = true;
        for (const auto& b : c) text_only = text_only && b.is_object() && StringOr(b, "type") == "text";
      }
      if (!text_only) return Bad(at() + ".content: system messages may only contain text");
      continue;
    }
    if (role != "user" && role != "assistant") {
      return Bad(at() + ".role: Input should be 'user', 'assistant' or 'system'");
    }
    const Json& content = m["content"];
    std::vector<const Json*> blocks;
    if (content.is_string()) {
      if (content.get_ref<const std::string&>().empty() && !(role == "assistant" && i + 1 == msgs.size())) {
        return Bad(at() + ": text content blocks must be non-empty");
      }
    } else if (content.is_array()) {
      if (content.empty()) return Bad(at() + ": all messages must have non-empty content");
      for (size_t k = 0; k < content.size(); ++k) {
        const Json& b = content[k];
        auto bat = [&at, k] { return at() + ".content." + std::to_string(k); };
        if (!b.is_object()) return Bad(bat() + ": Input should be an object");
        std::string type = StringOr(b, "type");
        count_cache(b);
        if (type == "text") {
          if (!b.contains("text") || !b["text"].is_string()) return Bad(bat() + ".text: Field required");
          if (b["text"].get_ref<const std::string&>().empty()) return Bad(bat() + ": text content blocks must be non-empty");
        } else if (type == "tool_use") {
          if (role != "assistant") return Bad(bat() + ": tool_use blocks may only appear in assistant messages");
          if (!b.contains("id") || !b["id"].is_string()) return Bad(bat() + ".id: Field required");
          if (!b.contains("name") || !b["name"].is_string()) return Bad(bat() + ".name: Field required");
          if (!b.contains("input") || !b["input"].is_object()) return Bad(bat() + ".input: Input should be an object");
          if (!tool_use_ids.insert(b["id"].get<std::string>()).second) {
            return Bad(bat() + ": `tool_use` ids must be unique");
          }
        } else if (type == "tool_result") {
          if (role != "user") return Bad(bat() + ": tool_result blocks may only appear in user messages");
          if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
            return Bad(bat() + ".tool_use_id: Field required");
          }
        } else if (type != "image" && type != "document" && type != "thinking" &&
                   type != "redacted_thinking" && type != "server_tool_use" &&
                   type != "web_search_tool_result") {
          return Bad(bat() + ".type: unknown content block type '" + type + "'");
        }
        blocks.push_back(&b);
      }
    } else {
      return Bad(at() + ".content: Input should be a valid string or list");
    }
    if (!turns.empty() && turns.back().role == role) {
      if (strict_alternation) {
        return Bad(at() + ": roles must alternate between \"user\" and \"assistant\", but found "
                        "multiple \"" + role + "\" roles in a row");
      }
      for (const Json* b : blocks) turns.back().blocks.push_back(b);
    } else {
      turns.push_back({role, std::move(blocks), i});
    }
  }
  return turns;
}

// Every tool_use answered by a tool_result in the very next user turn, and
// no tool_result without its tool_use in the turn before. (AnthropicTurns
// checked the ids are strings; read without throwing all the same.)
Status CheckToolPairing(const std::vector<Turn>& turns) {
  for (size_t t = 0; t < turns.size(); ++t) {
    const Turn& turn = turns[t];
    if (turn.role == "assistant") {
      std::vector<std::string> ids;
      for (const Json* b : turn.blocks) {
        if (StringOr(*b, "type") == "tool_use") ids.push_back(StringOr(*b, "id"));
      }
      if (ids.empty()) continue;
      std::set<std::string> answered;
      if (t + 1 < turns.size()) {
        for (const Json* b : turns[t + 1].blocks) {
          if (StringOr(*b, "type") == "tool_result") answered.insert(StringOr(*b, "tool_use_id"));
        }
      } else {
        continue;  // the conversation ends with the call: nothing to answer yet
      }
      std::string missing;
      for (const auto& id : ids) {
        if (answered.count(id) == 0) missing += (missing.empty() ? "" : ", ") + id;
      }
      if (!missing.empty()) {
        return Bad("messages." + std::to_string(turns[t + 1].first_index) +
                   ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
                   missing + ". Each `tool_use` block must have a corresponding `tool_result` "
                             "block in the next message.");
      }
    } else {
      std::set<std::string> previous;
      if (t > 0) {
        for (const Json* b : turns[t - 1].blocks) {
          if (StringOr(*b, "type") == "tool_use") previous.insert(StringOr(*b, "id"));
        }
      }
      for (const Json* b : turn.blocks) {
        if (StringOr(*b, "type") != "tool_result") continue;
        std::string id = StringOr(*b, "tool_use_id");
        if (previous.count(id) == 0) {
          return Bad("messages." + std::to_string(turn.first_index) +
                     ": unexpected `tool_use_id` found in `tool_result` blocks: " + id +
                     ". Each `tool_result` block must have a corresponding `tool_use` block in "
                     "the previous message.");
        }
      }
    }
  }
  return Status::Ok();
  return Status::Ok();
}

}  // namespace

static Status ValidateAnthropicRequestUnguarded(const Json& body, bool strict_alternation) {
  if (!body.is_object()) return Bad("request body must be a JSON object");
  int cache_points = 0;
  MATES_RETURN_IF_ERROR(ValidateAnthropicHead(body, &cache_points));
  MATES_ASSIGN_OR_RETURN(std::vector<Turn> turns, AnthropicTurns(body["messages"], strict_alternation, &cache_points));
  if (turns.empty()) return Bad("messages: at least one user message is required");
  if (turns.front().role != "user") return Bad("messages: first message must use the \"user\" role");
  if (cache_points > 4) {
    return Bad("A maximum of 4 blocks with cache_control may be provided. Found " +
               std::to_string(cache_points) + ".");
  }
  return CheckToolPairing(turns);
}

static Status ValidateOpenAIRequestUnguarded(const Json& body) {
  if (!body.is_object()) return Bad("request body must be a JSON object");
  if (!body.contains("model") || !body["model"].is_string()) {
    return Bad("you must provide a model parameter");
  }
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    return Bad("'messages' must be a non-empty array");
  }
  if (body.contains("tools")) MATES_RETURN_IF_ERROR(ValidateTools(body["tools"], /*openai=*/true));
  const Json& msgs = body["messages"];
  std::set<std::string> pending;  // calls not answered yet
  bool in_tool_run = false;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Json& m = msgs[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return Bad(at + ": must be an object");
    std::string role = StringOr(m, "role");
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" &&
        role != "tool") {
      return Bad("Invalid value: '" + role + "'. Supported values are: 'system', 'assistant', "
                 "'user', 'tool', and 'developer'.");
    }
    // content: a string, null (an assistant's with tool calls), or parts
    // with a string type, and text parts with a string text.
    if (m.contains("content")) {
      const Json& c = m["content"];
      if (c.is_array()) {
        for (size_t k = 0; k < c.size(); ++k) {
          std::string pat = at + ".content[" + std::to_string(k) + "]";
          if (!c[k].is_object() || !c[k].contains("type") || !c[k]["type"].is_string()) {
            return Bad(pat + ": each part needs a 'type'");
          }
          if (StringOr(c[k], "type") == "text" && (!c[k].contains("text") || !c[k]["text"].is_string())) {
            return Bad(pat + ".text: Input should be a valid string");
          }
        }
      } else if (!c.is_string() && !c.is_null()) {
        return Bad(at + ".content: Input should be a valid string or a list of parts");
      }
    }
    if (role == "tool") {
      std::string id = StringOr(m, "tool_call_id");
      if (!in_tool_run || pending.count(id) == 0) {
        return Bad("Invalid parameter: messages with role 'tool' must be a response to a "
                   "preceeding message with 'tool_calls'.");
      }
      pending.erase(id);
      continue;
    }
    if (!pending.empty()) return UnansweredToolCalls(pending);
    in_tool_run = false;
    if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array()) {
      for (const auto& tc : m["tool_calls"]) {
        if (!tc.is_object() || !tc.contains("id") || !tc["id"].is_string()) {
          return Bad(at + ".tool_calls: each call needs an id");
        }
        pending.insert(tc["id"].get<std::string>());
      }
      in_tool_run = !pending.empty();
    }
  }
  if (!pending.empty()) return UnansweredToolCalls(pending);
  return Status::Ok();
}

namespace {
// A request is input from anyone: whatever shape it has, the answer is a
// 400 naming the problem, never an exception (a 500 from mock-llm).
template <typename F>
Status Guarded(const Json& body, F check) {
  if (!body.is_object()) {
    return Bad(std::string("the request body must be a JSON object, got ") + body.type_name());
  }
  try {
    return check();
  } catch (const std::exception& e) {
    return Bad(std::string("malformed request: ") + e.what());
  }
}
}  // namespace

Status ValidateAnthropicRequest(const Json& body, bool strict_alternation) {
  return Guarded(body, [&] { return ValidateAnthropicRequestUnguarded(body, strict_alternation); });
}

Status ValidateOpenAIRequest(const Json& body) {
  return Guarded(body, [&] { return ValidateOpenAIRequestUnguarded(body); });
}

}  // namespace mates::llm
