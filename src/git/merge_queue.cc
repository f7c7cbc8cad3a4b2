#include "git/merge_queue.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/clock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "core/sha256.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "git/git.h"
#include "git/in_process.h"
#include "git/merge_tree.h"
#include "git/provenance.h"
#include "git/queue_steps.h"
#include "git/submit.h"
#include "git/worktrees.h"
#include "store/board.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"

namespace mates::git {

namespace {

constexpr int kCasAttempts = 8;

fs::path ChecksJournal(const Workspace& ws, const std::string& team) {
  return ws.AgentsDir(team) / "merge-queue.procs";
}

// The scratch worktree, detached at `base`, clean (ignored files such as
// build outputs stay: checks build incrementally). `known`: this queue
// made or moved it before (no half-done merge of an older mates in it).
Status MoveScratch(const Workspace& ws, const std::string& team, const std::string& base, bool known,
                   const CancelToken* cancel) {
  Git w(ws.root());
  fs::path scratch = ScratchWorktree(ws, team);
  std::error_code ec;
  if (!fs::exists(scratch / ".git", ec)) {
    fs::remove_all(scratch, ec);
    MATES_RETURN_IF_ERROR(EnsureDir(scratch.parent_path()));
    MATES_ASSIGN_OR_RETURN(FileLock lock, LockRepository(ws));
    Status added = w.Ok({"worktree", "add", "--quiet", "--detach", scratch.string(), base}, kGitTreeS, cancel).status();
    if (added.ok()) return added;
    (void)w.Run({"worktree", "prune"}, kGitQuickS, cancel);  // registered, but its folder was gone
    return w.Ok({"worktree", "add", "--quiet", "--detach", scratch.string(), base}, kGitTreeS, cancel).status();
  }
  Git s(scratch);
  if (!known) (void)s.Run({"merge", "--abort"}, kGitQuickS, cancel);
  MATES_RETURN_IF_ERROR(s.Ok({"checkout", "--quiet", "--force", "--detach", base}, kGitTreeS, cancel).status());
  return s.Ok({"clean", "-ffdq"}, kGitTreeS, cancel).status();
}

// After the remote's target moved from `old` to `merged`: W's own branch
// of that name follows when it was at `old` (checked out: fast-forwarded
// if clean). Not being able to is no error: the remote's is the team's.
void FollowTarget(const Workspace& ws, const std::string& target, const std::string& old, const std::string& merged) {
  Git w(ws.root());
  if (CheckedOutInW(ws, target)) {
    auto head = ResolveCommit(w, "HEAD");
    auto dirty = DirtyFiles(w);
    if (head.ok() && *head == old && dirty.ok() && dirty->empty()) {
      (void)w.Run({"merge", "--ff-only", "--quiet", merged}, kGitTreeS);
    }
    return;
  }
  auto here = ResolveCommit(w, "refs/heads/" + target);
  if (here.ok() && (*here == old || here->empty())) {
    (void)w.Run({"update-ref", "refs/heads/" + target, merged, here->empty() ? std::string(40, '0') : old}, kGitQuickS);
  }
}

// A request's subject as the lead hears it (the request file may come from
// another machine, with a subject of up to a megabyte).
constexpr size_t kNoticeSubjectBytes = 200;
// Requests already in review told one by one to a lead taking a team up;
// the rest by id only, at most kMoreReviewIds of them.
constexpr size_t kReviewReminders = 20;
constexpr size_t kMoreReviewIds = 200;

// What the lead hears of a request waiting for its review.
std::string ReviewNotice(const MergeRequest& m, const std::string& target, bool checked) {
  return "Merge request " + std::to_string(m.id) + " (task #" + std::to_string(m.task) + " \"" +
         CutUtf8(m.subject, kNoticeSubjectBytes) + "\" by " + m.owner + ") merges cleanly onto " +
         target + (checked ? " and passed its check" : "") +
         "; it waits for your review: MergeReview{id: " + std::to_string(m.id) +
         ", approve: true|false, feedback}.";
}

}  // namespace

namespace queue {

std::string Tail(const std::string& s) {
  constexpr size_t kOutputTail = 3000;
  if (s.size() <= kOutputTail) return s;
  return "…" + s.substr(s.size() - kOutputTail);
}

void QueueAgain(TeamStore& store, const std::string& team, int64_t id) {
  (void)store.Merges(team)->Update(id, [](MergeRequest& r) {
    if (r.status == MergeState::kChecking) r.status = MergeState::kQueued;
    return Status::Ok();
  });
}

void NoteTarget(TeamStore& store, const std::string& team, const std::string& at, const std::string& moving_to) {
  (void)store.UpdateTeam(team, [&](TeamConfig& c) {
    if (!at.empty()) c.git.target_at = at;
    c.git.target_moving_to = moving_to;
    return Status::Ok();
  });
}

}  // namespace queue

using queue::NoteTarget;
using queue::QueueAgain;
using queue::Tail;

MergeQueue::MergeQueue(TeamStore& store, Options options) : options_(std::move(options)), store_(&store) {
  thread_ = std::thread([this] {
    NameThisThread("mates-merges");
    RunGuarded("the merge queue", [this] { Main(); });
  });
}

MergeQueue::~MergeQueue() { Stop(); }

void MergeQueue::Stop() {
  stop_.store(true);
  cancel_.Cancel(CancelToken::kForGood);
  waker_->Notify();
  if (thread_.joinable()) thread_.join();
}

bool MergeQueue::Busy() {
  if (processing_.load()) return true;
  if (held_.load()) return false;
  const std::string team = options_.team();
  auto list = store_->Merges(team)->List();
  if (!list.ok()) return false;
  for (const auto& m : *list) {
    if (m.status == MergeState::kQueued || m.status == MergeState::kChecking) return true;
  }
  return false;
}

std::optional<MergeRequest> MergeQueue::Next(const std::string& team) {
  auto list = store_->Merges(team)->List();
  if (!list.ok()) return std::nullopt;
  for (auto& m : *list) {
    if (m.status == MergeState::kQueued || m.status == MergeState::kChecking) return std::move(m);
  }
  return std::nullopt;
}

void MergeQueue::Main() {
  std::optional<std::string> watched;  // the team taken up
  std::unique_ptr<Hold> sub;
  while (!stop_.load()) {
    const std::string team = options_.team();
    if (!watched || team != *watched) {  // (no team yet: "")
      watched = team;
      sub.reset();
      if (!team.empty()) {
        processing_.store(true);
        // What a dead host's checks left running goes before any new one.
        (void)ProcessJournal(ChecksJournal(options_.ws, team)).KillLeftovers();
        auto s = store_->WatchMerges(team, waker_);
        if (s.ok()) sub = std::move(*s);
        RemindOfReviews(team);
        CompleteMergedTasks(team);
      }
      processing_.store(false);
      if (options_.on_change) options_.on_change();
    }
    uint64_t g = waker_->generation();
    if (auto next = Next(team)) {
      processing_.store(true);
      const int64_t id = next->id;
      const double taken = WallSeconds();
      check_s_ = 0;
      // Several waiting: a train of them, merged in memory one onto the
      // next and checked once (DESIGN §30); else the one.
      std::vector<int64_t> ids;
      if (auto cars = Train(team, *next); !cars.empty()) ids = RunTrain(team, std::move(cars));
      if (ids.empty()) {
        Process(team, std::move(*next));
        ids = {id};
        if (one_by_one_ > 0) --one_by_one_;
      }
      processing_.store(false);
      for (int64_t done : ids) {
        if (!options_.on_processed) break;
        if (auto now = store_->Merges(team)->Get(done); now.ok()) {
          options_.on_processed(team, *now, taken, WallSeconds(), check_s_);
        }
      }
      if (options_.on_change) options_.on_change();  // whoever saw us busy looks again
      // Held: `mates merges resume` (another process) is seen within a second.
      if (held_.load()) waker_->WaitChange(g, DeadlineIn(1.0));
      continue;
    }
    held_.store(false);
    // The team can change under us (TeamCreate): look again now and then.
    waker_->WaitChange(g, DeadlineIn(sub != nullptr ? 2.0 : 0.5));
  }
}

void MergeQueue::CompleteMergedTasks(const std::string& team) {
  auto list = store_->Merges(team)->List();
  auto cfg = store_->LoadTeam(team);
  if (!list.ok() || !cfg.ok()) return;
  std::unique_ptr<MergeBook> merges = store_->Merges(team);
  std::unique_ptr<TaskBoard> board = store_->Board(team);
  for (const auto& m : *list) {
    if (m.status != MergeState::kMerged) continue;
    auto t = board->Get(m.task);
    if (!t.ok() || t->status != TaskStatus::kInProgress) continue;
    auto landed = LandedMerge(*merges, *t);
    if (!landed || landed->id != m.id) continue;
    TaskPatch p;
    p.status = TaskStatus::kCompleted;
    auto done = board->Update(m.task, p, Caller{cfg->lead, true});
    LogInfo("merge queue: task #" + std::to_string(m.task) + " was merged (request " + std::to_string(m.id) +
            ") by a host that stopped before it completed it: " + (done.ok() ? "completed" : done.status().message()));
  }
}

void MergeQueue::RemindOfReviews(const std::string& team) {
  if (!options_.tell_lead) return;
  auto list = store_->Merges(team)->List();
  if (!list.ok()) return;
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok()) return;
  size_t told = 0, more = 0;
  std::string more_ids;
  for (const auto& m : *list) {
    if (m.status != MergeState::kReview) continue;
    if (told < kReviewReminders) {
      options_.tell_lead(ReviewNotice(m, m.target.empty() ? cfg->git.target_branch : m.target,
                                      !cfg->git.merge_check.empty()));
      ++told;
      continue;
    }
    if (++more <= kMoreReviewIds) more_ids += (more_ids.empty() ? "" : ", ") + std::to_string(m.id);
  }
  if (more > 0) {
    options_.tell_lead(std::to_string(more) + " more merge requests wait for your review: " +
                       more_ids + (more > kMoreReviewIds ? ", …" : "") + " (`mates merges --team " +
                       team + " show ID` shows one; MergeReview decides it).");
  }
}

