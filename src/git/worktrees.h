// A team's git isolation (DESIGN §12): its target branch, one worktree and
// branch per isolated teammate, and the merge queue's scratch worktree.
//
//   W/.mates/worktrees/<team>/<name>    on mates/<name>@<team>
//   W/.mates/worktrees/<team>/.merge    detached: where merges are checked
//
// A team on a shared store (DESIGN §13) names a git remote every machine
// reaches (TeamGit::remote): the remote's target is the truth, fetched into
// refs/remotes/<remote>/<target> before it is read; a teammate's branch is
// pushed there when it submits, and the merge queue moves the remote's
// target by a compare-and-swap push. Each machine keeps its own W and
// worktrees; only branches travel.
//
// Paths and branches derive from validated names only, never from a file.
// Nothing here deletes work that is not on the target: a worktree is
// removed only when clean and its branch merged, a branch deleted only when
// merged; at the team's end unmerged work is committed to its branch and
// the branch kept.
#pragma once

#include <string>
#include <vector>

#include "core/file_lock.h"
#include "git/git.h"
#include "store/roster.h"
#include "store/workspace.h"

namespace mates::git {

std::string TeammateBranch(const std::string& team, const std::string& name);
fs::path TeammateWorktree(const Workspace& ws, const std::string& team, const std::string& name);
fs::path ScratchWorktree(const Workspace& ws, const std::string& team);
Identity TeammateIdentity(const std::string& team, const std::string& name);
Identity MergeQueueIdentity(const std::string& team);

// Held for every fetch, push and `git worktree add` in W (one at a time
// across teams, threads and processes): a fetch beside an add fails in git
// 2.39, and beside a push that updates the ref it writes (see
// worktrees.cc). Blocks until held.
Result<FileLock> LockRepository(const Workspace& ws);

// Checks W and fills in the target: W must be a git repository with a
// commit; `wanted.target_branch` "" means mates/<team> (created from W's
// HEAD when missing), a name given must exist; a target checked out in W
// needs W clean (mates' own folders aside). With `wanted.remote`, W must
// have that remote and the target is the remote's (mates/<team> pushed
// there from W's branch or HEAD when missing; a name given must be there).
// One clear error each.
Result<TeamGit> PrepareTarget(const Workspace& ws, const std::string& team, TeamGit wanted);

// Whether `branch` is what W has checked out (then merges fast-forward W).
bool CheckedOutInW(const Workspace& ws, const std::string& branch);
// W's uncommitted changes to tracked files, mates' folders aside ("" = clean).
Result<std::string> DirtyFiles(const Git& g);

// `git fetch ARGS` in W under the repository's lock, with the person's
// global config (the remote's credentials), a few tries while another git
// command holds a ref it writes.
Status Fetch(const Workspace& ws, const std::vector<std::string>& args, double timeout_s,
             const CancelToken* cancel = nullptr);

// With a remote: the remote's target fetched (one fetch at a time per team
// in W); nothing to do without one.
Status FetchTarget(const Workspace& ws, const std::string& team, const TeamGit& g);

// The teammate's worktree, made from the target when missing (a branch of
// that name left from before is reused: it holds the teammate's work).
Result<fs::path> EnsureTeammateWorktree(const Workspace& ws, const std::string& team, const std::string& name,
                                        const TeamGit& g);

// Commits everything in the teammate's worktree as "Task #N: subject" by
// the teammate (concluding a merge it was resolving). `ahead` is whether
// its branch has commits the target lacks (there is something to merge).
// The host's own git hashes the files through a private index; a git
// repository inside the worktree is never committed (`left_out`, DESIGN
// §26).
struct Committed {
  std::string commit;
  bool ahead = false;
  std::vector<std::string> left_out;  // embedded repositories, not committed
};
Result<Committed> CommitTeammateWork(const Workspace& ws, const std::string& team, const std::string& name,
                                     int64_t task, const std::string& subject, const TeamGit& g);
// The teammate's worktree as it is now, as a commit on no branch (its
// parent the worktree's HEAD): what the conflict forecast merges in memory
// (DESIGN §30). Staged by the host's own git through `index`, a private
// index kept between calls (so that only files changed since are hashed);
// nothing of the worktree's own index or refs changes. "" when the
// worktree is gone. The same work (files, HEAD, a merge in progress) is
// the same commit each time.
Result<std::string> SnapshotTeammateWork(const Workspace& ws, const std::string& team, const std::string& name,
                                         const fs::path& index);

// With a remote: the teammate's branch pushed there (it is its owner's
// alone: forced), for the merge queue on another machine to fetch.
Status PushTeammateBranch(const Workspace& ws, const std::string& team, const std::string& name, const TeamGit& g);
// With a remote: the submitted branch fetched, so that the commit it names
// is here (FailedPrecondition if the remote does not have it).
Status FetchSubmitted(const Workspace& ws, const TeamGit& g, const std::string& branch, const std::string& commit,
                      const CancelToken* cancel);
// With a remote: its target moved from `old` to `merged` only if it is
// still at `old` (a push with a lease). false: it had moved (fetch and go
// round again); an error: the remote could not be reached or refused.
// `notes_ref` (if it exists here) goes in the same push; `*notes_pushed`
// says whether the remote took it.
Result<bool> PushTarget(const Workspace& ws, const TeamGit& g, const std::string& old, const std::string& merged,
                        const CancelToken* cancel, const std::string& notes_ref = "", bool* notes_pushed = nullptr);

// Brings the target into the teammate's worktree (after its work merged, or
// to show it a conflict). Returns git's exit: 0 merged cleanly, else the
// conflict is left in the files (or git refused: local changes).
Result<GitOutput> MergeTargetInto(const Workspace& ws, const std::string& team, const std::string& name,
                                  const TeamGit& g);

// Before the teammate starts a task: its worktree takes the target's news
// (the work its task depends on was merged there). Only a clean worktree is
// touched, and a merge that would conflict is undone. Returns why it was
// not brought up to date ("" when it was).
std::string RefreshWorktree(const Workspace& ws, const std::string& team, const std::string& name,
                            const TeamGit& g);

// Removes the teammate's worktree if it is clean and merged, and its branch
// if merged. `final` (the team ends): unmerged work is committed to the
// branch, the worktree removed and the branch kept. Returns what was done,
// in words ("" when there was nothing).
std::string CleanUpTeammate(const Workspace& ws, const std::string& team, const std::string& name,
                            const TeamGit& g, bool final);
// The scratch worktree goes; `git worktree prune` after.
void CleanUpScratch(const Workspace& ws, const std::string& team);
// The team ends (TeamDelete, `mates team delete`): every member's worktree
// (CleanUpTeammate, final) and the scratch one. Returns what was kept.
std::vector<std::string> CleanUpTeam(const Workspace& ws, const TeamConfig& team);

}  // namespace mates::git
