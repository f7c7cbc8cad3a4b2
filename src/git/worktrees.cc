#include "git/worktrees.h"

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/log.h"
#include "core/names.h"
#include "git/in_process.h"

#include <stdlib.h>

#include <sstream>

namespace mates::git {

namespace {

// The largest index the host copies back into a worktree (a repository of
// a million files has an index of ~100 MiB).
constexpr size_t kMaxIndexBytes = size_t{1} << 30;
// The largest list of a commit's changes the host reads.
constexpr size_t kMaxChangeListing = size_t{64} << 20;

// mates' own folders in W are not the user's changes.
const std::vector<std::string> kNotUserFiles = {":(exclude).teams", ":(exclude).tasks", ":(exclude).mates"};

Result<bool> IsAncestor(const Git& g, const std::string& a, const std::string& b) {
  MATES_ASSIGN_OR_RETURN(GitOutput r, g.Run({"merge-base", "--is-ancestor", a, b}, kGitQuickS));
  if (r.exit_code == 0) return true;
  if (r.exit_code == 1) return false;
  return Status::FailedPrecondition("git merge-base: " + r.err);
}

// One git operation at a time in a teammate's worktree, across threads and
// processes (the owner committing, the queue bringing it the target, a pane
// agent's `mates tasks update`): git's index.lock would fail the second.
Result<FileLock> LockWorktree(const Workspace& ws, const std::string& team, const std::string& name) {
  MATES_RETURN_IF_ERROR(EnsureDir(ws.WorktreesDir(team)));
  return FileLock::Acquire(ws.WorktreesDir(team) / ("." + name + ".lock"));
}

// A teammate's worktree staged by the host's own git (DESIGN §26): into a
// private index made from HEAD, never the worktree's own (the teammate
// writes that one, and the objects it names sit in its quarantine), with
// every file hashed from the worktree by this git. A git repository of its
// own inside the worktree (an embedded one, or a submodule it changed) is
// left out — committing it would point history at a repository whose
// config its author wrote — and named in `left_out`.
struct Staged {
  std::vector<std::string> left_out;
  bool nothing = false;  // no change against HEAD
};

class PrivateIndex {
 public:
  // A folder of the host's own (mkdtemp: 0700, a name nobody guessed), in
  // $TMPDIR or /tmp: never the worktree's admin folder, which the teammate
  // writes.
  PrivateIndex() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec || base.empty()) base = "/tmp";
    std::string dir = (base / "mates-index-XXXXXX").string();  // mkdtemp's template
    if (::mkdtemp(dir.data()) != nullptr) dir_ = dir;
  }
  ~PrivateIndex() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  PrivateIndex(const PrivateIndex&) = delete;
  PrivateIndex& operator=(const PrivateIndex&) = delete;
  bool ok() const { return !dir_.empty(); }
  fs::path file() const { return dir_ / "index"; }

 private:
  fs::path dir_;
};

// What the index `g` names (staged from the worktree) changes from HEAD,
// less any submodule: an embedded repository's gitlink is put back as
// HEAD had it, and said.
Result<Staged> LeaveOutGitlinks(const Git& g) {
  Staged out;
  // ":OLDMODE NEWMODE OLD NEW STATUS\0PATH\0" for each change, read
  // whole: a listing cut in its middle could hide a gitlink, so one too
  // large to read is refused (~600,000 changed files).
  MATES_ASSIGN_OR_RETURN(GitOutput listed, g.WithOutputCap(kMaxChangeListing)
                                               .Run({"diff-index", "--cached", "-z", "--raw", "--no-renames",
                                                     "--ignore-submodules=none", "HEAD"},
                                                    300));
  if (listed.exit_code != 0) return Status::FailedPrecondition("git diff-index: " + listed.err.substr(0, 2000));
  if (listed.out_cut > 0) {
    return Status::FailedPrecondition("the worktree changes more files than the host checks in one commit (a "
                                      "listing over 64 MiB): commit them in parts");
  }
  const std::string& raw = listed.out;
  out.nothing = raw.empty();
  std::vector<std::string> fields;
  for (size_t at = 0, nul; (nul = raw.find('\0', at)) != std::string::npos; at = nul + 1) {
    fields.push_back(raw.substr(at, nul - at));
  }
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    std::istringstream head(fields[i]);
    std::string old_mode, new_mode, old_id, new_id, status;
    head >> old_mode >> new_mode >> old_id >> new_id >> status;
    if (new_mode != ":160000" && new_mode != "160000") continue;
    const std::string& path = fields[i + 1];
    out.left_out.push_back(path);
    if (old_mode == ":000000") {
      MATES_RETURN_IF_ERROR(g.Ok({"update-index", "--force-remove", "--", path}, 120).status());
    } else {
      MATES_RETURN_IF_ERROR(
          g.Ok({"update-index", "--cacheinfo", old_mode.substr(1) + "," + old_id + "," + path}, 120).status());
    }
  }
  if (!out.left_out.empty()) {
    MATES_ASSIGN_OR_RETURN(std::string again,
                           g.Ok({"diff-index", "--cached", "--name-only", "--ignore-submodules=none", "HEAD"}, 300));
    out.nothing = again.empty();
  }
  return out;
}

