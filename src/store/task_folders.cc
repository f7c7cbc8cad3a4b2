#include "store/task_folders.h"

#include "store/board.h"
#include "store/claim_line.h"
#include "store/watcher.h"

namespace mates {

std::shared_ptr<Board> TaskFolders::BoardLocked(const std::string& key) {
  auto& slot = boards_[key];
  auto board = slot.lock();
  if (!board) {
    board = std::make_shared<Board>(key, Board::Options{.local = &watcher_});
    slot = board;
  }
  return board;
}

std::shared_ptr<Board> TaskFolders::BoardOf(const fs::path& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  return BoardLocked(dir.lexically_normal().string());
}

Result<std::shared_ptr<ClaimLine>> TaskFolders::LineOf(const fs::path& dir) {
  std::string key = dir.lexically_normal().string();
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = lines_[key];
  if (auto line = slot.lock()) return line;
  // A board would make the folder: a line is only for one that is there.
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::NotFound("folder " + key + " does not exist");
  std::shared_ptr<Board> board = BoardLocked(key);
  MATES_ASSIGN_OR_RETURN(auto line, ClaimLine::Create(board, watcher_));
  slot = line;
  board->SetClaimers(line);
  return line;
}

}  // namespace mates
