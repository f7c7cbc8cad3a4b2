// Activity: what an agent is doing now, kept in `agents/<name>.status.json`
// for `mates status` and the dashboard (DESIGN §11):
//
//   {"agent": "alice", "state": "tool", "doing": "bash(make test)",
//    "since": 1763884800.12, "updated_at": 1763884801.5, "pid": 4242,
//    "model": "claude-…", "calls": 3,
//    "tokens": {"input": 1200, "output": 300, "cache_write": 0, "cache_read": 800},
//    "cost_usd": 0.0123,                      (null when the price is unknown)
//    "denials": [{"at": 1763884801.2, "what": "bash(…): [sandbox …]"}],
//                                             (the sandbox's last refusals, DESIGN §18)
//    "retry": {"attempt": 2, "of": 5, "at": 1763884803.0, "cause": "HTTP 503 …"},
//    "error": {"reason": "… (gave up after 5 attempts)", "at": 1763884809.1,
//              "next": "the next message tries again"}}
//
// state is `thinking` (a model call), `tool` (doing names the tool and a
// short form of its input), `idle` (waiting for work), `stopped` (doing
// says why), `retrying` (a model call failed and is tried again: `retry`
// says which attempt, from when, and why) or `error` (its last turn failed:
// `error` says why, when, and what it does next). An error is kept, shown
// with whatever state comes next, until a turn succeeds (DESIGN §20). The file is replaced atomically (through a spare,
// `agents/.spares/<name>.status.json`; readers use ReadReplacedFile), so a reader sees one
// whole document. Writes are
// off the agent's path: a change is recorded in memory and one writer
// thread per process writes the latest state of each file (changes that
// come faster than it writes are coalesced); the activity written
// synchronously cost a handoff 0.8 ms. On a shared store the same writer
// puts each document in the store too (TeamStore::ActivityOf), so that
// `mates status` on another machine sees what this one's agents do. The task an agent works on is
// the board's (its in-progress task), not the file's: the board is the truth.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/prices.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/json.h"
#include "core/status.h"
#include "llm/types.h"
#include "store/settled_writer.h"

namespace mates::agent {

enum class ActivityState { kThinking, kTool, kIdle, kStopped, kRetrying, kError };
std::string_view ActivityStateName(ActivityState s);

// What the sandbox refused a tool of the agent's, and when.
struct Denial {
  double at = 0;
  std::string what;  // the call, and the rule that refused it
};
inline constexpr size_t kMaxDenials = 5;

// What a hook of the person's blocked (DESIGN §22), and when.
struct HookBlock {
  double at = 0;
  std::string event;  // PreToolUse, TaskCompleted, …
  std::string what;   // the call or the task, and the hook's reason
};

// A model call tried again (state retrying).
struct Retry {
  int attempt = 0;  // the attempt to come, 2 … of
  int of = 0;
  double at = 0;  // when it starts (wall seconds)
  std::string cause;
};

// The last turn failed; kept until a turn succeeds.
struct TurnFailure {
  std::string reason;
  double at = 0;
  std::string next;  // what the agent does now, in words
};

struct Activity {
  std::string agent;
  ActivityState state = ActivityState::kIdle;
  std::string doing;
  double since = 0;       // when this state began (wall seconds)
  double updated_at = 0;  // the last write
  int64_t pid = 0;        // the process that hosts the agent
  std::string model;
  int calls = 0;
  llm::Usage tokens;
  std::optional<double> cost_usd;
  // An agent CLI in a pane (DESIGN §28): where its usage was read from
  // ("Codex's session rollouts"), or why it is unknown.
  std::string usage_from;
  std::string usage_unknown;
  std::vector<Denial> denials;  // the last kMaxDenials, newest last
  std::vector<HookBlock> hook_blocks;  // the last kMaxDenials, newest last
  std::optional<Retry> retry;         // state retrying
  std::optional<TurnFailure> error;   // until a turn succeeds
};

// "bash(make test)", "write_file(src/a.cc)", "SendMessage(lead: done)":
// a tool call in one line of at most ~90 characters (cut on a UTF-8
// boundary).
std::string DescribeCall(const llm::ContentBlock& call);

class ActivityFile {
 public:
  // Written by `writer` and priced at `prices` (the process's, Env::files
  // and Env::prices, which outlive this); `also` (optional) gets every
  // document written, on the writer's thread after the file (a shared
  // store's copy, DESIGN §13).
  ActivityFile(fs::path path, std::string agent, std::string model, SettledWriter& writer, const PriceTable& prices,
               std::function<void(const std::string& document)> also = {});
  // Its last change is on disk when it goes: nothing writes for an agent
  // that is gone.
  ~ActivityFile();
  ActivityFile(const ActivityFile&) = delete;
  ActivityFile& operator=(const ActivityFile&) = delete;
  // A change is written this long after the first change of its burst,
  // with all that came meanwhile (store/settled_writer.h says why); a
  // Flush of the writer does not wait it out.
  static constexpr std::chrono::milliseconds kSettle = SettledWriter::kSettle;

  void Thinking();
  void Tool(const llm::ContentBlock& call);
  // What the tool running now says of its progress: after its call in
  // `doing` ("mcp__x__index({…}) — 3/10: files").
  void Progress(const std::string& note);
  // Waiting for work: also the end of a turn that succeeded (an error
  // recorded is cleared); `doing` says for what, if not any work.
  void Idle(const std::string& doing = "");
  // The model call failed with `cause`; attempt `attempt` of `of` starts
  // in `delay_s`.
  void Retrying(int attempt, int of, double delay_s, const std::string& cause);
  // The turn failed (`reason`); `next` says what the agent does now.
  void Failed(const std::string& reason, const std::string& next);
  // Idle here because it works in another team (a lead): `where` is said.
  void Away(const std::string& where);
  void Stopped(const std::string& why);
  // The agent's usage so far (after each model call).
  void SetUsage(const llm::Usage& total, int calls);
  // What an agent CLI recorded of its usage (read from `from`), priced by
  // `model`; `priced` (the CLI's own figure) counts where the price table
  // has none. An empty `unknown_why`: known.
  void SetCliUsage(const std::string& from, const std::string& model, const llm::Usage& total, int calls,
                   std::optional<double> priced);
  void SetUsageUnknown(const std::string& why);
  // The sandbox refused `call` something: `why` is the rule's line.
  void Denied(const llm::ContentBlock& call, const std::string& why);
  // A hook blocked something on `event`.
  void Blocked(const std::string& event, const std::string& what);

  const fs::path& path() const { return path_; }

 private:
  void Enter(ActivityState state, std::string doing);
  void EnterLocked(ActivityState state, std::string doing);
  void PostLocked();

  const fs::path path_;
  SettledWriter& writer_;
  const PriceTable& prices_;
  std::mutex mu_;
  Activity a_;  // guarded by mu_
  std::string tool_call_;  // guarded by mu_: `doing` of the tool running
  std::shared_ptr<SettledWriter::Slot> slot_;
};

Json ActivityToJson(const Activity& a);
// A status file as written by ActivityFile; InvalidArgument for anything
// else (it is read like input: DESIGN §10).
Result<Activity> ActivityFromJson(const Json& j);
Result<Activity> ReadActivity(const fs::path& path);

}  // namespace mates::agent