// The worktree's own index file, from its `.git` file (which only the host
// writes: the sandbox binds it read-only).
Result<fs::path> WorktreeIndex(const fs::path& worktree) {
  MATES_ASSIGN_OR_RETURN(std::string text, ReadFilePrefix(worktree / ".git", 4096));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.rfind("gitdir: ", 0) != 0) return Status::FailedPrecondition(worktree.string() + " is not a linked worktree");
  return fs::path(text.substr(8)) / "index";
}

// Commits the worktree's files as `message` through a private index, then
// makes that index the worktree's own (what the teammate's `git status`
// reads: clean after the commit). "what was left out" is said.
Result<Staged> CommitWorktree(const Git& g, const fs::path& worktree, const std::string& message) {
  PrivateIndex index;
  if (!index.ok()) return Status::FromErrno("mkdtemp for a private index", errno);
  const Git staged_git = g.WithIndex(index.file());
  // In this process but for `add -A` (git's own rules of what a worktree
  // holds: ignore files, embedded repositories), git where libgit2 cannot
  // or a submodule changes (git/in_process.h).
  auto repo = InProcessRepo::Open(worktree);
  if (!repo.ok() || !repo->ReadHeadInto(index.file()).ok()) {
    MATES_RETURN_IF_ERROR(staged_git.Ok({"read-tree", "HEAD"}, 300).status());
  }
  MATES_RETURN_IF_ERROR(staged_git.Ok({"add", "-A", "--", "."}, 300).status());
  auto made = repo.ok() ? repo->CommitIndex(index.file(), g.who(), message) : Result<std::string>(repo.status());
  Staged staged;
  if (made.ok()) {
    staged.nothing = made->empty();
  } else {
    MATES_ASSIGN_OR_RETURN(staged, LeaveOutGitlinks(staged_git));
  }
  if (!made.ok() && !staged.nothing) {
    MATES_ASSIGN_OR_RETURN(GitOutput made, staged_git.Run({"commit", "--quiet", "--no-verify", "-m", message}, 300));
    if (made.exit_code != 0) {
      std::string why = made.err.empty() ? made.out : made.err;
      return Status::FailedPrecondition("git commit: " + why.substr(0, 2000));
    }
  }
  MATES_ASSIGN_OR_RETURN(fs::path own, WorktreeIndex(worktree));
  MATES_ASSIGN_OR_RETURN(std::string bytes, ReadFilePrefix(index.file(), kMaxIndexBytes));
  MATES_RETURN_IF_ERROR(WriteFileAtomic(own, bytes));
  return staged;
}

// `git rev-list -n 1 HEAD ^TARGET` in this process: false when libgit2
// could not say.
bool AheadInProcess(const fs::path& worktree, const std::string& target, std::string* ahead) {
  auto repo = InProcessRepo::Open(worktree);
  if (!repo.ok()) return false;
  auto head = repo->Resolve("HEAD");
  auto at = repo->Resolve(target);
  if (!head.ok() || !at.ok() || head->empty() || at->empty()) return false;
  auto in = repo->IsAncestor(*head, *at);
  if (!in.ok()) return false;
  *ahead = *in ? "" : *head;
  return true;
}

}  // namespace

// A git command that is not ours (a teammate's own `git fetch` or
// `worktree add`, the user's) can still meet the fetch — a worktree being
// added, or a ref it updates locked: those two failures are retried, three
// tries in all, after 50 and 100 ms (the other command's lock is held for
// milliseconds). A cancel ends the wait.

