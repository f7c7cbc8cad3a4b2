#include "git/diffs.h"

#include "git/git.h"
#include "git/worktrees.h"

namespace mates::git {
namespace {

// `to` against the merge base of `from` and `to`.
Result<std::string> DiffFromBase(const Git& g, const std::string& from, const std::string& to, size_t max_bytes) {
  MATES_ASSIGN_OR_RETURN(GitOutput base, g.Run({"merge-base", from, to}, kGitQuickS));
  if (base.exit_code != 0) {
    return Status::NotFound("no common history between " + from + " and " + to + ": " + base.err);
  }
  std::string mb = base.out.substr(0, base.out.find('\n'));
  if (!IsCommitId(mb)) return Status::Internal("git merge-base said: " + base.out);
  MATES_ASSIGN_OR_RETURN(GitOutput d, g.WithOutputCap(max_bytes)
                                          .Run({"diff", "--no-ext-diff", "--no-textconv", "--no-color",
                                                "--find-renames", mb, to, "--"},
                                               kGitDefaultS));
  if (d.exit_code != 0) return Status::Internal("git diff failed: " + d.err);
  if (d.out_cut > 0) d.out += "\n[… " + std::to_string(d.out_cut) + " bytes of the diff left out]\n";
  return d.out;
}

}  // namespace

Result<std::string> DiffOfMerge(const Workspace& ws, const MergeRequest& m, size_t max_bytes) {
  if (!IsCommitId(m.commit)) return Status::InvalidArgument("merge request " + std::to_string(m.id) + " names no commit");
  MATES_ASSIGN_OR_RETURN(fs::path top, RepoTop(ws.root()));
  Git g(top);
  MATES_ASSIGN_OR_RETURN(std::string have, ResolveCommit(g, m.commit));
  if (have.empty()) {
    return Status::NotFound("commit " + m.commit.substr(0, 10) + " of merge request " + std::to_string(m.id) +
                            " is not in this repository");
  }
  std::string from = m.checked_on;
  if (!IsCommitId(from)) {
    MATES_RETURN_IF_ERROR(ValidateBranchName(m.target));
    MATES_ASSIGN_OR_RETURN(from, ResolveCommit(g, "refs/heads/" + m.target));
    if (from.empty()) {
      MATES_ASSIGN_OR_RETURN(from, ResolveCommit(g, "refs/remotes/" + m.target));
    }
    if (from.empty()) return Status::NotFound("its target " + m.target + " is not in this repository");
  }
  return DiffFromBase(g, from, m.commit, max_bytes);
}

Result<std::string> DiffOfBranch(const Workspace& ws, const std::string& team, const TeamGit& tg,
                                 const std::string& owner, size_t max_bytes) {
  MATES_ASSIGN_OR_RETURN(fs::path top, RepoTop(ws.root()));
  Git g(top);
  const std::string branch = TeammateBranch(team, owner);
  MATES_ASSIGN_OR_RETURN(std::string tip, ResolveCommit(g, "refs/heads/" + branch));
  if (tip.empty()) return Status::NotFound("the branch " + branch + " is gone");
  MATES_ASSIGN_OR_RETURN(std::string target, ResolveCommit(g, "refs/heads/" + tg.target_branch));
  if (target.empty() && !tg.remote.empty()) {
    MATES_ASSIGN_OR_RETURN(target, ResolveCommit(g, "refs/remotes/" + tg.target_name()));
  }
  if (target.empty()) return Status::NotFound("the target " + tg.target_name() + " is not in this repository");
  return DiffFromBase(g, target, tip, max_bytes);
}

Result<std::string> DiffOfTask(const Workspace& ws, TeamStore& store, const std::string& team, const Task& t,
                               size_t max_bytes) {
  MATES_ASSIGN_OR_RETURN(std::vector<MergeRequest> merges, store.Merges(team)->List());
  const MergeRequest* latest = nullptr;
  for (const auto& m : merges) {
    if (m.task == t.id && (latest == nullptr || m.id > latest->id)) latest = &m;
  }
  if (latest != nullptr) return DiffOfMerge(ws, *latest, max_bytes);
  const std::string task = "task #" + std::to_string(t.id);
  if (t.owner.empty()) return Status::FailedPrecondition(task + " has no owner yet: nothing was changed for it");
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store.LoadTeam(team));
  const Member* owner = c.Find(t.owner);
  if (owner == nullptr || !owner->worktree || !c.git.configured()) {
    return Status::FailedPrecondition(task + " was worked on in the shared workspace, where its changes are not "
                                      "kept apart from the others' (`git diff` there shows them all)");
  }
  return DiffOfBranch(ws, team, c.git, t.owner, max_bytes);
}

}  // namespace mates::git
