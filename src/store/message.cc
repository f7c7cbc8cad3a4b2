#include "store/message.h"

#include <nlohmann/json.hpp>

#include "core/trace_context.h"

namespace mates {
namespace {
struct TypeName {
  MessageType type;
  std::string_view name;
};
constexpr TypeName kTypeNames[] = {
    {MessageType::kMessage, "message"},
    {MessageType::kBroadcast, "broadcast"},
    {MessageType::kShutdownRequest, "shutdown_request"},
    {MessageType::kShutdownResponse, "shutdown_response"},
    {MessageType::kPlanApprovalRequest, "plan_approval_request"},
    {MessageType::kPlanApprovalResponse, "plan_approval_response"},
    {MessageType::kCompactRequest, "compact_request"},
    {MessageType::kElicitationRequest, "elicitation_request"},
    {MessageType::kElicitationResponse, "elicitation_response"},
};
}  // namespace

std::string_view MessageTypeName(MessageType type) {
  for (const auto& t : kTypeNames) {
    if (t.type == type) return t.name;
  }
  return "message";
}

const std::vector<MessageType>& AllMessageTypes() {
  static const std::vector<MessageType> all = [] {
    std::vector<MessageType> v;
    for (const auto& t : kTypeNames) v.push_back(t.type);
    return v;
  }();
  return all;
}

Result<MessageType> ParseMessageType(std::string_view name) {
  for (const auto& t : kTypeNames) {
    if (t.name == name) return t.type;
  }
  std::string valid;
  for (const auto& t : kTypeNames) {
    if (!valid.empty()) valid += ", ";
    valid += t.name;
  }
  return Status::InvalidArgument("unknown message type '" + std::string(name) +
                                 "' (valid: " + valid + ")");
}

Json MessageToJson(const Message& m) {
  Json j = {{"id", m.id},
            {"type", MessageTypeName(m.type)},
            {"sender", m.sender}};
  if (!m.recipient.empty()) j["recipient"] = m.recipient;
  j["content"] = m.content;
  if (!m.summary.empty()) j["summary"] = m.summary;
  j["timestamp"] = m.timestamp;
  if (!m.request_id.empty()) j["request_id"] = m.request_id;
  if (m.approve.has_value()) j["approve"] = *m.approve;
  if (!m.feedback.empty()) j["feedback"] = m.feedback;
  if (!m.traceparent.empty()) j["traceparent"] = m.traceparent;
  if (m.read.has_value()) j["read"] = *m.read;
  if (!m.protocol.empty()) j["protocol"] = m.protocol;
  if (!m.foreign_json.empty()) {
    auto extra = ParseJson(m.foreign_json);
    if (extra.ok()) j["extra"] = std::move(*extra);
  }
  return j;
}

std::string MessageToLine(const Message& m) { return DumpJson(MessageToJson(m)) + "\n"; }

Result<Message> MessageFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("message is not a JSON object");
  Message m;
  MATES_ASSIGN_OR_RETURN(m.id, JsonString(j, "id", /*required=*/true));
  if (m.id.empty()) return Status::InvalidArgument("message has an empty id");
  MATES_ASSIGN_OR_RETURN(std::string type, JsonString(j, "type", false, "message"));
  MATES_ASSIGN_OR_RETURN(m.type, ParseMessageType(type));
  MATES_ASSIGN_OR_RETURN(m.sender, JsonString(j, "sender", false));
  if (m.sender.empty()) {
    MATES_ASSIGN_OR_RETURN(m.sender, JsonString(j, "from", false));
  }
  if (m.sender.empty()) return Status::InvalidArgument("message has no sender");
  MATES_ASSIGN_OR_RETURN(m.recipient, JsonString(j, "recipient", false));
  MATES_ASSIGN_OR_RETURN(m.content, JsonString(j, "content", /*required=*/true));
  MATES_ASSIGN_OR_RETURN(m.summary, JsonString(j, "summary", false));
  MATES_ASSIGN_OR_RETURN(m.request_id, JsonString(j, "request_id", false));
  MATES_ASSIGN_OR_RETURN(m.feedback, JsonString(j, "feedback", false));
  MATES_ASSIGN_OR_RETURN(m.timestamp, JsonNumber(j, "timestamp", 0));
  if (auto tp = j.find("traceparent"); tp != j.end() && tp->is_string()) {
    if (auto c = ParseTraceparent(tp->get<std::string>())) m.traceparent = c->Traceparent();
  }
  auto approve = j.find("approve");
  if (approve != j.end() && !approve->is_null()) {
    if (!approve->is_boolean()) return Status::InvalidArgument("field 'approve' must be true or false");
    m.approve = approve->get<bool>();
  }
  return m;
}

Result<Message> ParseMessageLine(std::string_view line) {
  MATES_ASSIGN_OR_RETURN(Json j, ParseJson(line));
  return MessageFromJson(j);
}

}  // namespace mates
