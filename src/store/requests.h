// Protocol requests (shutdown, plan approval) persisted as
// .teams/<team>/requests/<id>.json, so that a response can be matched to its
// request across processes and restarts (DESIGN §2, §3).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "store/workspace.h"

namespace mates {

enum class RequestKind { kShutdown, kPlanApproval, kElicitation };
std::string_view RequestKindName(RequestKind k);  // "shutdown" | "plan_approval" | "elicitation"
enum class RequestState { kPending, kApproved, kRejected };
std::string_view RequestStateName(RequestState s);  // "pending" | "approved" | "rejected"

struct ProtocolRequest {
  std::string id;         // "r-…"
  RequestKind kind = RequestKind::kShutdown;
  std::string requester;  // who asked
  std::string responder;  // who must answer
  RequestState status = RequestState::kPending;
  std::string content;    // the plan, the shutdown reason, or the question (store/elicitation.h)
  std::string response;   // summary / reason / feedback given with the answer; an
                          // accepted elicitation's fields, as a JSON object
  double created_at = 0;
  double resolved_at = 0;
};

Json ProtocolRequestToJson(const ProtocolRequest& r);
Result<ProtocolRequest> ProtocolRequestFromJson(const Json& j);

class RequestStore {
 public:
  RequestStore(const Workspace& ws, std::string team);

  Status Create(const ProtocolRequest& r);
  Result<ProtocolRequest> Get(std::string_view id) const;
  // Marks a pending request approved or rejected. FailedPrecondition if it
  // was answered already.
  Result<ProtocolRequest> Resolve(std::string_view id, bool approve, const std::string& response);
  Result<std::vector<ProtocolRequest>> List() const;

 private:
  fs::path dir_;
  fs::path lock_;
};

}  // namespace mates
