// What each agent CLI records of its usage, read back: the shapes below are
// those the real CLIs wrote in a run against mates mock-llm (Claude Code
// 2.x, Codex 0.171.0, Gemini CLI 0.61.0, OpenCode 1.18.33), cut down.
#include "tmux/cli_usage.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <utime.h>

#include <fstream>
#include <map>

#include "core/clock.h"
#include "core/files.h"
#include "support/test_util.h"

namespace mates::tmux {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kMarkers = {"You are cx (", "in the cluster mix. Reply with your marker"};
const std::string kHandshake = "You are cx (coder) in the cluster mix. Reply with your marker to confirm you are ready.";

std::string ClaudeSession(const std::string& handshake) {
  return R"({"type":"user","message":{"role":"user","content":")" + handshake + R"("},"timestamp":"2026-12-05T18:00:00Z"})"
         "\n"
         // One call, two content blocks: its usage on each, the last one whole.
         R"({"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":100,"cache_read_input_tokens":0},"content":[{"type":"text","text":"CX"}]}})"
         "\n"
         R"({"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":7,"cache_creation_input_tokens":100,"cache_read_input_tokens":0},"content":[{"type":"tool_use","name":"x","input":{}}]}})"
         "\n"
         R"({"type":"assistant","message":{"id":"msg_2","model":"claude-sonnet-4-5","usage":{"input_tokens":5,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":100},"content":[{"type":"text","text":"OK"}]}})"
         "\n"
         "not json at all\n";
}

std::string CodexRollout(const std::string& handshake) {
  return R"({"type":"session_meta","payload":{"id":"s1","cwd":"/w","originator":"codex_tui","cli_version":"0.171.0"}})"
         "\n"
         R"({"type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex"}})"
         "\n"
         R"({"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":")" +
         handshake + R"("}]}})"
         "\n"
         R"({"type":"token_usage_record","payload":{"usage":{"input_tokens":11672}}})"
         "\n"
         R"({"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":11672,"cached_input_tokens":0,"output_tokens":4,"reasoning_output_tokens":0,"total_tokens":11676},"last_token_usage":{"input_tokens":11672}}}})"
         "\n"
         R"({"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}})"
         "\n"
         R"({"type":"token_usage_record","payload":{"usage":{"input_tokens":11832}}})"
         "\n"
         R"({"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":23504,"cached_input_tokens":11648,"output_tokens":6,"reasoning_output_tokens":0,"total_tokens":23510},"last_token_usage":{"input_tokens":11832}}}})"
         "\n";
}

std::string GeminiChat(const std::string& handshake) {
  return R"({"sessionId":"g1","projectHash":"h","startTime":"2026-12-05T18:07:51.020Z","kind":"main"})"
         "\n"
         R"({"$set":{"messages":[{"id":"u0","type":"user","content":[{"text":"<session_context>"}]},{"id":"g0","type":"gemini","content":"hi","tokens":{"input":50,"output":1,"cached":0,"thoughts":0,"tool":0,"total":51},"model":"gemini-2.5-pro"}]}})"
         "\n"
         R"({"id":"u1","type":"user","content":[{"text":")" + handshake + R"("}]})"
         "\n"
         R"({"id":"g1","type":"gemini","content":"x","tokens":{"input":11775,"output":3,"cached":0,"thoughts":0,"tool":0,"total":11778},"model":"gemini-2.5-pro"})"
         "\n"
         // The same message again, finished: counted once, as it ends.
         R"({"id":"g1","type":"gemini","content":"CX OK","tokens":{"input":11775,"output":3,"cached":11000,"thoughts":2,"tool":0,"total":11780},"model":"gemini-2.5-pro"})"
         "\n"
         R"({"$set":{"lastUpdated":"2026-12-05T18:07:51.142Z"}})"
         "\n";
}

