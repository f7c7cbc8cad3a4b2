// Codex, Gemini CLI and OpenCode as members of a team (DESIGN §28), for
// real: each CLI from npm (scripts/setup-agent-clis installs the pinned
// versions into .cache/agent-clis) runs headless in the team's workspace,
// joins the team through `mates mcp --team t --as coder` in its own MCP
// configuration, and has `mates mock-llm` as its model over the API it
// speaks (Codex: OpenAI Responses; Gemini CLI: Gemini; OpenCode: OpenAI
// Chat through its openai-compatible provider). The scenario has the model
// claim the board's task, complete it and tell the lead: the board and the
// lead's inbox show it, and the CLI prints the scenario's last words.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/subprocess.h"
#include "support/otlp_collector.h"
#include "support/readme.h"
#include "support/test_util.h"
#include "telemetry/otlp.h"
#include "tmux/cli_wiring.h"

namespace mates {
namespace {

namespace fs = std::filesystem;

struct Cli {
  std::string name;    // the binary in .cache/agent-clis/node_modules/.bin
  std::string prefix;  // how the CLI names the mates server's tools to its model
};

void PrintTo(const Cli& cli, std::ostream* os) { *os << cli.name; }

fs::path CliBinary(const std::string& name) {
  return fs::path(MATES_SOURCE_DIR) / ".cache/agent-clis/node_modules/.bin" / name;
}

// Quoted for TOML and JSON alike (the paths here have no quote or
// backslash).
std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

class AgentCliTest : public ::testing::TestWithParam<Cli> {
 protected:
  void SetUp() override {
    if (!fs::exists(CliBinary(GetParam().name))) {
      GTEST_SKIP() << "\n*** SKIPPED LOUDLY: " << GetParam().name << " is not installed at "
                   << CliBinary(GetParam().name) << " (./scripts/setup-agent-clis installs it) ***";
    }
    fs::create_directories(ws_);
    fs::create_directories(home_);
    ASSERT_EQ(testing::RunMates(ws_, {"team", "create", "t", "--members", "coder"}).exit_code, 0);
    ASSERT_EQ(testing::RunMates(ws_, {"tasks", "--team", "t", "create", "Write hello.txt"}).exit_code, 0);
    const std::string p = GetParam().prefix;
    testing::WriteAll(dir_.path() / "s.yaml",
                      "rules:\n"
                      "  - when: 'Work on your team'\n"
                      "    reply: [{type: text, text: 'Claiming.'}, {type: tool_use, name: " + p +
                          "claim_task, input: {}}]\n"
                          "  - when: 'Claimed task #1'\n"
                          "    reply: [{type: tool_use, name: " + p +
                          "update_task, input: {task_id: 1, status: completed}}]\n"
                          "  - when: 'Updated #1 \\[completed\\]'\n"
                          "    reply: [{type: tool_use, name: " + p +
                          "send_message, input: {type: message, recipient: lead, content: 'coder finished #1', "
                          "summary: done}}]\n"
                          "  - when: 'Sent message to lead'\n"
                          "    reply: [{type: text, text: 'ALL DONE'}]\n"
                          "default_reply: [{type: text, text: 'mock default'}]\n");
    mock_.emplace(testing::Start({testing::MatesBinary(), "mock-llm", "--scenario", (dir_.path() / "s.yaml").string(),
                                  "--record", (dir_.path() / "rec.jsonl").string(), "--quiet"}));
    auto line = mock_->ReadLine(DeadlineIn(10));
    ASSERT_TRUE(line.ok());
    url_ = line->substr(std::string("listening on ").size());
  }
  void TearDown() override {
    if (mock_) mock_->Signal(SIGTERM);
  }

  // The server line each CLI's MCP configuration holds.
  std::vector<std::string> McpArgs() const {
    return {"--workspace", ws_.string(), "mcp", "--team", "t", "--as", "coder"};
  }

