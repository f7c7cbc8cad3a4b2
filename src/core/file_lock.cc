#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <unordered_map>
#include <vector>

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

struct FileLock::Slot {
  // One user at a time: threads queue here before the kernel lock, which
  // only excludes other open file descriptions (other processes).
  std::binary_semaphore in_use{1};
  ScopedFd fd;  // guarded by in_use
  // The file `fd` was opened on (an open descriptor's never changes), so
  // whether it is still the one at the path costs one stat, not two.
  dev_t dev = 0;  // guarded by in_use
  ino_t ino = 0;  // guarded by in_use
  // ThreadSanitizer cannot see that the kernel lock orders its holders;
  // this byte stands for it in acquire/release annotations.
  char tsan_sync = 0;
  fs::path path;  // the lock file (or folder); constant once made
};

namespace {

std::mutex g_slots_mu;
// Guarded by g_slots_mu. Slots live as long as the process.
std::unordered_map<std::string, std::unique_ptr<FileLock::Slot>>& Slots() {
  static auto* slots = new std::unordered_map<std::string, std::unique_ptr<FileLock::Slot>>();
  return *slots;
}

FileLock::Slot* SlotFor(const fs::path& path, const std::string& key) {
  std::lock_guard<std::mutex> lock(g_slots_mu);
  auto& slot = Slots()[key];
  if (!slot) {
    slot = std::make_unique<FileLock::Slot>();
    slot->path = path;
  }
  return slot.get();
}

// Whether the slot's descriptor is still the file at `path` (not deleted,
// not replaced).
bool StillAtPath(const FileLock::Slot& slot, const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_ino == slot.ino && st.st_dev == slot.dev;
}

// A slot keeps its descriptor between acquisitions, and nothing else would
// close it: a host that lives for weeks, whose lead makes and deletes teams
// (or whose teams another process deletes), kept one descriptor for every
// lock file it ever took, deleted or not, until RLIMIT_NOFILE ran out. So
// every kSweepEvery descriptors opened, the idle slots whose file is no
// longer at its path (deleted, replaced) close theirs. Live files keep
// theirs: closing them would make every acquisition an open and a close,
// and each close an inotify event for the folder's watchers.
constexpr uint64_t kSweepEvery = 64;

void SweepStaleSlots(const FileLock::Slot* mine) {
  static std::atomic<uint64_t> opened{0};
  if (++opened % kSweepEvery != 0) return;
  std::vector<FileLock::Slot*> all;
  {
    std::lock_guard<std::mutex> lock(g_slots_mu);
    all.reserve(Slots().size());
    for (auto& [key, slot] : Slots()) {
      if (slot.get() != mine) all.push_back(slot.get());
    }
  }
  // Slots are never freed; one in use is left as it is.
  for (FileLock::Slot* slot : all) {
    if (!slot->in_use.try_acquire()) continue;
    if (slot->fd.valid() && !StillAtPath(*slot, slot->path)) slot->fd.reset();
    slot->in_use.release();
  }
}

// Opens `path` into the slot, noting which file it is; false (errno set)
// if it cannot.
bool OpenSlot(FileLock::Slot* slot, const fs::path& path, int flags) {
  slot->fd.reset(::open(path.c_str(), flags, 0644));
  if (!slot->fd.valid()) return false;
  struct stat st {};
  if (::fstat(slot->fd.get(), &st) != 0) {
    int err = errno;
    slot->fd.reset();
    errno = err;
    return false;
  }
  slot->dev = st.st_dev;
  slot->ino = st.st_ino;
  SweepStaleSlots(slot);
  return true;
}

}  // namespace

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    Release();
    slot_ = o.slot_;
    start_ = o.start_;
    folder_ = o.folder_;
    o.slot_ = nullptr;
  }
  return *this;
}

void FileLock::Release() {
  if (slot_ == nullptr) return;
  struct flock fl {};
  fl.l_type = F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = start_;
  fl.l_len = 1;
  MATES_TSAN_RELEASE(&slot_->tsan_sync);
  int rc = folder_ ? ::flock(slot_->fd.get(), LOCK_UN) : ::fcntl(slot_->fd.get(), F_OFD_SETLK, &fl);
  if (rc != 0) {
    slot_->fd.reset();  // closing releases it anyway; reopen next time
  }
  slot_->in_use.release();
  slot_ = nullptr;
}

Result<FileLock> FileLock::Acquire(const fs::path& lock_path, Range range, Mode mode) {
  return Lock(lock_path, range, mode, /*wait=*/true);
}

