#include "host/person_asker.h"

#include <algorithm>
#include <memory>

#include "core/clock.h"
#include "core/log.h"
#include "core/waker.h"
#include "store/elicitation.h"
#include "store/messenger.h"

namespace mates::host {
namespace {

// The MCP result a resolved elicitation request stands for.
Result<Json> ResultOf(const ProtocolRequest& r) {
  if (r.status != RequestState::kApproved) return Json{{"action", "decline"}};
  auto fields = ParseJson(r.response);
  if (!fields.ok() || !fields->is_object()) {
    return Status::Corrupt("request " + r.id + " was accepted with fields that are not a JSON object");
  }
  return Json{{"action", "accept"}, {"content", std::move(*fields)}};
}

std::string Seconds(double s) { return std::to_string(static_cast<long>(s + 0.5)) + " s"; }

}  // namespace

Result<Json> AskPerson(TeamStore& store, const std::string& team, const std::string& asker, const std::string& server,
                       const Json& params, double timeout_s, const CancelToken& stop) {
  elicitation::Question q;
  q.server = server;
  MATES_ASSIGN_OR_RETURN(q.message, JsonString(params, "message", true));
  if (params.contains("requestedSchema")) q.schema = params["requestedSchema"];
  std::unique_ptr<TeamMail> mail = store.Mail(team);
  Messenger messenger(*mail);
  // Watched before it is asked: an answer at once is not missed.
  auto waker = std::make_shared<Waker>();
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<Hold> watch, store.Watch(team, TeamPart::kRequests, waker));
  SendRequest ask;
  ask.type = MessageType::kElicitationRequest;
  ask.sender = asker;
  ask.recipient = kUserName;
  ask.content = elicitation::QuestionContent(q);
  ask.summary = "MCP server " + server + " asks";
  MATES_ASSIGN_OR_RETURN(SendReceipt sent, messenger.Send(ask));
  const std::string id = sent.message.request_id;
  LogInfo("mcp server " + server + " asks the person (" + id + "): " + q.message);
  const Deadline deadline = DeadlineIn(timeout_s);
  for (;;) {
    const uint64_t seen = waker->generation();
    auto r = mail->GetRequest(id);
    if (r.ok() && r->status != RequestState::kPending) return ResultOf(*r);
    if (stop.cancelled() || Expired(deadline)) break;
    // The cancel wakes no waker: looked at every half second.
    Deadline slice = DeadlineIn(0.5);
    if (deadline && *slice > *deadline) slice = deadline;
    waker->WaitChange(seen, slice);
  }
  // Closed for everyone who shows it, with why.
  SendRequest decline;
  decline.type = MessageType::kElicitationResponse;
  decline.sender = kUserName;
  decline.recipient = asker;
  decline.request_id = id;
  decline.approve = false;
  decline.content = stop.cancelled() ? "declined: the call that asked ended first"
                                     : "declined: nobody answered within " + Seconds(timeout_s);
  auto closed = messenger.Send(decline);
  if (!closed.ok()) {
    // Answered meanwhile: that answer stands.
    auto r = mail->GetRequest(id);
    if (r.ok() && r->status != RequestState::kPending && !stop.cancelled()) return ResultOf(*r);
    if (!r.ok() || r->status == RequestState::kPending) {
      LogWarning("mcp server " + server + ": its question " + id + " could not be closed: " + closed.status().message());
    }
  }
  return Json{{"action", "decline"}};
}

}  // namespace mates::host
