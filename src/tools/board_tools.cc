// TaskCreate, TaskGet, TaskUpdate, TaskList: the team's task board.
#include <nlohmann/json.hpp>

#include "core/names.h"
#include "git/submit.h"
#include "store/roster.h"
#include "tools/builtin_tools.h"
#include "tools/hook_calls.h"

namespace mates::tools {
namespace {

// The team's board in the context's store: a team that is not there is
// said so, not given a board.
Result<std::unique_ptr<TaskBoard>> TeamBoard(const ToolContext& ctx) {
  if (ctx.team.empty()) return Status::FailedPrecondition("you are not in a team yet (create one with TeamCreate)");
  return ctx.store().CheckedBoard(ctx.team);
}

std::string IdList(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "#" : ", #") + std::to_string(id);
  return s;
}

std::string Line(const Task& t) {
  std::string out = "#" + std::to_string(t.id) + " [" + std::string(TaskStatusName(t.status)) + "] " + t.subject;
  if (!t.owner.empty()) out += " (owner: " + t.owner + ")";
  if (!t.blocked_by.empty()) out += " depends on " + IdList(t.blocked_by);
  return out;
}

Caller CallerOf(const ToolContext& ctx) { return Caller{ctx.agent, ctx.is_lead}; }

class TaskCreateTool : public Tool {
 public:
  std::string name() const override { return "TaskCreate"; }
  std::string description() const override {
    return "Add a task to the team's shared task board. Teammates claim pending, unowned tasks "
           "whose blockers are all completed, lowest id first, so create tasks in a sensible "
           "order and give each what it waits for in blockedBy. Returns the new task's id.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "subject":{"type":"string","description":"A short imperative title, e.g. 'Implement resolvers'"},
      "description":{"type":"string","description":"What done means, with the details a teammate needs"},
      "activeForm":{"type":"string","description":"Shown while in progress, e.g. 'Implementing resolvers'"},
      "blockedBy":{"type":"array","items":{"type":["integer","string"]},"description":"Ids of tasks that must be completed first"},
      "paths":{"type":"array","items":{"type":"string"},"description":"Its file lease: the paths or globs it changes (src/auth/**). A teammate claiming work passes over a task whose lease overlaps one in progress while another is ready"}},
      "required":["subject"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    TaskDraft d;
    d.subject = in.String("subject", true);
    d.description = in.String("description", false);
    d.active_form = in.String("activeForm", false);
    d.blocked_by = in.IdList("blockedBy");
    d.paths = in.StringList("paths");
    if (!in.ok()) return ToolResult::Error(in.errors());
    auto board = TeamBoard(ctx);
    if (!board.ok()) return ToolResult::Error(board.status().message());
    // The person's TaskCreated hooks may refuse it (DESIGN §22).
    if (ctx.hooks && ctx.hooks->Wants(hooks::Event::kTaskCreated)) {
      Json h = HookInput(ctx);
      h["task_subject"] = d.subject;
      h["task_description"] = d.description;
      h["teammate_name"] = ctx.agent;
      h["task"] = {{"subject", d.subject}, {"description", d.description}, {"blockedBy", d.blocked_by}};
      hooks::Outcome o = RunHooks(ctx, hooks::Event::kTaskCreated, {}, std::move(h));
      if (o.blocked) {
        return ToolResult::Refused("A TaskCreated hook refused this task:\n" + o.reason,
                                   {Refusal::By::kHook, "TaskCreated", o.reason});
      }
    }
    auto t = (*board)->Create(d);
    if (!t.ok()) return ToolResult::Error(t.status().message());
    return ToolResult::Ok("Created task #" + std::to_string(t->id) + ": " + t->subject +
                          (t->blocked_by.empty() ? "" : " (depends on " + IdList(t->blocked_by) + ")"));
  }
};

class TaskGetTool : public Tool {
 public:
  std::string name() const override { return "TaskGet"; }
  std::string description() const override {
    return "Show one task of the team's board in full: subject, description, status, owner, "
           "what blocks it and what it blocks.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "task_id":{"type":["integer","string"],"description":"The task's id"}},"required":["task_id"]})S";
  }
  bool read_only() const override { return true; }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    int64_t id = in.Id("task_id", true);
    if (!in.ok()) return ToolResult::Error(in.errors());
    auto board = TeamBoard(ctx);
    if (!board.ok()) return ToolResult::Error(board.status().message());
    auto t = (*board)->Get(id);
    if (!t.ok()) return ToolResult::Error(t.status().message());
    // Its history is for people (the dashboard): tokens the model need not read.
    Json j = TaskToJson(*t);
    j.erase("history");
    return ToolResult::Ok(DumpJsonPretty(j));
  }
};

