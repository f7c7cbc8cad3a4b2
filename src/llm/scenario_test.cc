#include "llm/scenario.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/cancel.h"
#include "llm/scripted.h"

namespace mates::llm {
namespace {

const char kJson[] = R"J({"rules": [
   {"agent": "lead", "when": "migrate (\\w+) to (\\w+)", "once": true, "delay_ms": 0,
    "reply": [{"type": "text", "text": "Moving $1 to $2."},
              {"type": "tool_use", "name": "TeamCreate", "input": {"name": "$1-$2", "n": 3}}]},
   {"agent": "*", "when": "Task #(\\d+)", "once": false,
    "reply": [{"type": "tool_use", "name": "TaskUpdate",
               "input": {"task_id": "$1", "status": "completed"}}]},
   {"agent": "front*", "reply": [{"type": "text", "text": "frontend here"}]},
   {"agent": "x", "stop_reason": "max_tokens", "reply": [{"type": "text", "text": "cut"}]}],
 "default_reply": [{"type": "text", "text": "Done."}]})J";

Scenario Load(const std::string& text, const std::string& name = "s.json") {
  auto s = Scenario::Parse(text, name);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(*s);
}

TEST(ScenarioTest, CapturesAreSubstitutedEverywhere) {
  Scenario s = Load(kJson);
  auto r = s.Reply("lead", "please migrate rest to graphql");
  ASSERT_EQ(r.content.size(), 2u);
  EXPECT_EQ(r.content[0].text, "Moving rest to graphql.");
  EXPECT_EQ(r.content[1].name, "TeamCreate");
  EXPECT_EQ(r.content[1].input_json, R"({"name":"rest-graphql","n":3})");
  EXPECT_EQ(r.stop_reason, "tool_use");
  EXPECT_EQ(r.rule, 0);
}

// $TEAM is the asking agent's team: one scenario serves any team.
TEST(ScenarioTest, TeamIsTheAskingAgentsTeam) {
  Scenario s = Load(R"({"rules": [{"when": "go", "once": false, "reply": [
      {"type": "tool_use", "name": "Task", "input": {"team_name": "$TEAM", "prompt": "$TEAMS of $1$TEAM"}}]}]})");
  auto r = s.Reply("lead", "go", true, "docs");
  ASSERT_EQ(r.content.size(), 1u);
  EXPECT_EQ(r.content[0].input_json, R"({"team_name":"docs","prompt":"docsS of docs"})");
  EXPECT_EQ(s.Reply("lead", "go").content[0].input_json, R"({"team_name":"","prompt":"S of "})");
  EXPECT_EQ(TeamOfAgent("writer@docs"), "docs");
  EXPECT_EQ(TeamOfAgent("writer"), "");
}

TEST(ScenarioTest, OnceFiresOncePerAgentAndReusableRulesRepeat) {
  Scenario s = Load(kJson);
  EXPECT_EQ(s.Reply("lead", "migrate a to b").rule, 0);
  // Fired for lead: the next eligible rule, then the default.
  EXPECT_EQ(s.Reply("lead", "migrate a to b").rule, -1);
  EXPECT_EQ(s.Reply("lead", "migrate a to b").content[0].text, "Done.");
  // Task rule (once: false) fires every time, for any agent.
  for (int i = 0; i < 3; ++i) {
    auto r = s.Reply("backend", "Task #" + std::to_string(i + 4) + ": x");
    ASSERT_EQ(r.rule, 1);
    EXPECT_EQ(r.content[0].input_json, R"({"task_id":")" + std::to_string(i + 4) +
                                           R"(","status":"completed"})");
  }
}

TEST(ScenarioTest, DelayOfIsTheAnsweringRulesAndUsesNothingUp) {
  Scenario s = Load(R"J({"rules": [
     {"agent": "lead", "when": "slow", "once": true, "delay_ms": 70, "reply": [{"type": "text", "text": "a"}]},
     {"agent": "*", "when": "slow", "delay_ms": 30, "reply": [{"type": "text", "text": "b"}]}]})J");
  EXPECT_EQ(s.DelayOf("lead", "slow"), 70);
  EXPECT_EQ(s.DelayOf("lead", "slow"), 70);  // still there: asking used nothing up
  EXPECT_EQ(s.Reply("lead", "slow").rule, 0);
  EXPECT_EQ(s.DelayOf("lead", "slow"), 30);  // the once rule fired: the next one answers
  EXPECT_EQ(s.DelayOf("other", "slow"), 30);
  EXPECT_EQ(s.DelayOf("lead", "fast"), 0);  // the default reply
}