void MergeQueue::Process(const std::string& team, MergeRequest m) {
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok()) {
    LogWarning("merge queue: " + cfg.status().message());
    waker_->WaitChange(waker_->generation(), DeadlineIn(1.0));
    return;
  }
  TeamGit tg = cfg->git;
  // Only the team's own target is watched: a request made for an earlier
  // one goes there as it is.
  const bool watched = m.target.empty() || m.target == tg.target_branch;
  if (!m.target.empty()) tg.target_branch = m.target;
  Git w(options_.ws.root(), MergeQueueIdentity(team));
  // Where the target was found first: the first merge goes onto it (the
  // compare-and-swap sends it round again if it moved since).
  std::string found;
  if (watched && FoundHeld(team, tg, w, &found)) return;
  if (Take(team, tg, m) == Step::kDone) return;
  if (!Gate(team, m)) return;
  std::string last_error;
  for (int attempt = 0; attempt < kCasAttempts && !stop_.load(); ++attempt) {
    const bool first_look = attempt == 0 && !found.empty() && tg.remote.empty();
    if (Status fetched = first_look ? Status::Ok() : FetchTarget(options_.ws, team, tg); !fetched.ok()) {
      last_error = fetched.message();
      waker_->WaitChange(waker_->generation(), DeadlineIn(1.0));
      continue;
    }
    auto old = first_look ? Result<std::string>(found) : ResolveCommit(w, tg.target_ref());
    if (!old.ok() || old->empty()) {
      Bounce(team, m, MergeState::kFailed, "the target branch '" + tg.target_name() + "' is gone", {});
      return;
    }
    if (watched && Held(team, *old)) {
      // Moved while this one was taken: it waits, queued, for the resume.
      held_.store(true);
      QueueAgain(*store_, team, m.id);
      return;
    }
    if (LandedAlready(team, tg, w, m, *old)) return;
    std::string merged;
    if (m.approved && IsCommitId(m.merged_commit) && m.checked_on == *old) {
      merged = m.merged_commit;  // approved as checked, and the target has not moved
    } else if (MergeAndCheck(team, tg, m, *old, &merged) == Step::kDone) {
      return;
    }
    // Its provenance before it lands: no landed merge lacks one.
    auto now = store_->Merges(team)->Get(m.id);
    if (Status noted = WriteNote(w, merged, Provenance(team, tg, now.ok() ? *now : m, *old, merged)); !noted.ok()) {
      if (stop_.load()) return;
      Bounce(team, m, MergeState::kFailed, "could not record the merge's provenance: " + noted.message(), {});
      return;
    }
    if (watched) NoteTarget(*store_, team, /*at=*/"", /*moving_to=*/merged);
    switch (MoveTarget(team, tg, m, *old, merged, &last_error)) {
      case Moved::kMoved:
        if (watched) NoteTarget(*store_, team, /*at=*/merged, /*moving_to=*/"");
        PushNotesAfter(tg, "merge request " + std::to_string(m.id));
        Finish(team, m, *old, merged);
        return;
      case Moved::kBounced:
        return;
      case Moved::kUnreachable:
        waker_->WaitChange(waker_->generation(), DeadlineIn(1.0));
        break;
      case Moved::kRaced:
        // The target moved: round again on the new one (an approval
        // stands; the merge is checked again since what it was checked on
        // is gone).
        break;
    }
  }
  if (!stop_.load()) {
    Bounce(team, m, MergeState::kFailed,
           last_error.empty() ? "the target kept moving while merging" : "could not move the target: " + last_error,
           {});
  }
}

