// SendMessage (everyone), and the lead's Task, TaskOutput, TaskStop, Skill,
// TeamCreate, TeamDelete.
#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "git/submit.h"
#include "store/messenger.h"
#include "store/team_store.h"
#include "tools/builtin_tools.h"
#include "tools/skills.h"

namespace mates::tools {
namespace {

class SendMessageTool : public Tool {
 public:
  std::string name() const override { return "SendMessage"; }
  std::string description() const override {
    return "Send a message to a member of your team. Types: 'message' (to one member: "
           "recipient), 'broadcast' (to every member but you; use sparingly), "
           "'shutdown_request' (lead only: ask a teammate to wrap up and stop), "
           "'shutdown_response' (answer a shutdown_request: request_id, approve true with a "
           "summary of your work as content, or false with the reason), "
           "'plan_approval_request' (a teammate in plan mode sends its plan as content to the "
           "lead), 'plan_approval_response' (lead only: request_id, approve, and feedback when "
           "rejecting), 'compact_request' (lead only: the teammate summarises its context before its "
           "next model call; use it when a teammate's context is long (its tokens in mates status grow "
           "with every call) and it moves on to unrelated work). Messages arrive in the recipient's next turn; replies come to you the "
           "same way.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "type":{"type":"string","enum":["message","broadcast","shutdown_request","shutdown_response","plan_approval_request","plan_approval_response","compact_request"],"description":"Default: message"},
      "recipient":{"type":"string","description":"The member's name (not for broadcast)"},
      "content":{"type":"string","description":"The message text (the plan, the summary, the reason…)"},
      "summary":{"type":"string","description":"A few words shown with the message"},
      "request_id":{"type":"string","description":"The request a response answers"},
      "approve":{"type":"boolean","description":"For responses: yes or no"},
      "feedback":{"type":"string","description":"For plan_approval_response: what to change"}},
      "required":["content"]})S";
  }
  // Sending changes nothing in the workspace: allowed in plan mode (the plan
  // itself is sent with it).
  bool read_only() const override { return true; }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    SendRequest r;
    std::string type = in.String("type", false);
    if (!type.empty()) {
      auto t = ParseMessageType(type);
      if (!t.ok()) return ToolResult::Error(t.status().message());
      r.type = *t;
      // A question in an MCP server's name, from a model, would be a
      // phishing line to the person.
      if (r.type == MessageType::kElicitationRequest || r.type == MessageType::kElicitationResponse) {
        return ToolResult::Error(type + " is sent by mates for an MCP server's question, not by an agent");
      }
    }
    r.sender = ctx.agent;
    r.recipient = in.String("recipient", false);
    r.content = in.String("content", r.type != MessageType::kShutdownRequest &&
                                         r.type != MessageType::kCompactRequest &&
                                         r.type != MessageType::kPlanApprovalResponse &&
                                         r.type != MessageType::kShutdownResponse);
    r.summary = in.String("summary", false);
    r.request_id = in.String("request_id", false);
    r.feedback = in.String("feedback", false);
    if (in.Has("approve")) r.approve = in.Bool("approve", false);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (r.type == MessageType::kBroadcast && (r.recipient == "*" || r.recipient == "all")) r.recipient.clear();
    if (ctx.team.empty()) return ToolResult::Error("you are not in a team yet");
    std::unique_ptr<TeamMail> mail = ctx.store().Mail(ctx.team);
    auto receipt = Messenger(*mail).Send(r);
    if (!receipt.ok()) return ToolResult::Error(receipt.status().message());
    std::string to;
    for (const auto& n : receipt->recipients) to += (to.empty() ? "" : ", ") + n;
    std::string out = "Sent " + std::string(MessageTypeName(receipt->message.type)) + " to " +
                      (to.empty() ? "nobody (no other members)" : to);
    if (!receipt->message.request_id.empty()) out += " (request_id " + receipt->message.request_id + ")";
    // A lead working in a team it made: the person who started the session
    // reads `user`'s inbox in the team it began in, so it goes there too.
    if (r.recipient == kUserName && ctx.is_lead && !ctx.home_team.empty() &&
        ctx.home_team != ctx.team) {
      std::unique_ptr<TeamMail> home = ctx.store().Mail(ctx.home_team);
      auto there = Messenger(*home).Send(r);
      out += there.ok() ? " (also in team " + ctx.home_team + ", where this session began)"
                        : " (not in team " + ctx.home_team + ": " + there.status().message() + ")";
    }
    return ToolResult::Ok(out);
  }
};

