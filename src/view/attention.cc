// See attention.h.
#include "view/attention.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "agent/prices.h"
#include "agent/usage.h"
#include "core/text.h"
#include "store/elicitation.h"
#include "store/merges.h"
#include "store/requests.h"

namespace mates::view {
namespace {

// A refusal of the sandbox's is news for this long.
constexpr double kRecentDenialS = 15 * 60;
// A budget this far spent is worth a look.
constexpr double kBudgetWarn = 0.8;
// An idle member with mail this old has not read it: it is stuck.
constexpr double kUnreadWhileIdleS = 30;
// A shutdown request nobody answered for this long is news.
constexpr double kUnansweredShutdownS = 60;

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string Seconds(double s) {
  const auto n = static_cast<int64_t>(std::ceil(std::max(0.0, s)));
  return std::to_string(n) + " s";
}

std::string RetryText(const agent::Retry& r, double now) {
  const std::string which = "(attempt " + std::to_string(r.attempt) + " of " + std::to_string(r.of) + ")";
  return (r.at > now ? "retrying in " + Seconds(r.at - now) + " " : "retrying now ") + which + ": " + r.cause;
}

const MemberView* FindMember(const TeamView& v, const std::string& name) {
  for (const auto& m : v.members) {
    if (m.member.name == name) return &m;
  }
  return nullptr;
}

void Budget(const TeamView& v, std::vector<AttentionItem>* out) {
  const std::string restart = "a larger budget is given when the team starts again (--budget-tokens N or "
                              "--budget-usd X)";
  llm::Usage total;
  double usd = 0;
  for (const auto& m : v.members) {
    if (!m.activity) continue;
    total += m.activity->tokens;
    usd += m.activity->cost_usd.value_or(0);
    if (m.member.budget_tokens > 0) {
      const int64_t spent = agent::TotalTokens(m.activity->tokens);
      const double share = static_cast<double>(spent) / static_cast<double>(m.member.budget_tokens);
      if (share >= kBudgetWarn) {
        out->push_back({AttentionKind::kBudget,
                        m.member.name + " has spent " + std::to_string(static_cast<int>(share * 100)) +
                            " % of its budget (" + agent::HumanCount(spent) + " of " +
                            agent::HumanCount(m.member.budget_tokens) + " tokens)",
                        m.activity->updated_at, "", restart, "agent/" + m.member.name});
      }
    }
  }
  const TeamBudget& b = v.team.budget;
  if (!b.any()) return;
  const int64_t tokens = agent::TotalTokens(total) + b.counted_tokens();
  const double dollars = usd + b.counted_usd();
  double share = 0;
  std::string what;
  if (b.tokens > 0 && static_cast<double>(tokens) / static_cast<double>(b.tokens) >= share) {
    share = static_cast<double>(tokens) / static_cast<double>(b.tokens);
    what = agent::HumanCount(tokens) + " of " + agent::HumanCount(b.tokens) + " tokens";
  }
  if (b.usd > 0 && dollars / b.usd >= share) {
    share = dollars / b.usd;
    what = agent::FormatCost(dollars) + " of " + agent::FormatCost(b.usd);
  }
  if (share >= kBudgetWarn) {
    out->push_back({AttentionKind::kBudget,
                    "the team has spent " + std::to_string(static_cast<int>(share * 100)) + " % of its budget (" +
                        what + ")" + (share >= 1 ? ": no agent calls the model any more" : ""),
                    v.now, "", restart, "tab/usage"});
  }
}

// Members: a failed or paused turn, a model server retried, mail an idle
// member does not read.
void MemberNews(const TeamView& v, const std::string& t, std::vector<AttentionItem>* out) {
  for (const auto& m : v.members) {
    if (!m.activity || m.shown == Shown::kOffline) continue;
    const agent::Activity& a = *m.activity;
    const std::string name = m.member.name;
    if (a.error) {
      const bool stopped = m.shown == Shown::kShutdown || a.state == agent::ActivityState::kStopped;
      // A teammate a host runs comes back with `mates restart` (DESIGN §27).
      const bool restartable = m.member.role != MemberRole::kLead &&
                               m.member.backend == MemberBackend::kInProcess && v.host && v.foreign.empty();
      static const std::string kPaused = "paused by a circuit breaker: ";
      if (a.error->reason.rfind(kPaused, 0) == 0) {
        const std::string why = a.error->reason.substr(kPaused.size());
        out->push_back({AttentionKind::kPaused, name + " was paused: " + why, a.error->at,
                       restartable && stopped ? "mates restart" + t + " " + name
                                              : "mates send" + t + " --to " + name + " " + Quote("Go on."),
                       "it went round in circles; see what it did (mates logs" + t + " " + name +
                           "), then " + (restartable && stopped ? "bring it back with its context"
                                                                : "a message lets it go on"),
                       "agent/" + name});
        continue;
      }
      out->push_back({AttentionKind::kTurnFailed,
                     name + "'s turn failed: " + a.error->reason +
                         (stopped ? " — it has stopped" : a.error->next.empty() ? "" : " — " + a.error->next),
                     a.error->at,
                     !stopped ? "mates send" + t + " --to " + name + " " + Quote("Go on.")
                     : restartable ? "mates restart" + t + " " + name
                                   : "mates log" + t,
                     !stopped      ? "a message makes it try again now"
                     : restartable ? "brings it back with its context once the cause is fixed (what it did last is in "
                                     "mates log" + t + ")"
                                   : "what it did last is in the log",
                     "agent/" + name});
    }
  }
  for (const auto& m : v.members) {
    if (!m.activity || m.shown == Shown::kOffline || m.activity->state != agent::ActivityState::kRetrying) continue;
    const agent::Activity& a = *m.activity;
    out->push_back({AttentionKind::kRetrying, m.member.name + ": " + (a.retry ? RetryText(*a.retry, v.now) : "retrying"), a.since,
                   "mates status" + t + " --watch",
                   "the model server is not answering as it should; after the last attempt the turn fails",
                   "agent/" + m.member.name});
  }
  for (const auto& m : v.members) {
    const bool idle = m.shown == Shown::kIdle && (!m.activity || m.activity->state == agent::ActivityState::kIdle);
    if (!idle || m.unread == 0 || v.now - m.oldest_unread < kUnreadWhileIdleS) continue;
    out->push_back({AttentionKind::kUnreadWhileIdle,
                   m.member.name + " is idle with " + std::to_string(m.unread) + " unread message" +
                       (m.unread == 1 ? "" : "s") + ", the oldest " + Seconds(v.now - m.oldest_unread) + " old",
                   m.oldest_unread, "mates inbox" + t + " " + m.member.name + " --peek",
                   v.foreign.empty() ? "its host hands mail over at once: an idle member with mail is stuck (mates doctor)"
                                     : v.foreign + " hands mail over between turns: a member idle with mail is stuck; "
                                                   "look at it there",
                   "agent/" + m.member.name});
  }
}

// Tasks: one whose owner is gone, one nobody is running to take.
void TaskNews(const TeamView& v, const std::string& t, std::vector<AttentionItem>* out) {
  for (const auto& task : v.tasks) {
    if (task.status != TaskStatus::kInProgress || task.owner.empty()) continue;
    const MemberView* owner = FindMember(v, task.owner);
    if (owner != nullptr && owner->shown != Shown::kShutdown && owner->shown != Shown::kOffline) continue;
    const std::string gone = owner == nullptr                      ? "is no member"
                             : owner->shown == Shown::kShutdown ? "has stopped"
                                                                : "is offline (its host is gone)";
    const std::string put_back =
        "mates tasks" + t + " update " + std::to_string(task.id) + " --owner \"\" --status pending";
    // Nobody hosts the team (after `down`): `up` brings its owner back,
    // which goes on with the task from its journal.
    const bool host_gone = v.foreign.empty() && !v.host && owner != nullptr && owner->shown == Shown::kOffline &&
                           owner->member.backend == MemberBackend::kInProcess;
    out->push_back({AttentionKind::kOrphanedTask,
                   "task #" + std::to_string(task.id) + " " + Quote(CutUtf8(task.subject, 80)) + " is in progress, "
                   "but its owner " + task.owner + " " + gone,
                   task.updated_at,
                   host_gone           ? "mates up" + t
                   : v.foreign.empty() ? put_back
                                       : "",
                   host_gone ? "hosts the team again: " + task.owner + " goes on with it from its journal (or " +
                                   put_back + " puts it back on the board)"
                   : v.foreign.empty() ? "puts it back on the board for anyone to claim"
                                       : "its lead gives it to another member in " + v.foreign + " (TaskUpdate)",
                   "task/" + std::to_string(task.id)});
  }
  // A task that waits with no teammate running to take it (all stopped,
  // or none yet): under `up --respawn on-work` its host brings one back
  // within seconds, so only one that waited 30 s is news.
  bool any_live = false;
  std::string stopped;  // an in-process teammate the person may restart
  for (const auto& m : v.members) {
    if (m.member.role == MemberRole::kLead) continue;
    any_live = any_live || m.shown == Shown::kActive || m.shown == Shown::kIdle;
    if (stopped.empty() && m.shown == Shown::kShutdown && m.member.backend == MemberBackend::kInProcess) {
      stopped = m.member.name;
    }
  }
  for (const auto& task : v.tasks) {
    if (any_live || !v.host || !v.foreign.empty() || task.status != TaskStatus::kPending) continue;
    const bool blocked = std::any_of(task.blocked_by.begin(), task.blocked_by.end(), [&](int64_t id) {
      return std::none_of(v.tasks.begin(), v.tasks.end(),
                          [&](const Task& b) { return b.id == id && b.status == TaskStatus::kCompleted; });
    });
    if (blocked || v.now - task.updated_at < kUnreadWhileIdleS) continue;
    out->push_back({AttentionKind::kTaskWaiting,
                   "task #" + std::to_string(task.id) + " " + Quote(CutUtf8(task.subject, 80)) +
                       " waits, and no teammate is running to take it",
                   task.updated_at, stopped.empty() ? "" : "mates restart" + t + " " + stopped,
                   stopped.empty() ? "the lead spawns a teammate for it (Task), or a person asks the lead to"
                                   : "brings back " + stopped + " with its context; it claims the task (`mates up "
                                     "--respawn on-work` does so by itself)",
                   "task/" + std::to_string(task.id)});
  }
}

// The merge queue: a request bounced and not submitted again, one
// waiting for review, the queue held.
void MergeNews(const TeamView& v, const std::string& t, std::vector<AttentionItem>* out) {
  for (const auto& r : v.merge_list) {
    const std::string id = std::to_string(r.id);
    const std::string what = "merge request " + id + " (task #" + std::to_string(r.task) + " by " + r.owner + ")";
    if (r.status == MergeState::kFailed || r.status == MergeState::kConflict) {
      // Bounced to its owner, who is told: news for a person only if the
      // task still waits (its owner did not submit it again since).
      const Task* task = nullptr;
      for (const auto& tk : v.tasks) {
        if (tk.id == r.task) task = &tk;
      }
      if (task == nullptr || task->status == TaskStatus::kCompleted) continue;
      bool later = false;
      for (const auto& other : v.merge_list) later = later || (other.task == r.task && other.id > r.id);
      if (later) continue;
      const bool conflict = r.status == MergeState::kConflict;
      std::string files;
      for (const auto& f : r.files) files += (files.empty() ? "" : ", ") + f;
      out->push_back({conflict ? AttentionKind::kMergeConflict : AttentionKind::kMergeFailed,
                     what + (conflict ? " conflicts in " + files : " failed its check"), r.updated_at,
                     "mates merges" + t + " show " + id, "its owner was told and has not submitted it again",
                     "tab/merges"});
    } else if (r.status == MergeState::kReview) {
      out->push_back({AttentionKind::kMergeReview, what + " waits for review", r.updated_at, "mates merges" + t + " approve " + id,
                     "or: mates merges" + t + " reject " + id + " --feedback \"what to change\"", "tab/merges"});
    }
  }
  // Conflicts forecast (DESIGN §30), while the work is still in progress.
  for (const ConflictForecast& f : v.forecasts) {
    std::string files;
    for (size_t i = 0; i < f.files.size() && i < 5; ++i) files += (i ? ", " : "") + f.files[i];
    if (f.files.size() > 5) files += ", …";
    auto task_of = [&](size_t i) {
      return i < f.tasks.size() && f.tasks[i] > 0 ? " (task #" + std::to_string(f.tasks[i]) + ")" : std::string();
    };
    const std::string subject =
        f.with_target ? f.members[0] + "'s work" + task_of(0) + " conflicts with " + v.team.git.target_name() +
                            " in " + files
                      : f.members[0] + task_of(0) + " and " + f.members[1] + task_of(1) + " both change " + files;
    const std::string link = !f.tasks.empty() && f.tasks[0] > 0 ? "task/" + std::to_string(f.tasks[0])
                                                                 : "agent/" + f.members[0];
    out->push_back({AttentionKind::kConflictForecast, subject, f.since, "",
                    f.with_target ? "it will not merge as it stands: its owner was told to merge the target in now"
                                  : "their work will not merge as it stands: both were told, and the lead",
                    link});
  }
  if (v.team.git.held()) {
    const TeamGit& g = v.team.git;
    out->push_back({AttentionKind::kMergeHeld,
                   "the merge queue is held: " + g.target_name() + " was moved outside it (to " +
                       g.held_found.substr(0, 10) + ")",
                   g.held_since, "mates merges" + t + " resume",
                   "look at what moved it first (git log " + g.target_name() + ")", "tab/merges"});
  }
}

// Requests: an MCP server's question, a plan waiting, a shutdown request
// nobody answered.
void RequestNews(const TeamView& v, const std::string& t, std::vector<AttentionItem>* out) {
  for (const auto& r : v.requests) {
    if (r.kind != RequestKind::kElicitation || r.status != RequestState::kPending) continue;
    auto q = elicitation::ParseQuestion(r.content);
    out->push_back({AttentionKind::kQuestionWaiting,
                   "MCP server " + (q.ok() ? q->server : std::string("?")) + " asks you (for " + r.requester +
                       "): " + CutUtf8(q.ok() ? q->message : std::string(), 200),
                   r.created_at, "mates answer" + t + " " + r.id + " NAME=VALUE...",
                   "or --decline; `mates answer" + t + "` shows its fields; the dashboard answers it too",
                   "agent/" + r.requester});
  }
  for (const auto& r : v.requests) {
    if (r.kind != RequestKind::kPlanApproval || r.status != RequestState::kPending) continue;
    if (!v.foreign.empty()) {
      out->push_back({AttentionKind::kPlanWaiting, r.requester + "'s plan waits for " + r.responder, r.created_at, "",
                     r.responder + " answers it in " + v.foreign, "agent/" + r.requester});
      continue;
    }
    out->push_back({AttentionKind::kPlanWaiting, r.requester + "'s plan waits for " + r.responder, r.created_at,
                   "mates send" + t + " --from " + r.responder + " --to " + r.requester +
                       " --type plan_approval_response --request-id " + r.id + " --approve ok",
                   "or --reject with --feedback; the dashboard answers it too", "agent/" + r.requester});
  }
  for (const auto& r : v.requests) {
    if (r.kind != RequestKind::kShutdown || r.status != RequestState::kPending) continue;
    if (v.now - r.created_at < kUnansweredShutdownS) continue;
    out->push_back({AttentionKind::kRequestUnanswered,
                   r.responder + " has not answered " + r.requester + "'s shutdown request (" +
                       Seconds(v.now - r.created_at) + ")",
                   r.created_at, "mates log" + t,
                   v.foreign.empty() ? "a member answers between turns: one that does not is stuck or gone"
                                     : "a member answers between turns; look at " + r.responder + " in " + v.foreign,
                   "agent/" + r.responder});
  }
}

// What a hook or the sandbox refused lately.
void RecentRefusals(const TeamView& v, std::vector<AttentionItem>* out) {
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->hook_blocks.empty()) continue;
    const agent::HookBlock& b = m.activity->hook_blocks.back();
    if (v.now - b.at > kRecentDenialS) continue;
    out->push_back({AttentionKind::kHookBlocked, m.member.name + ": a " + b.event + " hook blocked " + b.what, b.at,
                   "mates hooks list", "the hooks in your config and the workspace's decide this", "agent/" + m.member.name});
  }
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->denials.empty()) continue;
    const agent::Denial& d = m.activity->denials.back();
    if (v.now - d.at > kRecentDenialS) continue;
    out->push_back({AttentionKind::kSandboxDenied, m.member.name + ": " + d.what, d.at, "",
                   "what the sandbox allows is widened in your own ~/.config/mates/config.yaml (sandbox: "
                   "allow_write, network.allow)",
                   "agent/" + m.member.name});
  }
}

}  // namespace

