// `mates run` end to end: the real binary, the scripted provider and
// `mates mock-llm` over HTTP (both protocols).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/json.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

std::string Fixture(const std::string& name) {
  return std::string(MATES_SOURCE_DIR) + "/tests/scenarios/" + name;
}

using testing::MockLlm;

std::vector<Json> Records(const fs::path& path) {
  std::vector<Json> out;
  std::istringstream in(ReadAll(path));
  std::string line;
  while (std::getline(in, line)) {
    auto j = ParseJson(line);
    if (j.ok()) out.push_back(*j);
  }
  return out;
}

testing::CommandResult MatesIn(const fs::path& ws, std::vector<std::string> args,
                               std::vector<std::string> env = {}, const std::string& stdin_data = "") {
  return testing::RunMates(ws, args, env, stdin_data);
}

void ExpectBasicWorkDone(const fs::path& ws, const testing::CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadAll(ws / "src/hello.sh"), "#!/bin/sh\necho hello mates\n");
  EXPECT_NE(r.out.find("Done: src/hello.sh prints 'hello mates'; task #1 tracks the test."), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("⏺ write_file(src/hello.sh)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("⏺ bash(sh src/hello.sh && ls src)"), std::string::npos);
  EXPECT_NE(r.err.find("usage: lead: 5 calls"), std::string::npos);
  auto tasks = testing::RunMates(ws, {"tasks", "--team", "default", "list"});
  EXPECT_NE(tasks.out.find("#1 [pending] Add a test for hello.sh"), std::string::npos);
  EXPECT_TRUE(fs::exists(ws / ".teams/default/agents/lead.jsonl"));
}

TEST(RunCliTest, ScriptedLeadWritesEditsRunsReadsAndPlans) {
  TempDir ws;
  auto r = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_basic.yaml"),
                               "please build a greeting"});
  ExpectBasicWorkDone(ws.path(), r);
}

// A model's text that carries terminal control sequences (a title, the
// clipboard, a cursor move) reaches the person's terminal and the --log
// file with each made harmless; colours of mates' own still show.
TEST(RunCliTest, AModelsControlSequencesDoNotReachTheTerminal) {
  TempDir ws;
  testing::WriteAll(ws.path() / "s.yaml",
                    "rules:\n  - agent: lead\n    reply:\n      - {type: text, text: \"before\\e]52;c;cHduZWQ=\\aafter "
                    "\\e[2Jcleared\\e[31mred\"}\n");
  auto r = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", (ws.path() / "s.yaml").string(), "--log",
                               (ws.path() / "run.log").string(), "go"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string log = ReadAll(ws.path() / "run.log");
  for (const std::string* out : {static_cast<const std::string*>(&r.out), &log}) {
    EXPECT_NE(out->find("before"), std::string::npos) << *out;
    EXPECT_NE(out->find("cleared"), std::string::npos) << *out;
    EXPECT_EQ(out->find("\x1b]"), std::string::npos) << "an OSC sequence went through";
    EXPECT_EQ(out->find('\a'), std::string::npos) << "a BEL went through";
    EXPECT_EQ(out->find("\x1b[2J"), std::string::npos) << "a screen clear went through";
  }
}

class RunOverHttp : public ::testing::TestWithParam<std::string> {};

TEST_P(RunOverHttp, TheSameWorkThroughMockLlmWithNoRequestRefused) {
  TempDir ws, tmp;
  MockLlm mock(Fixture("lead_basic.yaml"), tmp.path() / "rec.jsonl");
  std::string url = GetParam() == "openai" ? mock.url() + "/v1" : mock.url();
  auto r = MatesIn(ws.path(), {"run", "--provider", GetParam(), "--base-url", url, "please build a greeting"});
  ExpectBasicWorkDone(ws.path(), r);
  auto recs = Records(tmp.path() / "rec.jsonl");
  ASSERT_EQ(recs.size(), 5u);
  for (const auto& rec : recs) EXPECT_EQ(rec["status"], 200) << DumpJson(rec);
}

INSTANTIATE_TEST_SUITE_P(Protocols, RunOverHttp, ::testing::Values("anthropic", "openai"));

