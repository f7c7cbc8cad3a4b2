// Mailbox: one member's inbox, `<member>_inbox.jsonl` (DESIGN §2).
//
// Appending is one O_APPEND write() of one whole line under a *shared* lock
// on byte 0 of `<member>_inbox.lock`: appenders do not exclude each other (the
// kernel serialises whole-line O_APPEND writes to one file), only the drain's
// rename, which takes byte 0 exclusively. Draining never loses a message,
// whatever instant a reader dies at (the seeds' read-then-truncate lost
// everything read but not yet acted on):
//   1. under byte 1 of the lock (one drainer at a time), the inbox is renamed
//      to `<member>_inbox.draining` (under byte 0, so no append is cut);
//   2. the reader reads it and acts on the messages;
//   3. Commit() unlinks it.
// A reader killed before 3 leaves the draining file behind; the next drain
// re-delivers it first. Consumers that keep a durable record (an agent's
// journal, a sink file) pass `already_delivered` so that re-delivered ids are
// suppressed; ids repeated inside one drain are suppressed always.
//
// A torn or unparsable line is moved to `<member>_inbox.quarantine` with a
// warning and never blocks the lines after it. An appender starts its line
// on a fresh one if the file does not end in '\n' (a writer died mid-line);
// with concurrent appenders that check can race, so a line written at the
// very instant another writer dies inside write() may be quarantined with
// the torn one.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/file_lock.h"
#include "core/status.h"
#include "store/message.h"

namespace mates {

namespace fs = std::filesystem;

class Watcher;

class Mailbox {
 public:
  using AlreadyDelivered = std::function<bool(const std::string& id)>;

  // An uncommitted drain: holds the drain lock until committed or dropped.
  // Dropped without Commit(), its messages are delivered again next time.
  struct Batch {
    std::vector<Message> messages;
    bool redelivery = false;  // left behind by a reader that died
    std::optional<FileLock> drain_lock;
    fs::path draining_path;
  };

  // `team_dir` must exist; `member` must be a valid name. `local`: whose
  // subscribers an Append wakes at once (this process's watcher); without
  // one they hear it from the kernel.
  Mailbox(fs::path team_dir, std::string member, Watcher* local = nullptr);

  const fs::path& inbox_path() const { return inbox_; }
  const std::string& member() const { return member_; }

  // Appends one message (one write of one line under the lock) and wakes
  // this process's waiters on the inbox (at once with `local`).
  Status Append(const Message& m) const;

  // Every pending message (in-flight ones first) without consuming any.
  Result<std::vector<Message>> Peek() const;
  // Cheap check (two stats, no lock): false only if there is certainly
  // nothing to drain.
  bool MayHavePending() const;
  // Number of pending messages, without parsing them all.
  Result<size_t> PendingCount() const;

  // Step 1-2 of a drain. Blocks while another reader is draining.
  Result<Batch> BeginDrain(const AlreadyDelivered& already_delivered = {}) const;
  // Step 3: the messages of `batch` are gone for good.
  Status Commit(Batch& batch) const;
  // BeginDrain + Commit, including anything a dead reader left behind:
  // at-least-once for consumers without a durable record.
  Result<std::vector<Message>> Drain(const AlreadyDelivered& already_delivered = {}) const;

 private:
  // Parses `data`, quarantining bad lines; appends to `out` skipping ids in
  // `seen` or reported by `already_delivered`.
  void ParseLines(const std::string& data, const fs::path& source, bool quarantine,
                  const AlreadyDelivered& already_delivered,
                  std::unordered_set<std::string>* seen,
                  std::vector<Message>* out) const;
  void Quarantine(const std::string& line, const fs::path& source, const Status& why) const;

  // Constant after construction.
  fs::path dir_;
  std::string member_;
  Watcher* local_;
  fs::path inbox_;
  fs::path lock_;
  fs::path draining_;
  fs::path quarantine_;
};

}  // namespace mates
