// See store.h: mailboxes, the message log and protocol requests.
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

Status Store::Append(const std::string& team, const std::string& member, const Message& m) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (m.id.empty()) return Status::InvalidArgument("a message needs an id");
  for (const std::string* field : {&m.content, &m.summary, &m.feedback}) {
    if (field->size() > kMaxMessageBytes) {
      return Status::InvalidArgument("a message may be " + std::to_string(kMaxMessageBytes) + " bytes at most");
    }
  }
  std::string line = LineOf(m);
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  // The NOTIFY goes out with the row's commit, and only for a new row.
  auto r = c->Exec(
      "WITH ins AS (INSERT INTO mates_inbox (team, member, msg_id, line) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (team, member, msg_id) DO NOTHING RETURNING seq) "
      "SELECT pg_notify($5, '') FROM ins",
      {team, member, m.id, line, ChannelOf(InboxKey(team, member))});
  if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
  return Status::Ok();
}

Result<std::vector<Message>> Store::Peek(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kBoundedLine +
                                             " FROM mates_inbox WHERE team = $1 AND member = $2 ORDER BY seq",
                                         {team, member}));
  std::vector<Message> out;
  for (int i = 0; i < r.size(); ++i) {
    auto m = ParseMessageLine(r.text(i, 0));
    if (m.ok()) out.push_back(std::move(*m));
  }
  return out;
}

Result<size_t> Store::PendingCount(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT count(*) FROM mates_inbox WHERE team = $1 AND member = $2",
                                         {team, member}));
  return static_cast<size_t>(r.integer(0, 0));
}

Result<std::vector<std::pair<std::string, std::vector<Message>>>> Store::PendingByMember(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT member, ") + kBoundedLine +
                                             " FROM mates_inbox WHERE team = $1 ORDER BY member, seq",
                                         {team}));
  std::vector<std::pair<std::string, std::vector<Message>>> out;
  for (int i = 0; i < r.size(); ++i) {
    std::string member(r.text(i, 0));
    if (out.empty() || out.back().first != member) out.emplace_back(member, std::vector<Message>());
    auto m = ParseMessageLine(r.text(i, 1));
    if (m.ok()) out.back().second.push_back(std::move(*m));
  }
  return out;
}

Store::Batch::~Batch() {
  // Not committed: the rows stay, for the next drain.
  if (lease && (*lease)->ok()) (void)(*lease)->ExecScript("ROLLBACK");
}

Result<Store::Batch> Store::BeginDrain(const std::string& team, const std::string& member,
                                       const AlreadyDelivered& already_delivered) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  Batch b;
  MATES_RETURN_IF_ERROR(c->ExecScript("BEGIN"));
  b.lease.emplace(std::move(c));
  Connection& conn = **b.lease;
  // One drainer per inbox at a time; the lock goes with the transaction.
  MATES_RETURN_IF_ERROR(
      conn.Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {InboxKey(team, member)}).status());
  MATES_ASSIGN_OR_RETURN(Rows r, conn.Exec(std::string("SELECT seq, ") + kBoundedLine +
                                               " FROM mates_inbox WHERE team = $1 AND member = $2 ORDER BY seq",
                                           {team, member}));
  for (int i = 0; i < r.size(); ++i) {
    b.rows.push_back(r.integer(i, 0));
    auto m = r.null(i, 1) ? Result<Message>(Status::InvalidArgument("over " + std::to_string(kMaxStateFileBytes) +
                                                                     " bytes"))
                          : ParseMessageLine(r.text(i, 1));
    if (!m.ok()) {
      LogWarning("inbox of " + member + "@" + team + ": dropped an unreadable row: " + m.status().message());
      continue;
    }
    if (already_delivered && already_delivered(m->id)) continue;
    b.messages.push_back(std::move(*m));
  }
  return b;
}

Status Store::Commit(Batch& batch) {
  if (!batch.lease) return Status::FailedPrecondition("this drain was committed already");
  Connection& conn = **batch.lease;
  Status s = Status::Ok();
  if (!batch.rows.empty()) {
    s = conn.Exec("DELETE FROM mates_inbox WHERE seq = ANY($1::bigint[])", {ArrayText(batch.rows)}).status();
  }
  if (s.ok()) s = conn.ExecScript("COMMIT");
  if (!s.ok()) (void)conn.ExecScript("ROLLBACK");
  batch.lease.reset();
  return s;
}

Result<std::vector<Message>> Store::Drain(const std::string& team, const std::string& member,
                                          const AlreadyDelivered& already_delivered) {
  MATES_ASSIGN_OR_RETURN(Batch b, BeginDrain(team, member, already_delivered));
  MATES_RETURN_IF_ERROR(Commit(b));
  return std::move(b.messages);
}

// ----------------------------------------------------------- message log

