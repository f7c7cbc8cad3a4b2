#include "llm/openai.h"

#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "llm/recycled.h"
#include "llm/tool_calls.h"

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

constexpr int64_t kMaxToolCalls = 1024;

// OpenAI's usage: prompt_tokens includes the cached ones.
Result<Usage> UsageFromOpenAI(const Json& u) {
  MATES_ASSIGN_OR_RETURN(UsageReport r,
                         ParseUsage(u, UsageKeys{"prompt_tokens", "completion_tokens", "", ""}));
  Usage usage = r.usage;
  MATES_ASSIGN_OR_RETURN(const Json* details, JsonObjectField(u, "prompt_tokens_details", false));
  if (details != nullptr) {
    auto cached = JsonInt(*details, "cached_tokens", false, 0);
    if (!cached.ok()) return cached.status().WithContext("usage.prompt_tokens_details");
    if (*cached < 0 || *cached > usage.input_tokens) {
      return Status::InvalidArgument("usage.prompt_tokens_details.cached_tokens is " +
                                     std::to_string(*cached) + ", outside [0, prompt_tokens]");
    }
    usage.cache_read_input_tokens = *cached;
    usage.input_tokens -= *cached;
  }
  return usage;
}

// A string field that may also be null or absent ("" then).
Result<std::string> OptString(const Json& obj, const char* key) { return JsonString(obj, key, false); }

// The arrays of the last body recycled on this thread (llm/recycled.h).
thread_local RecycledTools t_openai_tools;
thread_local RecycledMessages t_openai_messages;

// A message's entries: an assistant turn is one (its text, its tool
// calls); a user turn is its tool results first (they must follow the
// assistant message that called them), then its text, if any.
void AppendOpenAIMessage(const ChatMessage& m, Json::array_t* out) {
  if (m.role == Role::kAssistant) {
    Json msg = JsonObject(3);
    msg["role"] = "assistant";
    std::string text = m.Text();
    msg["content"] = text.empty() ? Json(nullptr) : Json(std::move(text));
    Json calls = Json::array();
    for (const auto& b : m.content) {
      if (b.type != BlockType::kToolUse) continue;
      Json fn = Json::object();
      fn["name"] = b.name;
      fn["arguments"] = b.input_json;
      Json call = JsonObject(3);
      call["id"] = b.id;
      call["type"] = "function";
      call["function"] = std::move(fn);
      calls.push_back(std::move(call));
    }
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    out->push_back(std::move(msg));
    return;
  }
  std::string text;
  for (const auto& b : m.content) {
    if (b.type == BlockType::kToolResult) {
      Json result = JsonObject(3);
      result["role"] = "tool";
      result["tool_call_id"] = b.tool_use_id;
      result["content"] = b.is_error ? "Error: " + b.text : b.text;
      out->push_back(std::move(result));
    } else if (b.type == BlockType::kText) {
      if (!text.empty()) text += "\n";
      text += b.text;
    }
  }
  if (!text.empty()) {
    Json user = Json::object();
    user["role"] = "user";
    user["content"] = std::move(text);
    out->push_back(std::move(user));
  }
}

Json OpenAIToolsArray(const std::vector<ToolDef>& defs) {
  Json tools = Json::array();
  tools.get_ref<Json::array_t&>().reserve(defs.size());
  for (const auto& t : defs) {
    Json fn = JsonObject(3);
    fn["name"] = t.name;
    fn["description"] = t.description;
    fn["parameters"] = ToolSchema(t);
    Json tool = Json::object();
    tool["type"] = "function";
    tool["function"] = std::move(fn);
    tools.push_back(std::move(tool));
  }
  return tools;
}

}  // namespace

