// See store.h: protocol requests.
#include "pg/store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/json.h"
#include "core/names.h"
#include "pg/export.h"
#include "pg/schema.h"
#include "pg/store_rows.h"
#include "store/task_rules.h"

namespace mates::pg {

namespace {

const std::string kBoundedDoc =
    "CASE WHEN octet_length(doc) <= " + std::to_string(kMaxStateFileBytes) + " THEN doc END";

Result<ProtocolRequest> RequestOf(const Rows& r, int row, const std::string& team) {
  if (r.null(row, 0)) return Status::Corrupt("a request of team '" + team + "' is too large to read");
  MATES_ASSIGN_OR_RETURN(Json j, ParseJson(r.text(row, 0)));
  auto req = ProtocolRequestFromJson(j);
  if (!req.ok()) return Status::Corrupt("a request of team '" + team + "': " + req.status().message());
  return req;
}

}  // namespace

Status RequestRows::Create(const std::string& team, const ProtocolRequest& r) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", r.id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  auto ins = c->Exec("INSERT INTO mates_requests (team, id, doc, created_at) VALUES ($1, $2, $3, $4) "
                     "ON CONFLICT DO NOTHING",
                     {team, r.id, DumpJson(ProtocolRequestToJson(r)), Seconds(r.created_at)});
  if (!ins.ok()) return NoTeamIfForeignKey(ins.status(), team);
  if (ins->affected() == 0) return Status::AlreadyExists("request " + r.id + " exists already");
  return Status::Ok();
}

Result<ProtocolRequest> RequestRows::Get(const std::string& team, const std::string& id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc + " FROM mates_requests WHERE team = $1 AND id = $2",
                                         {team, id}));
  if (r.size() == 0) return Status::NotFound("no request '" + id + "'");
  return RequestOf(r, 0, team);
}

Result<ProtocolRequest> RequestRows::Resolve(const std::string& team, const std::string& id, bool approve,
                                              const std::string& response) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<ProtocolRequest> {
    MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc +
                                               " FROM mates_requests WHERE team = $1 AND id = $2 FOR UPDATE",
                                           {team, id}));
    if (r.size() == 0) return Status::NotFound("no request '" + id + "'");
    MATES_ASSIGN_OR_RETURN(ProtocolRequest req, RequestOf(r, 0, team));
    if (req.status != RequestState::kPending) {
      return Status::FailedPrecondition("request " + req.id + " was already answered (" +
                                        std::string(RequestStateName(req.status)) + ")");
    }
    req.status = approve ? RequestState::kApproved : RequestState::kRejected;
    req.response = response;
    req.resolved_at = WallSeconds();
    MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_requests SET doc = $3 WHERE team = $1 AND id = $2",
                                  {team, id, DumpJson(ProtocolRequestToJson(req))})
                              .status());
    return req;
  });
}

Result<std::vector<ProtocolRequest>> RequestRows::List(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc +
                                             " FROM mates_requests WHERE team = $1 ORDER BY created_at, id",
                                         {team}));
  std::vector<ProtocolRequest> out;
  for (int i = 0; i < r.size(); ++i) {
    auto req = RequestOf(r, i, team);
    if (req.ok()) out.push_back(std::move(*req));
  }
  return out;
}

// ---------------------------------------------------------------- merges

}  // namespace mates::pg