TEST(CliUsageTest, EachCliSessionIsReadAsMatesCountsUsage) {
  auto claude = SessionUsage("claude", ClaudeSession(kHandshake), kMarkers);
  ASSERT_TRUE(claude);
  EXPECT_EQ(claude->calls, 2);
  EXPECT_EQ(claude->usage.input_tokens, 15);
  EXPECT_EQ(claude->usage.output_tokens, 10);  // 7, the first call's last line, and 3
  EXPECT_EQ(claude->usage.cache_creation_input_tokens, 100);
  EXPECT_EQ(claude->usage.cache_read_input_tokens, 100);
  EXPECT_EQ(claude->model, "claude-sonnet-4-5");

  auto codex = SessionUsage("codex", CodexRollout(kHandshake), kMarkers);
  ASSERT_TRUE(codex);
  EXPECT_EQ(codex->calls, 2);
  EXPECT_EQ(codex->usage.input_tokens, 23504 - 11648);  // its input counts the cached part
  EXPECT_EQ(codex->usage.cache_read_input_tokens, 11648);
  EXPECT_EQ(codex->usage.output_tokens, 6);
  EXPECT_EQ(codex->model, "gpt-5-codex");

  auto gemini = SessionUsage("gemini", GeminiChat(kHandshake), kMarkers);
  ASSERT_TRUE(gemini);
  EXPECT_EQ(gemini->calls, 2);
  EXPECT_EQ(gemini->usage.input_tokens, 50 + 775);
  EXPECT_EQ(gemini->usage.cache_read_input_tokens, 11000);
  EXPECT_EQ(gemini->usage.output_tokens, 1 + 3 + 2);  // thoughts are output
  EXPECT_EQ(gemini->model, "gemini-2.5-pro");
}

TEST(CliUsageTest, AnotherMembersOrClustersSessionIsNotThisMembers) {
  const std::string gm = "You are gm (coder) in the cluster mix. Reply with your marker to confirm you are ready.";
  const std::string elsewhere = "You are cx (coder) in the cluster other. Reply with your marker to confirm you are ready.";
  for (const char* cli : {"claude", "codex", "gemini"}) {
    SCOPED_TRACE(cli);
    for (const auto& h : {gm, elsewhere}) {
      const std::string text = std::string(cli) == "claude"  ? ClaudeSession(h)
                               : std::string(cli) == "codex" ? CodexRollout(h)
                                                             : GeminiChat(h);
      EXPECT_FALSE(SessionUsage(cli, text, kMarkers));
    }
  }
  // A CLI mates does not read.
  EXPECT_FALSE(SessionUsage("qwen", ClaudeSession(kHandshake), kMarkers));
}

TEST(CliUsageTest, WhereEachCliKeepsItsRecordsFollowsItsEnvironment) {
  std::map<std::string, std::string> env = {{"HOME", "/home/p"}};
  auto get = [&](const std::string& k) { return env.count(k) ? env[k] : std::string(); };
  EXPECT_EQ(RecordsOf("claude", get), "/home/p/.claude/projects");
  EXPECT_EQ(RecordsOf("codex", get), "/home/p/.codex/sessions");
  EXPECT_EQ(RecordsOf("gemini", get), "/home/p/.gemini/tmp");
  EXPECT_EQ(RecordsOf("opencode", get), "/home/p/.local/share/opencode/opencode.db");
  EXPECT_EQ(RecordsOf("qwen", get), "");
  EXPECT_EQ(RecordsOf("", get), "");
  env = {{"HOME", "/home/p"}, {"CLAUDE_CONFIG_DIR", "/c"}, {"CODEX_HOME", "/x"}, {"GEMINI_CLI_HOME", "/g"},
         {"XDG_DATA_HOME", "relative/not/taken"}};
  EXPECT_EQ(RecordsOf("claude", get), "/c/projects");
  EXPECT_EQ(RecordsOf("codex", get), "/x/sessions");
  EXPECT_EQ(RecordsOf("gemini", get), "/g/.gemini/tmp");
  EXPECT_EQ(RecordsOf("opencode", get), "/home/p/.local/share/opencode/opencode.db");
  env.clear();
  EXPECT_EQ(RecordsOf("codex", get), "");  // no home: nowhere to look
}