bool MergeQueue::FoundHeld(const std::string& team, const TeamGit& tg, Git& w, std::string* found) {
  if (!tg.configured() || !FetchTarget(options_.ws, team, tg).ok()) return false;
  auto at = ResolveCommit(w, tg.target_ref());
  if (at.ok()) *found = *at;
  held_.store(!found->empty() && Held(team, *found));
  return held_.load();
}

void MergeQueue::PushNotesAfter(const TeamGit& tg, const std::string& what) {
  if (notes_pushed_) return;
  if (Status pushed = PushNotes(options_.ws, tg, &cancel_); !pushed.ok() && !stop_.load()) {
    LogWarning("merge queue: the provenance of " + what + " is here but not on " + tg.remote +
               " yet (it goes with the next): " + pushed.message());
  }
}

bool MergeQueue::Gate(const std::string& team, MergeRequest& m) {
  // An approved request passed it on its way to review.
  if (m.approved) return true;
  hooks::Outcome gate = RaiseMergeHook(merge_hooks(), hooks::Event::kMergeQueued, team, m);
  if (gate.ran > 0) {
    auto noted = store_->Merges(team)->Update(m.id, [&](MergeRequest& r) {
      r.hooks = {HookRun{"MergeQueued", gate.ran, gate.blocked}};
      return Status::Ok();
    });
    if (noted.ok()) m = *noted;
  }
  if (!gate.blocked) return true;
  Bounce(team, m, MergeState::kFailed, gate.reason, {}, "refused by a MergeQueued hook");
  return false;
}

