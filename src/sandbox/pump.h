// The byte work shared by the sandbox's proxy (in the host) and its relay
// (inside the sandbox, a program of its own): system headers only, so
// that the relay starts in about a millisecond.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/write_all.h"

namespace mates::sandbox {

inline constexpr size_t kMaxHeadBytes = 16 << 10;
inline constexpr int kHeadTimeoutMs = 10000;

inline bool SendAll(int fd, const char* data, size_t n) {
  return WriteFully(fd, std::string_view(data, n), WriteBy::kSend) == 0;
}
inline bool SendAll(int fd, const std::string& s) { return SendAll(fd, s.data(), s.size()); }

// Reads up to the end of an HTTP head ("\r\n\r\n"); what came after it
// stays in `*rest`.
inline bool ReadHead(int fd, std::string* head, std::string* rest) {
  std::string buf;
  char chunk[4096];
  for (;;) {
    size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      *head = buf.substr(0, end + 4);
      *rest = buf.substr(end + 4);
      return true;
    }
    if (buf.size() > kMaxHeadBytes) return false;
    struct pollfd p = {fd, POLLIN, 0};
    int rc = ::poll(&p, 1, kHeadTimeoutMs);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return false;
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
}

// Copies both ways until both sides are done (a side's end is passed on as
// a half close), or `stop` is set.
inline void Pump(int a, int b, const std::atomic<bool>* stop) {
  bool a_open = true, b_open = true;
  char buf[16384];
  while ((a_open || b_open) && (stop == nullptr || !stop->load())) {
    struct pollfd p[2] = {{a, static_cast<short>(a_open ? POLLIN : 0), 0}, {b, static_cast<short>(b_open ? POLLIN : 0), 0}};
    int rc = ::poll(p, 2, 1000);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return;
    for (int i = 0; i < 2; ++i) {
      if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const int from = i == 0 ? a : b, to = i == 0 ? b : a;
      ssize_t n = ::recv(from, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        (i == 0 ? a_open : b_open) = false;
        ::shutdown(to, SHUT_WR);
        if (n < 0) return;
        continue;
      }
      if (!SendAll(to, buf, static_cast<size_t>(n))) return;
    }
  }
}

}  // namespace mates::sandbox