void SetAge(const fs::path& p, double seconds_ago) {
  struct utimbuf t;
  t.actime = t.modtime = static_cast<time_t>(WallSeconds() - seconds_ago);
  ASSERT_EQ(::utime(p.c_str(), &t), 0);
}

TEST(CliUsageTest, TheReaderSumsTheMembersSessionsSinceUpAndFollowsThemAsTheyGrow) {
  testing::TempDir dir;
  const fs::path day = dir.path() / "sessions/2026/12/05";
  fs::create_directories(day);
  ASSERT_TRUE(WriteFileAtomic(day / "rollout-a.jsonl", CodexRollout(kHandshake)).ok());
  // Another member's, and one of this member's from before the cluster came up.
  ASSERT_TRUE(WriteFileAtomic(day / "rollout-b.jsonl", CodexRollout("You are gm (coder) in the cluster mix. Reply "
                                                                    "with your marker")).ok());
  ASSERT_TRUE(WriteFileAtomic(day / "rollout-old.jsonl", CodexRollout(kHandshake)).ok());
  SetAge(day / "rollout-old.jsonl", 3600);
  CliUsageReader reader("codex", dir.path() / "sessions", kMarkers, WallSeconds() - 120);
  auto u = reader.Read();
  ASSERT_TRUE(u.ok()) << u.status().message();
  ASSERT_TRUE(*u);
  EXPECT_EQ((*u)->sessions, 1);
  EXPECT_EQ((*u)->calls, 2);
  EXPECT_EQ((*u)->usage.output_tokens, 6);
  // The session goes on: read again, its new total.
  {
    std::ofstream out(day / "rollout-a.jsonl", std::ios::app);
    out << R"({"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":40000,"cached_input_tokens":30000,"output_tokens":50},"last_token_usage":{}}}})"
        << "\n";
  }
  u = reader.Read();
  ASSERT_TRUE(u.ok() && *u);
  EXPECT_EQ((*u)->usage.output_tokens, 50);
  EXPECT_EQ((*u)->usage.cache_read_input_tokens, 30000);
  // A second session of the member (its CLI restarted) adds to it.
  ASSERT_TRUE(WriteFileAtomic(day / "rollout-c.jsonl", CodexRollout(kHandshake)).ok());
  u = reader.Read();
  ASSERT_TRUE(u.ok() && *u);
  EXPECT_EQ((*u)->sessions, 2);
  EXPECT_EQ((*u)->usage.output_tokens, 56);
  // Nothing there: not found, and no error.
  CliUsageReader none("codex", dir.path() / "nowhere", kMarkers, 0);
  auto n = none.Read();
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(*n);
}

TEST(CliUsageTest, ClaudeCodesSubagentsCountAsTheirSessionsMember) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "projects/-w";
  fs::create_directories(project / "s1/subagents");
  fs::create_directories(project / "s2/subagents");
  ASSERT_TRUE(WriteFileAtomic(project / "s1.jsonl", ClaudeSession(kHandshake)).ok());
  ASSERT_TRUE(WriteFileAtomic(project / "s1/subagents/agent-a.jsonl", ClaudeSession("a subagent's task")).ok());
  ASSERT_TRUE(WriteFileAtomic(project / "s2.jsonl", ClaudeSession("You are gm (x) in the cluster mix. Reply with your marker")).ok());
  ASSERT_TRUE(WriteFileAtomic(project / "s2/subagents/agent-b.jsonl", ClaudeSession("gm's subagent")).ok());
  CliUsageReader reader("claude", dir.path() / "projects", kMarkers, WallSeconds() - 60);
  auto u = reader.Read();
  ASSERT_TRUE(u.ok() && *u);
  EXPECT_EQ((*u)->calls, 4);  // its session's two and its subagent's two, not gm's
  EXPECT_EQ((*u)->usage.output_tokens, 20);
}

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

