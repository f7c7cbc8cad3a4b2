#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "store/mailbox.h"
#include "store/roster.h"
#include "support/test_env.h"
#include "support/test_util.h"
#include "tools/builtin_tools.h"
#include "tools/paths.h"
#include "tools/skills.h"

namespace mates::tools {
namespace {

using mates::testing::TempDir;

class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Roster(ws_).CreateTeam("t").ok());
    Member m;
    m.name = "alice";
    ASSERT_TRUE(Roster(ws_).AddMember("t", m).ok());
    ctx_.team = "t";
    ctx_.agent = "lead";
    ctx_.is_lead = true;
    ctx_.cancel = &cancel_;
    lead_ = MakeToolRegistry(Scope::kLead);
  }
  ToolResult Call(const std::string& name, const std::string& input, const ToolRegistry* reg = nullptr) {
    llm::ContentBlock b = llm::ContentBlock::ToolUse("toolu_1", name, input);
    return (reg != nullptr ? reg : lead_.get())->Run(b, ctx_);
  }
  TempDir dir_;
  Workspace ws_{dir_.path()};
  std::unique_ptr<TeamStore> store_ = FileTeamStore(ws_, testing::TestEnv());
  ToolContext ctx_{ws_, *store_};
  llm::CancelToken cancel_;
  std::unique_ptr<ToolRegistry> lead_;
};

TEST_F(ToolsTest, ScopesFollowTheSeedTable) {
  EXPECT_EQ(MakeToolRegistry(Scope::kSubagent)->Names(),
            (std::vector<std::string>{"bash", "read_file", "write_file", "edit_file"}));
  EXPECT_EQ(MakeToolRegistry(Scope::kTeammate)->Names().size(), 9u);  // seed v8: 9 tools
  EXPECT_EQ(lead_->Names().size(), 17u);  // + MergeReview (DESIGN §12), TeammateControl (§27)
  // Enforced, not just advertised: a teammate's call to a lead tool fails.
  auto teammate = MakeToolRegistry(Scope::kTeammate);
  auto r = Call("TeamCreate", R"({"name":"x"})", teammate.get());
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.content.find("only available to the team lead"), std::string::npos);
  for (const auto& d : lead_->Definitions()) {
    auto schema = ParseJson(d.input_schema_json);
    ASSERT_TRUE(schema.ok()) << d.name;
    EXPECT_EQ((*schema)["type"], "object") << d.name;
    EXPECT_GT(d.description.size(), 40u) << d.name;
  }
}

// The lead's levers (DESIGN §27) go to its team's runtime as asked; bad
// calls are refused before they get there.
TEST_F(ToolsTest, TeammateControlPullsTheLeverItNames) {
  struct Levers : TeamRuntime {
    Result<std::string> CreateTeam(const std::string&, const std::string&, const std::string&) override {
      return Status::Internal("unused");
    }
    Result<std::string> SpawnTeammate(const TeammateSpec&) override { return Status::Internal("unused"); }
    Result<std::string> DeleteTeam(const std::string&) override { return Status::Internal("unused"); }
    Result<std::string> PullLever(const std::string& action, const std::string& name) override {
      pulled.push_back(action + " " + name);
      if (action != "restart" && action != "interrupt") return Status::InvalidArgument("no such action");
      return action + "ed " + name;
    }
    std::vector<std::string> pulled;
  } levers;
  EXPECT_TRUE(Call("TeammateControl", R"({"name":"alice","action":"restart"})").is_error) << "no runtime";
  ctx_.teams = &levers;
  auto r = Call("TeammateControl", R"({"name":"alice","action":"restart"})");
  EXPECT_FALSE(r.is_error) << r.content;
  EXPECT_EQ(r.content, "restarted alice");
  EXPECT_TRUE(Call("TeammateControl", R"({"name":"alice","action":"explode"})").is_error);
  auto self = Call("TeammateControl", R"({"name":"lead","action":"interrupt"})");
  EXPECT_TRUE(self.is_error);
  EXPECT_EQ(self.content, "that is you: a lever is for a teammate");
  EXPECT_TRUE(Call("TeammateControl", R"({"action":"interrupt"})").is_error);
  EXPECT_TRUE(Call("TeammateControl", R"({"name":"alice","action":"restart"})", MakeToolRegistry(Scope::kTeammate).get())
                  .is_error)
      << "a teammate has no levers";
  EXPECT_EQ(levers.pulled, (std::vector<std::string>{"restart alice", "explode alice"}));
  ctx_.teams = nullptr;
}

