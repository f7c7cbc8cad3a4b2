#include "llm/anthropic.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/limits.h"
#include "llm/recycled.h"

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
  if (raw.size() > kMaxToolInputBytes) {
    b->input_json = "{}";
    b->input_error = "the tool input was " + std::to_string(raw.size()) + " bytes; at most " +
                     std::to_string(kMaxToolInputBytes) + " are taken";
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

// The arrays of the last body recycled on this thread (llm/recycled.h).
thread_local RecycledTools t_anthropic_tools;
thread_local RecycledMessages t_anthropic_messages;

Json ToolsArray(const Request& request) {
  return TakeOrMakeTools(t_anthropic_tools, request.tools, request.cache ? 1 : 0,
                         [&](const std::vector<ToolDef>& defs) {
                           Json tools = Json::array();
                           tools.get_ref<Json::array_t&>().reserve(defs.size());
                           for (const auto& t : defs) {
                             Json tool = JsonObject(4);
                             tool["name"] = t.name;
                             tool["description"] = t.description;
                             tool["input_schema"] = ToolSchema(t);
                             tools.push_back(std::move(tool));
                           }
                           if (request.cache) tools.back()["cache_control"] = CacheControl();
                           return tools;
                         });
}

Json MessagesArray(const Request& request) {
  return TakeOrMakeMessages(
      t_anthropic_messages, request, "", [](Json::array_t*) {},
      [](const ChatMessage& m, Json::array_t* a) { a->push_back(MessageToJson(m)); });
}

// Cache breakpoints (at most 4 in all): tools, system, and the last block
// of the two newest user turns, so each call reads what the previous one
// wrote. `on` false takes them off again.
void MarkNewestUserTurns(Json& messages, bool on) {
  int marked = 0;
  for (size_t i = messages.size(); i-- > 0 && marked < 2;) {
    Json& m = messages[i];
    if (m["role"] != "user" || m["content"].empty()) continue;
    if (on) {
      m["content"].back()["cache_control"] = CacheControl();
    } else {
      m["content"].back().erase("cache_control");
    }
    ++marked;
  }
}

}  // namespace

void RecycleAnthropicBody(const Request& request, Json body) {
  if (!body.is_object()) return;
  auto mit = body.find("messages");
  if (mit != body.end() && mit->is_array()) {
    if (request.cache) MarkNewestUserTurns(*mit, false);
    TakeBackMessages(t_anthropic_messages, request, &*mit);
  } else {
    t_anthropic_messages.lent_for = nullptr;
  }
  auto it = body.find("tools");
  if (it != body.end())
    TakeBackTools(t_anthropic_tools, request.tools, request.cache ? 1 : 0, &*it);
}

Json AnthropicRequestBody(const Request& request, const std::string& model, bool stream) {
  // Members are set and moved one at a time (types.cc says why).
  Json body = JsonObject(8);
  body["model"] = model;
  body["max_tokens"] = request.max_tokens;
  if (!request.system.empty()) {
    Json sys = JsonObject(3);
    sys["type"] = "text";
    sys["text"] = request.system;
    if (request.cache) sys["cache_control"] = CacheControl();
    body["system"] = Json::array();
    body["system"].push_back(std::move(sys));
  }
  Json messages = MessagesArray(request);
  if (request.cache) MarkNewestUserTurns(messages, true);
  body["messages"] = std::move(messages);
  if (!request.tools.empty()) body["tools"] = ToolsArray(request);
  if (request.temperature >= 0) body["temperature"] = request.temperature;
  if (!request.agent_id.empty()) body["metadata"] = {{"user_id", request.agent_id}};
  if (stream) body["stream"] = true;
  return body;
}

namespace {

constexpr int64_t kMaxBlocks = 4096;


// A block index: an integer in [0, kMaxBlocks).
Result<int64_t> BlockIndex(const Json& j) {
  MATES_ASSIGN_OR_RETURN(int64_t index, JsonInt(j, "index", true));
  if (index < 0 || index >= kMaxBlocks) {
    return Status::InvalidArgument("field 'index' is " + std::to_string(index) + ", not in [0, " +
                                   std::to_string(kMaxBlocks) + ")");
  }
  return index;
}

// A content block of a complete reply or of content_block_start; nullopt
// for a type mates does not keep.
Result<std::optional<ContentBlock>> ReplyBlock(const Json& cb, std::string* partial_json) {
  if (!cb.is_object()) return Status::InvalidArgument(std::string("a content block must be an object, got ") + cb.type_name());
  MATES_ASSIGN_OR_RETURN(std::string type, JsonString(cb, "type", true));
  if (type == "text") {
    MATES_ASSIGN_OR_RETURN(std::string text, JsonString(cb, "text", false));
    return std::optional<ContentBlock>(ContentBlock::Text(std::move(text)));
  }
  if (type != "tool_use") return std::optional<ContentBlock>();
  MATES_ASSIGN_OR_RETURN(std::string id, JsonString(cb, "id", true));
  MATES_ASSIGN_OR_RETURN(std::string name, JsonString(cb, "name", true));
  if (id.empty()) return Status::InvalidArgument("field 'id' is empty");
  if (name.empty()) return Status::InvalidArgument("field 'name' is empty");
  MATES_ASSIGN_OR_RETURN(const Json* input, JsonObjectField(cb, "input", false));
  ContentBlock b = ContentBlock::ToolUse(std::move(id), std::move(name), "{}");
  if (input != nullptr && !input->empty()) *partial_json = DumpJson(*input);
  return std::optional<ContentBlock>(std::move(b));
}

Result<std::string> StopReasonField(const Json& obj) {
  return JsonString(obj, "stop_reason", false);
}

}  // namespace

