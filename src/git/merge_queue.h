// MergeQueue: the team's merge queue, a thread of the host (DESIGN §12).
//
// It takes the team's merge requests in id order. For each: it merges the
// owner's commit onto the target as it is now in memory (`git merge-tree`,
// a merge commit, no checkout: DESIGN §30), runs the team's check on it in
// the one scratch worktree (moved there incrementally; with its timeout),
// and advances the target by a compare-and-swap (`git update-ref NEW OLD`;
// a target checked out in W is fast-forwarded there instead, W's HEAD
// compared first) — if the target moved meanwhile, it starts again on the
// new one. Every task lands as one merge commit (the target's first-parent
// history is the list of tasks landed). Then the task becomes
// completed (dependents unblock) and the owner's worktree gets the new
// target. A conflict or a failed check bounces the task to its owner with a
// message from merge-queue. With review on, a checked merge waits for a
// decision (DecideMerge) before the target moves.
//
// The target only ever moves to a commit that passed the check. A host
// killed at any point leaves the target as it was or at the checked commit;
// the request, found `queued` or `checking`, is taken again by the next one.
//
// A team with a remote (on a shared store, DESIGN §13) has its requests in
// the store and its target on the remote: the queue fetches the submitted
// branch and the target, merges and checks here, and moves the remote's
// target by a push with a lease (the compare-and-swap); W's own branch
// follows when it can.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.h"
#include "core/waker.h"
#include "git/git.h"
#include "git/merge_hooks.h"
#include "sandbox/sandbox.h"
#include "store/merges.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::git {

class MergeQueue {
 public:
  struct Options {
    Workspace ws{"."};
    // The team to serve now (the lead's: TeamCreate moves it).
    std::function<std::string()> team;
    // A request changed state (wakes whoever waits for the queue).
    std::function<void()> on_change;
    // What the lead should hear (a merge waiting for its review, a bounce).
    std::function<void(const std::string&)> tell_lead;
    // Whether `name` is still working in this host (else its worktree is
    // cleaned once its last merge is in).
    std::function<bool(const std::string&)> running;
    // Where merge checks run (DESIGN §18), and the merge hooks.
    std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off();
    // The person's hooks (DESIGN §22): MergeQueued, MergeDecided; null = none.
    std::shared_ptr<const hooks::Runner> hooks;
    // A request was dealt with (merged, bounced, in review, or left):
    // as it is now, when the queue took it and when it let go (wall
    // seconds), and how long its check ran (0: none). A merge span (DESIGN
    // §29). On the queue's thread.
    std::function<void(const std::string& team, const MergeRequest& m, double taken, double done, double check_s)>
        on_processed;
    // What the host knows of a request's work, for its provenance note
    // (DESIGN §30): {"models": [...], "usage": {...}, "cost_usd": N|null,
    // "calls": N}, or null. On the queue's thread; null = nothing known.
    std::function<Json(const std::string& team, const MergeRequest& m)> work_of;
  };

  // `store`: where the team is kept (outlives the queue).
  MergeQueue(TeamStore& store, Options options);
  ~MergeQueue();
  MergeQueue(const MergeQueue&) = delete;
  MergeQueue& operator=(const MergeQueue&) = delete;

  // Stops the thread (a check under way is killed; its request is taken
  // again by the next host).
  void Stop();
  // The served team has requests the queue still has to take (queued or
  // checking); one waiting for review is the reviewer's, not counted, nor
  // are those behind a held target (a person must look first).
  bool Busy();
  // Wakes the thread (a request was queued in this process).
  void Poke() { waker_->Notify(); }

