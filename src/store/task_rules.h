// The rules of a task update (DESIGN §4), for any board: the file board
// (from its index cache, under the board lock) and the PostgreSQL one (a
// team's rows, read under the board's advisory lock) run the same code, so
// the two stores cannot disagree on what an update may do.
//
// An update is checked whole before anything is written: the patch alone
// (CheckPatch), who may change what (CheckUpdateAllowed), the new
// dependencies (CheckNewLinks: real, live, acyclic), then applied to the
// task (ApplyPatch); OtherSides says which other tasks change with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "store/task.h"

namespace mates {

// A task of the board by id, nullptr if there is none. The rules read only
// id, status, owner and blocked_by of the tasks they look up.
using TaskLookup = std::function<const Task*(int64_t id)>;

// A metadata object from a caller, parsed and within its bound.
Result<Json> ParseTaskMetadata(const std::string& text);
// A task's compact metadata within its bound.
Status CheckTaskMetadataSize(const std::string& compact);

// What can be checked without the board (an owner's name, a subject, the
// metadata); the metadata patch parsed (null when the patch has none).
Result<Json> CheckPatch(const TaskPatch& patch);

// "" when every blocker is completed (or deleted), else the reason
// ("#3 (in_progress), #4 (missing)").
std::string BlockedReason(const Task& t, const TaskLookup& lookup);
// Whether `target` is among `from`'s blockers, transitively.
bool DependsOn(int64_t from, int64_t target, const TaskLookup& lookup);

// May `caller` change `t` so: a deleted task is final, a teammate changes
// only its own or unowned tasks, a task being deleted takes no new links.
Status CheckUpdateAllowed(const Task& t, const TaskPatch& patch, const Caller& caller);

// The links a patch adds, each one new, to a live task, without a cycle.
struct NewLinks {
  std::vector<int64_t> blocked_by, blocks;
};
Result<NewLinks> CheckNewLinks(const Task& t, const TaskPatch& patch, const TaskLookup& lookup);

// The patch applied to `t` (not written): fields, merged metadata, new
// links, the status (in_progress only when unblocked; a teammate starting
// an unowned task takes it). A deleted task drops its own links; the ids
// it dropped are added to `dropped`.
Status ApplyPatch(Task& t, const TaskPatch& patch, const Json& metadata_patch, const NewLinks& links,
                  const Caller& caller, const TaskLookup& lookup, std::vector<int64_t>* dropped);

// The other tasks `t`'s update changes, as they are to be written: the
// other side of each new link, and when `t` was deleted, every task that
// still names it (among `dropped` and any whose blocked_by holds it).
// `ids` are the board's tasks; `full` reads one whole (a task that cannot
// be read is skipped when only a deletion touches it).
Result<std::vector<Task>> OtherSides(const Task& t, const NewLinks& links, const std::vector<int64_t>& dropped,
                                     const std::vector<int64_t>& ids, const TaskLookup& lookup,
                                     const std::function<Result<Task>(int64_t)>& full);

}  // namespace mates
