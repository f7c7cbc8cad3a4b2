// Hooks (DESIGN §22) with real commands: Claude Code's structure parsed
// and its mistakes named; exit 0, 2 and others, and its JSON replies, read
// as Claude Code reads them; every matching hook run at once, each with
// its timeout, one that hangs killed with what it started.
#include "hooks/hooks.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "sandbox/launcher_wire.h"
#include "support/test_util.h"

namespace mates::hooks {
namespace {

using testing::TempDir;

HookSet SetOf(const std::string& yaml, bool trusted = true) {
  auto events = ParseHooksSection(yaml, "test.yaml");
  EXPECT_TRUE(events.ok()) << events.status().message();
  HookSet set;
  set.sources.push_back({"test.yaml", trusted, events.ok() ? *events : std::map<Event, std::vector<HookGroup>>{}});
  return set;
}

Runner Make(const std::string& yaml, bool trusted = true) { return Runner(SetOf(yaml, trusted)); }

Launch Here(const TempDir& dir) {
  Launch l;
  l.cwd = dir.path();
  l.env = {"PATH=/usr/bin:/bin", "HOME=" + dir.str()};
  return l;
}

// Here(dir), in a workspace sandbox of dir (its runtime under `run`) whose
// launcher is `relay` ("": none, a bubblewrap per hook).
Result<Launch> Sandboxed(const TempDir& dir, const TempDir& run, const std::string& relay) {
  sandbox::Settings s;
  s.mode = sandbox::Mode::kWorkspace;
  s.relay = relay.empty() ? "/nonexistent/mates-relay" : relay;
  MATES_ASSIGN_OR_RETURN(auto box, sandbox::Sandbox::Make(dir.path(), s, run.path() / "sb"));
  Launch l = Here(dir);
  l.sandbox = box;
  l.place = {dir.path(), "t", "a", false};
  return l;
}

TEST(HooksTest, ClaudeCodesStructureIsReadAndItsMistakesNamed) {
  auto ok = ParseHooksSection(R"(
hooks:
  PreToolUse:
    - matcher: "Bash|Write"
      hooks:
        - {type: command, command: "echo one", timeout: 5}
        - {type: command, command: "echo two"}
  TaskCompleted:
    - hooks: [{type: command, command: "make test"}]
)", "f");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 2u);
  const auto& pre = ok->at(Event::kPreToolUse);
  ASSERT_EQ(pre.size(), 1u);
  EXPECT_EQ(pre[0].hooks[0].timeout_s, 5);
  EXPECT_EQ(pre[0].hooks[1].timeout_s, kDefaultTimeoutS);
  EXPECT_TRUE(pre[0].Matches({"Bash", "bash"}));
  EXPECT_TRUE(pre[0].Matches({"Write"}));
  EXPECT_FALSE(pre[0].Matches({"Read", "read_file"}));
  EXPECT_FALSE(pre[0].Matches({"BashX"}));  // the whole name
  EXPECT_TRUE(ok->at(Event::kTaskCompleted)[0].Matches({"anything"}));
  EXPECT_TRUE(ParseHooksSection("other: 1\n", "f")->empty());
  for (const auto& [bad, says] : std::vector<std::pair<std::string, std::string>>{
           {"hooks: [1]", "must be a map of events"},
           {"hooks: {PreTool: []}", "not an event"},
           {"hooks: {Stop: {a: 1}}", "must be a list"},
           {"hooks: {Stop: [{hooks: [{type: prompt, prompt: x}]}]}", "command hooks only"},
           {"hooks: {Stop: [{hooks: [{type: command, command: x, timeout: 0}]}]}", "more than 0"},
           {"hooks: {Stop: [{hooks: [{type: command, command: x, timeout: abc}]}]}", "number of seconds"},
           {"hooks: {Stop: [{hooks: [{type: command, command: '  '}]}]}", "is empty"},
           {"hooks: {Stop: [{hooks: [{type: command, command: x, shell: zsh}]}]}", "not a setting"},
           {"hooks: {PreToolUse: [{matcher: 'a{99999}', hooks: []}]}", "matcher"},
           {"hooks: {Stop: [{matcher: x, hookz: []}]}", "not a setting"},
           {"hooks: [unclosed", "test"},
       }) {
    auto r = ParseHooksSection(bad, "test");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << bad << ": " << r.status().message();
  }
}

TEST(HooksTest, RepliesAreReadAsClaudeCodeReadsThem) {
  struct Row {
    Event event;
    int exit_code;
    std::string out, err;
    bool blocked;
    std::string reason, context;
    bool updated, error;
  };
  const std::vector<Row> rows = {
      {Event::kPreToolUse, 0, "", "", false, "", "", false, false},
      {Event::kPreToolUse, 2, "ignored", "no rm -rf here", true, "no rm -rf here", "", false, false},
      {Event::kPreToolUse, 1, "", "oops", false, "", "", false, true},
      {Event::kPreToolUse, 0, R"({"decision":"block","reason":"not today"})", "", true, "not today", "", false, false},
      {Event::kPreToolUse, 0,
       R"({"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"secrets"}})",
       "", true, "secrets", "", false, false},
      {Event::kPreToolUse, 0, R"({"hookSpecificOutput":{"permissionDecision":"ask"}})", "", true,
       "a hook asks a person to approve this", "", false, false},
      {Event::kPreToolUse, 0,
       R"({"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}}})", "", false, "", "",
       true, false},
      {Event::kPostToolUse, 0, R"({"hookSpecificOutput":{"additionalContext":"lint: 2 warnings"}})", "", false, "",
       "lint: 2 warnings", false, false},
      {Event::kSessionStart, 0, "plain words are context here", "", false, "", "plain words are context here", false,
       false},
      {Event::kPostToolUse, 0, "plain words are not context here", "", false, "", "", false, false},
      {Event::kStop, 0, R"({"continue":false,"stopReason":"enough"})", "", true, "enough", "", false, false},
      {Event::kPreToolUse, 0, "{not json", "", false, "", "", false, true},
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    Outcome o;
    ReadReply(r.event, r.exit_code, false, r.out, r.err, "hook", &o);
    EXPECT_EQ(o.blocked, r.blocked) << i;
    EXPECT_EQ(o.reason, r.reason) << i;
    EXPECT_EQ(o.context, r.context) << i;
    EXPECT_EQ(o.updated_input.has_value(), r.updated) << i;
    EXPECT_EQ(!o.errors.empty(), r.error) << i;
  }
  Outcome timed;
  ReadReply(Event::kPreToolUse, 0, true, "", "", "sleep 99", &timed);
  EXPECT_FALSE(timed.blocked);
  ASSERT_EQ(timed.errors.size(), 1u);
  EXPECT_NE(timed.errors[0].find("took too long"), std::string::npos);
}

