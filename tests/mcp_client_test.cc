// mates agents with real MCP servers from npm (scripts/setup-mcp installs
// @modelcontextprotocol/server-everything and server-filesystem into
// .cache/mcp): a scripted lead calls their tools through `mates run`, one
// server is killed mid-run and restarted, a hanging tool times out, a bad
// call is an error result; `mates mcp list`; roles; streamable HTTP; every
// misconfiguration is one clear error naming the server. Without the
// packages the tests are skipped, loudly.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <sstream>
#include <thread>

#include "core/json.h"
#include "core/subprocess.h"
#include "agent/activity.h"
#include "host/sampling.h"
#include "mcp/hub.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

fs::path NpmBin(const std::string& name) { return fs::path(MATES_SOURCE_DIR) / ".cache/mcp/node_modules/.bin" / name; }

#define MATES_NEED_SERVERS()                                                                               \
  if (!fs::exists(NpmBin("mcp-server-everything")) || !fs::exists(NpmBin("mcp-server-filesystem"))) {     \
    GTEST_SKIP() << "\n*** SKIPPED LOUDLY: the MCP reference servers are not in .cache/mcp "              \
                    "(./scripts/setup-mcp installs them with npm; it could not here) ***";                \
  }

// The tests' trust (DESIGN §19) is their own: a folder of this test
// program's, not the person's ~/.config.
class OwnTrust : public ::testing::Environment {
 public:
  void SetUp() override { ::setenv("XDG_CONFIG_HOME", dir_.path().c_str(), 1); }

 private:
  TempDir dir_;
};
const auto* const kOwnTrust = ::testing::AddGlobalTestEnvironment(new OwnTrust);