Result<FileLock> FileLock::TryAcquire(const fs::path& lock_path, Range range) {
  return Lock(lock_path, range, Mode::kExclusive, /*wait=*/false);
}

namespace {

// Unlocks byte `start` of `fd` (after a lock granted on a file that is no
// longer at its path).
void UnlockByte(int fd, off_t start) {
  struct flock fl {};
  fl.l_type = F_UNLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = 1;
  (void)::fcntl(fd, F_OFD_SETLK, &fl);
}

}  // namespace

Result<FileLock> FileLock::Lock(const fs::path& lock_path, Range range, Mode mode, bool wait) {
  const off_t start = static_cast<off_t>(range);
  Slot* slot = SlotFor(lock_path, lock_path.string() + "#" + std::to_string(start));
  if (wait) {
    slot->in_use.acquire();
  } else if (!slot->in_use.try_acquire_for(std::chrono::milliseconds(1))) {
    // (Not at once: the sweep of stale descriptors holds an idle slot for
    // a stat, and must not pass for a holder.)
    return Status::Conflict(lock_path.string() + " is held by another thread");
  }
  // From here the slot is ours; give it back on every failure.
  auto fail = [&](Status s) -> Result<FileLock> {
    slot->in_use.release();
    return s;
  };
  struct flock fl {};
  fl.l_type = mode == Mode::kShared ? F_RDLCK : F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = 1;
  fl.l_pid = 0;  // required by OFD locks
  // The path is checked before (a descriptor kept from an earlier
  // acquisition may name a file since replaced, which someone may hold for
  // ever: we must not queue on it) and again once granted (it may have
  // been replaced while we waited).
  for (;;) {
    if (slot->fd.valid() && !StillAtPath(*slot, lock_path)) slot->fd.reset();
    if (!slot->fd.valid()) {
      if (!OpenSlot(slot, lock_path, O_RDWR | O_CREAT | O_CLOEXEC)) {
        if (errno == ENOENT) return fail(Status::NotFound("folder of " + lock_path.string() + " is gone"));
        return fail(Status::FromErrno("open lock " + lock_path.string(), errno));
      }
    }
    int rc;
    while ((rc = ::fcntl(slot->fd.get(), wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl)) != 0 &&
           errno == EINTR) {
    }
    if (rc != 0) {
      if (!wait && (errno == EAGAIN || errno == EACCES)) {
        return fail(Status::Conflict(lock_path.string() + " is held by another"));
      }
      return fail(Status::FromErrno("lock " + lock_path.string(), errno));
    }
    // Granted: but while we waited the file may have been deleted or
    // replaced, and someone else may hold the file now at the path.
    if (StillAtPath(*slot, lock_path)) break;
    UnlockByte(slot->fd.get(), start);
    slot->fd.reset();
  }
  MATES_TSAN_ACQUIRE(&slot->tsan_sync);
  return FileLock(slot, start, /*folder=*/false);
}

bool FileLock::IsHeld(const fs::path& lock_path, Range range) {
  ScopedFd fd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  struct flock fl {};
  fl.l_type = F_WRLCK;  // would an exclusive lock conflict with anyone's?
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(range);
  fl.l_len = 1;
  if (::fcntl(fd.get(), F_OFD_GETLK, &fl) != 0) return false;
  return fl.l_type != F_UNLCK;
}

Result<FileLock> FileLock::AcquireFolder(const fs::path& dir) {
  Slot* slot = SlotFor(dir, dir.string() + "#folder");
  slot->in_use.acquire();
  auto fail = [&](Status s) -> Result<FileLock> {
    slot->in_use.release();
    return s;
  };
  for (;;) {
    if (slot->fd.valid() && !StillAtPath(*slot, dir)) slot->fd.reset();
    if (!slot->fd.valid()) {
      if (!OpenSlot(slot, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (errno == ENOENT) return fail(Status::NotFound(dir.string() + " is gone"));
        return fail(Status::FromErrno("open folder " + dir.string(), errno));
      }
    }
    int rc;
    while ((rc = ::flock(slot->fd.get(), LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) return fail(Status::FromErrno("lock folder " + dir.string(), errno));
    // A folder moved away (a team deleted and created again) while we
    // waited: lock the one at the path now.
    if (StillAtPath(*slot, dir)) break;
    (void)::flock(slot->fd.get(), LOCK_UN);
    slot->fd.reset();
  }
  MATES_TSAN_ACQUIRE(&slot->tsan_sync);
  return FileLock(slot, 0, /*folder=*/true);
}

}  // namespace mates
