#include "store/messenger.h"

#include <algorithm>

#include "core/clock.h"
#include "core/limits.h"
#include "core/ids.h"
#include "core/names.h"
#include "core/trace_context.h"
#include "store/elicitation.h"

namespace mates {
namespace {

std::string TypeText(MessageType t) { return std::string(MessageTypeName(t)); }

Status NotOnRoster(const TeamConfig& team, const std::string& who, const std::string& as) {
  std::string names;
  for (const auto& m : team.members) {
    if (!names.empty()) names += ", ";
    names += m.name;
  }
  return Status::NotFound("unknown " + as + " '" + who + "': team '" + team.name +
                          "' has " + names);
}

// The kind of request a protocol message asks (for a request) or answers.
std::optional<RequestKind> KindOf(MessageType t) {
  switch (t) {
    case MessageType::kShutdownRequest:
    case MessageType::kShutdownResponse:
      return RequestKind::kShutdown;
    case MessageType::kPlanApprovalRequest:
    case MessageType::kPlanApprovalResponse:
      return RequestKind::kPlanApproval;
    case MessageType::kElicitationRequest:
    case MessageType::kElicitationResponse:
      return RequestKind::kElicitation;
    default:
      return std::nullopt;
  }
}

bool IsRequest(MessageType t) {
  return t == MessageType::kShutdownRequest || t == MessageType::kPlanApprovalRequest ||
         t == MessageType::kElicitationRequest;
}
bool IsResponse(MessageType t) {
  return t == MessageType::kShutdownResponse || t == MessageType::kPlanApprovalResponse ||
         t == MessageType::kElicitationResponse;
}

}  // namespace

Messenger::Messenger(Workspace ws, std::string team)
    : owned_(FileTeamMail(std::move(ws), std::move(team))), mail_(owned_.get()) {}

SendRequest Messenger::Completed(const TeamConfig& team, SendRequest r) const {
  switch (r.type) {
    case MessageType::kElicitationRequest:
      if (r.recipient.empty()) r.recipient = kUserName;
      break;
    case MessageType::kShutdownRequest:
      if (r.content.empty()) r.content = "Please wrap up your work and shut down.";
      break;
    case MessageType::kCompactRequest:
      if (r.content.empty()) r.content = "Compact your context now: the lead asked for it.";
      break;
    case MessageType::kPlanApprovalRequest:
      if (r.recipient.empty()) r.recipient = team.lead;
      break;
    case MessageType::kShutdownResponse:
    case MessageType::kPlanApprovalResponse:
    case MessageType::kElicitationResponse: {
      // An answer goes to whoever asked (a request not found is said by
      // the check).
      if (r.recipient.empty() && !r.request_id.empty()) {
        if (auto req = mail_->GetRequest(r.request_id); req.ok()) r.recipient = req->requester;
      }
      if (!r.approve.has_value()) break;
      const bool fields = r.type == MessageType::kElicitationResponse && *r.approve;
      if (fields) {
        // Accepted: the content is the fields, as JSON written once.
        if (auto parsed = ParseJson(r.content.empty() ? "{}" : r.content); parsed.ok()) r.content = DumpJson(*parsed);
      } else if (r.content.empty()) {
        r.content = !r.feedback.empty()                         ? r.feedback
                    : *r.approve                                ? "approved"
                    : r.type == MessageType::kElicitationResponse ? "declined"
                                                                : "rejected";
      }
      break;
    }
    case MessageType::kMessage:
    case MessageType::kBroadcast:
      break;
  }
  return r;
}

Status Messenger::CheckRoles(const TeamConfig& team, const SendRequest& r) const {
  const bool from_lead = team.IsLead(r.sender);
  const std::string type = TypeText(r.type);
  if (r.sender == kUserName && r.type != MessageType::kMessage && r.type != MessageType::kBroadcast &&
      r.type != MessageType::kElicitationResponse) {
    return Status::FailedPrecondition("user sends message or broadcast, not " + type +
                                      " (protocol messages are between the lead and its teammates; "
                                      "give --from to send as one of them)");
  }
  if (r.sender == kMergeQueueName && r.type != MessageType::kMessage) {
    return Status::FailedPrecondition("merge-queue sends plain messages only, not " + type);
  }
  if (r.recipient == kMergeQueueName) {
    return Status::FailedPrecondition("merge-queue reads no messages: to retry a merge, complete the task again");
  }
  if (r.type == MessageType::kElicitationRequest && r.recipient != kUserName) {
    return Status::FailedPrecondition("an elicitation_request goes to user, not '" + r.recipient + "'");
  }
  if (r.recipient == kUserName && r.type != MessageType::kMessage && r.type != MessageType::kElicitationRequest) {
    return Status::FailedPrecondition("only a plain message goes to user, not " + type);
  }
  auto lead_only = [&]() -> Status {
    if (!from_lead) {
      return Status::FailedPrecondition("only the lead ('" + team.lead + "') may send " + type);
    }
    return Status::Ok();
  };
  auto teammate_only = [&]() -> Status {
    if (from_lead) return Status::FailedPrecondition("the lead cannot send " + type);
    return Status::Ok();
  };

  switch (r.type) {
    case MessageType::kMessage:
    case MessageType::kBroadcast:
      if (r.content.empty()) return Status::InvalidArgument(type + " needs content");
      return Status::Ok();
    case MessageType::kShutdownRequest:
      MATES_RETURN_IF_ERROR(lead_only());
      if (r.recipient == team.lead) return Status::InvalidArgument("the lead cannot be asked to shut down");
      return Status::Ok();
    case MessageType::kCompactRequest:
      MATES_RETURN_IF_ERROR(lead_only());
      if (r.recipient == team.lead) return Status::InvalidArgument("the lead compacts with /compact, not a request");
      return Status::Ok();
    case MessageType::kPlanApprovalRequest:
      MATES_RETURN_IF_ERROR(teammate_only());
      if (r.recipient != team.lead) {
        return Status::FailedPrecondition("plan_approval_request goes to the lead ('" + team.lead + "')");
      }
      if (r.content.empty()) return Status::InvalidArgument("plan_approval_request needs the plan as content");
      return Status::Ok();
    case MessageType::kElicitationRequest: {
      // The question must be one a person can answer.
      auto q = elicitation::ParseQuestion(r.content);
      if (!q.ok()) return Status::InvalidArgument("elicitation_request: " + q.status().message());
      return Status::Ok();
    }
    case MessageType::kShutdownResponse:
    case MessageType::kPlanApprovalResponse:
    case MessageType::kElicitationResponse:
      return CheckAnswer(team, r);
  }
  return Status::Ok();
}

Status Messenger::CheckAnswer(const TeamConfig& team, const SendRequest& r) const {
  const std::string type = TypeText(r.type);
  const bool from_lead = team.IsLead(r.sender);
  const RequestKind kind = *KindOf(r.type);
  if (kind == RequestKind::kShutdown && from_lead) return Status::FailedPrecondition("the lead cannot send " + type);
  if (kind == RequestKind::kPlanApproval && !from_lead) {
    return Status::FailedPrecondition("only the lead ('" + team.lead + "') may send " + type);
  }
  if (!r.approve.has_value()) return Status::InvalidArgument(type + " needs approve: true or false");
  if (r.request_id.empty()) return Status::InvalidArgument(type + " needs the request_id it answers");
  auto req = mail_->GetRequest(r.request_id);
  if (!req.ok()) return req.status();
  if (req->kind != kind) {
    return Status::FailedPrecondition("request " + r.request_id + " is a " +
                                      std::string(RequestKindName(req->kind)) + " request, not " +
                                      std::string(RequestKindName(kind)));
  }
  if (req->responder != r.sender) {
    return Status::FailedPrecondition("request " + r.request_id + " is for '" +
                                      req->responder + "' to answer, not '" + r.sender + "'");
  }
  if (req->status != RequestState::kPending) {
    return Status::FailedPrecondition("request " + r.request_id + " was already answered (" +
                                      std::string(RequestStateName(req->status)) + ")");
  }
  if (r.recipient != req->requester) {
    return Status::FailedPrecondition("request " + r.request_id + " came from '" +
                                      req->requester + "'; answer goes there");
  }
  if (kind == RequestKind::kElicitation && *r.approve) {
    // Accepted: the content is the fields, as the question asks them.
    auto q = elicitation::ParseQuestion(req->content);
    if (!q.ok()) return Status::FailedPrecondition("request " + r.request_id + ": " + q.status().message());
    auto fields = ParseJson(r.content.empty() ? "{}" : r.content);
    if (!fields.ok()) return Status::InvalidArgument("an accepted elicitation_response's content is its fields, as a JSON object");
    return elicitation::CheckAnswer(q->schema, *fields);
  }
  return Status::Ok();
}

Status Messenger::Record(const SendRequest& r, Message& msg, SendReceipt& receipt) {
  if (IsRequest(r.type)) {
    if (msg.request_id.empty()) msg.request_id = NewId("r");
    ProtocolRequest req;
    req.id = msg.request_id;
    req.kind = *KindOf(r.type);
    req.requester = r.sender;
    req.responder = r.recipient;
    req.status = RequestState::kPending;
    req.content = r.content;
    req.created_at = msg.timestamp;
    MATES_RETURN_IF_ERROR(mail_->CreateRequest(req));
    // A plan sent again (after feedback, or revised unasked) is the one
    // that waits: the requester's earlier ones, still pending, are stale,
    // and nobody should be asked to answer them.
    if (r.type == MessageType::kPlanApprovalRequest) {
      auto all = mail_->ListRequests();
      for (const auto& old : all.ok() ? *all : std::vector<ProtocolRequest>{}) {
        if (old.kind != RequestKind::kPlanApproval || old.status != RequestState::kPending || old.id == req.id ||
            old.requester != req.requester) {
          continue;
        }
        (void)mail_->ResolveRequest(old.id, false, "superseded by the plan of " + req.id);
      }
    }
  } else if (IsResponse(r.type)) {
    std::string response = r.type == MessageType::kPlanApprovalResponse ? r.feedback : r.content;
    MATES_RETURN_IF_ERROR(mail_->ResolveRequest(msg.request_id, *r.approve, response).status());
    // The host that asked reads the answer from the request; a model
    // would only see noise.
    if (r.type == MessageType::kElicitationResponse) receipt.recipients.clear();
  }
  return Status::Ok();
}

namespace {

// The message a request makes, stamped now.
Message MessageOf(const SendRequest& r) {
  Message msg;
  msg.id = r.id.empty() ? NewId("m") : r.id;
  msg.type = r.type;
  msg.sender = r.sender;
  msg.recipient = r.type == MessageType::kBroadcast ? "" : r.recipient;
  msg.content = r.content;
  msg.summary = r.summary;
  msg.timestamp = WallSeconds();
  msg.approve = r.approve;
  msg.feedback = r.feedback;
  msg.request_id = r.request_id;
  // The sender's span, if it works in one (a tool call, DESIGN §29).
  msg.traceparent = CurrentTrace().Traceparent();
  return msg;
}

}  // namespace

Result<SendReceipt> Messenger::Send(SendRequest r) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", mail_->team()));
  if (!r.id.empty()) MATES_RETURN_IF_ERROR(ValidateName("message id", r.id));
  for (const auto* field : {&r.content, &r.summary, &r.feedback}) {
    if (field->size() > kMaxMessageBytes) {
      return Status::InvalidArgument("a message may be " + std::to_string(kMaxMessageBytes) +
                                     " bytes at most; this one is " + std::to_string(field->size()));
    }
  }
  MATES_RETURN_IF_ERROR(ValidateName("sender name", r.sender));
  if (!r.recipient.empty()) MATES_RETURN_IF_ERROR(ValidateName("recipient name", r.recipient));
  MATES_ASSIGN_OR_RETURN(TeamConfig team, mail_->LoadTeam());
  const bool from_user = r.sender == kUserName || r.sender == kMergeQueueName;
  if (!from_user && team.Find(r.sender) == nullptr) return NotOnRoster(team, r.sender, "sender");
  if (r.type == MessageType::kBroadcast) {
    if (!r.recipient.empty()) return Status::InvalidArgument("a broadcast has no recipient");
  }
  r = Completed(team, std::move(r));
  MATES_RETURN_IF_ERROR(CheckRoles(team, r));

