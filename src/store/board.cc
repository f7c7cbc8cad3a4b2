#include "store/board.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "store/watcher.h"

namespace mates {

std::string TaskFileName(int64_t id) { return std::to_string(id) + ".json"; }

std::shared_ptr<Board> SharedBoard(const fs::path& dir) {
  static std::mutex mu;
  static auto* boards = new std::map<std::string, std::weak_ptr<Board>>();  // guarded by mu
  std::string key = dir.lexically_normal().string();
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*boards)[key];
  auto board = slot.lock();
  if (!board) {
    board = std::make_shared<Board>(dir);
    slot = board;
  }
  return board;
}

int64_t TaskIdFromFileName(std::string_view name) {
  constexpr std::string_view kExt = ".json";
  if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt) return 0;
  std::string_view stem = name.substr(0, name.size() - kExt.size());
  int64_t id = 0;
  auto [p, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), id);
  if (ec != std::errc() || p != stem.data() + stem.size() || id < 1 || id > kMaxTaskId) return 0;
  return id;
}

namespace {

std::string TaskRef(int64_t id) { return "#" + std::to_string(id); }

Status NoTask(int64_t id) { return Status::NotFound("no task " + TaskRef(id)); }

// Metadata from a caller: a JSON object within the size bound (DESIGN §10).
Result<Json> ParseMetadata(const std::string& text) {
  if (text.size() > 4 * kMaxTaskMetadataBytes) {
    return Status::InvalidArgument("metadata is " + std::to_string(text.size()) +
                                   " bytes; a task's metadata may be " +
                                   std::to_string(kMaxTaskMetadataBytes) + " bytes at most");
  }
  auto md = ParseJson(text);
  if (!md.ok()) return Status::InvalidArgument("metadata: " + md.status().message());
  if (!md->is_object()) return Status::InvalidArgument("metadata must be a JSON object");
  return md;
}

Status CheckMetadataSize(const std::string& compact) {
  if (compact.size() > kMaxTaskMetadataBytes) {
    return Status::InvalidArgument("metadata would be " + std::to_string(compact.size()) +
                                   " bytes; a task's metadata may be " +
                                   std::to_string(kMaxTaskMetadataBytes) + " bytes at most");
  }
  return Status::Ok();
}


}  // namespace

std::string Board::BlockedReasonLocked(const Task& t) const {
  std::string why;
  for (int64_t b : t.blocked_by) {
    const Entry* e = (b >= 1 && static_cast<size_t>(b) < tasks_.size() && tasks_[b].present)
                         ? &tasks_[b]
                         : nullptr;
    if (e != nullptr && (e->task.status == TaskStatus::kCompleted ||
                         e->task.status == TaskStatus::kDeleted)) {
      continue;
    }
    if (!why.empty()) why += ", ";
    why += TaskRef(b) + (e == nullptr ? std::string(" (missing)")
                                      : " (" + std::string(TaskStatusName(e->task.status)) + ")");
  }
  return why;
}

bool Board::BlockedLocked(const Task& t) const {
  for (int64_t b : t.blocked_by) {
    if (b < 1 || static_cast<size_t>(b) >= tasks_.size() || !tasks_[b].present) return true;
    TaskStatus s = tasks_[b].task.status;
    if (s != TaskStatus::kCompleted && s != TaskStatus::kDeleted) return true;
  }
  return false;
}

bool Board::ClaimableLocked(const Task& t) const {
  return t.status == TaskStatus::kPending && t.owner.empty() && !BlockedLocked(t);
}

bool Board::DependsOnLocked(int64_t from, int64_t target) const {
  std::vector<int64_t> stack = {from};
  std::set<int64_t> visited;
  while (!stack.empty()) {
    int64_t cur = stack.back();
    stack.pop_back();
    if (cur == target) return true;
    if (!visited.insert(cur).second) continue;
    if (cur < 1 || static_cast<size_t>(cur) >= tasks_.size() || !tasks_[cur].present) continue;
    for (int64_t b : tasks_[cur].task.blocked_by) stack.push_back(b);
  }
  return false;
}