// Writes the workspace's .mcp.json and trusts it as written: these tests
// are about what the servers do once a person let them run.
void WriteTrusted(const fs::path& ws, const std::string& json) {
  WriteAll(ws / ".mcp.json", json);
  auto r = testing::RunMates(ws, {"trust"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// The .mcp.json of the tests: both servers, each carrying `mark` in its
// environment so that the test can find what is left of them.
std::string McpJson(const std::string& mark) {
  Json servers = {
      {"everything", {{"command", NpmBin("mcp-server-everything").string()}, {"env", {{"MATES_TEST_MARK", mark}}}}},
      {"fs",
       {{"command", NpmBin("mcp-server-filesystem").string()}, {"args", {"."}}, {"env", {{"MATES_TEST_MARK", mark}}}}}};
  return DumpJson(Json{{"mcpServers", servers}});
}

// Processes whose environment holds MATES_TEST_MARK=<mark>.
int ProcessesMarked(const std::string& mark) {
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return -1;
  const std::string needle = "MATES_TEST_MARK=" + mark;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string env = ReadAll(fs::path("/proc") / e->d_name / "environ");
    std::replace(env.begin(), env.end(), '\0', '\n');
    if (env.find(needle + "\n") != std::string::npos) ++n;
  }
  ::closedir(d);
  return n;
}

std::vector<Json> JournalToolResults(const fs::path& journal) {
  std::vector<Json> out;
  std::istringstream in(ReadAll(journal));
  std::string line;
  while (std::getline(in, line)) {
    auto j = ParseJson(line);
    if (!j.ok() || !j->contains("message")) continue;
    const Json& content = (*j)["message"]["content"];
    if (!content.is_array()) continue;
    for (const auto& b : content) {
      if (b.contains("type") && b["type"] == "tool_result") out.push_back(b);
    }
  }
  return out;
}

TEST(McpClientTest, AScriptedLeadUsesRealServersSurvivesTheirDeathAndLeavesNothing) {
  MATES_NEED_SERVERS();
  TempDir ws;
  const std::string mark = "run-" + std::to_string(::getpid());
  WriteTrusted(ws.path(), McpJson(mark));
  WriteAll(ws.path() / ".mates/config.yaml", "mcp:\n  servers:\n    everything: {call_timeout: 2}\n");
  WriteAll(ws.path() / "notes.txt", "the notes of the test\n");
  // Without the sandbox: the lead's bash kills a server to stand for its
  // death, which a sandboxed bash cannot (nothing outside its tree).
  auto r = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                                         testing::ScenarioFixture("lead_mcp.yaml"), "--sandbox", "off",
                                         "use the mcp tools"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("MCP tour done."), std::string::npos) << r.out << r.err;
  auto results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
  ASSERT_EQ(results.size(), 6u) << r.err;
  auto text = [&](size_t i) { return results[i]["content"].get<std::string>(); };
  auto error = [&](size_t i) { return results[i].value("is_error", false); };
  EXPECT_EQ(text(0), "Echo: hi from mates");
  EXPECT_FALSE(error(0));
  EXPECT_EQ(text(1), "the notes of the test\n");  // server-filesystem, in the workspace
  EXPECT_NE(text(2).find("killed the server"), std::string::npos);
  EXPECT_EQ(text(3), "Echo: after the restart") << "the dead server is restarted for the next call";
  EXPECT_TRUE(error(4));
  EXPECT_NE(text(4).find("did not answer within 2 s"), std::string::npos) << text(4);
  EXPECT_TRUE(error(5)) << "the server refused the arguments";
  EXPECT_NE(text(5).find("get-sum"), std::string::npos) << text(5);
  // The servers' stderr went to their logs; none of them outlives the run.
  EXPECT_TRUE(fs::exists(ws.path() / ".mates/mcp/everything.log"));
  EXPECT_EQ(ProcessesMarked(mark), 0);
}

// An MCP server's question goes to the person (DESIGN §23): the reference
// server asks, mid-call, for its form of thirteen fields. `mates inbox
// user` and `mates answer` show it; answers that do not fit are refused
// naming the field; one that fits reaches the server, choices given by
// their titles and the defaults filled in; asked again, it is declined by
// hand. In a second run, left unanswered, the question is declined at its
// timeout and closed — and the call, whose own timeout is shorter, waits
// for it meanwhile. (The person's side waits on events, with no clock to
// beat: the first run's questions wait up to 60 s.)
TEST(McpClientTest, AServersQuestionIsPutToThePersonAndAnswered) {
  MATES_NEED_SERVERS();
  TempDir ws;
  const std::string mark = "ask-" + std::to_string(::getpid());
  WriteTrusted(ws.path(), McpJson(mark));
  WriteAll(ws.path() / ".mates/config.yaml",
           "mcp:\n  servers:\n    everything: {call_timeout: 3, elicitation_timeout: 60}\n");
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "default"}).exit_code, 0);
  Subprocess run = testing::StartMates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                                                   testing::ScenarioFixture("lead_elicits.yaml"), "--sandbox", "off",
                                                   "ask the person"});
  // The question reaches user's inbox: an event, not a poll.
  auto asked = testing::RunMates(ws.path(), {"inbox", "user", "--wait", "60", "--json"});
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  auto msg = ParseJson(asked.out.substr(0, asked.out.find('\n')));
  ASSERT_TRUE(msg.ok()) << asked.out;
  EXPECT_EQ((*msg)["type"], "elicitation_request");
  EXPECT_EQ((*msg)["sender"], "lead");
  const std::string id = (*msg)["request_id"];
  auto listed = testing::RunMates(ws.path(), {"answer"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  for (const char* shown : {"MCP server everything asks", "Please provide inputs for the following fields:",
                            "name (string, required): Your full, legal name",
                            "integer (integer 1..100, default 42)", "Wonder Woman", "mates answer " }) {
    EXPECT_NE(listed.out.find(shown), std::string::npos) << shown << "\n" << listed.out;
  }
  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"answer", id, "integer=500", "name=Ann"}, "field 'integer': 500 is above its maximum 100"},
           {{"answer", id, "email=nope", "name=Ann"}, "field 'email': 'nope' is not a valid email"},
           {{"answer", id, "check=7"}, "field 'check': true or false is wanted"},
           {{"answer", id, "colour=red"}, "field 'colour': the question does not ask it"},
           {{"answer", id, "integer=5"}, "field 'name': it is required"},
           {{"answer", id, "untitledMultipleSelectEnum=Guitar,Piano,Drums,Bass"}, "at most 3 choices"},
           {{"answer", id, "noequals"}, "a field is NAME=VALUE"},
           {{"answer", id, "--decline", "name=Ann"}, "--decline answers nothing"},
           {{"answer", "r-nosuch", "name=Ann"}, "no request"},
       }) {
    auto r = testing::RunMates(ws.path(), b.args);
    EXPECT_NE(r.exit_code, 0) << b.says;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.err;
  }
  auto by_agent = testing::RunMates(ws.path(), {"answer", id, "name=Mallory"}, {"MATES_AGENT_NAME=lead"});
  EXPECT_EQ(by_agent.exit_code, 2) << "an agent cannot answer as the person";
  auto answered = testing::RunMates(ws.path(), {"answer", id, "name=Ann", "check=yes", "email=ann@example.com",
                                                "integer=7", "titledSingleSelectEnum=Wonder Woman",
                                                "untitledMultipleSelectEnum=Piano, Drums"});
  ASSERT_EQ(answered.exit_code, 0) << answered.err;
  EXPECT_NE(answered.out.find("answered " + id), std::string::npos) << answered.out;
  auto again = testing::RunMates(ws.path(), {"answer", id, "--decline"});
  EXPECT_NE(again.err.find("was answered already (accepted"), std::string::npos) << again.err;
  // The second question, declined by hand.
  auto asked_again = testing::RunMates(ws.path(), {"inbox", "user", "--wait", "60", "--json"});
  auto second_msg = ParseJson(asked_again.out.substr(0, asked_again.out.find('\n')));
  ASSERT_TRUE(second_msg.ok()) << asked_again.out << asked_again.err;
  const std::string second_id = (*second_msg)["request_id"];
  auto declined = testing::RunMates(ws.path(), {"answer", second_id, "--decline"});
  EXPECT_EQ(declined.exit_code, 0) << declined.err;
  EXPECT_NE(declined.out.find("declined " + second_id), std::string::npos) << declined.out;
  SubprocessResult done = run.Wait();
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.out.find("Asked twice."), std::string::npos) << done.out << done.err;
  auto results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
  ASSERT_EQ(results.size(), 2u) << done.err;
  const std::string first = results[0]["content"];
  for (const char* got : {"User provided the requested information", "- Name: Ann", "- Agreed to terms: true",
                          "- Favorite Integer: 7", "hero-3", "\"Piano\"", "It was a dark and stormy night."}) {
    EXPECT_NE(first.find(got), std::string::npos) << got << "\n" << first;
  }
  const std::string second = results[1]["content"];
  EXPECT_NE(second.find("User declined"), std::string::npos) << second;
  // Nobody answers: declined at the timeout (4 s), the call waiting past
  // its own (2 s) meanwhile.
  WriteAll(ws.path() / ".mates/config.yaml",
           "mcp:\n  servers:\n    everything: {call_timeout: 2, elicitation_timeout: 4}\n");
  auto unanswered = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                                                  testing::ScenarioFixture("lead_elicits.yaml"), "--sandbox", "off",
                                                  "ask the person"},
                                      {}, "", 60);
  EXPECT_EQ(unanswered.exit_code, 0) << unanswered.err;
  results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
  ASSERT_EQ(results.size(), 3u) << unanswered.err;
  EXPECT_NE(results[2]["content"].get<std::string>().find("User declined"), std::string::npos) << results[2];
  EXPECT_FALSE(results[2].value("is_error", false)) << "the call waited for the question, past its own 2 s";
  // All closed, for whoever shows them: nothing waits any more.
  auto left = testing::RunMates(ws.path(), {"answer", "--json"});
  EXPECT_EQ(left.out, "[]\n") << left.out;
  auto log = testing::RunMates(ws.path(), {"log", "--json"});
  EXPECT_NE(log.out.find("declined: nobody answered within 4 s"), std::string::npos) << log.out;
  EXPECT_NE(log.out.find("declined by user (mates answer)"), std::string::npos) << log.out;
  EXPECT_EQ(ProcessesMarked(mark), 0);
}