Status Fetch(const Workspace& ws, const std::vector<std::string>& args, double timeout_s, const CancelToken* cancel) {
  MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));
  Git w(ws.root(), {}, Git::Reach::kRemote);
  std::vector<std::string> argv = {"fetch"};
  argv.insert(argv.end(), args.begin(), args.end());
  for (int attempt = 1;; ++attempt) {
    Status fetched = w.Ok(argv, timeout_s, cancel).status();
    const std::string& why = fetched.message();
    if (fetched.ok() || attempt == 3 ||
        (why.find("bad object worktrees/") == std::string::npos && why.find("cannot lock ref") == std::string::npos)) {
      return fetched;
    }
    LogDebug("git fetch met another git command; again: " + why);
    if (Clock::Real().Sleep(0.05 * attempt, cancel)) return Status::Cancelled("git fetch cancelled");
  }
}

namespace {

// The remote's tip of `branch`, "" when it has none.
Result<std::string> RemoteTip(const Git& g, const std::string& remote, const std::string& branch) {
  const Git remote_git(g.dir(), {}, Git::Reach::kRemote);
  MATES_ASSIGN_OR_RETURN(std::string out,
                         remote_git.Ok({"ls-remote", "--heads", remote, "refs/heads/" + branch}, 300));
  size_t tab = out.find('\t');
  return tab == std::string::npos ? std::string() : out.substr(0, tab);
}

Result<TeamGit> PrepareRemoteTarget(const Workspace& ws, const std::string& team, const Git& g,
                                    const std::string& head, TeamGit wanted) {
  MATES_RETURN_IF_ERROR(ValidateName("git remote", wanted.remote));
  MATES_ASSIGN_OR_RETURN(GitOutput url, g.Run({"remote", "get-url", wanted.remote}, 30));
  if (url.exit_code != 0) {
    return Status::FailedPrecondition(
        "the workspace " + ws.root().string() + " has no git remote '" + wanted.remote +
        "': a team on a shared store needs a remote that every machine fetches from and pushes to (git remote add " +
        wanted.remote + " URL, or name another with --git-remote)");
  }
  const bool named = !wanted.target_branch.empty();
  if (!named) wanted.target_branch = "mates/" + team;
  MATES_RETURN_IF_ERROR(ValidateBranchName(wanted.target_branch));
  MATES_ASSIGN_OR_RETURN(std::string there, RemoteTip(g, wanted.remote, wanted.target_branch));
  if (there.empty()) {
    if (named) {
      return Status::NotFound("the target branch '" + wanted.target_branch + "' is not on the remote '" +
                              wanted.remote + "' (push it there first)");
    }
    MATES_ASSIGN_OR_RETURN(std::string local, ResolveCommit(g, "refs/heads/" + wanted.target_branch));
    Result<std::string> pushed = std::string();
    {
      MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));
      pushed = Git(g.dir(), {}, Git::Reach::kRemote).Ok({"push", "--quiet", wanted.remote,
                     (local.empty() ? head : local) + ":refs/heads/" + wanted.target_branch},
                    300);
    }
    if (!pushed.ok()) {
      // Another machine may have made it meanwhile: that one is the team's.
      auto again = RemoteTip(g, wanted.remote, wanted.target_branch);
      if (!again.ok() || again->empty()) return pushed.status();
    }
  }
  MATES_RETURN_IF_ERROR(FetchTarget(ws, team, wanted));
  return wanted;
}

}  // namespace

// Fetches, pushes and worktree adds in W, one at a time across teams,
// threads and processes. Two fetches would race for the refs they update
// (and FETCH_HEAD); a push updates the remote-tracking ref of what it
// pushed, which a fetch of that branch writes too ("cannot lock ref"). And
// `git worktree add` first writes the new worktree's HEAD as forty zeros,
// then the real commit, while a fetch that brings objects checks them
// against every worktree's HEAD: beside an add it fails with "bad object
// worktrees/<name>/HEAD" (git 2.39).
Result<FileLock> LockRepository(const Workspace& ws) {
  const fs::path dir = ws.root() / ".mates" / "worktrees";
  MATES_RETURN_IF_ERROR(EnsureDir(dir));
  return FileLock::Acquire(dir / ".repository.lock");
}

// Not mates/<team>/<name>: git cannot hold that beside the target
// mates/<team> (a ref cannot be a file and a folder). '@' is in no name,
// so no two (team, name) pairs share a branch; it reads like an agent id.
std::string TeammateBranch(const std::string& team, const std::string& name) {
  return "mates/" + name + "@" + team;
}

