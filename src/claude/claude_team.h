// Claude Code's own agent teams (DESIGN §24), read where Claude Code keeps
// them and written to the two ways a person may steer one. The formats are
// Claude Code 2.1's, as its CLI writes them (learnt from the files of a real
// run against `mates mock-llm`; tests/fixtures/claude_team/ holds a scrubbed
// copy):
//
//   H = $CLAUDE_CONFIG_DIR, else $HOME/.claude
//   H/teams/<team>/config.json        {name, createdAt, leadAgentId,
//                                       leadSessionId, members: [{agentId,
//                                       name, agentType, model, color, prompt,
//                                       cwd, joinedAt, backendType, …}]}
//   H/teams/<team>/inboxes/<name>.json [{from, text, summary, timestamp,
//                                       color, msg_id, type, read}, …]: what
//                                       waits for <name>; Claude Code removes
//                                       a message once it is delivered
//   H/tasks/<team>/<id>.json          {id, subject, description, status,
//                                       owner, blocks, blockedBy, metadata}
//   H/projects/<cwd>/<session>.jsonl  the lead's transcript; its teammates'
//   H/projects/<cwd>/<session>/subagents/agent-<id>.jsonl (+ .meta.json)
//   H/sessions/<pid>.json             a running Claude Code: {pid, sessionId,
//                                       procStart, …}
//
// A message delivered is in its recipient's transcript as
// <teammate-message teammate_id="from" …>text</teammate-message>, so the
// history of a team's mail is its transcripts' plus what still waits in
// the inboxes (unread). Protocol messages (idle notifications, shutdown and
// plan requests and answers) are JSON in `text`, typed by `type`.
//
// Reading never fails on what it does not know: fields it does not use
// are kept (`extra`) and shown; a file caught mid-write (Claude Code
// writes tasks in place) is read again, and one that stays broken is named
// in `problems`, never a crash. Writing goes through Claude Code's own
// locks (proper-lockfile's: a directory `<file>.lock`, stale after 10 s),
// as Claude Code writes: an inbox is replaced atomically; a task takes the
// next id under the board's lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"
#include "core/status.h"
#include "llm/types.h"

namespace mates::claude {

// Where Claude Code keeps its state for this user: $CLAUDE_CONFIG_DIR,
// else $HOME/.claude (FailedPrecondition if neither is set).
Result<fs::path> DefaultClaudeHome();

// Claude Code's file names: a team's folder ("[^a-zA-Z0-9]" to "-", lower
// case) and an inbox's or task's file ("[^a-zA-Z0-9_-]" to "-").
std::string TeamFolderName(std::string_view team);
std::string FileNameOf(std::string_view name);

struct Member {
  std::string name;
  std::string agent_id;    // "alpha@session-2e8b1b27"
  std::string agent_type;  // "team-lead", or what it was spawned as
  std::string model;
  std::string color;
  std::string prompt;
  std::string cwd;
  std::string backend;  // "in-process", "tmux", …
  double joined_at = 0;
  bool plan_mode_required = false;
  Json extra = Json::object();  // the fields not named above, as written
};

struct TeamConfig {
  std::string name;
  double created_at = 0;
  std::string lead_agent_id;
  std::string lead_session_id;
  std::vector<Member> members;
  Json extra = Json::object();
  // The lead's name ("team-lead"): the member whose agentId is the lead's.
  std::string lead() const;
  const Member* Find(std::string_view name) const;
};

struct Message {
  std::string id;  // msg_id, else one derived from what it says
  std::string from;
  std::string to;
  std::string text;
  std::string summary;
  std::string color;
  double timestamp = 0;  // when sent (an inbox's) or delivered (a transcript's)
  bool read = false;     // delivered: in the recipient's transcript
  // A protocol message's `type` ("idle_notification", "shutdown_request",
  // "plan_approval_response", …) and its document; "" for plain text.
  std::string protocol;
  Json document;
  Json extra = Json::object();
};

struct Task {
  std::string id;  // "1", "2", …
  std::string subject;
  std::string description;
  std::string active_form;
  std::string status;  // pending | in_progress | completed (as written)
  std::string owner;
  std::vector<std::string> blocks;
  std::vector<std::string> blocked_by;
  Json metadata = Json::object();
  Json extra = Json::object();
  double updated_at = 0;  // the file's mtime
};

// What a member's transcript says: what it does now and what it spent.
struct Activity {
  std::string transcript;  // the file
  std::string state;       // thinking | tool | idle ("" before its first turn)
  std::string doing;       // the tool and its input, short
  double since = 0;        // the last line's time
  std::string model;
  int calls = 0;     // model calls (assistant messages)
  llm::Usage tokens;  // summed over calls, each counted once
};

// Where each of the team's files is, for a person.
struct TeamFiles {
  fs::path config;
  fs::path inboxes;
  fs::path tasks;
};

class TeamReader;

// The teams under a Claude Code home, read and steered. Thread-safe; keeps
// what it has read of each transcript, so a look again reads only what
// was appended.
class ClaudeHome {
 public:
  explicit ClaudeHome(fs::path home);
  ~ClaudeHome();
  const fs::path& path() const { return home_; }
  TeamFiles FilesOf(std::string_view team) const;