MergeQueue::Step MergeQueue::Take(const std::string& team, const TeamGit& tg, MergeRequest& m) {
  const std::string& target = tg.target_branch;
  if (target.empty()) {
    Bounce(team, m, MergeState::kFailed, "the team has no target branch (it is not set up for worktrees)", {});
    return Step::kDone;
  }
  if (Status valid = ValidateBranchName(target); !valid.ok()) {
    Bounce(team, m, MergeState::kFailed, valid.message(), {});
    return Step::kDone;
  }
  auto taken = store_->Merges(team)->Update(m.id, [](MergeRequest& r) {
    if (!MergeOpen(r.status) || r.status == MergeState::kReview) {
      return Status::FailedPrecondition("no longer queued");
    }
    r.status = MergeState::kChecking;
    return Status::Ok();
  });
  if (!taken.ok()) return Step::kDone;
  m = *taken;
  if (options_.on_change) options_.on_change();
  // The request names its owner's branch and commit; neither is trusted
  // to be a name or an id until checked (another machine wrote it).
  if (Status named = ValidateName("member name", m.owner); !named.ok() || m.branch != TeammateBranch(team, m.owner)) {
    Bounce(team, m, MergeState::kFailed, "the request names no branch of a member: " + m.branch, {});
    return Step::kDone;
  }
  if (Status here = FetchSubmitted(options_.ws, tg, m.branch, m.commit, &cancel_); !here.ok()) {
    if (stop_.load()) return Step::kDone;
    Bounce(team, m, MergeState::kFailed, "could not get the work to merge: " + here.message(), {});
    return Step::kDone;
  }
  return Step::kGoOn;
}

