// Runtime folders (sandbox.h): $TMPDIR/mates-UID/NAME.PID, each this
// user's own and 0700, alive while their process holds a lock on .alive.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>

#include "core/files.h"
#include "sandbox/sandbox.h"

namespace mates::sandbox {

fs::path RuntimeBase() {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  return base / ("mates-" + std::to_string(::getuid()));
}

namespace {

constexpr const char* kAliveFile = ".alive";

// NAME.PID's process, if the name is one: its number, else 0.
long PidOfRuntimeDir(const std::string& n) {
  const size_t dot = n.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == n.size() || n.size() - dot > 12 ||
      n.find_first_not_of("0123456789", dot + 1) != std::string::npos) {
    return 0;
  }
  return std::atol(n.c_str() + dot + 1);
}

}  // namespace

// A folder's process holds a lock on its .alive file for as long as it
// lives (and its forks: the lock is on the open file they share). A PID
// alone cannot say so: a process in another PID namespace (a container
// sharing this /tmp) numbers processes differently, and took the folders
// of living hosts here for dead ones, their levers' sockets with them.
bool RuntimeDirInUse(const fs::path& dir) {
  ScopedFd alive(::open((dir / kAliveFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (alive.valid()) return ::flock(alive.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  // A folder from before .alive, or one being made this moment: its PID
  // says, and a new one is left alone for a minute.
  const long pid = PidOfRuntimeDir(dir.filename().string());
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) return true;
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime < 60;
}

Result<fs::path> RuntimeDirFor(const std::string& name) {
  std::error_code ec;
  const fs::path mine = RuntimeBase();
  if (::mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST) return Status::FromErrno("mkdir " + mine.string(), errno);
  struct stat st {};
  if (::lstat(mine.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) {
    return Status::FailedPrecondition(mine.string() + " is not a folder of this user's own: the sandbox will not use it");
  }
  ::chmod(mine.c_str(), 0700);
  // What dead processes left (NAME.PID whose process is gone).
  for (const auto& e : fs::directory_iterator(mine, ec)) {
    if (PidOfRuntimeDir(e.path().filename().string()) > 0 && !RuntimeDirInUse(e.path())) {
      std::error_code gone;
      fs::remove_all(e.path(), gone);  // symlinks in it are removed, never followed
    }
  }
  const fs::path dir = mine / (name + "." + std::to_string(::getpid()));
  // This process's, until it ends: its lock on .alive says so.
  static std::mutex mu;
  static std::map<fs::path, int>* held = new std::map<fs::path, int>();  // never closed, never freed
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = held->find(dir); it != held->end()) {
    struct stat alive {};
    if (::stat((dir / kAliveFile).c_str(), &alive) == 0) return dir;
    ::close(it->second);  // its folder was removed (a sandbox gone): made again
    held->erase(it);
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Status::FromErrno("mkdir " + dir.string(), errno);
  const int fd = ::open((dir / kAliveFile).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("open " + (dir / kAliveFile).string(), errno);
  if (::flock(fd, LOCK_SH) != 0) {
    ::close(fd);
    return Status::FromErrno("lock " + (dir / kAliveFile).string(), errno);
  }
  (*held)[dir] = fd;
  return dir;
}

}  // namespace mates::sandbox
