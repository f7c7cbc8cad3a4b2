// FileLock: an exclusive lock on one byte of a lock file, shared by threads
// and processes alike, released by the kernel when its holder dies.
//
// The seeds used an O_EXCL lock *file*: when its holder died the file stayed
// and every later writer waited 50 x 50 ms, then wrote without the lock. Here
// the lock is an open-file-description lock (fcntl F_OFD_SETLKW): every
// acquisition opens the file anew, so two threads of one process conflict
// just as two processes do, and closing the descriptor (or dying) releases
// it. The seeds' lock-file names stay. Not safe on NFS without lockd.
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

  // Blocks until the lock is held. The lock file is created if missing.
  static Result<FileLock> Acquire(const fs::path& lock_path, Range range = Range::kWhole);
  // Returns Conflict at once if another holder has it.
  static Result<FileLock> TryAcquire(const fs::path& lock_path, Range range = Range::kWhole);

  FileLock(FileLock&& o) noexcept : fd_(std::move(o.fd_)), sync_(o.sync_) { o.sync_ = nullptr; }
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Closing the descriptor releases the lock.
  ~FileLock() { Release(); }

 private:
  FileLock(ScopedFd fd, void* sync) : fd_(std::move(fd)), sync_(sync) {}
  static Result<FileLock> Lock(const fs::path& lock_path, Range range, bool wait);
  void Release();

  ScopedFd fd_;
  // ThreadSanitizer cannot see that a kernel lock orders its holders; this
  // address stands for the lock in acquire/release annotations (unused in
  // normal builds).
  void* sync_ = nullptr;
};

}  // namespace mates
