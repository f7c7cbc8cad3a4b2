// The merge queue's trains (DESIGN §30): requests waiting in a row merged
// one onto the next in memory, checked once, landed by one compare-and-swap
// (see merge_queue.h).
#include <optional>

#include "core/clock.h"
#include "core/log.h"
#include "git/git.h"
#include "git/merge_queue.h"
#include "git/merge_tree.h"
#include "git/provenance.h"
#include "git/queue_steps.h"
#include "git/worktrees.h"

namespace mates::git {

using queue::NoteTarget;
using queue::QueueAgain;
using queue::Tail;

std::vector<MergeRequest> MergeQueue::Train(const std::string& team, const MergeRequest& first) {
  std::vector<MergeRequest> cars;
  if (one_by_one_ > 0) return cars;
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok() || !cfg->git.configured() || cfg->git.merge_review || cfg->git.held()) return cars;
  auto list = store_->Merges(team)->List();
  if (!list.ok()) return cars;
  // Requests queued in a row from `first`, for the team's own target, none
  // approved (those land as they were checked) nor interrupted mid-check.
  for (auto& m : *list) {
    if (m.id < first.id) continue;
    if (m.status != MergeState::kQueued || m.approved ||
        !(m.target.empty() || m.target == cfg->git.target_branch)) {
      break;
    }
    cars.push_back(std::move(m));
    if (cars.size() == queue::kTrainCars) break;
  }
  if (cars.size() < 2) cars.clear();
  return cars;
}

std::vector<int64_t> MergeQueue::RunTrain(const std::string& team, std::vector<MergeRequest> cars) {
  std::vector<int64_t> ids;
  for (const auto& m : cars) ids.push_back(m.id);
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok()) return {};
  const TeamGit tg = cfg->git;
  Git w(options_.ws.root(), MergeQueueIdentity(team));
  if (!FetchTarget(options_.ws, team, tg).ok()) return {};  // taken one by one, as ever
  auto old = ResolveCommit(w, tg.target_ref());
  if (!old.ok() || old->empty()) return {};
  held_.store(Held(team, *old));
  if (held_.load()) return ids;  // still queued: nothing was taken
  auto train = Couple(team, tg, w, *old, cars);
  if (train && !train->empty()) Land(team, tg, w, std::move(*train), *old);
  return ids;
}

std::optional<std::vector<MergeQueue::Car>> MergeQueue::Couple(const std::string& team, const TeamGit& tg, Git& w,
                                                               const std::string& old,
                                                               std::vector<MergeRequest>& cars) {
  std::vector<Car> train;
  std::string head = old;
  for (auto& m : cars) {
    if (stop_.load()) return std::nullopt;
    if (Take(team, tg, m) == Step::kDone || !Gate(team, m) || LandedAlready(team, tg, w, m, old)) continue;
    auto tm = MergeTree(w, head, m.commit, &cancel_);
    if (stop_.load()) return std::nullopt;
    if (!tm.ok() || (!tm->clean && tm->conflicts.empty())) {
      Bounce(team, m, MergeState::kFailed, "git merge: " + (tm.ok() ? Tail(tm->messages) : tm.status().message()), {});
      continue;
    }
    if (!tm->clean) {
      if (head != old) {
        // It conflicts with work ahead of it in this train, not yet on the
        // target: its owner could not merge that in. It waits, queued, for
        // the train to land, and is then taken (and bounced) on its own.
        QueueAgain(*store_, team, m.id);
        continue;
      }
      Bounce(team, m, MergeState::kConflict, Tail(tm->messages), tm->conflicts);
      continue;
    }
    auto made = CommitMerge(w, tm->tree, head, m.commit,
                            "Merge task #" + std::to_string(m.task) + ": " + m.subject + " (" + m.owner + ")", &cancel_);
    if (!made.ok()) {
      if (stop_.load()) return std::nullopt;
      Bounce(team, m, MergeState::kFailed, "the merge made no commit: " + made.status().message(), {});
      continue;
    }
    train.push_back({m, head, *made});
    head = *made;
  }
  return train;
}

void MergeQueue::Land(const std::string& team, const TeamGit& tg, Git& w, std::vector<Car> train,
                      const std::string& old) {
  const std::string head = train.back().merged;
  auto requeue = [&] {
    for (const auto& car : train) QueueAgain(*store_, team, car.m.id);
  };
  // One check for the train, on its last merge: what the target moves to.
  if (!tg.merge_check.empty()) {
    Checked c = Check(team, tg, head);
    if (c.kind == Checked::kInterrupted) return;
    if (c.kind != Checked::kPassed) {
      if (train.size() == 1) {
        if (c.kind == Checked::kFailed) (void)NoteCheck(team, train[0].m.id, c.run);
        Bounce(team, train[0].m, MergeState::kFailed, c.text, {});
        return;
      }
      // Which car broke it is found one at a time: none is bounced for
      // another's failure.
      requeue();
      one_by_one_ = train.size();
      return;
    }
    for (auto& car : train) {
      if (auto noted = NoteCheck(team, car.m.id, c.run); noted.ok()) car.m = *noted;
    }
  }
  for (const auto& car : train) {
    if (Status noted = WriteNote(w, car.merged, Provenance(team, tg, car.m, car.onto, car.merged)); !noted.ok()) {
      LogWarning("merge queue: could not record the provenance of a train: " + noted.message());
      requeue();
      one_by_one_ = train.size();  // each bounced alone if it goes on failing
      return;
    }
  }
  NoteTarget(*store_, team, /*at=*/"", /*moving_to=*/head);
  std::string last_error;
  switch (MoveTarget(team, tg, train.back().m, old, head, &last_error)) {
    case Moved::kMoved:
      NoteTarget(*store_, team, /*at=*/head, /*moving_to=*/"");
      PushNotesAfter(tg, "a train");
      for (const auto& car : train) Finish(team, car.m, car.onto, car.merged);
      return;
    case Moved::kBounced:  // the last car was told why (W's checkout); the others go round again
      train.pop_back();
      requeue();
      return;
    case Moved::kUnreachable:
      requeue();
      waker_->WaitChange(waker_->generation(), DeadlineIn(1.0));
      return;
    case Moved::kRaced:
      requeue();
      return;
  }
}

}  // namespace mates::git