TEST_F(ToolsTest, BadCallsBecomeErrorsThatSayWhatIsWrong) {
  auto unknown = Call("frobnicate", "{}");
  EXPECT_TRUE(unknown.is_error);
  EXPECT_NE(unknown.content.find("unknown tool 'frobnicate'"), std::string::npos);
  EXPECT_NE(unknown.content.find("read_file"), std::string::npos);
  auto missing = Call("read_file", "{}");
  EXPECT_TRUE(missing.is_error);
  EXPECT_NE(missing.content.find("missing required field 'path'"), std::string::npos);
  auto mistyped = Call("bash", R"({"command": 42})");
  EXPECT_NE(mistyped.content.find("'command' must be a string"), std::string::npos);
  auto bad_timeout = Call("bash", R"({"command": "true", "timeout": 99999})");
  EXPECT_NE(bad_timeout.content.find("'timeout' must be between"), std::string::npos);
  llm::ContentBlock broken = llm::ContentBlock::ToolUse("toolu_2", "bash", "{}");
  broken.input_error = "the arguments were not a valid JSON object: {\"comm";
  auto r = lead_->Run(broken, ctx_);
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.content.find("could not be read"), std::string::npos);
}

TEST_F(ToolsTest, PathsStayInsideTheWorkspace) {
  fs::create_directories(dir_.path() / "inside");
  fs::create_symlink("/etc", dir_.path() / "escape");
  fs::create_symlink("/etc/hostname", dir_.path() / "inside/link");
  for (const char* p : {"../x", "a/../../x", "/etc/passwd", "escape/passwd", "inside/link", "escape"}) {
    auto r = ResolveInWorkspace(ws_, p, false);
    EXPECT_FALSE(r.ok()) << p;
    auto read = Call("read_file", std::string(R"({"path":")") + p + "\"}");
    EXPECT_TRUE(read.is_error) << p;
    auto write = Call("write_file", std::string(R"({"path":")") + p + R"(","content":"x"})");
    EXPECT_TRUE(write.is_error) << p;
  }
  EXPECT_NE(Call("read_file", R"({"path":"/etc/passwd"})").content.find("absolute paths are not allowed"),
            std::string::npos);
  EXPECT_TRUE(ResolveInWorkspace(ws_, "inside/new/file.txt", true).ok());
  auto team_state = Call("write_file", R"({"path":".teams/t/alice_inbox.jsonl","content":"x"})");
  EXPECT_TRUE(team_state.is_error);
  EXPECT_NE(team_state.content.find("team state"), std::string::npos);
}

// Item 10 of the hardening issue: write_file/edit_file through a link to
// .teams/.tasks rewrote team state (the guard looked at the path before
// resolving links).
TEST_F(ToolsTest, TeamStateCannotBeWrittenThroughALink) {
  fs::create_symlink(".teams/t", dir_.path() / "notes");
  fs::create_symlink(".tasks", dir_.path() / "board");
  fs::create_directories(dir_.path() / ".mates");
  fs::create_symlink(".mates", dir_.path() / "m");
  fs::create_symlink(".teams/t/config.json", dir_.path() / "cfg.json");
  const std::string config_before = testing::ReadAll(dir_.path() / ".teams/t/config.json");
  for (const char* p : {"notes/config.json", "notes/alice_inbox.jsonl", "board/t/1.json", "m/anything",
                        "cfg.json"}) {
    auto write = Call("write_file", std::string(R"({"path":")") + p + R"(","content":"{}"})");
    EXPECT_TRUE(write.is_error) << p;
    EXPECT_NE(write.content.find("team state (through a symbolic link)"), std::string::npos)
        << p << ": " << write.content;
  }
  auto edit = Call("edit_file", R"({"path":"notes/config.json","old_text":"alice","new_text":"mallory"})");
  EXPECT_TRUE(edit.is_error);
  EXPECT_EQ(testing::ReadAll(dir_.path() / ".teams/t/config.json"), config_before);
  EXPECT_FALSE(fs::exists(dir_.path() / ".tasks/t/1.json"));
  // Reading through a link inside the workspace is fine; so is writing a
  // link to an ordinary file (the file itself is written).
  EXPECT_FALSE(Call("read_file", R"({"path":"notes/config.json"})").is_error);
  testing::WriteAll(dir_.path() / "real.txt", "old");
  fs::create_symlink("real.txt", dir_.path() / "alias.txt");
  EXPECT_FALSE(Call("write_file", R"({"path":"alias.txt","content":"new"})").is_error);
  EXPECT_EQ(testing::ReadAll(dir_.path() / "real.txt"), "new");
  EXPECT_TRUE(fs::is_symlink(dir_.path() / "alias.txt"));
}

TEST_F(ToolsTest, WriteReadEdit) {
  auto w = Call("write_file", R"({"path":"a/b/c.txt","content":"one\ntwo\nthree\ntwo\n"})");
  ASSERT_FALSE(w.is_error) << w.content;
  EXPECT_NE(w.content.find("Created a/b/c.txt"), std::string::npos);
  auto r = Call("read_file", R"({"path":"a/b/c.txt"})");
  EXPECT_EQ(r.content, "     1\tone\n     2\ttwo\n     3\tthree\n     4\ttwo\n");
  auto part = Call("read_file", R"({"path":"a/b/c.txt","offset":2,"limit":2})");
  EXPECT_NE(part.content.find("     2\ttwo\n     3\tthree\n"), std::string::npos);
  EXPECT_NE(part.content.find("showing lines 2-3 of 4"), std::string::npos);
  EXPECT_TRUE(Call("read_file", R"({"path":"a/b/c.txt","offset":9})").is_error);
  auto ambiguous = Call("edit_file", R"({"path":"a/b/c.txt","old_text":"two","new_text":"2"})");
  EXPECT_TRUE(ambiguous.is_error);
  EXPECT_NE(ambiguous.content.find("occurs 2 times"), std::string::npos);
  auto absent = Call("edit_file", R"({"path":"a/b/c.txt","old_text":"four","new_text":"4"})");
  EXPECT_TRUE(absent.is_error);
  EXPECT_NE(absent.content.find("was not found"), std::string::npos);
  auto all = Call("edit_file", R"({"path":"a/b/c.txt","old_text":"two","new_text":"2","replace_all":true})");
  EXPECT_EQ(all.content, "Replaced 2 occurrences in a/b/c.txt");
  auto one = Call("edit_file", R"({"path":"a/b/c.txt","old_text":"three","new_text":"3"})");
  EXPECT_EQ(one.content, "Replaced 1 occurrence in a/b/c.txt");
  EXPECT_EQ(testing::ReadAll(dir_.path() / "a/b/c.txt"), "one\n2\n3\n2\n");
  EXPECT_TRUE(Call("edit_file", R"({"path":"nope.txt","old_text":"a","new_text":"b"})").is_error);
  EXPECT_TRUE(Call("edit_file", R"({"path":"a/b/c.txt","old_text":"","new_text":"b"})").is_error);
  testing::WriteAll(dir_.path() / "bin.dat", std::string("\x7f" "ELF\0\0\1", 7));
  auto bin = Call("read_file", R"({"path":"bin.dat"})");
  EXPECT_TRUE(bin.is_error);
  EXPECT_NE(bin.content.find("binary file"), std::string::npos);
  EXPECT_TRUE(Call("read_file", R"({"path":"a"})").is_error);
  EXPECT_EQ(Call("read_file", R"({"path":"nope"})").content, "no such file: 'nope'");
}

TEST_F(ToolsTest, BashRunsInTheWorkspaceWithoutSecrets) {
  ::setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret", 1);
  ::setenv("OPENAI_API_KEY", "sk-openai-very-secret", 1);
  auto r = Call("bash", R"({"command":"pwd; env; cat; echo done"})");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::unsetenv("OPENAI_API_KEY");
  ASSERT_FALSE(r.is_error) << r.content;
  EXPECT_NE(r.content.find(fs::canonical(dir_.path()).string()), std::string::npos);
  EXPECT_EQ(r.content.find("very-secret"), std::string::npos);
  EXPECT_EQ(r.content.find("API_KEY"), std::string::npos);
  EXPECT_NE(r.content.find("MATES_TEAM=t"), std::string::npos);
  EXPECT_NE(r.content.find("MATES_AGENT_NAME=lead"), std::string::npos);
  EXPECT_NE(r.content.find("done"), std::string::npos);  // cat read an empty stdin
  auto fail = Call("bash", R"({"command":"echo oops >&2; exit 3"})");
  EXPECT_TRUE(fail.is_error);
  EXPECT_EQ(fail.content, "oops\n[exit code 3]");
}

TEST_F(ToolsTest, BashTimeoutKillsBackgroundGrandchildrenAtOnce) {
  std::string marker = "mates_bash_test_" + std::to_string(::getpid());
  auto start = std::chrono::steady_clock::now();
  auto r = Call("bash", R"({"command":"(exec -a )" + marker + R"( sleep 60) & (exec -a )" + marker +
                             R"( sleep 60) & echo started; sleep 60","timeout":1})");
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.content.find("started"), std::string::npos);
  EXPECT_NE(r.content.find("timed out after 1 s"), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(4));
  EXPECT_NE(testing::Run({"pgrep", "-f", marker}).exit_code, 0) << "a process was left behind";
}

