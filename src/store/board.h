// Board: a team's task board, one JSON file per task in .tasks/<team>/
// (DESIGN §2, §4), shared by threads and processes under `.tasks/<team>/.lock`.
//
// Every operation is a read-modify-write under the board lock, so a claim is
// an atomic compare-and-set: of N racing claimers in any processes, exactly
// one wins.
//
// Claiming does not read every task file each time:
// - A warm Board keeps the tasks in memory and, once it holds the lock,
//   drains its own inotify watch on the folder and re-reads only the files
//   named there (a rename's event is queued before rename() returns, so what
//   another process wrote before releasing the lock is always seen).
// - A cold Board (a new `mates tasks claim` process, an inotify overflow, a
//   file system without inotify) reads `.index`: one short line per task
//   write, "id inode status owner blockers", appended under the lock and
//   compacted when it doubles. It checks each line against the inode that
//   readdir() reports for the task file and re-reads only the files that
//   were replaced behind the index's back (by a foreign writer). Subjects and
//   descriptions are read lazily, for the tasks an operation returns.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/status.h"
#include "store/task.h"

namespace mates {

namespace fs = std::filesystem;

class Board {
 public:
  // Which version of a task file an entry came from. An atomic replace
  // changes the inode; an in-place edit (against the contract, but it
  // happens) changes size or mtime.
  struct FileStamp {
    ino_t ino = 0;
    off_t size = -1;  // -1: known from the index only
    int64_t mtime_ns = -1;
    bool operator==(const FileStamp&) const = default;
  };

  // The folder is created if missing.
  explicit Board(fs::path dir);
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  // Ids from 1, never reused (`.highwatermark`). Blockers must exist.
  Result<Task> Create(const TaskDraft& draft);
  Result<Task> Get(int64_t id);
  // Sorted by id; deleted tasks only when asked.
  Result<std::vector<Task>> List(bool include_deleted = false);
  // DESIGN §4 rules: dependencies kept consistent on both sides, cycles and
  // unknown ids refused, another's task refused unless the caller is lead.
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller);
  // Compare-and-set: pending, unowned (or already `owner`'s) and unblocked
  // -> in_progress owned by `owner`. Conflict if someone else got it first.
  Result<Task> Claim(int64_t id, const std::string& owner);
  // Claims the lowest claimable id; nullopt when nothing is claimable.
  Result<std::optional<Task>> ClaimNext(const std::string& owner);

  const fs::path& dir() const { return dir_; }

 private:
  struct Entry {
    Task task;  // only id, status, owner and blocked_by unless `full`
    FileStamp stamp;
    bool full = false;
  };

  Status RefreshLocked();
  Status ColdLoadLocked();
  // Reads the task file if it is not the one cached (or `force`).
  void ReloadLocked(int64_t id, bool force = false);
  // The complete task, reading its file if only the index was known.
  Result<Task> FullTaskLocked(int64_t id);
  Status WriteLocked(Task& task);
  Status AppendIndexLocked(const Entry& e);
  Status CompactIndexLocked();
  void PutLocked(Task task, FileStamp stamp, bool full);
  void EraseLocked(int64_t id);
  bool ClaimableLocked(const Task& t) const;
  // "" when every blocker is completed (or deleted), else the reason.
  std::string BlockedReasonLocked(const Task& t) const;
  // Whether `target` is among `from`'s blockers, transitively.
  bool DependsOnLocked(int64_t from, int64_t target) const;
  Result<Task> ClaimLocked(int64_t id, const std::string& owner);
  int64_t NextIdLocked();

  // Constant after construction.
  const fs::path dir_;
  const fs::path lock_path_;
  const fs::path hwm_path_;
  const fs::path index_path_;

  // State below is protected by mu_ (and, on disk, by the board lock).
  std::mutex mu_;
  ScopedFd inotify_;
  bool loaded_ = false;
  std::map<int64_t, Entry> tasks_;
  std::set<int64_t> open_;  // pending and unowned: the claim candidates
  int64_t max_file_id_ = 0;  // highest id seen on disk, corrupt files included
  size_t index_lines_ = 0;   // lines in .index, to know when to compact
  std::set<std::pair<int64_t, ino_t>> reported_corrupt_;
};

// The file name of task `id` ("3.json"), and the reverse (0 if not a task).
std::string TaskFileName(int64_t id);
int64_t TaskIdFromFileName(std::string_view name);

}  // namespace mates
