// Writing all of a buffer to a file descriptor, through EINTR and short
// writes: the one loop every writer uses. Inline, with nothing of mates'
// behind it, because mates-relay (static, linking no mates library) uses
// it too.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string_view>

namespace mates {

// How a buffer goes out: write(2), or send(2) with MSG_NOSIGNAL (a socket
// whose reader left answers EPIPE instead of raising SIGPIPE).
enum class WriteBy { kWrite, kSend };

// 0 once all of `data` is written; else the errno that stopped it (EPIPE
// when the kernel took nothing). A blocking descriptor: EAGAIN is an error.
inline int WriteFully(int fd, std::string_view data, WriteBy by = WriteBy::kWrite) {
  while (!data.empty()) {
    const ssize_t n = by == WriteBy::kSend ? ::send(fd, data.data(), data.size(), MSG_NOSIGNAL)
                                           : ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EPIPE;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace mates
