#include "mcp/team_tools.h"

#include <nlohmann/json.hpp>

#include "agent/activity.h"
#include "agent/conversation.h"
#include "view/attention.h"
#include "view/team_view.h"
#include "git/worktrees.h"
#include "store/board.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "tools/builtin_tools.h"

namespace mates::mcp {
namespace {

ToolOutcome From(const tools::ToolResult& r) { return {r.content, r.is_error}; }
ToolOutcome Error(std::string text) { return {std::move(text), true}; }

// The built-in tools' context for one call, as `who`: lead or not (the
// roster says), and the member's own worktree when it works in one.
Result<tools::ToolContext> ContextFor(const TeamIdentity& who) {
  MATES_ASSIGN_OR_RETURN(TeamConfig team, who.store.LoadTeam(who.team));
  tools::ToolContext ctx(who.ws, who.store);
  ctx.team = who.team;
  ctx.agent = who.name;
  ctx.is_lead = team.lead == who.name;
  const Member* m = team.Find(who.name);
  if (m == nullptr && who.name != kUserName) {
    return Status::FailedPrecondition("'" + who.name + "' is not a member of team '" + who.team +
                                      "' (start `mates mcp` with --as one of its members)");
  }
  // (A shared store's worktrees are made by the host that runs each.)
  if (m != nullptr && m->worktree && who.store.WorktreesHere()) ctx.work_root = git::TeammateWorktree(who.ws, who.team, who.name);
  return ctx;
}

// A tool that runs a built-in one under its own name and description.
ToolSpec Wrapped(const TeamIdentity& who, std::string name, std::string title, std::string description,
                 std::shared_ptr<tools::Tool> builtin) {
  ToolSpec spec;
  spec.name = std::move(name);
  spec.title = std::move(title);
  spec.description = std::move(description);
  auto schema = ParseJson(builtin->input_schema());
  spec.input_schema = schema.ok() ? *schema : Json{{"type", "object"}};
  spec.read_only = builtin->read_only() && spec.name != "send_message";
  spec.run = [who, builtin](const Json& arguments, CallContext&) -> ToolOutcome {
    auto ctx = ContextFor(who);
    if (!ctx.ok()) return Error(ctx.status().message());
    return From(builtin->Run(arguments, *ctx));
  };
  return spec;
}

// A tool of the server's own.
ToolSpec Own(std::string name, std::string title, std::string description, const char* schema, bool read_only,
             std::function<ToolOutcome(const Json&, CallContext&)> run) {
  ToolSpec spec;
  spec.name = std::move(name);
  spec.title = std::move(title);
  spec.description = std::move(description);
  spec.input_schema = Json::parse(schema);
  spec.read_only = read_only;
  spec.run = std::move(run);
  return spec;
}

ToolOutcome TeamStatus(const TeamIdentity& who) {
  auto v = view::LookAtTeam(who.store, who.team, 0);
  if (!v.ok()) return Error(v.status().message());
  std::string out = "team " + who.team + " (lead: " + v->team.lead + "; you are " + who.name + ")\n";
  out += "board: " + std::to_string(v->board.at("pending")) + " pending, " +
         std::to_string(v->board.at("in_progress")) + " in progress, " + std::to_string(v->board.at("completed")) +
         " completed\nmembers:\n";
  for (const auto& m : v->members) {
    out += "  " + m.member.name + " (" + std::string(MemberRoleName(m.member.role)) + "): " + view::StateOf(m);
    std::string doing = m.shown == Shown::kOffline ? "its host is gone" : view::DoingOf(m, v->now);
    if (!doing.empty()) out += ", " + doing;
    if (m.task) out += "; task #" + std::to_string(m.task->id) + " " + m.task->subject;
    out += "\n";
  }
  return {out, false};
}

ToolOutcome ClaimTask(const TeamIdentity& who, const Json& arguments) {
  tools::InputReader in(arguments);
  const bool by_id = in.Has("task_id");
  int64_t id = by_id ? in.Id("task_id", true) : 0;
  if (!in.ok()) return Error(in.errors());
  auto ctx = ContextFor(who);
  if (!ctx.ok()) return Error(ctx.status().message());
  if (who.name == kUserName) return Error("only members claim tasks (this server speaks as 'user')");
  std::unique_ptr<TaskBoard> board = who.store.Board(who.team);
  Task claimed;
  if (by_id) {
    auto t = board->Claim(id, who.name);
    if (!t.ok()) return Error(t.status().message());
    claimed = *t;
  } else {
    auto t = board->ClaimNext(who.name);
    if (!t.ok()) return Error(t.status().message());
    if (!t->has_value()) {
      return {"Nothing to claim now: no pending task that is unowned (or yours) with all its blockers completed.",
              false};
    }
    claimed = **t;
  }
  std::string out = "Claimed task #" + std::to_string(claimed.id) + ": " + claimed.subject + " (now in_progress, yours)";
  if (!claimed.description.empty()) out += "\n\n" + claimed.description;
  out += "\n\nWhen it is done, mark it completed with update_task (that unblocks the tasks waiting for it).";
  return {out, false};
}

ToolOutcome ReadInbox(const TeamIdentity& who, const Json& arguments, CallContext& call) {
  tools::InputReader in(arguments);
  double wait_s = in.Number("wait_seconds", 0, 0, kMaxInboxWaitSeconds);
  bool peek = in.Bool("peek", false);
  if (!in.ok()) return Error(in.errors());
  auto ctx = ContextFor(who);
  if (!ctx.ok()) return Error(ctx.status().message());
  std::unique_ptr<Inbox> box = who.store.InboxOf(who.team, who.name);
  // Subscribed before the first look, so that nothing falls in between; a
  // cancellation notifies the same waker.
  std::unique_ptr<Inbox::Watch> watch;
  if (wait_s > 0) {
    auto w = box->WatchWith(call.waker);
    if (!w.ok()) return Error(w.status().message());
    watch = std::move(*w);
  }
  Deadline deadline = DeadlineIn(wait_s);
  // Waiting, a store that cannot be reached is waited out (DESIGN §13).
  auto lost = [&](const Status& s, uint64_t seen) {
    return wait_s > 0 && !call.cancelled.load() && WaitOutOutage(s, *call.waker, seen, deadline);
  };
  for (;;) {
    uint64_t seen = call.waker->generation();
    std::vector<Message> got;
    if (peek) {
      auto msgs = box->Peek();
      if (!msgs.ok()) {
        if (lost(msgs.status(), seen)) continue;
        return Error(msgs.status().message());
      }
      got = std::move(*msgs);
    } else {
      // Once the answer carries them they are the client's: a client that
      // cancels afterwards would lose them, so a cancelled call leaves them.
      bool cancelled = false;
      auto taken = box->Take([&](const std::vector<Message>& msgs) {
        cancelled = !msgs.empty() && call.cancelled.load();
        return !cancelled;
      });
      if (!taken.ok()) {
        if (lost(taken.status(), seen)) continue;
        return Error(taken.status().message());
      }
      if (cancelled) return Error("cancelled");
      got = std::move(taken->messages);
      if (got.empty() && taken->more) continue;  // the inbox itself may hold more
    }
    if (!got.empty()) {
      std::string out;
      for (const auto& m : got) out += (out.empty() ? "" : "\n") + agent::FormatTeammateMessage(m);
      return {out, false};
    }
    if (wait_s <= 0) return {"No new messages.", false};
    if (call.cancelled.load()) return Error("cancelled");
    if (call.waker->WaitChange(seen, deadline) == seen && Expired(deadline)) {
      return {"No message came within " + std::to_string(static_cast<long>(wait_s)) + " s.", false};
    }
  }
}

}  // namespace

std::vector<ToolSpec> TeamTools(const TeamIdentity& who) {
  std::vector<ToolSpec> out;
  out.push_back(Wrapped(
      who, "send_message", "Send a message",
      "Send a message to a member of your team (you are '" + who.name + "' in team '" + who.team +
          "'). Types: 'message' (to one member: recipient), 'broadcast' (to every member but you; use sparingly), "
          "'shutdown_request' (lead only: ask a teammate to wrap up and stop), 'shutdown_response' (answer a "
          "shutdown_request: request_id, approve true with a summary of your work as content, or false with the "
          "reason), 'plan_approval_request' (in plan mode: your plan as content, to the lead), "
          "'plan_approval_response' (lead only: request_id, approve, and feedback when rejecting), "
          "'compact_request' (lead only). Messages arrive in the recipient's next turn; replies come to your inbox: "
          "read them with read_inbox.",
      tools::MakeSendMessageTool()));
  out.push_back(Own(
      "read_inbox", "Read your inbox",
      "Take the messages sent to you ('" + who.name +
          "') from your inbox, oldest first; each is shown once. With wait_seconds, wait up to that long for a "
          "message when there is none yet (use it when you have nothing else to do and expect a reply). With peek, "
          "look without taking them. Messages with a request_id (shutdown_request, plan_approval_response…) "
          "expect an answer through send_message.",
      R"S({"type":"object","properties":{
        "wait_seconds":{"type":"number","minimum":0,"maximum":3600,"description":"Wait up to this many seconds for a message if none is there (default 0: do not wait)"},
        "peek":{"type":"boolean","description":"Show the messages without taking them (default false)"}}})S",
      false, [who](const Json& a, CallContext& call) { return ReadInbox(who, a, call); }));
  out.back().may_wait = [](const Json& a) {
    auto w = a.find("wait_seconds");
    return w != a.end() && w->is_number() && w->get<double>() > 0;
  };
  out.push_back(Wrapped(who, "list_tasks", "List the team's tasks",
                        "List the team's tasks by id with status, owner and blockers, and say which are ready to be "
                        "claimed (pending, unowned, every blocker completed).",
                        tools::MakeTaskListTool()));
  out.push_back(Wrapped(who, "get_task", "Show one task",
                        "Show one task of the team's board in full: subject, description, status, owner, what blocks "
                        "it and what it blocks.",
                        tools::MakeTaskGetTool()));
  out.push_back(Wrapped(who, "create_task", "Create a task",
                        "Add a task to the team's shared board. Members claim pending, unowned tasks whose blockers "
                        "are all completed, lowest id first, so create tasks in a sensible order and give each what "
                        "it waits for in blockedBy. Returns the new task's id.",
                        tools::MakeTaskCreateTool()));
  out.push_back(Wrapped(
      who, "update_task", "Update a task",
      "Change a task on the team's board: status (pending, in_progress, completed, deleted), owner, subject, "
      "description, activeForm, metadata (merged; null removes a key), or dependencies (addBlockedBy: tasks this "
      "one waits for; addBlocks: tasks that wait for this one). Mark your task completed as soon as it is done: "
      "that unblocks the tasks waiting for it. Only the lead may change a task someone else owns.",
      tools::MakeTaskUpdateTool()));
  out.push_back(Own(
      "claim_task", "Claim a task",
      "Take a task to work on: it becomes in_progress and yours. With task_id, that task (it must be pending, "
      "unowned or already yours, with every blocker completed); without, the next one: the lowest such task "
      "assigned to you, else the lowest unowned one. Says so when there is nothing to claim.",
      R"S({"type":"object","properties":{
        "task_id":{"type":["integer","string"],"description":"The task to claim (default: the next claimable one)"}}})S",
      false, [who](const Json& a, CallContext&) { return ClaimTask(who, a); }));
  out.push_back(Own("team_status", "The team at a glance",
                    "The team's members (role, state, what each is doing and its task) and the board's counts by "
                    "status.",
                    R"S({"type":"object","properties":{}})S", true,
                    [who](const Json&, CallContext&) { return TeamStatus(who); }));
  return out;
}

std::string TeamInstructions(const TeamIdentity& who) {
  return "You are '" + who.name + "', a member of the mates team '" + who.team +
         "'. Your team talks through messages (send_message, read_inbox) and shares a task board "
         "(list_tasks, get_task, claim_task, update_task, create_task). Claim a ready task, do it, mark it "
         "completed, then claim the next; answer requests (shutdown_request, plan approval) through send_message.";
}

}  // namespace mates::mcp