fs::path TeammateWorktree(const Workspace& ws, const std::string& team, const std::string& name) {
  return ws.WorktreesDir(team) / name;
}

fs::path ScratchWorktree(const Workspace& ws, const std::string& team) { return ws.WorktreesDir(team) / ".merge"; }

Identity TeammateIdentity(const std::string& team, const std::string& name) {
  return {name, name + "@" + team + ".mates"};
}

Identity MergeQueueIdentity(const std::string& team) { return {"mates merge queue", "merge-queue@" + team + ".mates"}; }

Result<std::string> DirtyFiles(const Git& g) {
  std::vector<std::string> args = {"status", "--porcelain", "--untracked-files=no", "--", "."};
  args.insert(args.end(), kNotUserFiles.begin(), kNotUserFiles.end());
  return g.Ok(args, 120);
}

bool CheckedOutInW(const Workspace& ws, const std::string& branch) {
  // W's HEAD file read as git would (the queue asks at every merge, and a
  // process costs milliseconds): `.git` a folder, or a file naming one
  // (W a worktree itself); git asked when the file says something else.
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
  };
  std::error_code ec;
  fs::path git_dir = ws.root() / ".git";
  if (fs::is_regular_file(git_dir, ec)) {
    auto pointer = ReadFilePrefix(git_dir, 4096);
    std::string p = pointer.ok() ? trim(*pointer) : "";
    git_dir = p.rfind("gitdir: ", 0) == 0 ? fs::path(p.substr(8)) : fs::path();
    if (git_dir.is_relative() && !git_dir.empty()) git_dir = ws.root() / git_dir;
  }
  if (!git_dir.empty()) {
    auto text = ReadFilePrefix(git_dir / "HEAD", 4096);
    if (text.ok() && text->rfind("ref: ", 0) == 0) return trim(text->substr(5)) == "refs/heads/" + branch;
    if (text.ok() && IsCommitId(trim(*text))) return false;  // detached
  }
  auto head = Git(ws.root()).Run({"symbolic-ref", "--quiet", "HEAD"}, 30);
  if (!head.ok() || head->exit_code != 0) return false;
  std::string h = head->out;
  if (!h.empty() && h.back() == '\n') h.pop_back();
  return h == "refs/heads/" + branch;
}

Result<TeamGit> PrepareTarget(const Workspace& ws, const std::string& team, TeamGit wanted) {
  MATES_RETURN_IF_ERROR(CheckGitVersion());
  MATES_ASSIGN_OR_RETURN(fs::path top, RepoTop(ws.root()));
  std::error_code ec;
  if (!fs::equivalent(top, ws.root(), ec)) {
    return Status::FailedPrecondition("the workspace " + ws.root().string() + " is inside the git repository " +
                                      top.string() + " but not its top; run mates from " + top.string());
  }
  Git g(ws.root());
  MATES_ASSIGN_OR_RETURN(std::string head, ResolveCommit(g, "HEAD"));
  if (head.empty()) {
    return Status::FailedPrecondition("the git repository " + ws.root().string() +
                                      " has no commit yet; commit something first");
  }
  if (!wanted.remote.empty()) return PrepareRemoteTarget(ws, team, g, head, std::move(wanted));
  if (wanted.target_branch.empty()) {
    wanted.target_branch = "mates/" + team;
    MATES_RETURN_IF_ERROR(ValidateBranchName(wanted.target_branch));
    MATES_ASSIGN_OR_RETURN(std::string existing, ResolveCommit(g, "refs/heads/" + wanted.target_branch));
    if (existing.empty()) {
      MATES_RETURN_IF_ERROR(g.Ok({"branch", "--no-track", wanted.target_branch, head}, kGitQuickS).status());
    }
  } else {
    MATES_RETURN_IF_ERROR(ValidateBranchName(wanted.target_branch));
    MATES_ASSIGN_OR_RETURN(std::string existing, ResolveCommit(g, "refs/heads/" + wanted.target_branch));
    if (existing.empty()) {
      return Status::NotFound("the target branch '" + wanted.target_branch + "' does not exist in " +
                              ws.root().string());
    }
  }
  if (CheckedOutInW(ws, wanted.target_branch)) {
    MATES_ASSIGN_OR_RETURN(std::string dirty, DirtyFiles(g));
    if (!dirty.empty()) {
      return Status::FailedPrecondition("the target branch '" + wanted.target_branch +
                                        "' is checked out in the workspace, which has uncommitted changes:\n" +
                                        dirty + "\ncommit or stash them (merges fast-forward this checkout)");
    }
  }
  return wanted;
}

