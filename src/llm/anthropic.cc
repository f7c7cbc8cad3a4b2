#include "llm/anthropic.h"

#include <nlohmann/json.hpp>

namespace mates::llm {
namespace {

Json CacheControl() { return {{"type", "ephemeral"}}; }

// Parses a tool's input JSON as the stream delivered it; what cannot be
// parsed is kept as an error the model will be shown.
void SetToolInput(ContentBlock* b, const std::string& raw) {
  if (raw.empty()) {
    b->input_json = "{}";
    return;
  }
  auto j = ParseJson(raw);
  if (j.ok() && j->is_object()) {
    b->input_json = DumpJson(*j);
    return;
  }
  b->input_json = "{}";
  b->input_error = "the tool input was not a valid JSON object (" +
                   (j.ok() ? std::string("got ") + j->type_name() : j.status().message()) +
                   "): " + raw.substr(0, 300);
}

}  // namespace

Json AnthropicRequestBody(const Request& request, const std::string& model, bool stream) {
  Json body = {{"model", model}, {"max_tokens", request.max_tokens}};
  if (!request.system.empty()) {
    Json sys = {{"type", "text"}, {"text", request.system}};
    if (request.cache) sys["cache_control"] = CacheControl();
    body["system"] = Json::array({sys});
  }
  Json messages = Json::array();
  for (const auto& m : request.messages) messages.push_back(MessageToJson(m));
  // Cache breakpoints (at most 4 in all): tools, system, and the last block
  // of the two newest user turns, so each call reads what the previous one
  // wrote.
  if (request.cache) {
    int marked = 0;
    for (size_t i = messages.size(); i-- > 0 && marked < 2;) {
      if (messages[i]["role"] != "user" || messages[i]["content"].empty()) continue;
      messages[i]["content"].back()["cache_control"] = CacheControl();
      ++marked;
    }
  }
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools) {
      auto schema = ParseJson(t.input_schema_json);
      tools.push_back({{"name", t.name},
                       {"description", t.description},
                       {"input_schema", schema.ok() ? *schema : Json{{"type", "object"}}}});
    }
    if (request.cache) tools.back()["cache_control"] = CacheControl();
    body["tools"] = std::move(tools);
  }
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  if (!request.agent_id.empty()) body["metadata"] = {{"user_id", request.agent_id}};
  if (stream) body["stream"] = true;
  return body;
}

void AnthropicStreamAccumulator::OnEvent(const SseEvent& event) {
  auto data = ParseJson(event.data);
  if (!data.ok() || !data->is_object()) return;  // pings and oddities
  const Json& j = *data;
  std::string type = event.event.empty() ? j.value("type", "") : event.event;
  if (type == "message_start") {
    const Json& msg = j.contains("message") ? j["message"] : Json::object();
    response_.id = msg.value("id", "");
    response_.model = msg.value("model", "");
    if (msg.contains("usage")) response_.usage = UsageFromJson(msg["usage"]);
  } else if (type == "content_block_start") {
    int index = j.value("index", 0);
    const Json& cb = j.contains("content_block") ? j["content_block"] : Json::object();
    Partial p;
    std::string btype = cb.value("type", "");
    if (btype == "text") {
      p.block = ContentBlock::Text(cb.value("text", ""));
      if (!p.block.text.empty() && text_ != nullptr) text_->Text(p.block.text);
    } else if (btype == "tool_use") {
      p.block = ContentBlock::ToolUse(cb.value("id", ""), cb.value("name", ""), "{}");
      if (cb.contains("input") && cb["input"].is_object() && !cb["input"].empty()) {
        p.json = DumpJson(cb["input"]);
      }
    } else {
      p.known = false;  // thinking, server tools…: not kept
    }
    blocks_[index] = std::move(p);
  } else if (type == "content_block_delta") {
    auto it = blocks_.find(j.value("index", 0));
    if (it == blocks_.end() || !it->second.known || !j.contains("delta")) return;
    const Json& d = j["delta"];
    std::string dtype = d.value("type", "");
    if (dtype == "text_delta") {
      std::string t = d.value("text", "");
      it->second.block.text += t;
      if (text_ != nullptr) text_->Text(t);
    } else if (dtype == "input_json_delta") {
      it->second.json += d.value("partial_json", "");
    }
  } else if (type == "content_block_stop") {
    auto it = blocks_.find(j.value("index", 0));
    if (it != blocks_.end() && it->second.known && it->second.block.type == BlockType::kToolUse) {
      SetToolInput(&it->second.block, it->second.json);
    }
  } else if (type == "message_delta") {
    if (j.contains("delta") && j["delta"].is_object()) {
      auto sr = j["delta"].find("stop_reason");
      if (sr != j["delta"].end() && sr->is_string()) response_.stop_reason = sr->get<std::string>();
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      // Cumulative: the latest value of each counter wins when given.
      Usage u = UsageFromJson(j["usage"]);
      if (u.output_tokens > 0) response_.usage.output_tokens = u.output_tokens;
      if (u.input_tokens > 0) response_.usage.input_tokens = u.input_tokens;
      if (u.cache_creation_input_tokens > 0) {
        response_.usage.cache_creation_input_tokens = u.cache_creation_input_tokens;
      }
      if (u.cache_read_input_tokens > 0) {
        response_.usage.cache_read_input_tokens = u.cache_read_input_tokens;
      }
    }
  } else if (type == "message_stop") {
    complete_ = true;
  } else if (type == "error") {
    const Json& e = j.contains("error") ? j["error"] : Json::object();
    error_ = Status::Unavailable("stream error " + e.value("type", std::string("error")) + ": " +
                                 e.value("message", std::string("")));
  }
  // ping and unknown events: nothing to do.
}