class TaskUpdateTool : public Tool {
 public:
  std::string name() const override { return "TaskUpdate"; }
  std::string description() const override {
    return "Change a task on the team's board: set status (pending, in_progress, completed, "
           "deleted), owner, subject, description, activeForm, metadata (merged; null removes a "
           "key), or add dependencies (addBlockedBy: tasks this one waits for; addBlocks: tasks "
           "that wait for this one). Mark a task completed as soon as it is done: that unblocks "
           "the tasks waiting for it. Only the lead may reassign a task someone else owns. When "
           "the owner works in its own git worktree, completed means submitted: the worktree is "
           "committed and merged by the team's merge queue, and the task completes once merged.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "task_id":{"type":["integer","string"],"description":"The task's id"},
      "status":{"type":"string","enum":["pending","in_progress","completed","deleted"]},
      "owner":{"type":"string","description":"A member's name, or '' to release the task"},
      "subject":{"type":"string"},
      "description":{"type":"string"},
      "activeForm":{"type":"string"},
      "addBlockedBy":{"type":"array","items":{"type":["integer","string"]}},
      "addBlocks":{"type":"array","items":{"type":["integer","string"]}},
      "metadata":{"type":"object"}},
      "required":["task_id"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    int64_t id = in.Id("task_id", true);
    TaskPatch p;
    if (in.Has("status")) {
      auto s = ParseTaskStatusAsSaid(in.String("status", true));
      if (!s.ok()) return ToolResult::Error(s.status().message());
      p.status = *s;
    }
    if (in.Has("owner")) p.owner = in.String("owner", true);
    if (in.Has("subject")) p.subject = in.String("subject", true);
    if (in.Has("description")) p.description = in.String("description", true);
    if (in.Has("activeForm")) p.active_form = in.String("activeForm", true);
    if (in.Has("metadata")) {
      if (!input["metadata"].is_object()) return ToolResult::Error("field 'metadata' must be an object");
      p.metadata_json = DumpJson(input["metadata"]);
    }
    p.add_blocked_by = in.IdList("addBlockedBy");
    p.add_blocks = in.IdList("addBlocks");
    if (!in.ok()) return ToolResult::Error(in.errors());
    auto board = TeamBoard(ctx);
    if (!board.ok()) return ToolResult::Error(board.status().message());
    if (p.status == TaskStatus::kCompleted && ctx.hooks && ctx.hooks->Wants(hooks::Event::kTaskCompleted)) {
      // The person's TaskCompleted hooks (DESIGN §22): the quality gate
      // between a teammate and "done". A block keeps it in progress, the
      // hook's words the model's to act on.
      auto task = (*board)->Get(id);
      if (!task.ok()) return ToolResult::Error(task.status().message());
      Json h = HookInput(ctx);
      h["task_id"] = std::to_string(id);
      h["task_subject"] = task->subject;
      h["task_description"] = task->description;
      h["teammate_name"] = task->owner.empty() ? ctx.agent : task->owner;
      Json shown = TaskToJson(*task);
      shown.erase("history");
      h["task"] = std::move(shown);
      hooks::Outcome o = RunHooks(ctx, hooks::Event::kTaskCompleted, {}, std::move(h));
      if (o.blocked) {
        return ToolResult::Refused("A TaskCompleted hook kept task #" + std::to_string(id) + " " +
                                       std::string(TaskStatusName(task->status)) + ":\n" + o.reason,
                                   {Refusal::By::kHook, "TaskCompleted", o.reason});
      }
    }
    if (p.status == TaskStatus::kCompleted) {
      // An isolated owner's work completes through the merge queue.
      // The rest of the patch first (the commit message may use the new
      // subject); a bare completion writes the task once, below.
      TaskPatch rest = p;
      rest.status.reset();
      const bool more = rest.owner || rest.subject || rest.description || rest.active_form || rest.metadata_json ||
                        !rest.add_blocked_by.empty() || !rest.add_blocks.empty();
      if (more) {
        auto t = (*board)->Update(id, rest, CallerOf(ctx));
        if (!t.ok()) return ToolResult::Error(t.status().message());
      }
      // Only an isolated owner's task goes through the queue; a teammate may
      // complete no task but its own, so one sharing the workspace skips the
      // check (and its roster read) on the handoff path.
      if (ctx.is_lead || !ctx.work_root.empty()) {
        if (ctx.work_not_here.erase(id) > 0) {
          return ToolResult::Error(
              "task #" + std::to_string(id) + " was not completed: you were taken up here with it in progress, and "
              "what you did for it on another machine did not come with you. Check that its work is in your "
              "worktree (" + ctx.work_root.string() + "), do again what is missing, then mark it completed again.");
        }
        auto submitted = git::SubmitForMerge(ctx.ws, ctx.store(), ctx.team, id,
                                             CallerOf(ctx));
        if (!submitted.ok()) return ToolResult::Error(submitted.status().message());
        if (submitted->has_value()) return ToolResult::Ok((*submitted)->text);
      }
    }
    auto t = (*board)->Update(id, p, CallerOf(ctx));
    if (!t.ok()) return ToolResult::Error(t.status().message());
    return ToolResult::Ok("Updated " + Line(*t));
  }
};

