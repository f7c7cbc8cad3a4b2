// See store.h: the message log.
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

Status LogRows::Append(const std::string& team, const Message& m) { return AppendDelivered(team, {}, m); }

Status LogRows::AppendDelivered(const std::string& team, const std::vector<Message>& copies, const Message& m) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("message id", m.id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  // One at a time per team, the lock held to the commit: a number taken
  // becomes visible before the next is taken, so a reader that moved past
  // it (Read's cursor) cannot miss one that commits late.
  Status s = InTransaction(*c, [&]() -> Status {
    store_.Fence(*c, team, m.sender);
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {LogKey(team)}).status());
    for (const Message& copy : copies) MATES_RETURN_IF_ERROR(MailRows::AppendOn(*c, team, copy.recipient, copy));
    return c->Exec("WITH ins AS (INSERT INTO mates_messages (team, msg_id, line) VALUES ($1, $2, $3) "
                   "ON CONFLICT (team, msg_id) DO NOTHING RETURNING seq) "
                   "SELECT pg_notify($4, '') FROM ins",
                   {team, m.id, LineOf(m), ChannelOf(LogKey(team))})
        .status();
  });
  return NoTeamIfForeignKey(s, team);
}

Result<std::optional<Message>> LogRows::Find(const std::string& team, const std::string& id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("message id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
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

Result<std::vector<Message>> LogRows::Read(const std::string& team, int64_t* cursor, size_t max, size_t max_bytes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(SizedLogPage("team = $1 AND seq > $4", ""),
                                         {team, Num(static_cast<int64_t>(max)), ByteBound(max_bytes), Num(*cursor)}));
  return LoggedMessages(r, team, cursor);
}

Result<std::vector<Message>> LogRows::Tail(const std::string& team, size_t n, int64_t* cursor, size_t max_bytes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(SizedLogPage("team = $1", " DESC"),
                                         {team, Num(static_cast<int64_t>(n)), ByteBound(max_bytes)}));
  if (cursor != nullptr) *cursor = 0;
  return LoggedMessages(r, team, cursor);
}

// -------------------------------------------------------------- requests

}  // namespace mates::pg
