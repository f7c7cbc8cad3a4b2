// Status and Result<T>: how every fallible operation in mates reports failure.
//
// Written by hand rather than taken from a library because the codes are part
// of the CLI contract (DESIGN §7: bad input exits 2, a failed operation 1) and
// a dozen lines suffice; exceptions stay at the boundaries where input enters.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace mates {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // bad input: exit code 2
  kNotFound,            // unknown team, member, task
  kAlreadyExists,       // team or member exists already
  kFailedPrecondition,  // state forbids it: blocked task, cycle, role rule
  kConflict,            // lost a race: claim taken by another
  kTimeout,             // waited and nothing came
  kCancelled,           // stopped on request
  kUnavailable,         // transient: network, server overloaded
  kIOError,             // the file system said no
  kCorrupt,             // state on disk cannot be read: exit 1 (the input was fine)
  kInternal,            // cannot happen
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  // An IOError naming the path and errno's text.
  static Status FromErrno(const std::string& what, int err);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The same status with `context: ` put before the message.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Exit code of the CLI for a status (DESIGN §7).
int ExitCodeFor(const Status& s);

// Aborts: the value of a failed Result was read.
[[noreturn]] void DieOnMissingValue(const Status& s);

// Either a value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Reading the value of a failed Result is a bug in the caller: it stops
  // the program there, with the status, rather than as undefined behaviour.
  T& value() & { return Checked(); }
  const T& value() const& { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  T& operator*() & { return Checked(); }
  const T& operator*() const& { return Checked(); }
  T&& operator*() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &Checked(); }

 private:
  T& Checked() {
    if (!value_.has_value()) DieOnMissingValue(status_);
    return *value_;
  }
  const T& Checked() const {
    if (!value_.has_value()) DieOnMissingValue(status_);
    return *value_;
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace mates

#define MATES_CONCAT_INNER(a, b) a##b
#define MATES_CONCAT(a, b) MATES_CONCAT_INNER(a, b)

#define MATES_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::mates::Status _mates_status = (expr);    \
    if (!_mates_status.ok()) return _mates_status; \
  } while (0)

#define MATES_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// MATES_ASSIGN_OR_RETURN(auto x, Foo()); returns Foo()'s status on failure.
#define MATES_ASSIGN_OR_RETURN(lhs, expr) \
  MATES_ASSIGN_OR_RETURN_IMPL(MATES_CONCAT(_mates_result_, __LINE__), lhs, expr)
