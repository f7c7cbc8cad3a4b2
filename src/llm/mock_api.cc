// See mock_api.h: what the APIs share, Anthropic Messages and OpenAI Chat
// Completions.
#include "llm/mock_api.h"

#include <algorithm>

#include "core/clock.h"
#include "core/ids.h"
#include "llm/prompt_cache.h"
#include "llm/scripted.h"
#include "llm/validation.h"

namespace mates::llm {
namespace mock {

std::vector<std::string> SplitUtf8(const std::string& s, size_t n) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t end = std::min(s.size(), i + std::max<size_t>(n, 1));
    while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
    out.push_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

// A const operator[] on a missing key is undefined behaviour.
const Json& Field(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

bool Flag(const Json& obj, const char* key) {
  const Json& v = Field(obj, key);
  return v.is_boolean() && v.get<bool>();
}

std::string ErrorTypeFor(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return "api_error";
  }
}

std::string AnthropicError(const std::string& type, const std::string& message) {
  return DumpJson(Json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}});
}

std::string OpenAIError(const std::string& type, const std::string& message) {
  return DumpJson(Json{{"error", {{"message", message}, {"type", type}, {"param", nullptr},
                                  {"code", nullptr}}}});
}

std::string JoinOldestFirst(const std::vector<std::string>& newest_first) {
  std::string out;
  for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) {
    if (!out.empty()) out += "\n";
    out += *it;
  }
  return out;
}

void NameCallsAsOffered(const std::vector<std::string>& offered, ScenarioReply* reply) {
  for (auto& b : reply->content) {
    if (b.type != BlockType::kToolUse) continue;
    if (std::find(offered.begin(), offered.end(), b.name) != offered.end()) continue;
    const std::string* only = nullptr;
    int found = 0;
    for (const auto& name : offered) {
      if (name.size() > b.name.size() && name.compare(name.size() - b.name.size(), b.name.size(), b.name) == 0 &&
          name[name.size() - b.name.size() - 1] == '_') {
        only = &name;
        ++found;
      }
    }
    if (found == 1) b.name = *only;
  }
}

int64_t OutputTokens(const ScenarioReply& reply) {
  int64_t n = 0;
  for (const auto& b : reply.content) n += EstimateTokens(b.type == BlockType::kText ? b.text : b.input_json);
  return n;
}

}  // namespace mock

namespace {

using mock::AnthropicError;
using mock::Field;

// The text of a message's content, string or parts (parts of type "text"
// only), joined by newlines.
std::string PartsText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const auto& p : content) {
    if (StringOr(p, "type") != "text") continue;
    if (!out.empty()) out += "\n";
    out += StringOr(p, "text");
  }
  return out;
}

class AnthropicApi : public MockApi {
 public:
  std::string AgentId(const Json& body) const override { return StringOr(Field(body, "metadata"), "user_id"); }
  Status Validate(const MockCall& call) const override {
    return ValidateAnthropicRequest(call.body, /*strict_alternation=*/false);
  }

  // Tolerant of block types mates does not model, as real clients send them.
  std::string UserText(const Json& body) const override {
    const Json& msgs = Field(body, "messages");
    for (auto it = msgs.rbegin(); it != msgs.rend(); ++it) {
      if (StringOr(*it, "role") != "user") continue;
      const Json& c = Field(*it, "content");
      if (c.is_string()) return c.get<std::string>();
      std::string out;
      for (const auto& b : c) {
        std::string type = StringOr(b, "type");
        if (type != "text" && type != "tool_result") continue;
        if (!out.empty()) out += "\n";
        out += type == "text" ? StringOr(b, "text") : PartsText(Field(b, "content"));
      }
      return out;
    }
    return "";
  }

  std::vector<std::string> OfferedTools(const Json& body) const override {
    std::vector<std::string> out;
    for (const auto& t : Field(body, "tools")) out.push_back(StringOr(t, "name"));
    return out;
  }
  Usage Accounted(PromptCache& cache, const MockCall& call) const override {
    return cache.Anthropic(AgentName(call.agent_id), call.body);
  }
  std::string Error(int, const std::string& type, const std::string& message) const override {
    return AnthropicError(type, message);
  }

