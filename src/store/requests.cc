#include "store/requests.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/names.h"

namespace mates {

std::string_view RequestKindName(RequestKind k) {
  switch (k) {
    case RequestKind::kShutdown:
      return "shutdown";
    case RequestKind::kPlanApproval:
      return "plan_approval";
    case RequestKind::kElicitation:
      return "elicitation";
  }
  return "shutdown";
}

std::string_view RequestStateName(RequestState s) {
  switch (s) {
    case RequestState::kPending:
      return "pending";
    case RequestState::kApproved:
      return "approved";
    case RequestState::kRejected:
      return "rejected";
  }
  return "pending";
}

namespace {

Result<RequestKind> ParseRequestKind(std::string_view name) {
  if (name == "shutdown") return RequestKind::kShutdown;
  if (name == "plan_approval") return RequestKind::kPlanApproval;
  if (name == "elicitation") return RequestKind::kElicitation;
  return Status::InvalidArgument("unknown request kind '" + std::string(name) + "'");
}

Result<RequestState> ParseRequestState(std::string_view name) {
  if (name == "pending") return RequestState::kPending;
  if (name == "approved") return RequestState::kApproved;
  if (name == "rejected") return RequestState::kRejected;
  return Status::InvalidArgument("unknown request status '" + std::string(name) + "'");
}

}  // namespace

Json ProtocolRequestToJson(const ProtocolRequest& r) {
  return {{"request_id", r.id},       {"kind", RequestKindName(r.kind)},         {"requester", r.requester},
          {"responder", r.responder}, {"status", RequestStateName(r.status)},     {"content", r.content},
          {"response", r.response},   {"created_at", r.created_at},
          {"resolved_at", r.resolved_at}};
}

Result<ProtocolRequest> ProtocolRequestFromJson(const Json& j) {
  ProtocolRequest r;
  MATES_ASSIGN_OR_RETURN(r.id, JsonString(j, "request_id", true));
  MATES_ASSIGN_OR_RETURN(std::string kind, JsonString(j, "kind", true));
  MATES_ASSIGN_OR_RETURN(r.kind, ParseRequestKind(kind));
  MATES_ASSIGN_OR_RETURN(r.requester, JsonString(j, "requester", true));
  MATES_ASSIGN_OR_RETURN(r.responder, JsonString(j, "responder", true));
  MATES_ASSIGN_OR_RETURN(std::string status, JsonString(j, "status", false, "pending"));
  MATES_ASSIGN_OR_RETURN(r.status, ParseRequestState(status));
  MATES_ASSIGN_OR_RETURN(r.content, JsonString(j, "content", false));
  MATES_ASSIGN_OR_RETURN(r.response, JsonString(j, "response", false));
  MATES_ASSIGN_OR_RETURN(r.created_at, JsonNumber(j, "created_at", 0));
  MATES_ASSIGN_OR_RETURN(r.resolved_at, JsonNumber(j, "resolved_at", 0));
  return r;
}

RequestStore::RequestStore(const Workspace& ws, std::string team)
    : dir_(ws.RequestsDir(team)), lock_(ws.RequestsDir(team) / ".lock") {}

namespace {
// Request ids become file names: hold them to the name rule.
Status ValidateRequestId(std::string_view id) { return ValidateName("request id", id); }
}  // namespace

Status RequestStore::Create(const ProtocolRequest& r) {
  MATES_RETURN_IF_ERROR(ValidateRequestId(r.id));
  MATES_RETURN_IF_ERROR(EnsureDir(dir_));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_));
  fs::path path = dir_ / (r.id + ".json");
  if (fs::exists(path)) return Status::AlreadyExists("request " + r.id + " exists already");
  return WriteFileAtomic(path, DumpJsonPretty(ProtocolRequestToJson(r)));
}

Result<ProtocolRequest> RequestStore::Get(std::string_view id) const {
  MATES_RETURN_IF_ERROR(ValidateRequestId(id));
  fs::path path = dir_ / (std::string(id) + ".json");
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("no request '" + std::string(id) + "'");
    }
    return data.status();
  }
  MATES_ASSIGN_OR_RETURN(Json j, ParseJson(*data));
  auto r = ProtocolRequestFromJson(j);
  if (!r.ok()) return r.status().WithContext(path.string());
  return r;
}

Result<ProtocolRequest> RequestStore::Resolve(std::string_view id, bool approve,
                                              const std::string& response) {
  MATES_RETURN_IF_ERROR(ValidateRequestId(id));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_));
  MATES_ASSIGN_OR_RETURN(ProtocolRequest r, Get(id));
  if (r.status != RequestState::kPending) {
    return Status::FailedPrecondition("request " + r.id + " was already answered (" +
                                      std::string(RequestStateName(r.status)) + ")");
  }
  r.status = approve ? RequestState::kApproved : RequestState::kRejected;
  r.response = response;
  r.resolved_at = WallSeconds();
  MATES_RETURN_IF_ERROR(
      WriteFileAtomic(dir_ / (r.id + ".json"), DumpJsonPretty(ProtocolRequestToJson(r))));
  return r;
}

Result<std::vector<ProtocolRequest>> RequestStore::List() const {
  std::vector<ProtocolRequest> out;
  std::error_code ec;
  if (!fs::exists(dir_, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".json") continue;
    auto r = Get(e.path().stem().string());
    if (r.ok()) out.push_back(std::move(*r));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.created_at < b.created_at;
  });
  return out;
}

}  // namespace mates
