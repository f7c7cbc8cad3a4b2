#include "mcp/jsonrpc.h"

#include <nlohmann/json.hpp>

namespace mates::mcp {
namespace {

Incoming Invalid(int code, std::string error, Json id = nullptr) {
  Incoming in;
  in.kind = Incoming::Kind::kInvalid;
  in.error_code = code;
  in.error = std::move(error);
  in.id = std::move(id);
  return in;
}

// MCP ids are strings or integers (never null, never a fraction).
bool UsableId(const Json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

Incoming ParseFrame(std::string_view frame) {
  if (frame.size() > kMaxFrameBytes) {
    return Invalid(kParseError, "message too long (" + std::to_string(frame.size()) + " bytes; at most " +
                                    std::to_string(kMaxFrameBytes) + ")");
  }
  auto parsed = ParseJson(frame);
  if (!parsed.ok()) return Invalid(kParseError, "not JSON: " + parsed.status().message());
  return Classify(*parsed);
}

Incoming Classify(const Json& msg) {
  if (msg.is_array()) return Invalid(kInvalidRequest, "batches are not supported (MCP 2025-06-18 dropped them)");
  if (!msg.is_object()) return Invalid(kInvalidRequest, "a message is a JSON object");
  Json id = nullptr;
  const bool has_id = msg.contains("id");
  if (has_id && UsableId(msg["id"])) id = msg["id"];
  auto version = msg.find("jsonrpc");
  if (version == msg.end() || !version->is_string() || *version != "2.0") {
    return Invalid(kInvalidRequest, "\"jsonrpc\" must be \"2.0\"", id);
  }
  auto method = msg.find("method");
  if (method == msg.end()) {
    if (has_id && (msg.contains("result") || msg.contains("error"))) {
      Incoming in;
      in.kind = Incoming::Kind::kResponse;
      in.id = id;
      return in;
    }
    return Invalid(kInvalidRequest, "no \"method\"", id);
  }
  if (!method->is_string() || method->get_ref<const std::string&>().empty()) {
    return Invalid(kInvalidRequest, "\"method\" must be a non-empty string", id);
  }
  if (has_id && !UsableId(msg["id"])) {
    return Invalid(kInvalidRequest, "\"id\" must be a string or an integer");
  }
  Incoming in;
  in.kind = has_id ? Incoming::Kind::kRequest : Incoming::Kind::kNotification;
  in.id = id;
  in.method = *method;
  auto params = msg.find("params");
  if (params != msg.end() && !params->is_null()) {
    // A notification is never answered: one with bad params is one without.
    if (params->is_object()) {
      in.params = *params;
    } else if (has_id) {
      return Invalid(kInvalidParams, "\"params\" must be an object", id);
    }
  }
  return in;
}

std::string ResultFrame(const Json& id, Json result) {
  Json out = Json::object();
  out["jsonrpc"] = "2.0";
  out["id"] = id;
  out["result"] = std::move(result);
  return DumpJson(out);
}

std::string ErrorFrame(const Json& id, int code, const std::string& message) {
  Json out = Json::object();
  out["jsonrpc"] = "2.0";
  out["id"] = id;
  out["error"] = Json{{"code", code}, {"message", message}};
  return DumpJson(out);
}

}  // namespace mates::mcp
