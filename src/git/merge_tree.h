// Merges without a checkout (DESIGN §30): `git merge-tree --write-tree`
// (git >= 2.38) merges two commits in the object database, the same merge
// (ort) `git merge` makes, and writes the resulting tree; `commit-tree`
// makes the merge commit. No work tree, no index, no lock on one: the
// merge queue lands a request with a handful of processes, and the
// conflict forecast asks the same question of work still in progress.
#pragma once

#include <string>
#include <vector>

#include "git/git.h"

namespace mates::git {

struct TreeMerge {
  bool clean = false;
  std::string tree;                    // the merged tree (with conflict markers when not clean)
  std::vector<std::string> conflicts;  // files with a conflict, each once
  std::string messages;                // git's words on what it did (a conflict's kind)
};

// `ours` and `theirs` (commit ids) merged in memory. An error when git
// could not merge at all (no common history, an object missing).
Result<TreeMerge> MergeTree(const Git& g, const std::string& ours, const std::string& theirs,
                            const CancelToken* cancel = nullptr);

// The merge commit of `tree` with parents `ours` then `theirs`, by `g`'s
// identity, with `message`; its id.
Result<std::string> CommitMerge(const Git& g, const std::string& tree, const std::string& ours,
                                const std::string& theirs, const std::string& message,
                                const CancelToken* cancel = nullptr);

}  // namespace mates::git
