#include "git/submit.h"

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/text.h"
#include "git/worktrees.h"
#include "store/messenger.h"
#include "store/roster.h"

namespace mates::git {

Result<std::optional<Submitted>> SubmitForMerge(const Workspace& ws, TeamStore& store, const std::string& team,
                                                int64_t task_id, const Caller& caller) {
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store.LoadTeam(team));
  std::unique_ptr<TaskBoard> board = store.Board(team);
  MATES_ASSIGN_OR_RETURN(Task t, board->Get(task_id));
  if (t.status == TaskStatus::kCompleted || t.status == TaskStatus::kDeleted || t.owner.empty()) return std::optional<Submitted>();
  const Member* owner = c.Find(t.owner);
  if (owner == nullptr || !owner->worktree || !c.git.configured()) return std::optional<Submitted>();
  const std::string ref = "task #" + std::to_string(t.id);
  if (!caller.is_lead && caller.name != t.owner) {
    return Status::FailedPrecondition(ref + " is owned by '" + t.owner + "'; only its owner or the lead can complete it");
  }
  std::unique_ptr<MergeBook> merges = store.Merges(team);
  if (auto earlier = WaitingMerge(*merges, t)) {
    return Status::FailedPrecondition(ref + " is already waiting to be merged (merge request " +
                                      std::to_string(earlier->id) + ", " +
                                      std::string(MergeStateName(earlier->status)) + "); it completes when merged");
  }
  // Said with the task's number: the agent completes it again once the
  // cause (a full disk, say) is gone.
  auto committed = CommitTeammateWork(ws, team, t.owner, t.id, t.subject, c.git);
  if (!committed.ok()) {
    return Status::FailedPrecondition(ref + " could not be committed (it stays in progress; complete it again): " +
                                      committed.status().message());
  }
  Committed done = std::move(*committed);
  // An embedded repository is never committed (DESIGN §26): said here.
  std::string left_out;
  for (const auto& path : done.left_out) left_out += (left_out.empty() ? "" : ", ") + path;
  if (!left_out.empty()) {
    left_out = " Not committed: " + left_out +
               " — a git repository of its own inside your worktree, which the host never commits (its config "
               "would be its author's); delete its .git folder to commit its files.";
  }
  if (!done.ahead) {
    if (!left_out.empty()) return Status::FailedPrecondition(ref + ": nothing to merge." + left_out);
    return std::optional<Submitted>();  // nothing to merge
  }
  // The queue may be on another machine: the work goes where it looks.
  MATES_RETURN_IF_ERROR(PushTeammateBranch(ws, team, t.owner, c.git));
  MergeRequest m;
  m.task = t.id;
  m.subject = t.subject;
  m.owner = t.owner;
  m.branch = TeammateBranch(team, t.owner);
  m.commit = done.commit;
  m.target = c.git.target_branch;
  MATES_ASSIGN_OR_RETURN(m, merges->Create(m));
  TaskPatch p;
  p.status = TaskStatus::kInProgress;
  p.metadata_json = DumpJson(Json{{"merge", m.id}});
  MATES_ASSIGN_OR_RETURN(Task updated, board->Update(t.id, p, caller));
  Submitted s{m, updated, ""};
  s.text = "Task #" + std::to_string(t.id) + " submitted for merge: merge request " + std::to_string(m.id) +
           " (commit " + m.commit.substr(0, 10) + " on " + m.branch + "). It stays in_progress until the merge " +
           "queue has merged it onto " + c.git.target_name() + (c.git.merge_check.empty() ? "" : " and its check passed") +
           (c.git.merge_review ? " and the lead approved it" : "") +
           "; if it bounces, merge-queue sends you a message saying why. Meanwhile you may take other work." +
           left_out;
  return std::optional<Submitted>(std::move(s));
}

namespace {

// The request `t`'s metadata.merge names (anything else there is no id).
std::optional<MergeRequest> LastMerge(MergeBook& merges, const Task& t) {
  auto meta = ParseJson(t.metadata_json);
  auto id = meta.ok() && meta->is_object() ? JsonInt(*meta, "merge", false, 0) : Result<int64_t>(int64_t{0});
  if (!id.ok() || *id <= 0) return std::nullopt;
  auto m = merges.Get(*id);
  if (!m.ok()) return std::nullopt;
  return *m;
}

}  // namespace