void AnthropicStreamAccumulator::OnEvent(const SseEvent& event) {
  if (failed()) return;  // the first failure stands
  if (event.data.empty()) return;  // a bare "event: ping"
  auto data = ParseJson(event.data);
  std::string where = event.event.empty() ? "event" : "event '" + event.event + "'";
  if (!data.ok()) {
    malformed_ = MalformedReply(where, data.status());
    return;
  }
  if (!data->is_object()) {
    malformed_ = MalformedReply(where, Status::InvalidArgument("its data is not a JSON object"));
    return;
  }
  std::string type = event.event;
  if (type.empty()) {
    auto t = JsonString(*data, "type", true);
    if (!t.ok()) {
      malformed_ = MalformedReply(where, t.status());
      return;
    }
    type = *t;
  }
  Status s = Apply(type, *data);
  if (!s.ok()) malformed_ = MalformedReply(type, s);
}

Status AnthropicStreamAccumulator::Apply(const std::string& type, const Json& j) {
  if (type == "ping") return Status::Ok();
  if (type == "error") {
    MATES_ASSIGN_OR_RETURN(const Json* e, JsonObjectField(j, "error", false));
    std::string etype = "error", message;
    if (e != nullptr) {
      MATES_ASSIGN_OR_RETURN(etype, JsonString(*e, "type", false, "error"));
      MATES_ASSIGN_OR_RETURN(message, JsonString(*e, "message", false));
    }
    error_ = Status::Unavailable("stream error " + etype + ": " + message);
    return Status::Ok();
  }
  if (type == "message_start") {
    if (started_) return Status::InvalidArgument("a second message_start");
    MATES_ASSIGN_OR_RETURN(const Json* msg, JsonObjectField(j, "message", true));
    MATES_ASSIGN_OR_RETURN(response_.id, JsonString(*msg, "id", false));
    MATES_ASSIGN_OR_RETURN(response_.model, JsonString(*msg, "model", false));
    MATES_ASSIGN_OR_RETURN(const Json* usage, JsonObjectField(*msg, "usage", false));
    if (usage != nullptr) {
      MATES_ASSIGN_OR_RETURN(UsageReport u, ParseUsage(*usage, kAnthropicUsageKeys));
      response_.usage = u.usage;
    }
    started_ = true;
    return Status::Ok();
  }
  bool known = type == "content_block_start" || type == "content_block_delta" ||
               type == "content_block_stop" || type == "message_delta" || type == "message_stop";
  if (!known) return Status::Ok();  // events added to the API later
  if (!started_) return Status::InvalidArgument("came before message_start");
  if (type == "content_block_start") return OnBlockStart(j);
  if (type == "content_block_delta") return OnBlockDelta(j);
  if (type == "content_block_stop") {
    MATES_ASSIGN_OR_RETURN(int64_t index, BlockIndex(j));
    auto it = blocks_.find(index);
    if (it == blocks_.end()) return Status::InvalidArgument("no block " + std::to_string(index) + " was started");
    if (it->second.known && it->second.block.type == BlockType::kToolUse) {
      SetToolInput(&it->second.block, it->second.json);
    }
    return Status::Ok();
  }
  if (type == "message_delta") return OnMessageDelta(j);
  complete_ = true;  // message_stop
  return Status::Ok();
}

Status AnthropicStreamAccumulator::OnBlockStart(const Json& j) {
  MATES_ASSIGN_OR_RETURN(int64_t index, BlockIndex(j));
  MATES_ASSIGN_OR_RETURN(const Json* cb, JsonObjectField(j, "content_block", true));
  Partial p;
  auto block = ReplyBlock(*cb, &p.json);
  if (!block.ok()) return block.status().WithContext("content_block");
  if (!block->has_value()) {
    p.known = false;  // thinking, server tools…: not kept
  } else {
    p.block = std::move(**block);
    if (p.block.type == BlockType::kText && !p.block.text.empty() && text_ != nullptr) {
      text_->Text(p.block.text);
    }
  }
  blocks_[index] = std::move(p);
  return Status::Ok();
}