TEST(RunCliTest, BadModelBehaviourIsSurvivedAndLeavesNothingRunning) {
  TempDir ws, tmp;
  testing::WriteAll(ws.path() / "notes.txt", "present\n");
  MockLlm mock(Fixture("lead_misbehaves.yaml"), tmp.path() / "rec.jsonl");
  auto start = std::chrono::steady_clock::now();
  auto r = MatesIn(ws.path(), {"run", "--provider", "anthropic", "--base-url", mock.url(), "misbehave"});
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Still standing after every mistake."), std::string::npos) << r.out << r.err;
  EXPECT_LT(took, std::chrono::seconds(20));  // the 60 s sleeps were killed at 1 s
  EXPECT_NE(testing::Run({"pgrep", "-f", "mates_run_test_sleeper"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(ws.path().parent_path() / "outside.txt"));
  EXPECT_EQ(ReadAll(ws.path() / "notes.txt"), "present\n");
  for (const auto& rec : Records(tmp.path() / "rec.jsonl")) EXPECT_EQ(rec["status"], 200);
  // Every error reached the model as an is_error tool result.
  int errors = 0;
  for (const auto& rec : Records(tmp.path() / "rec.jsonl")) {
    const Json& last = rec["body"]["messages"].back();
    for (const auto& b : last["content"]) errors += b.value("is_error", false) ? 1 : 0;
  }
  EXPECT_EQ(errors, 6);
}

TEST(RunCliTest, SubagentBackgroundTaskAndSkill) {
  TempDir ws;
  fs::create_directories(ws.path() / "data");
  for (const char* f : {"a", "b", "c"}) testing::WriteAll(ws.path() / "data" / f, "x");
  fs::create_directories(ws.path() / "skills/counting");
  testing::WriteAll(ws.path() / "skills/counting/SKILL.md",
                    "---\nname: counting\ndescription: How to count things\n---\nDelegate counting to a subagent.\n");
  auto r = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_delegates.yaml"),
                               "delegate the counting"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Subagent and background work both came back."), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("⏺ Skill(counting)"), std::string::npos);
  EXPECT_NE(r.err.find("⏺ Task(count files)"), std::string::npos);
  EXPECT_NE(r.err.find("There are 3 files."), std::string::npos);
  // Subagents' own text is their answer to the lead, not output of the run.
  EXPECT_EQ(r.out.find("abracadabra"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("usage: subagents:"), std::string::npos);
  // Their spending is the lead's team's, kept in lead.subagents.jsonl: the
  // counting subagent's two calls and the background one's one.
  auto u = MatesIn(ws.path(), {"usage", "--team", "default", "--json"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  auto j = ParseJson(u.out);
  ASSERT_TRUE(j.ok()) << u.out;
  const Json* subs = nullptr;
  int64_t calls = 0;
  for (const auto& a : (*j)["agents"]) {
    calls += a["calls"].get<int64_t>();
    if (a["agent"] == "lead (subagents)") subs = &a;
  }
  ASSERT_NE(subs, nullptr) << u.out;
  EXPECT_EQ((*subs)["calls"], 3) << u.out;
  EXPECT_GT((*subs)["usage"]["input_tokens"].get<int64_t>(), 0);
  EXPECT_EQ((*j)["calls"], calls);
}

TEST(RunCliTest, ALongRunIsCompactedAndGoesOnAsItself) {
  TempDir ws, tmp;
  MockLlm mock(Fixture("lead_compacts.yaml"), tmp.path() / "rec.jsonl");
  auto r = MatesIn(ws.path(),
                   {"run", "--provider", "anthropic", "--base-url", mock.url(), "--context-budget", "3000"},
                   {}, "print big\nprint big\nprint big\nprint big\n/quit\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("⧉ context compacted"), std::string::npos) << r.err;
  int transcripts = 0;
  for (const auto& e : fs::directory_iterator(ws.path() / ".teams/default/agents")) {
    if (e.path().filename().string().find(".transcript-") != std::string::npos) {
      ++transcripts;
      EXPECT_NE(ReadAll(e.path()).find("line 300 of a long output"), std::string::npos);
    }
  }
  EXPECT_GE(transcripts, 1);
  auto recs = Records(tmp.path() / "rec.jsonl");
  bool summarised = false;
  int after = 0;
  for (const auto& rec : recs) {
    EXPECT_EQ(rec["status"], 200);
    const Json& first = rec["body"]["messages"][0]["content"][0];
    std::string text = first.value("text", "");
    if (text.find("SUMMARY: the lead printed") != std::string::npos) {
      summarised = true;
      EXPECT_EQ(text.rfind("You are 'lead', the lead of team 'default'", 0), 0u) << text;
      ++after;
    }
  }
  EXPECT_TRUE(summarised);
  EXPECT_GE(after, 1);  // calls made after the compaction
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), 'P'), 4);  // "Printed." each time
}

// Item 3 of the hardening issue: the bash tool's `cat /proc/$PPID/environ`
// showed both keys, which then went into the journal and every later
// request. Keys from a file (…_KEY_FILE) are held the same way.
TEST(RunCliTest, TheApiKeyNeverLeaks) {
  TempDir ws, tmp;
  const std::string secret = "sk-ant-THIS-IS-SECRET-9876";
  const std::string file_secret = "sk-openai-FROM-A-FILE-5555";
  const std::string gemini_secret = "gemini-KEY-IN-THE-ENV-4242";  // held though not the provider's
  testing::WriteAll(ws.path() / "key.txt", file_secret + "\n");
  MockLlm mock(Fixture("lead_secrets.yaml"), tmp.path() / "rec.jsonl");
  // Without the sandbox the host's block can be read, and the keys are
  // still held back.
  auto r = MatesIn(ws.path(), {"run", "--provider", "anthropic", "--base-url", mock.url(), "--sandbox", "off",
                               "show the environment"},
                   {"ANTHROPIC_API_KEY=" + secret, "OPENAI_API_KEY_FILE=" + (ws.path() / "key.txt").string(),
                    "GEMINI_API_KEY=" + gemini_secret, "MATES_TEST_MARKER=only-in-the-hosts-block"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("I looked at the environment."), std::string::npos);
  for (const std::string& key : {secret, file_secret, gemini_secret}) {
    EXPECT_EQ(r.out.find(key), std::string::npos);
    EXPECT_EQ(r.err.find(key), std::string::npos);
    std::string journal = ReadAll(ws.path() / ".teams/default/agents/lead.jsonl");
    EXPECT_NE(journal.find("end-of-env"), std::string::npos);  // the env output is there…
    EXPECT_NE(journal.find("only-in-the-hosts-block"), std::string::npos) << "the host's environment block was read";
    EXPECT_EQ(journal.find(key), std::string::npos) << key;      // …without the keys
    EXPECT_NE(journal.find("[redacted]"), std::string::npos) << "the key file's content is shown redacted";
    EXPECT_EQ(ReadAll(tmp.path() / "rec.jsonl").find(key), std::string::npos);
  }
  std::string journal = ReadAll(ws.path() / ".teams/default/agents/lead.jsonl");
  EXPECT_EQ(journal.find("ANTHROPIC_API_KEY"), std::string::npos);
  // In the sandbox the host's environment block is out of reach: its pid
  // namespace has no host (the file-store default).
  {
    MockLlm again(Fixture("lead_secrets.yaml"), tmp.path() / "rec2.jsonl");
    auto boxed = MatesIn(ws.path(), {"run", "--provider", "anthropic", "--base-url", again.url(), "--fresh",
                                     "show the environment"},
                         {"ANTHROPIC_API_KEY=" + secret, "OPENAI_API_KEY_FILE=" + (ws.path() / "key.txt").string(),
                          "MATES_TEST_MARKER=only-in-the-hosts-block"});
    EXPECT_EQ(boxed.exit_code, 0) << boxed.err;
    std::string journal = ReadAll(ws.path() / ".teams/default/agents/lead.jsonl");
    EXPECT_NE(journal.find("end-of-env"), std::string::npos);
    EXPECT_EQ(journal.find("only-in-the-hosts-block"), std::string::npos) << "a sandboxed tool read the host's block";
    for (const std::string& key : {secret, file_secret}) EXPECT_EQ(journal.find(key), std::string::npos) << key;
  }
  // A key file that cannot be read is said plainly.
  auto bad = MatesIn(ws.path(), {"run", "--provider", "anthropic", "--base-url", mock.url(), "x"},
                     {"ANTHROPIC_API_KEY_FILE=/no/such/key"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("ANTHROPIC_API_KEY_FILE: cannot read /no/such/key"), std::string::npos) << bad.err;
}

TEST(RunCliTest, FailuresAreSaidPlainly) {
  TempDir ws, tmp;
  auto no_provider = MatesIn(ws.path(), {"run", "do it"}, {"ANTHROPIC_API_KEY="});
  EXPECT_EQ(no_provider.exit_code, 2);
  EXPECT_NE(no_provider.err.find("no model provider chosen"), std::string::npos) << no_provider.err;
  auto bad_scenario = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", "/no/such.yaml", "x"});
  EXPECT_EQ(bad_scenario.exit_code, 2);
  EXPECT_NE(bad_scenario.err.find("does not exist"), std::string::npos);
  EXPECT_EQ(MatesIn(ws.path(), {"run", "--team", "a/b", "--provider", "scripted", "--scenario",
                                Fixture("lead_basic.yaml"), "x"}).exit_code, 2);
  EXPECT_EQ(MatesIn(ws.path(), {"run", "--max-turns", "0", "--provider", "scripted", "--scenario",
                                Fixture("lead_basic.yaml"), "x"}).exit_code, 2);
  // An API error: exit 1 with the API's own message.
  {
    auto mock = testing::Start({testing::MatesBinary(), "mock-llm", "--scenario", Fixture("lead_basic.yaml"),
                                "--fault", "status=401", "--quiet"});
    auto line = mock.ReadLine(DeadlineIn(10));
    ASSERT_TRUE(line.ok());
    std::string url = line->substr(std::string("listening on ").size());
    auto r = MatesIn(ws.path(), {"run", "--provider", "anthropic", "--base-url", url, "--fresh", "x"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("mates: error: HTTP 401 authentication_error: injected fault"), std::string::npos)
        << r.err;
    mock.Signal(SIGTERM);
  }
  // The turn limit is a failure too.
  auto limited = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_basic.yaml"),
                                     "--max-turns", "2", "--fresh", "please build a greeting"});
  EXPECT_EQ(limited.exit_code, 1);
  EXPECT_NE(limited.err.find("--max-turns"), std::string::npos);
}

TEST(RunCliTest, CtrlCInterruptsTheTurnAndTheToolGoesWithIt) {
  TempDir ws;
  SubprocessOptions o;
  o.argv = {testing::MatesBinary(), "--workspace", ws.str(), "run", "--provider", "scripted",
            "--scenario", Fixture("lead_slow.yaml"), "please sleep"};
  auto p = Subprocess::Start(o);
  ASSERT_TRUE(p.ok());
  // Once the tool runs, Ctrl-C (SIGINT to the process, as a terminal sends).
  while (testing::Run({"pgrep", "-f", "mates_interrupt_sleeper"}).exit_code != 0) std::this_thread::yield();
  ::kill(p->pid(), SIGINT);
  auto r = p->Wait();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_NE(testing::Run({"pgrep", "-f", "mates_interrupt_sleeper"}).exit_code, 0);
  // The journal is whole: a later run resumes it and goes on.
  auto again = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_slow.yaml"), "hello"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST(RunCliTest, ReplCommandsAndTurns) {
  TempDir ws;
  auto r = MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_basic.yaml")}, {},
                   "/team\n/tasks\nplease build a greeting\n/tasks\n/send nobody hi\n/inbox\n/usage\n/bogus\n/quit\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A banner says where you are and how to get help.
  EXPECT_EQ(r.out.rfind("mates REPL — lead 'lead' of team default, scripted (", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("workspace " + fs::canonical(ws.path()).string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Type a goal, or /help"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("team default"), std::string::npos);
  EXPECT_NE(r.out.find("(no tasks)"), std::string::npos);
  EXPECT_NE(r.out.find("#1 [pending] Add a test for hello.sh"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unknown recipient 'nobody'"), std::string::npos);
  EXPECT_NE(r.out.find("(no new messages)"), std::string::npos);
  EXPECT_NE(r.out.find("unknown command /bogus"), std::string::npos);
  EXPECT_NE(r.err.find("usage: lead: 5 calls"), std::string::npos);
  EXPECT_EQ(ReadAll(ws.path() / "src/hello.sh"), "#!/bin/sh\necho hello mates\n");
}

TEST(RunCliTest, TheLeadResumesItsConversationUnlessFresh) {
  TempDir ws;
  ASSERT_EQ(MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_basic.yaml"),
                                "please build a greeting"}).exit_code, 0);
  fs::path journal = ws.path() / ".teams/default/agents/lead.jsonl";
  const std::string first = ReadAll(journal);
  auto before = std::count(first.begin(), first.end(), '\n');
  ASSERT_EQ(MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_slow.yaml"), "hi"}).exit_code, 0);
  std::string data = ReadAll(journal);
  EXPECT_GT(std::count(data.begin(), data.end(), '\n'), before);
  EXPECT_NE(data.find("build a greeting"), std::string::npos);
  ASSERT_EQ(MatesIn(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("lead_slow.yaml"), "--fresh", "hi"}).exit_code, 0);
  EXPECT_EQ(ReadAll(journal).find("build a greeting"), std::string::npos);
  int rotated = 0;
  for (const auto& e : fs::directory_iterator(ws.path() / ".teams/default/agents")) {
    rotated += e.path().filename().string().rfind("lead.1", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(rotated, 1);
}

}  // namespace
}  // namespace mates