 private:
  void Main();
  // The next request to take, if any.
  std::optional<MergeRequest> Next(const std::string& team);
  // Tells the lead of the team's requests already waiting for its review:
  // a host that took the team up after another (killed, or ended with a
  // request undecided) has no other way to hear of them.
  void RemindOfReviews(const std::string& team);
  // Tasks left in progress under a request merged by a host that stopped
  // in between (Finish) are completed.
  void CompleteMergedTasks(const std::string& team);
  // One request, from queued to merged, bounced or put in review (or left
  // for the next host, stopped), in named steps.
  void Process(const std::string& team, MergeRequest m);
  // What a step came to: go on, or the request was dealt with (bounced,
  // put in review, taken by no one, or left for the next host).
  enum class Step { kGoOn, kDone };
  // The requests waiting in a row from `first` that may go as one train
  // (two or more; none in review mode, after a failed train, or when the
  // target is held).
  std::vector<MergeRequest> Train(const std::string& team, const MergeRequest& first);
  // A train: each car merged in memory onto the one before (a car that
  // conflicts with the target or fails is bounced alone; one that
  // conflicts with a car ahead waits for the train to land, so that its
  // owner can merge what it conflicts with), the team's check run once on
  // the last, every car's note written, and the target moved once by a
  // compare-and-swap — then each is finished as one request would be. A
  // failed check sends every car back to the queue, to go one by one (so
  // only the culprit is bounced); a moved target, round again. Returns
  // the ids dealt with; none when the train could not start (the first
  // goes alone then).
  std::vector<int64_t> RunTrain(const std::string& team, std::vector<MergeRequest> cars);
  // A train's car: its request, what it was merged onto, its merge commit.
  struct Car {
    MergeRequest m;
    std::string onto, merged;
  };
  // The cars taken and merged one onto the next from `old`, in memory:
  // those that merged (the others bounced, or queued again behind a car
  // they conflict with); nullopt if the queue stopped meanwhile.
  std::optional<std::vector<Car>> Couple(const std::string& team, const TeamGit& tg, Git& w, const std::string& old,
                                         std::vector<MergeRequest>& cars);
  // A coupled train (not empty) checked once on its last merge, its notes
  // written and the target moved from `old`; or sent back to the queue.
  void Land(const std::string& team, const TeamGit& tg, Git& w, std::vector<Car> train, const std::string& old);
  // The target fetched and found (`*found`) before a request is taken:
  // true if it is held (moved outside the queue).
  bool FoundHeld(const std::string& team, const TeamGit& tg, Git& w, std::string* found);
  // The notes ref pushed after a target's move whose push did not carry it
  // (a warning if it cannot be yet: the next push takes it).
  void PushNotesAfter(const TeamGit& tg, const std::string& what);
  // MergeQueued, the person's gate before anything is merged or checked:
  // false if it bounced the request.
  bool Gate(const std::string& team, MergeRequest& m);
  // The request validated and taken (`checking`), its work fetched.
  Step Take(const std::string& team, const TeamGit& tg, MergeRequest& m);
  // The request merged onto `old` in the scratch worktree and checked;
  // `*merged` is the merge commit. Done if it bounced or waits for review.
  Step MergeAndCheck(const std::string& team, const TeamGit& tg, const MergeRequest& m, const std::string& old,
                     std::string* merged);
  // The team's check run on `commit` in the scratch worktree: passed,
  // failed (`text` says how), not run (`text` says why), or interrupted
  // (the queue stops: the next host checks again).
  struct Checked {
    enum Kind { kInterrupted, kNotRun, kPassed, kFailed } kind = kInterrupted;
    std::string text;
    std::string output;  // its tail
    CheckRun run;
  };
  Checked Check(const std::string& team, const TeamGit& tg, const std::string& commit);
  // The check kept on request `id` (for its provenance).
  Result<MergeRequest> NoteCheck(const std::string& team, int64_t id, const CheckRun& run);
  // Check for one request: it is bounced unless it passed.
  Step RunCheck(const std::string& team, const TeamGit& tg, const MergeRequest& m, const std::string& merged,
                std::string* output);
  // The target moved from `old` to `merged`, a compare-and-swap: kRaced if
  // someone moved it first; kUnreachable (with `*last_error`) if the remote
  // could not be reached; kBounced if the request failed (said).
  enum class Moved { kMoved, kRaced, kUnreachable, kBounced };
  Moved MoveTarget(const std::string& team, const TeamGit& tg, const MergeRequest& m, const std::string& old,
                   const std::string& merged, std::string* last_error);
  // Whether the team's target, found at `found`, is held (DESIGN §19):
  // moved by anything but this queue (it was at `target_at`, or on its way
  // to `target_moving_to`), or held already. Holding says so to the log and
  // the lead; a target not known yet is recorded as found.
  bool Held(const std::string& team, const std::string& found);
  // Whether `m`'s work is on the target (found at `old`) already: a host
  // killed after its queue moved the target, before it said so, or work
  // that came in another way. Then it is finished as it is — its merge
  // commit the one of the target's first-parent history that brought it in
  // (else the target), its note written if missing — and never merged a
  // second time.
  bool LandedAlready(const std::string& team, const TeamGit& tg, Git& w, const MergeRequest& m,
                     const std::string& old);
  // `headline`: what the owner reads a failure as ("check failed", …).
  void Bounce(const std::string& team, MergeRequest m, MergeState state, const std::string& output,
              const std::vector<std::string>& files, const std::string& headline = "check failed");
  // MergeDecided for `m` as it is now (merged or bounced).
  void Decided(const std::string& team, const Result<MergeRequest>& m);
  MergeHooks merge_hooks() const { return {options_.hooks, options_.sandbox, options_.ws}; }
  void Finish(const std::string& team, const MergeRequest& m, const std::string& onto, const std::string& merged);
  // The provenance note of `m` landing `merged` on `onto` (git/provenance.h).
  Json Provenance(const std::string& team, const TeamGit& tg, const MergeRequest& m, const std::string& onto,
                  const std::string& merged);

  const Options options_;
  TeamStore* const store_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  CancelToken cancel_;
  std::atomic<bool> stop_{false};
  // Taking a request, until whoever must hear of it has (a request put in
  // review is not "queued", yet the lead has not been told until then);
  // and from the start until the first team is taken up (the lead is told
  // of the reviews already waiting).
  std::atomic<bool> processing_{true};
  double check_s_ = 0;  // the queue's thread's: the latest check's run
  // The served team's target is held: nothing is taken until it is resumed.
  std::atomic<bool> held_{false};
  // The thread's own: the scratch worktree was prepared by this queue (a
  // check may have left files there, but no half-done merge).
  bool scratch_ready_ = false;
  // The thread's own: requests still to take one at a time (a train's
  // check failed: one by one finds which broke it).
  size_t one_by_one_ = 0;
  // The thread's own: the latest push of the target took the notes too.
  bool notes_pushed_ = false;
  std::thread thread_;
};

}  // namespace mates::git
