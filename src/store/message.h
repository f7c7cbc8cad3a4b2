// Message: one line of an inbox and of messages.jsonl (DESIGN §2, §3).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace mates {

enum class MessageType {
  kMessage,
  kBroadcast,
  kShutdownRequest,
  kShutdownResponse,
  kPlanApprovalRequest,
  kPlanApprovalResponse,
  // Lead -> teammate: compact your context before your next model call
  // (DESIGN §15). Content optional (what to keep, say).
  kCompactRequest,
  // A host -> user: an MCP server's question for a person; user -> the
  // host: the answer (store/elicitation.h, DESIGN §23).
  kElicitationRequest,
  kElicitationResponse,
};

std::string_view MessageTypeName(MessageType type);
// InvalidArgument listing the valid types for anything else.
Result<MessageType> ParseMessageType(std::string_view name);
const std::vector<MessageType>& AllMessageTypes();

struct Message {
  std::string id;  // "m-…", unique; duplicates are suppressed by it
  MessageType type = MessageType::kMessage;
  std::string sender;
  std::string recipient;  // empty in the log line of a broadcast
  std::string content;
  std::string summary;
  std::string request_id;
  std::optional<bool> approve;
  std::string feedback;
  double timestamp = 0;
  // The sender's span when it sent (W3C traceparent, DESIGN §29): the
  // recipient's turn links to it. "" = none; one that does not parse is
  // dropped on reading (anyone may write a mailbox line).
  std::string traceparent;
  // Seen from outside mates (a Claude Code team, DESIGN §24): whether the
  // recipient has it yet, and the other system's own type of message
  // ("idle_notification", …); unset and "" for mates' own.
  std::optional<bool> read;
  std::string protocol;
  std::string foreign_json;  // the fields mates does not read, as a JSON object ("" = none)
};

Json MessageToJson(const Message& m);
// The JSONL line, '\n' included.
std::string MessageToLine(const Message& m);
// Accepts `from` for `sender` (the s09 format). InvalidArgument saying what
// is missing or mistyped.
Result<Message> MessageFromJson(const Json& j);
Result<Message> ParseMessageLine(std::string_view line);

}  // namespace mates
