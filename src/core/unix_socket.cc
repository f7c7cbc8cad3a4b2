#include "core/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/write_all.h"

namespace mates {
namespace {

Result<sockaddr_un> AddressOf(const fs::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.empty() || p.size() >= sizeof addr.sun_path) {
    return Status::FailedPrecondition("a socket path must be 1 to 107 bytes: " + p);
  }
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  return addr;
}

}  // namespace

Result<ScopedFd> ListenUnix(const fs::path& path, int backlog) {
  // A path longer than sun_path holds is reached through its folder's
  // descriptor (/proc/self/fd/N/NAME), which the kernel resolves.
  ScopedFd dir;
  fs::path where = path;
  if (path.string().size() >= sizeof(sockaddr_un::sun_path)) {
    int d = ::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return Status::FromErrno("open " + path.parent_path().string(), errno);
    dir.reset(d);
    where = fs::path("/proc/self/fd") / std::to_string(d) / path.filename();
  }
  MATES_ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(where));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  ScopedFd out(fd);
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::FromErrno("bind " + path.string(), errno);
  }
  ::chmod(path.c_str(), 0600);
  if (::listen(fd, backlog) != 0) return Status::FromErrno("listen " + path.string(), errno);
  return out;
}

Result<ScopedFd> ConnectUnix(const fs::path& path) {
  MATES_ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(path));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket", errno);
  ScopedFd out(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::FromErrno("connect " + path.string(), errno);
  }
  return out;
}

SocketLines::Got SocketLines::Next(std::string* line, size_t max, const Deadline& deadline) {
  char chunk[8192];
  size_t looked = 0;  // buf_ has no newline before this
  for (;;) {
    size_t nl = buf_.find('\n', looked);
    if (nl != std::string::npos && nl <= max) {
      line->assign(buf_, 0, nl);
      buf_.erase(0, nl + 1);
      return Got::kLine;
    }
    if (nl != std::string::npos || buf_.size() > max) return Got::kTooLong;
    looked = buf_.size();
    struct pollfd p = {fd_, POLLIN, 0};
    int ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - SteadyClock::now()).count();
      ms = static_cast<int>(std::max<int64_t>(0, left));
    }
    int rc = ::poll(&p, 1, ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Got::kEnd;
    if (rc == 0) return Got::kLate;
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Got::kEnd;
    buf_.append(chunk, static_cast<size_t>(n));
  }
}

bool ReadSocketLine(int fd, std::string* line, size_t max, const Deadline& deadline) {
  return SocketLines(fd).Next(line, max, deadline) == SocketLines::Got::kLine;
}

bool SendAllTo(int fd, const std::string& data) { return WriteFully(fd, data, WriteBy::kSend) == 0; }

}  // namespace mates
