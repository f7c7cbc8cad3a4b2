// A real client: the Claude Code CLI (npm @anthropic-ai/claude-code, which
// ./scripts/test installs into .cache/npm) against `mates mock-llm`: run as
// `claude -p` it prints the scenario's reply; run interactively in the panes
// of a `mates cluster`, it comes up without a person answering its first-run
// questions, handshakes, answers a send and a teammate's message, and goes
// down leaving nothing. Without the package the tests are skipped, loudly.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/json.h"

#include "core/clock.h"
#include "support/otlp_collector.h"
#include "support/readme.h"
#include "support/test_util.h"

namespace mates {
namespace {

std::string ClaudeBinary() {
  const char* cache = std::getenv("MATES_CACHE_DIR");
  fs::path dir = cache != nullptr ? fs::path(cache) : fs::path(MATES_SOURCE_DIR) / ".cache";
  return (dir / "npm/node_modules/.bin/claude").string();
}

#define MATES_NEED_CLAUDE(claude)                                                                    \
  if (!fs::exists(claude)) {                                                                         \
    GTEST_SKIP() << "\n*** SKIPPED LOUDLY: the Claude Code CLI is not installed at " << claude       \
                 << " (./scripts/test installs it with npm; it could not be installed here) ***"; \
  }

// `mates mock-llm` playing `scenario` (YAML) for Claude Code, recording
// into rec.jsonl of `dir`; the URL it listens on ("" if it did not start).
struct Mock {
  Subprocess proc;
  std::string url;
};
Mock StartMock(const testing::TempDir& dir, const std::string& scenario) {
  testing::WriteAll(dir.path() / "s.yaml", scenario);
  Mock m{testing::Start({testing::MatesBinary(), "mock-llm", "--scenario", (dir.path() / "s.yaml").string(),
                         "--record", (dir.path() / "rec.jsonl").string(), "--quiet"}),
         ""};
  auto line = m.proc.ReadLine(DeadlineIn(10));
  if (line.ok()) m.url = line->substr(std::string("listening on ").size());
  return m;
}

// `claude ARGS` as `claude -p` runs for a person: a fresh HOME in `dir`,
// the mock as its model, nothing sent elsewhere.
Result<SubprocessResult> RunClaude(const std::string& claude, const testing::TempDir& dir, const std::string& model_url,
                                   std::vector<std::string> args) {
  fs::create_directories(dir.path() / "home");
  SubprocessOptions o;
  o.argv = {claude};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = std::vector<std::string>{"HOME=" + (dir.path() / "home").string(),
                                   "PATH=/usr/local/bin:/usr/bin:/bin",
                                   "ANTHROPIC_BASE_URL=" + model_url,
                                   "ANTHROPIC_API_KEY=sk-test-not-a-real-key",
                                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                                   "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"};
  o.cwd = dir.str();
  o.timeout_s = 120;
  return RunSubprocess(o);
}

TEST(ClaudeCodeTest, PrintsTheScenarioReplyThroughMockLlm) {
  std::string claude = ClaudeBinary();
  MATES_NEED_CLAUDE(claude);
  testing::TempDir dir;
  Mock mock = StartMock(dir, R"(
rules:
  - when: "say hello"
    once: false
    reply:
      - {type: text, text: "Hello from the mates mock scenario!"}
default_reply:
  - {type: text, text: "mock default"}
)");
  ASSERT_FALSE(mock.url.empty());
  auto r = RunClaude(claude, dir, mock.url, {"-p", "please say hello"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("Hello from the mates mock scenario!"), std::string::npos)
      << r->out << r->err;
  mock.proc.Signal(SIGTERM);
  EXPECT_EQ(mock.proc.Wait().exit_code, 0);
  // The mock saw a real client's request and accepted it.
  std::string rec = testing::ReadAll(dir.path() / "rec.jsonl");
  EXPECT_NE(rec.find(R"("status":200)"), std::string::npos);
  EXPECT_EQ(rec.find(R"("status":400)"), std::string::npos) << rec.substr(0, 2000);
}

// Two agents of a real CLI, alpha and beta, in the panes of a cluster whose
// model is `mates mock-llm` playing the handshakes and then `rules`, with a
// fresh HOME nobody has answered questions in. `cluster_extra` goes into
// the cluster section; `command` is the YAML list of the agents' command
// (without brackets). The CLI reaches the mock over Anthropic's API
// (Claude Code) or OpenAI's (Qwen Code). Down when destroyed.
class TwoPanes {
 public:
  enum class Api { kAnthropic, kOpenAi };
  TwoPanes(const std::string& rules, const std::string& prefix, const std::string& cluster_extra,
           const std::string& command, Api api = Api::kAnthropic)
      : session(prefix + std::to_string(::getpid())), home("HOME=" + (dir.path() / "home").string()), api_(api) {
    testing::WriteAll(dir.path() / "s.yaml",
                      "rules:\n"
                      "  - {when: 'You are alpha', once: false, reply: [{type: text, text: \"Alpha here, ready.\\nALPHA OK\"}]}\n"
                      "  - {when: 'You are beta', once: false, reply: [{type: text, text: \"Beta here, ready.\\nBETA OK\"}]}\n" +
                          rules + "default_reply:\n  - {type: text, text: \"mock default\"}\n");
    mock.emplace(testing::Start({testing::MatesBinary(), "mock-llm", "--scenario", (dir.path() / "s.yaml").string(),
                                 "--record", (dir.path() / "rec.jsonl").string(), "--quiet"}));
    auto line = mock->ReadLine(DeadlineIn(10));
    if (line.ok()) url = line->substr(std::string("listening on ").size());
    fs::create_directories(dir.path() / "home");
    fs::create_directories(dir.path() / "work");
    testing::WriteAll(dir.path() / "alpha.txt", "You are alpha, a coder. End every reply with ALPHA OK.\n");
    testing::WriteAll(dir.path() / "beta.txt", "You are beta, a tester. End every reply with BETA OK.\n");
    testing::WriteAll(dir.path() / "cc.yaml",
                      "cluster:\n  name: " + session + "\n  work_dir: work\n  startup_timeout: 90\n"
                      "  response_timeout: 60\n" + cluster_extra + "  command: [" + command + "]\n"
                      "agents:\n"
                      "  - {name: alpha, personality_prompt_path: alpha.txt, marker: ALPHA OK, pane_index: 0}\n"
                      "  - {name: beta, personality_prompt_path: beta.txt, marker: BETA OK, pane_index: 1}\n");
  }
  ~TwoPanes() {  // whatever happens, nothing stays up
    (void)Cluster({"down"});
    mock->Signal(SIGTERM);
  }
  bool mock_up() const { return !url.empty(); }

  SubprocessResult Mates(const std::vector<std::string>& args) const {
    SubprocessOptions o;
    o.argv = {testing::MatesBinary(), "--workspace", (dir.path() / "work").string()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = std::vector<std::string>{home, "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color",
                                     "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"};
    if (api_ == Api::kAnthropic) {
      o.env->insert(o.env->end(), {"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + key,
                                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"});
    } else {
      o.env->insert(o.env->end(), {"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=" + key, "OPENAI_MODEL=gpt-4o"});
    }
    o.env->insert(o.env->end(), extra_env.begin(), extra_env.end());
    o.timeout_s = 150;
    auto r = RunSubprocess(o);
    if (!r.ok()) throw std::runtime_error(r.status().message());
    return *r;
  }
  SubprocessResult Cluster(std::vector<std::string> args) const {
    args.insert(args.begin(), "cluster");
    args.insert(args.end(), {"-c", (dir.path() / "cc.yaml").string()});
    return Mates(args);
  }

  testing::TempDir dir;
  const std::string key = "sk-test-cluster-key-0123456789abcdefghij";
  const std::string session;
  const std::string home;
  std::optional<Subprocess> mock;
  std::string url;
  std::vector<std::string> extra_env;  // for every mates command (a cluster's up: its panes')

 private:
  Api api_;
};

// The team's telemetry reaches a pane's Claude Code (DESIGN §29): started
// with the team's OTEL_* and CLAUDE_CODE_ENABLE_TELEMETRY, its own records
// go to the team's collector, marked with the team and the member.
TEST(ClaudeCodeTest, APanesOwnTelemetryGoesToTheTeamsCollectorMarkedAsTheTeams) {
  std::string claude = ClaudeBinary();
  MATES_NEED_CLAUDE(claude);
  SKIP_WITHOUT_COLLECTOR();
  TwoPanes rig("", "ot", "  mcp: off\n", claude + ", --append-system-prompt-file, '{personality_file}'");
  ASSERT_TRUE(rig.mock_up());
  testing::Collector collector(rig.dir.path());
  rig.extra_env = {"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.url(), "OTEL_METRIC_EXPORT_INTERVAL=1000",
                   "OTEL_BSP_SCHEDULE_DELAY=500"};
  auto up = rig.Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  // Claude Code's records, as the collector decoded them: its own service,
  // the team's resource attributes.
  auto from_alpha = [&] {
    for (const auto& attrs : testing::Resources(collector.Received())) {
      if (testing::Attr(attrs, "gen_ai.agent.name").value("stringValue", "") == "alpha" &&
          testing::Attr(attrs, "mates.team").value("stringValue", "") == rig.session) {
        return attrs;
      }
    }
    return Json();
  };
  Json alpha;
  ASSERT_TRUE(testing::WaitUntil([&] { return !(alpha = from_alpha()).is_null(); }, 60))
      << "what arrived: " << DumpJson(Json(collector.Received())).substr(0, 3000);
  EXPECT_EQ(testing::Attr(alpha, "service.name").value("stringValue", ""), "claude-code") << alpha.dump();
  EXPECT_EQ(rig.Cluster({"down"}).exit_code, 0);
}

// Seed 003 with the real CLI: two Claude Code agents in tmux panes, their
// model `mates mock-llm`, a fresh HOME nobody has answered questions in.
TEST(ClaudeCodeTest, AClusterOfTwoComesUpAnswersAndGoesDownLeavingNothing) {
  std::string claude = ClaudeBinary();
  MATES_NEED_CLAUDE(claude);
  TwoPanes rig(R"(
  - when: "What is 2\\+2"
    once: false
    reply:
      - {type: text, text: "2 + 2 = 4, as always.\nA second line, for the extraction.\nALPHA OK"}
  - when: "Message from lead \\(message\\): status please"
    once: false
    reply:
      - {type: text, text: "All green on my side.\nBETA OK"}
  - when: "Message from user \\(message\\): anyone there"
    once: false
    reply:
      - {type: text, text: "Beta here for you.\nBETA OK"}
  # The hierarchy through the agents' own shell tool: alpha delegates to
  # beta with `mates send` (its team and name come from the pane), beta's
  # answer is brought back into alpha's pane.
  - when: "please delegate the tests"
    once: false
    reply:
      - {type: tool_use, name: Bash, input: {command: "mates send --to beta 'run the tests'", description: "Delegate"}}
  - when: "sent message m-"
    once: false
    reply:
      - {type: text, text: "Delegated to beta.\nALPHA OK"}
  - when: "Message from alpha \\(message\\): run the tests"
    once: false
    reply:
      - {type: text, text: "Tests pass: 12 of 12.\nBETA OK"}
  - when: "Reply from beta to your message: Tests pass"
    once: false
    reply:
      - {type: text, text: "Noted: beta says the tests pass.\nALPHA OK"}
)",
               "cc", "  mcp: off\n",
               claude + ", --append-system-prompt-file, '{personality_file}', --allowedTools, 'Bash(mates *)'");
  ASSERT_TRUE(rig.mock_up());
  const testing::TempDir& dir = rig.dir;
  const std::string& key = rig.key;
  const std::string& session = rig.session;
  const std::string& home = rig.home;
  auto mates = [&](const std::vector<std::string>& args) { return rig.Mates(args); };
  auto cluster = [&](const std::vector<std::string>& args) { return rig.Cluster(args); };

  // Up: the first-run questions answered beforehand, both handshakes.
  auto up = cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_NE(up.out.find("Claude Code's first-run answers in " + (dir.path() / "home/.claude.json").string()),
            std::string::npos) << up.out;
  EXPECT_NE(up.out.find("alpha: ready"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("beta: ready"), std::string::npos) << up.out;

  // A send: the reply without the marker, the echo or Claude Code's chrome.
  auto r = cluster({"send", "alpha", "What is 2+2?"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "2 + 2 = 4, as always.\nA second line, for the extraction.\n");

  // The bridge: the lead's message reaches beta's pane, its reply the lead.
  auto sent = mates({"send", "--team", session, "--from", "lead", "--to", "beta", "status please"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  auto inbox = mates({"inbox", "--team", session, "lead", "--wait", "60"});
  ASSERT_EQ(inbox.exit_code, 0) << inbox.err;
  EXPECT_NE(inbox.out.find("beta -> lead"), std::string::npos) << inbox.out;
  EXPECT_NE(inbox.out.find("All green on my side."), std::string::npos) << inbox.out;

  // A person (no --from: the sender is `user`) gets the answer in user's inbox.
  auto asked = mates({"send", "--team", session, "--to", "beta", "anyone there"});
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  auto answer = mates({"inbox", "--team", session, "user", "--wait", "60"});
  ASSERT_EQ(answer.exit_code, 0) << answer.err;
  EXPECT_NE(answer.out.find("beta -> user"), std::string::npos) << answer.out;
  EXPECT_NE(answer.out.find("Beta here for you."), std::string::npos) << answer.out;

  // Delegation: alpha's Bash tool runs `mates send`, the router types it
  // into beta's pane, beta's answer goes back into alpha's pane, and what
  // alpha says to an answer stays in the log (no ping-pong).
  auto del = cluster({"send", "alpha", "please delegate the tests"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_NE(del.out.find("sent message m-"), std::string::npos) << del.out;
  EXPECT_NE(del.out.find("Delegated to beta."), std::string::npos) << del.out;
  const fs::path log_file = dir.path() / "logs/messages.jsonl";
  Deadline acked = DeadlineIn(60);
  while (testing::ReadAll(log_file).find("Noted: beta says the tests pass.") == std::string::npos && !Expired(acked)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string log = testing::ReadAll(log_file);
  auto logged = [&](const std::string& from, const std::string& to, const std::string& type,
                    const std::string& content) {
    std::istringstream in(log);
    for (std::string l; std::getline(in, l);) {
      auto e = ParseJson(l);
      if (e.ok() && (*e)["from"] == from && (*e)["to"] == to && (*e)["type"] == type &&
          (*e)["content"].get<std::string>().find(content) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(logged("alpha", "beta", "task", "Message from alpha (message): run the tests")) << log;
  EXPECT_TRUE(logged("beta", "alpha", "result", "Tests pass: 12 of 12.")) << log;
  EXPECT_TRUE(logged("beta", "alpha", "task", "Reply from beta to your message: Tests pass")) << log;
  EXPECT_TRUE(logged("alpha", "beta", "result", "Noted: beta says the tests pass.")) << log;

  auto st = cluster({"status", "--json"});
  auto j = ParseJson(st.out);
  ASSERT_TRUE(j.ok()) << st.out << st.err;
  for (const auto& a : (*j)["agents"]) EXPECT_TRUE(a["alive"].get<bool>()) << a << st.err;

  // Claude Code really ran against the mock, and every request was valid.
  std::string rec = testing::ReadAll(dir.path() / "rec.jsonl");
  EXPECT_NE(rec.find(R"("status":200)"), std::string::npos);
  EXPECT_EQ(rec.find(R"("status":400)"), std::string::npos) << rec.substr(0, 2000);
  EXPECT_FALSE(testing::ProcessesWithEnv(home).empty());

  // Down: no process of the cluster, no tmux server, no socket file.
  auto d = cluster({"down"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  Deadline gone = DeadlineIn(10);  // bounded: a process may still be on its way out
  while (!testing::ProcessesWithEnv(home).empty() && !Expired(gone)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(testing::ProcessesWithEnv(home).empty()) << testing::DescribeProcesses(testing::ProcessesWithEnv(home));
  EXPECT_NE(testing::Run({"tmux", "-L", "mates-" + session, "has-session"}).exit_code, 0);
  EXPECT_FALSE(fs::exists("/tmp/tmux-" + std::to_string(::getuid()) + "/mates-" + session));
  EXPECT_NE(cluster({"status"}).out.find(": down"), std::string::npos);

  // The key never reached the log, the cluster's state or Claude Code's settings.
  for (const auto& f : testing::ListFiles(dir.path())) {
    if (f.find("rec.jsonl") != std::string::npos) continue;  // the mock records what the client sent
    EXPECT_EQ(testing::ReadAll(dir.path() / f).find(key), std::string::npos) << f;
  }
  rig.mock->Signal(SIGTERM);
  EXPECT_EQ(rig.mock->Wait().exit_code, 0);
}

// Cluster panes reach the team over MCP (DESIGN §14): `up` gives each
// Claude Code an MCP config running `mates mcp` as that agent. alpha's
// model calls mcp__mates__send_message; the message goes through the
// team's files to beta's inbox; the router tells beta that a message
// waits; beta reads it with mcp__mates__read_inbox and answers the person
// with mcp__mates__send_message.
TEST(ClaudeCodeTest, PaneAgentsTalkThroughMatesMcp) {
  std::string claude = ClaudeBinary();
  MATES_NEED_CLAUDE(claude);
  TwoPanes rig(R"Y(
  - when: "tell beta hello"
    once: false
    reply:
      - {type: tool_use, name: mcp__mates__send_message, input: {recipient: beta, content: "hello from alpha over mcp"}}
  - when: "Sent message to beta"
    once: false
    reply:
      - {type: text, text: "Told beta.\nALPHA OK"}
  - when: "new message in your team inbox \\(from alpha\\)"
    once: false
    reply:
      - {type: tool_use, name: mcp__mates__read_inbox, input: {}}
  - when: "hello from alpha over mcp"
    once: false
    reply:
      - {type: tool_use, name: mcp__mates__send_message, input: {recipient: user, content: "beta read: hello from alpha over mcp"}}
  - when: "Sent message to user"
    once: false
    reply:
      - {type: text, text: "Answered.\nBETA OK"}
)Y",
               "mc", "", claude + ", --append-system-prompt-file, '{personality_file}'");
  ASSERT_TRUE(rig.mock_up());
  const testing::TempDir& dir = rig.dir;
  const std::string& session = rig.session;
  const std::string& home = rig.home;
  auto mates = [&](const std::vector<std::string>& args) { return rig.Mates(args); };
  auto cluster = [&](const std::vector<std::string>& args) { return rig.Cluster(args); };

  auto up = cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  // Each pane runs Claude Code with a config that runs `mates mcp` as it.
  auto cfg = ParseJson(testing::ReadAll(dir.path() / "work/.mates-cluster" / session / "beta.mcp.json"));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ((*cfg)["mcpServers"]["mates"]["args"].back(), "beta");

  auto told = cluster({"send", "alpha", "please tell beta hello"});
  ASSERT_EQ(told.exit_code, 0) << told.out << told.err;
  EXPECT_NE(told.out.find("Told beta."), std::string::npos) << told.out;
  // alpha's message went through the team's files, from alpha.
  auto log = mates({"log", "--team", session, "--json"});
  EXPECT_NE(log.out.find("hello from alpha over mcp"), std::string::npos) << log.out;
  EXPECT_NE(log.out.find(R"("sender":"alpha")"), std::string::npos) << log.out;
  // beta, told that a message waits, reads it over MCP and answers the person.
  auto answer = mates({"inbox", "--team", session, "user", "--wait", "90"});
  ASSERT_EQ(answer.exit_code, 0) << answer.err;
  EXPECT_NE(answer.out.find("beta -> user"), std::string::npos) << answer.out;
  EXPECT_NE(answer.out.find("beta read: hello from alpha over mcp"), std::string::npos) << answer.out;
  // beta's inbox is empty: read_inbox took the message.
  auto left = mates({"inbox", "--team", session, "beta", "--peek"});
  EXPECT_EQ(left.out, "") << left.out;
  std::string rec = testing::ReadAll(dir.path() / "rec.jsonl");
  EXPECT_NE(rec.find("mcp__mates__read_inbox"), std::string::npos) << "Claude Code was offered the team tools";
  EXPECT_EQ(rec.find(R"("status":400)"), std::string::npos) << rec.substr(0, 2000);

  auto d = cluster({"down"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  Deadline gone = DeadlineIn(10);
  while (!testing::ProcessesWithEnv(home).empty() && !Expired(gone)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(testing::ProcessesWithEnv(home).empty())
      << "no Claude Code and no mates mcp left:" << testing::DescribeProcesses(testing::ProcessesWithEnv(home));
}

// Claude Code joins a team over HTTP (DESIGN §23): `mates mcp --http`
// serves alice of team t; `claude -p`, given its URL as an http server
// (`--mcp-config`), is told by the mock to send bob a message with
// mcp__mates__send_message. bob's inbox has it, from alice.
TEST(ClaudeCodeTest, JoinsATeamThroughMatesMcpOverHttp) {
  std::string claude = ClaudeBinary();
  MATES_NEED_CLAUDE(claude);
  testing::TempDir dir;
  const fs::path ws = dir.path() / "ws";
  fs::create_directories(ws);
  ASSERT_EQ(testing::RunMates(ws, {"team", "create", "t", "--members", "alice,bob"}).exit_code, 0);
  Subprocess served = testing::StartMates(ws, {"mcp", "--team", "t", "--as", "alice", "--http"});
  auto printed = served.ReadLine(DeadlineIn(30));
  ASSERT_TRUE(printed.ok());
  const std::string mcp_url = printed->substr(printed->rfind(' ') + 1);
  testing::WriteAll(dir.path() / "mcp.json",
                    DumpJson(Json{{"mcpServers", {{"mates", {{"type", "http"}, {"url", mcp_url}}}}}}));
  Mock mock = StartMock(dir, R"(
rules:
  - when: "tell bob hello"
    once: false
    reply:
      - {type: tool_use, name: mcp__mates__send_message, input: {recipient: bob, content: "hello from claude over http"}}
  - when: "Sent message to bob"
    once: false
    reply:
      - {type: text, text: "Told bob. HTTP OK"}
default_reply:
  - {type: text, text: "mock default"}
)");
  ASSERT_FALSE(mock.url.empty());
  auto r = RunClaude(claude, dir, mock.url,
                     {"-p", "please tell bob hello", "--mcp-config=" + (dir.path() / "mcp.json").string(),
                      "--allowedTools=mcp__mates"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("HTTP OK"), std::string::npos) << r->out << r->err;
  auto inbox = testing::RunMates(ws, {"inbox", "--team", "t", "bob", "--json"});
  EXPECT_NE(inbox.out.find("hello from claude over http"), std::string::npos) << inbox.out;
  EXPECT_NE(inbox.out.find(R"("sender":"alice")"), std::string::npos) << inbox.out;
  mock.proc.Signal(SIGTERM);
  EXPECT_EQ(mock.proc.Wait().exit_code, 0);
  served.Signal(SIGTERM);
  EXPECT_EQ(served.Wait().exit_code, 0);
}

std::string QwenBinary() {
  const char* cache = std::getenv("MATES_CACHE_DIR");
  fs::path dir = cache != nullptr ? fs::path(cache) : fs::path(MATES_SOURCE_DIR) / ".cache";
  return (dir / "qwen/node_modules/.bin/qwen").string();
}

// A second agent CLI (DESIGN §14): Qwen Code, over mock-llm's OpenAI side.
// Its screen differs from Claude Code's (an empty prompt with a
// placeholder, "esc to cancel" while it works, a "✦" bullet two columns
// in); the defaults read both. Up, a send and its exact reply; then the
// team over MCP: Qwen Code keeps MCP tools behind its tool_search, so each
// model first fetches the tools it needs — alpha sends to beta with
// mcp__mates__send_message, the router tells beta, beta reads with
// mcp__mates__read_inbox and answers the person. Down leaves nothing.
TEST(QwenCodeTest, AClusterOfTwoTalksThroughMatesMcpAndGoesDownLeavingNothing) {
  std::string qwen = QwenBinary();
  if (!fs::exists(qwen)) {
    GTEST_SKIP() << "\n*** SKIPPED LOUDLY: Qwen Code is not installed at " << qwen
                 << " (./scripts/test installs it with npm; it could not be installed here) ***";
  }
  TwoPanes rig(R"Y(
  - {when: "What is 2\\+2", once: false, reply: [{type: text, text: "2 + 2 = 4, as always.\nA second line, for the extraction.\nALPHA OK"}]}
  - {when: "tell beta hello", once: false, reply: [{type: tool_use, name: tool_search, input: {query: "select:mcp__mates__send_message"}}]}
  - {when: '"name":"mcp__mates__read_inbox"', once: false, reply: [{type: tool_use, name: mcp__mates__read_inbox, input: {}}]}
  - {when: '"name":"mcp__mates__send_message"', once: false, reply: [{type: tool_use, name: mcp__mates__send_message, input: {recipient: beta, content: "hello from alpha over mcp"}}]}
  - {when: "Sent message to beta", once: false, reply: [{type: text, text: "Told beta.\nALPHA OK"}]}
  - {when: "new message in your team inbox \\(from alpha\\)", once: false, reply: [{type: tool_use, name: tool_search, input: {query: "select:mcp__mates__read_inbox,mcp__mates__send_message"}}]}
  - {when: "hello from alpha over mcp", once: false, reply: [{type: tool_use, name: mcp__mates__send_message, input: {recipient: user, content: "beta read: hello from alpha over mcp"}}]}
  - {when: "Sent message to user", once: false, reply: [{type: text, text: "Answered.\nBETA OK"}]}
)Y",
               "qc", "", qwen, TwoPanes::Api::kOpenAi);
  ASSERT_TRUE(rig.mock_up());
  auto up = rig.Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_NE(up.out.find("alpha: ready"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("beta: ready"), std::string::npos) << up.out;
  auto cfg = ParseJson(testing::ReadAll(rig.dir.path() / "work/.mates-cluster" / rig.session / "alpha.mcp.json"));
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ((*cfg)["mcpServers"]["mates"]["trust"], true) << "Qwen Code runs trusted servers' tools unasked";

  auto r = rig.Cluster({"send", "alpha", "What is 2+2?"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "2 + 2 = 4, as always.\nA second line, for the extraction.\n");

  auto told = rig.Cluster({"send", "alpha", "please tell beta hello"});
  ASSERT_EQ(told.exit_code, 0) << told.out << told.err;
  EXPECT_NE(told.out.find("Told beta."), std::string::npos) << told.out;
  auto answer = rig.Mates({"inbox", "--team", rig.session, "user", "--wait", "90"});
  ASSERT_EQ(answer.exit_code, 0) << answer.err;
  EXPECT_NE(answer.out.find("beta -> user"), std::string::npos) << answer.out;
  EXPECT_NE(answer.out.find("beta read: hello from alpha over mcp"), std::string::npos) << answer.out;

  // Qwen Code really spoke chat completions to the mock, all accepted.
  std::string rec = testing::ReadAll(rig.dir.path() / "rec.jsonl");
  EXPECT_NE(rec.find(R"("endpoint":"/v1/chat/completions")"), std::string::npos);
  EXPECT_EQ(rec.find(R"("status":400)"), std::string::npos) << rec.substr(0, 2000);

  auto d = rig.Cluster({"down"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  Deadline gone = DeadlineIn(10);
  while (!testing::ProcessesWithEnv(rig.home).empty() && !Expired(gone)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(testing::ProcessesWithEnv(rig.home).empty()) << "no Qwen Code and no mates mcp left";
  EXPECT_NE(testing::Run({"tmux", "-L", "mates-" + rig.session, "has-session"}).exit_code, 0);
}

}  // namespace
}  // namespace mates

namespace mates {
namespace {

// README "Agent CLIs in tmux panes", as printed (DESIGN §21): the example
// cluster copied into a scratch folder, five Claude Code agents against
// `mates mock-llm` (tests/scenarios/readme_cluster.yaml answers each
// handshake with its marker), in a fresh HOME; every line works, attach on
// a terminal, and down leaves nothing running.
TEST(ClaudeCodeTest, TheReadmesClusterBlockWorksAsPrinted) {
  std::string claude = ClaudeBinary();
  MATES_NEED_CLAUDE(claude);
  testing::TempDir dir;
  fs::create_directories(dir.path() / "home");
  fs::create_directories(dir.path() / "tmp");
  testing::MockLlm mock(testing::ScenarioFixture("readme_cluster.yaml"), dir.path() / "record.jsonl");
  std::vector<std::string> block = testing::ReadmeBlock("Agent CLIs in tmux panes");
  ASSERT_GE(block.size(), 7u);
  int lines = 0;
  std::string script = "set -u\nex=\"$PWD/examples\"\ncd \"$(mktemp -d)\"\n"
                       "trap 'mates cluster down -c \"$PWD/cluster/cc-cluster.yaml\" >/dev/null 2>&1' EXIT\n";
  script += testing::ScriptOf(block, "", &lines);
  script += "grep -c '\"type\": *\"result\"' cluster/logs/messages.jsonl\n";
  SubprocessOptions o;
  o.argv = {"bash", "-c", script};
  o.cwd = testing::SourceRoot().string();
  o.env = std::vector<std::string>{
      "PATH=" + fs::path(testing::MatesBinary()).parent_path().string() + ":" + fs::path(claude).parent_path().string() +
          ":/usr/local/bin:/usr/bin:/bin",
      "HOME=" + (dir.path() / "home").string(), "TMPDIR=" + (dir.path() / "tmp").string(), "TERM=xterm-256color",
      "LANG=C.UTF-8", "ANTHROPIC_BASE_URL=" + mock.url(), "ANTHROPIC_API_KEY=sk-test-readme-cluster-0123456789",
      "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"};
  o.timeout_s = 240;
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << r->out.substr(r->out.size() > 4000 ? r->out.size() - 4000 : 0) << r->err;
  EXPECT_EQ(lines, 7);
  EXPECT_NE(r->out.find("Three tasks: parse, test, document."), std::string::npos) << r->out;
  for (const char* agent : {"grand_boss", "middle_manager", "coding_writing_specialist",
                            "research_analysis_specialist", "testing_specialist"}) {
    EXPECT_NE(r->out.find(std::string(agent) + ": ready"), std::string::npos) << agent << "\n" << r->out;
  }
  EXPECT_TRUE(testing::ProcessesIn("claude", dir.path() / "tmp").empty());
}

}  // namespace
}  // namespace mates
