#include "llm/validation.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace mates::llm {
namespace {

Status Bad(const std::string& msg) { return Status::InvalidArgument(msg); }

// OpenAI's words for tool calls left without their tool messages.
Status UnansweredToolCalls(const std::set<std::string_view>& pending) {
  std::string ids;
  for (std::string_view id : pending) {
    if (!ids.empty()) ids += ", ";
    ids += id;
  }
  return Bad("An assistant message with 'tool_calls' must be followed by tool messages "
             "responding to each 'tool_call_id'. The following tool_call_ids did not have "
             "response messages: " + ids);
}

// The value at `key` of an object, or null. One look-up: contains() and
// then [] were two, and StringOr copied; validating a teammate's request
// (bench/serialize_bench) was mostly that, at every call of the scripted
// provider.
// Lengths compared first: most keys differ in length, and the map's own
// find compared every key's bytes.
const Json* At(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  for (const auto& [k, v] : obj.get_ref<const Json::object_t&>()) {
    if (k.size() == key.size() && std::memcmp(k.data(), key.data(), key.size()) == 0) return &v;
  }
  return nullptr;
}
const std::string* StrAt(const Json& obj, std::string_view key) {
  const Json* v = At(obj, key);
  return v != nullptr ? v->get_ptr<const std::string*>() : nullptr;
}
std::string_view StrOr(const Json& obj, std::string_view key) {
  const std::string* s = StrAt(obj, key);
  return s != nullptr ? std::string_view(*s) : std::string_view();
}

// ^[a-zA-Z0-9_-]{1,128}$, checked by hand: every request names every tool,
// and std::regex took ~0.35 µs a name, a fifth of validating a teammate's
// request (bench/serialize_bench).
bool ValidToolName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

Status ValidateTools(const Json& tools, bool openai) {
  if (!tools.is_array()) return Bad("tools: Input should be a valid list");
  std::unordered_set<std::string_view> names;
  names.reserve(tools.size());
  for (size_t i = 0; i < tools.size(); ++i) {
    auto at = [i] { return "tools." + std::to_string(i); };  // made only for an error
    const Json& t = tools[i];
    if (!t.is_object()) return Bad(at() + ": Input should be an object");
    const Json* fn = &t;
    if (openai) {
      if (StrOr(t, "type") != "function") return Bad(at() + ".type: must be 'function'");
      fn = At(t, "function");
      if (fn == nullptr || !fn->is_object()) return Bad(at() + ".function: Field required");
    }
    const std::string* name = StrAt(*fn, "name");
    if (name == nullptr) return Bad(at() + ".name: Field required");
    if (!ValidToolName(*name)) {
      return Bad(at() + ".name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'");
    }
    if (!names.insert(*name).second) return Bad("tools: Tool names must be unique.");
    const char* schema_key = openai ? "parameters" : "input_schema";
    const Json* schema = At(*fn, schema_key);
    if (!openai || schema != nullptr) {
      if (schema == nullptr || !schema->is_object())
        return Bad(at() + "." + schema_key + ": Field required");
      if (!openai && StrOr(*schema, "type") != "object") {
        return Bad(at() + ".input_schema.type: Input should be 'object'");
      }
    }
    const Json* description = At(*fn, "description");
    if (description != nullptr && !description->is_string()) {
      return Bad(at() + ".description: Input should be a valid string");
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
    if (At(b, "cache_control") != nullptr) ++*cache_points;
  };

  if (!body.is_object()) return Bad("request body must be a JSON object");
  const std::string* model = StrAt(body, "model");
  if (model == nullptr || model->empty()) return Bad("model: Field required");
  const Json* max_tokens = At(body, "max_tokens");
  if (max_tokens == nullptr || !max_tokens->is_number_integer() || max_tokens->get<int64_t>() < 1) {
    return Bad("max_tokens: Field required (an integer >= 1)");
  }
  const Json* messages = At(body, "messages");
  if (messages == nullptr || !messages->is_array()) return Bad("messages: Field required");
  if (messages->empty()) return Bad("messages: at least one message is required");
  if (const Json* sys = At(body, "system"); sys != nullptr) {
    if (sys->is_array()) {
      for (const auto& b : *sys) {
        if (!b.is_object() || StrOr(b, "type") != "text" || StrAt(b, "text") == nullptr) {
          return Bad("system: Input should be a valid list of text blocks");
        }
        count_cache(b);
      }
    } else if (!sys->is_string()) {
      return Bad("system: Input should be a valid string or list");
    }
  }
  if (const Json* tools = At(body, "tools"); tools != nullptr) {
    MATES_RETURN_IF_ERROR(ValidateTools(*tools, /*openai=*/false));
    for (const auto& t : *tools) count_cache(t);
  }
  if (const Json* md = At(body, "metadata"); md != nullptr) {
    if (!md->is_object()) return Bad("metadata: Input should be an object");
    const Json* user_id = At(*md, "user_id");
    if (user_id != nullptr && !user_id->is_null() &&
        (!user_id->is_string() || user_id->get_ref<const std::string&>().size() > 256)) {
      return Bad("metadata.user_id: String should have at most 256 characters");
    }
  }

  return Status::Ok();
}

// Turns as the API sees them: consecutive same-role messages merged. Their
// blocks lie one after another in Turns::blocks (a turn merged into the one
// before only ever follows it), so a turn is a range there.
struct Turn {
  std::string_view role;  // "user" or "assistant", pointing into the body
  size_t begin, end;      // its blocks: Turns::blocks[begin, end)
  size_t first_index;     // its first message
};
struct Turns {
  std::vector<Turn> turns;
  std::vector<const Json*> blocks;
};

// One content block of message `i` (block `k`), of a `role` turn.
Status CheckBlock(const Json& b, std::string_view role, size_t i, size_t k,
                  std::unordered_set<std::string_view>& tool_use_ids, int* cache_points) {
  // Where, made only when something is wrong there.
  auto bat = [i, k] { return "messages." + std::to_string(i) + ".content." + std::to_string(k); };
  if (!b.is_object()) return Bad(bat() + ": Input should be an object");
  const std::string_view type = StrOr(b, "type");
  if (At(b, "cache_control") != nullptr) ++*cache_points;
  if (type == "text") {
    const std::string* text = StrAt(b, "text");
    if (text == nullptr) return Bad(bat() + ".text: Field required");
    if (text->empty()) return Bad(bat() + ": text content blocks must be non-empty");
  } else if (type == "tool_use") {
    if (role != "assistant") return Bad(bat() + ": tool_use blocks may only appear in assistant messages");
    const std::string* id = StrAt(b, "id");
    if (id == nullptr) return Bad(bat() + ".id: Field required");
    if (StrAt(b, "name") == nullptr) return Bad(bat() + ".name: Field required");
    const Json* input = At(b, "input");
    if (input == nullptr || !input->is_object())
      return Bad(bat() + ".input: Input should be an object");
    if (!tool_use_ids.insert(*id).second)
      return Bad(bat() + ": `tool_use` ids must be unique");
  } else if (type == "tool_result") {
    if (role != "user") return Bad(bat() + ": tool_result blocks may only appear in user messages");
    if (StrAt(b, "tool_use_id") == nullptr)
      return Bad(bat() + ".tool_use_id: Field required");
  } else if (type != "image" && type != "document" && type != "thinking" &&
             type != "redacted_thinking" && type != "server_tool_use" &&
             type != "web_search_tool_result") {
    return Bad(bat() + ".type: unknown content block type '" + std::string(type) + "'");
  }
  return Status::Ok();
}

// The messages, each block checked, gathered into turns.
Result<Turns> AnthropicTurns(const Json& msgs, bool strict_alternation, int* cache_points) {
  Turns out;
  out.turns.reserve(msgs.size());
  out.blocks.reserve(msgs.size());
  std::unordered_set<std::string_view> tool_use_ids;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Json& m = msgs[i];
    // Where, made only when something is wrong there: not two strings for
    // every block of every request.
    auto at = [i] { return "messages." + std::to_string(i); };
    if (!m.is_object()) return Bad(at() + ": Input should be an object");
    const std::string_view role = StrOr(m, "role");
    const Json* content_at = At(m, "content");
    if (content_at == nullptr) return Bad(at() + ".content: Field required");
    const Json& content = *content_at;
    if (role == "system") {
      // Instructions between turns (current Claude Code sends them): text
      // only, and outside the user/assistant alternation.
      bool text_only = content.is_string();
      if (content.is_array()) {
        text_only = true;
        for (const auto& b : content)
          text_only = text_only && b.is_object() && StrOr(b, "type") == "text";
      }
      if (!text_only) return Bad(at() + ".content: system messages may only contain text");
      continue;
    }
    if (role != "user" && role != "assistant") {
      return Bad(at() + ".role: Input should be 'user', 'assistant' or 'system'");
    }
    const size_t begin = out.blocks.size();
    if (content.is_string()) {
      if (content.get_ref<const std::string&>().empty() && !(role == "assistant" && i + 1 == msgs.size())) {
        return Bad(at() + ": text content blocks must be non-empty");
      }
    } else if (content.is_array()) {
      if (content.empty()) return Bad(at() + ": all messages must have non-empty content");
      for (size_t k = 0; k < content.size(); ++k) {
        const Json& b = content[k];
        MATES_RETURN_IF_ERROR(CheckBlock(b, role, i, k, tool_use_ids, cache_points));
        out.blocks.push_back(&b);
      }
    } else {
      return Bad(at() + ".content: Input should be a valid string or list");
    }
    if (!out.turns.empty() && out.turns.back().role == role) {
      if (strict_alternation) {
        return Bad(at() +
                   ": roles must alternate between \"user\" and \"assistant\", but found "
                   "multiple \"" +
                   std::string(role) + "\" roles in a row");
      }
      out.turns.back().end = out.blocks.size();
    } else {
      out.turns.push_back({role, begin, out.blocks.size(), i});
    }
  }
  return out;
}

// The ids the blocks of `turn` give under `id_key`, for blocks of `type`,
// into `ids` (cleared first), in their order.
void IdsOf(const Turns& all, const Turn& turn, std::string_view type, std::string_view id_key,
           std::vector<std::string_view>* ids) {
  ids->clear();
  for (size_t b = turn.begin; b < turn.end; ++b) {
    if (StrOr(*all.blocks[b], "type") == type) ids->push_back(StrOr(*all.blocks[b], id_key));
  }
}

// Every tool_use answered by a tool_result in the very next user turn, and
// no tool_result without its tool_use in the turn before. (AnthropicTurns
// checked the ids are strings; read without throwing all the same.) Looked
// up in sorted copies: a turn may hold thousands of calls.
Status CheckToolPairing(const Turns& all) {
  const std::vector<Turn>& turns = all.turns;
  std::vector<std::string_view> ids, others;
  for (size_t t = 0; t < turns.size(); ++t) {
    const Turn& turn = turns[t];
    if (turn.role == "assistant") {
      IdsOf(all, turn, "tool_use", "id", &ids);
      if (ids.empty()) continue;
      if (t + 1 >= turns.size())
        continue;  // the conversation ends with the call: nothing to answer yet
      IdsOf(all, turns[t + 1], "tool_result", "tool_use_id", &others);
      std::sort(others.begin(), others.end());
      std::string missing;
      for (std::string_view id : ids) {
        if (!std::binary_search(others.begin(), others.end(), id)) {
          if (!missing.empty()) missing += ", ";
          missing += id;
        }
      }
      if (!missing.empty()) {
        return Bad("messages." + std::to_string(turns[t + 1].first_index) +
                   ": `tool_use` ids were found without `tool_result` blocks immediately after: " +
                   missing + ". Each `tool_use` block must have a corresponding `tool_result` "
                             "block in the next message.");
      }
    } else {
      IdsOf(all, turn, "tool_result", "tool_use_id", &ids);
      if (ids.empty()) continue;
      others.clear();
      if (t > 0) IdsOf(all, turns[t - 1], "tool_use", "id", &others);
      std::sort(others.begin(), others.end());
      for (std::string_view id : ids) {
        if (!std::binary_search(others.begin(), others.end(), id)) {
          return Bad(
              "messages." + std::to_string(turn.first_index) +
              ": unexpected `tool_use_id` found in `tool_result` blocks: " + std::string(id) +
              ". Each `tool_result` block must have a corresponding `tool_use` block in "
              "the previous message.");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

static Status ValidateAnthropicRequestUnguarded(const Json& body, bool strict_alternation) {
  if (!body.is_object()) return Bad("request body must be a JSON object");
  int cache_points = 0;
  MATES_RETURN_IF_ERROR(ValidateAnthropicHead(body, &cache_points));
  MATES_ASSIGN_OR_RETURN(Turns turns,
                         AnthropicTurns(*At(body, "messages"), strict_alternation, &cache_points));
  if (turns.turns.empty()) return Bad("messages: at least one user message is required");
  if (turns.turns.front().role != "user")
    return Bad("messages: first message must use the \"user\" role");
  if (cache_points > 4) {
    return Bad("A maximum of 4 blocks with cache_control may be provided. Found " +
               std::to_string(cache_points) + ".");
  }
  return CheckToolPairing(turns);
}

static Status ValidateOpenAIRequestUnguarded(const Json& body) {
  if (!body.is_object()) return Bad("request body must be a JSON object");
  if (StrAt(body, "model") == nullptr) return Bad("you must provide a model parameter");
  const Json* messages = At(body, "messages");
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    return Bad("'messages' must be a non-empty array");
  }
  if (const Json* tools = At(body, "tools"); tools != nullptr) {
    MATES_RETURN_IF_ERROR(ValidateTools(*tools, /*openai=*/true));
  }
  const Json& msgs = *messages;
  std::set<std::string_view> pending;  // calls not answered yet
  bool in_tool_run = false;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Json& m = msgs[i];
    auto at = [i] { return "messages[" + std::to_string(i) + "]"; };  // made only for an error
    if (!m.is_object()) return Bad(at() + ": must be an object");
    const std::string_view role = StrOr(m, "role");
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" &&
        role != "tool") {
      return Bad("Invalid value: '" + std::string(role) +
                 "'. Supported values are: 'system', 'assistant', "
                 "'user', 'tool', and 'developer'.");
    }
    // content: a string, null (an assistant's with tool calls), or parts
    // with a string type, and text parts with a string text.
    if (const Json* content = At(m, "content"); content != nullptr) {
      const Json& c = *content;
      if (c.is_array()) {
        for (size_t k = 0; k < c.size(); ++k) {
          auto pat = [&at, k] { return at() + ".content[" + std::to_string(k) + "]"; };
          const std::string* type = StrAt(c[k], "type");
          if (type == nullptr) return Bad(pat() + ": each part needs a 'type'");
          if (*type == "text" && StrAt(c[k], "text") == nullptr) {
            return Bad(pat() + ".text: Input should be a valid string");
          }
        }
      } else if (!c.is_string() && !c.is_null()) {
        return Bad(at() + ".content: Input should be a valid string or a list of parts");
      }
    }
    if (role == "tool") {
      auto answered = pending.find(StrOr(m, "tool_call_id"));
      if (!in_tool_run || answered == pending.end()) {
        return Bad("Invalid parameter: messages with role 'tool' must be a response to a "
                   "preceeding message with 'tool_calls'.");
      }
      pending.erase(answered);
      continue;
    }
    if (!pending.empty()) return UnansweredToolCalls(pending);
    in_tool_run = false;
    const Json* calls = role == "assistant" ? At(m, "tool_calls") : nullptr;
    if (calls != nullptr && calls->is_array()) {
      for (const auto& tc : *calls) {
        const std::string* id = StrAt(tc, "id");
        if (id == nullptr) return Bad(at() + ".tool_calls: each call needs an id");
        pending.insert(*id);
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
Status CheckedWithoutThrowing(const Json& body, F check) {
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
  return CheckedWithoutThrowing(body, [&] { return ValidateAnthropicRequestUnguarded(body, strict_alternation); });
}

Status ValidateOpenAIRequest(const Json& body) {
  return CheckedWithoutThrowing(body, [&] { return ValidateOpenAIRequestUnguarded(body); });
}

}  // namespace mates::llm
