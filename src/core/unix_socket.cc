#include "core/unix_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  MATES_ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(path));
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

}  // namespace mates
