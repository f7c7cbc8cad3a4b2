#include "git/provenance.h"

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/names.h"
#include "git/in_process.h"
#include "git/worktrees.h"

namespace mates::git {

namespace {

// Where a remote's notes are fetched to before they are merged into ours.
std::string FetchedNotesRef(const std::string& remote) { return "refs/notes/mates-from-" + remote; }

std::string Why(const GitOutput& r) {
  std::string why = r.err.empty() ? r.out : r.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  if (why.size() > 2000) why = "…" + why.substr(why.size() - 2000);
  return why.empty() ? "exit " + std::to_string(r.exit_code) : why;
}

}  // namespace

Status WriteNote(const Git& g, const std::string& commit, const Json& note) {
  if (!IsCommitId(commit)) return Status::InvalidArgument("a note goes on a commit id");
  const std::string text = DumpJson(note);
  if (text.size() > kMaxNoteBytes) return Status::InvalidArgument("the note is over 1 MiB");
  // `git notes` locks the notes ref: another team's queue in this
  // workspace may hold it for the milliseconds its own note takes.
  auto repo = InProcessRepo::Open(g.dir());
  for (int attempt = 1;; ++attempt) {
    // In this process when libgit2 can (the same note, no process).
    Status here = repo.ok() ? repo->WriteNote(kNotesRef, commit, text, g.who()) : repo.status();
    if (here.ok()) return here;
    if (here.code() == StatusCode::kUnavailable) {
      if (attempt == 5) return Status::FailedPrecondition("git notes add: " + here.message());
      (void)Clock::Real().Sleep(0.02 * attempt, nullptr);
      continue;
    }
    MATES_ASSIGN_OR_RETURN(GitOutput r, g.Run({"notes", "--ref", kNotesRef, "add", "-f", "-m", text, commit},
                                              kGitQuickS));
    if (r.exit_code == 0) return Status::Ok();
    if (attempt == 5 || r.err.find("lock") == std::string::npos) {
      return Status::FailedPrecondition("git notes add: " + Why(r));
    }
    (void)Clock::Real().Sleep(0.02 * attempt, nullptr);
  }
}

Result<Json> ReadNote(const Git& g, const std::string& commit, const std::string& ref) {
  if (!IsCommitId(commit)) return Status::InvalidArgument("a note is read from a commit id");
  MATES_ASSIGN_OR_RETURN(GitOutput r,
                         g.WithOutputCap(kMaxNoteBytes).Run({"notes", "--ref", ref, "show", commit}, kGitQuickS));
  if (r.exit_code != 0) return Status::NotFound("commit " + commit.substr(0, 12) + " has no note under " + ref);
  if (r.out_cut > 0) return Status::FailedPrecondition("the note on " + commit.substr(0, 12) + " is over 1 MiB");
  auto j = ParseJson(r.out);
  if (!j.ok() || !j->is_object()) {
    return Status::FailedPrecondition("the note on " + commit.substr(0, 12) + " under " + ref + " is not mates' JSON");
  }
  return *j;
}

Status FetchNotes(const Workspace& ws, const TeamGit& g, const CancelToken* cancel) {
  if (g.remote.empty()) return Status::Ok();
  MATES_RETURN_IF_ERROR(ValidateName("git remote", g.remote));
  const std::string theirs = FetchedNotesRef(g.remote);
  // The remote may have none yet: nothing to merge then.
  Status fetched = Fetch(ws, {"--quiet", "--no-tags", g.remote, std::string("+") + kNotesRef + ":" + theirs},
                         kGitTreeS, cancel);
  if (!fetched.ok()) {
    if (fetched.message().find("couldn't find remote ref") != std::string::npos) return Status::Ok();
    return fetched;
  }
  Git w(ws.root(), MergeQueueIdentity("notes"));
  MATES_ASSIGN_OR_RETURN(std::string remote_tip, ResolveCommit(w, theirs));
  MATES_ASSIGN_OR_RETURN(std::string ours, ResolveCommit(w, kNotesRef));
  if (remote_tip.empty() || remote_tip == ours) return Status::Ok();
  if (ours.empty()) return w.Ok({"update-ref", kNotesRef, remote_tip, std::string(40, '0')}, kGitQuickS).status();
  // Each note is on its own merge commit: the union never conflicts (and
  // were one to, both texts are kept).
  MATES_ASSIGN_OR_RETURN(GitOutput r, w.Run({"notes", "--ref", kNotesRef, "merge", "--quiet", "-s", "cat_sort_uniq",
                                             theirs},
                                            kGitTreeS, cancel));
  if (r.exit_code != 0) return Status::FailedPrecondition("git notes merge: " + Why(r));
  return Status::Ok();
}

Status PushNotes(const Workspace& ws, const TeamGit& g, const CancelToken* cancel) {
  if (g.remote.empty()) return Status::Ok();
  MATES_RETURN_IF_ERROR(ValidateName("git remote", g.remote));
  Git w(ws.root(), {}, Git::Reach::kRemote);
  for (int attempt = 1;; ++attempt) {
    GitOutput r;
    {
      MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));
      MATES_ASSIGN_OR_RETURN(r, w.Run({"push", "--porcelain", g.remote, std::string(kNotesRef) + ":" + kNotesRef},
                                      kGitTreeS, cancel));
    }
    if (r.exit_code == 0) return Status::Ok();
    if (attempt == 3 || r.out.find("\t[rejected]") == std::string::npos) {
      return Status::FailedPrecondition("git push " + g.remote + " " + kNotesRef + ": " + Why(r));
    }
    // Another machine's queue pushed notes meanwhile: theirs merged into
    // ours, then again.
    MATES_RETURN_IF_ERROR(FetchNotes(ws, g, cancel));
  }
}

}  // namespace mates::git
