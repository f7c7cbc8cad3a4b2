// What needs a person (DESIGN §20), from a TeamView: turns that failed or
// are being retried, a member idle with unread mail, tasks in progress
// whose owner is gone, a shutdown request nobody answered, merges that
// bounced or wait for review, conflicts forecast before anyone submits, a
// held merge target, plans waiting, budgets
// at 80 % and over, the sandbox's recent refusals. `mates status` prints
// the list on top, `status --json` has it as `attention`, the dashboard
// shows it as a banner. Each item's hint is a command that works as
// printed (where one does what is needed), its note the words around it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "view/team_view.h"

namespace mates::view {

// What needs a person, in the order status and the page list them.
enum class AttentionKind {
  kTurnFailed, kPaused, kRetrying, kUnreadWhileIdle, kOrphanedTask, kTaskWaiting, kMergeFailed,
  kMergeConflict, kConflictForecast, kMergeReview, kMergeHeld, kQuestionWaiting, kPlanWaiting, kRequestUnanswered,
  kBudget, kSandboxDenied, kHookBlocked,
  kStoreUnreachable,  // said by status and the page, which could not read the team
};
// "turn_failed", "paused", …: the name the JSON, the page and tests use.
std::string_view AttentionKindName(AttentionKind k);

struct AttentionItem {
  AttentionKind kind = AttentionKind::kTurnFailed;
  std::string subject;  // one line
  double since = 0;     // when it began (wall seconds)
  std::string hint;  // a command that does it, as printed; "" where none does
  std::string note;  // what to do or know, in words
  std::string link;  // where the dashboard shows it: "agent/w1", "task/3", "tab/merges"
};

// Oldest first within a kind; kinds in the order above.
std::vector<AttentionItem> Attention(const TeamView& v);
Json AttentionToJson(const std::vector<AttentionItem>& items);

// A member's state as shown (DESIGN §20): its liveness (active, idle,
// shutdown, offline), unless its activity says `error` or `retrying`.
std::string StateOf(const MemberView& m);
// What a member is doing, in words ("thinking", "bash(make)", "retrying in
// 4 s (attempt 2 of 5): …", "error: … — tries again at its next message").
std::string DoingOf(const MemberView& m, double now);

}  // namespace mates::view