namespace {

// Messages from rows of (seq, bounded line): unreadable ones are skipped
// with a warning, as the file log skips a bad line.
std::vector<Message> LoggedMessages(const Rows& r, const std::string& team, int64_t* last_seq) {
  std::vector<Message> out;
  for (int i = 0; i < r.size(); ++i) {
    if (last_seq != nullptr) *last_seq = std::max(*last_seq, r.integer(i, 0));
    auto m = r.null(i, 1) ? Result<Message>(Status::InvalidArgument("over " + std::to_string(kMaxStateFileBytes) +
                                                                     " bytes"))
                          : ParseMessageLine(r.text(i, 1));
    if (!m.ok()) {
      LogWarning("message log of " + team + ": skipped an unreadable row: " + m.status().message());
      continue;
    }
    out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace

Status Store::LogMessage(const std::string& team, const Message& m) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("message id", m.id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  // One at a time per team, the lock held to the commit: a number taken
  // becomes visible before the next is taken, so a reader that moved past
  // it (ReadLog's cursor) cannot miss one that commits late.
  Status s = InTransaction(*c, [&]() -> Status {
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {LogKey(team)}).status());
    return c->Exec("WITH ins AS (INSERT INTO mates_messages (team, msg_id, line) VALUES ($1, $2, $3) "
                   "ON CONFLICT (team, msg_id) DO NOTHING RETURNING seq) "
                   "SELECT pg_notify($4, '') FROM ins",
                   {team, m.id, LineOf(m), ChannelOf(LogKey(team))})
        .status();
  });
  return NoTeamIfForeignKey(s, team);
}

Result<std::optional<Message>> Store::FindLogged(const std::string& team, const std::string& id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("message id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT seq, " + kBoundedLine +
                                             " FROM mates_messages WHERE team = $1 AND msg_id = $2",
                                         {team, id}));
  std::vector<Message> found = LoggedMessages(r, team, nullptr);
  if (found.empty()) return std::optional<Message>();
  return std::optional<Message>(std::move(found[0]));
}

namespace {

// The rows of the log that `where` picks, `order`ed ("" or " DESC"): at
// most $2 of them, and of those the first always, then as many as fit in
// $3 bytes together; oldest first.
std::string SizedLogPage(const std::string& where, const std::string& order) {
  return "SELECT seq, line FROM (SELECT seq, line, row_number() OVER (ORDER BY seq" + order +
         ") AS n, sum(coalesce(octet_length(line), 0)) OVER (ORDER BY seq" + order +
         ") AS upto FROM (SELECT seq, " + kBoundedLine + " AS line FROM mates_messages WHERE " + where +
         " ORDER BY seq" + order + " LIMIT $2) page) sized WHERE n = 1 OR upto <= $3 ORDER BY seq";
}

std::string ByteBound(size_t max_bytes) {
  return Num(max_bytes == 0 || max_bytes > static_cast<size_t>(INT64_MAX) ? INT64_MAX
                                                                          : static_cast<int64_t>(max_bytes));
}

}  // namespace

Result<std::vector<Message>> Store::ReadLog(const std::string& team, int64_t* cursor, size_t max, size_t max_bytes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(SizedLogPage("team = $1 AND seq > $4", ""),
                                         {team, Num(static_cast<int64_t>(max)), ByteBound(max_bytes), Num(*cursor)}));
  return LoggedMessages(r, team, cursor);
}

Result<std::vector<Message>> Store::TailLog(const std::string& team, size_t n, int64_t* cursor, size_t max_bytes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(SizedLogPage("team = $1", " DESC"),
                                         {team, Num(static_cast<int64_t>(n)), ByteBound(max_bytes)}));
  if (cursor != nullptr) *cursor = 0;
  return LoggedMessages(r, team, cursor);
}

// -------------------------------------------------------------- requests

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

Status Store::CreateRequest(const std::string& team, const ProtocolRequest& r) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", r.id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  auto ins = c->Exec("INSERT INTO mates_requests (team, id, doc, created_at) VALUES ($1, $2, $3, $4) "
                     "ON CONFLICT DO NOTHING",
                     {team, r.id, DumpJson(ProtocolRequestToJson(r)), Seconds(r.created_at)});
  if (!ins.ok()) return NoTeamIfForeignKey(ins.status(), team);
  if (ins->affected() == 0) return Status::AlreadyExists("request " + r.id + " exists already");
  return Status::Ok();
}

Result<ProtocolRequest> Store::GetRequest(const std::string& team, const std::string& id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc + " FROM mates_requests WHERE team = $1 AND id = $2",
                                         {team, id}));
  if (r.size() == 0) return Status::NotFound("no request '" + id + "'");
  return RequestOf(r, 0, team);
}

Result<ProtocolRequest> Store::ResolveRequest(const std::string& team, const std::string& id, bool approve,
                                              const std::string& response) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
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

Result<std::vector<ProtocolRequest>> Store::ListRequests(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
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