Status FetchTarget(const Workspace& ws, const std::string& team, const TeamGit& g) {
  if (g.remote.empty() || !g.configured()) return Status::Ok();
  // Both from the team's config, which another machine may have written:
  // a name and a branch, or no refspec is built of them.
  MATES_RETURN_IF_ERROR(ValidateName("git remote", g.remote));
  MATES_RETURN_IF_ERROR(ValidateBranchName(g.target_branch));
  Status fetched =
      Fetch(ws, {"--quiet", "--no-tags", g.remote, "+refs/heads/" + g.target_branch + ":" + g.target_ref()}, 300);
  if (fetched.ok()) return fetched;
  Git w(ws.root());
  // A machine that joins the team without the remote: said plainly.
  auto url = w.Run({"remote", "get-url", g.remote}, 30);
  if (url.ok() && url->exit_code != 0) {
    return Status::FailedPrecondition("the workspace " + ws.root().string() + " has no git remote '" + g.remote +
                                      "', through which team '" + team + "' shares its work (git remote add " +
                                      g.remote + " URL, with the URL the team's other machines use)");
  }
  return fetched;
}

Result<fs::path> EnsureTeammateWorktree(const Workspace& ws, const std::string& team, const std::string& name,
                                        const TeamGit& tg) {
  fs::path path = TeammateWorktree(ws, team, name);
  std::error_code ec;
  Git g(ws.root());
  if (fs::exists(path / ".git", ec)) return path;
  MATES_RETURN_IF_ERROR(EnsureDir(path.parent_path()));
  MATES_RETURN_IF_ERROR(FetchTarget(ws, team, tg));
  const std::string target = tg.target_ref();
  const std::string branch = TeammateBranch(team, name);
  MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));
  auto add = [&]() -> Status {
    MATES_ASSIGN_OR_RETURN(std::string existing, ResolveCommit(g, "refs/heads/" + branch));
    if (existing.empty()) return g.Ok({"worktree", "add", "--quiet", "-b", branch, path.string(), target}, 300).status();
    return g.Ok({"worktree", "add", "--quiet", path.string(), branch}, 300).status();
  };
  Status added = add();
  if (!added.ok()) {
    // A worktree folder removed by hand stays registered until pruned.
    // (Never pruned unasked: a prune beside another `worktree add` can drop
    // the entry that one is making.)
    (void)g.Run({"worktree", "prune"}, kGitQuickS);
    MATES_RETURN_IF_ERROR(add());
  }
  return path;
}

Result<Committed> CommitTeammateWork(const Workspace& ws, const std::string& team, const std::string& name,
                                     int64_t task, const std::string& subject, const TeamGit& tg) {
  fs::path path = TeammateWorktree(ws, team, name);
  std::error_code ec;
  if (!fs::exists(path / ".git", ec)) {
    return Status::FailedPrecondition("the worktree of '" + name + "' (" + path.string() + ") is gone");
  }
  // What is merged already is not submitted again.
  MATES_RETURN_IF_ERROR(FetchTarget(ws, team, tg));
  MATES_ASSIGN_OR_RETURN(FileLock lock, LockWorktree(ws, team, name));
  Git g(path, TeammateIdentity(team, name));
  std::string message = "Task #" + std::to_string(task) + ": " + subject;
  MATES_ASSIGN_OR_RETURN(Staged staged, CommitWorktree(g, path, message));
  // The newest commit of the branch the target lacks (HEAD itself), if any.
  std::string ahead;
  if (!AheadInProcess(path, tg.target_ref(), &ahead)) {
    MATES_ASSIGN_OR_RETURN(ahead, g.Ok({"rev-list", "-n", "1", "HEAD", "^" + tg.target_ref()}, 120));
  }
  Committed c;
  c.commit = ahead;
  c.ahead = !ahead.empty();
  c.left_out = std::move(staged.left_out);
  return c;
}

