// The Gemini API as `mates mock-llm` serves it (DESIGN §28): POST
// /v1beta/models/M:generateContent and :streamGenerateContent (?alt=sse:
// one GenerateContentResponse per event; without it, one JSON array of
// them). A scenario's text is a text part, a tool_use a functionCall part
// (whole: Gemini does not stream a call's arguments), the first call of a
// turn signed as Gemini 3 signs it. Gemini names no agent in a request:
// mates sends its agent's id in the x-mates-agent header. Usage as the API
// reports it: promptTokenCount counts the cached ones too
// (cachedContentTokenCount). A request for JSON gets JSON (its schema's
// least instance when the scenario's text is not), as Gemini CLI's routing
// call wants.
#include <algorithm>
#include <cctype>

#include "core/ids.h"
#include "llm/mock_api.h"
#include "llm/prompt_cache.h"
#include "llm/validation.h"

namespace mates::llm {
namespace {

using mock::Field;

std::string StatusWord(int status) {
  switch (status) {
    case 400: return "INVALID_ARGUMENT";
    case 401: return "UNAUTHENTICATED";
    case 403: return "PERMISSION_DENIED";
    case 404: return "NOT_FOUND";
    case 413: return "INVALID_ARGUMENT";
    case 429: return "RESOURCE_EXHAUSTED";
    case 503: case 529: return "UNAVAILABLE";
    case 504: return "DEADLINE_EXCEEDED";
    default: return "INTERNAL";
  }
}

std::string GeminiError(int status, const std::string& message) {
  return DumpJson(Json{{"error", {{"code", status}, {"message", message}, {"status", StatusWord(status)}}}});
}

std::string GeminiFinishReason(const std::string& stop_reason) {
  if (stop_reason == "max_tokens") return "MAX_TOKENS";
  if (stop_reason == "refusal") return "SAFETY";
  return "STOP";
}

Json UsageMetadata(const Usage& u) {
  Json m = {{"promptTokenCount", u.input_tokens},
            {"candidatesTokenCount", u.output_tokens},
            {"totalTokenCount", u.input_tokens + u.output_tokens}};
  if (u.cache_read_input_tokens > 0) m["cachedContentTokenCount"] = u.cache_read_input_tokens;
  return m;
}

// A functionResponse's text: its output, content, result or error when a
// string, else the response as JSON.
std::string ResponseText(const Json& response) {
  for (const char* key : {"output", "content", "result", "error"}) {
    const Json& v = Field(response, key);
    if (v.is_string()) return v.get<std::string>();
  }
  return DumpJson(response);
}

Json CallPart(const ContentBlock& b, bool signed_first) {
  auto args = ParseJson(b.input_json);
  Json part = {{"functionCall", {{"name", b.name}, {"args", args.ok() ? *args : Json::object()}, {"id", b.id}}}};
  if (signed_first) part["thoughtSignature"] = NewId("sig");
  return part;
}

// The least value `schema` allows (Gemini's OpenAPI subset or a JSON
// Schema: types in either case, properties, items, enum, anyOf), every
// property given: what a structured-output request gets when the
// scenario's text is not JSON.
Json SchemaInstance(const Json& schema, int depth = 0) {
  if (!schema.is_object() || depth > 16) return nullptr;
  const Json& e = Field(schema, "enum");
  if (e.is_array() && !e.empty()) return e[0];
  const Json& any = Field(schema, "anyOf");
  if (any.is_array() && !any.empty()) return SchemaInstance(any[0], depth + 1);
  std::string type = StringOr(schema, "type");
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type == "object" || (type.empty() && Field(schema, "properties").is_object())) {
    Json out = Json::object();
    for (const auto& [name, sub] : Field(schema, "properties").items()) out[name] = SchemaInstance(sub, depth + 1);
    return out;
  }
  if (type == "array") {
    Json out = Json::array();
    const Json& min = Field(schema, "minItems");
    const int64_t n = min.is_number_integer() ? std::min<int64_t>(min.get<int64_t>(), 4) : 0;
    for (int64_t i = 0; i < n; ++i) out.push_back(SchemaInstance(Field(schema, "items"), depth + 1));
    return out;
  }
  if (type == "integer" || type == "number") {
    const Json& min = Field(schema, "minimum");
    return min.is_number() ? min : Json(1);
  }
  if (type == "boolean") return false;
  if (type == "string") return "mock";
  return nullptr;
}

bool WantsJson(const Json& body) {
  return StringOr(Field(body, "generationConfig"), "responseMimeType") == "application/json";
}

// A request for JSON (generationConfig.responseMimeType) gets JSON and no
// call: the scenario's text when it is JSON, else the least instance of
// the schema.
ScenarioReply Structured(const ScenarioReply& reply, const Json& body) {
  if (!WantsJson(body)) return reply;
  const Json& config = Field(body, "generationConfig");
  for (const auto& b : reply.content) {
    if (b.type == BlockType::kText && ParseJson(b.text).ok()) {
      ScenarioReply out;
      out.content = {b};
      out.stop_reason = "end_turn";
      return out;
    }
  }
  const Json& schema = Field(config, "responseJsonSchema").is_object() ? Field(config, "responseJsonSchema")
                                                                      : Field(config, "responseSchema");
  ScenarioReply out;
  out.content = {ContentBlock::Text(DumpJson(schema.is_object() ? SchemaInstance(schema) : Json::object()))};
  out.stop_reason = "end_turn";
  return out;
}

Json Chunk(Json parts, const std::string& model, const std::string& id) {
  return {{"candidates", Json::array({{{"content", {{"role", "model"}, {"parts", std::move(parts)}}}, {"index", 0}}})},
          {"modelVersion", model}, {"responseId", id}};
}

class GeminiApi : public MockApi {
 public:
  std::string AgentId(const Json&) const override { return ""; }  // the header's
  Status Validate(const MockCall& call) const override { return ValidateGeminiRequest(call.body, call.model); }
  bool SideCall(const MockCall& call) const override { return WantsJson(call.body); }