MergeQueue::Step MergeQueue::MergeAndCheck(const std::string& team, const TeamGit& tg, const MergeRequest& m,
                                           const std::string& old, std::string* merged) {
  // In memory (DESIGN §30): no checkout unless a check needs one.
  Git w(options_.ws.root(), MergeQueueIdentity(team));
  auto tm = MergeTree(w, old, m.commit, &cancel_);
  if (stop_.load()) return Step::kDone;
  if (!tm.ok()) {
    Bounce(team, m, MergeState::kFailed, "git merge: " + tm.status().message(), {});
    return Step::kDone;
  }
  if (!tm->clean) {
    if (tm->conflicts.empty()) {
      Bounce(team, m, MergeState::kFailed, "git merge: " + Tail(tm->messages), {});
    } else {
      Bounce(team, m, MergeState::kConflict, Tail(tm->messages), tm->conflicts);
    }
    return Step::kDone;
  }
  auto made = CommitMerge(w, tm->tree, old, m.commit,
                          "Merge task #" + std::to_string(m.task) + ": " + m.subject + " (" + m.owner + ")", &cancel_);
  if (stop_.load()) return Step::kDone;
  if (!made.ok()) {
    Bounce(team, m, MergeState::kFailed, "the merge made no commit: " + made.status().message(), {});
    return Step::kDone;
  }
  *merged = *made;
  std::string output;
  if (!tg.merge_check.empty() && RunCheck(team, tg, m, *merged, &output) == Step::kDone) return Step::kDone;
  if (!tg.merge_review || m.approved) return Step::kGoOn;
  auto held = store_->Merges(team)->Update(m.id, [&](MergeRequest& req) {
    req.status = MergeState::kReview;
    req.merged_commit = *merged;
    req.checked_on = old;
    req.output = output;
    return Status::Ok();
  });
  if (options_.on_change) options_.on_change();
  if (held.ok() && options_.tell_lead) {
    options_.tell_lead(ReviewNotice(*held, tg.target_branch, !tg.merge_check.empty()));
  }
  return Step::kDone;
}

MergeQueue::Checked MergeQueue::Check(const std::string& team, const TeamGit& tg, const std::string& commit) {
  Checked c;
  // The one scratch worktree, moved from the last merge checked to this
  // one: git rewrites the files that differ (and ignored build outputs
  // stay, so checks build incrementally).
  const fs::path scratch = ScratchWorktree(options_.ws, team);
  Status moved = MoveScratch(options_.ws, team, commit, /*known=*/scratch_ready_, &cancel_);
  scratch_ready_ = moved.ok();
  if (stop_.load()) return c;
  if (!moved.ok()) {
    c.kind = Checked::kNotRun;
    c.text = "could not prepare the check: " + moved.message();
    return c;
  }
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", tg.merge_check};
  o.env = ChildEnvironment(/*c_locale=*/false);
  o.cwd = scratch.string();
  o.timeout_s = tg.merge_timeout_s;
  o.merge_stderr = true;
  o.tag = NewProcessTag();
  // Listed while it runs: a host killed mid-check leaves the next one what
  // to kill.
  const ProcessJournal procs(ChecksJournal(options_.ws, team));
  // It runs code a model wrote: in the sandbox, writing only the scratch
  // worktree (no ref, not the target).
  auto confined = options_.sandbox->Wrap({scratch, team, "merge-queue"}, std::move(o));
  if (!confined.ok()) {
    c.kind = Checked::kNotRun;
    c.text = "could not start the check in its sandbox: " + confined.status().message();
    return c;
  }
  const auto check_started = SteadyClock::now();
  auto ran = RunListed(confined->options, &procs, &cancel_);
  check_s_ = std::chrono::duration<double>(SteadyClock::now() - check_started).count();
  if (!ran.ok()) {
    c.kind = Checked::kNotRun;
    c.text = "could not start the check: " + ran.status().message();
    return c;
  }
  const SubprocessResult& cr = *ran;
  if (cr.cancelled || stop_.load()) return c;  // the next host checks it again
  c.run.command = tg.merge_check;
  c.run.commit = commit;
  c.run.exit_code = cr.exit_code;
  c.run.signal = cr.term_signal;
  c.run.timed_out = cr.timed_out;
  c.run.duration_s = check_s_;
  c.run.output_sha256 = Sha256Hex(cr.out);
  c.output = Tail(cr.out);
  if (!cr.timed_out && cr.exit_code == 0 && cr.term_signal == 0) {
    c.kind = Checked::kPassed;
    return c;
  }
  std::string why = cr.timed_out ? "timed out after " + std::to_string(static_cast<int>(tg.merge_timeout_s)) + " s"
                    : cr.term_signal != 0 ? "killed by signal " + std::to_string(cr.term_signal)
                                          : "exit code " + std::to_string(cr.exit_code);
  c.kind = Checked::kFailed;
  c.text = c.output + (c.output.empty() || c.output.back() == '\n' ? "" : "\n") + "[" + why + "]";
  return c;
}