// A request for `agent` whose newest user turn reads `text`; with
// `refused`, an assistant's turn comes first, which the API refuses.
Request OneMessage(const std::string& agent, const std::string& text, bool refused = false) {
  Request r;
  r.agent_id = agent + "@t";
  ChatMessage m;
  if (refused) {
    m.role = Role::kAssistant;
    m.content.push_back(ContentBlock::Text("hello"));
    r.messages.push_back(m);
    m.content.clear();
  }
  m.role = Role::kUser;
  m.content.push_back(ContentBlock::Text(text));
  r.messages.push_back(m);
  return r;
}

// The API checks a request on its servers while the client waits: the
// scripted model checks it halfway through its delay, not before, and a
// request it refuses uses up no `once` rule.
TEST(ScriptedProviderTest, ARequestIsCheckedHalfwayThroughTheDelayAndARefusalUsesNothingUp) {
  auto s = std::make_shared<Scenario>(Load(R"J({"rules": [
     {"agent": "w", "when": "go", "once": true, "delay_ms": 400, "reply": [{"type": "text", "text": "once"}]}]})J"));
  ScriptedProvider p(s);
  const auto t0 = std::chrono::steady_clock::now();
  auto refused = p.Complete(OneMessage("w", "go", /*refused=*/true), {}, nullptr);
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("first message must use the \"user\" role"),
            std::string::npos)
      << refused.status().message();
  EXPECT_GE(waited, std::chrono::milliseconds(200));  // not before halfway
  auto r = p.Complete(OneMessage("w", "go"), {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->content.size(), 1u);
  EXPECT_EQ(r->content[0].text, "once");
}

TEST(ScriptedProviderTest, ACancelBeforeTheCheckEndsTheCall) {
  auto s = std::make_shared<Scenario>(Load(R"J({"rules": [
     {"agent": "w", "when": "go", "once": true, "delay_ms": 60000, "reply": [{"type": "text", "text": "once"}]}]})J"));
  ScriptedProvider p(s);
  CancelToken cancel;
  std::thread canceller([&] { cancel.Cancel(); });
  auto r = p.Complete(OneMessage("w", "go"), {}, &cancel);
  canceller.join();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(s->DelayOf("w", "go"), 60000);  // unanswered: the once rule is still there
}

TEST(ScenarioTest, AgentGlobsAndFirstEligibleRuleWins) {
  Scenario s = Load(kJson);
  EXPECT_EQ(s.Reply("frontend", "hello").content[0].text, "frontend here");
  EXPECT_EQ(s.Reply("frontend", "hello").content[0].text, "Done.");  // once
  EXPECT_EQ(s.Reply("backend", "hello").rule, -1);
  // "Task #1" matches rule 1 before rule 2 even for a front* agent.
  EXPECT_EQ(s.Reply("front2", "Task #1").rule, 1);
  auto cut = s.Reply("x", "anything");
  EXPECT_EQ(cut.stop_reason, "max_tokens");
}

TEST(ScenarioTest, YamlWorksToo) {
  Scenario s = Load(R"Y(
rules:
  - agent: lead
    when: "hello (.*)"
    reply:
      - {type: text, text: "hi $1"}
      - type: tool_use
        name: bash
        input: {command: "echo 'yes: 1'", timeout: 5}
default_reply:
  - {type: text, text: "nothing"}
)Y", "s.yaml");
  auto r = s.Reply("lead", "hello world");
  EXPECT_EQ(r.content[0].text, "hi world");
  EXPECT_EQ(r.content[1].input_json, R"({"command":"echo 'yes: 1'","timeout":5})");
}

TEST(ScenarioTest, NewestUserTurnIncludesToolResults) {
  std::vector<ChatMessage> msgs;
  msgs.push_back({Role::kUser, {ContentBlock::Text("first")}});
  msgs.push_back({Role::kAssistant, {ContentBlock::ToolUse("t1", "bash", "{}")}});
  msgs.push_back({Role::kUser, {ContentBlock::ToolResult("t1", "exit 0", false),
                                ContentBlock::Text("<teammate-message>hi</teammate-message>")}});
  EXPECT_EQ(NewestUserText(msgs), "exit 0\n<teammate-message>hi</teammate-message>");
  EXPECT_EQ(AgentName("frontend@team"), "frontend");
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("back?nd", "backend"));
}