TEST_F(ToolsTest, BashHugeOutputIsCapped) {
  auto r = Call("bash", R"({"command":"seq 1 200000"})");
  EXPECT_FALSE(r.is_error);
  EXPECT_LT(r.content.size(), 31000u);
  EXPECT_EQ(r.content.rfind("1\n2\n3\n", 0), 0u);
  EXPECT_NE(r.content.find("200000"), std::string::npos);
  EXPECT_NE(r.content.find("the middle was cut"), std::string::npos);
}

TEST_F(ToolsTest, BashIsInterruptible) {
  std::thread t([&] {
    // Interrupt once the command is surely running.
    while (testing::Run({"pgrep", "-f", "sleep 77"}).exit_code != 0) std::this_thread::yield();
    cancel_.Cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto r = Call("bash", R"({"command":"sleep 77"})");
  t.join();
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.content.find("interrupted"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(ToolsTest, TaskToolsWorkOnTheTeamBoard) {
  EXPECT_EQ(Call("TaskCreate", R"({"subject":"Analyze"})").content, "Created task #1: Analyze");
  EXPECT_EQ(Call("TaskCreate", R"({"subject":"Design","blockedBy":["1"]})").content,
            "Created task #2: Design (depends on #1)");
  auto list = Call("TaskList", "{}");
  EXPECT_NE(list.content.find("#2 [pending] Design depends on #1"), std::string::npos);
  EXPECT_NE(list.content.find("ready to claim: #1"), std::string::npos);
  auto get = Call("TaskGet", R"({"task_id":"2"})");
  EXPECT_EQ((*ParseJson(get.content))["blockedBy"][0], 1);
  auto upd = Call("TaskUpdate", R"({"task_id":1,"status":"completed"})");
  EXPECT_EQ(upd.content, "Updated #1 [completed] Analyze");
  EXPECT_TRUE(Call("TaskUpdate", R"({"task_id":1,"status":"finished"})").is_error);
  EXPECT_TRUE(Call("TaskUpdate", R"({"task_id":"x"})").is_error);
  auto cycle = Call("TaskUpdate", R"({"task_id":1,"addBlockedBy":[2]})");
  EXPECT_NE(cycle.content.find("dependency cycle"), std::string::npos);
  EXPECT_NE(Call("TaskGet", R"({"task_id":9})").content.find("no task #9"), std::string::npos);
}

TEST_F(ToolsTest, SendMessageErrorsReachTheModel) {
  auto ok = Call("SendMessage", R"({"recipient":"alice","content":"hi","summary":"greeting"})");
  EXPECT_EQ(ok.content, "Sent message to alice");
  auto unknown = Call("SendMessage", R"({"recipient":"bob","content":"hi"})");
  EXPECT_TRUE(unknown.is_error);
  EXPECT_NE(unknown.content.find("unknown recipient 'bob': team 't' has lead, alice"), std::string::npos);
  auto bad_type = Call("SendMessage", R"({"type":"yell","recipient":"alice","content":"hi"})");
  EXPECT_NE(bad_type.content.find("unknown message type"), std::string::npos);
  auto all = Call("SendMessage", R"({"type":"broadcast","content":"news"})");
  EXPECT_EQ(all.content, "Sent broadcast to alice");
  auto shut = Call("SendMessage", R"({"type":"shutdown_request","recipient":"alice"})");
  EXPECT_NE(shut.content.find("request_id r-"), std::string::npos);
  EXPECT_EQ(Mailbox(ws_.TeamDir("t"), "alice").Drain()->size(), 3u);
}

TEST_F(ToolsTest, PlanModeAllowsReadingAndMessagingOnly) {
  ctx_.plan_mode = true;
  ctx_.is_lead = false;
  ctx_.agent = "alice";
  auto teammate = MakeToolRegistry(Scope::kTeammate);
  testing::WriteAll(dir_.path() / "f.txt", "x\n");
  EXPECT_FALSE(Call("read_file", R"({"path":"f.txt"})", teammate.get()).is_error);
  EXPECT_FALSE(Call("TaskList", "{}", teammate.get()).is_error);
  for (auto [tool, input] : std::vector<std::pair<std::string, std::string>>{
           {"write_file", R"({"path":"g.txt","content":"y"})"},
           {"edit_file", R"({"path":"f.txt","old_text":"x","new_text":"y"})"},
           {"bash", R"({"command":"touch h.txt"})"},
           {"TaskCreate", R"({"subject":"s"})"}}) {
    auto r = Call(tool, input, teammate.get());
    EXPECT_TRUE(r.is_error) << tool;
    EXPECT_NE(r.content.find("plan mode"), std::string::npos) << tool;
  }
  EXPECT_FALSE(fs::exists(dir_.path() / "g.txt"));
  EXPECT_FALSE(fs::exists(dir_.path() / "h.txt"));
  auto plan = Call("SendMessage", R"({"type":"plan_approval_request","content":"1. read 2. write"})", teammate.get());
  EXPECT_FALSE(plan.is_error) << plan.content;
}

TEST_F(ToolsTest, SkillsAreListedAndLoadedOnDemand) {
  fs::create_directories(dir_.path() / "skills/review");
  testing::WriteAll(dir_.path() / "skills/review/SKILL.md",
                    "---\nname: review\ndescription: How to review a change\n---\n# Review\nRead the diff first.\n");
  fs::create_directories(dir_.path() / "skills/broken");
  testing::WriteAll(dir_.path() / "skills/broken/SKILL.md", "---\nname: [unclosed\n");
  ::testing::internal::CaptureStderr();
  SkillLibrary lib = SkillLibrary::Load(ws_);
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warnings.find("broken"), std::string::npos);
  ASSERT_EQ(lib.skills().size(), 1u);
  EXPECT_EQ(lib.PromptSection(), "Skills (load one with the Skill tool when it fits the work):\n"
                                 "- review: How to review a change\n");
  ctx_.skills = &lib;
  EXPECT_EQ(Call("Skill", R"({"name":"review"})").content, "# Skill: review\n\n# Review\nRead the diff first.\n");
  auto missing = Call("Skill", R"({"name":"deploy"})");
  EXPECT_TRUE(missing.is_error);
  EXPECT_NE(missing.content.find("available: review"), std::string::npos);
}

}  // namespace
}  // namespace mates::tools
