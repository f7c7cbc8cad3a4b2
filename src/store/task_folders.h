// TaskFolders: the one Board and the one ClaimLine of each task folder a
// process works on (Env::folders). Every agent of the process on a team
// shares its board (one watch, one warm cache) and its line (a write that
// leaves tasks claimable hands them to the idle claimers in the same lock
// hold: store/claim_line.h); each lives while someone holds it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"

namespace mates {

namespace fs = std::filesystem;

class Board;
class ClaimLine;
class Watcher;

class TaskFolders {
 public:
  // Changes are heard from, and this process's writes told to, `watcher`.
  explicit TaskFolders(Watcher& watcher) : watcher_(watcher) {}
  TaskFolders(const TaskFolders&) = delete;
  TaskFolders& operator=(const TaskFolders&) = delete;

  // The board of the folder `dir` (created if missing).
  std::shared_ptr<Board> BoardOf(const fs::path& dir);
  // The line of that board, which the board hands its claimable tasks to;
  // NotFound if the folder is not there.
  Result<std::shared_ptr<ClaimLine>> LineOf(const fs::path& dir);

 private:
  std::shared_ptr<Board> BoardLocked(const std::string& key);

  Watcher& watcher_;
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<Board>> boards_;     // guarded by mu_
  std::map<std::string, std::weak_ptr<ClaimLine>> lines_;  // guarded by mu_
};

}  // namespace mates