class TaskListTool : public Tool {
 public:
  std::string name() const override { return "TaskList"; }
  std::string description() const override {
    return "List the team's tasks by id with status, owner and blockers, and say which are "
           "ready to be claimed.";
  }
  std::string input_schema() const override { return R"S({"type":"object","properties":{}})S"; }
  bool read_only() const override { return true; }
  ToolResult Run(const Json&, ToolContext& ctx) const override {
    auto board = TeamBoard(ctx);
    if (!board.ok()) return ToolResult::Error(board.status().message());
    auto tasks = (*board)->List(false);
    if (!tasks.ok()) return ToolResult::Error(tasks.status().message());
    if (tasks->empty()) return ToolResult::Ok("No tasks on the board.");
    std::map<int64_t, TaskStatus> status;
    for (const auto& t : *tasks) status[t.id] = t.status;
    std::string out;
    int counts[4] = {0, 0, 0, 0};
    std::vector<int64_t> ready;
    for (const auto& t : *tasks) {
      out += Line(t) + "\n";
      counts[static_cast<int>(t.status)]++;
      bool unblocked = true;
      for (int64_t b : t.blocked_by) unblocked = unblocked && status.count(b) > 0 && status[b] == TaskStatus::kCompleted;
      if (t.status == TaskStatus::kPending && t.owner.empty() && unblocked) ready.push_back(t.id);
    }
    out += std::to_string(counts[0]) + " pending, " + std::to_string(counts[1]) + " in progress, " +
           std::to_string(counts[2]) + " completed";
    if (!ready.empty()) out += "; ready to claim: " + IdList(ready);
    return ToolResult::Ok(out);
  }
};

}  // namespace

std::unique_ptr<Tool> MakeTaskCreateTool() { return std::make_unique<TaskCreateTool>(); }
std::unique_ptr<Tool> MakeTaskGetTool() { return std::make_unique<TaskGetTool>(); }
std::unique_ptr<Tool> MakeTaskUpdateTool() { return std::make_unique<TaskUpdateTool>(); }
std::unique_ptr<Tool> MakeTaskListTool() { return std::make_unique<TaskListTool>(); }

}  // namespace mates::tools