TEST(ScenarioTest, BrokenFilesSayWhatAndWhere) {
  struct Case {
    std::string text, name, expect;
  };
  std::vector<Case> cases = {
      {"{\"rules\": [", "a.json", "a.json: malformed JSON"},
      {"rules: [\n  - {agent: x\n", "b.yaml", "b.yaml: malformed YAML at line"},
      {R"({"rules": {}})", "c.json", "rules: must be a list"},
      {R"({"rules": [{"when": "(unclosed", "reply": [{"type":"text","text":"x"}]}]})", "d.json",
       "rules[0].when: invalid regex"},
      {R"({"rules": [{"agent": "a"}]})", "e.json", "rules[0]: a rule needs a 'reply'"},
      {R"({"rules": [{"reply": [{"type":"tool_use"}]}]})", "f.json",
       "rules[0].reply[0]: a tool_use block needs a 'name'"},
      {R"({"rules": [{"reply": [{"type":"image"}]}]})", "g.json", "rules[0].reply[0].type"},
      {R"({"rules": [{"whne": "x", "reply": [{"type":"text","text":"x"}]}]})", "h.json",
       "rules[0]: unknown field 'whne'"},
      {R"({"rules": [{"reply": [{"type":"text","text":""}]}]})", "i.json", "non-empty 'text'"},
      {R"({"rules": [{"delay_ms": -1, "reply": [{"type":"text","text":"x"}]}]})", "j.json",
       "delay_ms"},
      {R"({"rules": [{"reply": []}]})", "k.json", "non-empty list"},
      {R"([1,2])", "l.json", "must be an object"},
      {R"({"rules": [], "default_reply": [{"type":"tool_use","name":"x","input":[1]}]})",
       "m.json", "default_reply[0].input: must be an object"},
  };
  for (const auto& c : cases) {
    auto s = Scenario::Parse(c.text, c.name);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << s.status().message();
  }
  EXPECT_NE(Scenario::Load("/no/such/file.json").status().message().find("does not exist"),
            std::string::npos);
}

TEST(ScenarioTest, ManyAgentsAtOnceEachGetTheirOnceRuleExactlyOnce) {
  Scenario s = Load(R"({"rules": [{"agent": "*", "when": "go", "reply": [{"type":"text","text":"first"}]}]})");
  std::atomic<int> firsts{0};
  std::vector<std::thread> threads;
  for (int a = 0; a < 8; ++a) {
    threads.emplace_back([&, a] {
      for (int i = 0; i < 200; ++i) {
        if (s.Reply("agent" + std::to_string(a), "go").rule == 0) ++firsts;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(firsts.load(), 8);
}

// Found by the scenario fuzzer: a block's "type" that is not a string threw
// out of Parse. And what would be undefined or throw later, at a reply: a
// tool_use id that is not a string, a delay past any int.
TEST(ScenarioTest, FieldsOfTheWrongTypeAreRefusedNotThrown) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"rules": [{"reply": [{"type": 7}]}]})", "rules[0].reply[0].type"},
           {R"({"default_reply": [{"type": null, "text": "x"}]})", "default_reply[0].type"},
           {R"({"rules": [{"reply": [{"type": "tool_use", "name": "bash", "id": 5}]}]})", "reply[0].id"},
           {R"({"rules": [{"delay_ms": 1e300, "reply": [{"type": "text", "text": "x"}]}]})", "delay_ms"},
           // RE2 bounds counts and the compiled program (std::regex, before,
           // overflowed a long on a count the fuzzer found, UB).
           {R"({"rules": [{"when": "x{1,5000}", "reply": [{"type": "text", "text": "x"}]}]})",
            "invalid repetition size"},
           {R"({"rules": [{"when": "(((((a{9}){9}){9}){9}){9}){9}", "reply": [{"type": "text", "text": "x"}]}]})",
            "invalid repetition size"},
           {R"({"rules": [{"when": "(?=look)ahead", "reply": [{"type": "text", "text": "x"}]}]})",
            "invalid perl operator"},
       }) {
    Status s;
    ASSERT_NO_THROW(s = Scenario::Parse(c.text, "s.json").status()) << c.text;
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
}

// A model's turn may be megabytes of tool output. libstdc++'s regex
// recursed once per character: these patterns overflowed an 8 MB stack at
// 8-20 KB of text (a segfault of the scripted provider or mock-llm) and took
// quadratic time. RE2 searches them in linear time.
TEST(ScenarioTest, AWhenIsSearchedInAHugeTextWithoutRecursion) {
  const std::string huge(4 << 20, 'a');
  for (const char* when : {"((a|b)|(c|a))*z", "(a*)*z", "(a|b)*c", "[\\\\s\\\\S]*x", "a{2222222222222222222}"}) {
    Scenario s = Load(std::string(R"({"rules": [{"once": false, "when": ")") + when +
                      R"(", "reply": [{"type": "text", "text": "matched"}]}], )"
                      R"("default_reply": [{"type": "text", "text": "none"}]})");
    EXPECT_EQ(s.Reply("lead", huge).content[0].text, "none") << when;
    EXPECT_EQ(s.Reply("lead", huge + "z b c x").content[0].text, when[0] == 'a' ? "none" : "matched") << when;
  }
}

TEST(ScenarioTest, CaptureGroupsFillTheReply) {
  Scenario s = Load(R"({"rules": [{"when": "migrate (\\w+)(?: to (\\w+))?(!)?",
                                  "reply": [{"type": "text", "text": "from $1 to $2$3."}]}]})");
  EXPECT_EQ(s.Reply("lead", "please migrate users to orders now").content[0].text, "from users to orders.");
}

}  // namespace
}  // namespace mates::llm