std::string_view AttentionKindName(AttentionKind k) {
  switch (k) {
    case AttentionKind::kTurnFailed: return "turn_failed";
    case AttentionKind::kPaused: return "paused";
    case AttentionKind::kRetrying: return "retrying";
    case AttentionKind::kUnreadWhileIdle: return "unread_while_idle";
    case AttentionKind::kOrphanedTask: return "orphaned_task";
    case AttentionKind::kTaskWaiting: return "task_waiting";
    case AttentionKind::kMergeFailed: return "merge_failed";
    case AttentionKind::kMergeConflict: return "merge_conflict";
    case AttentionKind::kConflictForecast: return "conflict_forecast";
    case AttentionKind::kMergeReview: return "merge_review";
    case AttentionKind::kMergeHeld: return "merge_held";
    case AttentionKind::kQuestionWaiting: return "question_waiting";
    case AttentionKind::kPlanWaiting: return "plan_waiting";
    case AttentionKind::kRequestUnanswered: return "request_unanswered";
    case AttentionKind::kBudget: return "budget";
    case AttentionKind::kSandboxDenied: return "sandbox_denied";
    case AttentionKind::kHookBlocked: return "hook_blocked";
    case AttentionKind::kStoreUnreachable: return "store_unreachable";
  }
  return "";
}

