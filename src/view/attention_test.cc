#include "view/attention.h"

#include <gtest/gtest.h>

namespace mates::view {
namespace {

MemberView Member(const std::string& name, Shown shown, agent::ActivityState state = agent::ActivityState::kIdle) {
  MemberView m;
  m.member.name = name;
  m.member.role = name == "lead" ? MemberRole::kLead : MemberRole::kTeammate;
  m.shown = shown;
  agent::Activity a;
  a.agent = name;
  a.state = state;
  a.since = 100;
  a.updated_at = 100;
  m.activity = a;
  return m;
}

TeamView Team() {
  TeamView v;
  v.team.name = "web";
  v.team.lead = "lead";
  v.now = 1000;
  return v;
}

std::vector<std::string> Kinds(const std::vector<AttentionItem>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.emplace_back(AttentionKindName(i.kind));
  return out;
}

// After `down` nobody hosts the team: a task whose owner went with its
// host is brought back by `up`, not given away.
TEST(AttentionTest, ATaskWhoseHostWentDownIsBroughtBackByUp) {
  TeamView v = Team();
  v.members = {Member("lead", Shown::kOffline), Member("w1", Shown::kOffline)};
  Task t;
  t.id = 3;
  t.subject = "Write the docs";
  t.status = TaskStatus::kInProgress;
  t.owner = "w1";
  v.tasks = {t};
  auto items = Attention(v);
  ASSERT_EQ(Kinds(items), std::vector<std::string>{"orphaned_task"});
  EXPECT_EQ(items[0].hint, "mates up --team web");
  EXPECT_EQ(items[0].note, "hosts the team again: w1 goes on with it from its journal (or mates tasks --team web "
                           "update 3 --owner \"\" --status pending puts it back on the board)");
  // Hosted, the owner stopped: given back to the board.
  v.host = HostInfo{};
  v.members[1].shown = Shown::kShutdown;
  items = Attention(v);
  ASSERT_EQ(Kinds(items), std::vector<std::string>{"orphaned_task"});
  EXPECT_EQ(items[0].hint, "mates tasks --team web update 3 --owner \"\" --status pending");
}

// A circuit breaker's pause (DESIGN §27) is its own item, with the lever
// that brings the teammate back.
TEST(AttentionTest, APausedTeammateIsOfferedARestart) {
  TeamView v = Team();
  v.host = HostInfo{};
  v.members = {Member("lead", Shown::kIdle), Member("w1", Shown::kShutdown, agent::ActivityState::kStopped)};
  v.members[1].activity->error =
      agent::TurnFailure{"paused by a circuit breaker: the same bash call failed 5 times in a row (last: boom)", 900,
                         "a message lets it go on"};
  auto items = Attention(v);
  ASSERT_EQ(Kinds(items), std::vector<std::string>{"paused"});
  EXPECT_EQ(items[0].subject, "w1 was paused: the same bash call failed 5 times in a row (last: boom)");
  EXPECT_EQ(items[0].hint, "mates restart --team web w1");
  // A lead's pause: a message lets it go on.
  v.members[1].activity->error.reset();
  v.members[0].activity->error = agent::TurnFailure{"paused by a circuit breaker: x", 900, ""};
  items = Attention(v);
  ASSERT_EQ(Kinds(items), std::vector<std::string>{"paused"});
  EXPECT_EQ(items[0].hint, "mates send --team web --to lead \"Go on.\"");
}

TEST(AttentionTest, AQuietTeamNeedsNothing) {
  TeamView v = Team();
  v.members = {Member("lead", Shown::kIdle), Member("w1", Shown::kActive, agent::ActivityState::kTool)};
  Task t;
  t.id = 1;
  t.status = TaskStatus::kInProgress;
  t.owner = "w1";
  v.tasks = {t};
  EXPECT_TRUE(Attention(v).empty());
  EXPECT_EQ(StateOf(v.members[0]), "idle");
}

TEST(AttentionTest, EachKindWithItsHintInOrder) {
  TeamView v = Team();
  MemberView lead = Member("lead", Shown::kIdle, agent::ActivityState::kError);
  lead.activity->error = agent::TurnFailure{"HTTP 503 (gave up after 5 attempts)", 900, "tries again at its next message"};
  MemberView w1 = Member("w1", Shown::kActive, agent::ActivityState::kRetrying);
  w1.activity->retry = agent::Retry{3, 5, 1004, "connection refused"};
  MemberView w2 = Member("w2", Shown::kShutdown, agent::ActivityState::kStopped);
  w2.member.budget_tokens = 1000;
  w2.activity->tokens.input_tokens = 900;
  w2.activity->denials = {{950, "bash(curl x): [sandbox: network]"}, {10, "old"}};
  std::swap(w2.activity->denials[0], w2.activity->denials[1]);  // newest last
  v.members = {lead, w1, w2};
  Task orphan;
  orphan.id = 7;
  orphan.subject = "Write the docs";
  orphan.status = TaskStatus::kInProgress;
  orphan.owner = "w2";
  orphan.updated_at = 500;
  Task bounced = orphan;
  bounced.id = 8;
  bounced.owner = "w1";
  v.tasks = {orphan, bounced};
  MergeRequest conflict;
  conflict.id = 2;
  conflict.task = 8;
  conflict.owner = "w1";
  conflict.status = MergeState::kConflict;
  conflict.files = {"a.txt"};
  MergeRequest review = conflict;
  review.id = 3;
  review.task = 9;
  review.status = MergeState::kReview;
  MergeRequest old_failure = conflict;  // for a task done since: nobody's news
  old_failure.id = 1;
  old_failure.task = 99;
  old_failure.status = MergeState::kFailed;
  v.merge_list = {old_failure, conflict, review};
  v.team.git.target_branch = "mates/web";
  v.team.git.held_found = std::string(40, 'b');
  v.team.git.held_since = 800;
  ProtocolRequest plan;
  plan.id = "r-1";
  plan.kind = RequestKind::kPlanApproval;
  plan.requester = "w1";
  plan.responder = "lead";
  ProtocolRequest question;
  question.id = "r-2";
  question.kind = RequestKind::kElicitation;
  question.requester = "lead";
  question.responder = "user";
  question.content = R"({"server":"gh","message":"Which repo?","requestedSchema":{}})";
  v.requests = {plan, question};
  v.team.budget.tokens = 1000;

  auto items = Attention(v);
  EXPECT_EQ(Kinds(items), (std::vector<std::string>{"turn_failed", "retrying", "orphaned_task",
                                                    "merge_conflict", "merge_review", "merge_held", "question_waiting",
                                                    "plan_waiting", "budget", "budget", "sandbox_denied"}));
  EXPECT_EQ(items[6].subject, "MCP server gh asks you (for lead): Which repo?");
  EXPECT_EQ(items[6].hint, "mates answer --team web r-2 NAME=VALUE...");
  EXPECT_EQ(items[0].hint, "mates send --team web --to lead \"Go on.\"");
  EXPECT_EQ(StateOf(v.members[0]), "error");
  EXPECT_EQ(DoingOf(v.members[0], v.now),
            "error: HTTP 503 (gave up after 5 attempts) — tries again at its next message");
  EXPECT_EQ(StateOf(v.members[1]), "retrying");
  EXPECT_EQ(DoingOf(v.members[1], v.now), "retrying in 4 s (attempt 3 of 5): connection refused");
  EXPECT_EQ(DoingOf(v.members[1], 2000), "retrying now (attempt 3 of 5): connection refused");
  EXPECT_EQ(StateOf(v.members[2]), "shutdown");
  EXPECT_NE(items[2].subject.find("but its owner w2 has stopped"), std::string::npos) << items[2].subject;
  EXPECT_EQ(items[2].hint, "mates tasks --team web update 7 --owner \"\" --status pending");
  EXPECT_EQ(items[3].hint, "mates merges --team web show 2");
  EXPECT_EQ(items[4].hint, "mates merges --team web approve 3");
  EXPECT_EQ(items[5].hint, "mates merges --team web resume");
  EXPECT_EQ(items[7].hint,
            "mates send --team web --from lead --to w1 --type plan_approval_response --request-id r-1 --approve ok");
  EXPECT_NE(items[8].subject.find("w2 has spent 90 %"), std::string::npos) << items[8].subject;
  EXPECT_NE(items[9].subject.find("the team has spent 90 %"), std::string::npos) << items[9].subject;
  EXPECT_EQ(items[10].subject, "w2: bash(curl x): [sandbox: network]");
  // A refusal of long ago is no news.
  v.now = 950 + 16 * 60;
  EXPECT_EQ(Kinds(Attention(v)).back(), "budget");
}

}  // namespace
}  // namespace mates::view
