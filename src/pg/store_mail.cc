// See store.h: mailboxes.
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

Status MailRows::Append(const std::string& team, const std::string& member, const Message& m) {
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return store_.Fenced(*c, team, m.sender, [&] { return AppendOn(*c, team, member, m); });
}

Status MailRows::AppendOn(Connection& c, const std::string& team, const std::string& member, const Message& m) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (m.id.empty()) return Status::InvalidArgument("a message needs an id");
  for (const std::string* field : {&m.content, &m.summary, &m.feedback}) {
    if (field->size() > kMaxMessageBytes) {
      return Status::InvalidArgument("a message may be " + std::to_string(kMaxMessageBytes) + " bytes at most");
    }
  }
  // The NOTIFY goes out with the row's commit, and only for a new row.
  auto r = c.Exec(
      "WITH ins AS (INSERT INTO mates_inbox (team, member, msg_id, line) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (team, member, msg_id) DO NOTHING RETURNING seq) "
      "SELECT pg_notify($5, '') FROM ins",
      {team, member, m.id, LineOf(m), ChannelOf(InboxKey(team, member))});
  if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
  return Status::Ok();
}

Result<std::vector<Message>> MailRows::Peek(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
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

Result<size_t> MailRows::PendingCount(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT count(*) FROM mates_inbox WHERE team = $1 AND member = $2",
                                         {team, member}));
  return static_cast<size_t>(r.integer(0, 0));
}

Result<std::vector<std::pair<std::string, std::vector<Message>>>> MailRows::PendingByMember(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
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

MailRows::Batch::~Batch() {
  // Not committed: the rows stay, for the next drain.
  if (lease && (*lease)->ok()) (void)(*lease)->ExecScript("ROLLBACK");
}

Result<MailRows::Batch> MailRows::BeginDrain(const std::string& team, const std::string& member,
                                       const AlreadyDelivered& already_delivered) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  Batch b;
  b.team = team;
  b.member = member;
  // The transaction stays open while its reader journals what it took
  // (Commit): a wait on the client that a loaded machine stretches past the
  // session's 5 s bound on idling in a transaction (connection.cc), which
  // ended drains under ThreadSanitizer. Here the bound is 60 s: a host
  // frozen mid-drain holds its member's inbox no longer than that.
  // These go with the lock's statement, in its round trip.
  c->SendWithNext("BEGIN");
  c->SendWithNext("SET LOCAL idle_in_transaction_session_timeout = 60000");
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

Status MailRows::Commit(Batch& batch) {
  if (!batch.lease) return Status::FailedPrecondition("this drain was committed already");
  Connection& conn = **batch.lease;
  Status s = Status::Ok();
  // What a host takes from an inbox is its agent's while its lease is:
  // checked with the commit, which is refused (the rows stay, for the next
  // holder) if the lease went meanwhile. Not held from the drain's start:
  // a drain waits on its reader, and the lease's row held that long kept
  // its renewal and any new holder waiting. The check, the rows taken and
  // the commit: one round trip.
  store_.Fence(conn, batch.team, batch.member);
  if (!batch.rows.empty()) {
    conn.SendWithNext("DELETE FROM mates_inbox WHERE seq = ANY($1::bigint[])", {ArrayText(batch.rows)});
  }
  s = conn.Exec("COMMIT").status();
  if (!s.ok() && conn.ok() && !conn.idle()) (void)conn.ExecScript("ROLLBACK");
  batch.lease.reset();
  return s;
}

Result<std::vector<Message>> MailRows::Drain(const std::string& team, const std::string& member,
                                          const AlreadyDelivered& already_delivered) {
  MATES_ASSIGN_OR_RETURN(Batch b, BeginDrain(team, member, already_delivered));
  MATES_RETURN_IF_ERROR(Commit(b));
  return std::move(b.messages);
}

// ----------------------------------------------------------- message log

}  // namespace mates::pg
