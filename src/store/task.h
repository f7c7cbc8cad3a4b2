// Task: one file .tasks/<team>/<id>.json (DESIGN §2, §4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace mates {

enum class TaskStatus { kPending, kInProgress, kCompleted, kDeleted };
std::string_view TaskStatusName(TaskStatus s);
Result<TaskStatus> ParseTaskStatus(std::string_view name);
// The same for a status a person or a model typed: also "done" and
// "complete" (completed), "in-progress" and "started" (in_progress).
Result<TaskStatus> ParseTaskStatusAsSaid(std::string_view name);
// A blocker in this state no longer holds its dependents back (DESIGN §4).
inline bool ReleasesDependents(TaskStatus s) {
  return s == TaskStatus::kCompleted || s == TaskStatus::kDeleted;
}

// A change of a task's status or owner, and when (its detail on the
// dashboard: who had it, how long in each state).
struct TaskEvent {
  double at = 0;
  TaskStatus status = TaskStatus::kPending;
  std::string owner;
};
inline constexpr size_t kMaxTaskHistory = 50;  // the latest kept

struct Task {
  int64_t id = 0;
  std::string subject;
  std::string description;
  std::string active_form;
  TaskStatus status = TaskStatus::kPending;
  std::string owner;
  std::vector<int64_t> blocked_by;  // authoritative for claimability
  std::vector<int64_t> blocks;      // the other side, kept consistent
  std::string metadata_json = "{}";
  // Its file lease (DESIGN §30): paths or globs of the workspace it
  // changes; a claim passes over a ready task whose lease overlaps one in
  // progress while another is ready. Empty = none.
  std::vector<std::string> paths;
  double created_at = 0;
  double updated_at = 0;
  std::vector<TaskEvent> history;  // oldest first; written by the stores
};

// Appends the task's status and owner as of its updated_at, if they are
// not what its history says last (the file board, on each write; the
// PostgreSQL store does the same in a trigger).
void NoteHistory(Task* t);

Json TaskToJson(const Task& t);
Result<Task> TaskFromJson(const Json& j);
std::vector<TaskEvent> TaskHistoryFromJson(const Json& h);

// When `owner` held `t` in progress, as [from, to) wall seconds from its
// history (a window still open ends at `until`): whose work it was, when
// (a task's cost, DESIGN §30). Bounded by the history kept.
std::vector<std::pair<double, double>> WorkWindows(const Task& t, const std::string& owner, double until);

// A file lease as given: at most 32 paths or globs (`*`, `?`, `[`), each
// relative to the workspace, without `..`, at most 256 bytes.
inline constexpr size_t kMaxLeasePaths = 32;
Status ValidateLease(const std::vector<std::string>& paths);
// Whether two leases may name one file. Two plain paths overlap when equal
// or one is a folder of the other; with a glob, when the part before its
// first wildcard is a prefix of the other's (conservative: `src/*.h` and
// `src/*.cc` overlap). The PostgreSQL store's claim says the same.
bool LeasesOverlap(const std::vector<std::string>& a, const std::vector<std::string>& b);

// "#3": how messages name a task.
std::string TaskRef(int64_t id);
// NotFound "no task #3", on every board.
Status NoTask(int64_t id);

// What TaskCreate takes.
struct TaskDraft {
  std::string subject;
  std::string description;
  std::string active_form;
  std::vector<int64_t> blocked_by;
  std::string metadata_json;  // "" = {}
  std::vector<std::string> paths;  // its file lease
};

// What TaskUpdate may change; unset fields stay.
struct TaskPatch {
  std::optional<TaskStatus> status;
  std::optional<std::string> owner;
  std::optional<std::string> subject;
  std::optional<std::string> description;
  std::optional<std::string> active_form;
  std::optional<std::string> metadata_json;  // merged; a null value removes a key
  std::optional<std::vector<std::string>> paths;  // the lease, replaced
  std::vector<int64_t> add_blocked_by;
  std::vector<int64_t> add_blocks;
};

// Who asks: the owner rule of DESIGN §4 depends on it.
// What a claim (ClaimNext) left to claim after it, for waking just as many
// idle claimers as there is work (store/claim_line.h).
struct ClaimOutlook {
  int64_t unowned = 0;                   // claimable unowned tasks
  std::vector<std::string> assigned_to;  // others with a claimable task assigned
  // In: how many unowned tasks are worth counting (as many as there are
  // idle claimers to wake). A board whose count costs a walk (PostgreSQL's)
  // stops there; the file board's index counts them all.
  int64_t count_up_to = INT64_MAX;
};

struct Caller {
  std::string name;
  bool is_lead = false;
};

}  // namespace mates
