// What a teammate's work changes, as a unified diff (DESIGN §27: `mates
// merges show ID --diff`, `mates tasks diff ID`, the page's reviews).
//
// Run by the host's own git (git.h: no config but mates' overrides), with
// external diff drivers and textconv off besides — both are programs a
// repository's attributes or config name — and no colour; the text is
// cut at `max_bytes`, saying so.
#pragma once

#include <string>

#include "core/status.h"
#include "store/merges.h"
#include "store/roster.h"
#include "store/task.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::git {

inline constexpr size_t kMaxDiffBytes = 4u << 20;

// What merge request `m` changes: its commit against the point where it
// left its target — the target commit its check ran on, if it was
// checked, else the target now — from their merge base. NotFound when
// the commit is not in the workspace's repository (another machine's,
// not fetched yet).
Result<std::string> DiffOfMerge(const Workspace& ws, const MergeRequest& m, size_t max_bytes = kMaxDiffBytes);

// What `owner`'s branch has committed that the team's target has not
// (a task not submitted yet). NotFound if the branch is gone.
Result<std::string> DiffOfBranch(const Workspace& ws, const std::string& team, const TeamGit& g,
                                 const std::string& owner, size_t max_bytes = kMaxDiffBytes);

// What task `t` of `team` changed: its latest merge request's diff, else
// (a task not submitted yet) its owner's branch's work. FailedPrecondition
// for a task with no owner yet, or worked on in the shared workspace,
// whose changes are not kept apart (git diff there shows everyone's).
Result<std::string> DiffOfTask(const Workspace& ws, TeamStore& store, const std::string& team, const Task& t,
                               size_t max_bytes = kMaxDiffBytes);

}  // namespace mates::git
