// Unix-domain stream sockets by path: the host's agent gates and sandbox
// proxies listen on them, and what runs in a sandbox connects to them.
#pragma once

#include <string>

#include "core/clock.h"
#include "core/files.h"
#include "core/status.h"

namespace mates {

// A socket listening at `path` (whatever was there is replaced), 0600,
// close-on-exec and non-blocking; a path longer than sun_path holds is
// fine (bound through its folder's descriptor).
Result<ScopedFd> ListenUnix(const fs::path& path, int backlog);
// A blocking connection to the socket at `path`; the errno's Status if
// there is none.
Result<ScopedFd> ConnectUnix(const fs::path& path);

// Lines from a stream socket, one at a time: what came after a line is
// kept for the next.
class SocketLines {
 public:
  enum class Got { kLine, kEnd, kTooLong, kLate };
  explicit SocketLines(int fd) : fd_(fd) {}
  // The next line, without its newline: kEnd when the peer ends (or the
  // socket fails) first, kTooLong past `max` bytes, kLate at `deadline`.
  Got Next(std::string* line, size_t max, const Deadline& deadline);

 private:
  int fd_;
  std::string buf_;
};

// Reads from `fd` into `line` until a newline (which, and what follows it,
// is dropped); false if more than `max` bytes come first, the peer ends,
// or `deadline` passes.
bool ReadSocketLine(int fd, std::string* line, size_t max, const Deadline& deadline);
// Sends all of `data` (no SIGPIPE); false if the peer went.
bool SendAllTo(int fd, const std::string& data);

}  // namespace mates