Json OpenAIRequestBody(const Request& request, const std::string& model, bool stream) {
  // Members set and moved one at a time (types.cc says why); the whole
  // conversation used to be copied once more into the body.
  Json messages = TakeOrMakeMessages(
      t_openai_messages, request, request.system,
      [&](Json::array_t* out) {
        if (request.system.empty()) return;
        Json sys = Json::object();
        sys["role"] = "system";
        sys["content"] = request.system;
        out->push_back(std::move(sys));
      },
      AppendOpenAIMessage);
  Json body = JsonObject(8);
  body["model"] = model;
  body["messages"] = std::move(messages);
  body["max_tokens"] = request.max_tokens;
  if (!request.tools.empty())
    body["tools"] = TakeOrMakeTools(t_openai_tools, request.tools, 0, OpenAIToolsArray);
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  if (!request.agent_id.empty()) body["user"] = request.agent_id;
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

void RecycleOpenAIBody(const Request& request, Json body) {
  if (!body.is_object()) return;
  auto mit = body.find("messages");
  if (mit != body.end()) {
    TakeBackMessages(t_openai_messages, request, &*mit);
  } else {
    t_openai_messages.lent_for = nullptr;
  }
  auto it = body.find("tools");
  if (it != body.end()) TakeBackTools(t_openai_tools, request.tools, 0, &*it);
}

void OpenAIStreamAccumulator::OnData(const std::string& data) {
  if (failed()) return;
  if (data == "[DONE]") {
    MarkDone();
    return;
  }
  auto j = ParseJson(data);
  if (!j.ok()) {
    malformed_ = MalformedReply("chunk " + std::to_string(chunks_ + 1), j.status());
    return;
  }
  OnChunk(*j);
}

void OpenAIStreamAccumulator::MarkDone() {
  done_ = true;
  if (chunks_ == 0 && malformed_.ok() && error_.ok()) {
    malformed_ = MalformedReply("stream", Status::InvalidArgument("[DONE] came before any chunk"));
  }
}

void OpenAIStreamAccumulator::OnChunk(const Json& chunk) {
  if (failed()) return;
  ++chunks_;
  Status s = Apply(chunk);
  if (!s.ok()) malformed_ = MalformedReply("chunk " + std::to_string(chunks_), s);
}

Status OpenAIStreamAccumulator::Apply(const Json& chunk) {
  if (!chunk.is_object()) return Status::InvalidArgument(std::string("not a JSON object but ") + chunk.type_name());
  auto err = chunk.find("error");
  if (err != chunk.end() && !err->is_null()) {
    std::string message = DumpJson(*err);
    if (err->is_object()) {
      auto m = JsonString(*err, "message", false);
      if (m.ok()) message = *m;
    } else if (err->is_string()) {
      message = err->get<std::string>();
    }
    error_ = Status::Unavailable("stream error: " + message);
    return Status::Ok();
  }
  MATES_ASSIGN_OR_RETURN(std::string id, OptString(chunk, "id"));
  MATES_ASSIGN_OR_RETURN(std::string model, OptString(chunk, "model"));
  if (id_.empty()) id_ = id;
  if (model_.empty()) model_ = model;
  MATES_ASSIGN_OR_RETURN(const Json* usage, JsonObjectField(chunk, "usage", false));
  if (usage != nullptr) {
    MATES_ASSIGN_OR_RETURN(usage_, UsageFromOpenAI(*usage));
  }
  MATES_ASSIGN_OR_RETURN(const Json* choices, JsonArrayField(chunk, "choices", false));
  if (choices == nullptr) return Status::Ok();
  for (size_t i = 0; i < choices->size(); ++i) {
    const Json& choice = (*choices)[i];
    std::string at = "choices[" + std::to_string(i) + "]";
    if (!choice.is_object()) return Status::InvalidArgument(at + " is not an object");
    auto finish = OptString(choice, "finish_reason");
    if (!finish.ok()) return finish.status().WithContext(at);
    if (!finish->empty()) finish_reason_ = *finish;
    auto delta = JsonObjectField(choice, "delta", false);
    if (!delta.ok()) return delta.status().WithContext(at);
    if (*delta == nullptr) continue;
    const Json& d = **delta;
    auto content = OptString(d, "content");
    if (!content.ok()) return content.status().WithContext(at + ".delta");
    if (!content->empty()) {
      if (text_so_far_.size() + content->size() > kMaxReplyBytes) {
        return Status::InvalidArgument("the reply's text is over " + std::to_string(kMaxReplyBytes) + " bytes");
      }
      text_so_far_ += *content;
      if (text_ != nullptr) text_->Text(*content);
    }
    auto calls = JsonArrayField(d, "tool_calls", false);
    if (!calls.ok()) return calls.status().WithContext(at + ".delta");
    if (*calls == nullptr) continue;
    for (size_t k = 0; k < (*calls)->size(); ++k) {
      Status s = ApplyToolCall((**calls)[k]);
      if (!s.ok()) return s.WithContext(at + ".delta.tool_calls[" + std::to_string(k) + "]");
    }
  }
  return Status::Ok();
}

Status OpenAIStreamAccumulator::ApplyToolCall(const Json& tc) {
  if (!tc.is_object()) return Status::InvalidArgument("not an object");
  MATES_ASSIGN_OR_RETURN(int64_t index, JsonInt(tc, "index", false, static_cast<int64_t>(calls_.size())));
  if (index < 0 || index >= kMaxToolCalls) {
    return Status::InvalidArgument("field 'index' is " + std::to_string(index) + ", not in [0, " +
                                   std::to_string(kMaxToolCalls) + ")");
  }
  Call& c = calls_[index];
  MATES_ASSIGN_OR_RETURN(std::string id, OptString(tc, "id"));
  if (c.id.empty()) c.id = id;
  MATES_ASSIGN_OR_RETURN(const Json* fn, JsonObjectField(tc, "function", false));
  if (fn == nullptr) return Status::Ok();
  auto name = OptString(*fn, "name");
  if (!name.ok()) return name.status().WithContext("function");
  c.name += *name;
  auto args = fn->find("arguments");
  if (args == fn->end() || args->is_null()) return Status::Ok();
  if (args->is_string()) {
    c.arguments += args->get<std::string>();
  } else if (args->is_object()) {
    c.arguments = DumpJson(*args);  // Ollama sends an object
    c.arguments_object = true;
  } else {
    return Status::InvalidArgument(std::string("function: field 'arguments' must be a string or an object, got ") +
                                   args->type_name());
  }
  if (c.arguments.size() > kMaxToolInputBytes + 1) c.arguments.resize(kMaxToolInputBytes + 1);  // said at parse
  return Status::Ok();
}

Result<Response> OpenAIStreamAccumulator::TakeResponse() {
  Response r;
  r.id = id_;
  r.model = model_;
  r.usage = usage_;
  if (!text_so_far_.empty()) r.content.push_back(ContentBlock::Text(text_so_far_));
  std::vector<RawToolCall> calls;
  for (auto& [i, c] : calls_) calls.push_back({c.id, c.name, c.arguments, c.arguments_object});
  MATES_RETURN_IF_ERROR(AppendToolUses(std::move(calls), &r));
  r.stop_reason = MapFinishReason(finish_reason_, r.HasToolUse());
  return r;
}

Result<Response> OpenAIResponseFromJson(const Json& j) {
  auto fail = [](const Status& s) { return MalformedReply("reply", s); };
  if (!j.is_object()) return fail(Status::InvalidArgument("not a JSON object"));
  auto choices = JsonArrayField(j, "choices", true);
  if (!choices.ok()) return fail(choices.status());
  if ((*choices)->empty()) return fail(Status::InvalidArgument("'choices' is empty"));
  Response r;
  auto id = OptString(j, "id");
  auto model = OptString(j, "model");
  if (!id.ok()) return fail(id.status());
  if (!model.ok()) return fail(model.status());
  r.id = *id;
  r.model = *model;
  auto usage = JsonObjectField(j, "usage", false);
  if (!usage.ok()) return fail(usage.status());
  if (*usage != nullptr) {
    auto u = UsageFromOpenAI(**usage);
    if (!u.ok()) return fail(u.status());
    r.usage = *u;
  }
  const Json& choice = (**choices)[0];
  if (!choice.is_object()) return fail(Status::InvalidArgument("choices[0] is not an object"));
  auto msg = JsonObjectField(choice, "message", true);
  if (!msg.ok()) return fail(msg.status().WithContext("choices[0]"));
  auto content = OptString(**msg, "content");
  if (!content.ok()) return fail(content.status().WithContext("choices[0].message"));
  if (!content->empty()) r.content.push_back(ContentBlock::Text(*content));
  std::vector<RawToolCall> calls;
  auto tool_calls = JsonArrayField(**msg, "tool_calls", false);
  if (!tool_calls.ok()) return fail(tool_calls.status().WithContext("choices[0].message"));
  if (*tool_calls != nullptr) {
    for (size_t i = 0; i < (*tool_calls)->size(); ++i) {
      const Json& tc = (**tool_calls)[i];
      std::string at = "choices[0].message.tool_calls[" + std::to_string(i) + "]";
      if (!tc.is_object()) return fail(Status::InvalidArgument(at + " is not an object"));
      auto tc_id = OptString(tc, "id");
      if (!tc_id.ok()) return fail(tc_id.status().WithContext(at));
      auto fn = JsonObjectField(tc, "function", true);
      if (!fn.ok()) return fail(fn.status().WithContext(at));
      auto name = OptString(**fn, "name");
      if (!name.ok()) return fail(name.status().WithContext(at + ".function"));
      std::string args;
      bool obj = false;
      auto a = (*fn)->find("arguments");
      if (a != (*fn)->end() && a->is_string()) {
        args = a->get<std::string>();
      } else if (a != (*fn)->end() && a->is_object()) {
        args = DumpJson(*a);
        obj = true;
      } else if (a != (*fn)->end() && !a->is_null()) {
        return fail(Status::InvalidArgument(at + ".function: field 'arguments' must be a string or an object"));
      }
      calls.push_back({*tc_id, *name, args, obj});
    }
  }
  MATES_RETURN_IF_ERROR(AppendToolUses(std::move(calls), &r));
  auto finish = OptString(choice, "finish_reason");
  if (!finish.ok()) return fail(finish.status().WithContext("choices[0]"));
  r.stop_reason = MapFinishReason(*finish, r.HasToolUse());
  return r;
}

namespace {

class OpenAIReader : public StreamReader {
 public:
  explicit OpenAIReader(TextDeduper* text) : acc_(text) {}
  void OnEvent(const SseEvent& event) override { acc_.OnData(event.data); }
  const Status& error() const override { return acc_.error(); }
  const Status& malformed() const override { return acc_.malformed(); }
  bool complete() const override { return acc_.done(); }
  Result<Response> Take() override { return acc_.TakeResponse(); }

 private:
  OpenAIStreamAccumulator acc_;
};

}  // namespace

OpenAIProvider::OpenAIProvider(OpenAIOptions options, std::unique_ptr<HttpTransport> transport)
    : HttpProvider(options, std::move(transport)), context_window_(options.context_window) {}

std::string OpenAIProvider::Body(const Request& request, const std::string& model) const {
  Json made = OpenAIRequestBody(request, model, options().stream);
  std::string body = DumpJson(made);
  RecycleOpenAIBody(request, std::move(made));
  return body;
}

std::vector<std::string> OpenAIProvider::Headers(const Request&) const {
  if (options().api_key.empty()) return {};
  return {"authorization: Bearer " + options().api_key};
}

std::unique_ptr<StreamReader> OpenAIProvider::Reader(TextDeduper* text) const {
  return std::make_unique<OpenAIReader>(text);
}

}  // namespace mates::llm