int64_t Board::NextIdLocked() {
  int64_t hwm = 0;
  auto data = ReadFilePrefix(hwm_path_, 32);
  if (data.ok()) {
    std::string s = *data;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), hwm);
    if (ec != std::errc() || hwm < 0 || hwm > kMaxTaskId) {
      LogWarning(hwm_path_.string() + " is unreadable; the next id follows the task files");
      hwm = 0;
    }
  }
  return std::max(hwm, max_file_id_) + 1;
}

Result<Task> Board::Create(const TaskDraft& draft) {
  if (draft.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task needs a subject");
  }
  std::string metadata = "{}";
  if (!draft.metadata_json.empty()) {
    MATES_ASSIGN_OR_RETURN(Json md, ParseMetadata(draft.metadata_json));
    metadata = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckMetadataSize(metadata));
  }
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::vector<int64_t> blockers;
  for (int64_t b : draft.blocked_by) {
    Entry* e = FindLocked(b);
    if (e == nullptr || e->task.status == TaskStatus::kDeleted) return NoTask(b);
    if (std::find(blockers.begin(), blockers.end(), b) == blockers.end()) blockers.push_back(b);
  }
  Task t;
  t.id = NextIdLocked();
  if (t.id > kMaxTaskId) {
    return Status::FailedPrecondition("the board holds " + std::to_string(kMaxTaskId) + " tasks, its most");
  }
  t.subject = draft.subject;
  t.description = draft.description;
  t.active_form = draft.active_form;
  t.blocked_by = blockers;
  t.metadata_json = metadata;
  t.created_at = WallSeconds();
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  MATES_RETURN_IF_ERROR(ReplaceFileViaSpare(hwm_path_, std::to_string(t.id) + "\n", spare_path_));
  for (int64_t b : blockers) {
    MATES_ASSIGN_OR_RETURN(Task blocker, FullTaskLocked(b));
    blocker.blocks.push_back(t.id);
    MATES_RETURN_IF_ERROR(WriteLocked(blocker));
  }
  HandOutLocked();
  return t;
}

Status Board::Import(const Task& t) {
  if (t.id < 1 || t.id > kMaxTaskId) return Status::InvalidArgument("task id " + std::to_string(t.id) + " is out of range");
  if (t.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("task #" + std::to_string(t.id) + " has no subject");
  }
  MATES_RETURN_IF_ERROR(CheckMetadataSize(t.metadata_json));
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  if (FindLocked(t.id) != nullptr) return Status::AlreadyExists("task #" + std::to_string(t.id) + " exists already");
  bool past = t.id >= NextIdLocked();
  Task copy = t;
  MATES_RETURN_IF_ERROR(WriteLocked(copy, /*touch=*/false));
  if (past) MATES_RETURN_IF_ERROR(ReplaceFileViaSpare(hwm_path_, std::to_string(t.id) + "\n", spare_path_));
  return Status::Ok();
}

Result<Task> Board::Get(int64_t id) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return FullTaskLocked(id);
}

Result<std::vector<Task>> Board::List(bool include_deleted) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::vector<int64_t> ids;
  for (size_t id = 1; id < tasks_.size(); ++id) {
    const Entry& e = tasks_[id];
    if (e.present && (include_deleted || e.task.status != TaskStatus::kDeleted)) {
      ids.push_back(static_cast<int64_t>(id));
    }
  }
  std::vector<Task> out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    auto t = FullTaskLocked(id);
    if (t.ok()) out.push_back(std::move(*t));  // else: unreadable, reported
  }
  return out;
}

Status Board::CheckUpdateAllowedLocked(const Task& t, const TaskPatch& patch, const Caller& caller) const {
  const std::string ref = "task " + TaskRef(t.id);
  // Deleted is final: a deleted task holds no one back and takes no
  // dependencies, so nothing may bring it back.
  if (t.status == TaskStatus::kDeleted) {
    return Status::FailedPrecondition(ref + " is deleted; create a new task instead");
  }
  // Who may do what: a teammate works on its own or unowned tasks only.
  if (!caller.is_lead && !t.owner.empty() && t.owner != caller.name) {
    if (patch.owner.has_value() && *patch.owner != t.owner) {
      return Status::FailedPrecondition(ref + " is owned by '" + t.owner + "'; only the lead can reassign it");
    }
    if (patch.status.has_value() && *patch.status != t.status) {
      return Status::FailedPrecondition(ref + " is owned by '" + t.owner +
                                        "'; only its owner or the lead can change its status");
    }
  }
  if (patch.status == TaskStatus::kDeleted && (!patch.add_blocked_by.empty() || !patch.add_blocks.empty())) {
    return Status::InvalidArgument(ref + ": a task being deleted takes no new dependencies");
  }
  return Status::Ok();
}

