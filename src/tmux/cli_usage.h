// What an agent CLI in a pane spent, read from what the CLI itself records
// (DESIGN §28): mates does not see a pane's model calls, but each CLI keeps
// its sessions on disk with their usage —
//
//   Claude Code  $CLAUDE_CONFIG_DIR|~/.claude /projects/<cwd>/<session>.jsonl
//                (assistant lines: message.usage, a call once by message.id)
//   Codex        $CODEX_HOME|~/.codex /sessions/Y/M/D/rollout-….jsonl
//                (event_msg token_count: the session's running total)
//   Gemini CLI   $GEMINI_CLI_HOME|~ /.gemini/tmp/<project>/chats/session-….jsonl
//                (messages of type gemini: tokens, a message once by id)
//   OpenCode     $XDG_DATA_HOME|~/.local/share /opencode/opencode.db (SQLite:
//                assistant messages' tokens and the cost it priced)
//
// A member's sessions are those that hold the text `cluster up` gave it
// (its handshake names the agent and the cluster), made since the cluster
// came up. Counts are put as mates counts them (llm::Usage: input without
// what was read from or written to the cache). Qwen Code and a command of
// the person's own record nothing mates reads: their usage is unknown.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "llm/types.h"

namespace mates::tmux {

struct CliUsage {
  llm::Usage usage;
  int calls = 0;
  std::string model;               // the newest call's
  std::optional<double> cost_usd;  // what the CLI priced itself (OpenCode), if anything
  int sessions = 0;
};

// Where `cli` ("claude", "codex", "gemini", "opencode") started with the
// variables `env` gives keeps its records: a folder, or OpenCode's
// database. Empty for a CLI whose records mates does not read.
std::filesystem::path RecordsOf(std::string_view cli, const std::function<std::string(const std::string&)>& env);
// "Codex's session rollouts", …: what RecordsOf's place is, for people.
std::string RecordsName(std::string_view cli);

// Reads a member's usage again and again (the router does, as it works):
// a file not changed since the last look is not read again.
class CliUsageReader {
 public:
  // `markers`: texts that all appear in each of the member's sessions;
  // `since`: wall seconds before which no session of its was written.
  CliUsageReader(std::string cli, std::filesystem::path records, std::vector<std::string> markers, double since);

  // The sum of the member's sessions; nullopt while none is found.
  Result<std::optional<CliUsage>> Read();

 private:
  struct Seen {
    uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
    std::optional<CliUsage> usage;  // nullopt: not one of the member's sessions
  };
  // Each file below `dir` whose name ends in one of `suffixes`, written
  // since `since_`.
  std::vector<std::filesystem::path> Candidates(const std::filesystem::path& dir, int depth) const;
  Result<std::optional<CliUsage>> ReadFiles(const std::filesystem::path& dir, int depth);
  Result<std::optional<CliUsage>> ReadOpenCode();

  std::string cli_;
  std::filesystem::path records_;
  std::vector<std::string> markers_;
  double since_;
  std::map<std::filesystem::path, Seen> seen_;
};

// One session file's usage if it holds every marker (exposed for tests).
std::optional<CliUsage> SessionUsage(std::string_view cli, std::string_view text,
                                     const std::vector<std::string>& markers);

}  // namespace mates::tmux