TEST(HooksTest, AHookGetsItsInputOnStdinAndBlocksByExitTwo) {
  TempDir dir;
  testing::WriteAll(dir.path() / "guard.sh", R"(#!/bin/bash
input=$(cat)
echo "$input" > seen.json
case "$input" in
  *'rm -rf'*) echo "Blocked: rm -rf is not allowed here" >&2; exit 2 ;;
esac
exit 0
)");
  Runner r = Make("hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: 'bash " +
                  (dir.path() / "guard.sh").string() + "'}]\n");
  EXPECT_TRUE(r.Wants(Event::kPreToolUse, {"Bash", "bash"}));
  EXPECT_FALSE(r.Wants(Event::kPreToolUse, {"Read", "read_file"}));
  EXPECT_FALSE(r.Wants(Event::kPostToolUse, {"Bash"}));
  Json in = {{"tool_name", "Bash"}, {"tool_input", {{"command", "rm -rf /"}}}};
  Outcome o = r.Run(Event::kPreToolUse, {"Bash", "bash"}, in, Here(dir));
  EXPECT_EQ(o.ran, 1);
  EXPECT_TRUE(o.blocked);
  EXPECT_EQ(o.reason, "Blocked: rm -rf is not allowed here");
  auto seen = ParseJson(testing::ReadAll(dir.path() / "seen.json"));
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)["hook_event_name"], "PreToolUse");
  EXPECT_EQ((*seen)["tool_input"]["command"], "rm -rf /");
  Outcome fine = r.Run(Event::kPreToolUse, {"Bash"}, {{"tool_input", {{"command", "ls"}}}}, Here(dir));
  EXPECT_FALSE(fine.blocked);
  // Untrusted: nothing runs.
  Runner untrusted = Make("hooks:\n  PreToolUse:\n    - hooks: [{type: command, command: 'touch ran'}]\n", false);
  EXPECT_FALSE(untrusted.Wants(Event::kPreToolUse, {"Bash"}));
  EXPECT_EQ(untrusted.Run(Event::kPreToolUse, {"Bash"}, Json::object(), Here(dir)).ran, 0);
  EXPECT_FALSE(fs::exists(dir.path() / "ran"));
}