// A server's sampling/createMessage is served by the lead's model (DESIGN
// §23): the reference server's trigger-sampling-request gets the scripted
// lead's answer, and `mates usage` counts it apart. Declined by config,
// sampling is not offered (the server then has no such tool); past the
// team's budget, it is refused with why.
TEST(McpClientTest, AServersSamplingIsServedByTheLeadsModelWithinTheBudget) {
  MATES_NEED_SERVERS();
  auto run = [](const fs::path& ws, const std::string& config) {
    WriteAll(ws / ".mates/config.yaml", config);
    return testing::RunMates(ws, {"run", "--provider", "scripted", "--scenario",
                                  testing::ScenarioFixture("lead_samples.yaml"), "--sandbox", "off", "sample it"},
                             {}, "", 60);
  };
  {
    TempDir ws;
    WriteTrusted(ws.path(), McpJson("sample-" + std::to_string(::getpid())));
    auto r = run(ws.path(), "mcp:\n  call_timeout: 30\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Sampled."), std::string::npos) << r.out << r.err;
    auto results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
    ASSERT_EQ(results.size(), 1u);
    const std::string text = results[0]["content"];
    EXPECT_NE(text.find("Threads run side by side"), std::string::npos) << text;
    EXPECT_NE(text.find("\"stopReason\": \"endTurn\""), std::string::npos) << text;
    auto usage = testing::RunMates(ws.path(), {"usage", "--json"});
    EXPECT_NE(usage.out.find("lead (MCP sampling)"), std::string::npos) << usage.out;
    EXPECT_TRUE(fs::exists(ws.path() / ".teams/default/agents/lead.mcp.jsonl"));
  }
  {
    TempDir ws;
    WriteTrusted(ws.path(), McpJson("sample-" + std::to_string(::getpid())));
    auto r = run(ws.path(), "mcp:\n  servers:\n    everything: {sampling: decline}\n");
    auto results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
    ASSERT_EQ(results.size(), 1u) << r.err;
    EXPECT_NE(results[0]["content"].get<std::string>().find("unknown tool 'mcp__everything__trigger-sampling-request'"),
              std::string::npos)
        << "not offered, so the server has no tool that samples: " << results[0];
    auto bad = run(ws.path(), "mcp:\n  sampling: maybe\n");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("mcp.sampling: must be serve or decline, not 'maybe'"), std::string::npos) << bad.err;
  }
  {
    // A budget the lead's first call spends: the sampling its tool asks
    // for is refused, saying why.
    TempDir ws;
    WriteTrusted(ws.path(), McpJson("sample-" + std::to_string(::getpid())));
    ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "default"}).exit_code, 0);
    ASSERT_EQ(testing::RunMates(ws.path(), {"budget", "set", "--tokens", "10"}).exit_code, 0);
    auto r = run(ws.path(), "mcp:\n  call_timeout: 30\n");
    auto results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
    ASSERT_EQ(results.size(), 1u) << r.err;
    EXPECT_NE(results[0]["content"].get<std::string>().find("mates does not sample for server everything"),
              std::string::npos)
        << results[0];
    EXPECT_FALSE(fs::exists(ws.path() / ".teams/default/agents/lead.mcp.jsonl"));
  }
}

// What a server asks to sample, and what is not served: one clear error.
TEST(McpClientTest, SamplingRequestsAreReadStrictly) {
  auto req = host::SamplingRequest(Json::parse(R"({"messages":[{"role":"user","content":{"type":"text","text":"hi"}},
      {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
      "systemPrompt":"be brief","maxTokens":999999,"temperature":3})"),
                                   "m");
  ASSERT_TRUE(req.ok()) << req.status().message();
  EXPECT_EQ(req->model, "m");
  EXPECT_EQ(req->system, "be brief");
  EXPECT_EQ(req->max_tokens, host::kMaxSamplingTokens);
  EXPECT_EQ(req->temperature, 1.0);
  ASSERT_EQ(req->messages.size(), 2u);
  EXPECT_EQ(req->messages[1].content.size(), 2u);
  for (auto [params, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"messages":[],"maxTokens":5})", "needs messages"},
           {R"({"messages":[{"role":"user","content":{"type":"text","text":"x"}}]})", "needs maxTokens"},
           {R"({"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":0})", "needs maxTokens"},
           {R"({"messages":[{"role":"system","content":{"type":"text","text":"x"}}],"maxTokens":5})", "user or assistant"},
           {R"({"messages":[{"role":"user","content":{"type":"image","data":"AA=="}}],"maxTokens":5})", "text only, not 'image'"},
           {R"({"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":5,"tools":[]})", "with tools"},
           {R"({"messages":[{"role":"user"}],"maxTokens":5})", "content must be a block object"},
           {R"({"messages":[{"role":"user","content":{"type":"text","text":")" + std::string(300 << 10, 'x') +
                R"("}}],"maxTokens":5})",
            "256 KiB of text at most; this asks 300 KiB"},
           {R"("x")", "needs params"}}) {
    auto bad = host::SamplingRequest(Json::parse(params), "");
    EXPECT_FALSE(bad.ok()) << params;
    EXPECT_NE(bad.status().message().find(says), std::string::npos) << params << ": " << bad.status().message();
  }
}

// A server's progress notifications for a call reach whoever made it (an
// agent's activity: "mcp__everything__…({…}) — 2/4"), in order and before
// its answer; a call that asked for none gets none.
// A server whose tools change while it runs (tests/mcp/changing_server.mjs,
// on the official SDK), carrying `mark` in its environment.
std::string ChangingJson(const std::string& mark) {
  const fs::path modules = fs::path(MATES_SOURCE_DIR) / ".cache/mcp/node_modules";
  Json servers = {{"changing",
                   {{"command", "node"},
                    {"args", {(fs::path(MATES_SOURCE_DIR) / "tests/mcp/changing_server.mjs").string(), modules.string()}},
                    {"env", {{"MATES_TEST_MARK", mark}}}}}};
  return DumpJson(Json{{"mcpServers", servers}});
}