Result<std::string> SnapshotTeammateWork(const Workspace& ws, const std::string& team, const std::string& name,
                                         const fs::path& index) {
  const fs::path path = TeammateWorktree(ws, team, name);
  std::error_code ec;
  if (!fs::exists(path / ".git", ec)) return std::string();
  // A fixed date: the same work is the same commit, and a pair of
  // snapshots merged once is not merged again (a pane agent's worktree is
  // snapshotted every second while it works).
  Identity who = TeammateIdentity(team, name);
  who.date = "1000000000 +0000";
  const Git g = Git(path, who).WithIndex(index);
  // A new index starts from HEAD; then `add -A` makes it the worktree's
  // files whatever it held (a kept one only rehashes what changed).
  if (!fs::exists(index, ec)) MATES_RETURN_IF_ERROR(g.Ok({"read-tree", "HEAD"}, kGitTreeS).status());
  MATES_RETURN_IF_ERROR(g.Ok({"add", "-A", "--", "."}, kGitTreeS).status());
  MATES_ASSIGN_OR_RETURN(std::string tree, g.Ok({"write-tree"}, kGitTreeS));
  // A merge it is resolving is the snapshot's second parent: its files
  // hold what that merge brings (else they would read as conflicting with
  // it again).
  std::vector<std::string> args = {"commit-tree", tree, "-p", "HEAD"};
  if (auto own = WorktreeIndex(path); own.ok()) {
    auto merging = ReadFilePrefix(own->parent_path() / "MERGE_HEAD", 4096);
    std::string id = merging.ok() ? merging->substr(0, merging->find('\n')) : "";
    if (IsCommitId(id)) args.insert(args.end(), {"-p", id});
  }
  args.insert(args.end(), {"-m", "mates: " + name + "'s work in progress"});
  MATES_ASSIGN_OR_RETURN(std::string commit, g.Ok(args, kGitQuickS));
  if (!IsCommitId(commit)) return Status::FailedPrecondition("git commit-tree wrote no commit");
  return commit;
}

Status PushTeammateBranch(const Workspace& ws, const std::string& team, const std::string& name, const TeamGit& g) {
  if (g.remote.empty()) return Status::Ok();
  const std::string branch = TeammateBranch(team, name);
  MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));  // the push updates remotes/<remote>/<branch> too
  return Git(ws.root(), {}, Git::Reach::kRemote)
      .Ok({"push", "--quiet", "--force", g.remote, "refs/heads/" + branch + ":refs/heads/" + branch}, kGitTreeS)
      .status();
}

Status FetchSubmitted(const Workspace& ws, const TeamGit& g, const std::string& branch, const std::string& commit,
                      const CancelToken* cancel) {
  if (!IsCommitId(commit)) return Status::FailedPrecondition("'" + commit + "' is not a commit id");
  if (g.remote.empty()) return Status::Ok();  // W's own branch: the merge says if it is not there
  Git w(ws.root());
  auto here = [&] {
    auto r = w.Run({"cat-file", "-e", commit + "^{commit}"}, kGitQuickS, cancel);
    return r.ok() && r->exit_code == 0;
  };
  if (here()) return Status::Ok();  // its owner works on this machine
  MATES_RETURN_IF_ERROR(ValidateBranchName(branch));
  MATES_RETURN_IF_ERROR(
      Fetch(ws,
            {"--quiet", "--no-tags", g.remote, "+refs/heads/" + branch + ":refs/remotes/" + g.remote + "/" + branch},
            kGitTreeS, cancel));
  if (!here()) {
    return Status::FailedPrecondition("commit " + commit.substr(0, 10) + " is not on " + g.remote + "/" + branch +
                                      " (its owner's machine has pushed another since, or could not push it)");
  }
  return Status::Ok();
}