  // The CLI's configuration and how it is run, headless, with `prompt`.
  SubprocessOptions Command(const std::string& prompt) {
    SubprocessOptions o;
    o.cwd = ws_.string();
    o.timeout_s = 150;
    o.env = std::vector<std::string>{"HOME=" + home_.string(), "PATH=/usr/local/bin:/usr/bin:/bin",
                                     "TERM=dumb", "NO_COLOR=1"};
    std::string args;
    for (const auto& a : McpArgs()) args += (args.empty() ? "" : ", ") + Quoted(a);
    const std::string name = GetParam().name;
    if (name == "codex") {
      testing::WriteAll(home_ / ".codex/config.toml",
                        "model = \"gpt-5-codex\"\nmodel_provider = \"mock\"\n"
                        "[model_providers.mock]\nname = \"mock\"\nbase_url = " + Quoted(url_ + "/v1") +
                            "\nwire_api = \"responses\"\nenv_key = \"MATES_MOCK_KEY\"\n"
                            "[mcp_servers.mates]\ncommand = " + Quoted(testing::MatesBinary()) +
                            "\nargs = [" + args + "]\ndefault_tools_approval_mode = \"approve\"\n");
      o.env->push_back("CODEX_HOME=" + (home_ / ".codex").string());
      o.env->push_back("MATES_MOCK_KEY=" + key_);
      o.argv = {CliBinary(name).string(), "exec"};
      o.argv.insert(o.argv.end(), codex_args_.begin(), codex_args_.end());
      o.argv.insert(o.argv.end(), {"--skip-git-repo-check", prompt});
    } else if (name == "gemini") {
      testing::WriteAll(home_ / ".gemini/settings.json",
                        "{\"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},"
                        " \"general\": {\"disableAutoUpdate\": true},"
                        " \"privacy\": {\"usageStatisticsEnabled\": false},"
                        " \"mcpServers\": {\"mates\": {\"command\": " + Quoted(testing::MatesBinary()) +
                            ", \"args\": [" + args + "], \"trust\": true}}}\n");
      o.env->insert(o.env->end(), {"GOOGLE_GEMINI_BASE_URL=" + url_, "GEMINI_API_KEY=" + key_,
                                   "GEMINI_CLI_TRUST_WORKSPACE=true"});
      o.argv = {CliBinary(name).string(), "-p", prompt};
    } else {
      std::string command = Quoted(testing::MatesBinary());
      for (const auto& a : McpArgs()) command += ", " + Quoted(a);
      testing::WriteAll(dir_.path() / "opencode.json",
                        "{\"provider\": {\"mock\": {\"npm\": \"@ai-sdk/openai-compatible\", \"name\": \"mock\","
                        " \"options\": {\"baseURL\": " + Quoted(url_ + "/v1") + ", \"apiKey\": " + Quoted(key_) +
                            "}, \"models\": {\"m\": {\"name\": \"m\"}}}},"
                            " \"model\": \"mock/m\","
                            " \"mcp\": {\"mates\": {\"type\": \"local\", \"enabled\": true, \"command\": [" +
                            command + "]}}}\n");
      o.env->push_back("OPENCODE_CONFIG=" + (dir_.path() / "opencode.json").string());
      o.argv = {CliBinary(name).string(), "run", prompt};
    }
    return o;
  }

