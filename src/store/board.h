// Board: a team's task board, one JSON file per task in .tasks/<team>/
// (DESIGN §2, §4), shared by threads and processes under the board lock.
//
// Every operation is a read-modify-write under the board lock, so a claim is
// an atomic compare-and-set: of N racing claimers in any processes, exactly
// one wins. The board lock is taken on the folder itself (flock), not on the
// `.lock` file the layout keeps for the seeds' tools: a folder that holds
// files cannot be deleted or replaced, so no hand in the folder can let a
// second claimer in (core/file_lock.h).
//
// Task files are state from outside like any input (DESIGN §10): a file
// that does not parse, holds another id, or was cut short is skipped by
// every operation (reported once per version) and never stops the board.
//
// Claiming does not read every task file each time. Every write appends one
// short line to `.index` ("id inode status owner blockers"; compacted when it
// doubles), under the lock, right after replacing the task file:
// - a cold Board (a new `mates tasks claim` process) reads `.index`, checks
//   each task's line against the inode readdir() reports for its file, and
//   reads only the files replaced behind the index's back (foreign writers);
// - a warm Board (a teammate's) reads only the lines appended since its last
//   look, and stat()s only the files its inotify watch names that those
//   lines do not explain.
// Subjects and descriptions are read lazily, for the tasks an operation
// returns or writes. Task files are replaced by exchange with `.spares/task`
// (ReplaceFileViaSpare): atomic for readers, no inode allocated, no block
// freed.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/status.h"
#include "store/task.h"
#include "store/task_rules.h"

namespace mates {

namespace fs = std::filesystem;

class Watcher;

class Board {
 public:
  struct Options {
    // Keep an inotify watch to refresh cheaply between operations. A
    // one-shot process (the CLI) has no "between" and skips it.
    bool watch = true;
    // Whose subscribers a write here wakes at once (this process's
    // watcher, Env::watcher); without one they hear it from the kernel.
    Watcher* local = nullptr;
  };

  // Which version of a task file an entry came from. A replace changes the
  // inode and the ctime (an exchange brings back inodes, never a ctime); an
  // in-place edit (against the contract, but it happens) changes size or mtime.
  struct FileStamp {
    ino_t ino = 0;
    off_t size = -1;  // -1: known from the index only
    int64_t mtime_ns = -1;
    int64_t ctime_ns = -1;
    bool operator==(const FileStamp&) const = default;
  };

