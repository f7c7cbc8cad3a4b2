// Completing an isolated teammate's task (DESIGN §12): what `TaskUpdate
// status=completed` and `mates tasks update N --status completed` become
// when the task's owner works in its own worktree. The worktree is
// committed, a merge request queued, and the task stays in_progress with
// metadata.merge = the request's id until the merge queue has merged it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "git/merge_hooks.h"
#include "store/board.h"
#include "store/merges.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::git {

struct Submitted {
  MergeRequest request;
  Task task;
  // What the submitter reads.
  std::string text;
};

// nullopt: the owner is not isolated, or its worktree holds nothing the
// target lacks — the task completes as usual. FailedPrecondition: the
// caller may not complete it, or it is already waiting for a merge. The
// team is `store`'s; the worktree is in `ws`, this machine's (with the
// team's remote, its branch is pushed there for the queue to fetch).
Result<std::optional<Submitted>> SubmitForMerge(const Workspace& ws, TeamStore& store, const std::string& team,
                                                int64_t task_id, const Caller& caller);

// The merge request `t` waits on (metadata.merge, still queued, checking
// or in review), if any: such a task is submitted, and there is nothing to
// do for it until it merges or bounces.
std::optional<MergeRequest> WaitingMerge(MergeBook& merges, const Task& t);
// The request `t` was last submitted in, when it came back (conflict,
// failed or rejected): the task is its owner's to fix and complete again.
std::optional<MergeRequest> BouncedMerge(MergeBook& merges, const Task& t);
// The request `t` was last submitted in, when it is merged: the task is
// done, and the queue completes it (a host that stopped between the two
// left it in progress).
std::optional<MergeRequest> LandedMerge(MergeBook& merges, const Task& t);
// A request for `t` by its owner newer than the one its metadata names:
// its host died between making the request and writing its number onto
// the task, which then read as never submitted — done and merged twice.
// Its number is written there now (as its owner); the task as it then is.
// `requests`: the team's, listed here once for many calls. Only a store
// out of reach is an error (to ask again); any other failure leaves `t`
// as it reads, said in the log.
Result<Task> LinkUnrecordedMerge(TaskBoard& board, MergeBook& merges, Task t,
                                 std::optional<std::vector<MergeRequest>>* requests);
// What bounced `m` (a request BouncedMerge returns) in the words of
// merge-queue's message about it: "Task #N: conflict in a.txt", "Task #N:
// merge rejected by lead: add a test", "Task #N: check failed:\n<output>".
std::string BounceLine(const MergeRequest& m);

// A request in review decided by the lead or a person (DESIGN §12): approve
// sends it back to the queue to be merged; reject tells the owner (from
// merge-queue) with the feedback, and raises MergeDecided with `hooks`
// (DESIGN §22). FailedPrecondition unless it is in review.
Result<MergeRequest> DecideMerge(TeamStore& store, const std::string& team, int64_t id, bool approve,
                                 const std::string& feedback, const std::string& by,
                                 const MergeHooks& hooks = {});

}  // namespace mates::git
