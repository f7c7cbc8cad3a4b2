// A PostgreSQL connection through libpq (DESIGN §13): connecting with a
// bound on the time it takes, statements with text parameters, results as
// owned rows, and errors mapped onto Status with one clear message.
//
// libpq is used directly: libpqxx is 6.4 in bookworm (2019, C++17-era
// API, exceptions for every failure), and what mates needs of it is small:
// parameterised statements, LISTEN/NOTIFY on a socket it can poll, and the
// SQLSTATE of an error. No exception crosses this layer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct pg_conn;
struct pg_result;

namespace mates::pg {

// Where the store is: a libpq URI, checked, and how to name it in messages
// (its password hidden).
struct Target {
  std::string uri;    // what libpq gets
  std::string shown;  // "postgres://mates@127.0.0.1:5432/team" (no password)
  // The sessions' application_name: one store's are told apart by it
  // (pg_stat_activity), so that a host taking over from one frozen or cut
  // off can end them all (LivenessLocks::Hold).
  std::string application = "mates";
};

// "postgres://…" or "postgresql://…" (libpq's URI syntax, every parameter
// libpq knows). InvalidArgument naming what is wrong otherwise; at most
// 4 KiB.
Result<Target> ParseTarget(std::string_view url);

// The rows of one statement's result.
class Rows {
 public:
  Rows() = default;
  explicit Rows(pg_result* r);
  Rows(Rows&&) noexcept = default;
  Rows& operator=(Rows&&) noexcept = default;

  int size() const;
  bool null(int row, int col) const;
  std::string_view text(int row, int col) const;  // "" for NULL
  // The value as an integer; 0 if it is NULL or not one.
  int64_t integer(int row, int col) const;
  // Rows changed by an INSERT/UPDATE/DELETE.
  int64_t affected() const;

 private:
  struct Free {
    void operator()(pg_result* r) const;
  };
  std::unique_ptr<pg_result, Free> r_;
};

// The SQLSTATE mates_fence (schema.cc) raises for a stale fencing token.
inline constexpr std::string_view kStaleFencingToken = "MF001";

// A statement parameter: text, or SQL NULL.
using Param = std::optional<std::string>;

class Connection {
 public:
  // Connects within `timeout_s` (libpq's connect_timeout, at least 2 s).
  // Unavailable if the server cannot be reached; InvalidArgument if it
  // refuses who we are (wrong password, unknown role or database).
  static Result<Connection> Open(const Target& target, double timeout_s = 10);

  Connection() = default;
  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;

  // One statement, parameters as $1, $2, … (a value holding a NUL byte is
  // InvalidArgument, not cut short). Errors carry the server's
  // message: Unavailable when the connection is lost (the caller
  // reconnects), Conflict for a serialization failure or a deadlock,
  // FailedPrecondition for a missing table, InvalidArgument for bad input,
  // Internal otherwise.
  Result<Rows> Exec(std::string_view sql, const std::vector<Param>& params = {});
  // Several statements without parameters (schema scripts); what waits to
  // go with a next statement goes first.
  Status ExecScript(std::string_view sql);

  // A statement that goes with the next Exec, in its round trip (libpq's
  // pipeline mode) and before it: BEGIN, or a check the next statement
  // must not run without (a fencing token's). Outside a transaction both
  // run in one, the extended protocol's implicit transaction up to its
  // Sync. If it fails, what follows it is not run, `failed` (if given) is
  // told its error, and that error is the next Exec's. Each saves a round
  // trip: three of the four a fenced write took.
  // `failed` gets the error's SQLSTATE too.
  using Failed = std::function<void(std::string_view sqlstate, const Status& error)>;
  void SendWithNext(std::string sql, std::vector<Param> params = {}, Failed failed = nullptr);
  // Drops what waits for a next statement that did not come; true if
  // something did.
  bool DropUnsent();

  // False once the connection is known to be lost.
  bool ok() const;
  // Connected and in no transaction: fit to be used again by anyone.
  bool idle() const;
  // An idle connection the server has ended (it shut down or restarted,
  // or the session was terminated): its socket has something to read.
  // Not for a listening connection, whose notifications look the same.
  bool HungUp() const;
  const Target& target() const { return target_; }

  // LISTEN support: the socket to poll, reading what arrived, and the
  // notifications received so far (channel and payload).
  int socket() const;
  Status ConsumeInput();
  struct Notification {
    std::string channel;
    std::string payload;
  };
  std::vector<Notification> TakeNotifications();

 private:
  struct Finish {
    void operator()(pg_conn* c) const;
  };
  struct Pending {
    std::string sql;
    std::vector<Param> params;
    Failed failed;
  };
  Status ErrorOf(pg_result* r, std::string_view sql) const;
  // The statements waiting, then `last` if any, in one pipeline: the
  // first error is returned (a waiting statement's `failed` told), else
  // `last`'s rows.
  Result<Rows> RunPipeline(const Pending* last);
  std::unique_ptr<pg_conn, Finish> conn_;
  Target target_;
  std::vector<Pending> pending_;
};

// Runs `fn` (returning a Result) in one transaction on `c`: committed if
// it succeeded, rolled back otherwise (its error is what is returned).
// BEGIN goes with fn's first statement; with none, nothing is sent.
template <typename Fn>
auto InTransaction(Connection& c, Fn&& fn) -> decltype(fn()) {
  c.SendWithNext("BEGIN");
  auto r = fn();
  if (c.DropUnsent()) return r;  // no statement ran: nothing to end
  if (!r.ok()) {
    (void)c.ExecScript("ROLLBACK");
    return r;
  }
  if (Status end = c.ExecScript("COMMIT"); !end.ok()) {
    if (!c.idle()) (void)c.ExecScript("ROLLBACK");
    return end;
  }
  return r;
}

// A literal SQL identifier or string for scripts built in code: "'it''s'".
std::string QuoteLiteral(std::string_view s);

}  // namespace mates::pg
