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

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/subprocess.h"
#include "support/test_util.h"

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
      o.argv = {CliBinary(name).string(), "exec", "--skip-git-repo-check", prompt};
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

}  // namespace
}  // namespace mates