  // The folder is created if missing.
  explicit Board(fs::path dir) : Board(std::move(dir), Options{}) {}
  Board(fs::path dir, Options options);
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  // Ids from 1, never reused (`.highwatermark`). Blockers must exist.
  Result<Task> Create(const TaskDraft& draft);
  // Writes `t` as it is, id and all (a board exported from another store:
  // `mates store export`). AlreadyExists if the id is taken; the id counter
  // moves past it. Its links are the caller's to keep consistent.
  Status Import(const Task& t);
  Result<Task> Get(int64_t id);
  // Sorted by id; deleted tasks only when asked.
  Result<std::vector<Task>> List(bool include_deleted = false);
  // DESIGN §4 rules: dependencies kept consistent on both sides, cycles and
  // unknown ids refused, another's task refused unless the caller is lead.
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller);
  // Compare-and-set: pending, unowned (or already `owner`'s) and unblocked
  // -> in_progress owned by `owner`. Conflict if someone else got it first.
  Result<Task> Claim(int64_t id, const std::string& owner);
  // Claims a task for `owner`: first the lowest pending, unblocked task
  // already assigned to it (the lead may direct work), else the lowest
  // claimable unowned one; nullopt when there is none.
  // `outlook`, if given, says what is left to claim after this one, for
  // waking just as many idle claimers as there is work (ClaimLine).
  using ClaimOutlook = mates::ClaimOutlook;
  Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook = nullptr);

  // The id ClaimNext(owner) would claim now, without claiming it.
  Result<std::optional<int64_t>> NextClaimable(const std::string& owner);

  // Who takes claimable tasks the moment a change makes them so: this
  // process's idle claimers (ClaimLine). After every write that may leave a
  // task claimable (Create, Update, ClaimNext), still under the board lock,
  // the board reserves as many idle claimers as there is work for, claims
  // one task for each, and hands it over: a level of tasks is claimed in
  // the lock hold of the completion that unblocked it, instead of by a
  // chain of claimers each woken, each taking the lock in turn. Both calls
  // come with the board lock held (a Claimers may take its own lock inside
  // it, never the other way round).
  class Claimers {
   public:
    virtual ~Claimers() = default;
    // Reserves up to `unowned` idle claimers, and every idle one named in
    // `assigned` (it has a claimable task assigned); their names, the
    // assigned first.
    virtual std::vector<std::string> Reserve(int64_t unowned, const std::vector<std::string>& assigned) = 0;
    // Ends `name`'s reservation: `task` claimed for it, or nothing.
    // `assigned`: the task was assigned to `name` before it was claimed
    // (given back unworked, it stays assigned to `name`).
    virtual void Hand(const std::string& name, std::optional<Task> task, bool assigned) = 0;
  };
  // Held weakly; one per board (the last set wins).
  void SetClaimers(std::weak_ptr<Claimers> claimers);

  const fs::path& dir() const { return dir_; }

 private:
  // ClaimNext's choice, confirmed from its file; the board lock held.
  std::optional<int64_t> NextClaimableLocked(const std::string& owner);
  // Claims for the idle claimers what is claimable now (Claimers).
  void HandOutLocked();
  struct Entry {
    bool present = false;
    bool full = false;  // else only id, status, owner and blocked_by are known
    Task task;
    FileStamp stamp;
  };

  Status RefreshLocked();
  Status ColdLoadLocked();
  // Applies the index lines appended since `index_offset_`, adding their
  // ids to `explained`; false if the index was replaced (compacted) and a
  // cold load is needed.
  bool ReadIndexTailLocked(std::set<int64_t>* explained);
  // index_fd_, (re)opened if the index file was replaced; `st` (if given)
  // is then the index file's.
  Status OpenIndexLocked(struct stat* st = nullptr);
  // Reads the task file if it is not the version cached (or `force`).
  void ReloadLocked(int64_t id, bool force = false);
  // The complete task, reading its file if only the index was known.
  Result<Task> FullTaskLocked(int64_t id);
  // Sets updated_at to now unless `touch` is false (an import keeps its own).
  Status WriteLocked(Task& task, bool touch = true);
  Status AppendIndexLocked(const Entry& e);
  Status CompactIndexLocked();
  void PutLocked(Task task, FileStamp stamp, bool full);
  void EraseLocked(int64_t id);
  Entry* FindLocked(int64_t id);
  bool ClaimableLocked(const Task& t) const;
  // Puts `id` in or out of the ready sets by what the board holds now.
  void ReadyLocked(int64_t id);
  // Re-reads the readiness of the tasks `id` blocks.
  void DependentsReadyLocked(int64_t id);
  void LinkLocked(int64_t id, const std::vector<int64_t>& blocked_by);
  void UnlinkLocked(int64_t id, const std::vector<int64_t>& blocked_by);
  // Whether a blocker is not completed (or deleted) or not there.
  bool BlockedLocked(const Task& t) const;
  void OutlookLocked(const std::string& owner, ClaimOutlook* outlook) const;
  // The board as the update rules see it (store/task_rules.h).
  TaskLookup LookupLocked() const;
  Result<Task> ClaimLocked(int64_t id, const std::string& owner);
  int64_t NextIdLocked();

  // Constant after construction.
  const fs::path dir_;
  const fs::path hwm_path_;
  const fs::path index_path_;
  const fs::path spare_path_;  // ReplaceFileViaSpare's spare, under the lock
  Watcher* const local_;

  Result<Task> UpdateLocked(int64_t id, const TaskPatch& patch, const Caller& caller, const Json& metadata_patch);
  // Updates (a task completed, say) go before the claims that wait: idle
  // teammates looking again at every change must not hold back the
  // completion the next level waits for.
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  int updates_waiting_ = 0;  // guarded by gate_mu_

  // State below is protected by mu_ (and, on disk, by the board lock).
  std::mutex mu_;
  ScopedFd inotify_;
  bool loaded_ = false;
  std::vector<Entry> tasks_;  // by id; [0] unused
  size_t live_ = 0;           // present entries
  // The claim candidates: pending tasks none of whose blockers is still
  // open, kept up to date as tasks change (PutLocked, EraseLocked), so a
  // look at what is claimable reads those few and not every task waiting
  // on others (a large graph is mostly the latter).
  std::set<int64_t> ready_open_;      // unowned: anyone's to claim
  std::set<int64_t> ready_assigned_;  // with an owner: its owner's to claim first
  // Blocker id -> the tasks that list it (a blocker not on the board yet
  // included), for knowing whose readiness a change touches.
  std::unordered_map<int64_t, std::vector<int64_t>> dependents_;
  int64_t max_file_id_ = 0;   // highest id seen on disk, corrupt files included
  ScopedFd index_fd_;         // .index, read-write, appending
  dev_t index_fd_dev_ = 0;    // the file index_fd_ was opened on
  ino_t index_fd_ino_ = 0;
  ino_t index_ino_ = 0;       // the .index file read so far, and how far
  off_t index_offset_ = 0;
  size_t index_lines_ = 0;  // lines in .index, to know when to compact
  std::set<std::pair<int64_t, ino_t>> reported_corrupt_;
  std::weak_ptr<Claimers> claimers_;
};

// The file name of task `id` ("3.json"), and the reverse (0 if not a task).
std::string TaskFileName(int64_t id);
int64_t TaskIdFromFileName(std::string_view name);

}  // namespace mates