  std::string Whole(const ScenarioReply& reply, const MockCall& call, const Usage& usage) const override {
    Response r;
    r.id = NewId("msg");
    r.model = call.model;
    r.content = reply.content;
    r.stop_reason = reply.stop_reason;
    r.usage = usage;
    return DumpJson(ResponseToJson(r));
  }

  std::vector<std::string> Events(const ScenarioReply& reply, const MockCall& call, const Usage& usage,
                                  size_t text_chunk) const override {
    std::vector<std::string> ev;
    auto add = [&](const char* name, const Json& data) {
      ev.push_back(std::string("event: ") + name + "\ndata: " + DumpJson(data) + "\n\n");
    };
    add("message_start",
        {{"type", "message_start"},
         {"message",
          {{"id", NewId("msg")}, {"type", "message"}, {"role", "assistant"}, {"model", call.model},
           {"content", Json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
           {"usage", {{"input_tokens", usage.input_tokens},
                      {"cache_creation_input_tokens", usage.cache_creation_input_tokens},
                      {"cache_read_input_tokens", usage.cache_read_input_tokens}, {"output_tokens", 1}}}}}});
    add("ping", {{"type", "ping"}});
    for (size_t i = 0; i < reply.content.size(); ++i) {
      const ContentBlock& b = reply.content[i];
      if (b.type == BlockType::kText) {
        add("content_block_start", {{"type", "content_block_start"}, {"index", i},
                                    {"content_block", {{"type", "text"}, {"text", ""}}}});
        for (const auto& piece : mock::SplitUtf8(b.text, text_chunk)) {
          add("content_block_delta", {{"type", "content_block_delta"}, {"index", i},
                                      {"delta", {{"type", "text_delta"}, {"text", piece}}}});
        }
      } else {
        add("content_block_start",
            {{"type", "content_block_start"}, {"index", i},
             {"content_block", {{"type", "tool_use"}, {"id", b.id}, {"name", b.name},
                                {"input", Json::object()}}}});
        for (const auto& piece : mock::SplitUtf8(b.input_json, 16)) {
          add("content_block_delta", {{"type", "content_block_delta"}, {"index", i},
                                      {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
        }
      }
      add("content_block_stop", {{"type", "content_block_stop"}, {"index", i}});
    }
    add("message_delta", {{"type", "message_delta"},
                          {"delta", {{"stop_reason", reply.stop_reason}, {"stop_sequence", nullptr}}},
                          {"usage", {{"output_tokens", usage.output_tokens}}}});
    add("message_stop", {{"type", "message_stop"}});
    return ev;
  }

  std::string Ping(const MockCall&) const override { return "event: ping\ndata: {\"type\": \"ping\"}\n\n"; }
  std::string ErrorEvent(const MockCall&, const std::string& message) const override {
    return "event: error\ndata: " + AnthropicError("overloaded_error", message) + "\n\n";
  }
  std::string UnknownModel(const std::string& model) const override {
    return AnthropicError("not_found_error", "model: " + model);
  }
};

std::string FinishReason(const std::string& stop_reason) {
  if (stop_reason == "tool_use") return "tool_calls";
  if (stop_reason == "max_tokens") return "length";
  if (stop_reason == "refusal") return "content_filter";
  return "stop";
}

// OpenAI's usage: prompt_tokens counts the cached ones too.
Json ChatUsage(const Usage& u) {
  return {{"prompt_tokens", u.input_tokens},
          {"completion_tokens", u.output_tokens},
          {"total_tokens", u.input_tokens + u.output_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cache_read_input_tokens}}}};
}

class ChatApi : public MockApi {
 public:
  std::string AgentId(const Json& body) const override { return StringOr(body, "user"); }
  Status Validate(const MockCall& call) const override { return ValidateOpenAIRequest(call.body); }

  // Everything after the last assistant message: tool results and user text.
  std::string UserText(const Json& body) const override {
    const Json& msgs = Field(body, "messages");
    std::vector<std::string> parts;
    for (auto it = msgs.rbegin(); it != msgs.rend(); ++it) {
      std::string role = StringOr(*it, "role");
      if (role == "assistant") break;
      if (role != "user" && role != "tool") continue;
      parts.push_back(PartsText(Field(*it, "content")));
    }
    return mock::JoinOldestFirst(parts);
  }

  std::vector<std::string> OfferedTools(const Json& body) const override {
    std::vector<std::string> out;
    for (const auto& t : Field(body, "tools")) out.push_back(StringOr(Field(t, "function"), "name"));
    return out;
  }
  Usage Accounted(PromptCache& cache, const MockCall& call) const override {
    return cache.OpenAI(AgentName(call.agent_id), call.body);
  }
  std::string Error(int, const std::string& type, const std::string& message) const override {
    return mock::OpenAIError(type, message);
  }

  std::string Whole(const ScenarioReply& reply, const MockCall& call, const Usage& usage) const override {
    Json msg = {{"role", "assistant"}};
    std::string text;
    Json calls = Json::array();
    for (const auto& b : reply.content) {
      if (b.type == BlockType::kText) {
        text += b.text;
      } else {
        calls.push_back({{"id", b.id}, {"type", "function"},
                         {"function", {{"name", b.name}, {"arguments", b.input_json}}}});
      }
    }
    msg["content"] = text.empty() ? Json(nullptr) : Json(text);
    if (!calls.empty()) msg["tool_calls"] = calls;
    return DumpJson(Json{{"id", NewId("chatcmpl")}, {"object", "chat.completion"},
                         {"created", static_cast<int64_t>(WallSeconds())}, {"model", call.model},
                         {"choices", Json::array({{{"index", 0}, {"message", msg},
                                                   {"finish_reason", FinishReason(reply.stop_reason)}}})},
                         {"usage", ChatUsage(usage)}});
  }

  std::vector<std::string> Events(const ScenarioReply& reply, const MockCall& call, const Usage& usage,
                                  size_t text_chunk) const override {
    std::vector<std::string> ev;
    const std::string id = NewId("chatcmpl");
    const int64_t created = static_cast<int64_t>(WallSeconds());
    auto chunk = [&](const Json& delta, const Json& finish) {
      Json c = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", call.model},
                {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
      ev.push_back("data: " + DumpJson(c) + "\n\n");
    };
    chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
    int call_index = 0;
    for (const auto& b : reply.content) {
      if (b.type == BlockType::kText) {
        for (const auto& piece : mock::SplitUtf8(b.text, text_chunk)) chunk({{"content", piece}}, nullptr);
        continue;
      }
      chunk({{"tool_calls", Json::array({{{"index", call_index}, {"id", b.id}, {"type", "function"},
                                          {"function", {{"name", b.name}, {"arguments", ""}}}}})}},
            nullptr);
      for (const auto& piece : mock::SplitUtf8(b.input_json, 16)) {
        chunk({{"tool_calls", Json::array({{{"index", call_index}, {"function", {{"arguments", piece}}}}})}},
              nullptr);
      }
      ++call_index;
    }
    chunk(Json::object(), FinishReason(reply.stop_reason));
    if (mock::Flag(Field(call.body, "stream_options"), "include_usage")) {
      Json u = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", call.model},
                {"choices", Json::array()}, {"usage", ChatUsage(usage)}};
      ev.push_back("data: " + DumpJson(u) + "\n\n");
    }
    ev.push_back("data: [DONE]\n\n");
    return ev;
  }

  std::string Ping(const MockCall&) const override { return ": ping\n\n"; }
  std::string ErrorEvent(const MockCall&, const std::string& message) const override {
    return "data: " + mock::OpenAIError("overloaded_error", message) + "\n\n";
  }
  std::string UnknownModel(const std::string& model) const override {
    return DumpJson(Json{{"error", {{"message", "The model `" + model + "` does not exist or you do not have access to it."},
                                    {"type", "invalid_request_error"}, {"param", nullptr},
                                    {"code", "model_not_found"}}}});
  }
};

}  // namespace

std::unique_ptr<MockApi> AnthropicMockApi() { return std::make_unique<AnthropicApi>(); }
std::unique_ptr<MockApi> ChatMockApi() { return std::make_unique<ChatApi>(); }

}  // namespace mates::llm
