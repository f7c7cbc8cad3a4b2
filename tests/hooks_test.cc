// Hooks end to end (DESIGN §22): `mates run` with the scripted provider
// and the person's hooks — real bash and node scripts written to Claude
// Code's documented contract — between the lead and its tools and board:
// a PreToolUse guard blocks `rm -rf` by exit 2 (the command never runs,
// the model's next input carries the hook's words); another rewrites a
// command (updatedInput); a PostToolUse hook adds context; a TaskCompleted
// gate keeps a task in progress until its check passes. A workspace's own
// hooks run only once trusted. `mates hooks list` and `hooks test` show
// and run them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

// A Bash command validator as Claude Code's hooks guide writes one: the
// input on stdin, tool_input.command read from it, exit 2 with the reason
// on stderr.
const char kGuard[] = R"SH(#!/bin/bash
input=$(cat)
if printf '%s' "$input" | grep -q '"command":"rm -rf'; then
  echo "Blocked: rm -rf is not allowed in this repository" >&2
  exit 2
fi
exit 0
)SH";

// A node hook that rewrites `ls` into a listing it prefers
// (hookSpecificOutput.updatedInput), and says nothing of anything else.
const char kRewrite[] = R"JS(let s = "";
process.stdin.on("data", (d) => (s += d));
process.stdin.on("end", () => {
  const input = JSON.parse(s);
  if (input.tool_name === "Bash" && input.tool_input.command.startsWith("ls")) {
    process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse",
      permissionDecision: "allow", updatedInput: { command: "echo rewritten by the hook" } } }));
  }
});
)JS";

// A TaskCompleted gate: the task is done when its check passes.
const char kGate[] = R"SH(#!/bin/bash
input=$(cat)
if [ ! -e "$CLAUDE_PROJECT_DIR/tests.ok" ]; then
  echo "tests fail: create tests.ok first ($(printf '%s' "$input" | grep -o '"task_subject":"[^"]*"'))" >&2
  exit 2
fi
)SH";

const char kScenario[] = R"Y(rules:
  - agent: lead
    when: "Clean up"
    reply: [{type: tool_use, name: bash, input: {command: "rm -rf victim && echo removed"}}]
  - agent: lead
    when: "Blocked: rm -rf is not allowed"
    reply:
      - {type: tool_use, name: bash, input: {command: "ls -la"}}
  - agent: lead
    when: "rewritten by the hook"
    reply: [{type: tool_use, name: write_file, input: {path: "notes.txt", content: "hello\n"}}]
  - agent: lead
    when: "formatted by the hook"
    reply: [{type: tool_use, name: TaskCreate, input: {subject: "Ship it", description: "with tests"}}]
  - agent: lead
    when: "Created task #(\\d+)"
    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: "$1", status: completed}}]
  - agent: lead
    when: "tests fail: create tests.ok first"
    reply:
      - {type: tool_use, name: bash, input: {command: "touch tests.ok"}}
      - {type: tool_use, name: TaskUpdate, input: {task_id: "1", status: completed}}
  - agent: lead
    when: "Updated #1"
    reply: [{type: text, text: "All done."}]
)Y";

class HooksE2eTest : public ::testing::Test {
 protected:
  HooksE2eTest() {
    WriteAll(ws_.path() / "victim/file", "keep me\n");
    WriteAll(ws_.path() / "hooks/guard.sh", kGuard);
    WriteAll(ws_.path() / "hooks/rewrite.js", kRewrite);
    WriteAll(ws_.path() / "hooks/gate.sh", kGate);
    WriteAll(ws_.path() / "scenario.yaml", kScenario);
    const std::string h = (ws_.path() / "hooks").string();
    config_ = "hooks:\n"
              "  PreToolUse:\n"
              "    - matcher: Bash\n"
              "      hooks:\n"
              "        - {type: command, command: 'bash " + h + "/guard.sh'}\n"
              "        - {type: command, command: 'node " + h + "/rewrite.js', timeout: 30}\n"
              "  PostToolUse:\n"
              "    - matcher: Write|Edit\n"
              "      hooks:\n"
              "        - {type: command, command: \"echo '{\\\"hookSpecificOutput\\\":{\\\"additionalContext\\\":\\\"formatted by the hook\\\"}}'\"}\n"
              "  TaskCompleted:\n"
              "    - hooks: [{type: command, command: 'bash " + h + "/gate.sh'}]\n";
  }
  std::vector<std::string> Env() const { return {"XDG_CONFIG_HOME=" + (home_.path()).string()}; }
  testing::CommandResult Mates(const std::vector<std::string>& args) { return testing::RunMates(ws_.path(), args, Env()); }

