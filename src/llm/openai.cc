#include "llm/openai.h"

#include <nlohmann/json.hpp>

namespace mates::llm {
namespace {

std::string MapFinishReason(const std::string& finish, bool has_tool_calls) {
  // Some servers say "stop" even when they called tools.
  if (has_tool_calls) return "tool_use";
  if (finish == "length") return "max_tokens";
  if (finish == "content_filter") return "refusal";
  if (finish == "tool_calls" || finish == "function_call") return "tool_use";
  return "end_turn";
}

// Turns accumulated calls into tool_use blocks: ids made present and
// unique, arguments parsed (a malformed one becomes an error the model sees).
void AppendToolUses(std::vector<std::pair<std::string, std::pair<std::string, std::string>>> calls,
                    const std::vector<bool>& is_object, Response* r) {
  std::set<std::string> used;
  for (size_t i = 0; i < calls.size(); ++i) {
    auto& [id, fn] = calls[i];
    auto& [name, args] = fn;
    if (id.empty() || !used.insert(id).second) {
      id = NewToolUseId();
      used.insert(id);
    }
    ContentBlock b = ContentBlock::ToolUse(id, name, "{}");
    std::string raw = args;
    if (!is_object[i] && raw.find_first_not_of(" \t\r\n") == std::string::npos) raw = "{}";
    auto j = ParseJson(raw);
    if (j.ok() && j->is_object()) {
      b.input_json = DumpJson(*j);
    } else {
      b.input_error = "the arguments were not a valid JSON object (" +
                      (j.ok() ? std::string("got ") + j->type_name() : j.status().message()) +
                      "): " + raw.substr(0, 300);
    }
    r->content.push_back(std::move(b));
  }
}

Usage UsageFromOpenAI(const Json& u) {
  Usage usage;
  if (!u.is_object()) return usage;
  usage.input_tokens = u.value("prompt_tokens", 0);
  usage.output_tokens = u.value("completion_tokens", 0);
  if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
    usage.cache_read_input_tokens = u["prompt_tokens_details"].value("cached_tokens", 0);
    usage.input_tokens -= usage.cache_read_input_tokens;
  }
  return usage;
}

}  // namespace

Json OpenAIRequestBody(const Request& request, const std::string& model, bool stream) {
  Json messages = Json::array();
  if (!request.system.empty()) messages.push_back({{"role", "system"}, {"content", request.system}});
  for (const auto& m : request.messages) {
    if (m.role == Role::kAssistant) {
      Json msg = {{"role", "assistant"}};
      std::string text = m.Text();
      msg["content"] = text.empty() ? Json(nullptr) : Json(text);
      Json calls = Json::array();
      for (const auto& b : m.content) {
        if (b.type != BlockType::kToolUse) continue;
        calls.push_back({{"id", b.id},
                         {"type", "function"},
                         {"function", {{"name", b.name}, {"arguments", b.input_json}}}});
      }
      if (!calls.empty()) msg["tool_calls"] = calls;
      messages.push_back(msg);
      continue;
    }
    // A user turn: its tool results first (they must follow the assistant
    // message that called them), then its text.
    std::string text;
    for (const auto& b : m.content) {
      if (b.type == BlockType::kToolResult) {
        messages.push_back({{"role", "tool"},
                            {"tool_call_id", b.tool_use_id},
                            {"content", b.is_error ? "Error: " + b.text : b.text}});
      } else if (b.type == BlockType::kText) {
        if (!text.empty()) text += "\n";
        text += b.text;
      }
    }
    if (!text.empty()) messages.push_back({{"role", "user"}, {"content", text}});
  }
  Json body = {{"model", model}, {"messages", messages}, {"max_tokens", request.max_tokens}};
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools) {
      auto schema = ParseJson(t.input_schema_json);
      Json fn = {{"name", t.name},
                 {"description", t.description},
                 {"parameters", schema.ok() ? *schema : Json{{"type", "object"}}}};
      tools.push_back({{"type", "function"}, {"function", fn}});
    }
    body["tools"] = tools;
  }
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  if (!request.agent_id.empty()) body["user"] = request.agent_id;
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

void OpenAIStreamAccumulator::OnChunk(const Json& chunk) {
  if (!chunk.is_object()) return;
  if (chunk.contains("error")) {
    const Json& e = chunk["error"];
    error_ = Status::Unavailable("stream error: " +
                                 (e.is_object() ? e.value("message", std::string("")) : DumpJson(e)));
    return;
  }
  if (id_.empty()) id_ = chunk.value("id", "");
  if (model_.empty()) model_ = chunk.value("model", "");
  if (chunk.contains("usage") && chunk["usage"].is_object()) usage_ = UsageFromOpenAI(chunk["usage"]);
  if (!chunk.contains("choices") || !chunk["choices"].is_array()) return;
  for (const auto& choice : chunk["choices"]) {
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
      finish_reason_ = choice["finish_reason"].get<std::string>();
    }
    if (!choice.contains("delta") || !choice["delta"].is_object()) continue;
    const Json& d = choice["delta"];
    if (d.contains("content") && d["content"].is_string()) {
      std::string t = d["content"].get<std::string>();
      text_so_far_ += t;
      if (text_ != nullptr && !t.empty()) text_->Text(t);
    }
    if (!d.contains("tool_calls") || !d["tool_calls"].is_array()) continue;
    for (const auto& tc : d["tool_calls"]) {
      int index = tc.value("index", static_cast<int>(calls_.size()));
      Call& c = calls_[index];
      if (tc.contains("id") && tc["id"].is_string() && c.id.empty()) c.id = tc["id"].get<std::string>();
      if (!tc.contains("function") || !tc["function"].is_object()) continue;
      const Json& fn = tc["function"];
      if (fn.contains("name") && fn["name"].is_string()) c.name += fn["name"].get<std::string>();
      if (fn.contains("arguments")) {
        if (fn["arguments"].is_string()) {
          c.arguments += fn["arguments"].get<std::string>();
        } else if (fn["arguments"].is_object()) {
          c.arguments = DumpJson(fn["arguments"]);  // Ollama sends an object
          c.arguments_object = true;
        }
      }
    }
  }
}