Result<Board::NewLinks> Board::CheckNewLinksLocked(const Task& t, const TaskPatch& patch) const {
  const int64_t id = t.id;
  const std::string ref = "task " + TaskRef(id);
  auto live = [&](int64_t b) -> const Entry* {
    if (b < 1 || static_cast<size_t>(b) >= tasks_.size() || !tasks_[b].present) return nullptr;
    return tasks_[b].task.status == TaskStatus::kDeleted ? nullptr : &tasks_[b];
  };
  NewLinks links;
  for (int64_t b : patch.add_blocked_by) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    if (live(b) == nullptr) return NoTask(b);
    if (std::find(t.blocked_by.begin(), t.blocked_by.end(), b) != t.blocked_by.end()) continue;
    if (DependsOnLocked(b, id)) {
      return Status::FailedPrecondition("dependency cycle: " + TaskRef(b) + " already waits on " + TaskRef(id));
    }
    links.blocked_by.push_back(b);
  }
  for (int64_t b : patch.add_blocks) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    const Entry* e = live(b);
    if (e == nullptr) return NoTask(b);
    const auto& bb = e->task.blocked_by;
    if (std::find(bb.begin(), bb.end(), id) != bb.end()) continue;
    if (DependsOnLocked(id, b) ||
        std::find(links.blocked_by.begin(), links.blocked_by.end(), b) != links.blocked_by.end()) {
      return Status::FailedPrecondition("dependency cycle: " + TaskRef(id) + " already waits on " + TaskRef(b));
    }
    links.blocks.push_back(b);
  }
  return links;
}

Status Board::ApplyPatchLocked(Task& t, const TaskPatch& patch, const Json& metadata_patch,
                               const NewLinks& links, const Caller& caller) const {
  if (patch.subject) t.subject = *patch.subject;
  if (patch.description) t.description = *patch.description;
  if (patch.active_form) t.active_form = *patch.active_form;
  if (patch.owner) t.owner = *patch.owner;
  if (patch.metadata_json) {
    auto current = ParseJson(t.metadata_json);
    Json md = current.ok() && current->is_object() ? std::move(*current) : Json::object();
    for (auto& [k, v] : metadata_patch.items()) {
      if (v.is_null()) {
        md.erase(k);
      } else {
        md[k] = v;
      }
    }
    t.metadata_json = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckMetadataSize(t.metadata_json));
  }
  t.blocked_by.insert(t.blocked_by.end(), links.blocked_by.begin(), links.blocked_by.end());
  t.blocks.insert(t.blocks.end(), links.blocks.begin(), links.blocks.end());
  if (patch.status && *patch.status != t.status) {
    if (*patch.status == TaskStatus::kInProgress) {
      std::string why = BlockedReasonLocked(t);
      if (!why.empty()) return Status::FailedPrecondition("task " + TaskRef(t.id) + " is blocked by " + why);
      if (t.owner.empty() && !caller.is_lead && !caller.name.empty()) t.owner = caller.name;
    }
    t.status = *patch.status;
  }
  return Status::Ok();
}

