// Small POSIX file helpers: whole-file read, atomic replace, full writes,
// an owning file descriptor.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mates {

namespace fs = std::filesystem;

// Owns a file descriptor; closes it on destruction.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& o) noexcept : fd_(o.release()) {}
  ScopedFd& operator=(ScopedFd&& o) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Whether atomic replaces also fsync the file and its folder (power-loss
// durability). Off by default (DESIGN §2); MATES_FSYNC=1 turns it on.
bool FsyncEnabled();
void SetFsyncEnabled(bool on);

// Reads a whole file. NotFound when it does not exist.
Result<std::string> ReadFile(const fs::path& path);
// Reads at most the first `max_bytes` of a file (a file that should be
// small, read without trusting that it is).
Result<std::string> ReadFilePrefix(const fs::path& path, size_t max_bytes);
// ReadFilePrefix for a file replaced through a spare (ReplaceFileViaSpare)
// and read without the writers' lock: the read holds a shared lock on the
// version it opened, so no writer overwrites that version while it is read.
// The document read is whole: the one at `path` when opened, or a later one.
Result<std::string> ReadReplacedFile(const fs::path& path, size_t max_bytes);
// Up to `max_bytes` of `path` from byte `offset` (less at its end; "" past
// it): what a reader that follows an appended file reads next.
Result<std::string> ReadFileRange(const fs::path& path, uint64_t offset, size_t max_bytes);

// Replaces `path` atomically: writes `<path>.tmp.<pid>.<seq>`, then renames
// it over. A reader sees the old or the new content, never a mix, whatever
// instant a writer dies at. Callers that need read-modify-write hold a lock.
Status WriteFileAtomic(const fs::path& path, std::string_view data, unsigned mode = 0644);

// Replaces `path` atomically like WriteFileAtomic, but through `spare`, a
// file on the same file system (SpareIn: in a folder of its own beside
// `path`, made when first needed): the data is written into the spare, which
// is then swapped with `path` (renameat2 RENAME_EXCHANGE), so the spare ends
// up holding the previous version for next time. No inode is allocated and
// no block freed, which on ext4 with `discard` is 10x cheaper than
// temp + rename. The caller must hold a lock that covers `spare`. The
// previous version becomes the spare, which the next write overwrites in
// place: a reader without the writers' lock that opened it before the
// exchange would read a mix, so such readers use ReadReplacedFile (the
// write waits, under an exclusive lock on the spare, for the readers of
// its previous version). Falls back to WriteFileAtomic where the file
// system cannot exchange.
Status ReplaceFileViaSpare(const fs::path& path, std::string_view data, const fs::path& spare);

// Where the spare named `name` of the files in `folder` is kept:
// `folder/.spares/name`. Out of the folder, so that writing a spare is no
// news to whoever watches the folder: closing a file written there queued
// an inotify event for every watch on it and woke the process's watcher
// thread before each exchange, which then woke it again (one replace
// took 40 µs longer, on the path from a task completed to its dependent's
// start). Only the exchange is news.
fs::path SpareIn(const fs::path& folder, std::string_view name);

// write() until everything is written (regular files may take short writes
// on a full disk or a signal).
Status WriteAll(int fd, std::string_view data, const char* what);

// Creates an empty file if there is none (never truncates).
Status TouchFile(const fs::path& path);

// mkdir -p; OK when it exists.
Status EnsureDir(const fs::path& dir);

// stat(); NotFound when absent.
Result<struct stat> StatPath(const fs::path& path);

}  // namespace mates
