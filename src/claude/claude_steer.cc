// Steering a Claude Code team as Claude Code itself does (claude_team.h):
// a message into a member's inbox, a task onto the board, each under
// Claude Code's own lock folders (proper-lockfile's).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "claude/claude_files.h"
#include "claude/claude_team.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/ids.h"
#include "core/text.h"

namespace mates::claude {

// ---------------------------------------------------------------------------
// DirLock

Result<DirLock> DirLock::Acquire(const fs::path& lock_dir, double timeout_s) {
  constexpr double kStaleS = 10;  // proper-lockfile's default
  const Deadline deadline = DeadlineIn(timeout_s);
  auto pause = std::chrono::milliseconds(5);
  while (true) {
    if (::mkdir(lock_dir.c_str(), 0755) == 0) return DirLock(lock_dir);
    if (errno != EEXIST) {
      return Status::FromErrno("take the lock " + lock_dir.string(), errno);
    }
    struct stat st {};
    if (::stat(lock_dir.c_str(), &st) == 0) {
      const double mtime = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
      if (WallSeconds() - mtime > kStaleS) {
        // Its holder died: proper-lockfile takes a stale lock over.
        ::rmdir(lock_dir.c_str());
        continue;
      }
    }
    if (Expired(deadline)) {
      return Status::Conflict(lock_dir.string() + " is held (by Claude Code) and was not let go within " +
                              std::to_string(static_cast<int>(timeout_s)) + " s");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

DirLock::~DirLock() {
  if (!path_.empty()) ::rmdir(path_.c_str());
}

// ---------------------------------------------------------------------------
// Steering

Result<std::string> ClaudeHome::Send(std::string_view team, std::string_view from, std::string_view to,
                                     std::string_view text, std::string_view summary) {
  MATES_ASSIGN_OR_RETURN(TeamConfig c, LoadTeam(team));
  if (c.Find(to) == nullptr) {
    std::string names;
    for (const auto& m : c.members) names += (names.empty() ? "" : ", ") + m.name;
    return Status::NotFound("no member '" + std::string(to) + "' in Claude Code team '" + std::string(team) +
                            "' (members: " + names + ")");
  }
  if (from.empty()) return Status::InvalidArgument("a message needs a sender");
  if (text.empty()) return Status::InvalidArgument("an empty message is not sent");
  if (text.size() > kMaxMessageBytes) {
    return Status::InvalidArgument("a message is at most " + std::to_string(kMaxMessageBytes >> 10) + " KiB");
  }
  const fs::path dir = FilesOf(team).inboxes;
  MATES_RETURN_IF_ERROR(EnsureDir(dir));
  const fs::path file = dir / (FileNameOf(to) + ".json");
  // As Claude Code: the inbox made if missing, then changed under its lock.
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    Status w = WriteAll(fd, "[]", file.c_str());
    ::close(fd);
    MATES_RETURN_IF_ERROR(w);
  } else if (errno != EEXIST) {
    return Status::FromErrno("create " + file.string(), errno);
  }
  MATES_ASSIGN_OR_RETURN(DirLock lock, DirLock::Acquire(fs::path(file.string() + ".lock")));
  auto j = ReadJsonFile(file, kMaxInboxBytes);
  if (!j.ok()) return j.status();
  if (!j->is_array()) return Status::Corrupt(file.string() + " is not a JSON array: left as it is");
  const std::string id = NewUuid();
  Json m = {{"from", std::string(from)}, {"text", std::string(text)}, {"timestamp", UtcIsoTime(WallSeconds())}};
  if (!summary.empty()) m["summary"] = std::string(summary);
  m["msgV"] = 1;
  m["msg_id"] = id;
  m["type"] = "message";
  m["read"] = false;
  j->push_back(std::move(m));
  MATES_RETURN_IF_ERROR(WriteFileAtomic(file, j->dump(2)));
  return id;
}

Result<Task> ClaudeHome::CreateTask(std::string_view team, std::string_view subject, std::string_view description,
                                    const std::vector<std::string>& blocked_by) {
  MATES_RETURN_IF_ERROR(LoadTeam(team).status());
  if (subject.empty()) return Status::InvalidArgument("a task needs a subject");
  if (subject.size() + description.size() > kMaxMessageBytes) {
    return Status::InvalidArgument("a task is at most " + std::to_string(kMaxMessageBytes >> 10) + " KiB");
  }
  const fs::path dir = FilesOf(team).tasks;
  MATES_RETURN_IF_ERROR(EnsureDir(dir));
  const fs::path lock_file = dir / ".lock";
  int fd = ::open(lock_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  MATES_ASSIGN_OR_RETURN(DirLock lock, DirLock::Acquire(fs::path(lock_file.string() + ".lock")));
  // The next id: past every task there, and past the highest ever deleted.
  long long top = 0;
  for (const auto& name : ListDir(dir)) {
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      char* end = nullptr;
      long long n = std::strtoll(name.c_str(), &end, 10);
      if (end != nullptr && std::string_view(end) == ".json") top = std::max(top, n);
    }
  }
  if (auto mark = ReadFilePrefix(dir / ".highwatermark", 64); mark.ok()) top = std::max(top, std::atoll(mark->c_str()));
  for (const auto& b : blocked_by) {
    if (!fs::exists(dir / (FileNameOf(b) + ".json"))) return Status::NotFound("no task #" + b + " on the board");
  }
  Task t;
  t.id = std::to_string(top + 1);
  t.subject = std::string(subject);
  t.description = std::string(description);
  t.status = "pending";
  t.blocked_by = blocked_by;
  Json j = {{"id", t.id}, {"subject", t.subject}, {"description", t.description}, {"status", t.status},
            {"blocks", Json::array()}, {"blockedBy", blocked_by}};
  MATES_RETURN_IF_ERROR(WriteFileAtomic(dir / (t.id + ".json"), j.dump(2)));
  // The other side of each blocker, under that task's own lock.
  for (const auto& b : blocked_by) {
    const fs::path f = dir / (FileNameOf(b) + ".json");
    MATES_ASSIGN_OR_RETURN(DirLock task_lock, DirLock::Acquire(fs::path(f.string() + ".lock")));
    MATES_ASSIGN_OR_RETURN(Json other, ReadJsonFile(f, kMaxTaskBytes));
    if (!other.is_object()) return Status::Corrupt(f.string() + " is not a JSON object");
    Json& blocks = other["blocks"];
    if (!blocks.is_array()) blocks = Json::array();
    if (std::find(blocks.begin(), blocks.end(), Json(t.id)) == blocks.end()) blocks.push_back(t.id);
    MATES_RETURN_IF_ERROR(WriteFileAtomic(f, other.dump(2)));
  }
  return t;
}

}  // namespace mates::claude
