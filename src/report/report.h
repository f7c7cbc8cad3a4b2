// The post-mortem of a team's session (DESIGN §31): everything its record
// holds (roster, board and its history, message log, protocol requests,
// merge requests and their checks, the agents' journals, the conflicts
// forecast) read once and put together as a person reads a run that went
// wrong:
//
//   - a timeline: when each agent held each task (from the tasks' history),
//     with the failures and merges on it;
//   - the message flow (who wrote to whom, how often, of which kind) and
//     the last messages;
//   - tokens and cost per agent (its journal's usage lines) and per task
//     (its owners' calls while they held it);
//   - failures, each in one class after the MAST taxonomy (Cemri et al.,
//     2025): specification, coordination, verification, tooling or
//     environment, provider, budget;
//   - merges and their checks, and what the person decided.
//
// `mates report` renders it as one self-contained HTML page (no outside
// fetch: styles and the timeline's SVG inline), Markdown, or JSON. It reads
// a live team, a stopped one and an archive alike, on any store; what the
// record lacks or holds damaged (a journal cut by a crash, edited by hand,
// too large to read) is said in the report's notes, not fatal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/prices.h"
#include "core/json.h"
#include "core/status.h"
#include "llm/types.h"
#include "store/merges.h"
#include "store/message.h"
#include "store/requests.h"
#include "store/roster.h"
#include "store/task.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::report {

enum class FailureClass { kSpecification, kCoordination, kVerification, kTooling, kProvider, kBudget };
inline constexpr FailureClass kFailureClasses[] = {FailureClass::kSpecification, FailureClass::kCoordination,
                                                   FailureClass::kVerification,  FailureClass::kTooling,
                                                   FailureClass::kProvider,      FailureClass::kBudget};
// "specification", "coordination", "verification", "tooling", "provider", "budget"
std::string_view FailureClassName(FailureClass c);
// What the class covers, for a person: "Tooling or environment: …".
std::string_view FailureClassMeaning(FailureClass c);

struct Failure {
  FailureClass kind = FailureClass::kTooling;
  double at = 0;         // when (0: the record does not say)
  std::string agent;     // whose ("" for none in particular)
  int64_t task = 0;      // which task (0: none)
  std::string what;      // in words
  std::string where;     // where the record says it: "alice's journal, line 12", "merge request 3"
  int count = 1;         // like failures folded into one (the errors of one tool of one agent)
};

struct AgentReport {
  std::string name;
  std::string role;   // lead, teammate
  std::string model;
  int calls = 0;
  llm::Usage usage;
  double cost_usd = 0;
  bool cost_known = true;
  int turns = 0;        // inputs it took (messages, goals, notices)
  int tool_calls = 0;
  int tool_errors = 0;
  int compactions = 0;
  std::map<std::string, int> tools;  // tool name → calls
  double first = 0, last = 0;        // its journal's first and last times (0: none)
  std::vector<double> call_times;    // when its model calls answered (at most kMaxCallTimes, evenly picked)
};
inline constexpr size_t kMaxCallTimes = 400;

struct TaskReport {
  Task task;
  // What its owners' model calls spent while they held it in progress.
  int calls = 0;
  llm::Usage usage;
  std::optional<double> cost_usd = 0.0;  // null once a call's model has no price
  std::vector<std::string> owners;       // everyone who held it, in order
};

// An agent holding a task in progress, [from, to).
struct Bar {
  std::string agent;
  int64_t task = 0;
  double from = 0, to = 0;
  bool open = false;  // still held when the record ends
};

struct Decision {
  double at = 0;
  std::string who;   // the person ("user"), the lead, a reviewer
  std::string what;
};

struct Report {
  std::string team;
  std::string state;  // "live (host pid 4242)", "stopped", "archived 20261206T092543"
  std::string where;  // the store
  std::string lead;
  std::vector<TeamSession> sessions;  // the roster's: when each began, and from which commit
  double started = 0, ended = 0;  // the record's first and last times
  double made = 0;                // when the report was made
  std::vector<AgentReport> agents;          // the roster's order, then others with a journal
  std::vector<TaskReport> tasks;            // by id, deleted ones too
  std::vector<Bar> bars;                    // by start
  size_t messages_total = 0;
  std::vector<Message> messages;            // the last kMaxListedMessages
  std::map<std::pair<std::string, std::string>, int> flow;  // (from, to) → messages; to "*" a broadcast
  std::map<std::string, int> message_types;                 // type → messages
  std::vector<MergeRequest> merges;
  std::vector<ProtocolRequest> requests;
  std::vector<Failure> failures;  // by time, the first kMaxListed
  std::map<FailureClass, int> failure_counts;  // all of them, by class
  size_t failures_dropped = 0;                 // not kept to be listed
  std::vector<Decision> decisions;  // by time, the first kMaxListed
  // The team's totals (every journal, subagents' too) and its budget.
  int calls = 0;
  llm::Usage usage;
  double cost_usd = 0;
  bool cost_known = true;
  std::string budget;  // "" without one; else DescribeBudget's words
  // What the record lacks or holds damaged, in words.
  std::vector<std::string> notes;
};

inline constexpr size_t kMaxListedMessages = 300;
// Failures and decisions listed, and sender-recipient pairs counted apart
// (a record written to flood a report lists no more; the rest are counted).
inline constexpr size_t kMaxListed = 2000;
inline constexpr size_t kMaxFlowPairs = 1000;
// A journal is read up to this many bytes; a longer one is said in the
// notes and left out (memory stays bounded whatever a journal's size).
inline constexpr size_t kMaxJournalBytes = size_t{64} << 20;

// Reads `team`'s record from `store` (`ws`: this machine's files, for the
// journals a store keeps no copy of and the conflicts forecast here);
// `state` says which session it is. NotFound for no such team; Unavailable
// for a store out of reach. Costs are at `prices`.
Result<Report> Build(TeamStore& store, const Workspace& ws, const std::string& team, const std::string& state,
                     const agent::PriceTable& prices);

Json ToJson(const Report& r);
std::string Markdown(const Report& r);
// One page, self-contained: nothing fetched from anywhere.
std::string Html(const Report& r);

}  // namespace mates::report