MergeQueue::Step MergeQueue::RunCheck(const std::string& team, const TeamGit& tg, const MergeRequest& m,
                                      const std::string& merged, std::string* output) {
  Checked c = Check(team, tg, merged);
  if (c.kind == Checked::kInterrupted) return Step::kDone;
  if (c.kind == Checked::kNotRun) {
    Bounce(team, m, MergeState::kFailed, c.text, {});
    return Step::kDone;
  }
  (void)NoteCheck(team, m.id, c.run);
  *output = c.output;
  if (c.kind == Checked::kPassed) return Step::kGoOn;
  Bounce(team, m, MergeState::kFailed, c.text, {});
  return Step::kDone;
}

Result<MergeRequest> MergeQueue::NoteCheck(const std::string& team, int64_t id, const CheckRun& run) {
  return store_->Merges(team)->Update(id, [&](MergeRequest& r) {
    r.checks = {run};
    return Status::Ok();
  });
}

bool MergeQueue::Held(const std::string& team, const std::string& found) {
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok() || !cfg->git.configured()) return false;
  const TeamGit& g = cfg->git;
  if (g.held()) return true;
  if (found == g.target_at && g.target_moving_to.empty()) return false;
  if (found == g.target_at || found == g.target_moving_to || g.target_at.empty()) {
    // Where this queue left it (or was leaving it when its host died), or
    // the first look at it.
    (void)store_->UpdateTeam(team, [&](TeamConfig& c) {
      c.git.target_at = found;
      c.git.target_moving_to.clear();
      return Status::Ok();
    });
    return false;
  }
  const std::string was = g.target_at;
  auto held = store_->UpdateTeam(team, [&](TeamConfig& c) {
    c.git.held_found = found;
    c.git.held_since = WallSeconds();
    return Status::Ok();
  });
  const std::string text =
      "The target " + g.target_name() + " was moved outside the merge queue: the queue left it at " +
      was.substr(0, 12) + ", it is at " + found.substr(0, 12) +
      " now. Merging onto it has stopped (no merge lands on work no check has seen); the requests wait, "
      "queued. Look at what moved it (git log " + g.target_name() + "), then `mates merges --team " + team +
      " resume` merges onto it as it is now.";
  LogWarning("merge queue: " + text);
  if (held.ok() && options_.tell_lead) options_.tell_lead(text);
  if (options_.on_change) options_.on_change();
  return true;
}

MergeQueue::Moved MergeQueue::MoveTarget(const std::string& team, const TeamGit& tg, const MergeRequest& m,
                                         const std::string& old, const std::string& merged,
                                         std::string* last_error) {
  const Workspace& ws = options_.ws;
  const std::string& target = tg.target_branch;
  Git w(ws.root(), MergeQueueIdentity(team));
  // Only from `old`, so a target moved by anyone meanwhile sends us round
  // again.
  if (!tg.remote.empty()) {
    auto pushed = PushTarget(ws, tg, old, merged, &cancel_, kNotesRef, &notes_pushed_);
    if (!pushed.ok()) {
      *last_error = pushed.status().message();
      return Moved::kUnreachable;
    }
    if (!*pushed) return Moved::kRaced;
    FollowTarget(ws, target, old, merged);
    return Moved::kMoved;
  }
  if (CheckedOutInW(ws, target)) {
    auto head = ResolveCommit(w, "HEAD");
    auto dirty = DirtyFiles(w);
    if (dirty.ok() && !dirty->empty()) {
      Bounce(team, m, MergeState::kFailed,
             "the target " + target + " is checked out in the workspace, which has uncommitted changes now:\n" +
                 *dirty + "\n(commit or stash them there; then complete the task again)",
             {});
      return Moved::kBounced;
    }
    if (!head.ok() || *head != old) return Moved::kRaced;
    auto ff = w.Run({"merge", "--ff-only", "--quiet", merged}, kGitTreeS, &cancel_);
    return ff.ok() && ff->exit_code == 0 ? Moved::kMoved : Moved::kRaced;
  }
  const std::string why = "mates: merge task #" + std::to_string(m.task);
  if (auto repo = InProcessRepo::Open(w.dir()); repo.ok()) {
    if (auto moved = repo->MoveRef("refs/heads/" + target, merged, old, why); moved.ok()) {
      return *moved ? Moved::kMoved : Moved::kRaced;
    }
  }
  auto cas = w.Run({"update-ref", "-m", why, "refs/heads/" + target, merged, old}, kGitQuickS, &cancel_);
  return cas.ok() && cas->exit_code == 0 ? Moved::kMoved : Moved::kRaced;
}