  // The teams with a config.json, sorted.
  Result<std::vector<std::string>> ListTeams() const;
  // NotFound "no Claude Code team 'T' in H/teams".
  Result<TeamConfig> LoadTeam(std::string_view team) const;
  // What waits in `member`'s inbox, oldest first.
  Result<std::vector<Message>> Inbox(std::string_view team, std::string_view member) const;
  // The board, by id.
  Result<std::vector<Task>> Tasks(std::string_view team) const;

  // Everything at once: the roster, the board, every member's mail (read
  // and unread, by time), activity and spend. `problems` names what could
  // not be read.
  struct Snapshot {
    TeamConfig config;
    std::vector<Task> tasks;
    std::vector<Message> messages;  // by timestamp
    std::map<std::string, Activity> activity;
    std::map<std::string, size_t> unread;  // per member
    bool lead_alive = false;               // the lead's Claude Code runs
    std::vector<std::string> problems;
  };
  Result<Snapshot> Look(std::string_view team);
  // `member`'s transcript (NotFound if it has none yet).
  Result<fs::path> TranscriptOf(std::string_view team, std::string_view member);
  // Whether the Claude Code of session `session_id` runs on this machine
  // (H/sessions/<pid>.json names it, and that pid is the process it was).
  bool SessionAlive(std::string_view session_id) const;

  // Steering. A message into `to`'s inbox as Claude Code's SendMessage
  // writes one (from `from`, "user" for a person); its msg_id.
  Result<std::string> Send(std::string_view team, std::string_view from, std::string_view to,
                           std::string_view text, std::string_view summary);
  // A task on the board as Claude Code's TaskCreate makes one; its id.
  Result<Task> CreateTask(std::string_view team, std::string_view subject, std::string_view description,
                          const std::vector<std::string>& blocked_by);

 private:
  TeamReader& ReaderOf(std::string_view team);
  const fs::path home_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<TeamReader>> readers_;
};

// proper-lockfile's lock, as Claude Code takes it: `lock_dir` made with
// mkdir; one whose mtime is over 10 s old is stale and taken over;
// otherwise tried again for up to `timeout_s`. Released (rmdir) when the
// returned guard goes.
class DirLock {
 public:
  static Result<DirLock> Acquire(const fs::path& lock_dir, double timeout_s = 5);
  DirLock(DirLock&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  DirLock& operator=(DirLock&&) = delete;
  ~DirLock();

 private:
  explicit DirLock(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

// Parses <teammate-message teammate_id="…" …>text</teammate-message>
// blocks out of a transcript's user turn (each one message to `to`).
std::vector<Message> MessagesInTurn(std::string_view text, const std::string& to, double at);
// What a transcript's text says, its whole lines read as ClaudeHome reads
// a transcript file: `owner`'s activity and the messages delivered to it.
struct TranscriptSummary {
  Activity activity;
  std::vector<Message> delivered;
};
TranscriptSummary SummarizeTranscript(std::string_view text, const std::string& owner);
// Reads one message of an inbox (a JSON object); `to` is the inbox's.
Message MessageFromInbox(const Json& j, const std::string& to);
Task TaskFromJson(const Json& j);
Result<TeamConfig> TeamConfigFromJson(const Json& j);
// What goes into a message's `summary` for a person when it has none: a
// protocol message in words ("idle (available): [to beta] hello").
std::string Gist(const Message& m);

}  // namespace mates::claude