  TempDir ws_, home_;
  std::string config_;
};

TEST_F(HooksE2eTest, TheLeadsToolsAndBoardGoThroughThePersonsHooks) {
  if (testing::Run({"node", "--version"}).exit_code != 0) GTEST_SKIP() << "no node";
  WriteAll(home_.path() / "mates/config.yaml", config_);
  auto r = Mates({"run", "--provider", "scripted", "--scenario", (ws_.path() / "scenario.yaml").string(), "--fresh",
                  "Clean up"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Blocked: the command never ran; the model read why.
  EXPECT_EQ(ReadAll(ws_.path() / "victim/file"), "keep me\n");
  const std::string journal = ReadAll(ws_.path() / ".teams/default/agents/lead.jsonl");
  EXPECT_NE(journal.find("A PreToolUse hook blocked this call:\\nBlocked: rm -rf is not allowed in this repository"),
            std::string::npos);
  // Rewritten: what ran is the hook's command.
  EXPECT_NE(journal.find("rewritten by the hook"), std::string::npos);
  // Context after a write.
  EXPECT_NE(journal.find("[PostToolUse hook: formatted by the hook]"), std::string::npos);
  // The gate kept the task in progress once, then let it complete.
  EXPECT_NE(journal.find("A TaskCompleted hook kept task #1 pending:\\ntests fail: create tests.ok first "
                         "(\\\"task_subject\\\":\\\"Ship it\\\")"),
            std::string::npos)
      << journal.substr(0, 4000);
  auto task = Mates({"tasks", "--team", "default", "get", "1", "--json"});
  auto j = ParseJson(task.out);
  ASSERT_TRUE(j.ok()) << task.out << task.err;
  EXPECT_EQ((*j)["status"], "completed");
  EXPECT_NE(r.out.find("All done."), std::string::npos) << r.out;
  // The blocks are news for people.
  auto status = Mates({"status", "--json"});
  auto s = ParseJson(status.out);
  ASSERT_TRUE(s.ok()) << status.out;
  bool blocked = false;
  for (const auto& i : (*s)["attention"]) blocked |= i["kind"] == "hook_blocked";
  EXPECT_TRUE(blocked) << (*s)["attention"].dump();
}

// TeammateIdle: a teammate about to go idle is kept working by the gate's
// words until what it asks for is there; Stop does the same for the
// lead's turn.
TEST_F(HooksE2eTest, IdleAndStopGatesKeepAgentsWorkingUntilTheyPass) {
  WriteAll(home_.path() / "mates/config.yaml",
           "hooks:\n"
           "  TeammateIdle:\n"
           "    - hooks: [{type: command, command: '[ -e \"$CLAUDE_PROJECT_DIR/w1.extra\" ] || "
           "{ echo \"write w1.extra first\" >&2; exit 2; }'}]\n"
           "  Stop:\n"
           "    - hooks: [{type: command, command: 'grep -q stop_hook_active.:false && [ ! -e "
           "\"$CLAUDE_PROJECT_DIR/summary.txt\" ] && { echo \"write summary.txt first\" >&2; exit 2; }; exit 0'}]\n");
  WriteAll(ws_.path() / "team.yaml", R"Y(rules:
  - agent: lead
    when: "Start w1"
    reply: [{type: tool_use, name: Task, input: {team_name: hk, name: w1, prompt: "Say hi."}}]
  - agent: lead
    when: "write summary.txt first"
    reply: [{type: tool_use, name: bash, input: {command: "echo summary > summary.txt"}}]
  - {agent: lead, once: false, reply: [{type: text, text: "Noted."}]}
  - agent: w1
    when: "write w1.extra first"
    reply: [{type: tool_use, name: bash, input: {command: "touch w1.extra"}}]
  - {agent: w1, once: false, reply: [{type: text, text: "Done."}]}
)Y");
  auto r = Mates({"run", "--team", "hk", "--provider", "scripted", "--scenario", (ws_.path() / "team.yaml").string(),
                  "--idle-timeout", "0", "Start w1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(ws_.path() / "w1.extra")) << "the teammate went idle past its gate";
  EXPECT_NE(ReadAll(ws_.path() / ".teams/hk/agents/w1.jsonl").find("[TeammateIdle hook] Not done yet:\\nwrite w1.extra first"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(ws_.path() / "summary.txt")) << "the lead's turn ended past its gate";
  EXPECT_NE(ReadAll(ws_.path() / ".teams/hk/agents/lead.jsonl").find("[Stop hook] Not done yet:\\nwrite summary.txt first"),
            std::string::npos);
}

TEST_F(HooksE2eTest, AWorkspacesHooksRunOnlyOnceTrusted) {
  WriteAll(ws_.path() / ".mates/config.yaml",
           "hooks:\n  PreToolUse:\n    - hooks: [{type: command, command: 'touch " + (ws_.path() / "pwned").string() +
               "'}]\n");
  WriteAll(ws_.path() / "s.yaml",
           "rules:\n  - {agent: lead, when: go, reply: [{type: tool_use, name: bash, input: {command: 'true'}}]}\n"
           "default_reply: [{type: text, text: ok}]\n");
  auto r = Mates({"run", "--provider", "scripted", "--scenario", (ws_.path() / "s.yaml").string(), "go"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(ws_.path() / "pwned")) << "an untrusted workspace's hook ran";
  EXPECT_NE(r.err.find("has hooks, not run"), std::string::npos) << r.err;
  auto list = Mates({"hooks", "list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("NOT RUN: not trusted"), std::string::npos) << list.out;
  ASSERT_EQ(Mates({"trust"}).exit_code, 0);
  auto again = Mates({"run", "--provider", "scripted", "--scenario", (ws_.path() / "s.yaml").string(), "--fresh", "go"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(fs::exists(ws_.path() / "pwned")) << "a trusted workspace's hook did not run";
}

TEST_F(HooksE2eTest, HooksTestRunsAnEventAsAnAgentWouldAndListShowsThem) {
  WriteAll(home_.path() / "mates/config.yaml", config_);
  auto list = Mates({"hooks", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto j = ParseJson(list.out);
  ASSERT_TRUE(j.ok()) << list.out;
  EXPECT_EQ(j->size(), 4u);
  EXPECT_EQ((*j)[0]["event"], "PreToolUse");
  EXPECT_EQ((*j)[0]["trusted"], true);
  WriteAll(ws_.path() / "in.json", R"({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}})");
  auto blocked = Mates({"hooks", "test", "PreToolUse", "--input", (ws_.path() / "in.json").string()});
  EXPECT_EQ(blocked.exit_code, 2) << blocked.out << blocked.err;
  EXPECT_NE(blocked.out.find("BLOCKED"), std::string::npos) << blocked.out;
  EXPECT_NE(blocked.out.find("Blocked: rm -rf is not allowed"), std::string::npos) << blocked.out;
  // By mates' own name too, as a run matches it (both names are tried).
  WriteAll(ws_.path() / "mates_name.json", R"({"tool_name": "bash", "tool_input": {"command": "rm -rf /"}})");
  auto by_mates_name = Mates({"hooks", "test", "PreToolUse", "--input", (ws_.path() / "mates_name.json").string()});
  EXPECT_EQ(by_mates_name.exit_code, 2) << by_mates_name.out << by_mates_name.err;
  EXPECT_NE(by_mates_name.out.find("Blocked: rm -rf is not allowed"), std::string::npos) << by_mates_name.out;
  WriteAll(ws_.path() / "read.json", R"({"tool_name": "Read", "tool_input": {"file_path": "/etc/hostname"}})");
  auto none = Mates({"hooks", "test", "PreToolUse", "--input", (ws_.path() / "read.json").string()});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("no trusted hook runs on PreToolUse for Read"), std::string::npos) << none.out;
  EXPECT_EQ(Mates({"hooks", "test", "NoSuchEvent", "--input", (ws_.path() / "in.json").string()}).exit_code, 2);
  WriteAll(ws_.path() / "bad.json", "[1,2]");
  EXPECT_EQ(Mates({"hooks", "test", "PreToolUse", "--input", (ws_.path() / "bad.json").string()}).exit_code, 2);
}

// UserPromptSubmit sees what a person says to an agent — a goal, a line,
// a message from `user` — and SessionStart each session's start: a block
// erases the prompt (the model never reads it; the log says so), what a
// hook prints joins the model's input.
TEST_F(HooksE2eTest, PromptsAndSessionStartsGoThroughThePersonsHooks) {
  WriteAll(home_.path() / "mates/config.yaml",
           "hooks:\n"
           "  UserPromptSubmit:\n"
           "    - hooks: [{type: command, command: 'grep -q password && { echo \"no secrets in prompts\" >&2; exit 2; }; "
           "echo house rule: be brief'}]\n"
           "  SessionStart:\n"
           "    - matcher: startup\n"
           "      hooks: [{type: command, command: 'echo session note: build with make'}]\n");
  WriteAll(ws_.path() / "s.yaml",
           "rules:\n"
           "  - {agent: lead, when: 'ship on friday', reply: [{type: text, text: Friday it is.}]}\n"
           "  - {agent: lead, when: 'house rule: be brief', once: false, reply: [{type: text, text: Brief.}]}\n"
           "default_reply: [{type: text, text: ok}]\n");
  const std::string scenario = (ws_.path() / "s.yaml").string();
  auto blocked = Mates({"run", "--provider", "scripted", "--scenario", scenario, "Deploy with password hunter2"});
  EXPECT_NE(blocked.exit_code, 0) << blocked.out;
  EXPECT_NE(blocked.err.find("a UserPromptSubmit hook blocked this prompt: no secrets in prompts"), std::string::npos)
      << blocked.err;
  auto hello = Mates({"run", "--provider", "scripted", "--scenario", scenario, "Say hello"});
  ASSERT_EQ(hello.exit_code, 0) << hello.err;
  EXPECT_NE(hello.out.find("Brief."), std::string::npos) << hello.out;
  // Messages from user pass the same hook when the lead takes them in.
  ASSERT_EQ(Mates({"send", "--team", "default", "--to", "lead", "the password is hunter2"}).exit_code, 0);
  ASSERT_EQ(Mates({"send", "--team", "default", "--to", "lead", "ship on friday"}).exit_code, 0);
  auto inbox = Mates({"run", "--provider", "scripted", "--scenario", scenario, "Read your messages"});
  ASSERT_EQ(inbox.exit_code, 0) << inbox.err;
  const std::string journal = ReadAll(ws_.path() / ".teams/default/agents/lead.jsonl");
  EXPECT_EQ(journal.find("hunter2"), std::string::npos) << "a blocked prompt reached the model";
  EXPECT_NE(journal.find("ship on friday"), std::string::npos);
  EXPECT_NE(journal.find("[UserPromptSubmit hook] house rule: be brief"), std::string::npos);
  EXPECT_NE(journal.find("[SessionStart hook] session note: build with make"), std::string::npos);
  // Each block is in the team's message timeline, from `hooks`.
  auto log = Mates({"log", "--team", "default"});
  ASSERT_EQ(log.exit_code, 0) << log.err;
  EXPECT_NE(log.out.find("A UserPromptSubmit hook blocked a prompt: no secrets in prompts"), std::string::npos)
      << log.out;
  EXPECT_NE(log.out.find("A UserPromptSubmit hook blocked a message from user: no secrets in prompts"),
            std::string::npos)
      << log.out;
  // No member may take the name the blocks are logged from.
  auto reserved = Mates({"team", "join", "default", "Hooks"});
  EXPECT_NE(reserved.exit_code, 0);
  EXPECT_NE(reserved.err.find("'Hooks' is reserved"), std::string::npos) << reserved.err;
}

}  // namespace
}  // namespace mates