Response AnthropicStreamAccumulator::TakeResponse() {
  for (auto& [index, p] : blocks_) {
    if (p.known) response_.content.push_back(std::move(p.block));
  }
  blocks_.clear();
  return std::move(response_);
}

AnthropicProvider::AnthropicProvider(AnthropicOptions options,
                                     std::unique_ptr<HttpTransport> transport)
    : options_(std::move(options)), transport_(std::move(transport)) {}

int64_t AnthropicProvider::ContextWindow(const std::string&) const { return 200000; }

Result<Response> AnthropicProvider::Complete(const Request& request,
                                             const StreamCallbacks& callbacks,
                                             CancelToken* cancel) {
  std::string model = request.model.empty() ? options_.model : request.model;
  std::string body = DumpJson(AnthropicRequestBody(request, model, options_.stream));
  TextDeduper text(callbacks.on_text);
  return RunWithRetries(options_.retry, callbacks, cancel, [&](AttemptFailure* failure) {
    text.NewAttempt();
    return Attempt(request, body, &text, cancel, failure);
  });
}

Result<Response> AnthropicProvider::Attempt(const Request&, const std::string& body,
                                            TextDeduper* text, CancelToken* cancel,
                                            AttemptFailure* failure) {
  HttpRequest http;
  std::string base = options_.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  http.url = base + "/v1/messages";
  http.body = body;
  http.connect_timeout_s = options_.connect_timeout_s;
  http.low_speed_time_s = options_.stream ? options_.stall_timeout_s : 600;
  http.headers = {"content-type: application/json", "anthropic-version: 2023-06-01",
                  "accept: " + std::string(options_.stream ? "text/event-stream" : "application/json")};
  if (!options_.api_key.empty()) http.headers.push_back("x-api-key: " + options_.api_key);

  AnthropicStreamAccumulator acc(text);
  SseParser sse([&](const SseEvent& e) { acc.OnEvent(e); });
  auto j = PostAttempt(*transport_, http, options_.stream,
                       [&](std::string_view chunk) {
                         sse.Feed(chunk);
                         return acc.error().ok();  // an error event ends this attempt
                       },
                       cancel, failure);
  if (!j.ok()) return j.status();
  if (!options_.stream) {
    auto r = ResponseFromJson(*j);
    if (!r.ok()) {
      failure->status = r.status();
      return r.status();
    }
    if (text != nullptr) text->Text(r->Text());
    return r;
  }
  if (!acc.error().ok()) {
    failure->status = acc.error();
    failure->retryable = true;
    return failure->status;
  }
  if (!acc.complete()) {
    failure->status = Status::Unavailable("the stream ended before message_stop");
    failure->retryable = true;
    return failure->status;
  }
  return acc.TakeResponse();
}

}  // namespace mates::llm
