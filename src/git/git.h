// Git: the `git` command, run as a child (argv, never a shell) in one
// repository folder (DESIGN §12). Git >= 2.38 is needed (the merge queue's
// `merge-tree --write-tree`, DESIGN §30).
//
// What a child sees is chosen here, not inherited: an allowlisted
// environment (no API keys; no GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE or
// any other GIT_* variable that could send it to another repository), the
// C locale (its words are parsed), no terminal prompt, hooks off (a hook
// is code from the repository, and mates' own commits are not a person's),
// no signing, and an identity that `Identity` may override per call.
//
// It never runs what a teammate wrote (DESIGN §26): no system config, and
// no global one but for the commands that reach the team's remote
// (Reach::kRemote: credentials, ssh, URL rewriting are the person's);
// fsmonitor, hooks, pagers, editors, filters, diff and merge drivers off
// whatever a config file says; submodules and embedded repositories never
// entered (their own config is a teammate's to write). A teammate's work
// is committed through a private index (worktrees.h), so nothing it wrote
// into its own index or object quarantine reaches history unchecked.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/cancel.h"
#include "core/status.h"

namespace mates::git {

namespace fs = std::filesystem;

struct Identity {
  std::string name = "mates";
  std::string email = "mates@localhost";
  // The author and committer date of what it commits, in git's internal
  // form ("SECONDS +ZONE"); "" = now.
  std::string date;
};

struct GitOutput {
  int exit_code = 0;
  std::string out;
  std::string err;
  size_t out_cut = 0;  // bytes of stdout cut from its middle (past the output cap)
};

// How long a git command may take: one that reads or moves a ref is quick;
// one that writes a tree (checkout, merge, clean, worktree add, push) may
// take minutes on a large repository.
inline constexpr double kGitQuickS = 60;
inline constexpr double kGitTreeS = 600;
inline constexpr double kGitDefaultS = 300;

class Git {
 public:
  // kLocal: the repository alone. kRemote: a command that talks to the
  // team's remote (fetch, push, ls-remote) and needs the person's global
  // config for it; it never touches a work tree.
  enum class Reach { kLocal, kRemote };
  explicit Git(fs::path dir, Identity who = {}, Reach reach = Reach::kLocal)
      : dir_(std::move(dir)), who_(std::move(who)), reach_(reach) {}
  // The same repository with another index file (GIT_INDEX_FILE).
  Git WithIndex(fs::path index) const {
    Git g = *this;
    g.index_ = std::move(index);
    return g;
  }
  // The same with a larger cap on what one command's stdout keeps (4 MiB
  // by default; past it the middle is cut, and GitOutput::out_cut says so).
  Git WithOutputCap(size_t bytes) const {
    Git g = *this;
    g.max_output_ = bytes;
    return g;
  }

  // Any exit code; an error only when git could not be run (or timed out).
  Result<GitOutput> Run(const std::vector<std::string>& args, double timeout_s = kGitDefaultS,
                        const CancelToken* cancel = nullptr) const;
  // Exit 0 required, else FailedPrecondition "git ARGS: <stderr>". Returns
  // stdout without its last newline.
  Result<std::string> Ok(const std::vector<std::string>& args, double timeout_s = kGitDefaultS,
                         const CancelToken* cancel = nullptr) const;

  const fs::path& dir() const { return dir_; }
  const Identity& who() const { return who_; }

 private:
  fs::path dir_;
  Identity who_;
  Reach reach_ = Reach::kLocal;
  fs::path index_;  // "" = the repository's own
  size_t max_output_ = size_t{4} << 20;
};

// FailedPrecondition unless `git` runs and is at least 2.38.
Status CheckGitVersion();
// The top of the work tree holding `dir`; FailedPrecondition "W is not a
// git repository" otherwise.
Result<fs::path> RepoTop(const fs::path& dir);
// The commit a ref names, or "" if it does not exist.
Result<std::string> ResolveCommit(const Git& g, const std::string& ref);
// Whether `s` is a full commit id (SHA-1 or SHA-256, lower-case hex): what
// may be passed to git as a revision when it comes from a file or a store.
bool IsCommitId(const std::string& s);
// Whether `name` is a valid branch name (git check-ref-format --branch).
Status ValidateBranchName(const std::string& name);
// The environment git and merge checks run with (allowlisted, see above).
std::vector<std::string> ChildEnvironment(bool c_locale);

// Where the checkout at `dir` is: HEAD's commit and its branch ("" each
// outside a repository, before a first commit, or for a detached HEAD's
// branch). A session records it when it starts (DESIGN §31).
struct Checkout {
  std::string commit;
  std::string branch;
};
Checkout CheckoutAt(const fs::path& dir);

}  // namespace mates::git