  SendReceipt receipt;
  if (r.type == MessageType::kBroadcast) {
    for (const auto& m : team.members) {
      if (m.name != r.sender) receipt.recipients.push_back(m.name);
    }
  } else {
    if (r.recipient.empty()) return Status::InvalidArgument(TypeText(r.type) + " needs a recipient");
    if (r.recipient != kUserName && team.Find(r.recipient) == nullptr) {
      return NotOnRoster(team, r.recipient, "recipient");
    }
    if (r.recipient == r.sender) return Status::InvalidArgument("cannot send a message to yourself");
    receipt.recipients.push_back(r.recipient);
  }

  if (!r.id.empty()) {
    auto logged = mail_->FindLogged(r.id);
    if (!logged.ok()) return logged.status();
    if (logged->has_value()) {
      receipt.message = std::move(**logged);
      receipt.already_sent = true;
      return receipt;
    }
  }

  Message msg = MessageOf(r);
  MATES_RETURN_IF_ERROR(Record(r, msg, receipt));

  std::vector<Message> copies;
  for (const auto& to : receipt.recipients) {
    if (!r.id.empty()) {
      // A retry of a send that failed part way: who has it already.
      auto pending = mail_->Peek(to);
      if (pending.ok() && std::any_of(pending->begin(), pending->end(),
                                      [&](const Message& m) { return m.id == msg.id; })) {
        continue;
      }
    }
    copies.push_back(msg);
    copies.back().recipient = to;
  }
  Status logged;
  MATES_RETURN_IF_ERROR(mail_->Post(copies, msg, &logged));
  // Delivered: from here a failure must not read as "not sent".
  if (!logged.ok()) {
    receipt.warnings.push_back("delivered, but not recorded in the message log: " + logged.message());
  }
  receipt.message = std::move(msg);
  return receipt;
}

}  // namespace mates