// Two hooks of 1 s each take about 1 s together, not 2; one that hangs
// (with a child of its own) is killed at its timeout with all it started.
TEST(HooksTest, HooksRunAtOnceAndOneThatHangsIsKilledWithWhatItStarted) {
  TempDir dir;
  Runner r = Make(
      "hooks:\n  Stop:\n    - hooks:\n"
      "        - {type: command, command: 'sleep 1; echo a >> order'}\n"
      "        - {type: command, command: 'sleep 1; echo b >> order'}\n"
      "        - {type: command, command: '(sleep 300; touch survived) & echo $! > child; sleep 300', timeout: 1}\n");
  const auto start = std::chrono::steady_clock::now();
  Outcome o = r.Run(Event::kStop, {}, Json::object(), Here(dir));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(o.ran, 3);
  EXPECT_LT(took, 1.9) << "the hooks ran one after another";
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("took too long and was killed"), std::string::npos) << o.errors[0];
  EXPECT_EQ(testing::ReadAll(dir.path() / "order").size(), 4u);
  const pid_t child = std::atoi(testing::ReadAll(dir.path() / "child").c_str());
  ASSERT_GT(child, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return !testing::ProcessRunning(child); }, 5))
      << "the hook's child outlived it";
}

// In the agent's sandbox (DESIGN §18): what a hook that hangs started dies
// with it, though nothing tags it (its pid namespace goes).
TEST(HooksTest, ASandboxedHookThatHangsTakesWhatItStartedWithIt) {
  if (!sandbox::WhatIsMissing().empty()) GTEST_SKIP() << sandbox::WhatIsMissing();
  TempDir dir, run;
  auto l = Sandboxed(dir, run, "");
  ASSERT_TRUE(l.ok()) << l.status().message();
  const std::string marker = "mates-hook-child-" + std::to_string(::getpid());
  Runner r = Make("hooks:\n  Stop:\n    - hooks:\n        - {type: command, command: 'bash -c \"exec -a " + marker +
                  " sleep 300\" & sleep 300', timeout: 1}\n");
  Outcome o = r.Run(Event::kStop, {}, Json::object(), *l);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("took too long"), std::string::npos) << o.errors[0];
  EXPECT_TRUE(testing::WaitUntil([&] { return testing::ProcessesIn(marker, dir.path()).empty(); }, 10))
      << "the sandboxed hook's child outlived it";
}

