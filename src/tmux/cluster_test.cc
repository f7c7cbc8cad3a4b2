#include "tmux/cluster.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/test_util.h"

namespace mates::tmux {
namespace {

const std::string kReady = R"(^\s*[>❯]\s*$)";

TEST(FindReplyTest, TheReplyIsBetweenTheEchoAndTheMarker) {
  auto lines = CaptureLines("banner\n> hello there\nthinking\nHello back.\nCODING OK\n> \n\n");
  std::string reply;
  ASSERT_TRUE(FindReply(lines, 1, "hello there", "CODING OK", kReady, &reply));
  EXPECT_EQ(reply, "thinking\nHello back.");
}

TEST(FindReplyTest, AMarkerInTheEchoedInputDoesNotCount) {
  auto lines = CaptureLines("> say CODING OK when done\n  and more\n");
  std::string reply;
  EXPECT_FALSE(FindReply(lines, 0, "say CODING OK when done\nand more", "CODING OK", kReady, &reply));
  lines.push_back("working on it");
  lines.push_back("all good. CODING OK");
  ASSERT_TRUE(FindReply(lines, 0, "say CODING OK when done\nand more", "CODING OK", kReady, &reply));
  EXPECT_EQ(reply, "working on it\nall good.");
}

TEST(FindReplyTest, OlderScrollbackIsNotLookedAt) {
  auto lines = CaptureLines("CODING OK\nold reply CODING OK\n> new question\n");
  std::string reply;
  EXPECT_FALSE(FindReply(lines, 2, "new question", "CODING OK", kReady, &reply));
}

// A real Claude Code screen (v2.1, 60 columns): its prompt is "❯" and a
// no-break space, it wraps a long input itself, puts "● " before its
// message and indents the rest; rules and a status line close the screen.
TEST(FindReplyTest, ClaudeCodesScreen) {
  const std::string nbsp = "\xC2\xA0";
  std::string screen =
      "╰──────────────────────────────────────────────────────────╯\n"
      "\n"
      "❯" + nbsp + "You are alpha (coder) in the cluster c. Reply with your\n"
      "  marker to confirm you are ready.\n"
      "\n"
      "● Alpha here and ready.\n"
      "  Second line, indented under the bullet.\n"
      "  ALPHA OK\n"
      "\n"
      "✻ Cogitated for 0s\n"
      "\n"
      "────────────────────────────────────────────────────────────\n"
      "❯" + nbsp + "\n"
      "────────────────────────────────────────────────────────────\n"
      "  ? for shortcuts · ← for agents\n\n\n";
  auto lines = CaptureLines(screen);
  EXPECT_EQ(lines[12], "❯");  // the no-break space reads as a space (trimmed)
  const std::string input = "You are alpha (coder) in the cluster c. Reply with your marker to confirm you are ready.";
  std::string reply;
  ASSERT_TRUE(FindReply(lines, 1, input, "ALPHA OK", R"(^\s*(│|\|)?\s*(>|❯|›)\s*$)", &reply));
  EXPECT_EQ(reply, "Alpha here and ready.\nSecond line, indented under the bullet.");
  // Before the reply, the wrapped echo alone is no reply.
  lines.resize(4);
  EXPECT_FALSE(FindReply(lines, 1, input, "ALPHA OK", kReady, &reply));
}

// Qwen Code (as a tmux pane shows it): the echo two columns in, the reply
// after a "✦ " bullet indented alike, an empty prompt with a placeholder.
TEST(FindReplyTest, QwenCodesScreen) {
  std::string screen =
      "  Tips: Type / to open the command popup; Tab autocompletes slash commands.\n"
      "  > You are beta in the cluster c. Reply with your marker to confirm you are ready.\n"
      "  ✦ Beta here, ready.\n"
      "    A second line under the bullet.\n"
      "    BETA OK\n"
      "────────────────────────────────────────────────────────────\n"
      ">   Type your message or @path/to/file\n"
      "────────────────────────────────────────────────────────────\n"
      "  ? for shortcuts\n";
  auto lines = CaptureLines(screen);
  const std::string input = "You are beta in the cluster c. Reply with your marker to confirm you are ready.";
  const std::string ready = R"(^\s*(│|\|)?\s*(>|❯|›)\s*(Type your message.*)?$)";
  std::string reply;
  ASSERT_TRUE(FindReply(lines, 0, input, "BETA OK", ready, &reply));
  EXPECT_EQ(reply, "Beta here, ready.\nA second line under the bullet.");
}

TEST(ClusterConfigTest, TheDefaultPromptPatternMatchesClaudeCodeAndPlainPrompts) {
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "p.txt", "x");
  testing::WriteAll(dir.path() / "c.yaml",
                    "cluster: {name: cc}\n"
                    "agents:\n"
                    "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0}\n"
                    "  - {name: b, personality_prompt_path: p.txt, marker: B OK, pane_index: 1, command: [my-cli]}\n");
  auto c = LoadClusterConfig(dir.path() / "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::regex ready(c->agents[0].ready_pattern);
  for (std::string prompt : {"❯\xC2\xA0", "> ", "  › ", "│ > ", "❯"}) {
    EXPECT_TRUE(std::regex_search(CaptureLines(prompt + "\n")[0], ready)) << prompt;
  }
  for (std::string row : {"❯ some text", "  ❯ 2. No (recommended)", "> quoted", "❯❯", "plain"}) {
    EXPECT_FALSE(std::regex_search(row, ready)) << row;
  }
  EXPECT_EQ(c->agents[0].busy_pattern, "esc (to )?(interrupt|cancel)");
  // Codex's and OpenCode's idle screens (OpenCode's by its own preset).
  EXPECT_TRUE(std::regex_search("› Ask Codex to do anything", ready));
  EXPECT_FALSE(std::regex_search("› please be slow", ready));
  // Qwen Code's empty prompt shows a placeholder; its echo is no prompt.
  EXPECT_TRUE(std::regex_search(">   Type your message or @path/to/file", ready));
  EXPECT_FALSE(std::regex_search("  > please say hello", ready));
  // first_run: auto is claude-code for `claude`, none for anything else.
  EXPECT_EQ(c->agents[0].first_run, FirstRun::kClaudeCode);
  EXPECT_EQ(c->agents[1].first_run, FirstRun::kNone);
  // mcp: auto is on for Claude Code (it reaches the team through `mates mcp`).
  EXPECT_TRUE(c->agents[0].mcp);
  EXPECT_FALSE(c->agents[1].mcp);
}

// The presets (DESIGN §28): each CLI's command, how it is told who it is,
// when it is ready, and what `up` gives it to reach the team and the
// model (tmux/cli_wiring.h), as files and options that name this agent.
TEST(ClusterConfigTest, PresetsGiveEachCliItsCommandTheTeamAndTheModel) {
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "p.txt", "You are \"quoted\"\nand on two lines.\n");
  testing::WriteAll(dir.path() / "c.yaml",
                    "cluster: {name: cc, cli: codex, model_url: 'http://127.0.0.1:9/'}\n"
                    "agents:\n"
                    "  - {name: cx, personality_prompt_path: p.txt, marker: CX OK, pane_index: 0}\n"
                    "  - {name: gm, cli: gemini, personality_prompt_path: p.txt, marker: GM OK, pane_index: 1}\n"
                    "  - {name: oc, cli: opencode, personality_prompt_path: p.txt, marker: OC OK, pane_index: 2,\n"
                    "     env: {OPENAI_MODEL: m1}}\n"
                    "  - {name: cc, command: [claude], personality_prompt_path: p.txt, marker: CC OK, pane_index: 3,\n"
                    "     model_url: 'https://proxy.example'}\n"
                    "  - {name: own, command: [my-cli], personality_prompt_path: p.txt, marker: OWN OK, pane_index: 4}\n");
  auto c = LoadClusterConfig(dir.path() / "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  const AgentConfig& cx = *c->Find("cx");
  EXPECT_EQ(cx.cli, CliPreset::kCodex);
  EXPECT_EQ(cx.command, (std::vector<std::string>{"codex", "-c",
                                                  "developer_instructions=\"You are \\\"quoted\\\"\\nand on two lines.\\n\""}));
  EXPECT_EQ(cx.model_url, "http://127.0.0.1:9");
  EXPECT_TRUE(cx.mcp);
  EXPECT_EQ(cx.first_run, FirstRun::kNone);
  const AgentConfig& gm = *c->Find("gm");
  EXPECT_EQ(gm.command, (std::vector<std::string>{"gemini"}));
  EXPECT_EQ(gm.enter_delay_ms, 300);
  EXPECT_EQ(c->Find("oc")->ready_pattern, "ctrl\\+p commands");
  EXPECT_EQ(c->Find("cc")->first_run, FirstRun::kClaudeCode);
  EXPECT_EQ(c->Find("cc")->model_url, "https://proxy.example");
  EXPECT_EQ(c->Find("own")->cli, CliPreset::kNone);
  EXPECT_FALSE(c->Find("own")->mcp);

  const fs::path state = dir.path() / "state";
  fs::create_directories(state);
  const std::vector<std::string> server = {"/bin/mates", "--workspace", "/w", "mcp", "--team", "cc", "--as", "NAME"};
  auto codex = WireCli(cx, server, state);
  ASSERT_TRUE(codex.ok()) << codex.status().message();
  const std::string args = [&] {
    std::string out;
    for (const auto& a : codex->args) out += a + " ";
    return out;
  }();
  EXPECT_NE(args.find("-c mcp_servers.mates.command=\"/bin/mates\""), std::string::npos) << args;
  EXPECT_NE(args.find("mcp_servers.mates.args=[\"--workspace\", \"/w\", \"mcp\""), std::string::npos) << args;
  EXPECT_NE(args.find("mcp_servers.mates.default_tools_approval_mode=\"approve\""), std::string::npos) << args;
  EXPECT_NE(args.find("model_providers.mates.base_url=\"http://127.0.0.1:9/v1\""), std::string::npos) << args;
  EXPECT_NE(args.find("model_providers.mates.wire_api=\"responses\""), std::string::npos) << args;

  auto gemini = WireCli(gm, server, state);
  ASSERT_TRUE(gemini.ok()) << gemini.status().message();
  EXPECT_EQ(gemini->env.at("GOOGLE_GEMINI_BASE_URL"), "http://127.0.0.1:9");
  EXPECT_EQ(gemini->env.at("GEMINI_CLI_TRUST_WORKSPACE"), "true");
  auto settings = ParseJson(testing::ReadAll(fs::path(gemini->env.at("GEMINI_CLI_HOME")) / ".gemini/settings.json"));
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ((*settings)["mcpServers"]["mates"]["command"], "/bin/mates");
  EXPECT_EQ((*settings)["mcpServers"]["mates"]["trust"], true);
  EXPECT_EQ((*settings)["security"]["auth"]["selectedType"], "gemini-api-key");

  auto opencode = WireCli(*c->Find("oc"), server, state);
  ASSERT_TRUE(opencode.ok()) << opencode.status().message();
  auto config = ParseJson(testing::ReadAll(opencode->env.at("OPENCODE_CONFIG")));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ((*config)["instructions"][0], (dir.path() / "p.txt").string());
  EXPECT_EQ((*config)["mcp"]["mates"]["command"][0], "/bin/mates");
  EXPECT_EQ((*config)["provider"]["mates"]["options"]["baseURL"], "http://127.0.0.1:9/v1");
  EXPECT_EQ((*config)["model"], "mates/m1");

  auto claude = WireCli(*c->Find("cc"), server, state);
  ASSERT_TRUE(claude.ok());
  ASSERT_EQ(claude->args.size(), 2u);
  EXPECT_EQ(claude->args[1], "--allowedTools=mcp__mates");
  EXPECT_EQ(claude->env.at("ANTHROPIC_BASE_URL"), "https://proxy.example");
  // Not on MCP and no model server: nothing added.
  auto own = WireCli(*c->Find("own"), {}, state);
  ASSERT_TRUE(own.ok());
  EXPECT_TRUE(own->args.empty());
  EXPECT_TRUE(own->env.empty());

  // The router names the tools as each CLI shows them to its model.
  EXPECT_EQ(McpToolName(CliPreset::kCodex, "read_inbox"), "mcp__mates__read_inbox");
  EXPECT_EQ(McpToolName(CliPreset::kGemini, "read_inbox"), "mcp_mates_read_inbox");
  EXPECT_EQ(McpToolName(CliPreset::kOpenCode, "read_inbox"), "mates_read_inbox");
  EXPECT_EQ(TomlString("a\x01\x7f\t\\"), "\"a\\u0001\\u007F\\t\\\\\"");

  // Codex's own telemetry goes where the team's does (DESIGN §29): events,
  // traces and metrics, each to its endpoint, with the team's headers.
  auto otlp = telemetry::OtlpConfig::From(
      [](const char* name) -> const char* {
        if (std::string_view(name) == "OTEL_EXPORTER_OTLP_ENDPOINT") return "http://c:4318";
        if (std::string_view(name) == "OTEL_EXPORTER_OTLP_HEADERS") return "x-key=k\"1";
        if (std::string_view(name) == "OTEL_METRICS_EXPORTER") return "none";
        return nullptr;
      },
      Json::object());
  EXPECT_EQ(CodexTelemetryArgs(otlp),
            (std::vector<std::string>{
                "-c", "otel.exporter={otlp-http = {endpoint = \"http://c:4318/v1/logs\", protocol = \"binary\", "
                      "headers = {\"x-key\" = \"k\\\"1\"}}}",
                "-c", "otel.trace_exporter={otlp-http = {endpoint = \"http://c:4318/v1/traces\", protocol = "
                      "\"binary\", headers = {\"x-key\" = \"k\\\"1\"}}}"}));
  EXPECT_TRUE(CodexTelemetryArgs(telemetry::OtlpConfig{}).empty());
}

Status LoadFrom(const std::string& yaml, testing::TempDir& dir) {
  testing::WriteAll(dir.path() / "p.txt", "You are a test agent.\n");
  testing::WriteAll(dir.path() / "c.yaml", yaml);
  return LoadClusterConfig(dir.path() / "c.yaml").status();
}

TEST(ClusterConfigTest, SeedSchemaWithDefaultsAndHierarchy) {
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "p.txt", "x");
  testing::WriteAll(dir.path() / "c.yaml",
                    "cluster: {name: cc, session_name: cc-s, work_dir: '.'}\n"
                    "agents:\n"
                    "  - {name: grand_boss, role: grand_boss, personality_prompt_path: p.txt, marker: GB OK, pane_index: 0}\n"
                    "  - {name: middle_manager, role: middle_manager, personality_prompt_path: p.txt, marker: MM OK, pane_index: 1}\n"
                    "  - {name: coder, role: specialist, personality_prompt_path: p.txt, marker: C OK, pane_index: 2}\n");
  auto c = LoadClusterConfig(dir.path() / "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->session, "cc-s");
  EXPECT_EQ(c->response_timeout_s, 30);
  EXPECT_EQ(c->log_file, dir.path() / "logs/messages.jsonl");
  EXPECT_EQ(c->Find("coder")->reports_to, "middle_manager");
  EXPECT_EQ(c->Find("middle_manager")->reports_to, "grand_boss");
  EXPECT_EQ(c->Find("grand_boss")->reports_to, "");
  EXPECT_EQ(c->Find("coder")->command,
            (std::vector<std::string>{"claude", "--append-system-prompt-file", (dir.path() / "p.txt").string()}));
}

// A command string is split by the shell's quoting rules (a first-time
// user's `bash agent.sh 'BOSS OK' 0.3` passed `'BOSS` and `OK'`).
TEST(ClusterConfigTest, ACommandStringIsSplitByShellQuoting) {
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "p.txt", "x");
  testing::WriteAll(dir.path() / "c.yaml",
                    "cluster: {name: cc}\n"
                    "agents:\n"
                    "  - {name: a, personality_prompt_path: p.txt, marker: BOSS OK, pane_index: 0,\n"
                    "     command: \"bash agent.sh 'BOSS OK' 0.3 \\\"two words\\\"\"}\n");
  auto c = LoadClusterConfig(dir.path() / "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->agents[0].command, (std::vector<std::string>{"bash", "agent.sh", "BOSS OK", "0.3", "two words"}));
}

TEST(ClusterConfigTest, MistakesNameTheirField) {
  testing::TempDir dir;
  const std::string head = "cluster: {name: cc}\nagents:\n";
  const std::string ok = "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0}\n";
  struct Case {
    std::string yaml, field;
  } cases[] = {
      {"cluster: {name: cc, colour: red}\nagents:\n" + ok, "cluster.colour: unknown field"},
      {head + "  - {name: a, personality_prompt_path: p.txt, pane_index: 0}\n", "agents[0].marker: missing"},
      {head + ok + "  - {name: b, personality_prompt_path: p.txt, marker: B OK, pane_index: 0}\n",
       "agents[1].pane_index"},
      {head + ok + "  - {name: b, personality_prompt_path: p.txt, marker: A OK, pane_index: 1}\n",
       "agents[1].marker"},
      {head + "  - {name: a, personality_prompt_path: nope.txt, marker: A OK, pane_index: 0}\n",
       "agents[0].personality_prompt_path"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, reports_to: z}\n",
       "agents[0].reports_to"},
      {head + "  - {name: 'a b', personality_prompt_path: p.txt, marker: A OK, pane_index: 0}\n", "agents[0].name"},
      {"cluster: {name: cc, response_timeout: -3}\nagents:\n" + ok, "cluster.response_timeout"},
      {"cluster: {name: cc, busy_pattern: '('}\nagents:\n" + ok, "cluster.busy_pattern: invalid regex"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, ready_pattern: '['}\n",
       "agents[0].ready_pattern: invalid regex"},
      {"cluster: {name: cc, first_run: always}\nagents:\n" + ok, "cluster.first_run: must be auto, claude-code or none"},
      {"cluster: {name: cc, mcp: sometimes}\nagents:\n" + ok, "cluster.mcp: must be auto, on or off"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, mcp: [x]}\n",
       "agents[0].mcp: must be auto, on or off"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, first_run: [x]}\n",
       "agents[0].first_run"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, sandbox: perhaps}\n",
       "agents[0].sandbox"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, sandbox: true, mcp: on}\n",
       "agents[0].sandbox: a sandboxed agent reaches the team with `mates send`"},
      {"cluster: [1\n", "c.yaml"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, command: \"bash x.sh 'BOSS\"}\n",
       "agents[0].command: unterminated ' (opened at character 11) (or give the command as a list)"},
      {"cluster: {name: cc, cluster_regex_too: 1}\nagents:\n" + ok, "cluster.cluster_regex_too: unknown field"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, cli: cobol}\n",
       "agents[0].cli: must be claude, qwen, codex, gemini or opencode"},
      {"cluster: {name: cc, model_url: 'ftp://x'}\nagents:\n" + ok,
       "cluster.model_url: must be an http:// or https:// URL"},
      {head + "  - {name: a, personality_prompt_path: p.txt, marker: A OK, pane_index: 0, model_url: 'http://a b'}\n",
       "agents[0].model_url: must be an http:// or https:// URL"},
      {"cluster: {name: cc, busy_pattern: 'a{2222222222222222222}'}\nagents:\n" + ok,
       "cluster.busy_pattern: invalid regex 'a{2222222222222222222}': a repetition count past 1000"},
  };
  for (const auto& c : cases) {
    Status s = LoadFrom(c.yaml, dir);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace mates::tmux

namespace mates::tmux {
namespace {

TEST(ClusterConfigTest, TheShippedExampleLoads) {
  auto c = LoadClusterConfig(fs::path(MATES_SOURCE_DIR) / "examples/cluster/cc-cluster.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->agents.size(), 5u);
  EXPECT_EQ(c->agents[0].marker, "GRAND BOSS OK");
  EXPECT_EQ(c->Find("testing_specialist")->reports_to, "middle_manager");
  EXPECT_EQ(c->work_dir, (fs::path(MATES_SOURCE_DIR) / "examples/cluster").lexically_normal());
}

}  // namespace
}  // namespace mates::tmux
