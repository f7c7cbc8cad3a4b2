#include "store/task_board.h"

#include "store/board.h"

namespace mates {

namespace {

class FileBoard : public TaskBoard {
 public:
  explicit FileBoard(Board& board) : board_(board) {}
  explicit FileBoard(std::shared_ptr<Board> owned) : owned_(std::move(owned)), board_(*owned_) {}
  Result<Task> Create(const TaskDraft& draft) override { return board_.Create(draft); }
  Result<Task> Get(int64_t id) override { return board_.Get(id); }
  Result<std::vector<Task>> List(bool include_deleted) override { return board_.List(include_deleted); }
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) override {
    return board_.Update(id, patch, caller);
  }
  Result<Task> Claim(int64_t id, const std::string& owner) override { return board_.Claim(id, owner); }
  Result<std::optional<Task>> ClaimNext(const std::string& owner) override { return board_.ClaimNext(owner); }

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