Result<bool> PushTarget(const Workspace& ws, const TeamGit& g, const std::string& old, const std::string& merged,
                        const CancelToken* cancel, const std::string& notes_ref, bool* notes_pushed) {
  if (notes_pushed != nullptr) *notes_pushed = false;
  MATES_RETURN_IF_ERROR(ValidateName("git remote", g.remote));
  MATES_RETURN_IF_ERROR(ValidateBranchName(g.target_branch));
  if (!IsCommitId(old) || !IsCommitId(merged)) return Status::InvalidArgument("a target moves between commit ids");
  const std::string dst = "refs/heads/" + g.target_branch;
  Git w(ws.root(), {}, Git::Reach::kRemote);
  // The push and the update-ref write the target's remote-tracking ref,
  // which a fetch of the target writes too.
  MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));
  std::vector<std::string> argv = {"push", "--porcelain", "--force-with-lease=" + dst + ":" + old, g.remote,
                                   merged + ":" + dst};
  // The provenance notes (DESIGN §30) in the same push, when there are
  // any: they travel with the target. The two refs are not one
  // transaction: notes the remote refused (another machine added some)
  // leave the target moved, and PushNotes merges and pushes them after.
  if (!notes_ref.empty()) {
    auto notes = ResolveCommit(w, notes_ref);
    if (notes.ok() && !notes->empty()) argv.push_back(notes_ref + ":" + notes_ref);
  }
  MATES_ASSIGN_OR_RETURN(GitOutput r, w.Run(argv, 300, cancel));
  // Porcelain: "<flag>\t<from>:<to>\t<summary>" per ref; "!" refused.
  auto refused = [&](const std::string& to) {
    for (size_t at = 0; (at = r.out.find(":" + to + "\t", at)) != std::string::npos; ++at) {
      size_t line = r.out.rfind('\n', at);
      line = line == std::string::npos ? 0 : line + 1;
      if (r.out.compare(line, 2, "!\t") == 0) return true;
    }
    return false;
  };
  const bool target_moved = r.out.find(":" + dst + "\t") != std::string::npos && !refused(dst);
  if (r.exit_code == 0 || target_moved) {
    // Seen here at once (the next fetch would say the same).
    (void)w.Run({"update-ref", g.target_ref(), merged}, kGitQuickS);
    if (notes_pushed != nullptr) *notes_pushed = r.exit_code == 0 && argv.size() == 6;
    return true;
  }
  if (refused(dst)) return false;  // moved meanwhile (stale info)
  std::string why = r.err.empty() ? r.out : r.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (why.size() > 2000) why = "…" + why.substr(why.size() - 2000);
  return Status::FailedPrecondition("git push " + g.remote + " " + dst + ": " + why);
}

Result<GitOutput> MergeTargetInto(const Workspace& ws, const std::string& team, const std::string& name,
                                  const TeamGit& tg) {
  MATES_ASSIGN_OR_RETURN(FileLock lock, LockWorktree(ws, team, name));
  Git g(TeammateWorktree(ws, team, name), TeammateIdentity(team, name));
  MATES_ASSIGN_OR_RETURN(GitOutput ff, g.Run({"merge", "--ff-only", "--quiet", tg.target_ref()}, 300));
  if (ff.exit_code == 0) return ff;
  return g.Run({"merge", "--no-edit", "--quiet", "-m", "Merge " + tg.target_name(), tg.target_ref()}, 300);
}

std::string RefreshWorktree(const Workspace& ws, const std::string& team, const std::string& name,
                            const TeamGit& tg) {
  Git g(TeammateWorktree(ws, team, name), TeammateIdentity(team, name));
  Status fetched = FetchTarget(ws, team, tg);
  if (!fetched.ok()) return "could not fetch it: " + fetched.message();
  const std::string target = tg.target_ref();
  {
    // The usual case in one run: nothing of its own unmerged, so the target
    // fast-forwards it (git refuses when a local change would be touched).
    auto lock = LockWorktree(ws, team, name);
    if (auto repo = InProcessRepo::Open(g.dir()); repo.ok()) {
      auto ff = repo->FastForward(target, "merge " + target + ": Fast-forward");
      if (ff.ok() && *ff) return "";
    }
    auto ff = g.Run({"merge", "--ff-only", "--quiet", target}, 300);
    if (ff.ok() && ff->exit_code == 0) return "";
  }
  auto dirty = g.Ok({"status", "--porcelain", "--untracked-files=no"}, 120);
  if (!dirty.ok()) return dirty.status().message();
  if (!dirty->empty()) return "it has uncommitted changes";
  auto merged = MergeTargetInto(ws, team, name, tg);
  if (!merged.ok()) return merged.status().message();
  if (merged->exit_code != 0) {
    auto lock = LockWorktree(ws, team, name);
    (void)g.Run({"merge", "--abort"}, kGitQuickS);
    return "merging " + tg.target_name() + " into it would conflict with your unmerged work";
  }
  return "";
}