class TaskTool : public Tool {
 public:
  std::string name() const override { return "Task"; }
  std::string description() const override {
    return "Hand work to another agent. Three modes: (1) with only a prompt: a subagent with a "
           "fresh context and the file and bash tools does the work and its final answer comes "
           "back to you (good for searches and self-contained jobs); (2) with run_in_background "
           "true: the same, but it runs while you go on; you get an id for TaskOutput / "
           "TaskStop and are told when it finishes; (3) with team_name and name: a persistent "
           "teammate joins your team, works through the task board and messages, and stays "
           "until shut down (plan_mode_required: it must have its plan approved first; model: "
           "its own model). Give every mode a complete, self-contained prompt.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "prompt":{"type":"string","description":"The complete instructions"},
      "description":{"type":"string","description":"A few words naming the job"},
      "run_in_background":{"type":"boolean"},
      "team_name":{"type":"string","description":"With name: spawn a persistent teammate in this team"},
      "name":{"type":"string","description":"The teammate's name"},
      "plan_mode_required":{"type":"boolean"},
      "model":{"type":"string"},
      "isolation":{"type":"string","enum":["shared","worktree"],"description":"A teammate's working copy: its own git worktree (its work merges back through the merge queue) or the shared workspace; default: the team's setting"},
      "budget_tokens":{"type":"integer","minimum":1,"description":"A teammate's token budget (all tokens it reads and writes); over it, it finishes its current tool and stops, and you are told"},
      "context_budget":{"type":"integer","minimum":1000,"description":"A teammate's context size in tokens above which it compacts its conversation; default: the host's setting"}},
      "required":["prompt"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string prompt = in.String("prompt", true);
    std::string description = in.String("description", false);
    bool background = in.Bool("run_in_background", false);
    std::string team = in.String("team_name", false);
    std::string name = in.String("name", false);
    bool plan = in.Bool("plan_mode_required", false);
    std::string model = in.String("model", false);
    std::string isolation = in.String("isolation", false);
    auto budget_tokens = static_cast<int64_t>(in.Number("budget_tokens", 0, 0, kMaxBudgetTokens));
    auto context_budget = static_cast<int64_t>(in.Number("context_budget", 0, 0, kMaxContextBudget));
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (prompt.find_first_not_of(" \t\n") == std::string::npos) return ToolResult::Error("the prompt is empty");
    if (context_budget > 0 && context_budget < kMinContextBudget) {
      return ToolResult::Error("context_budget must be at least 1000 tokens");
    }
    if ((budget_tokens > 0 || context_budget > 0) && (team.empty() || name.empty())) {
      return ToolResult::Error("budget_tokens and context_budget are for a persistent teammate (team_name and name)");
    }
    if (!team.empty() || !name.empty()) {
      if (team.empty() || name.empty()) {
        return ToolResult::Error("a teammate needs both team_name and name");
      }
      if (ctx.teams == nullptr) return ToolResult::Error("persistent teammates are not available here");
      tools::TeammateSpec spec;
      spec.team = team;
      spec.name = name;
      spec.prompt = prompt;
      spec.plan_mode_required = plan;
      spec.model = model;
      spec.isolation = isolation;
      spec.budget_tokens = budget_tokens;
      spec.context_budget = context_budget;
      auto r = ctx.teams->SpawnTeammate(spec);
      if (!r.ok()) return ToolResult::Error(r.status().message());
      return ToolResult::Ok(*r);
    }
    if (ctx.subagents == nullptr) return ToolResult::Error("subagents are not available here");
    if (background) {
      auto id = ctx.subagents->StartBackground(prompt, description.empty() ? "background task" : description, model);
      if (!id.ok()) return ToolResult::Error(id.status().message());
      return ToolResult::Ok("Started background task " + *id + ". Use TaskOutput(task_id=\"" + *id +
                            "\") to read its result; you will also be told when it finishes.");
    }
    auto text = ctx.subagents->RunSubagent(prompt, model, ctx.cancel);
    if (!text.ok()) return ToolResult::Error("the subagent failed: " + text.status().message());
    return ToolResult::Ok(*text);
  }
};

std::string DescribeBackground(const BackgroundStatus& s) {
  std::string out = "Background task " + s.id + " (" + s.description + "): " + std::string(BackgroundStateName(s.state));
  if (!s.output.empty()) out += "\n" + s.output;
  return out;
}