bool MergeQueue::LandedAlready(const std::string& team, const TeamGit& tg, Git& w, const MergeRequest& m,
                               const std::string& old) {
  // Under review, only an approved request lands as it is (its host was
  // killed after the move): another request's merge may have brought in
  // this one's commit, and this one is still reviewed on its own.
  if (tg.merge_review && !m.approved) return false;
  auto repo = InProcessRepo::Open(w.dir());
  auto in_here = repo.ok() ? repo->IsAncestor(m.commit, old) : Result<bool>(repo.status());
  if (in_here.ok() && !*in_here) return false;
  if (!in_here.ok()) {
    auto in = w.Run({"merge-base", "--is-ancestor", m.commit, old}, kGitQuickS, &cancel_);
    if (!in.ok() || in->exit_code != 0) return false;
  }
  // The merge that brought it in, among the target's last 1,000.
  std::string onto = old, merged = old;
  auto listed = w.Run({"rev-list", "--first-parent", "--parents", "--max-count=1000", old}, kGitTreeS, &cancel_);
  std::istringstream lines(listed.ok() && listed->exit_code == 0 ? listed->out : "");
  bool found = false;
  for (std::string line; !found && std::getline(lines, line);) {
    std::istringstream ids(line);
    std::string commit, first_parent, other;
    ids >> commit >> first_parent;
    while (!found && ids >> other) found = other == m.commit;
    if (found) {
      merged = commit;
      onto = first_parent;
    }
  }
  LogInfo("merge queue: request " + std::to_string(m.id) + " (task #" + std::to_string(m.task) + ") is on " +
          tg.target_name() + " already, in " + merged.substr(0, 12) + ": landed as it is");
  if (ReadNote(w, merged).status().code() == StatusCode::kNotFound) {
    if (Status noted = WriteNote(w, merged, Provenance(team, tg, m, onto, merged)); !noted.ok()) {
      LogWarning("merge queue: the provenance of request " + std::to_string(m.id) + ": " + noted.message());
    }
  }
  if (Status pushed = PushNotes(options_.ws, tg, &cancel_); !pushed.ok() && !stop_.load()) {
    LogWarning("merge queue: the provenance of request " + std::to_string(m.id) + " is here but not on " +
               tg.remote + " yet (it goes with the next): " + pushed.message());
  }
  Finish(team, m, onto, merged);
  return true;
}

Json MergeQueue::Provenance(const std::string& team, const TeamGit& tg, const MergeRequest& m,
                            const std::string& onto, const std::string& merged) {
  Json checks = Json::array();
  for (const CheckRun& c : m.checks) checks.push_back(CheckRunToJson(c));
  Json hooks = Json::array();
  for (const HookRun& h : m.hooks) hooks.push_back(HookRunToJson(h));
  // Who let it land: the queue alone, or a reviewer — the lead, or a
  // person (the page, `mates merges approve`).
  Json decided = {{"by", kMergeQueueName}, {"as", "queue"}};
  if (m.approved) {
    auto cfg = store_->LoadTeam(team);
    const bool lead = cfg.ok() && m.decided_by == cfg->lead;
    decided = {{"by", m.decided_by}, {"as", lead ? "lead" : "person"}};
  }
  const sandbox::Settings& box = options_.sandbox->settings();
  Json note = {{"mates", "merge/1"},
               {"team", team},
               {"merge_request", m.id},
               {"task", {{"id", m.task}, {"subject", m.subject}}},
               {"agent", m.owner},
               {"target", tg.target_name()},
               {"base", onto},
               {"head", m.commit},
               {"merged", merged},
               {"checks", std::move(checks)},
               {"sandbox", {{"mode", sandbox::ModeName(options_.sandbox->mode())},
                            {"policy", options_.sandbox->on() ? sandbox::PolicyDigest(box) : "none"}}},
               {"hooks", std::move(hooks)},
               {"decided", std::move(decided)},
               {"landed_at", WallSeconds()}};
  Json work = options_.work_of ? options_.work_of(team, m) : Json();
  note["models"] = work.is_object() && work.contains("models") ? work["models"] : Json::array();
  note["usage"] = work.is_object() && work.contains("usage") ? work["usage"] : Json();
  note["cost_usd"] = work.is_object() && work.contains("cost_usd") ? work["cost_usd"] : Json();
  note["calls"] = work.is_object() && work.contains("calls") ? work["calls"] : Json();
  return note;
}