std::string CleanUpTeammate(const Workspace& ws, const std::string& team, const std::string& name,
                            const TeamGit& tg, bool final) {
  Git w(ws.root());
  // What the remote merged counts (an outage: judged on what was fetched).
  (void)FetchTarget(ws, team, tg);
  const fs::path path = TeammateWorktree(ws, team, name);
  const std::string branch = TeammateBranch(team, name);
  std::error_code ec;
  auto tip = ResolveCommit(w, "refs/heads/" + branch);
  if (!tip.ok()) return "";
  bool has_tree = fs::exists(path / ".git", ec);
  if (tip->empty() && !has_tree) return "";
  auto lock = LockWorktree(ws, team, name);
  Git g(path, TeammateIdentity(team, name));
  std::string dirty;
  if (has_tree) {
    auto st = g.Ok({"status", "--porcelain"}, 120);
    if (!st.ok()) return "kept " + path.string() + " (" + st.status().message() + ")";
    dirty = *st;
    if (!dirty.empty() && final) {
      // Nothing is thrown away: the team ends, the work goes on its branch.
      auto made = CommitWorktree(g, path, "mates: unmerged work of " + name + ", kept when team " + team + " ended");
      if (!made.ok()) return "kept " + path.string() + " (could not commit its changes: " + made.status().message() + ")";
      dirty.clear();
      tip = ResolveCommit(w, "refs/heads/" + branch);
      if (!tip.ok()) return "kept " + path.string();
    }
  }
  bool merged = false;
  if (!tip->empty()) {
    auto m = IsAncestor(w, *tip, tg.target_ref());
    merged = m.ok() && *m;
  }
  if (!dirty.empty()) return "kept " + path.string() + " (uncommitted changes)";
  if (!merged && !final) return "kept " + path.string() + " (work on " + branch + " not merged)";
  if (has_tree) {
    auto removed = w.Ok({"worktree", "remove", "--force", path.string()}, 300);
    if (!removed.ok()) return "kept " + path.string() + " (" + removed.status().message() + ")";
  }
  if (!merged) return "kept branch " + branch + " (work not merged)";
  if (!tip->empty()) {
    auto deleted = w.Ok({"branch", "-D", "--quiet", branch}, kGitQuickS);
    if (!deleted.ok()) return "kept branch " + branch + " (" + deleted.status().message() + ")";
    if (!tg.remote.empty()) {
      // Its copy on the remote too, unless it moved since (its owner
      // pushed more from another machine).
      auto lock = LockRepository(ws);
      auto gone = Git(ws.root(), {}, Git::Reach::kRemote).Run({"push", "--quiet", "--force-with-lease=refs/heads/" + branch + ":" + *tip, tg.remote,
                         ":refs/heads/" + branch},
                        300);
      if (!gone.ok() || gone->exit_code != 0) LogDebug("kept " + tg.remote + "/" + branch + " on the remote");
    }
  }
  return "";
}

void CleanUpScratch(const Workspace& ws, const std::string& team) {
  Git w(ws.root());
  fs::path scratch = ScratchWorktree(ws, team);
  std::error_code ec;
  if (fs::exists(scratch, ec)) {
    auto r = w.Ok({"worktree", "remove", "--force", scratch.string()}, 300);
    if (!r.ok()) {
      LogDebug("merge scratch: " + r.status().message());
      fs::remove_all(scratch, ec);
    }
  }
  (void)w.Run({"worktree", "prune"}, kGitQuickS);
  // The worktrees' lock files go with the last worktree.
  bool trees_left = false;
  std::vector<fs::path> locks;
  for (const auto& e : fs::directory_iterator(ws.WorktreesDir(team), ec)) {
    std::string n = e.path().filename().string();
    if (n.size() > 6 && n[0] == '.' && n.ends_with(".lock")) {
      locks.push_back(e.path());
    } else {
      trees_left = true;
    }
  }
  if (!trees_left) {
    for (const auto& l : locks) fs::remove(l, ec);
  }
  fs::remove(ws.WorktreesDir(team), ec);  // only if empty
}

std::vector<std::string> CleanUpTeam(const Workspace& ws, const TeamConfig& team) {
  std::vector<std::string> kept;
  if (!team.git.configured()) return kept;
  for (const auto& m : team.members) {
    if (m.role == MemberRole::kLead) continue;
    std::string k = CleanUpTeammate(ws, team.name, m.name, team.git, /*final=*/true);
    if (!k.empty()) kept.push_back(k);
  }
  CleanUpScratch(ws, team.name);
  return kept;
}

}  // namespace mates::git