  testing::TempDir dir_;
  const fs::path ws_ = dir_.path() / "ws";
  const fs::path home_ = dir_.path() / "home";
  const std::string key_ = "sk-test-agent-cli-key-0123456789abcdef";
  std::optional<Subprocess> mock_;
  std::string url_;
  std::vector<std::string> codex_args_;  // more of Codex's `-c` overrides
};

TEST_P(AgentCliTest, ClaimsCompletesAndTellsTheLeadThroughMatesMcp) {
  auto r = RunSubprocess(Command("Work on your team's board: claim a task, do it, tell the lead."));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string record = testing::ReadAll(dir_.path() / "rec.jsonl");
  ASSERT_EQ(r->exit_code, 0) << r->out << "\n" << r->err.substr(0, 4000) << "\nrequests:\n" << record.substr(0, 3000);
  EXPECT_NE(r->out.find("ALL DONE"), std::string::npos) << r->out << "\n" << r->err.substr(0, 4000);
  // The board: the task is the member's and done.
  auto task = testing::RunMates(ws_, {"tasks", "--team", "t", "get", "1", "--json"});
  auto t = ParseJson(task.out);
  ASSERT_TRUE(t.ok()) << task.out << task.err;
  EXPECT_EQ((*t)["status"], "completed") << task.out;
  EXPECT_EQ((*t)["owner"], "coder") << task.out;
  // The lead's inbox: the member's message, from the member.
  auto inbox = testing::RunMates(ws_, {"inbox", "--team", "t", "lead", "--peek", "--json"});
  EXPECT_NE(inbox.out.find("\"sender\":\"coder\""), std::string::npos) << inbox.out;
  EXPECT_NE(inbox.out.find("coder finished #1"), std::string::npos) << inbox.out;
  // The key went in a header, never into what the mock recorded.
  EXPECT_EQ(record.find(key_), std::string::npos);
  // The CLI is gone, and its `mates mcp` with it.
  EXPECT_TRUE(testing::WaitUntil([&] { return testing::ProcessesIn("mcp --team t --as coder", ws_).empty(); }))
      << testing::ProcessesIn("mcp --team t --as coder", ws_).front();
}

INSTANTIATE_TEST_SUITE_P(Each, AgentCliTest,
                         ::testing::Values(Cli{"codex", "mcp__mates__"}, Cli{"gemini", "mcp_mates_"},
                                           Cli{"opencode", "mates_"}),
                         [](const auto& info) { return info.param.name; });

// Codex reads no OTEL_* variable: the `-c` overrides a cluster gives it
// (DESIGN §29, tmux::CodexTelemetryArgs) send its own records to the
// team's collector, which decodes them with the official definitions.
class CodexTelemetryTest : public AgentCliTest {};

TEST_P(CodexTelemetryTest, ItsOwnRecordsGoToTheTeamsCollector) {
  SKIP_WITHOUT_COLLECTOR();
  testing::Collector collector(dir_.path());
  auto otlp = telemetry::OtlpConfig::From(
      [&](const char* name) -> const char* {
        return std::string_view(name) == "OTEL_EXPORTER_OTLP_ENDPOINT" ? collector.url().c_str() : nullptr;
      },
      Json::object());
  codex_args_ = tmux::CodexTelemetryArgs(otlp);
  auto r = RunSubprocess(Command("Work on your team's board: claim a task, do it, tell the lead."));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->exit_code, 0) << r->out << "\n" << r->err.substr(0, 4000);
  std::set<std::string> services;
  for (const auto& attrs : testing::Resources(collector.Received())) {
    services.insert(testing::Attr(attrs, "service.name").value("stringValue", ""));
  }
  for (const auto& g : collector.Received()) EXPECT_FALSE(g.contains("error")) << g.dump();
  EXPECT_TRUE(std::any_of(services.begin(), services.end(),
                          [](const std::string& s) { return s.find("codex") != std::string::npos; }))
      << ::testing::PrintToString(services) << " from " << collector.Received().size() << " requests";
}

INSTANTIATE_TEST_SUITE_P(Codex, CodexTelemetryTest, ::testing::Values(Cli{"codex", "mcp__mates__"}),
                         [](const auto& info) { return info.param.name; });

// README's mixed cluster, as printed, is a cluster file mates takes (its
// agents by preset, the model server given once).
TEST(AgentClusterTest, TheReadmesMixedClusterIsReadAsPrinted) {
  testing::TempDir dir;
  std::string yaml;
  for (const auto& line : testing::ReadmeBlock("Agent CLIs in tmux panes", "```yaml\n")) yaml += line + "\n";
  ASSERT_NE(yaml.find("cli: codex"), std::string::npos) << yaml;
  testing::WriteAll(dir.path() / "c.yaml", yaml);
  for (const char* name : {"cx.txt", "gm.txt", "oc.txt"}) testing::WriteAll(dir.path() / name, "You are one.\n");
  auto r = testing::Run({testing::MatesBinary(), "cluster", "status", "-c", (dir.path() / "c.yaml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cluster mixed: down"), std::string::npos) << r.out;
  for (const char* agent : {"cx", "gm", "oc"}) EXPECT_NE(r.out.find(std::string("  ") + agent + "  "), std::string::npos);
}

// Each request the mock recorded in a line: its endpoint, status and
// newest user text's start (what a failure shows).
std::string Requests(const std::string& record) {
  std::string out;
  size_t pos = 0;
  for (size_t end; (end = record.find('\n', pos)) != std::string::npos; pos = end + 1) {
    auto j = ParseJson(record.substr(pos, end - pos));
    if (!j.ok()) continue;
    const std::string body = DumpJson((*j)["body"]);
    out += "\n  " + StringOr(*j, "endpoint") + " " + std::to_string((*j)["status"].get<int>()) + " …" +
           body.substr(body.size() > 400 ? body.size() - 400 : 0);
  }
  return out;
}

fs::path ClaudeCli() {
  const char* cache = std::getenv("MATES_CACHE_DIR");
  return (cache != nullptr ? fs::path(cache) : fs::path(MATES_SOURCE_DIR) / ".cache") / "npm/node_modules/.bin/claude";
}

// A mixed team (DESIGN §28): Codex, Gemini CLI, OpenCode and Claude Code
// in tmux panes by their presets (`cli:`), and one mates teammate hosted by
// `mates up` in the same team; one mock-llm serves them all, each over its
// own API (`model_url` for the panes, `--provider openai-responses` for
// mates). A board of five tasks, each blocked by the one before and
// assigned to a member: the person tells cx to start; each pane agent,
// nudged by the router, reads its inbox, claims its task, completes it and
// tells the next; the mates teammate, idle, claims its task the moment it
// is unblocked, completes it and tells the person. The scenario names the
// pane agents' tools by their own names (mock-llm gives each CLI the call
// under its prefix). Down leaves nothing running.
TEST(AgentClusterTest, FourVendorsAndAMatesTeammateTakeABoardInTurnAndGoDownLeavingNothing) {
  for (const fs::path& cli : {CliBinary("codex"), CliBinary("gemini"), CliBinary("opencode"), ClaudeCli()}) {
    if (!fs::exists(cli)) {
      GTEST_SKIP() << "\n*** SKIPPED LOUDLY: " << cli.filename().string() << " is not installed at " << cli
                   << " (./scripts/setup-agent-clis and ./scripts/setup-claude-code install them) ***";
    }
  }
  testing::TempDir dir;
  const fs::path work = dir.path() / "work", home = dir.path() / "home";
  fs::create_directories(work);
  fs::create_directories(home);
  const std::string session = "mix" + std::to_string(::getpid());
  // The mates side: the lead brings mt in; mt completes #5 when it has it
  // and tells the person. Its rules come first and name their agent.
  std::string rules =
      "  - {agent: lead, when: 'Bring mt in', reply: [{type: tool_use, name: Task, input: {team_name: " + session +
      ", name: mt, description: mt, prompt: 'Work from the board.'}}]}\n"
      "  - {agent: lead, once: false, reply: [{type: text, text: 'Noted.'}]}\n"
      "  - {agent: mt, when: 'Task #5:', reply: [{type: tool_use, name: TaskUpdate, input: {task_id: 5, "
      "status: completed}}]}\n"
      "  - {agent: mt, when: 'Updated #5 \\[completed\\]', reply: [{type: tool_use, name: SendMessage, input: "
      "{recipient: user, content: 'all five done', summary: done}}]}\n"
      "  - {agent: mt, once: false, reply: [{type: text, text: 'Noted.'}]}\n"
      "  - {when: 'new messages? in your team inbox', once: false, reply: [{type: tool_use, name: read_inbox, "
      "input: {}}]}\n";
  const std::vector<std::pair<std::string, std::string>> chain = {{"cx", "gm"}, {"gm", "oc"}, {"oc", "cc"}, {"cc", "mt"}};
  for (size_t i = 0; i < chain.size(); ++i) {
    const auto& [me, next] = chain[i];
    const std::string id = std::to_string(i + 1);
    std::string upper = me;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    testing::WriteAll(dir.path() / (me + ".txt"), "You are " + me + ", one of five.\n");
    rules += "  - {when: 'You are " + me + " \\(', once: false, reply: [{type: text, text: \"" + upper +
             " here.\\n" + upper + " OK\"}]}\n"
             "  - {when: '" + me + ": go', reply: [{type: tool_use, name: claim_task, input: {task_id: " + id + "}}]}\n"
             "  - {when: 'Claimed task #" + id + "', reply: [{type: tool_use, name: update_task, input: {task_id: " +
             id + ", status: completed}}]}\n"
             "  - {when: 'Updated #" + id + " \\[completed\\]', reply: [{type: tool_use, name: send_message, input: "
             "{type: message, recipient: " + next + ", content: '" + next + ": go', summary: go}}]}\n"
             "  - {when: 'Sent message to " + next + "', reply: [{type: text, text: \"Passed on.\\n" + upper +
             " OK\"}]}\n";
  }
  testing::WriteAll(dir.path() / "s.yaml", "rules:\n" + rules + "default_reply: [{type: text, text: 'mock default'}]\n");
  Subprocess mock = testing::Start({testing::MatesBinary(), "mock-llm", "--scenario", (dir.path() / "s.yaml").string(),
                                    "--record", (dir.path() / "rec.jsonl").string(), "--quiet"});
  auto line = mock.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  const std::string url = line->substr(std::string("listening on ").size());
  const std::string key = "sk-test-mixed-0123456789";
  testing::WriteAll(dir.path() / "cc.yaml",
                    "cluster:\n  name: " + session + "\n  work_dir: work\n  startup_timeout: 90\n"
                    "  response_timeout: 90\n  model_url: " + url + "\n"
                    "  env: {OPENAI_API_KEY: " + key + ", GEMINI_API_KEY: " + key + ", ANTHROPIC_API_KEY: " + key + "}\n"
                    "agents:\n"
                    "  - {name: cx, cli: codex, personality_prompt_path: cx.txt, marker: CX OK, pane_index: 0}\n"
                    "  - {name: gm, cli: gemini, personality_prompt_path: gm.txt, marker: GM OK, pane_index: 1}\n"
                    "  - {name: oc, cli: opencode, personality_prompt_path: oc.txt, marker: OC OK, pane_index: 2}\n"
                    "  - {name: cc, cli: claude, personality_prompt_path: cc.txt, marker: CC OK, pane_index: 3}\n");
  const std::string home_env = "HOME=" + home.string();
  auto mates = [&](std::vector<std::string> args, double timeout_s = 240) {
    SubprocessOptions o;
    o.argv = {testing::MatesBinary(), "--workspace", work.string()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = std::vector<std::string>{home_env, "TERM=xterm-256color", "OPENAI_API_KEY=" + key,
                                     "PATH=" + CliBinary("codex").parent_path().string() + ":" +
                                         ClaudeCli().parent_path().string() + ":/usr/local/bin:/usr/bin:/bin"};
    o.timeout_s = timeout_s;
    auto r = RunSubprocess(o);
    if (!r.ok()) throw std::runtime_error(r.status().message());
    return *r;
  };
  const std::string config = (dir.path() / "cc.yaml").string();
  struct Down {
    std::function<void()> run;
    ~Down() { run(); }
  } down{[&] {
    (void)mates({"down", "--team", session, "--grace", "0", "--timeout", "10"}, 30);
    (void)mates({"cluster", "down", "-c", config}, 60);
  }};

  auto up = mates({"cluster", "up", "-c", config});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  for (const char* name : {"cx: ready", "gm: ready", "oc: ready", "cc: ready"}) {
    EXPECT_NE(up.out.find(name), std::string::npos) << up.out;
  }
  const std::vector<std::string> owners = {"cx", "gm", "oc", "cc", "mt"};
  for (size_t i = 0; i < owners.size(); ++i) {
    std::vector<std::string> create = {"tasks", "--team", session, "create", owners[i] + "'s part"};
    if (i > 0) create.insert(create.end(), {"--blocked-by", std::to_string(i)});
    ASSERT_EQ(mates(create).exit_code, 0);
    ASSERT_EQ(mates({"tasks", "--team", session, "update", std::to_string(i + 1), "--owner", owners[i]}).exit_code, 0);
  }
  auto hosted = mates({"up", "--team", session, "--provider", "openai-responses", "--base-url", url + "/v1", "--model",
                       "gpt-5", "--no-dashboard", "Bring mt in"});
  ASSERT_EQ(hosted.exit_code, 0) << hosted.out << hosted.err;
  ASSERT_EQ(mates({"send", "--team", session, "--to", "cx", "cx: go"}).exit_code, 0);

  auto answer = mates({"inbox", "--team", session, "user", "--wait", "180"});
  const std::string record = testing::ReadAll(dir.path() / "rec.jsonl");
  ASSERT_NE(answer.out.find("all five done"), std::string::npos)
      << answer.out << answer.err << "\nboard: " << mates({"tasks", "--team", session, "list"}).out
      << "\nlog: " << mates({"log", "--team", session}).out << "\nrequests: " << Requests(record);
  auto board = ParseJson(mates({"tasks", "--team", session, "list", "--json"}).out);
  ASSERT_TRUE(board.ok());
  std::vector<std::string> done_by;
  for (const auto& t : *board) {
    EXPECT_EQ(t["status"], "completed") << t;
    done_by.push_back(t["owner"]);
  }
  EXPECT_EQ(done_by, owners);
  // Every member messaged the next, in turn, as itself (mt, which took
  // its task the moment #4 was done, may be done before cc's message).
  std::vector<std::string> lines;
  for (size_t i = 0; i < owners.size(); ++i) {
    const std::string to = i + 1 < owners.size() ? owners[i + 1] : "user";
    lines.push_back(owners[i] + " -> " + to + " (message) [" + (to == "user" ? "done" : "go") +
                    "]: " + (to == "user" ? "all five done" : to + ": go"));
  }
  std::string log;
  EXPECT_TRUE(testing::WaitUntil([&] {
    log = mates({"log", "--team", session}).out;
    return std::all_of(lines.begin(), lines.end(), [&](const std::string& l) { return log.find(l) != std::string::npos; });
  }, 60)) << log;
  // What each member spent: the panes' from their CLI's own records (read
  // by the router as they grow), mt's from its journal; in usage and status.
  Json spent;
  auto usage_of = [&](const std::string& name) -> const Json* {
    if (!spent.contains("agents")) return nullptr;
    for (const auto& a : spent["agents"]) {
      if (a["agent"] == name) return &a;
    }
    return nullptr;
  };
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto j = ParseJson(mates({"usage", "--team", session, "--json"}).out);
    if (!j.ok()) return false;
    spent = *j;
    return std::all_of(owners.begin(), owners.end(), [&](const std::string& name) {
      const Json* a = usage_of(name);
      return a != nullptr && (*a)["calls"].is_number() && (*a)["calls"].get<int>() >= 2;
    });
  }, 30)) << spent.dump(2);
  const std::map<std::string, std::string> records = {{"cx", "Codex's session rollouts"},
                                                      {"gm", "Gemini CLI's chat logs"},
                                                      {"oc", "OpenCode's database"},
                                                      {"cc", "Claude Code's transcripts"}};
  for (const auto& [name, from] : records) {
    const Json* a = usage_of(name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_NE(StringOr(*a, "from").find(from), std::string::npos) << *a;
    EXPECT_GT((*a)["tokens"].get<int64_t>(), 1000) << *a;  // every CLI's prompt is thousands of tokens
  }
  EXPECT_TRUE((*usage_of("mt"))["from"].is_null()) << spent.dump(2);
  const std::string status = mates({"status", "--team", session}).out;
  EXPECT_EQ(status.find("usage unknown"), std::string::npos) << status;
  for (const auto& [name, from] : records) {
    EXPECT_TRUE(std::regex_search(status, std::regex("\\n" + name + " +idle .* [0-9.]+k/[0-9]+ "))) << status;
  }

  // Each spoke its own API to the one mock, and none was refused.
  for (const char* endpoint : {"/v1/responses", "streamGenerateContent", "/v1/chat/completions", "/v1/messages"}) {
    EXPECT_NE(record.find(endpoint), std::string::npos) << endpoint;
  }
  EXPECT_EQ(record.find(R"("status":400)"), std::string::npos) << record.substr(0, 3000);

  auto stopped = mates({"down", "--team", session}, 60);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  auto d = mates({"cluster", "down", "-c", config}, 60);
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(testing::WaitUntil([&] { return testing::ProcessesWithEnv(home_env).empty(); }, 15))
      << testing::DescribeProcesses(testing::ProcessesWithEnv(home_env));
  mock.Signal(SIGTERM);
}

}  // namespace
}  // namespace mates