void MergeQueue::Finish(const std::string& team, const MergeRequest& m, const std::string& onto,
                        const std::string& merged) {
  const Workspace& ws = options_.ws;
  // The request, then its task: a host killed in between leaves a merged
  // request under a task in progress, which the next queue completes
  // (CompleteMergedTasks) and its owner is told is merged.
  auto now = store_->Merges(team)->Update(m.id, [&](MergeRequest& r) {
    r.status = MergeState::kMerged;
    r.merged_commit = merged;
    r.checked_on = onto;  // what it changed is told from there (git/diffs.h)
    return Status::Ok();
  });
  auto cfg = store_->LoadTeam(team);
  const std::string lead = cfg.ok() ? cfg->lead : "lead";
  TeamGit tg = cfg.ok() ? cfg->git : TeamGit{};
  if (!m.target.empty()) tg.target_branch = m.target;
  TaskPatch p;
  p.status = TaskStatus::kCompleted;
  auto done = store_->Board(team)->Update(m.task, p, Caller{lead, true});
  if (!done.ok()) LogWarning("merge queue: task #" + std::to_string(m.task) + ": " + done.status().message());
  // A running owner's worktree takes the new target when it starts its
  // next task (RefreshWorktree), not under the work it may be doing now; a
  // stopped owner's is cleaned up (it is merged now).
  std::error_code ec;
  if (options_.running && !options_.running(m.owner) && fs::exists(TeammateWorktree(ws, team, m.owner) / ".git", ec)) {
    (void)RefreshWorktree(ws, team, m.owner, tg);
    std::string kept = CleanUpTeammate(ws, team, m.owner, tg, /*final=*/false);
    if (!kept.empty()) LogInfo("merge queue: " + kept);
  }
  if (options_.on_change) options_.on_change();
  Decided(team, now);
}

void MergeQueue::Decided(const std::string& team, const Result<MergeRequest>& m) {
  if (m.ok()) (void)RaiseMergeHook(merge_hooks(), hooks::Event::kMergeDecided, team, *m);
}

void MergeQueue::Bounce(const std::string& team, MergeRequest m, MergeState state, const std::string& output,
                        const std::vector<std::string>& files, const std::string& headline) {
  const Workspace& ws = options_.ws;
  auto now = store_->Merges(team)->Update(m.id, [&](MergeRequest& r) {
    r.status = state;
    r.output = output;
    r.files = files;
    return Status::Ok();
  });
  auto cfg = store_->LoadTeam(team);
  TeamGit tg = cfg.ok() ? cfg->git : TeamGit{};
  if (!m.target.empty()) tg.target_branch = m.target;
  const std::string target = tg.target_name();
  std::string text = "Task #" + std::to_string(m.task) + ": ";
  if (state == MergeState::kConflict) {
    text += "conflict in " + JoinWords(files) + " — your work does not merge onto " + target + " as it is now. ";
    std::error_code ec;
    auto in = fs::exists(TeammateWorktree(ws, team, m.owner) / ".git", ec)
                  ? MergeTargetInto(ws, team, m.owner, tg)
                  : Result<GitOutput>(Status::NotFound("no worktree"));
    if (in.ok() && in->exit_code != 0) {
      text += target + " is now merged into your worktree with the conflict markers left in those files: resolve "
              "them (keep what both sides meant), then set the task completed again; that commits the merge and "
              "resubmits it.";
    } else {
      text += "Run `" + (tg.remote.empty() ? "" : "git fetch " + tg.remote + " && ") + "git merge " + target +
              "` in your worktree, resolve the conflicts, then set the task completed again.";
    }
  } else {
    text += headline + ":\n" + output +
            "\nYour worktree is as you left it: fix the problem, then set the task completed again (that commits "
            "and resubmits it).";
  }
  SendRequest s;
  s.sender = kMergeQueueName;
  s.recipient = m.owner;
  s.content = text;
  s.summary = "merge of task #" + std::to_string(m.task) + ": " + std::string(MergeStateName(state));
  std::unique_ptr<TeamMail> mail = store_->Mail(team);
  auto sent = Messenger(*mail).Send(s);
  if (!sent.ok()) LogWarning("merge queue: telling " + m.owner + ": " + sent.status().message());
  if (options_.tell_lead && options_.running && !options_.running(m.owner)) {
    options_.tell_lead("Merge request " + std::to_string(m.id) + " (task #" + std::to_string(m.task) + " by " +
                       m.owner + ", who is not running) bounced: " + std::string(MergeStateName(state)) +
                       (files.empty() ? "" : " in " + JoinWords(files)) + ".");
  }
  if (options_.on_change) options_.on_change();
  Decided(team, now);
}

}  // namespace mates::git
