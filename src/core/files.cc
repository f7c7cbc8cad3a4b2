#include "core/files.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>

#include "core/write_all.h"

namespace mates {

ScopedFd& ScopedFd::operator=(ScopedFd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

void ScopedFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

namespace {

std::atomic<int>& FsyncSetting() {
  // -1 = not decided yet: read MATES_FSYNC once.
  static std::atomic<int> setting{-1};
  return setting;
}

Status FsyncDir(const fs::path& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("open " + dir.string(), errno);
  if (::fsync(fd.get()) != 0) return Status::FromErrno("fsync " + dir.string(), errno);
  return Status::Ok();
}

}  // namespace

bool FsyncEnabled() {
  int v = FsyncSetting().load(std::memory_order_relaxed);
  if (v < 0) {
    const char* env = std::getenv("MATES_FSYNC");
    v = (env != nullptr && std::string_view(env) == "1") ? 1 : 0;
    FsyncSetting().store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

void SetFsyncEnabled(bool on) { FsyncSetting().store(on ? 1 : 0, std::memory_order_relaxed); }

Result<std::string> ReadFile(const fs::path& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(path.string() + " does not exist");
    return Status::FromErrno("open " + path.string(), errno);
  }
  std::string out;
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("read " + path.string(), errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteAll(int fd, std::string_view data, const char* what) {
  const int err = WriteFully(fd, data);
  return err == 0 ? Status::Ok() : Status::FromErrno(std::string("write ") + what, err);
}

namespace {

// An open file description lock on the whole file, waited for: shared for
// readers of a replaced file, exclusive for the writer reusing it.
Status LockWhole(int fd, short type, const fs::path& path) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  while (::fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
    if (errno != EINTR) return Status::FromErrno("lock " + path.string(), errno);
  }
  return Status::Ok();
}

// The writer's exclusive lock on a spare, tried for up to ~200 ms. Polled:
// an OFD lock has no timed wait (F_OFD_SETLKW waits without bound, and the
// alarm that could cut it short is the whole process's), and a reader holds
// the lock for the microseconds of one read, so the first tries nearly
// always win; the rest is for a reader frozen mid-read.
bool LockSpare(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  for (int i = 0; i < 200; ++i) {
    if (::fcntl(fd, F_OFD_SETLK, &fl) == 0) return true;
    if (errno != EAGAIN && errno != EACCES && errno != EINTR) return false;
    ::usleep(i < 10 ? 50 : 1000);
  }
  return false;
}

Result<std::string> ReadPrefix(const fs::path& path, size_t max_bytes, bool shared_lock) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound(path.string() + " does not exist");
    return Status::FromErrno("open " + path.string(), errno);
  }
  if (shared_lock) MATES_RETURN_IF_ERROR(LockWhole(fd.get(), F_RDLCK, path));  // let go at close
  // Sized from the file, not from the bound: a 16 MiB bound must not cost
  // 16 MiB of zeroes for a document of 600 bytes. The size may change
  // while read: the buffer grows up to the bound.
  struct stat st {};
  size_t guess = ::fstat(fd.get(), &st) == 0 && st.st_size >= 0 ? static_cast<size_t>(st.st_size) + 1 : 4096;
  std::string out(std::min(max_bytes, std::max<size_t>(guess, 64)), '\0');
  size_t got = 0;
  while (got < max_bytes) {
    if (got == out.size()) out.resize(std::min(max_bytes, out.size() * 2));
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read " + path.string(), errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace

Result<std::string> ReadFilePrefix(const fs::path& path, size_t max_bytes) {
  return ReadPrefix(path, max_bytes, /*shared_lock=*/true);
}

Result<std::string> ReadReplacedFile(const fs::path& path, size_t max_bytes) {
  return ReadPrefix(path, max_bytes, /*shared_lock=*/true);
}

Result<std::string> ReadFileRange(const fs::path& path, uint64_t offset, size_t max_bytes) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("open " + path.string(), errno);
  std::string out(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    ssize_t n = ::pread(fd.get(), out.data() + got, max_bytes - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read " + path.string(), errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

Status WriteFileAtomic(const fs::path& path, std::string_view data, unsigned mode) {
  static std::atomic<uint64_t> seq{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(seq.fetch_add(1));
  // A new file, never through what is there already: in a folder someone
  // else can write (a teammate's worktree admin folder), a symlink put at
  // the spare's name would send the bytes elsewhere. What a dead process
  // of the same pid left is removed (the link itself, not its target).
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  ScopedFd fd(::open(tmp.c_str(), flags, static_cast<mode_t>(mode)));
  if (!fd.valid() && errno == EEXIST && ::unlink(tmp.c_str()) == 0) {
    fd.reset(::open(tmp.c_str(), flags, static_cast<mode_t>(mode)));
  }
  if (!fd.valid()) return Status::FromErrno("create " + tmp.string(), errno);
  Status s = WriteAll(fd.get(), data, tmp.c_str());
  if (s.ok() && FsyncEnabled() && ::fsync(fd.get()) != 0) {
    s = Status::FromErrno("fsync " + tmp.string(), errno);
  }
  fd.reset();
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FromErrno("rename " + tmp.string(), errno);
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (FsyncEnabled()) return FsyncDir(path.parent_path());
  return Status::Ok();
}

Status ReplaceFileViaSpare(const fs::path& path, std::string_view data, const fs::path& spare) {
  static std::atomic<bool> exchange_unsupported{false};
  if (exchange_unsupported.load(std::memory_order_relaxed)) return WriteFileAtomic(path, data);
  ScopedFd fd(::open(spare.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  // The spares' folder is made by the first write that needs it (never in
  // a folder that is gone: a team deleted under its writer stays deleted).
  if (!fd.valid() && errno == ENOENT && fs::is_directory(path.parent_path()) &&
      EnsureDir(spare.parent_path()).ok()) {
    fd.reset(::open(spare.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  }
  // No spare to be had (something else where the spares go: a file, a
  // folder we may not write): the document is written all the same.
  if (!fd.valid()) return WriteFileAtomic(path, data);
  // The spare is the previous version: wait for whoever still reads it
  // (ReadReplacedFile; a read takes microseconds). A reader stopped in the
  // middle must not stop the writers: after a while, a fresh file instead.
  if (!LockSpare(fd.get())) {
    fd.reset();
    return WriteFileAtomic(path, data);
  }
  // Overwrite, then cut to length: within the same blocks, nothing is freed.
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd.get(), data.data() + done, data.size() - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("write " + spare.string(), errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::ftruncate(fd.get(), static_cast<off_t>(data.size())) != 0) {
    return Status::FromErrno("truncate " + spare.string(), errno);
  }
  if (FsyncEnabled() && ::fsync(fd.get()) != 0) return Status::FromErrno("fsync " + spare.string(), errno);
  fd.reset();
  if (::renameat2(AT_FDCWD, spare.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0) {
    int err = errno;
    if (err == ENOENT) {
      // A new file: the spare becomes it (a new spare is made next time).
      if (::rename(spare.c_str(), path.c_str()) != 0) {
        return Status::FromErrno("rename " + spare.string(), errno);
      }
    } else if (err == EINVAL || err == ENOSYS || err == ENOTSUP) {
      exchange_unsupported.store(true, std::memory_order_relaxed);
      ::unlink(spare.c_str());
      return WriteFileAtomic(path, data);
    } else if (err == EXDEV) {
      // The spares' folder is on another file system (mounted there).
      return WriteFileAtomic(path, data);
    } else {
      return Status::FromErrno("exchange " + spare.string() + " with " + path.string(), err);
    }
  }
  if (FsyncEnabled()) return FsyncDir(path.parent_path());
  return Status::Ok();
}

fs::path SpareIn(const fs::path& folder, std::string_view name) {
  return folder / ".spares" / name;
}

Status TouchFile(const fs::path& path) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno("create " + path.string(), errno);
  return Status::Ok();
}

Status EnsureDir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError("create folder " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

Result<struct stat> StatPath(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound(path.string() + " does not exist");
    return Status::FromErrno("stat " + path.string(), errno);
  }
  return st;
}

}  // namespace mates
