#include "core/file_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define MATES_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define MATES_TSAN_RELEASE(p) __tsan_release(p)
#else
#define MATES_TSAN_ACQUIRE(p) (void)(p)
#define MATES_TSAN_RELEASE(p) (void)(p)
#endif

namespace mates {
namespace {
// One byte per (file, range) hash bucket: what TSan synchronises on.
char g_lock_sync[4096];
}  // namespace

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    Release();
    fd_ = std::move(o.fd_);
    sync_ = o.sync_;
    o.sync_ = nullptr;
  }
  return *this;
}

void FileLock::Release() {
  if (fd_.valid() && sync_ != nullptr) MATES_TSAN_RELEASE(sync_);
  fd_.reset();
  sync_ = nullptr;
}

Result<FileLock> FileLock::Acquire(const fs::path& lock_path, Range range) {
  return Lock(lock_path, range, /*wait=*/true);
}

Result<FileLock> FileLock::TryAcquire(const fs::path& lock_path, Range range) {
  return Lock(lock_path, range, /*wait=*/false);
}

Result<FileLock> FileLock::Lock(const fs::path& lock_path, Range range, bool wait) {
  ScopedFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound("folder of " + lock_path.string() + " is gone");
    return Status::FromErrno("open lock " + lock_path.string(), errno);
  }
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(range);
  fl.l_len = 1;
  fl.l_pid = 0;  // required by OFD locks
  for (;;) {
    if (::fcntl(fd.get(), wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0) break;
    if (errno == EINTR) continue;
    if (!wait && (errno == EAGAIN || errno == EACCES)) {
      return Status::Conflict(lock_path.string() + " is held by another");
    }
    return Status::FromErrno("lock " + lock_path.string(), errno);
  }
  size_t bucket = std::hash<std::string>{}(lock_path.string() + "#" +
                                           std::to_string(static_cast<int>(range)));
  void* sync = &g_lock_sync[bucket % sizeof g_lock_sync];
  MATES_TSAN_ACQUIRE(sync);
  return FileLock(std::move(fd), sync);
}

}  // namespace mates