TEST(CliUsageTest, OpenCodesDatabaseIsReadForTheMembersSessions) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "opencode/opencode.db";
  fs::create_directories(file.parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  const int64_t now = static_cast<int64_t>(WallSeconds() * 1000);
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, time_created integer NOT NULL, "
           "time_updated integer NOT NULL)");
  Exec(db, "CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, "
           "time_updated integer NOT NULL, data text NOT NULL)");
  Exec(db, "CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, "
           "time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)");
  const std::string t = std::to_string(now);
  Exec(db, "INSERT INTO session VALUES ('s1', 'p', " + t + ", " + t + "), ('s2', 'p', " + t + ", " + t +
               "), ('s0', 'p', 1, 1)");
  // s1: the member's (its handshake in a part); s2: another member's; s0:
  // the member's handshake too, but before the cluster came up.
  Exec(db, "INSERT INTO part VALUES ('p1', 'm1', 's1', " + t + ", " + t + ", '{\"type\":\"text\",\"text\":\"" +
               kHandshake + "\"}'), ('p2', 'm4', 's2', " + t + ", " + t +
               ", '{\"type\":\"text\",\"text\":\"You are gm (x) in the cluster mix. Reply with your marker\"}'), "
               "('p0', 'm5', 's0', 1, 1, '{\"type\":\"text\",\"text\":\"" + kHandshake + "\"}')");
  auto assistant = [&](const std::string& id, const std::string& session, int in, int out, int read, double cost) {
    return "('" + id + "', '" + session + "', " + t + ", " + t +
           ", '{\"role\":\"assistant\",\"modelID\":\"m\",\"providerID\":\"mates\",\"cost\":" + std::to_string(cost) +
           ",\"tokens\":{\"total\":1,\"input\":" + std::to_string(in) + ",\"output\":" + std::to_string(out) +
           ",\"reasoning\":1,\"cache\":{\"write\":0,\"read\":" + std::to_string(read) + "}}}')";
  };
  Exec(db, "INSERT INTO message VALUES ('m1', 's1', " + t + ", " + t + ", '{\"role\":\"user\"}'), " +
               assistant("m2", "s1", 9165, 3, 0, 0.5) + ", " + assistant("m3", "s1", 100, 5, 9000, 0.25) + ", " +
               assistant("m4", "s2", 7, 7, 7, 1) + ", " + assistant("m5", "s0", 7, 7, 7, 1));
  CliUsageReader reader("opencode", file, kMarkers, WallSeconds() - 60);
  auto u = reader.Read();  // while OpenCode has it open
  sqlite3_close(db);
  ASSERT_TRUE(u.ok()) << u.status().message();
  ASSERT_TRUE(*u);
  EXPECT_EQ((*u)->sessions, 1);
  EXPECT_EQ((*u)->calls, 2);
  EXPECT_EQ((*u)->usage.input_tokens, 9265);
  EXPECT_EQ((*u)->usage.output_tokens, 3 + 5 + 2);  // reasoning is output
  EXPECT_EQ((*u)->usage.cache_read_input_tokens, 9000);
  EXPECT_EQ((*u)->model, "m");
  ASSERT_TRUE((*u)->cost_usd);
  EXPECT_DOUBLE_EQ(*(*u)->cost_usd, 0.75);
  // No database yet: nothing, no error; a file that is no database: an error.
  CliUsageReader none("opencode", dir.path() / "none.db", kMarkers, 0);
  auto n = none.Read();
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(*n);
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "bad.db", "not a database, not at all, whatever it says").ok());
  EXPECT_FALSE(CliUsageReader("opencode", dir.path() / "bad.db", kMarkers, 0).Read().ok());
}

}  // namespace
}  // namespace mates::tmux
