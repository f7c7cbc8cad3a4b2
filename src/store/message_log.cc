#include "store/message_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/file_lock.h"
#include "core/files.h"
#include "core/log.h"
#include "store/watcher.h"

namespace mates {

MessageLog::MessageLog(const Workspace& ws, std::string team, Watcher* local)
    : dir_(ws.TeamDir(team)), path_(ws.MessagesLogPath(team)), lock_(ws.MessagesLockPath(team)), local_(local) {}

Status MessageLog::Append(const Message& m) const {
  Status appended;
  MATES_RETURN_IF_ERROR(AppendAfter(m, &appended, [] { return Status::Ok(); }));
  return appended;
}

Status MessageLog::AppendAfter(const Message& m, Status* append_failure,
                               const std::function<Status()>& first) const {
  {
    MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_));
    MATES_RETURN_IF_ERROR(first());
    ScopedFd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    *append_failure = fd.valid() ? WriteAll(fd.get(), MessageToLine(m), path_.c_str())
                                 : Status::FromErrno("open " + path_.string(), errno);
  }
  if (append_failure->ok() && local_ != nullptr) local_->NotifyLocal(dir_, path_.filename().string());
  return Status::Ok();
}

Result<std::vector<Message>> MessageLog::ReadFrom(uint64_t offset, uint64_t* next_offset, size_t max_bytes) const {
  std::vector<Message> out;
  *next_offset = offset;
  ScopedFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return out;
    return Status::FromErrno("open " + path_.string(), errno);
  }
  std::string data;
  char buf[65536];
  off_t pos = static_cast<off_t>(offset);
  while (max_bytes == 0 || data.size() < max_bytes) {
    size_t want = max_bytes == 0 ? sizeof buf : std::min(sizeof buf, max_bytes - data.size());
    ssize_t n = ::pread(fd.get(), buf, want, pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("read " + path_.string(), errno);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    pos += n;
  }
  size_t start = 0;
  for (;;) {
    size_t end = data.find('\n', start);
    if (end == std::string::npos) break;  // incomplete tail: next time
    std::string_view line(data.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      auto m = ParseMessageLine(line);
      if (m.ok()) {
        out.push_back(std::move(*m));
      } else {
        LogWarning("skipping a bad line of " + path_.string() + ": " + m.status().message());
      }
    }
    start = end + 1;
  }
  if (start == 0 && max_bytes != 0 && data.size() >= max_bytes) {
    // One line longer than a page: no message is that long; step over it.
    LogWarning("skipping " + std::to_string(data.size()) + " bytes of " + path_.string() + " without a line end");
    start = data.size();
  }
  *next_offset = offset + start;
  return out;
}

Result<std::optional<Message>> MessageLog::Find(const std::string& id) const {
  uint64_t next = 0;
  MATES_ASSIGN_OR_RETURN(std::vector<Message> all, ReadFrom(0, &next));
  for (auto& m : all) {
    if (m.id == id) return std::optional<Message>(std::move(m));
  }
  return std::optional<Message>();
}

Result<std::vector<Message>> MessageLog::Tail(size_t n) const {
  std::vector<Message> out;
  ScopedFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return out;
    return Status::FromErrno("open " + path_.string(), errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("stat " + path_.string(), errno);
  // Enough for the last few messages of any ordinary size; a longer one
  // is left out rather than read whole.
  constexpr off_t kWindow = 256 << 10;
  off_t from = std::max<off_t>(0, st.st_size - kWindow);
  std::string data(static_cast<size_t>(st.st_size - from), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t r = ::pread(fd.get(), data.data() + got, data.size() - got, from + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("read " + path_.string(), errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  data.resize(got);
  size_t start = 0;
  if (from > 0) {  // the window began inside a line
    start = data.find('\n');
    start = start == std::string::npos ? data.size() : start + 1;
  }
  for (;;) {
    size_t end = data.find('\n', start);
    if (end == std::string::npos) break;
    auto m = ParseMessageLine(std::string_view(data.data() + start, end - start));
    if (m.ok()) out.push_back(std::move(*m));  // a bad line is ReadFrom's to report
    start = end + 1;
  }
  if (out.size() > n) out.erase(out.begin(), out.end() - static_cast<ptrdiff_t>(n));
  return out;
}

}  // namespace mates