std::string StateOf(const MemberView& m) {
  if (m.shown == Shown::kOffline || m.shown == Shown::kShutdown || !m.activity) return std::string(ShownName(m.shown));
  if (m.activity->state == agent::ActivityState::kError) return "error";
  if (m.activity->state == agent::ActivityState::kRetrying) return "retrying";
  return std::string(ShownName(m.shown));
}

std::string DoingOf(const MemberView& m, double now) {
  if (!m.activity) return "";
  const agent::Activity& a = *m.activity;
  if (m.shown == Shown::kOffline) return "its host is gone";
  switch (a.state) {
    case agent::ActivityState::kThinking: return "thinking";
    case agent::ActivityState::kTool: return a.doing;
    case agent::ActivityState::kIdle: return a.doing.empty() ? "waiting for work" : a.doing;  // or where it works
    case agent::ActivityState::kStopped: return "stopped" + (a.doing.empty() ? "" : ": " + a.doing);
    case agent::ActivityState::kRetrying: return a.retry ? RetryText(*a.retry, now) : "retrying";
    case agent::ActivityState::kError:
      return "error: " + (a.error ? a.error->reason + (a.error->next.empty() ? "" : " — " + a.error->next) : "");
  }
  return "";
}

std::vector<AttentionItem> Attention(const TeamView& v) {
  std::vector<AttentionItem> out;
  const std::string t = " --team " + v.team.name;
  MemberNews(v, t, &out);
  TaskNews(v, t, &out);
  MergeNews(v, t, &out);
  RequestNews(v, t, &out);
  Budget(v, &out);
  RecentRefusals(v, &out);
  std::stable_sort(out.begin(), out.end(), [&](const AttentionItem& a, const AttentionItem& b) {
    return std::make_pair(a.kind, a.since) < std::make_pair(b.kind, b.since);
  });
  return out;
}

Json AttentionToJson(const std::vector<AttentionItem>& items) {
  Json out = Json::array();
  for (const auto& i : items) {
    out.push_back({{"kind", AttentionKindName(i.kind)},
                   {"subject", i.subject},
                   {"since", i.since},
                   {"hint", i.hint},
                   {"note", i.note},
                   {"link", i.link}});
  }
  return out;
}

}  // namespace mates::view
