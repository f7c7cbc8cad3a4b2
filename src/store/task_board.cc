#include "store/task_board.h"

#include <algorithm>
#include <map>

#include "store/board.h"

namespace mates {

Result<std::optional<int64_t>> TaskBoard::NextClaimable(const std::string& owner) {
  MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, List(/*include_deleted=*/true));
  std::map<int64_t, TaskStatus> status;
  for (const auto& t : tasks) status[t.id] = t.status;
  auto unblocked = [&](const Task& t) {
    return std::all_of(t.blocked_by.begin(), t.blocked_by.end(), [&](int64_t b) {
      auto it = status.find(b);
      return it != status.end() && ReleasesDependents(it->second);
    });
  };
  // The owner's assigned task first, as ClaimNext does.
  for (const auto& t : tasks) {
    if (t.status == TaskStatus::kPending && t.owner == owner && unblocked(t)) return std::optional<int64_t>(t.id);
  }
  for (const auto& t : tasks) {
    if (t.status == TaskStatus::kPending && t.owner.empty() && unblocked(t)) return std::optional<int64_t>(t.id);
  }
  return std::optional<int64_t>();
}

namespace {

class FileBoard : public TaskBoard {
 public:
  Result<std::optional<int64_t>> NextClaimable(const std::string& owner) override {
    return board_.NextClaimable(owner);
  }
  explicit FileBoard(Board& board) : board_(board) {}
  explicit FileBoard(std::shared_ptr<Board> owned) : owned_(std::move(owned)), board_(*owned_) {}
  Result<Task> Create(const TaskDraft& draft) override { return board_.Create(draft); }
  Result<Task> Get(int64_t id) override { return board_.Get(id); }
  Result<std::vector<Task>> List(bool include_deleted) override { return board_.List(include_deleted); }
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) override {
    return board_.Update(id, patch, caller);
  }
  Result<Task> Claim(int64_t id, const std::string& owner) override { return board_.Claim(id, owner); }
  Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook) override {
    return board_.ClaimNext(owner, outlook);
  }

 private:
  std::shared_ptr<Board> owned_;
  Board& board_;
};

}  // namespace

std::unique_ptr<TaskBoard> FileTaskBoard(Board& board) { return std::make_unique<FileBoard>(board); }

std::unique_ptr<TaskBoard> FileTaskBoard(std::shared_ptr<Board> board) {
  return std::make_unique<FileBoard>(std::move(board));
}

}  // namespace mates