// The launcher's wire carries any bytes a hook reads or writes: tabs,
// newlines, backslashes (a trailing one too), NULs, and a megabyte of them.
TEST(HooksTest, TheLaunchersWireCarriesAnyBytes) {
  namespace wire = sandbox::launcher;
  const std::vector<std::string> texts = {"", "plain", "a\tb\nc\\d\\", std::string("nul\0inside", 10), "\\n literal",
                                          std::string(1 << 20, '\n') + std::string(1 << 20, '\0')};
  for (const auto& t : texts) {
    const std::string e = wire::Escape(t);
    EXPECT_EQ(e.find('\n'), std::string::npos);
    EXPECT_EQ(e.find('\t'), std::string::npos);
    EXPECT_EQ(wire::Unescape(e), t);
    const std::string line = "1\t" + e + "\t" + e;  // the fields are views of it
    const auto f = wire::Fields(line);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(wire::Unescape(f[2]), t);
  }
  EXPECT_EQ(wire::Fields("").size(), 1u);
}

// In a sandbox, an agent's hooks start from its launcher (one bubblewrap
// for all of them): they run at once, read their input and block as
// anywhere, and one that hangs is killed at its timeout with all it
// started — a process that left its group and session too. The launcher
// is kept for the next event, and goes with its sandbox.
TEST(HooksTest, TheAgentsLauncherRunsItsHooksAndLeavesNothingBehind) {
  if (!sandbox::WhatIsMissing().empty()) GTEST_SKIP() << sandbox::WhatIsMissing();
  TempDir dir, run;
  auto sandboxed = Sandboxed(dir, run, MATES_RELAY);
  ASSERT_TRUE(sandboxed.ok()) << sandboxed.status().message();
  const Launch& l = *sandboxed;
  const std::string marker = "mates-launched-" + std::to_string(::getpid());
  auto r = std::make_unique<Runner>(SetOf(
      "hooks:\n  PreToolUse:\n    - hooks:\n"
      "        - {type: command, command: 'cat > seen.json; cat /proc/$PPID/cmdline > launcher; "
      "echo no rm here >&2; exit 2'}\n"
      "        - {type: command, command: 'setsid bash -c \"exec -a " + marker + " sleep 300\" & echo started'}\n"
      "        - {type: command, command: 'sleep 300', timeout: 1}\n"));
  Outcome o = r->Run(Event::kPreToolUse, {"Bash"}, {{"tool_name", "Bash"}}, l);
  EXPECT_EQ(o.ran, 3);
  EXPECT_TRUE(o.blocked);
  EXPECT_EQ(o.reason, "no rm here");
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("took too long"), std::string::npos) << o.errors[0];
  const std::string launcher = testing::ReadAll(dir.path() / "launcher");
  EXPECT_EQ(launcher, std::string(MATES_RELAY) + std::string("\0--launcher\0", 12)) << "not started by the launcher";
  auto seen = ParseJson(testing::ReadAll(dir.path() / "seen.json"));
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)["hook_event_name"], "PreToolUse");
  EXPECT_TRUE(testing::WaitUntil([&] { return testing::ProcessesIn(marker, dir.path()).empty(); }, 10))
      << "what a hook started outlived it";
  // The same launcher the next time.
  const auto launchers = [&] { return testing::ProcessesIn("^[^ ]*mates-relay --launcher$", dir.path()); };
  ASSERT_EQ(launchers().size(), 1u);
  const std::string first = launchers()[0];
  Outcome again = r->Run(Event::kPreToolUse, {"Bash"}, {{"tool_name", "Bash"}}, l);
  EXPECT_TRUE(again.blocked);
  ASSERT_EQ(launchers().size(), 1u);
  EXPECT_EQ(launchers()[0], first);
  r.reset();
  ASSERT_EQ(launchers().size(), 1u);  // the sandbox's, for the agent's next hooks
  sandboxed->sandbox.reset();
  EXPECT_TRUE(testing::WaitUntil([&] { return launchers().empty(); }, 10)) << "the launcher outlived its sandbox";
}

