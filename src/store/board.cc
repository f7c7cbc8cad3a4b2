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
#include <utility>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/guarded.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "store/task_rules.h"

namespace mates {

std::string TaskFileName(int64_t id) { return std::to_string(id) + ".json"; }

int64_t TaskIdFromFileName(std::string_view name) {
  constexpr std::string_view kExt = ".json";
  if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt) return 0;
  std::string_view stem = name.substr(0, name.size() - kExt.size());
  int64_t id = 0;
  auto [p, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), id);
  if (ec != std::errc() || p != stem.data() + stem.size() || id < 1 || id > kMaxTaskId) return 0;
  return id;
}

bool Board::BlockedLocked(const Task& t) const {
  for (int64_t b : t.blocked_by) {
    if (b < 1 || static_cast<size_t>(b) >= tasks_.size() || !tasks_[b].present) return true;
    if (!ReleasesDependents(tasks_[b].task.status)) return true;
  }
  return false;
}

bool Board::ClaimableLocked(const Task& t) const {
  return t.status == TaskStatus::kPending && t.owner.empty() && !BlockedLocked(t);
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
  MATES_RETURN_IF_ERROR(ValidateLease(draft.paths));
  if (draft.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task needs a subject");
  }
  std::string metadata = "{}";
  if (!draft.metadata_json.empty()) {
    MATES_ASSIGN_OR_RETURN(Json md, ParseTaskMetadata(draft.metadata_json));
    metadata = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckTaskMetadataSize(metadata));
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
  t.paths = draft.paths;
  t.description = draft.description;
  t.active_form = draft.active_form;
  t.blocked_by = blockers;
  t.metadata_json = metadata;
  t.created_at = WallSeconds();
  // The task is made when its file is (DESIGN §19: no change after an
  // error, no error after a change). What follows is derived: the high
  // water mark (the file alone keeps its id from being handed out again)
  // and the other side of its links (`blockedBy` decides claims). A
  // failure there (a full disk) is said, not reported as a create that
  // failed: a retry would make the task twice.
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  const std::string made = "task " + TaskRef(t.id) + " was made, but ";
  if (Status s = ReplaceFileViaSpare(hwm_path_, std::to_string(t.id) + "\n", spare_path_); !s.ok()) {
    LogWarning(made + "its id could not be noted in " + hwm_path_.string() + ": " + s.message());
  }
  for (int64_t b : blockers) {
    auto blocker = FullTaskLocked(b);
    Status s = blocker.ok() ? Status::Ok() : blocker.status();
    if (s.ok()) {
      blocker->blocks.push_back(t.id);
      s = WriteLocked(*blocker);
    }
    if (!s.ok()) LogWarning(made + "task " + TaskRef(b) + " could not list it in its blocks: " + s.message());
  }
  HandOutLocked();
  return t;
}

