#include "llm/openai_responses.h"

#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "llm/retry.h"

namespace mates::llm {
namespace {

constexpr int64_t kMaxOutputItems = 1024;

void AppendItems(const ChatMessage& m, Json* input) {
  if (m.role == Role::kAssistant) {
    std::string text = m.Text();
    if (!text.empty()) input->push_back({{"role", "assistant"}, {"content", std::move(text)}});
    for (const auto& b : m.content) {
      if (b.type != BlockType::kToolUse) continue;
      input->push_back({{"type", "function_call"}, {"call_id", b.id}, {"name", b.name}, {"arguments", b.input_json}});
    }
    return;
  }
  std::string text;
  for (const auto& b : m.content) {
    if (b.type == BlockType::kToolResult) {
      input->push_back({{"type", "function_call_output"}, {"call_id", b.tool_use_id},
                        {"output", b.is_error ? "Error: " + b.text : b.text}});
    } else if (b.type == BlockType::kText) {
      if (!text.empty()) text += "\n";
      text += b.text;
    }
  }
  if (!text.empty()) input->push_back({{"role", "user"}, {"content", std::move(text)}});
}

// Anthropic's names for why the model stopped.
std::string ResponsesStopReason(const std::string& status, const std::string& incomplete_reason, bool tool_calls,
                       bool refused) {
  if (tool_calls) return "tool_use";
  if (refused || incomplete_reason == "content_filter") return "refusal";
  if (status == "incomplete") return "max_tokens";
  return "end_turn";
}

Result<Usage> UsageFromResponses(const Json& u) {
  MATES_ASSIGN_OR_RETURN(UsageReport r, ParseUsage(u, UsageKeys{"input_tokens", "output_tokens", "", ""}));
  Usage usage = r.usage;
  MATES_ASSIGN_OR_RETURN(const Json* details, JsonObjectField(u, "input_tokens_details", false));
  if (details != nullptr) {
    auto cached = JsonInt(*details, "cached_tokens", false, 0);
    if (!cached.ok()) return cached.status().WithContext("usage.input_tokens_details");
    if (*cached < 0 || *cached > usage.input_tokens) {
      return Status::InvalidArgument("usage.input_tokens_details.cached_tokens is " + std::to_string(*cached) +
                                     ", outside [0, input_tokens]");
    }
    usage.cache_read_input_tokens = *cached;
    usage.input_tokens -= *cached;
  }
  return usage;
}

// One output item into `r`'s text, `calls` and `refused`.
Status TakeItem(const Json& item, std::string* text, std::vector<RawToolCall>* calls, bool* refused) {
  if (!item.is_object()) return Status::InvalidArgument("an output item is not an object");
  MATES_ASSIGN_OR_RETURN(std::string type, JsonString(item, "type", true));
  if (type == "function_call") {
    RawToolCall c;
    MATES_ASSIGN_OR_RETURN(c.id, JsonString(item, "call_id", false));
    MATES_ASSIGN_OR_RETURN(c.name, JsonString(item, "name", false));
    MATES_ASSIGN_OR_RETURN(c.arguments, JsonString(item, "arguments", false));
    if (c.arguments.size() > kMaxToolInputBytes + 1) c.arguments.resize(kMaxToolInputBytes + 1);  // said at parse
    calls->push_back(std::move(c));
    return Status::Ok();
  }
  if (type != "message") return Status::Ok();  // reasoning, web search, …: not kept
  MATES_ASSIGN_OR_RETURN(const Json* content, JsonArrayField(item, "content", false));
  if (content == nullptr) return Status::Ok();
  for (const auto& part : *content) {
    const std::string ptype = StringOr(part, "type");
    std::string piece;
    if (ptype == "output_text") {
      MATES_ASSIGN_OR_RETURN(piece, JsonString(part, "text", true));
    } else if (ptype == "refusal") {
      MATES_ASSIGN_OR_RETURN(piece, JsonString(part, "refusal", true));
      *refused = true;
    } else {
      continue;
    }
    if (text->size() + piece.size() > kMaxReplyBytes) {
      return Status::InvalidArgument("the reply's text is over " + std::to_string(kMaxReplyBytes) + " bytes");
    }
    *text += piece;
  }
  return Status::Ok();
}

Result<Response> FromItems(const Json& response, const Json& items) {
  Response r;
  MATES_ASSIGN_OR_RETURN(r.id, JsonString(response, "id", false));
  MATES_ASSIGN_OR_RETURN(r.model, JsonString(response, "model", false));
  MATES_ASSIGN_OR_RETURN(std::string status, JsonString(response, "status", false));
  if (status == "failed" || status == "cancelled") {
    const Json* err = response.contains("error") ? &response["error"] : nullptr;
    return Status::Unavailable("the response " + status +
                               (err != nullptr && err->is_object() ? ": " + StringOr(*err, "message") : ""));
  }
  MATES_ASSIGN_OR_RETURN(const Json* usage, JsonObjectField(response, "usage", false));
  if (usage != nullptr) {
    MATES_ASSIGN_OR_RETURN(r.usage, UsageFromResponses(*usage));
  }
  std::string incomplete_reason;
  MATES_ASSIGN_OR_RETURN(const Json* incomplete, JsonObjectField(response, "incomplete_details", false));
  if (incomplete != nullptr) {
    MATES_ASSIGN_OR_RETURN(incomplete_reason, JsonString(*incomplete, "reason", false));
  }
  if (!items.is_array()) return Status::InvalidArgument("'output' is not an array");
  if (static_cast<int64_t>(items.size()) > kMaxOutputItems) {
    return Status::InvalidArgument("over " + std::to_string(kMaxOutputItems) + " output items");
  }
  std::string text;
  std::vector<RawToolCall> calls;
  bool refused = false;
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = TakeItem(items[i], &text, &calls, &refused);
    if (!s.ok()) return s.WithContext("output[" + std::to_string(i) + "]");
  }
  if (!text.empty()) r.content.push_back(ContentBlock::Text(std::move(text)));
  const bool tool_calls = !calls.empty();
  MATES_RETURN_IF_ERROR(AppendToolUses(std::move(calls), &r));
  r.stop_reason = ResponsesStopReason(status, incomplete_reason, tool_calls, refused);
  return r;
}

}  // namespace