// A launcher whose host is gone (its input ended: the host killed with
// -9) kills what runs in it and exits at once, though a command's timeout
// is far off: reaping what its sweep killed, the command's thread once
// spun on the command's pidfd until that timeout, a core each.
TEST(HooksTest, ALauncherEndsWithItsInputThoughACommandRuns) {
  TempDir dir;
  const std::string marker = "mates-launched-sleep-" + std::to_string(::getpid());
  namespace wire = sandbox::launcher;
  // Which of the two reaps first is the scheduler's choice: on one core,
  // round after round, the sweep wins some.
  for (int round = 0; round < 12 && !HasFailure(); ++round) {
    SubprocessOptions o;
    o.argv = {"taskset", "-c", "0", MATES_RELAY, "--launcher"};
    o.cwd = dir.str();
    o.interactive = true;
    auto launcher = Subprocess::Start(o);
    ASSERT_TRUE(launcher.ok()) << launcher.status().message();
    constexpr size_t kCommands = 4;
    std::string jobs;
    for (size_t i = 0; i < kCommands; ++i) {
      jobs += std::to_string(i) + "\t600000\t1000\tb\t\t" + wire::Escape("exec -a " + marker + " sleep 300") +
              "\t\n";
    }
    ASSERT_TRUE(launcher->WriteStdin(jobs, DeadlineIn(10)).ok());
    ASSERT_TRUE(
        testing::WaitUntil([&] { return testing::ProcessesIn(marker, dir.path()).size() == kCommands; }, 10));
    launcher->CloseStdin();
    EXPECT_TRUE(testing::WaitUntil([&] { return !testing::ProcessRunning(launcher->pid()); }, 5))
        << "round " << round << ": the launcher outlived its input";
    EXPECT_TRUE(testing::ProcessesIn(marker, dir.path()).empty()) << "its commands outlived it";
    launcher->Signal(SIGKILL);  // one that spins would wait out the commands' timeout
    (void)launcher->Wait();
  }
}

TEST(HooksTest, OnlyTheTrustedWorkspaceFileRunsAndThePersonsAlways) {
  TempDir ws, home;
  testing::WriteAll(home.path() / "config.yaml", "hooks:\n  Stop:\n    - hooks: [{type: command, command: 'true'}]\n");
  testing::WriteAll(ws.path() / ".mates/config.yaml",
                    "hooks:\n  PreToolUse:\n    - hooks: [{type: command, command: 'touch pwned'}]\n");
  auto untrusted = LoadHooks(ws.path(), home.path() / "config.yaml", false);
  ASSERT_TRUE(untrusted.ok()) << untrusted.status().message();
  ASSERT_EQ(untrusted->sources.size(), 2u);
  EXPECT_TRUE(untrusted->sources[0].trusted);
  EXPECT_FALSE(untrusted->sources[1].trusted);
  ASSERT_EQ(untrusted->notes.size(), 1u);
  EXPECT_NE(untrusted->notes[0].find("mates trust"), std::string::npos);
  Runner r(std::move(*untrusted));
  EXPECT_TRUE(r.Wants(Event::kStop));
  EXPECT_FALSE(r.Wants(Event::kPreToolUse, {"Bash"}));
  auto trusted = LoadHooks(ws.path(), home.path() / "config.yaml", true);
  ASSERT_TRUE(trusted.ok());
  EXPECT_TRUE(Runner(std::move(*trusted)).Wants(Event::kPreToolUse, {"Bash"}));
  // The person's own file with a mistake is an error; an untrusted one's is a note.
  testing::WriteAll(home.path() / "bad.yaml", "hooks: {Nope: []}\n");
  EXPECT_FALSE(LoadHooks(ws.path(), home.path() / "bad.yaml", false).ok());
  testing::WriteAll(ws.path() / ".mates/config.yaml", "hooks: {Nope: []}\n");
  auto noted = LoadHooks(ws.path(), home.path() / "none.yaml", false);
  ASSERT_TRUE(noted.ok());
  ASSERT_EQ(noted->notes.size(), 1u);
  EXPECT_NE(noted->notes[0].find("not an event"), std::string::npos);
}

}  // namespace
}  // namespace mates::hooks
