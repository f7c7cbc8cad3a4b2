// TaskBoard: a team's task board wherever it is kept (DESIGN §13): the
// file board (store/board.h) or the PostgreSQL store's (pg::TeamBoard).
// A command that works on a board works on this.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/task.h"

namespace mates {

class Board;

class TaskBoard {
 public:
  virtual ~TaskBoard() = default;
  virtual Result<Task> Create(const TaskDraft& draft) = 0;
  virtual Result<Task> Get(int64_t id) = 0;
  // Sorted by id; deleted tasks only when asked.
  virtual Result<std::vector<Task>> List(bool include_deleted) = 0;
  // DESIGN §4's rules (store/task_rules.h).
  virtual Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) = 0;
  // Compare-and-set; Conflict if someone else has it.
  virtual Result<Task> Claim(int64_t id, const std::string& owner) = 0;
  // The owner's assigned task first, else the lowest claimable one;
  // `outlook`, if given, says what that left for others (ClaimLine).
  virtual Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook) = 0;
  Result<std::optional<Task>> ClaimNext(const std::string& owner) { return ClaimNext(owner, nullptr); }
  // The id ClaimNext(owner) would claim now, without claiming it. This
  // default reads the whole board (List); a board with an index does better.
  virtual Result<std::optional<int64_t>> NextClaimable(const std::string& owner);
};

// `board` (which must outlive it) as a TaskBoard.
std::unique_ptr<TaskBoard> FileTaskBoard(Board& board);
// The same, keeping `board` (a SharedBoard, say) alive.
std::unique_ptr<TaskBoard> FileTaskBoard(std::shared_ptr<Board> board);

}  // namespace mates