Status Board::WriteOtherSidesLocked(int64_t id, const NewLinks& links, bool deleted,
                                    const std::vector<int64_t>& dropped) {
  for (int64_t b : links.blocked_by) {
    MATES_ASSIGN_OR_RETURN(Task other, FullTaskLocked(b));
    other.blocks.push_back(id);
    MATES_RETURN_IF_ERROR(WriteLocked(other));
  }
  for (int64_t b : links.blocks) {
    MATES_ASSIGN_OR_RETURN(Task other, FullTaskLocked(b));
    other.blocked_by.push_back(id);
    MATES_RETURN_IF_ERROR(WriteLocked(other));
  }
  if (!deleted) return Status::Ok();
  // A deleted task no longer holds anyone back: it leaves its dependents'
  // blockedBy and its blockers' blocks (and anyone else who names it).
  std::set<int64_t> touched(dropped.begin(), dropped.end());
  for (size_t oid = 1; oid < tasks_.size(); ++oid) {
    const Entry& e = tasks_[oid];
    if (!e.present || static_cast<int64_t>(oid) == id) continue;
    const auto& bb = e.task.blocked_by;
    if (std::find(bb.begin(), bb.end(), id) != bb.end()) touched.insert(static_cast<int64_t>(oid));
  }
  for (int64_t oid : touched) {
    auto other = FullTaskLocked(oid);
    if (!other.ok()) continue;  // gone or unreadable: nothing to keep consistent
    auto n = std::erase(other->blocked_by, id) + std::erase(other->blocks, id);
    if (n > 0) MATES_RETURN_IF_ERROR(WriteLocked(*other));
  }
  return Status::Ok();
}

Result<Task> Board::Update(int64_t id, const TaskPatch& patch, const Caller& caller) {
  // What can be checked without the board comes first.
  if (patch.owner.has_value() && !patch.owner->empty()) {
    MATES_RETURN_IF_ERROR(ValidateName("owner name", *patch.owner));
  }
  if (patch.subject.has_value() && patch.subject->find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task's subject cannot be empty");
  }
  Json metadata_patch;
  if (patch.metadata_json.has_value()) {
    MATES_ASSIGN_OR_RETURN(metadata_patch, ParseMetadata(*patch.metadata_json));
  }
  struct UpdateFirst {
    Board* b;
    explicit UpdateFirst(Board* board) : b(board) {
      std::lock_guard<std::mutex> g(b->gate_mu_);
      ++b->updates_waiting_;
    }
    ~UpdateFirst() {
      std::lock_guard<std::mutex> g(b->gate_mu_);
      if (--b->updates_waiting_ == 0) b->gate_cv_.notify_all();
    }
  } first(this);
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  MATES_ASSIGN_OR_RETURN(Task t, FullTaskLocked(id));
  // Everything is validated before anything is written.
  MATES_RETURN_IF_ERROR(CheckUpdateAllowedLocked(t, patch, caller));
  MATES_ASSIGN_OR_RETURN(NewLinks links, CheckNewLinksLocked(t, patch));
  MATES_RETURN_IF_ERROR(ApplyPatchLocked(t, patch, metadata_patch, links, caller));
  // A deleted task keeps no one-sided link: its own lists go, and it
  // leaves the others' (WriteOtherSidesLocked).
  std::vector<int64_t> dropped;
  if (t.status == TaskStatus::kDeleted) {
    dropped = t.blocked_by;
    dropped.insert(dropped.end(), t.blocks.begin(), t.blocks.end());
    t.blocked_by.clear();
    t.blocks.clear();
  }
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  MATES_RETURN_IF_ERROR(WriteOtherSidesLocked(id, links, t.status == TaskStatus::kDeleted, dropped));
  HandOutLocked();
  return t;
}

Result<Task> Board::ClaimLocked(int64_t id, const std::string& owner) {
  Entry* e = FindLocked(id);
  if (e == nullptr || e->task.status == TaskStatus::kDeleted) return NoTask(id);
  MATES_ASSIGN_OR_RETURN(Task t, FullTaskLocked(id));
  const std::string ref = "task " + TaskRef(id);
  if (t.owner == owner && t.status == TaskStatus::kInProgress) return t;  // already ours
  if (!t.owner.empty() && t.owner != owner) {
    return Status::Conflict(ref + " is already claimed by '" + t.owner + "'");
  }
  if (t.status != TaskStatus::kPending) {
    return Status::Conflict(ref + " is " + std::string(TaskStatusName(t.status)));
  }
  std::string why = BlockedReasonLocked(t);
  if (!why.empty()) return Status::FailedPrecondition(ref + " is blocked by " + why);
  t.owner = owner;
  t.status = TaskStatus::kInProgress;
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  return t;
}

