// FileLock: an exclusive lock on one byte of a lock file, shared by threads
// and processes alike, released by the kernel when its holder dies.
//
// The seeds used an O_EXCL lock *file*: when its holder died the file stayed
// and every later writer waited 50 x 50 ms, then wrote without the lock. Here
// the lock is an open-file-description lock (fcntl F_OFD_SETLKW), which the
// kernel drops when its holder dies. The seeds' lock-file names stay. Not
// safe on NFS without lockd.
//
// A process keeps one descriptor per (lock file, byte) and lets one thread
// at a time use it (a semaphore, so that a lock taken on one thread may be
// released on another); opening and closing the file on every acquisition
// cost an inotify event per close that woke every watcher of the folder.
// Each acquisition checks, after the lock is granted, that the path still
// names the file it locked (DESIGN §10): a lock file deleted or replaced
// while a waiter blocked on it would otherwise let that waiter in beside
// whoever locks the new file. It then retries on the new file.
//
// What a check after the fact cannot close: a holder that got in *before*
// its lock file was deleted still holds the old file while a newcomer
// creates and locks a new one. A folder cannot be deleted while it holds
// files, nor replaced by rename, so the task board, where two holders would
// double-claim tasks, locks its folder instead (AcquireFolder, flock(2) on
// the directory): deleting or replacing `.tasks/<team>/.lock` changes
// nothing there. The other locks guard appends and replaces that stay
// whole under a second holder (see mailbox.h for how an append survives a
// drain that should have waited).
#pragma once

#include <filesystem>

#include "core/files.h"
#include "core/status.h"

namespace mates {

class FileLock {
 public:
  // Which byte of the lock file is locked: different bytes are independent
  // locks on the same file (an inbox uses one for appends, one for drains).
  enum class Range : int { kWhole = 0, kAppend = 0, kDrain = 1 };

  // Exclusive excludes everyone; shared holders exclude only exclusive ones.
  enum class Mode { kExclusive, kShared };

  // Blocks until the lock is held. The lock file is created if missing.
  static Result<FileLock> Acquire(const fs::path& lock_path, Range range = Range::kWhole,
                                  Mode mode = Mode::kExclusive);
  // Returns Conflict at once if another holder has it.
  static Result<FileLock> TryAcquire(const fs::path& lock_path, Range range = Range::kWhole);
  // An exclusive lock on the folder `dir` itself (flock), which must exist.
  static Result<FileLock> AcquireFolder(const fs::path& dir);
  // Whether anyone (this process included) holds `range` of `lock_path`,
  // without taking it or creating the file (a missing file: nobody).
  static bool IsHeld(const fs::path& lock_path, Range range = Range::kWhole);

  struct Slot;  // the per-process descriptor of one (file, byte)

  FileLock(FileLock&& o) noexcept : slot_(o.slot_), start_(o.start_), folder_(o.folder_) {
    o.slot_ = nullptr;
  }
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() { Release(); }

 private:
  FileLock(Slot* slot, off_t start, bool folder) : slot_(slot), start_(start), folder_(folder) {}
  static Result<FileLock> Lock(const fs::path& lock_path, Range range, Mode mode, bool wait);
  void Release();

  Slot* slot_ = nullptr;  // owned by the process-wide table, never freed
  off_t start_ = 0;
  bool folder_ = false;
};

}  // namespace mates