// notifications/tools/list_changed: a tool the server adds is offered and
// runs on the agent's next turn, one it removes is gone (an agent's tools
// were fixed when it started).
TEST(McpClientTest, ToolsAServerAddsOrRemovesAreAnAgentsOnItsNextTurn) {
  MATES_NEED_SERVERS();
  TempDir ws;
  const std::string mark = "changing-" + std::to_string(::getpid());
  WriteTrusted(ws.path(), ChangingJson(mark));
  auto r = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                                         testing::ScenarioFixture("lead_grows_tools.yaml"), "grow it"},
                             {}, "", 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Grown and shrunk."), std::string::npos) << r.out << r.err;
  auto results = JournalToolResults(ws.path() / ".teams/default/agents/lead.jsonl");
  ASSERT_EQ(results.size(), 4u) << r.err;
  EXPECT_EQ(results[0]["content"], "added late");
  EXPECT_EQ(results[1]["content"], "late ran");
  EXPECT_EQ(results[2]["content"], "removed late");
  const std::string refused = results[3]["content"];
  EXPECT_EQ(refused.rfind("unknown tool 'mcp__changing__late'", 0), 0u) << refused;
  EXPECT_NE(refused.find("mcp__changing__grow"), std::string::npos) << refused;
  EXPECT_EQ(ProcessesMarked(mark), 0);
}

