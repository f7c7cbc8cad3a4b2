// Journal: an agent's conversation on disk, .teams/<team>/agents/<name>.jsonl,
// one JSON line per event, appended as they happen, so that a restarted
// process resumes the conversation instead of losing it.
//
//   {"kind":"message","message":{role, content},"delivered":["m-…"]}
//        content added to the conversation (consecutive lines of one role
//        are one message); `delivered` names the inbox messages it carries,
//        in the same write, so a crash can neither lose nor repeat them
//   {"kind":"compact","messages":[…],"transcript":"…"}   the conversation
//        after a compaction (replaces what came before)
//   {"kind":"usage","usage":{…},"model":"claude-…"}   one model call's usage
//        (and the model that answered it, for its price)
//   {"kind":"delivered","ids":[…]}   ids of inbox messages already in the
//        conversation (written when a journal moves, after its compact line)
//   {"kind":"place","place":"HOST:WORKSPACE"}   where a host took the agent
//        up (a machine and workspace: its files and worktree are there)
//   {"kind":"turn_end","end":"failed","why":"…","in":"model","ts":…}   a turn
//        that did not end as the model meant: failed (`in` "model" when its
//        model call failed), budget, breaker, max_calls, refusal,
//        interrupted; what a post-mortem reads (DESIGN §31), nothing to
//        replay into the conversation
//
// A line cut by a crash (no newline) is dropped when the journal is read.
//
// On a store that keeps a copy (TeamStore::JournalOf: PostgreSQL, DESIGN
// §13), every line also goes to the copy, so that a host on another machine
// can resume the agent; the file is written first, and a copy that could not
// be reached catches up at the next line.
#pragma once

#include <filesystem>
#include <map>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/prices.h"
#include "core/files.h"
#include "core/json.h"
#include "core/status.h"
#include "llm/types.h"
#include "store/team_store.h"

namespace mates::agent {

namespace fs = std::filesystem;

// The text of a tool_result's content as journaled (a string, or blocks
// whose text ones are joined); "" for anything else.
std::string ToolResultText(const Json& content);

// Where a journal stopped making sense: the first line that would leave
// the conversation in a shape no API accepts (an orphan tool_result, a
// tool_use id seen before, the assistant first…).
struct JournalProblem {
  size_t line = 0;  // 1-based
  std::string what;
};

// An agent's spend as it grew: after each model call, when, every token so
// far, and the cost so far (null once a call's model has no price).
struct UsagePoint {
  double at = 0;
  int64_t tokens = 0;
  std::optional<double> cost_usd;
};

struct JournalState {
  std::vector<llm::ChatMessage> messages;  // the valid prefix
  std::set<std::string> delivered;  // inbox message ids already taken in
  llm::Usage usage;
  int calls = 0;
  // The same by the model that answered ("" for lines without one).
  std::map<std::string, llm::Usage> usage_by_model;
  int compactions = 0;
  // A lead's: the team it moved to at the journal's last "moved" line, if
  // no message was journaled here after it (it works there now).
  std::string moved_to;
  // The last "place" line's: where the agent was taken up last ("" if none).
  std::string place;
  std::optional<JournalProblem> problem;  // replay stopped there
};

class Journal {
 public:
  // Opens (creating) the journal; a torn last line is cut off first.
  static Result<Journal> Open(const fs::path& path);

  Journal(Journal&&) = default;
  Journal& operator=(Journal&&) = default;

  // Makes the file at `path` and the store's `copy` agree, before an agent
  // resumes from the file: the one that holds the other as its start wins
  // (the copy gets the file's later lines, or the file is written from the
  // copy); if they differ, the copy wins (it is what the agent's last host
  // wrote) and the file is kept beside as `<name>.superseded-<time>`.
  // Returns how many lines both hold.
  static Result<int64_t> Reconcile(const fs::path& path, JournalCopy& copy);
  // The copy starts over with the file's lines; returns how many.
  static Result<int64_t> Republish(const fs::path& path, JournalCopy& copy);
  // Every line appended from now on also goes to `copy`, which holds the
  // file's first `held` lines.
  void CopyTo(std::unique_ptr<JournalCopy> copy, int64_t held);