class TaskOutputTool : public Tool {
 public:
  std::string name() const override { return "TaskOutput"; }
  std::string description() const override {
    return "Read a background task's state and result (ids come from Task with "
           "run_in_background). With block true (the default) it waits up to timeout seconds "
           "(default 30) for the task to finish.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "task_id":{"type":"string","description":"The background task's id, e.g. bg-1"},
      "block":{"type":"boolean","description":"Wait for it to finish (default true)"},
      "timeout":{"type":"number","description":"Seconds to wait at most (default 30, max 600)"}},
      "required":["task_id"]})S";
  }
  bool read_only() const override { return true; }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string id = in.String("task_id", true);
    bool block = in.Bool("block", true);
    double timeout = in.Number("timeout", 30, 0, 600);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (ctx.subagents == nullptr) return ToolResult::Error("no background tasks here");
    auto s = ctx.subagents->Output(id, block, timeout);
    if (!s.ok()) return ToolResult::Error(s.status().message());
    return ToolResult::Ok(DescribeBackground(*s));
  }
};

class TaskStopTool : public Tool {
 public:
  std::string name() const override { return "TaskStop"; }
  std::string description() const override {
    return "Stop a background task (id from Task with run_in_background).";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{"task_id":{"type":"string"}},"required":["task_id"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string id = in.String("task_id", true);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (ctx.subagents == nullptr) return ToolResult::Error("no background tasks here");
    auto s = ctx.subagents->Stop(id);
    if (!s.ok()) return ToolResult::Error(s.status().message());
    return ToolResult::Ok(DescribeBackground(*s));
  }
};

class SkillTool : public Tool {
 public:
  std::string name() const override { return "Skill"; }
  std::string description() const override {
    return "Load a skill: instructions for a kind of work, listed in your system prompt. Call "
           "it before doing that kind of work and follow what it says.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{"name":{"type":"string","description":"The skill's name"}},"required":["name"]})S";
  }
  bool read_only() const override { return true; }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string name = in.String("name", true);
    if (!in.ok()) return ToolResult::Error(in.errors());
    const Skill* s = ctx.skills != nullptr ? ctx.skills->Find(name) : nullptr;
    if (s == nullptr) {
      std::string names;
      if (ctx.skills != nullptr) {
        for (const auto& k : ctx.skills->skills()) names += (names.empty() ? "" : ", ") + k.name;
      }
      return ToolResult::Error("no skill '" + name + "'" + (names.empty() ? " (there are no skills in skills/)" : "; available: " + names));
    }
    return ToolResult::Ok("# Skill: " + s->name + "\n\n" + s->body);
  }
};

class TeamCreateTool : public Tool {
 public:
  std::string name() const override { return "TeamCreate"; }
  std::string description() const override {
    return "Create a team and make it yours: from then on your task board, messages and inbox "
           "are this team's (one team at a time). Then add tasks with TaskCreate and spawn "
           "teammates with Task(team_name, name, prompt).";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "name":{"type":"string","description":"Letters, digits, '.', '_', '-' (e.g. rest-to-graphql)"},
      "description":{"type":"string"},
      "isolation":{"type":"string","enum":["shared","worktree"],"description":"worktree: each teammate works in its own git worktree and completed tasks merge back through the merge queue; shared: all work in the workspace; default: the host's setting"}},"required":["name"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string name = in.String("name", true);
    std::string description = in.String("description", false);
    std::string isolation = in.String("isolation", false);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (ctx.teams == nullptr) return ToolResult::Error("teams are not available here");
    auto r = ctx.teams->CreateTeam(name, description, isolation);
    if (!r.ok()) return ToolResult::Error(r.status().message());
    return ToolResult::Ok(*r);
  }
};

class TeamDeleteTool : public Tool {
 public:
  std::string name() const override { return "TeamDelete"; }
  std::string description() const override {
    return "Disband a team: every teammate is asked to shut down (and stopped if it does not "
           "answer in time), then the team's messages and tasks are removed. Says who stopped.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string name = in.String("name", true);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (ctx.teams == nullptr) return ToolResult::Error("teams are not available here");
    auto r = ctx.teams->DeleteTeam(name);
    if (!r.ok()) return ToolResult::Error(r.status().message());
    return ToolResult::Ok(*r);
  }
};