Status Board::Import(const Task& t) {
  if (t.id < 1 || t.id > kMaxTaskId) return Status::InvalidArgument("task id " + std::to_string(t.id) + " is out of range");
  if (t.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("task #" + std::to_string(t.id) + " has no subject");
  }
  MATES_RETURN_IF_ERROR(CheckTaskMetadataSize(t.metadata_json));
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

TaskLookup Board::LookupLocked() const {
  return [this](int64_t id) -> const Task* {
    if (id < 1 || static_cast<size_t>(id) >= tasks_.size() || !tasks_[id].present) return nullptr;
    return &tasks_[id].task;
  };
}

Result<Task> Board::Update(int64_t id, const TaskPatch& patch, const Caller& caller) {
  // What can be checked without the board comes first.
  MATES_ASSIGN_OR_RETURN(Json metadata_patch, CheckPatch(patch));
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
  auto updated = UpdateLocked(id, patch, caller, metadata_patch);
  HandOutLocked();
  return updated;
}

Result<Task> Board::UpdateLocked(int64_t id, const TaskPatch& patch, const Caller& caller,
                                  const Json& metadata_patch) {
  MATES_ASSIGN_OR_RETURN(Task t, FullTaskLocked(id));
  // Everything is validated before anything is written (store/task_rules.h).
  const TaskLookup lookup = LookupLocked();
  MATES_RETURN_IF_ERROR(CheckUpdateAllowed(t, patch, caller));
  MATES_ASSIGN_OR_RETURN(NewLinks links, CheckNewLinks(t, patch, lookup));
  std::vector<int64_t> dropped;
  MATES_RETURN_IF_ERROR(ApplyPatch(t, patch, metadata_patch, links, caller, lookup, &dropped));
  std::vector<int64_t> ids;
  if (t.status == TaskStatus::kDeleted) {
    for (size_t oid = 1; oid < tasks_.size(); ++oid) {
      if (tasks_[oid].present) ids.push_back(static_cast<int64_t>(oid));
    }
  }
  MATES_ASSIGN_OR_RETURN(std::vector<Task> others,
                         OtherSides(t, links, dropped, ids, lookup, [this](int64_t oid) { return FullTaskLocked(oid); }));
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  for (Task& other : others) MATES_RETURN_IF_ERROR(WriteLocked(other));
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
  std::string why = BlockedReason(t, LookupLocked());
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
  // In id order. Confirming a candidate may change either set (a file read
  // anew), so each step looks up the id after the last instead of
  // following an iterator.
  for (int64_t id = 0;;) {
    auto it = ready_assigned_.upper_bound(id);
    if (it == ready_assigned_.end()) break;
    id = *it;
    const Entry* e = FindLocked(id);
    if (e != nullptr && e->task.status == TaskStatus::kPending && e->task.owner == owner &&
        !BlockedLocked(e->task) && confirmed(id, true)) {
      return id;
    }
  }
  // File leases (DESIGN §30): a ready task whose lease overlaps one in
  // progress waits while another is ready.
  // (The index holds no leases: a task in progress known from it alone
  // is read whole, a file per teammate at work.)
  std::optional<std::vector<std::vector<std::string>>> leases;  // looked up at the first leased candidate
  auto leased = [&]() -> const std::vector<std::vector<std::string>>& {
    if (leases) return *leases;
    leases.emplace();
    for (size_t id = 1; id < tasks_.size(); ++id) {
      const Entry& e = tasks_[id];
      if (!e.present || e.task.status != TaskStatus::kInProgress) continue;
      if (e.full) {
        if (!e.task.paths.empty()) leases->push_back(e.task.paths);
      } else if (auto t = FullTaskLocked(static_cast<int64_t>(id)); t.ok() && !t->paths.empty()) {
        leases->push_back(t->paths);
      }
    }
    return *leases;
  };
  std::optional<int64_t> overlapping;
  for (int64_t id = 0;;) {
    auto it = ready_open_.upper_bound(id);
    if (it == ready_open_.end()) break;
    id = *it;
    Entry* e = FindLocked(id);
    if (e == nullptr || !ClaimableLocked(e->task) || !confirmed(id, false)) continue;
    e = FindLocked(id);  // confirming may have read it anew
    if (e == nullptr || e->task.paths.empty()) return id;
    const std::vector<std::string> mine = e->task.paths;
    const auto& held = leased();
    const bool clashes =
        std::any_of(held.begin(), held.end(), [&](const auto& p) { return LeasesOverlap(p, mine); });
    if (!clashes) return id;
    if (!overlapping) overlapping = id;
  }
  return overlapping;
}

Result<std::optional<int64_t>> Board::NextClaimable(const std::string& owner) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return NextClaimableLocked(owner);
}

void Board::OutlookLocked(const std::string& owner, ClaimOutlook* outlook) const {
  *outlook = ClaimOutlook{};
  for (int64_t id : ready_open_) {
    if (static_cast<size_t>(id) < tasks_.size() && tasks_[id].present && ClaimableLocked(tasks_[id].task)) {
      ++outlook->unowned;
    }
  }
  for (int64_t id : ready_assigned_) {
    if (static_cast<size_t>(id) >= tasks_.size() || !tasks_[id].present) continue;
    const Task& t = tasks_[id].task;
    if (t.status == TaskStatus::kPending && !t.owner.empty() && t.owner != owner &&
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
    bool assigned = false;
    if (auto id = NextClaimableLocked(name)) {
      const Entry* e = FindLocked(*id);
      assigned = e != nullptr && e->task.owner == name;
      auto t = ClaimLocked(*id, name);
      if (t.ok()) {
        task = std::move(*t);
      } else {
        LogWarning("board " + dir_.string() + ": claiming #" + std::to_string(*id) + " for " + name + ": " +
                   t.status().message());
      }
    }
    claimers->Hand(name, std::move(task), assigned);
  }
}

}  // namespace mates
