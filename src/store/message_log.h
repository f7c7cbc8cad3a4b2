// MessageLog: .teams/<team>/messages.jsonl, the append-only record of every
// message sent in a team (DESIGN §3). Never drained; `mates log` reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/message.h"
#include "store/workspace.h"

namespace mates {

class Watcher;

class MessageLog {
 public:
  // `local`: whose subscribers an append wakes at once (this process's
  // watcher); without one they hear it from the kernel.
  MessageLog(const Workspace& ws, std::string team, Watcher* local = nullptr);

  // One write of one line under `messages.lock`.
  Status Append(const Message& m) const;
  // `first`, then `m`'s line, both under `messages.lock`: `first`'s
  // failure is the error, with nothing written; the write's own failure
  // after it is `*append_failure`.
  Status AppendAfter(const Message& m, Status* append_failure, const std::function<Status()>& first) const;
  // Messages from byte `offset` on; `*next_offset` is where to continue.
  // Bad lines are skipped with a warning; a line still being written (no
  // newline yet) is left for the next read. `max_bytes` (0 = no bound)
  // bounds what one call reads; the rest comes from `*next_offset`.
  Result<std::vector<Message>> ReadFrom(uint64_t offset, uint64_t* next_offset, size_t max_bytes = 0) const;

  // The last `n` messages (at most; from the log's last 256 KiB).
  Result<std::vector<Message>> Tail(size_t n) const;

  // The logged message with this id, if any (reads the whole log).
  Result<std::optional<Message>> Find(const std::string& id) const;

  const fs::path& path() const { return path_; }

 private:
  fs::path dir_;
  fs::path path_;
  fs::path lock_;
  Watcher* local_;
};

}  // namespace mates
