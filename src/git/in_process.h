// Git in this process (libgit2) for the merge queue's hot steps (DESIGN
// §30): where a landed merge used to cost six git processes (4–8 ms each
// on a slow machine), it costs none when its two sides change different
// files. Everything here is a shortcut with the `git` command behind it:
// a repository libgit2 cannot open as git would (a SHA-256 one, an
// extension it does not know), or a merge that is not a plain union of
// two sides' changes, is an error (or nullopt) here, and the caller runs
// git as before. Nothing that only git decides (conflicts, renames, directory
// renames) is decided here.
//
// libgit2 runs no program a repository names: no hooks, fsmonitor, filter
// or merge drivers, pagers or signing programs (it has none of them
// without the embedding program registering one, and mates registers
// none), and no system, global or XDG config is read — what git.h's
// overrides make the `git` command do.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "git/git.h"

struct git_repository;

namespace mates::git {

class InProcessRepo {
 public:
  // The repository (or linked worktree) at `dir`. FailedPrecondition when
  // libgit2 cannot take it: the caller uses the `git` command.
  static Result<InProcessRepo> Open(const fs::path& dir);
  InProcessRepo(InProcessRepo&&) noexcept;
  InProcessRepo& operator=(InProcessRepo&&) noexcept;
  ~InProcessRepo();

  // The commit `ref` names (a full ref, "HEAD", or an id), "" if none —
  // `git rev-parse --verify --quiet REF^{commit}`.
  Result<std::string> Resolve(const std::string& ref);
  // Whether `ancestor` is `commit` or one of its ancestors —
  // `git merge-base --is-ancestor`.
  Result<bool> IsAncestor(const std::string& ancestor, const std::string& commit);
  // The tree of `ours` and `theirs` merged, when it is the union of two
  // sides' changes since their one merge base: `theirs` adds and changes
  // files only, none of them a submodule, and `ours` touches none of
  // those paths, nor a folder or file in their way, nor deletes anything
  // when `theirs` adds a file (git could find a folder renamed there).
  // nullopt otherwise: git merges it (git/merge_tree.h).
  Result<std::optional<std::string>> MergeUnion(const std::string& ours, const std::string& theirs);
  // A commit of `tree` with `parents` by `who`, as `git commit-tree -m`
  // makes it (the message ends with a newline); no ref moves.
  Result<std::string> CommitTree(const std::string& tree, const std::vector<std::string>& parents,
                                 const Identity& who, const std::string& message);
  // `text` as the note on `commit` under `notes_ref`, replacing one there
  // (`git notes --ref R add -f -m TEXT`); Unavailable while another
  // process holds the notes ref's lock.
  Status WriteNote(const std::string& notes_ref, const std::string& commit, const std::string& text,
                   const Identity& who);
  // The index file `index` made HEAD's tree, stat data empty (`git
  // read-tree HEAD` with GIT_INDEX_FILE=index).
  Status ReadHeadInto(const fs::path& index);
  // `index` (a file) committed onto HEAD, moving HEAD's branch, as `git
  // commit -m MESSAGE` with GIT_INDEX_FILE=index by `who` makes it (the
  // message's whitespace cleaned as git cleans it): its id, or "" when the
  // index holds HEAD's tree. FailedPrecondition, and nothing written, when
  // it changes a submodule (git decides what is left out, worktrees.h), a
  // merge is under way (MERGE_HEAD: git's commit has two parents), HEAD
  // moved meanwhile, or libgit2 cannot.
  // With FastForward, WriteNote and MoveRef: a lock file of what it writes
  // that is older than this process or than 30 s, a killed host's, is
  // removed first (the caller is that thing's one mates writer: under the
  // worktree's lock, or the lead's host's queue).
  Result<std::string> CommitIndex(const fs::path& index, const Identity& who, const std::string& message);
  // HEAD's branch fast-forwarded to the commit `target` names, its files
  // and index with it, as `git merge --ff-only TARGET` does: true when done
  // (or HEAD is there already). false, with nothing changed, when it is no
  // fast-forward, a local change or an untracked file is in the way, a
  // merge is under way or HEAD is detached: git decides, and says why.
  Result<bool> FastForward(const std::string& target, const std::string& message);
  // `ref` moved from `old` to `now` if it is still at `old` (`git
  // update-ref -m MESSAGE REF NOW OLD`): false when it was not, or its
  // lock was held.
  Result<bool> MoveRef(const std::string& ref, const std::string& now, const std::string& old,
                       const std::string& message);

 private:
  explicit InProcessRepo(git_repository* r) : repo_(r) {}
  git_repository* repo_ = nullptr;
};

}  // namespace mates::git