  Status AppendMessage(const llm::ChatMessage& m, const std::vector<std::string>& delivered = {});
  Status AppendCompaction(const std::vector<llm::ChatMessage>& messages,
                          const std::string& transcript_path);
  // `send`: to the copy at once; else with the line after it (the reply
  // it counts follows at once).
  Status AppendUsage(const llm::Usage& u, const std::string& model, bool send = false);
  Status AppendDelivered(const std::vector<std::string>& ids);
  // The agent (a lead) goes on in team `team`'s journal: a session that
  // resumes from this one goes on there ({"kind":"moved","team":T}).
  Status AppendMoved(const std::string& team);
  // A host takes the agent up at `place` ({"kind":"place"}).
  Status AppendPlace(const std::string& place);
  // A turn that ended otherwise than by the model's choice: how (`end`, a
  // TurnResult's stop_reason or "failed"), why, and for a failure whether
  // it was the model call's (`in` "model") or the loop's ("").
  Status AppendTurnEnd(std::string_view end, const std::string& why, std::string_view in);

  // Everything the journal holds, replayed and checked line by line: the
  // conversation is rebuilt as the API would see it, and replay stops at
  // the first line that breaks it (state.problem), keeping what came
  // before. Lines that are not JSON carry nothing and are skipped.
  static Result<JournalState> Load(const fs::path& path);
  // Only the usage lines (all of them, even past a line replay would stop
  // at): what `mates usage` and a team's budget count. NotFound if absent.
  static Result<JournalState> LoadUsage(const fs::path& path);
  // The usage lines of a journal's text (a store's copy of it).
  static JournalState UsageOf(std::string_view text);
  // The same on a journal's text (`name` for warnings).
  static JournalState ReplayText(std::string_view text, const std::string& name);
  // The spend over time of a journal's text (its usage lines, each at its
  // own time or, in journals from before usage lines had one, at the
  // message before it), at most `max_points` (evenly picked, the last
  // kept), priced at `prices`.
  static std::vector<UsagePoint> UsageSeries(std::string_view text, size_t max_points, const PriceTable& prices);
  // What the model calls of a journal's text within `windows` ([from, to)
  // wall seconds) spent: a task's cost, from its owner's journal and the
  // times it held the task (DESIGN §30). Usage lines without a time are
  // not counted.
  struct Spend {
    llm::Usage usage;
    int calls = 0;
    std::optional<double> cost_usd = 0.0;  // null once a call's model has no price
    std::set<std::string> models;
  };
  static Spend SpendWithin(std::string_view text, const std::vector<std::pair<double, double>>& windows,
                           const PriceTable& prices);
  // Starts `path` over with one compact line holding `state` (its valid
  // prefix); the old file is kept beside it as `<name>.unreplayable-<time>`.
  // Returns the old file's new name.
  static Result<fs::path> Rewrite(const fs::path& path, const JournalState& state);

  const fs::path& path() const { return path_; }

 private:
  Journal(fs::path path, ScopedFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  // `send`: to the copy now (with whatever it lacks), or with the next line.
  Status Append(const std::string& line, bool send = true);
  // Sends the lines the copy lacks; a failure is said once and retried at
  // the next line.
  void SendToCopy();

  fs::path path_;
  ScopedFd fd_;
  std::unique_ptr<JournalCopy> copy_;
  int64_t copied_ = 0;                 // lines the copy holds
  std::vector<std::string> unsent_;    // the lines after those
  bool copy_lagging_ = false;          // said so, not yet caught up
};

// The lead's subagents' usage (DESIGN §15): subagents, each on a thread of
// its own, add usage lines to one journal, `<lead>.subagents.jsonl`, and on
// a shared store to its copy (member `<lead>.subagents`, as the file is
// named): one writer, so the copy's numbering holds. Opened (the copy
// reconciled with the file first) at the first line, and again when the
// path changes (the lead moved to another team). A copy that cannot be
// reconciled is said once and left: the file still counts.
class UsageJournal {
 public:
  using CopyOf = std::function<std::unique_ptr<JournalCopy>()>;  // may return null
  Status Append(const fs::path& path, const CopyOf& copy_of, const llm::Usage& u, const std::string& model);

 private:
  std::mutex mu_;
  std::optional<Journal> journal_;  // guarded by mu_
};

}  // namespace mates::agent