// The person's `mates restart|interrupt` as the lead's (DESIGN §27).
class TeammateControlTool : public Tool {
 public:
  std::string name() const override { return "TeammateControl"; }
  std::string description() const override {
    return "A lever on one of your teammates. restart: a stopped, failed or paused teammate comes back with its "
           "conversation and tasks (refused while it runs). interrupt: its current turn ends now (its model call "
           "cancelled, its command killed) and it waits for your message. To stop a teammate, send it a "
           "shutdown_request with SendMessage.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "name":{"type":"string","description":"The teammate"},
      "action":{"type":"string","enum":["restart","interrupt"]}},
      "required":["name","action"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string name = in.String("name", true);
    std::string action = in.String("action", true);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (ctx.teams == nullptr) return ToolResult::Error("teams are not available here");
    if (name == ctx.agent) return ToolResult::Error("that is you: a lever is for a teammate");
    auto r = ctx.teams->PullLever(action, name);
    if (!r.ok()) return ToolResult::Error(r.status().message());
    return ToolResult::Ok(*r);
  }
};

class MergeReviewTool : public Tool {
 public:
  std::string name() const override { return "MergeReview"; }
  std::string description() const override {
    return "Decide a merge request waiting for your review (the team merges with review on: you are "
           "told when one merged cleanly and passed its check). approve: true moves the target branch "
           "to it and completes the task; approve: false sends it back to its owner with your "
           "feedback, which should say what to change.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "id":{"type":["integer","string"],"description":"The merge request's id"},
      "approve":{"type":"boolean"},
      "feedback":{"type":"string","description":"Why, and what to change when rejecting"}},
      "required":["id","approve"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    int64_t id = in.Id("id", true);
    bool approve = in.Bool("approve", false);
    if (!in.Has("approve")) return ToolResult::Error("field 'approve' is required");
    std::string feedback = in.String("feedback", false);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (ctx.team.empty()) return ToolResult::Error("you are not in a team yet");
    auto m = git::DecideMerge(ctx.store(), ctx.team, id, approve, feedback, ctx.agent,
                              {ctx.hooks, ctx.sandbox, ctx.ws});
    if (!m.ok()) return ToolResult::Error(m.status().message());
    return ToolResult::Ok(approve ? "Approved merge request " + std::to_string(id) + " (task #" + std::to_string(m->task) +
                                        "): the merge queue moves " + m->target + " to it and completes the task."
                                  : "Rejected merge request " + std::to_string(id) + ": " + m->owner +
                                        " has your feedback and task #" + std::to_string(m->task) + " back.");
  }
};

}  // namespace

std::unique_ptr<Tool> MakeSendMessageTool() { return std::make_unique<SendMessageTool>(); }
std::unique_ptr<Tool> MakeTaskTool() { return std::make_unique<TaskTool>(); }
std::unique_ptr<Tool> MakeTaskOutputTool() { return std::make_unique<TaskOutputTool>(); }
std::unique_ptr<Tool> MakeTaskStopTool() { return std::make_unique<TaskStopTool>(); }
std::unique_ptr<Tool> MakeSkillTool() { return std::make_unique<SkillTool>(); }
std::unique_ptr<Tool> MakeTeamCreateTool() { return std::make_unique<TeamCreateTool>(); }
std::unique_ptr<Tool> MakeTeamDeleteTool() { return std::make_unique<TeamDeleteTool>(); }

std::unique_ptr<ToolRegistry> MakeToolRegistry(Scope scope) {
  auto r = std::make_unique<ToolRegistry>(scope);
  r->Add(MakeBashTool());
  r->Add(MakeReadFileTool());
  r->Add(MakeWriteFileTool());
  r->Add(MakeEditFileTool());
  if (scope == Scope::kSubagent) return r;
  r->Add(MakeTaskCreateTool());
  r->Add(MakeTaskGetTool());
  r->Add(MakeTaskUpdateTool());
  r->Add(MakeTaskListTool());
  r->Add(MakeSendMessageTool());
  if (scope == Scope::kTeammate) return r;
  r->Add(MakeTaskTool());
  r->Add(MakeSkillTool());
  r->Add(MakeTaskOutputTool());
  r->Add(MakeTaskStopTool());
  r->Add(MakeTeamCreateTool());
  r->Add(MakeTeamDeleteTool());
  r->Add(std::make_unique<MergeReviewTool>());
  r->Add(std::make_unique<TeammateControlTool>());
  return r;
}

}  // namespace mates::tools