Result<Task> Board::Claim(int64_t id, const std::string& owner) {
  MATES_RETURN_IF_ERROR(ValidateName("owner name", owner));
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return ClaimLocked(id, owner);
}

std::optional<int64_t> Board::NextClaimableLocked(const std::string& owner) {
  // Candidates come from what the index says; each is confirmed from its
  // file, so a task file cut short or edited into garbage (skipped, and
  // reported once) never stands in the way of the tasks after it.
  auto confirmed = [&](int64_t id, bool assigned) {
    auto t = FullTaskLocked(id);
    if (!t.ok()) return false;
    bool owner_ok = assigned ? t->owner == owner : t->owner.empty();
    return owner_ok && t->status == TaskStatus::kPending && !BlockedLocked(*t);
  };
  for (size_t id = 1; id < tasks_.size(); ++id) {
    const Entry& e = tasks_[id];
    if (e.present && e.task.status == TaskStatus::kPending && e.task.owner == owner &&
        !BlockedLocked(e.task) && confirmed(static_cast<int64_t>(id), true)) {
      return static_cast<int64_t>(id);
    }
  }
  // Copied: confirming a candidate may drop it from open_.
  std::vector<int64_t> open(open_.begin(), open_.end());
  for (int64_t id : open) {
    Entry* e = FindLocked(id);
    if (e != nullptr && ClaimableLocked(e->task) && confirmed(id, false)) return id;
  }
  return std::nullopt;
}

Result<std::optional<int64_t>> Board::NextClaimable(const std::string& owner) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return NextClaimableLocked(owner);
}

void Board::OutlookLocked(const std::string& owner, ClaimOutlook* outlook) const {
  *outlook = ClaimOutlook{};
  for (int64_t id : open_) {
    if (static_cast<size_t>(id) < tasks_.size() && tasks_[id].present && ClaimableLocked(tasks_[id].task)) {
      ++outlook->unowned;
    }
  }
  for (size_t id = 1; id < tasks_.size(); ++id) {
    const Task& t = tasks_[id].task;
    if (tasks_[id].present && t.status == TaskStatus::kPending && !t.owner.empty() && t.owner != owner &&
        !BlockedLocked(t) &&
        std::find(outlook->assigned_to.begin(), outlook->assigned_to.end(), t.owner) ==
            outlook->assigned_to.end()) {
      outlook->assigned_to.push_back(t.owner);
    }
  }
}

Result<std::optional<Task>> Board::ClaimNext(const std::string& owner, ClaimOutlook* outlook) {
  if (outlook != nullptr) *outlook = ClaimOutlook{};
  MATES_RETURN_IF_ERROR(ValidateName("owner name", owner));
  {
    std::unique_lock<std::mutex> g(gate_mu_);
    gate_cv_.wait(g, [this] { return updates_waiting_ == 0; });
  }
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::optional<Task> claimed;
  if (auto id = NextClaimableLocked(owner)) {
    MATES_ASSIGN_OR_RETURN(Task t, ClaimLocked(*id, owner));
    claimed = std::move(t);
  }
  HandOutLocked();
  if (outlook != nullptr) OutlookLocked(owner, outlook);
  return claimed;
}

void Board::SetClaimers(std::weak_ptr<Claimers> claimers) {
  std::lock_guard<std::mutex> guard(mu_);
  claimers_ = std::move(claimers);
}

void Board::HandOutLocked() {
  auto claimers = claimers_.lock();
  if (!claimers) return;
  ClaimOutlook left;
  OutlookLocked("", &left);
  if (left.unowned == 0 && left.assigned_to.empty()) return;
  for (const std::string& name : claimers->Reserve(left.unowned, left.assigned_to)) {
    std::optional<Task> task;
    if (auto id = NextClaimableLocked(name)) {
      auto t = ClaimLocked(*id, name);
      if (t.ok()) {
        task = std::move(*t);
      } else {
        LogWarning("board " + dir_.string() + ": claiming #" + std::to_string(*id) + " for " + name + ": " +
                   t.status().message());
      }
    }
    claimers->Hand(name, std::move(task));
  }
}

}  // namespace mates