Result<Task> LinkUnrecordedMerge(TaskBoard& board, MergeBook& merges, Task t,
                                 std::optional<std::vector<MergeRequest>>* requests) {
  if (!*requests) {
    auto listed = merges.List();
    if (!listed.ok() && listed.status().code() == StatusCode::kUnavailable) return listed.status();
    if (!listed.ok()) LogWarning(t.owner + ": its merge requests: " + listed.status().message());
    *requests = listed.ok() ? std::move(*listed) : std::vector<MergeRequest>{};
  }
  auto meta = ParseJson(t.metadata_json);
  auto named = meta.ok() && meta->is_object() ? JsonInt(*meta, "merge", false, 0) : Result<int64_t>(int64_t{0});
  int64_t newest = named.ok() ? *named : 0;
  for (const auto& r : **requests) {
    if (r.task == t.id && r.owner == t.owner && r.id > newest) newest = r.id;
  }
  if (!named.ok() || newest == *named) return t;
  TaskPatch p;
  p.metadata_json = DumpJson(Json{{"merge", newest}});
  auto linked = board.Update(t.id, p, Caller{t.owner, false});
  if (linked.ok() || linked.status().code() == StatusCode::kUnavailable) return linked;
  LogWarning(t.owner + ": task #" + std::to_string(t.id) + "'s merge request: " + linked.status().message());
  return t;
}

std::optional<MergeRequest> WaitingMerge(MergeBook& merges, const Task& t) {
  auto m = LastMerge(merges, t);
  if (!m || !MergeOpen(m->status)) return std::nullopt;
  return m;
}

std::optional<MergeRequest> BouncedMerge(MergeBook& merges, const Task& t) {
  auto m = LastMerge(merges, t);
  if (!m || MergeOpen(m->status) || m->status == MergeState::kMerged) return std::nullopt;
  return m;
}

std::optional<MergeRequest> LandedMerge(MergeBook& merges, const Task& t) {
  auto m = LastMerge(merges, t);
  if (!m || m->status != MergeState::kMerged) return std::nullopt;
  return m;
}

std::string BounceLine(const MergeRequest& m) {
  std::string line = "Task #" + std::to_string(m.task) + ": ";
  if (m.status == MergeState::kRejected) {
    return line + "merge rejected by " + m.decided_by + (m.feedback.empty() ? "" : ": " + m.feedback);
  }
  if (m.status == MergeState::kConflict) return line + "conflict in " + JoinWords(m.files);
  bool check = false;
  for (const auto& c : m.checks) check = check || c.exit_code != 0 || c.signal != 0 || c.timed_out;
  return line + (check ? "check failed" : "merge failed") + (m.output.empty() ? "" : ":\n" + m.output);
}

Result<MergeRequest> DecideMerge(TeamStore& store, const std::string& team, int64_t id, bool approve,
                                 const std::string& feedback, const std::string& by, const MergeHooks& hooks) {
  MATES_ASSIGN_OR_RETURN(MergeRequest m, store.Merges(team)->Update(id, [&](MergeRequest& r) -> Status {
    if (r.status != MergeState::kReview) {
      return Status::FailedPrecondition("merge request " + std::to_string(id) + " is " +
                                        std::string(MergeStateName(r.status)) + ", not waiting for review");
    }
    r.decided_by = by;
    r.feedback = feedback;
    if (approve) {
      r.approved = true;
      r.status = MergeState::kQueued;  // the queue moves the target
    } else {
      r.status = MergeState::kRejected;
    }
    return Status::Ok();
  }));
  if (!approve) {
    SendRequest s;
    s.sender = kMergeQueueName;
    s.recipient = m.owner;
    s.content = BounceLine(m) +
                "\nYour worktree is as you left it: change what was asked, then set the task completed again "
                "(that commits and resubmits it).";
    s.summary = "merge of task #" + std::to_string(m.task) + " rejected";
    std::unique_ptr<TeamMail> mail = store.Mail(team);
    auto sent = Messenger(*mail).Send(s);
    if (!sent.ok()) return sent.status().WithContext("merge request " + std::to_string(id) + " rejected, but");
    (void)RaiseMergeHook(hooks, hooks::Event::kMergeDecided, team, m);
  }
  return m;
}

}  // namespace mates::git