Json ResponsesRequestBody(const Request& request, const std::string& model, bool stream) {
  Json body = JsonObject(12);
  body["model"] = model;
  if (!request.system.empty()) body["instructions"] = request.system;
  Json input = Json::array();
  for (const auto& m : request.messages) AppendItems(m, &input);
  body["input"] = std::move(input);
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools) {
      tools.push_back({{"type", "function"}, {"name", t.name}, {"description", t.description},
                       {"parameters", ToolSchema(t)}, {"strict", false}});
    }
    body["tools"] = std::move(tools);
  }
  body["max_output_tokens"] = std::max(request.max_tokens, 16);
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  body["store"] = false;
  if (!request.agent_id.empty()) {
    body["prompt_cache_key"] = request.agent_id;
    if (request.agent_id.size() <= 64) body["safety_identifier"] = request.agent_id;
  }
  if (stream) body["stream"] = true;
  return body;
}

void ResponsesStreamAccumulator::OnEvent(const SseEvent& event) {
  if (failed() || complete_) return;
  ++events_;
  auto j = ParseJson(event.data);
  if (!j.ok()) {
    malformed_ = MalformedReply("event " + std::to_string(events_), j.status());
    return;
  }
  Status s = Apply(*j);
  if (!s.ok()) malformed_ = MalformedReply("event " + std::to_string(events_), s);
}

Status ResponsesStreamAccumulator::Apply(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument(std::string("not a JSON object but ") + j.type_name());
  MATES_ASSIGN_OR_RETURN(std::string type, JsonString(j, "type", true));
  if (type == "response.output_text.delta" || type == "response.refusal.delta") {
    MATES_ASSIGN_OR_RETURN(std::string delta, JsonString(j, "delta", true));
    text_bytes_ += delta.size();
    if (text_bytes_ > kMaxReplyBytes) {
      return Status::InvalidArgument("the reply's text is over " + std::to_string(kMaxReplyBytes) + " bytes");
    }
    if (text_ != nullptr && type == "response.output_text.delta") text_->Text(delta);
  } else if (type == "response.output_item.done") {
    MATES_ASSIGN_OR_RETURN(int64_t index, JsonInt(j, "output_index", true));
    if (index < 0 || index >= kMaxOutputItems) {
      return Status::InvalidArgument("output_index " + std::to_string(index) + " is not in [0, " +
                                     std::to_string(kMaxOutputItems) + ")");
    }
    MATES_ASSIGN_OR_RETURN(const Json* item, JsonObjectField(j, "item", true));
    items_[index] = *item;
  } else if (type == "response.completed" || type == "response.incomplete") {
    MATES_ASSIGN_OR_RETURN(const Json* response, JsonObjectField(j, "response", true));
    final_ = *response;
    complete_ = true;
  } else if (type == "response.failed") {
    MATES_ASSIGN_OR_RETURN(const Json* response, JsonObjectField(j, "response", true));
    const Json& err = response->contains("error") ? (*response)["error"] : Json();
    error_ = Status::Unavailable("stream error: " + (err.is_object() ? StringOr(err, "code") + ": " +
                                                                           StringOr(err, "message")
                                                                     : std::string("the response failed")));
  } else if (type == "error") {
    error_ = Status::Unavailable("stream error: " + StringOr(j, "code", "error") + ": " + StringOr(j, "message"));
  }
  return Status::Ok();
}

Result<Response> ResponsesStreamAccumulator::Take() {
  // The final response's items when it has them; else the items as they
  // were done (servers that send the end without its output).
  const Json* output = final_.is_object() && final_.contains("output") ? &final_["output"] : nullptr;
  Json items = Json::array();
  if (output != nullptr && output->is_array() && !output->empty()) {
    items = *output;
  } else {
    for (auto& [i, item] : items_) items.push_back(std::move(item));
  }
  auto r = FromItems(final_.is_object() ? final_ : Json::object(), items);
  if (!r.ok()) return MalformedReply("response.completed", r.status());
  return r;
}

Result<Response> ResponsesResponseFromJson(const Json& j) {
  if (!j.is_object()) return MalformedReply("reply", Status::InvalidArgument("not a JSON object"));
  auto output = JsonArrayField(j, "output", true);
  if (!output.ok()) return MalformedReply("reply", output.status());
  auto r = FromItems(j, **output);
  if (!r.ok()) return MalformedReply("reply", r.status());
  return r;
}

ResponsesProvider::ResponsesProvider(ResponsesOptions options, std::unique_ptr<HttpTransport> transport)
    : HttpProvider(options, std::move(transport)), context_window_(options.context_window) {}

std::string ResponsesProvider::Body(const Request& request, const std::string& model) const {
  return DumpJson(ResponsesRequestBody(request, model, options().stream));
}

std::vector<std::string> ResponsesProvider::Headers(const Request&) const {
  if (options().api_key.empty()) return {};
  return {"authorization: Bearer " + options().api_key};
}

std::unique_ptr<StreamReader> ResponsesProvider::Reader(TextDeduper* text) const {
  return std::make_unique<ResponsesStreamAccumulator>(text);
}

}  // namespace mates::llm