// Agents on their own threads read the hub's tools while a server changes
// them (ThreadSanitizer runs this): each sees a whole list, and after the
// change every one sees it.
TEST(McpClientTest, AgentsReadChangingToolsSafelyFromTheirThreads) {
  MATES_NEED_SERVERS();
  TempDir ws;
  WriteTrusted(ws.path(), ChangingJson("threads-" + std::to_string(::getpid())));
  auto hub = mcp::Hub::Load(Workspace(ws.path()));
  ASSERT_TRUE(hub.ok());
  (*hub)->Start();
  std::vector<std::unique_ptr<tools::ToolRegistry>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(std::make_unique<tools::ToolRegistry>(tools::Scope::kTeammate));
    agents.back()->AddSource((*hub)->SourceFor("w" + std::to_string(i), /*is_lead=*/false));
  }
  auto has = [](const tools::ToolRegistry& r, const std::string& name) {
    auto names = r.Names();
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  EXPECT_TRUE(has(*agents[0], "mcp__changing__grow"));
  EXPECT_FALSE(has(*agents[0], "mcp__changing__soon"));
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (auto& a : agents) {
    readers.emplace_back([&, r = a.get()] {
      while (!done) {
        auto defs = r->Definitions();
        // grow and shrink are always there; a grown tool is whole.
        int fixed = 0;
        for (const auto& d : defs) {
          fixed += d.name == "mcp__changing__grow" || d.name == "mcp__changing__shrink";
          if (d.name == "mcp__changing__soon" && d.description.find("Grown at run time.") == std::string::npos) ++torn;
        }
        if (fixed != 2) ++torn;
      }
    });
  }
  for (int i = 0; i < 10; ++i) {
    auto grown = (*hub)->Call("changing", "grow", Json{{"name", "soon"}}, nullptr);
    ASSERT_EQ(grown.content, "added soon");
    for (auto& a : agents) EXPECT_TRUE(has(*a, "mcp__changing__soon")) << i;
    auto shrunk = (*hub)->Call("changing", "shrink", Json{{"name", "soon"}}, nullptr);
    ASSERT_EQ(shrunk.content, "removed soon");
    for (auto& a : agents) EXPECT_FALSE(has(*a, "mcp__changing__soon")) << i;
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GE((*hub)->generation(), 21u);  // started, then 20 changes
}

TEST(McpClientTest, ProgressOfALongCallIsToldAsItGoes) {
  MATES_NEED_SERVERS();
  TempDir ws;
  const std::string mark = "progress-" + std::to_string(::getpid());
  WriteTrusted(ws.path(), McpJson(mark));
  auto hub = mcp::Hub::Load(Workspace(ws.path()));
  ASSERT_TRUE(hub.ok());
  (*hub)->Start();
  std::vector<std::string> notes;
  auto r = (*hub)->Call("everything", "trigger-long-running-operation", Json{{"duration", 0.4}, {"steps", 4}}, nullptr,
                        [&](const std::string& note) { notes.push_back(note); });
  EXPECT_FALSE(r.is_error) << r.content;
  EXPECT_EQ(notes, (std::vector<std::string>{"1/4", "2/4", "3/4", "4/4"}));
  auto quiet = (*hub)->Call("everything", "trigger-long-running-operation", Json{{"duration", 0.1}, {"steps", 2}}, nullptr);
  EXPECT_FALSE(quiet.is_error) << quiet.content;
  // In an agent's activity: after its call, while it runs.
  agent::ActivityFile activity(ws.path() / "a.status.json", "a", "m", testing::TestEnv().files,
                              testing::TestEnv().prices);
  llm::ContentBlock call = llm::ContentBlock::ToolUse("t1", "mcp__everything__trigger-long-running-operation", "{}");
  activity.Tool(call);
  activity.Progress("2/4: \x1b[2Jindexing\nnow");
  auto shown = agent::ReadActivity(ws.path() / "a.status.json");
  EXPECT_TRUE(testing::WaitUntil([&] {
    shown = agent::ReadActivity(ws.path() / "a.status.json");
    return shown.ok() && shown->doing.find(" — 2/4: ?[2Jindexing now") != std::string::npos;
  })) << (shown.ok() ? shown->doing : shown.status().message());
  activity.Idle();
  activity.Progress("3/4");  // late: the tool ended
  EXPECT_TRUE(testing::WaitUntil([&] {
    shown = agent::ReadActivity(ws.path() / "a.status.json");
    return shown.ok() && shown->doing.empty();
  }));
}

TEST(McpClientTest, ListShowsTheServersTheirRolesAndTools) {
  MATES_NEED_SERVERS();
  TempDir ws;
  const std::string mark = "list-" + std::to_string(::getpid());
  WriteTrusted(ws.path(), McpJson(mark));
  WriteAll(ws.path() / ".mates/config.yaml", "mcp:\n  servers:\n    fs: {roles: [lead]}\n");
  auto r = testing::RunMates(ws.path(), {"mcp", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("everything (stdio, for everyone): running"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fs (stdio, for lead): running"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mcp__everything__echo"), std::string::npos);
  EXPECT_NE(r.out.find("mcp__fs__read_text_file"), std::string::npos);
  auto j = testing::RunMates(ws.path(), {"mcp", "list", "--json"});
  auto doc = ParseJson(j.out);
  ASSERT_TRUE(doc.ok()) << j.out;
  ASSERT_EQ(doc->size(), 2u);
  EXPECT_EQ((*doc)[1]["name"], "fs");
  EXPECT_EQ((*doc)[1]["roles"], Json::array({"lead"}));
  EXPECT_GT((*doc)[0]["tools"].size(), 5u);
  EXPECT_EQ(ProcessesMarked(mark), 0);

  // A server that does not start: listed as failed, exit 1.
  fs::remove(ws.path() / ".mates/config.yaml");
  WriteTrusted(ws.path(), R"({"mcpServers": {"gone": {"command": "/nonexistent/server"}}})");
  auto failed = testing::RunMates(ws.path(), {"mcp", "list"});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.out.find("gone (stdio, for everyone): failed: "), std::string::npos) << failed.out;
  // No .mcp.json: nothing to list.
  fs::remove(ws.path() / ".mcp.json");
  auto none = testing::RunMates(ws.path(), {"mcp", "list"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_NE(none.out.find("no MCP servers"), std::string::npos);
}

TEST(McpClientTest, RolesDecideWhoGetsWhichTools) {
  MATES_NEED_SERVERS();
  TempDir ws;
  const std::string mark = "roles-" + std::to_string(::getpid());
  WriteTrusted(ws.path(), McpJson(mark));
  WriteAll(ws.path() / ".mates/config.yaml",
           "mcp:\n  servers:\n    fs: {roles: [lead, w2]}\n    everything: {roles: [teammate]}\n");
  auto hub = mcp::Hub::Load(Workspace(ws.path()));
  ASSERT_TRUE(hub.ok()) << hub.status().message();
  (*hub)->Start();
  auto names = [&](const std::string& agent, bool lead) {
    std::set<std::string> servers;
    for (const auto& t : (*hub)->ToolsFor(agent, lead)) servers.insert(t->name().substr(0, t->name().find("__", 5)));
    return servers;
  };
  EXPECT_EQ(names("lead", true), (std::set<std::string>{"mcp__fs"}));
  EXPECT_EQ(names("w1", false), (std::set<std::string>{"mcp__everything"}));
  EXPECT_EQ(names("w2", false), (std::set<std::string>{"mcp__everything", "mcp__fs"}));
  // The tools carry the servers' schemas; a call goes through.
  auto tools = (*hub)->ToolsFor("w1", false);
  auto echo = std::find_if(tools.begin(), tools.end(), [](const auto& t) { return t->name() == "mcp__everything__echo"; });
  ASSERT_NE(echo, tools.end());
  EXPECT_NE((*echo)->input_schema().find("\"message\""), std::string::npos);
  std::unique_ptr<TeamStore> store = FileTeamStore(Workspace("."), testing::TestEnv());
  tools::ToolContext ctx(Workspace("."), *store);
  auto out = (*echo)->Run(Json{{"message", "direct"}}, ctx);
  EXPECT_FALSE(out.is_error) << out.content;
  EXPECT_EQ(out.content, "Echo: direct");
  // An answer larger than a frame mates takes in (6 MiB): read whole, and
  // cut to what a model is given, saying so.
  auto big = (*echo)->Run(Json{{"message", std::string(6 << 20, 'x')}}, ctx);
  EXPECT_FALSE(big.is_error) << big.content.substr(0, 300);
  EXPECT_NE(big.content.find("more bytes cut]"), std::string::npos);
  EXPECT_LT(big.content.size(), mcp::kMaxResultBytes + 100);
  hub->reset();
  tools.clear();
  EXPECT_TRUE(testing::WaitUntil([&] { return ProcessesMarked(mark) == 0; }, 10));
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The reference server over `transport` (its streamableHttp or sse) on
// `port`, once it says it listens.
Subprocess StartEverything(const std::string& transport, int port, const fs::path& home) {
  SubprocessOptions o;
  o.argv = {NpmBin("mcp-server-everything").string(), transport};
  o.env = std::vector<std::string>{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home.string(),
                                   "PORT=" + std::to_string(port)};
  o.merge_stderr = true;
  auto server = Subprocess::Start(o);
  if (!server.ok()) throw std::runtime_error(server.status().message());
  for (int i = 0; i < 50; ++i) {
    auto line = server->ReadLine(DeadlineIn(20));
    if (!line.ok()) break;
    if (line->find("on port " + std::to_string(port)) != std::string::npos) return std::move(*server);
  }
  throw std::runtime_error("server-everything did not start its " + transport + " transport");
}

// `mates mcp login` and `logout` refuse what there is nothing to log in
// to, each with one clear error (the logins themselves: McpOAuth.* and
// McpConformance.client.auth/*).
TEST(McpClientTest, LoginRefusesWhatItCannotLogInTo) {
  MATES_NEED_SERVERS();
  TempDir ws;
  WriteTrusted(ws.path(), McpJson("login-" + std::to_string(::getpid())));
  auto stdio = testing::RunMates(ws.path(), {"mcp", "login", "everything"});
  EXPECT_EQ(stdio.exit_code, 2);
  EXPECT_NE(stdio.err.find("runs on this machine (stdio): there is nothing to log in to"), std::string::npos)
      << stdio.err;
  auto unknown = testing::RunMates(ws.path(), {"mcp", "login", "nosuch"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no server 'nosuch'"), std::string::npos) << unknown.err;
  auto nobody = testing::RunMates(ws.path(), {"mcp", "login", "http://127.0.0.1:" + std::to_string(FreePort()) + "/mcp"});
  EXPECT_EQ(nobody.exit_code, 1);
  EXPECT_NE(nobody.err.find("logging in to http://127.0.0.1:"), std::string::npos) << nobody.err;
  auto bad_port = testing::RunMates(ws.path(), {"mcp", "login", "http://127.0.0.1:1/mcp", "--callback-port", "70000"});
  EXPECT_EQ(bad_port.exit_code, 2) << bad_port.err;
  // A server that asks for no login.
  int port = FreePort();
  Subprocess server = StartEverything("streamableHttp", port, ws.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  auto open = testing::RunMates(ws.path(), {"mcp", "login", url});
  EXPECT_EQ(open.exit_code, 1);
  EXPECT_NE(open.err.find("lets mates in without a login"), std::string::npos) << open.err;
  auto logout = testing::RunMates(ws.path(), {"mcp", "logout", url});
  EXPECT_EQ(logout.exit_code, 0);
  EXPECT_NE(logout.out.find("There was no login for " + url), std::string::npos) << logout.out;
  EXPECT_FALSE(fs::exists(fs::path(std::getenv("XDG_CONFIG_HOME")) / "mates/mcp-auth.json"));
}

TEST(McpClientTest, StreamableHttpServersWorkToo) {
  MATES_NEED_SERVERS();
  TempDir ws;
  int port = FreePort();
  Subprocess server = StartEverything("streamableHttp", port, ws.path());
  WriteTrusted(ws.path(),
               R"({"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:)" + std::to_string(port) + R"(/mcp"}}})");
  auto r = testing::RunMates(ws.path(), {"mcp", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("web (http, for everyone): running"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mcp__web__get-sum"), std::string::npos) << r.out;
  auto hub = mcp::Hub::Load(Workspace(ws.path()));
  ASSERT_TRUE(hub.ok());
  (*hub)->Start();
  auto sum = (*hub)->Call("web", "get-sum", Json{{"a", 2}, {"b", 40}}, nullptr);
  EXPECT_FALSE(sum.is_error) << sum.content;
  EXPECT_NE(sum.content.find("42"), std::string::npos) << sum.content;
  auto bad = (*hub)->Call("web", "get-sum", Json{{"a", "x"}}, nullptr);
  EXPECT_TRUE(bad.is_error);
  // Its progress comes on the call's own stream, before the answer.
  std::vector<std::string> notes;
  auto longer = (*hub)->Call("web", "trigger-long-running-operation", Json{{"duration", 0.2}, {"steps", 2}}, nullptr,
                             [&](const std::string& note) { notes.push_back(note); });
  EXPECT_FALSE(longer.is_error) << longer.content;
  EXPECT_EQ(notes, (std::vector<std::string>{"1/2", "2/2"}));
  // Nothing listens on a port just freed: one clear failure.
  WriteTrusted(ws.path(),
               R"({"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:)" + std::to_string(FreePort()) + R"(/mcp"}}})");
  auto down = testing::RunMates(ws.path(), {"mcp", "list"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.out.find("web (http, for everyone): failed: "), std::string::npos) << down.out;
}

// The older HTTP+SSE transport (revision 2024-11-05; "type": "sse" as
// Claude Code writes it): the reference server's own, from list to call.
TEST(McpClientTest, HttpPlusSseServersWorkToo) {
  MATES_NEED_SERVERS();
  TempDir ws;
  int port = FreePort();
  Subprocess server = StartEverything("sse", port, ws.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/sse";
  WriteTrusted(ws.path(), R"({"mcpServers": {"old": {"type": "sse", "url": ")" + url + R"("}}})");
  auto r = testing::RunMates(ws.path(), {"mcp", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("old (sse, for everyone): running"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mcp__old__get-sum"), std::string::npos) << r.out;
  auto hub = mcp::Hub::Load(Workspace(ws.path()));
  ASSERT_TRUE(hub.ok());
  (*hub)->Start();
  auto sum = (*hub)->Call("old", "get-sum", Json{{"a", 2}, {"b", 40}}, nullptr);
  EXPECT_FALSE(sum.is_error) << sum.content;
  EXPECT_NE(sum.content.find("42"), std::string::npos) << sum.content;
  // By hand, from the URL.
  auto called = testing::RunMates(ws.path(), {"mcp", "call", "--sse", url, "get-sum", R"({"a": 1, "b": 2})"});
  EXPECT_EQ(called.exit_code, 0) << called.err;
  EXPECT_NE(called.out.find("3"), std::string::npos) << called.out;
  // Named "type": "http" (or given without --sse), it is found by the
  // specification's fallback: its initialize POST refused with a 4xx, the
  // older transport's stream at the same URL.
  auto fallen = testing::RunMates(ws.path(), {"mcp", "call", url, "get-sum", R"({"a": 20, "b": 3})"});
  EXPECT_EQ(fallen.exit_code, 0) << fallen.err;
  EXPECT_NE(fallen.out.find("23"), std::string::npos) << fallen.out;
  // A stream that is not one: one clear failure.
  auto wrong = testing::RunMates(ws.path(), {"mcp", "call", "--sse", "http://127.0.0.1:" + std::to_string(port) + "/nope"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("HTTP 404"), std::string::npos) << wrong.err;
  // Neither transport there: both failures said.
  auto neither = testing::RunMates(ws.path(), {"mcp", "call", "http://127.0.0.1:" + std::to_string(port) + "/nope"});
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_NE(neither.err.find("nor does it speak HTTP+SSE"), std::string::npos) << neither.err;
}

// A server that sends whatever it likes: junk lines, a 20 MiB line, NULs,
// nesting past the bound, answers of the wrong shapes, an error that is not
// an object, a request of its own (refused: its answer is one more line to
// it), a revision mates does not speak. Nothing crashes, every call gets an
// answer or an error result, and the state says why.
TEST(McpClientTest, AHostileServerIsSurvived) {
  TempDir ws;
  const std::string hostile = R"SH(
read -r l
printf 'not json\n'
head -c 20000000 /dev/zero | tr '\0' 'x'; printf '\n'
printf '\0\0\0\n'
for i in $(seq 1 300); do printf '['; done; printf '\n'
printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}\n'
printf '{"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{}}\n'
printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":7}}}\n'
read -r l; read -r l; read -r l
printf '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":"nope"},{"noname":1},7,null]}}\n'
read -r l
printf '{"jsonrpc":"2.0","id":3,"result":{"content":"nope","isError":"yes"}}\n'
read -r l
printf '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"image","data":"AAAA"},{"type":"text","text":7},null,{"type":"resource_link","uri":"file:///x"}]}}\n'
read -r l
printf '{"jsonrpc":"2.0","id":5,"error":"boom"}\n'
read -r l
printf '{"jsonrpc":"2.0","id":6,"result":[1,2]}\n'
read -r l
)SH";
  const std::string old_revision =
      "read -r l; printf '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"1999-01-01\"}}\\n'; read -r l";
  mcp::ServerConfig h{.name = "h", .argv = {"/bin/bash", "-c", hostile}};
  mcp::ServerConfig old{.name = "old", .argv = {"/bin/bash", "-c", old_revision}};
  h.startup_timeout_s = old.startup_timeout_s = 30;
  h.call_timeout_s = 10;
  auto hub = std::make_shared<mcp::Hub>(Workspace(ws.path()), std::vector<mcp::ServerConfig>{h, old});
  hub->Start();
  auto states = hub->States();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].state, "running");
  ASSERT_EQ(states[0].tools.size(), 1u) << "entries without a name are no tools";
  EXPECT_EQ(states[0].tools[0].input_schema, Json({{"type", "object"}}));
  EXPECT_NE(states[1].state.find("speaks MCP revision '1999-01-01'"), std::string::npos) << states[1].state;
  auto shapes = hub->Call("h", "t", Json::object(), nullptr);  // content not a list, isError not a boolean
  EXPECT_FALSE(shapes.is_error);
  EXPECT_EQ(shapes.content, "");
  auto blocks = hub->Call("h", "t", Json::object(), nullptr);
  EXPECT_FALSE(blocks.is_error);
  EXPECT_EQ(blocks.content, "[image, 4 bytes of base64]\n[text]\n[resource link: file:///x]");
  auto error = hub->Call("h", "t", Json::object(), nullptr);
  EXPECT_TRUE(error.is_error);
  EXPECT_NE(error.content.find("\"boom\""), std::string::npos) << error.content;
  auto array = hub->Call("h", "t", Json::object(), nullptr);
  EXPECT_FALSE(array.is_error) << array.content;
  auto gone = hub->Call("h", "t", Json::object(), nullptr);  // it exits without answering
  EXPECT_TRUE(gone.is_error);
  EXPECT_NE(gone.content.find("went away during the call"), std::string::npos) << gone.content;
  auto refused = hub->Call("old", "t", Json::object(), nullptr);
  EXPECT_TRUE(refused.is_error);
  EXPECT_NE(refused.content.find("1999-01-01"), std::string::npos) << refused.content;
}

// A stdio server (a bash script) of `revision` with one tool, `ask`,
// during whose call it runs `during` (its requests to the client, and
// reading the answers); the call then answers "asked".
std::string AskingServer(const std::string& revision, const std::string& during) {
  return R"SH(
read -r l
printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":")SH" +
         revision + R"SH(","capabilities":{"tools":{}},"serverInfo":{"name":"asker"}}}\n'
read -r l; read -r l
printf '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}}\n'
read -r call
id=$(printf '%s' "$call" | sed 's/.*"id":\([0-9]*\).*/\1/')
)SH" + during + R"SH(
printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"asked"}]}}\n' "$id"
read -r l
)SH";
}

// A server (of revision 2025-03-26) that, during a call, asks the client
// what servers may ask — ping, roots, a question for the user, a sampling —
// and something no client offers, and writes the answers down. Each gets
// its answer (before, all but ping went unanswered or refused), questions
// by each server's policy.
TEST(McpClientTest, EveryRequestOfAServerIsAnswered) {
  TempDir ws;
  const std::string asker = AskingServer("2025-03-26", R"SH(
printf '{"jsonrpc":"2.0","id":"p","method":"ping"}\n'
printf '{"jsonrpc":"2.0","id":"r","method":"roots/list"}\n'
printf '{"jsonrpc":"2.0","id":"e","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ann"},"n":{"type":"integer"}}}}}\n'
printf '{"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{"messages":[],"maxTokens":10}}\n'
printf '{"jsonrpc":"2.0","id":"u","method":"resources/frobnicate"}\n'
for i in 1 2 3 4 5; do read -r a; printf '%s\n' "$a" >> "$ANSWERS"; done)SH");
  std::vector<mcp::ServerConfig> servers;
  for (auto [name, policy] : {std::pair{"a", mcp::ElicitationPolicy::kAcceptDefaults},
                              std::pair{"b", mcp::ElicitationPolicy::kAsk}, std::pair{"c", mcp::ElicitationPolicy::kDecline}}) {
    mcp::ServerConfig c{.name = name, .argv = {"/bin/bash", "-c", asker}};
    c.env["ANSWERS"] = (ws.path() / (std::string(name) + ".answers")).string();
    c.elicitation = policy;
    c.call_timeout_s = 30;
    servers.push_back(c);
  }
  auto hub = std::make_shared<mcp::Hub>(Workspace(ws.path()), servers);
  mcp::ClientServices services;
  services.ask = [](const std::string& server, const Json& params, double, const CancelToken&) -> Result<Json> {
    EXPECT_EQ(server, "b");
    EXPECT_EQ(params["message"], "Your name?");
    return Json{{"action", "accept"}, {"content", {{"n", 7}}}};
  };
  hub->SetServices(services);
  hub->Start();
  for (const auto& s : hub->States()) ASSERT_EQ(s.state, "running") << s.name;
  for (const char* name : {"a", "b", "c"}) {
    auto r = hub->Call(name, "ask", Json::object(), nullptr);
    ASSERT_FALSE(r.is_error) << r.content;
    EXPECT_EQ(r.content, "asked");
    std::map<std::string, Json> by_id;
    std::istringstream lines(ReadAll(ws.path() / (std::string(name) + ".answers")));
    for (std::string line; std::getline(lines, line);) {
      Json j = Json::parse(line);
      by_id[j["id"].get<std::string>()] = j;
    }
    ASSERT_EQ(by_id.size(), 5u) << name;
    EXPECT_EQ(by_id["p"]["result"], Json::object());
    EXPECT_EQ(by_id["r"]["result"]["roots"][0]["uri"], "file://" + ws.path().string());
    EXPECT_EQ(by_id["s"]["error"]["code"], mcp::kMethodNotFound) << "no sampling offered";
    EXPECT_EQ(by_id["u"]["error"]["code"], mcp::kMethodNotFound);
    const Json elicited = by_id["e"]["result"];
    const std::map<std::string, Json> expected = {
        {"a", Json::parse(R"({"action":"accept","content":{"name":"Ann"}})")},
        {"b", Json::parse(R"({"action":"accept","content":{"n":7,"name":"Ann"}})")},
        {"c", Json::parse(R"({"action":"decline"})")}};
    EXPECT_EQ(elicited, expected.at(name)) << name;
  }
}

// `mates mcp call` asks the person at its terminal (script(1) gives it
// one): the server's words shown without the escape sequences it put in
// them, each field asked, a field left empty taking its default.
TEST(McpClientTest, CallAsksThePersonAtTheTerminal) {
  TempDir ws;
  const std::string asker = AskingServer("2025-11-25", R"SH(
printf '{"jsonrpc":"2.0","id":"e","method":"elicitation/create","params":{"message":"Your name?\\u001b[2J\\u001b]0;pwned\\u0007","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ann"},"n":{"type":"integer"}}}}}\n'
read -r a; printf '%s\n' "$a" > answers)SH");
  WriteTrusted(ws.path(), DumpJson(Json{{"mcpServers", {{"q", {{"command", "/bin/bash"}, {"args", {"-c", asker}}}}}}}));
  const std::string command = testing::MatesBinary() + " --workspace " + ws.str() + " mcp call q ask";
  auto r = testing::Run({"bash", "-c", "printf 'y\\n\\n7\\n' | script -qec '" + command + "' /dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("server q asks: Your name??[2J?]0;pwned?"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "no escape reached the terminal";
  EXPECT_NE(r.out.find("asked"), std::string::npos) << r.out;
  auto answer = ParseJson(ReadAll(ws.path() / "answers"));
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ((*answer)["result"], Json::parse(R"({"action":"accept","content":{"n":7,"name":"Ann"}})"));
}

// What `mates mcp call` is given, wrong: one clear error each, and an
// untrusted workspace's server is not started.
TEST(McpClientTest, CallSaysWhatIsWrongWithWhatItIsGiven) {
  TempDir ws;
  struct Case {
    std::vector<std::string> args;
    int exit;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"mcp", "call", "http://127.0.0.1:1/mcp", "t", "[1]"}, 2, "ARGUMENTS must be a JSON object"},
      {{"mcp", "call", "http://127.0.0.1:1/mcp", "t", "{oops"}, 2, "ARGUMENTS must be a JSON object"},
      {{"mcp", "call", "--header", "no colon", "http://127.0.0.1:1/mcp"}, 2, "--header takes 'Name: value'"},
      {{"mcp", "call", "--header", "A: b", "fs"}, 2, "--header is for a server given by its URL"},
      {{"mcp", "call", "--elicitation", "maybe", "http://127.0.0.1:1/mcp"}, 2,
       "--elicitation: elicitation must be ask, accept_defaults or decline"},
      {{"mcp", "call", "nowhere"}, 1, "no server 'nowhere'"},
      {{"mcp", "call", "http://127.0.0.1:1/mcp"}, 1, "cannot connect"},
  };
  for (const auto& c : cases) {
    auto r = testing::RunMates(ws.path(), c.args);
    EXPECT_EQ(r.exit_code, c.exit) << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one error: " << r.err;
  }
  // A .mcp.json nobody trusted starts nothing.
  WriteAll(ws.path() / ".mcp.json", R"({"mcpServers": {"fs": {"command": "/bin/touch", "args": ["started"]}}})");
  auto untrusted = testing::RunMates(ws.path(), {"mcp", "call", "fs"});
  EXPECT_EQ(untrusted.exit_code, 1);
  EXPECT_NE(untrusted.err.find("mates trust"), std::string::npos) << untrusted.err;
  EXPECT_FALSE(fs::exists(ws.path() / "started"));
}

TEST(McpClientTest, EveryMisconfigurationIsOneClearErrorNamingTheServer) {
  TempDir ws;
  struct Case {
    std::string json;
    std::string says;
  };
  std::vector<Case> cases = {
      {R"({"mcpServers": {)", "not JSON"},
      {R"([1])", "must be an object"},
      {R"({"mcpServers": {"files": {"args": ["x"]}}})", "mcpServers.files: a stdio server needs \"command\""},
      {R"({"mcpServers": {"files": {"command": ""}}})", "mcpServers.files: a stdio server needs \"command\""},
      {R"({"mcpServers": {"remote": {"type": "websocket", "url": "ws://x"}}})", "mcpServers.remote.type: unknown type 'websocket'"},
      {R"({"mcpServers": {"remote": {"type": "sse"}}})", "an sse server needs \"url\""},
      {R"({"mcpServers": {"remote": {"type": "http"}}})", "mcpServers.remote: an http server needs \"url\""},
      {R"({"mcpServers": {"remote": {"type": "http", "url": "ftp://x"}}})", "mcpServers.remote.url: must start with"},
      {R"({"mcpServers": {"files": {"command": "x", "args": "y"}}})", "mcpServers.files.args: must be an array"},
      {R"({"mcpServers": {"files": {"command": "x", "env": {"A": 1}}}})", "mcpServers.files.env.A: must be a string"},
      {R"({"mcpServers": {"files": {"command": "${MATES_SURELY_UNSET_VAR}"}}})", "${MATES_SURELY_UNSET_VAR} is not set"},
      {R"({"mcpServers": {"my server": {"command": "x"}}})", "server name 'my server'"},
  };
  for (const auto& k : cases) {
    WriteTrusted(ws.path(), k.json);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"mcp", "list"},
          std::vector<std::string>{"run", "--provider", "scripted", "--scenario",
                                   testing::ScenarioFixture("lead_mcp.yaml"), "hi"}}) {
      auto r = testing::RunMates(ws.path(), args);
      EXPECT_EQ(r.exit_code, 2) << k.json << " / " << args[0];
      EXPECT_NE(r.err.find(k.says), std::string::npos) << k.json << ": " << r.err;
      EXPECT_NE(r.err.find(".mcp.json"), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    }
  }
  // The mates side: a server it does not know, bad roles, bad timeouts.
  WriteTrusted(ws.path(), R"({"mcpServers": {"files": {"command": "x"}}})");
  for (const auto& [yaml, says] : std::vector<std::pair<std::string, std::string>>{
           {"mcp:\n  servers:\n    nope: {roles: [lead]}\n", "mcp.servers.nope: no such server in .mcp.json"},
           {"mcp:\n  servers:\n    files: {roles: lead}\n", "mcp.servers.files.roles: must be a list"},
           {"mcp:\n  call_timeout: -1\n", "mcp.call_timeout: must be > 0"},
           {"mcp: [\n", "config.yaml"}}) {
    WriteAll(ws.path() / ".mates/config.yaml", yaml);
    auto r = testing::RunMates(ws.path(), {"mcp", "list"});
    EXPECT_EQ(r.exit_code, 2) << yaml;
    EXPECT_NE(r.err.find(says), std::string::npos) << yaml << ": " << r.err;
  }
}

}  // namespace
}  // namespace mates