Status AnthropicStreamAccumulator::OnBlockDelta(const Json& j) {
  MATES_ASSIGN_OR_RETURN(int64_t index, BlockIndex(j));
  auto it = blocks_.find(index);
  if (it == blocks_.end()) return Status::InvalidArgument("no block " + std::to_string(index) + " was started");
  MATES_ASSIGN_OR_RETURN(const Json* d, JsonObjectField(j, "delta", true));
  auto dtype = JsonString(*d, "type", true);
  if (!dtype.ok()) return dtype.status().WithContext("delta");
  if (!it->second.known) return Status::Ok();
  if (*dtype == "text_delta") {
    auto t = JsonString(*d, "text", true);
    if (!t.ok()) return t.status().WithContext("delta");
    it->second.block.text += *t;
    if (text_ != nullptr) text_->Text(*t);
  } else if (*dtype == "input_json_delta") {
    auto part = JsonString(*d, "partial_json", true);
    if (!part.ok()) return part.status().WithContext("delta");
    it->second.json += *part;
  }
  return Status::Ok();
}

Status AnthropicStreamAccumulator::OnMessageDelta(const Json& j) {
  MATES_ASSIGN_OR_RETURN(const Json* d, JsonObjectField(j, "delta", false));
  if (d != nullptr) {
    auto sr = StopReasonField(*d);
    if (!sr.ok()) return sr.status().WithContext("delta");
    if (!sr->empty()) response_.stop_reason = *sr;
  }
  MATES_ASSIGN_OR_RETURN(const Json* usage, JsonObjectField(j, "usage", false));
  if (usage != nullptr) {
    // Cumulative: the latest value of each counter given wins.
    MATES_ASSIGN_OR_RETURN(UsageReport u, ParseUsage(*usage, kAnthropicUsageKeys));
    if (u.has_output) response_.usage.output_tokens = u.usage.output_tokens;
    if (u.has_input) response_.usage.input_tokens = u.usage.input_tokens;
    if (u.has_cache_write) response_.usage.cache_creation_input_tokens = u.usage.cache_creation_input_tokens;
    if (u.has_cache_read) response_.usage.cache_read_input_tokens = u.usage.cache_read_input_tokens;
  }
  return Status::Ok();
}

Response AnthropicStreamAccumulator::TakeResponse() {
  for (auto& [index, p] : blocks_) {
    if (p.known) response_.content.push_back(std::move(p.block));
  }
  blocks_.clear();
  return std::move(response_);
}

Result<Response> AnthropicResponseFromJson(const Json& j) {
  if (!j.is_object()) return MalformedReply("reply", Status::InvalidArgument("not a JSON object"));
  Response r;
  auto fail = [](const Status& s) { return MalformedReply("reply", s); };
  auto id = JsonString(j, "id", false);
  auto model = JsonString(j, "model", false);
  auto stop = StopReasonField(j);
  auto content = JsonArrayField(j, "content", true);
  for (const Status* s : {&id.status(), &model.status(), &stop.status(), &content.status()}) {
    if (!s->ok()) return fail(*s);
  }
  r.id = *id;
  r.model = *model;
  r.stop_reason = *stop;
  for (size_t i = 0; i < (*content)->size(); ++i) {
    std::string json;
    auto b = ReplyBlock((**content)[i], &json);
    if (!b.ok()) return fail(b.status().WithContext("content[" + std::to_string(i) + "]"));
    if (!b->has_value()) continue;
    if ((*b)->type == BlockType::kToolUse) SetToolInput(&**b, json);
    r.content.push_back(std::move(**b));
  }
  auto usage = JsonObjectField(j, "usage", false);
  if (!usage.ok()) return fail(usage.status());
  if (*usage != nullptr) {
    auto u = ParseUsage(**usage, kAnthropicUsageKeys);
    if (!u.ok()) return fail(u.status());
    r.usage = u->usage;
  }
  return r;
}

namespace {

class AnthropicReader : public StreamReader {
 public:
  explicit AnthropicReader(TextDeduper* text) : acc_(text) {}
  void OnEvent(const SseEvent& event) override { acc_.OnEvent(event); }
  const Status& error() const override { return acc_.error(); }
  const Status& malformed() const override { return acc_.malformed(); }
  bool complete() const override { return acc_.complete(); }
  Result<Response> Take() override { return acc_.TakeResponse(); }

 private:
  AnthropicStreamAccumulator acc_;
};

}  // namespace

AnthropicProvider::AnthropicProvider(AnthropicOptions options, std::unique_ptr<HttpTransport> transport)
    : HttpProvider(std::move(options), std::move(transport)) {}

int64_t AnthropicProvider::ContextWindow(const std::string&) const { return kClaudeContextWindow; }

std::string AnthropicProvider::Body(const Request& request, const std::string& model) const {
  Json made = AnthropicRequestBody(request, model, options().stream);
  std::string body = DumpJson(made);
  RecycleAnthropicBody(request, std::move(made));
  return body;
}

std::vector<std::string> AnthropicProvider::Headers(const Request&) const {
  const HttpProviderOptions& o = options();
  std::vector<std::string> h = {"anthropic-version: 2023-06-01",
                                "accept: " + std::string(o.stream ? "text/event-stream" : "application/json")};
  if (!o.api_key.empty()) h.push_back("x-api-key: " + o.api_key);
  return h;
}

std::unique_ptr<StreamReader> AnthropicProvider::Reader(TextDeduper* text) const {
  return std::make_unique<AnthropicReader>(text);
}

}  // namespace mates::llm