Response OpenAIStreamAccumulator::TakeResponse() {
  Response r;
  r.id = id_;
  r.model = model_;
  r.usage = usage_;
  if (!text_so_far_.empty()) r.content.push_back(ContentBlock::Text(text_so_far_));
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> calls;
  std::vector<bool> is_object;
  for (auto& [i, c] : calls_) {
    calls.push_back({c.id, {c.name, c.arguments}});
    is_object.push_back(c.arguments_object);
  }
  AppendToolUses(std::move(calls), is_object, &r);
  r.stop_reason = MapFinishReason(finish_reason_, r.HasToolUse());
  return r;
}

Result<Response> OpenAIResponseFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty()) {
    return Status::Unavailable("a chat completion without choices");
  }
  Response r;
  r.id = j.value("id", "");
  r.model = j.value("model", "");
  if (j.contains("usage")) r.usage = UsageFromOpenAI(j["usage"]);
  const Json& choice = j["choices"][0];
  const Json& msg = choice.contains("message") ? choice["message"] : Json::object();
  if (msg.contains("content") && msg["content"].is_string() && !msg["content"].get<std::string>().empty()) {
    r.content.push_back(ContentBlock::Text(msg["content"].get<std::string>()));
  }
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> calls;
  std::vector<bool> is_object;
  if (msg.contains("tool_calls") && msg["tool_calls"].is_array()) {
    for (const auto& tc : msg["tool_calls"]) {
      const Json& fn = tc.contains("function") ? tc["function"] : Json::object();
      std::string args;
      bool obj = false;
      if (fn.contains("arguments") && fn["arguments"].is_string()) {
        args = fn["arguments"].get<std::string>();
      } else if (fn.contains("arguments") && fn["arguments"].is_object()) {
        args = DumpJson(fn["arguments"]);
        obj = true;
      }
      calls.push_back({tc.value("id", ""), {fn.value("name", ""), args}});
      is_object.push_back(obj);
    }
  }
  AppendToolUses(std::move(calls), is_object, &r);
  std::string finish = choice.contains("finish_reason") && choice["finish_reason"].is_string()
                           ? choice["finish_reason"].get<std::string>()
                           : "";
  r.stop_reason = MapFinishReason(finish, r.HasToolUse());
  return r;
}

OpenAIProvider::OpenAIProvider(OpenAIOptions options, std::unique_ptr<HttpTransport> transport)
    : options_(std::move(options)), transport_(std::move(transport)) {}

Result<Response> OpenAIProvider::Complete(const Request& request,
                                          const StreamCallbacks& callbacks, CancelToken* cancel) {
  std::string model = request.model.empty() ? options_.model : request.model;
  std::string body = DumpJson(OpenAIRequestBody(request, model, options_.stream));
  TextDeduper text(callbacks.on_text);
  return RunWithRetries(options_.retry, callbacks, cancel, [&](AttemptFailure* failure) {
    text.NewAttempt();
    return Attempt(body, &text, cancel, failure);
  });
}

Result<Response> OpenAIProvider::Attempt(const std::string& body, TextDeduper* text,
                                         CancelToken* cancel, AttemptFailure* failure) {
  HttpRequest http;
  std::string base = options_.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  http.url = base + "/chat/completions";
  http.body = body;
  http.connect_timeout_s = options_.connect_timeout_s;
  http.low_speed_time_s = options_.stream ? options_.stall_timeout_s : 600;
  http.headers = {"content-type: application/json"};
  if (!options_.api_key.empty()) http.headers.push_back("authorization: Bearer " + options_.api_key);

  OpenAIStreamAccumulator acc(text);
  SseParser sse([&](const SseEvent& e) {
    if (e.data == "[DONE]") {
      acc.MarkDone();
      return;
    }
    auto j = ParseJson(e.data);
    if (j.ok()) acc.OnChunk(*j);
  });
  auto j = PostAttempt(*transport_, http, options_.stream,
                       [&](std::string_view chunk) {
                         sse.Feed(chunk);
                         return acc.error().ok();
                       },
                       cancel, failure);
  if (!j.ok()) return j.status();
  if (!options_.stream) {
    auto r = OpenAIResponseFromJson(*j);
    if (r.ok() && text != nullptr) text->Text(r->Text());
    if (!r.ok()) *failure = AttemptFailure{r.status(), true, {}};
    return r;
  }
  if (!acc.error().ok()) {
    failure->status = acc.error();
    failure->retryable = true;
    return failure->status;
  }
  if (!acc.done()) {
    failure->status = Status::Unavailable("the stream ended before [DONE]");
    failure->retryable = true;
    return failure->status;
  }
  return acc.TakeResponse();
}

}  // namespace mates::llm