  // The contents after the last model turn: text parts (not thoughts) and
  // function responses.
  std::string UserText(const Json& body) const override {
    const Json& contents = Field(body, "contents");
    std::vector<std::string> pieces;
    for (auto it = contents.rbegin(); it != contents.rend(); ++it) {
      if (StringOr(*it, "role") == "model") break;
      const Json& parts = Field(*it, "parts");
      std::string text;
      for (const auto& p : parts) {
        std::string piece;
        if (Field(p, "text").is_string() && !mock::Flag(p, "thought")) {
          piece = Field(p, "text").get<std::string>();
        } else if (Field(p, "functionResponse").is_object()) {
          piece = ResponseText(Field(Field(p, "functionResponse"), "response"));
        } else {
          continue;
        }
        if (!text.empty()) text += "\n";
        text += piece;
      }
      pieces.push_back(text);
    }
    return mock::JoinOldestFirst(pieces);
  }

  std::vector<std::string> OfferedTools(const Json& body) const override {
    std::vector<std::string> out;
    for (const auto& t : Field(body, "tools")) {
      for (const auto& d : Field(t, "functionDeclarations")) out.push_back(StringOr(d, "name"));
    }
    return out;
  }
  Usage Accounted(PromptCache& cache, const MockCall& call) const override {
    return cache.Gemini(AgentName(call.agent_id), call.body);
  }
  std::string Error(int status, const std::string&, const std::string& message) const override {
    return GeminiError(status, message);
  }

  std::string Whole(const ScenarioReply& scenario_reply, const MockCall& call, const Usage& usage) const override {
    const ScenarioReply reply = Structured(scenario_reply, call.body);
    Json parts = Json::array();
    bool signed_call = false;
    for (const auto& b : reply.content) {
      if (b.type == BlockType::kText) {
        parts.push_back({{"text", b.text}});
      } else if (b.type == BlockType::kToolUse) {
        parts.push_back(CallPart(b, !signed_call));
        signed_call = true;
      }
    }
    if (parts.empty()) parts.push_back({{"text", ""}});
    Json r = Chunk(std::move(parts), call.model, NewId("gr"));
    r["candidates"][0]["finishReason"] = GeminiFinishReason(reply.stop_reason);
    r["usageMetadata"] = UsageMetadata(usage);
    return DumpJson(r);
  }

  std::vector<std::string> Events(const ScenarioReply& scenario_reply, const MockCall& call, const Usage& usage,
                                  size_t text_chunk) const override {
    const ScenarioReply reply = Structured(scenario_reply, call.body);
    std::vector<Json> chunks;
    const std::string id = NewId("gr");
    bool signed_call = false;
    for (const auto& b : reply.content) {
      if (b.type == BlockType::kText) {
        for (const auto& piece : mock::SplitUtf8(b.text, text_chunk)) {
          chunks.push_back(Chunk(Json::array({{{"text", piece}}}), call.model, id));
        }
      } else if (b.type == BlockType::kToolUse) {
        chunks.push_back(Chunk(Json::array({CallPart(b, !signed_call)}), call.model, id));
        signed_call = true;
      }
    }
    if (chunks.empty()) chunks.push_back(Chunk(Json::array({{{"text", ""}}}), call.model, id));
    chunks.back()["candidates"][0]["finishReason"] = GeminiFinishReason(reply.stop_reason);
    chunks.back()["usageMetadata"] = UsageMetadata(usage);
    std::vector<std::string> ev;
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (call.sse) {
        ev.push_back("data: " + DumpJson(chunks[i]) + "\r\n\r\n");
      } else {
        ev.push_back((i == 0 ? "[" : ",\r\n") + DumpJson(chunks[i]) + (i + 1 == chunks.size() ? "]" : ""));
      }
    }
    return ev;
  }

  // Gemini sends nothing while it thinks; an SSE comment is what a client
  // ignores.
  std::string Ping(const MockCall& call) const override { return call.sse ? ": ping\r\n\r\n" : " "; }
  std::string ErrorEvent(const MockCall& call, const std::string& message) const override {
    const std::string e = GeminiError(503, message);
    return call.sse ? "data: " + e + "\r\n\r\n" : ",\r\n" + e + "]";
  }
  std::string UnknownModel(const std::string& model) const override {
    return GeminiError(404, "models/" + model +
                                " is not found for API version v1beta, or is not supported for generateContent. Call "
                                "ListModels to see the list of available models and their supported methods.");
  }
};

}  // namespace

std::unique_ptr<MockApi> GeminiMockApi() { return std::make_unique<GeminiApi>(); }

}  // namespace mates::llm
