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
// Each acquisition checks that the descriptor still names the file at
// `lock_path` (a team deleted and created again gets a new file).
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

  struct Slot;  // the per-process descriptor of one (file, byte)

  FileLock(FileLock&& o) noexcept : slot_(o.slot_), start_(o.start_) { o.slot_ = nullptr; }
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock() { Release(); }

 private:
  FileLock(Slot* slot, off_t start) : slot_(slot), start_(start) {}
  static Result<FileLock> Lock(const fs::path& lock_path, Range range, Mode mode, bool wait);
  void Release();

  Slot* slot_ = nullptr;  // owned by the process-wide table, never freed
  off_t start_ = 0;
};

}  // namespace mates
