#include "llm/gemini.h"

#include <map>
#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "core/text.h"
#include "llm/retry.h"

namespace mates::llm {
namespace {

constexpr size_t kMaxCalls = 1024;

Json ModelTurn(const ChatMessage& m) {
  Json parts = Json::array();
  std::string text = m.Text();
  if (!text.empty()) parts.push_back({{"text", std::move(text)}});
  for (const auto& b : m.content) {
    if (b.type != BlockType::kToolUse) continue;
    auto args = ParseJson(b.input_json);
    Json part = {{"functionCall", {{"id", b.id}, {"name", b.name}, {"args", args.ok() ? *args : Json::object()}}}};
    if (!b.signature.empty()) part["thoughtSignature"] = b.signature;
    parts.push_back(std::move(part));
  }
  if (parts.empty()) parts.push_back({{"text", ""}});
  return {{"role", "model"}, {"parts", std::move(parts)}};
}

Json UserTurn(const ChatMessage& m, const std::map<std::string, std::string>& call_names) {
  Json parts = Json::array();
  std::string text;
  for (const auto& b : m.content) {
    if (b.type == BlockType::kToolResult) {
      auto name = call_names.find(b.tool_use_id);
      Json response = b.is_error ? Json{{"error", b.text}} : Json{{"output", b.text}};
      parts.push_back({{"functionResponse", {{"id", b.tool_use_id},
                                             {"name", name == call_names.end() ? "unknown" : name->second},
                                             {"response", std::move(response)}}}});
    } else if (b.type == BlockType::kText) {
      if (!text.empty()) text += "\n";
      text += b.text;
    }
  }
  if (!text.empty()) parts.push_back({{"text", std::move(text)}});
  if (parts.empty()) parts.push_back({{"text", ""}});
  return {{"role", "user"}, {"parts", std::move(parts)}};
}

std::string GeminiStopReason(const std::string& finish, bool tool_calls) {
  if (tool_calls) return "tool_use";
  if (finish == "MAX_TOKENS") return "max_tokens";
  if (finish == "SAFETY" || finish == "RECITATION" || finish == "BLOCKLIST" || finish == "PROHIBITED_CONTENT" ||
      finish == "SPII" || finish == "IMAGE_SAFETY" || finish == "BLOCKED") {
    return "refusal";
  }
  return "end_turn";
}

Result<Usage> UsageFromGemini(const Json& u) {
  Usage usage;
  MATES_ASSIGN_OR_RETURN(int64_t prompt, JsonInt(u, "promptTokenCount", false, 0));
  MATES_ASSIGN_OR_RETURN(int64_t cached, JsonInt(u, "cachedContentTokenCount", false, 0));
  MATES_ASSIGN_OR_RETURN(int64_t candidates, JsonInt(u, "candidatesTokenCount", false, 0));
  MATES_ASSIGN_OR_RETURN(int64_t thoughts, JsonInt(u, "thoughtsTokenCount", false, 0));
  if (prompt < 0 || candidates < 0 || thoughts < 0) return Status::InvalidArgument("a token count is negative");
  if (cached < 0 || cached > prompt) {
    return Status::InvalidArgument("cachedContentTokenCount is " + std::to_string(cached) +
                                   ", outside [0, promptTokenCount]");
  }
  usage.input_tokens = prompt - cached;
  usage.cache_read_input_tokens = cached;
  usage.output_tokens = candidates + thoughts;
  return usage;
}

}  // namespace

Json GeminiRequestBody(const Request& request) {
  Json body = JsonObject(4);
  std::map<std::string, std::string> call_names;
  Json contents = Json::array();
  for (const auto& m : request.messages) {
    if (m.role == Role::kAssistant) {
      for (const auto& b : m.content) {
        if (b.type == BlockType::kToolUse) call_names[b.id] = b.name;
      }
      contents.push_back(ModelTurn(m));
    } else {
      contents.push_back(UserTurn(m, call_names));
    }
  }
  body["contents"] = std::move(contents);
  if (!request.system.empty()) body["systemInstruction"] = {{"parts", Json::array({{{"text", request.system}}})}};
  if (!request.tools.empty()) {
    Json decls = Json::array();
    for (const auto& t : request.tools) {
      decls.push_back({{"name", t.name}, {"description", t.description}, {"parametersJsonSchema", ToolSchema(t)}});
    }
    body["tools"] = Json::array({{{"functionDeclarations", std::move(decls)}}});
  }
  Json config = {{"maxOutputTokens", request.max_tokens}};
  if (request.temperature >= 0) config["temperature"] = request.temperature;
  body["generationConfig"] = std::move(config);
  return body;
}

void GeminiStreamAccumulator::OnEvent(const SseEvent& event) {
  if (failed()) return;
  auto j = ParseJson(event.data);
  if (!j.ok()) {
    malformed_ = MalformedReply("chunk " + std::to_string(chunks_ + 1), j.status());
    return;
  }
  Status s = Apply(*j);
  if (!s.ok()) malformed_ = MalformedReply("chunk " + std::to_string(chunks_), s);
}

Status GeminiStreamAccumulator::Apply(const Json& chunk) {
  ++chunks_;
  if (!chunk.is_object()) return Status::InvalidArgument(std::string("not a JSON object but ") + chunk.type_name());
  if (auto err = chunk.find("error"); err != chunk.end() && !err->is_null()) {
    error_ = Status::Unavailable("stream error: " + (err->is_object() ? StringOr(*err, "status") + ": " +
                                                                          StringOr(*err, "message")
                                                                    : DumpJson(*err)));
    return Status::Ok();
  }
  if (id_.empty()) {
    MATES_ASSIGN_OR_RETURN(id_, JsonString(chunk, "responseId", false));
  }
  if (model_.empty()) {
    MATES_ASSIGN_OR_RETURN(model_, JsonString(chunk, "modelVersion", false));
  }
  MATES_ASSIGN_OR_RETURN(const Json* usage, JsonObjectField(chunk, "usageMetadata", false));
  if (usage != nullptr) {
    auto u = UsageFromGemini(*usage);
    if (!u.ok()) return u.status().WithContext("usageMetadata");
    usage_ = *u;
  }
  MATES_ASSIGN_OR_RETURN(const Json* feedback, JsonObjectField(chunk, "promptFeedback", false));
  if (feedback != nullptr) {
    MATES_ASSIGN_OR_RETURN(std::string blocked, JsonString(*feedback, "blockReason", false));
    if (!blocked.empty()) finish_ = "BLOCKED";
  }
  MATES_ASSIGN_OR_RETURN(const Json* candidates, JsonArrayField(chunk, "candidates", false));
  if (candidates == nullptr || candidates->empty()) return Status::Ok();
  const Json& cand = (*candidates)[0];
  if (!cand.is_object()) return Status::InvalidArgument("candidates[0] is not an object");
  auto finish = JsonString(cand, "finishReason", false);
  if (!finish.ok()) return finish.status().WithContext("candidates[0]");
  auto content = JsonObjectField(cand, "content", false);
  if (!content.ok()) return content.status().WithContext("candidates[0]");
  const Json* parts = nullptr;
  if (*content != nullptr) {
    auto p = JsonArrayField(**content, "parts", false);
    if (!p.ok()) return p.status().WithContext("candidates[0].content");
    parts = *p;
  }
  for (size_t k = 0; parts != nullptr && k < parts->size(); ++k) {
    MATES_RETURN_IF_ERROR(ApplyPart((*parts)[k], "candidates[0].content.parts[" + std::to_string(k) + "]"));
  }
  if (*finish == "MALFORMED_FUNCTION_CALL" || *finish == "UNEXPECTED_TOOL_CALL") {
    error_ = Status::Unavailable("the model made a malformed function call (" + *finish + ")");
  } else if (!finish->empty()) {
    finish_ = *finish;
  }
  return Status::Ok();
}

// One part of the candidate's content (`at` names it): text, or a call.
Status GeminiStreamAccumulator::ApplyPart(const Json& part, const std::string& at) {
  if (!part.is_object()) return Status::InvalidArgument(at + " is not an object");
  auto thought = JsonBool(part, "thought", false);
  if (!thought.ok()) return thought.status().WithContext(at);
  auto text = JsonString(part, "text", false);
  if (!text.ok()) return text.status().WithContext(at);
  if (!text->empty() && !*thought) {
    if (text_so_far_.size() + text->size() > kMaxReplyBytes) {
      return Status::InvalidArgument("the reply's text is over " + std::to_string(kMaxReplyBytes) + " bytes");
    }
    text_so_far_ += *text;
    if (text_ != nullptr) text_->Text(*text);
  }
  auto call = JsonObjectField(part, "functionCall", false);
  if (!call.ok()) return call.status().WithContext(at);
  if (*call == nullptr) return Status::Ok();
  if (calls_.size() >= kMaxCalls) return Status::InvalidArgument("over " + std::to_string(kMaxCalls) + " calls");
  RawToolCall c;
  auto id = JsonString(**call, "id", false);
  auto name = JsonString(**call, "name", false);
  auto sig = JsonString(part, "thoughtSignature", false);
  if (!id.ok() || !name.ok() || !sig.ok()) {
    return (!id.ok() ? id.status() : !name.ok() ? name.status() : sig.status()).WithContext(at);
  }
  c.id = *id;
  c.name = *name;
  auto args = (*call)->find("args");
  if (args != (*call)->end() && !args->is_null()) {
    if (!args->is_object()) return Status::InvalidArgument(at + ".functionCall: 'args' must be an object");
    c.arguments = DumpJson(*args);
    c.arguments_object = true;
  }
  calls_.push_back(std::move(c));
  signatures_.push_back(*sig);
  return Status::Ok();
}

Result<Response> GeminiStreamAccumulator::Take() {
  Response r;
  r.id = id_;
  r.model = model_;
  r.usage = usage_;
  if (!text_so_far_.empty()) r.content.push_back(ContentBlock::Text(text_so_far_));
  const size_t first_call = r.content.size();
  const bool tool_calls = !calls_.empty();
  MATES_RETURN_IF_ERROR(AppendToolUses(std::move(calls_), &r));
  for (size_t i = 0; i < signatures_.size() && first_call + i < r.content.size(); ++i) {
    r.content[first_call + i].signature = signatures_[i];
  }
  r.stop_reason = GeminiStopReason(finish_, tool_calls);
  return r;
}

Result<Response> GeminiResponseFromJson(const Json& j) {
  GeminiStreamAccumulator acc(nullptr);
  Status s = acc.Apply(j);
  if (!s.ok()) return MalformedReply("reply", s);
  if (!acc.error().ok()) return acc.error();
  if (!acc.complete()) return MalformedReply("reply", Status::InvalidArgument("no candidate with a finishReason"));
  return acc.Take();
}

GeminiProvider::GeminiProvider(GeminiOptions options, std::unique_ptr<HttpTransport> transport)
    : HttpProvider(options, std::move(transport)), context_window_(options.context_window) {}

std::string GeminiProvider::Body(const Request& request, const std::string&) const {
  return DumpJson(GeminiRequestBody(request));
}

std::string GeminiProvider::Endpoint(const std::string& model) const {
  // A model name is configuration, not a path: what is not unreserved is
  // percent-encoded.
  return "/v1beta/models/" + PercentEncode(model) +
         (options().stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
}

std::vector<std::string> GeminiProvider::Headers(const Request& request) const {
  std::vector<std::string> h;
  if (!options().api_key.empty()) h.push_back("x-goog-api-key: " + options().api_key);
  // A header's value ends at its line: an id is a name and a team, no
  // line breaks, but nothing sent is taken on trust.
  if (!request.agent_id.empty() && request.agent_id.find_first_of("\r\n") == std::string::npos) {
    h.push_back("x-mates-agent: " + request.agent_id);
  }
  return h;
}

std::unique_ptr<StreamReader> GeminiProvider::Reader(TextDeduper* text) const {
  return std::make_unique<GeminiStreamAccumulator>(text);
}

}  // namespace mates::llm
