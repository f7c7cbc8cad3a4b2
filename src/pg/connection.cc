#include "pg/connection.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/text.h"

namespace mates::pg {

namespace {

constexpr size_t kMaxUrlBytes = 4096;

// The first line of a libpq message, without "FATAL:  " and the like.
std::string FirstLine(const char* text) {
  std::string s = text == nullptr ? "" : text;
  if (size_t nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  for (const char* prefix : {"FATAL:  ", "ERROR:  "}) {
    if (size_t at = s.find(prefix); at != std::string::npos) s.erase(at, std::string_view(prefix).size());
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s.empty() ? "unknown error" : s;
}

bool Contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

Result<Target> ParseTarget(std::string_view url) {
  if (url.size() > kMaxUrlBytes) {
    return Status::InvalidArgument("the store URL is over " + std::to_string(kMaxUrlBytes) + " bytes");
  }
  if (url.rfind("postgres://", 0) != 0 && url.rfind("postgresql://", 0) != 0) {
    return Status::InvalidArgument("a PostgreSQL store URL starts with postgres:// or postgresql://");
  }
  if (url.find('\0') != std::string_view::npos) return Status::InvalidArgument("the store URL holds a NUL byte");
  Target t;
  t.uri = std::string(url);
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(t.uri.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? FirstLine(err) : "out of memory";
    PQfreemem(err);
    return Status::InvalidArgument("bad store URL: " + why);
  }
  std::string user, host, port, dbname;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    std::string_view k = o->keyword;
    if (k == "user") user = o->val;
    if (k == "host") host = o->val;
    if (k == "hostaddr" && host.empty()) host = o->val;
    if (k == "port") port = o->val;
    if (k == "dbname") dbname = o->val;
  }
  PQconninfoFree(opts);
  // libpq reads a port only when it connects: a bad one is the URL's fault.
  for (std::string_view rest = port; !rest.empty();) {
    size_t comma = rest.find(',');
    std::string_view p = rest.substr(0, comma);
    int v = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (ec != std::errc() || end != p.data() + p.size() || v < 1 || v > 65535) {
      return Status::InvalidArgument("bad store URL: the port '" + std::string(p) + "' is not a number from 1 to 65535");
    }
    rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
  }
  t.shown = "postgres://" + (user.empty() ? "" : user + "@") + (host.empty() ? "localhost" : host) +
            (port.empty() ? "" : ":" + port) + "/" + dbname;
  return t;
}

// ------------------------------------------------------------------ Rows

void Rows::Free::operator()(pg_result* r) const { PQclear(r); }

Rows::Rows(pg_result* r) : r_(r) {}

int Rows::size() const { return r_ ? PQntuples(r_.get()) : 0; }

bool Rows::null(int row, int col) const { return !r_ || PQgetisnull(r_.get(), row, col) != 0; }

std::string_view Rows::text(int row, int col) const {
  if (null(row, col)) return {};
  return {PQgetvalue(r_.get(), row, col), static_cast<size_t>(PQgetlength(r_.get(), row, col))};
}

int64_t Rows::integer(int row, int col) const {
  std::string_view s = text(row, col);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() ? v : 0;
}

int64_t Rows::affected() const {
  if (!r_) return 0;
  const char* n = PQcmdTuples(r_.get());
  int64_t v = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

// ------------------------------------------------------------ Connection

void Connection::Finish::operator()(pg_conn* c) const { PQfinish(c); }

Result<Connection> Connection::Open(const Target& target, double timeout_s) {
  // libpq's connect_timeout is whole seconds, 2 at least.
  std::string timeout = std::to_string(static_cast<int>(std::clamp(std::ceil(timeout_s), 2.0, 3600.0)));
  // Ours first: what the URL itself says wins (the last value of a
  // repeated keyword is kept, and the URL is expanded in its place).
  // A machine cut off (DESIGN §32) is noticed in seconds, not in TCP's
  // minutes: data unacknowledged for 5 s, or an idle connection whose
  // peer answers no probe for 9 s, ends the connection (Unavailable).
  const char* keys[] = {"connect_timeout",  "application_name",    "client_encoding",  "tcp_user_timeout",
                        "keepalives_idle",  "keepalives_interval", "keepalives_count", "dbname",
                        nullptr};
  const char* values[] = {timeout.c_str(), target.application.c_str(), "UTF8", "5000", "5", "2", "2",
                          target.uri.c_str(), nullptr};
  Connection c;
  c.target_ = target;
  c.conn_.reset(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
  if (!c.conn_) return Status::Unavailable("cannot connect to " + target.shown + ": out of memory");
  if (PQstatus(c.conn_.get()) != CONNECTION_OK) {
    std::string why = FirstLine(PQerrorMessage(c.conn_.get()));
    std::string msg = "cannot connect to " + target.shown + ": " + why;
    if (Contains(why, "authentication failed") || Contains(why, "no password supplied") ||
        Contains(why, "does not exist") || Contains(why, "not permitted to log in") ||
        Contains(why, "no pg_hba.conf entry")) {
      return Status::InvalidArgument(msg);
    }
    return Status::Unavailable(msg);
  }
  // Notices (e.g. "relation already exists, skipping") are not errors and
  // must not reach the terminal.
  PQsetNoticeProcessor(c.conn_.get(), [](void*, const char*) {}, nullptr);
  // A session left in a transaction for 5 s with nothing sent (a host
  // frozen in the middle of one) is ended by the server, and its locks
  // with it: no transaction of mates waits on its client that long. And
  // the server gives up on a peer cut off (a partition) as this side does:
  // what it sent unacknowledged for 5 s, or an idle session's two probes
  // unanswered (after 5 s, every 2 s), end the session, so that the locks
  // of a transaction allowed to wait longer (an inbox drain's, 60 s) go in
  // seconds, not at that bound nor in TCP's quarter of an hour. Set once
  // connected rather than as startup options, which a pooler in between
  // (PgBouncer) refuses; a server that refuses one goes without the rest.
  if (pg_result* r = PQexec(c.conn_.get(),
                            "SET idle_in_transaction_session_timeout = 5000; SET tcp_user_timeout = 5000; "
                            "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; "
                            "SET tcp_keepalives_count = 2")) {
    PQclear(r);
  }
  return c;
}

bool Connection::ok() const { return conn_ && PQstatus(conn_.get()) == CONNECTION_OK; }

bool Connection::HungUp() const {
  pollfd p{socket(), POLLIN, 0};
  return p.fd < 0 || ::poll(&p, 1, 0) != 0;
}

bool Connection::idle() const { return ok() && PQtransactionStatus(conn_.get()) == PQTRANS_IDLE; }

Status Connection::ErrorOf(pg_result* r, std::string_view) const {
  if (!ok()) {
    return Status::Unavailable("lost the connection to " + target_.shown + ": " +
                               FirstLine(PQerrorMessage(conn_.get())));
  }
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = r != nullptr ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string msg = "postgres: " + (primary != nullptr ? std::string(primary) : FirstLine(PQerrorMessage(conn_.get())));
  std::string_view code = state != nullptr ? state : "";
  // A fencing token found stale (mates_fence, schema.cc): the server's
  // sentence is the whole story.
  // (It names a holder another writer of the database may have set: one
  // line, no control character, bounded.)
  if (code == kStaleFencingToken && primary != nullptr) {
    std::string said = ForTerminal(primary, 500);
    std::replace(said.begin(), said.end(), '\n', '?');
    return Status::FailedPrecondition(said);
  }
  if (code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0 || code == "53300") return Status::Unavailable(msg);
  if (code == "40001" || code == "40P01" || code == "55P03") return Status::Conflict(msg);
  if (code == "42P01" || code == "42703" || code == "42883") return Status::FailedPrecondition(msg);
  if (code.rfind("22", 0) == 0 || code.rfind("23", 0) == 0) return Status::InvalidArgument(msg);
  return Status::Internal(msg);
}

namespace {

// The parameters' values as libpq takes them; InvalidArgument for a value
// holding a NUL byte (libpq takes a value up to its first NUL: one would
// cut it short without a word, and PostgreSQL's text holds none).
Result<std::vector<const char*>> ValuesOf(const std::vector<Param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) {
    if (p && p->find('\0') != std::string::npos) return Status::InvalidArgument("a value holds a NUL byte");
    values.push_back(p ? p->c_str() : nullptr);
  }
  return values;
}

}  // namespace

Result<Rows> Connection::Exec(std::string_view sql, const std::vector<Param>& params) {
  if (!conn_) return Status::Unavailable("not connected");
  if (!pending_.empty()) {
    Pending last{std::string(sql), params, nullptr};
    return RunPipeline(&last);
  }
  std::string text(sql);
  MATES_ASSIGN_OR_RETURN(std::vector<const char*> values, ValuesOf(params));
  pg_result* r = PQexecParams(conn_.get(), text.c_str(), static_cast<int>(params.size()), nullptr,
                              values.empty() ? nullptr : values.data(), nullptr, nullptr, 0);
  ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    Status s = ErrorOf(r, sql);
    PQclear(r);
    return s;
  }
  return Rows(r);
}

void Connection::SendWithNext(std::string sql, std::vector<Param> params, Failed failed) {
  pending_.push_back({std::move(sql), std::move(params), std::move(failed)});
}

bool Connection::DropUnsent() {
  const bool some = !pending_.empty();
  pending_.clear();
  return some;
}

Result<Rows> Connection::RunPipeline(const Pending* last) {
  std::vector<Pending> batch = std::move(pending_);
  pending_.clear();
  if (last != nullptr) batch.push_back(*last);
  pg_conn* pc = conn_.get();
  for (const Pending& p : batch) MATES_RETURN_IF_ERROR(ValuesOf(p.params).status());
  if (PQenterPipelineMode(pc) != 1) return ErrorOf(nullptr, batch.front().sql);
  bool sent = true;
  for (const Pending& p : batch) {
    auto values = ValuesOf(p.params);  // checked above
    sent = PQsendQueryParams(pc, p.sql.c_str(), static_cast<int>(p.params.size()), nullptr,
                             values->empty() ? nullptr : values->data(), nullptr, nullptr, 0) == 1;
    if (!sent) break;
  }
  if (sent) sent = PQpipelineSync(pc) == 1;
  Status first = Status::Ok();
  Rows rows;
  // Each statement's result (one after a failed one: "aborted") and the
  // NULL that ends it, then the Sync's; a connection lost on the way ends
  // the reading.
  for (size_t i = 0; sent && i < batch.size() && ok(); ++i) {
    pg_result* r = PQgetResult(pc);
    if (r == nullptr) break;
    const ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
      if (last != nullptr && i + 1 == batch.size()) {
        rows = Rows(r);
      } else {
        PQclear(r);
      }
    } else {
      if (st != PGRES_PIPELINE_ABORTED && first.ok()) {
        first = ErrorOf(r, batch[i].sql);
        if (batch[i].failed) {
          const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
          batch[i].failed(state != nullptr ? state : "", first);
        }
      }
      PQclear(r);
    }
    while (pg_result* extra = PQgetResult(pc)) PQclear(extra);
  }
  bool synced = false;
  if (sent && ok()) {
    if (pg_result* r = PQgetResult(pc)) {
      synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
      PQclear(r);
    }
  }
  // A pipeline not ended (the connection lost, or libpq out of step) is
  // not used again.
  if (!synced || PQexitPipelineMode(pc) != 1) {
    Status lost = ErrorOf(nullptr, batch.front().sql);
    conn_.reset();
    if (!first.ok()) return first;
    return lost.code() == StatusCode::kUnavailable ? lost : Status::Unavailable(lost.message());
  }
  if (!first.ok()) return first;
  return rows;
}

Status Connection::ExecScript(std::string_view sql) {
  if (!conn_) return Status::Unavailable("not connected");
  if (!pending_.empty()) MATES_RETURN_IF_ERROR(RunPipeline(nullptr).status());
  std::string text(sql);
  pg_result* r = PQexec(conn_.get(), text.c_str());
  ExecStatusType st = r != nullptr ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  Status s = (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) ? Status::Ok() : ErrorOf(r, sql);
  PQclear(r);
  return s;
}

int Connection::socket() const { return conn_ ? PQsocket(conn_.get()) : -1; }

Status Connection::ConsumeInput() {
  if (!conn_ || PQconsumeInput(conn_.get()) == 0) {
    return Status::Unavailable("lost the connection to " + target_.shown + ": " +
                               (conn_ ? FirstLine(PQerrorMessage(conn_.get())) : std::string("not connected")));
  }
  return Status::Ok();
}

std::vector<Connection::Notification> Connection::TakeNotifications() {
  std::vector<Notification> out;
  if (!conn_) return out;
  while (PGnotify* n = PQnotifies(conn_.get())) {
    out.push_back({n->relname != nullptr ? n->relname : "", n->extra != nullptr ? n->extra : ""});
    PQfreemem(n);
  }
  return out;
}

std::string QuoteLiteral(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

}  // namespace mates::pg
