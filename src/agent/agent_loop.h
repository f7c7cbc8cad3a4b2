// AgentLoop: one agent's tool-use loop (DESIGN §5, seed v8/v9).
//
// Before each model call: inbox messages (as <teammate-message> blocks) and
// queued notices join the pending user turn, old tool results are
// microcompacted, and the conversation is auto-compacted when it is over
// budget. Then the model is called (streaming) and every tool_use of its
// reply is run; the results form the next user turn. The loop repeats while
// the model stops for tool_use. A failing tool, an unknown tool or bad input
// becomes an error result the model reads; nothing kills the loop. A reply
// cut at max_tokens is continued (a bounded number of times); a refusal ends
// the turn and says so. Every change to the conversation is journaled first,
// so a restart resumes it.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/breaker.h"
#include "agent/activity.h"
#include "agent/context.h"
#include "agent/conversation.h"
#include "agent/events.h"
#include "agent/journal.h"
#include "agent/pacer.h"
#include "agent/spend.h"
#include "agent/usage.h"
#include "core/env.h"
#include "hooks/hooks.h"
#include "llm/provider.h"
#include "store/team_store.h"
#include "telemetry/metrics.h"
#include "telemetry/trace.h"
#include "tools/tool.h"

namespace mates::agent {

struct AgentSpec {
  std::string name;         // the member name ("lead", "frontend", …)
  std::string system;       // the system prompt
  std::string identity;     // re-injected after compaction
  std::string model;        // "" = the provider's default
  int max_tokens = 8192;
  int max_calls = 100;      // model calls per Run/Continue
  int max_continuations = 3;  // replies cut at max_tokens continued at most this often
  bool read_inbox = false;  // take the inbox into each turn (lead and teammates)
  ContextPolicy context;
  // Budgets (DESIGN §15): over its own (every token read or written, 0 =
  // none) or its team's, the agent makes no further model call: the turn
  // ends with stop_reason "budget". The tool in progress finishes first.
  int64_t budget_tokens = 0;
  std::shared_ptr<TeamSpend> team_spend;  // shared with the team's other agents; may be null
  // What the host counts (DESIGN §29: model calls, tools, deliveries,
  // refusals); shared with its other agents; may be null.
  std::shared_ptr<telemetry::Metrics> metrics;
  // Where its spans go (DESIGN §29: invoke_agent per turn, chat per model
  // call, execute_tool per tool, the messages it takes in, the tasks it
  // completes), under the host's session; null = none.
  std::shared_ptr<telemetry::Tracer> tracer;
  // Prompt-caching breakpoints in requests (Anthropic); off only for the
  // benchmark's naive baseline.
  bool cache = true;
  // Without a journal of its own (a subagent): where each call's usage is
  // written (and the model that answered).
  std::function<Status(const llm::Usage&, const std::string& model)> usage_sink;
  // What the agent does after a turn fails, in words for its activity
  // (DESIGN §20): its host's policy.
  std::string after_failure = "waits for its next message, which tries again";
  // Circuit breakers (breaker.h): a turn one trips ends with stop_reason
  // "breaker" and `why`. `turn_costs` is shared by the host's agents.
  BreakerLimits breaker;
  std::shared_ptr<TurnCosts> turn_costs;
  // A replay's pacer (pacer.h): asked before each take of the inbox; null
  // in every other session.
  std::shared_ptr<Pacer> pacer;
  // Its host's parts (core/env.h), which outlive the agent: its status file
  // (`<name>.status.json` beside its journal, DESIGN §11) is written by
  // their `files` and priced at their `prices`; null: none is written (a
  // subagent, an agent made by hand).
  const Env* host_env = nullptr;
};

// How a turn ended: the provider's stop reason or the loop's own, mapped
// once (TurnEndOf); callers decide on this, the text is for people.
enum class TurnEnd {
  kEndTurn,      // the model finished (end_turn, stop_sequence, …)
  kRefusal,      // the model refused
  kMaxCalls,     // the turn hit its limit of model calls
  kInterrupted,  // interrupted (a person, a stop)
  kBudget,       // a budget is spent: no further model call
  kBreaker,      // a circuit breaker paused the agent (breaker.h)
};
TurnEnd TurnEndOf(std::string_view stop_reason);

struct TurnResult {
  std::string text;         // the final reply's text
  TurnEnd end = TurnEnd::kEndTurn;
  std::string stop_reason;  // the same in words: end_turn, refusal, max_calls, interrupted, budget, …
  std::string why;          // budget: which budget is spent, in words
  int calls = 0;
  bool interrupted = false;
};

class AgentLoop {
 public:
  // `provider`, `tools`, `ctx` and `events` (may be null) outlive the loop.
  AgentLoop(AgentSpec spec, llm::Provider* provider, const tools::ToolRegistry* tools,
            tools::ToolContext* ctx, AgentEvents* events);
  AgentLoop(const AgentLoop&) = delete;
  AgentLoop& operator=(const AgentLoop&) = delete;

  // Journals to `path` from now on; with `resume`, first takes the
  // conversation it holds (tool calls a crash left unanswered are answered
  // with an error that says so). The agent's activity file
  // (`<name>.status.json`, DESIGN §11) is kept beside it from now on.
  // With `copy` (a store's copy of the journal, DESIGN §13), the file and
  // the copy are made to agree first (Journal::Reconcile: another machine
  // may have gone on with the agent), and both are written from then on;
  // `reconciled`: they were made to agree already, and that many lines of
  // the file are in the copy (what Journal::Reconcile returned).
  Status AttachJournal(const fs::path& path, bool resume, std::unique_ptr<JournalCopy> copy = nullptr,
                       std::optional<int64_t> reconciled = std::nullopt);
  // Where a host took the agent up last, as its journal says ("" if it
  // never said); and this host's `place`, journaled when it differs.
  const std::string& journaled_place() const { return journaled_place_; }
  Status JournalPlace(const std::string& place);
  // The agent will work no more (its activity file says `stopped`, why).
  void ReportStopped(const std::string& why);
  // A hook of the person's blocked something (its activity keeps it).
  void ReportBlocked(const std::string& event, const std::string& what);
  // Into spec_.metrics, if any: `family` with the agent's labels added; a
  // model call's duration and tokens.
  void Count(std::string_view family, telemetry::Labels labels);
  void Measure(const Result<llm::Response>& reply, double seconds);

  // Adds `text` as the user's and works until the model ends its turn.
  Result<TurnResult> Run(const std::string& text);
  // The same for what a person typed (a goal, a line of the REPL): it
  // passes the person's UserPromptSubmit hooks first (DESIGN §22); a block
  // is FailedPrecondition with the hook's words, and nothing is added.
  Result<TurnResult> RunPrompt(const std::string& text);
  // Works on what is pending (inbox, notices, a resumed conversation).
  Result<TurnResult> Continue();

  // Text for the next turn (background work finished, teammates idle…).
  // Thread-safe.
  void AddNotice(std::string text);
  // Asked before each model call for text to add (e.g. the team's status,
  // coalesced); "" = nothing. Set before the first Run.
  void SetNoticeSource(std::function<std::string()> source) { notice_source_ = std::move(source); }
  // Called before each model call, after the inbox is taken in (e.g. a
  // plan approval that lifts plan mode).
  void SetBeforeCall(std::function<void()> hook) { before_call_ = std::move(hook); }
  // Called before each tool runs; an interrupt it makes (Interrupt) stops
  // the tool from running (e.g. its host no longer hosts this agent).
  void SetBeforeTool(std::function<void()> hook) { before_tool_ = std::move(hook); }
  // Called after each tool ran, with its call and result (e.g. the host's
  // conflict forecast hears of a write, DESIGN §30). On the loop's thread.
  using AfterTool = std::function<void(const llm::ContentBlock& call, const tools::ToolResult& result)>;
  void SetAfterTool(AfterTool hook) { after_tool_ = std::move(hook); }
  // Continues the journal at `path` (the lead moving to team `to`): the
  // whole conversation is written there first (and to `copy`, the store's
  // copy of it there, if any). The activity it leaves in the team before
  // says where it works now, or, `back_home`, that it went back.
  Status MoveJournal(const fs::path& path, std::unique_ptr<JournalCopy> copy = nullptr,
                     const std::string& to = "", bool back_home = false);
  bool HasPendingInput();
  // Unread messages in its inbox (and its home team's, for a lead away).
  int64_t PendingMessages();
  // Stops the current model call or tool from another thread; the turn
  // returns `interrupted`. An interrupt that lands between turns stops the
  // next one (nothing erases it but that turn's end, or ClearInterrupt);
  // kForGood stops every turn from now on (an agent being stopped).
  void Interrupt(CancelToken::Strength strength = CancelToken::kThisCall) { cancel_.Cancel(strength); }
  // Forgets an interrupt that reached no turn (a person starting a new one).
  void ClearInterrupt() { cancel_.Reset(); }
  // A person's interrupt (`mates interrupt`, the page, attach's Ctrl-C,
  // DESIGN §27): ends the turn now running as Interrupt does, and the agent
  // rests — what the turn left unanswered is not input (HasPendingInput)
  // until a message or notice comes; `why` is the first thing it is told
  // then. False, and nothing done, when no turn runs. Thread-safe.
  bool InterruptToRest(std::string why);
  // Resting after InterruptToRest, until its next turn. Thread-safe.
  bool resting() const { return resting_.load(); }
  // A turn runs now (Continue). Thread-safe.
  bool in_turn() const { return in_turn_.load(); }
  llm::CancelToken* cancel_token() { return &cancel_; }

  // Compacts now (the REPL's /compact).
  Status Compact();
  // Compacts before the next model call (a compact_request from the lead).
  // Thread-safe.
  void RequestCompaction() { compact_requested_.store(true); }
  // "" while the agent may call the model; else which budget is spent.
  std::string OverBudget() const;

  const Conversation& conversation() const { return conversation_; }
  const UsageMeter& usage() const { return usage_; }
  const AgentSpec& spec() const { return spec_; }
  std::string model() const;
  // Ids of inbox messages already taken in (for the drain).
  const std::set<std::string>& delivered() const { return delivered_; }

 private:
  Result<TurnResult> Loop();
  // A span of spec_.tracer's under the thread's current one (else the
  // session); nothing without a tracer.
  telemetry::Span StartSpan(std::string name, telemetry::SpanKind kind);
  // The spans of a delivered message (from its send to now) and of a task
  // this tool call completed (from its claim to now).
  void MessageSpan(const Message& m);
  void TaskSpan(const llm::ContentBlock& call, const tools::ToolResult& r);
  void AttachActivity(const fs::path& dir);
  // Loop's phases: take in what is pending and check there is something to
  // answer (false: the turn ends); one model call, its reply journaled;
  // the reply's tools run and whether another call follows.
  Result<bool> ReadyForCall(TurnResult* turn);
  Result<llm::Response> CallModel(TurnResult* turn);
  llm::StreamCallbacks Callbacks();
  Result<bool> AfterReply(const llm::Response& reply, TurnResult* turn, int* continuations);
  Status AddUser(std::vector<llm::ContentBlock> blocks, const std::vector<std::string>& delivered = {});
  // A turn that did not end as the model meant, into the journal.
  void JournalTurnEnd(const Result<TurnResult>& r);
  Status AddAssistant(std::vector<llm::ContentBlock> blocks);
  Status TakeInboxAndNotices();
  // This agent's inbox in its team now; inbox_mu_ held.
  Inbox& InboxLocked();
  // One call's usage: counted, journaled, shown.
  Status Spent(const llm::Usage& u, const std::string& answered_by);
  Status MaybeCompact(bool force);
  int64_t BudgetTokens() const;
  int64_t EstimatedTokens() const;  // calibrated
  int64_t RawEstimate() const;      // characters / 4
  std::vector<llm::ContentBlock> RunTools(const llm::Response& reply, bool* interrupted);
  tools::ToolResult RunWithHooks(const llm::ContentBlock& call);
  Result<bool> StopHookKeepsGoing(const TurnResult& turn, int* blocks);
  // The person's SessionStart hooks (`source`: startup, resume, compact);
  // what they add joins the next turn.
  void StartSession(const std::string& source);
  // UserPromptSubmit for a person's `text` (a prompt, or a message from
  // `user`), as Claude Code reads it.
  hooks::Outcome PromptHooks(const std::string& text);
  // Messages from `user` waiting in the agent's inbox in `team` get their
  // UserPromptSubmit verdicts before they are taken (a hook may take its
  // time; no inbox is held meanwhile).
  void DecidePrompts(const std::string& team);

  bool MadeProgress(const std::string& name, const tools::ToolResult& r) const;

  // Constant after construction.
  const AgentSpec spec_;
  llm::Provider* const provider_;
  const tools::ToolRegistry* const tools_;
  tools::ToolContext* const ctx_;
  AgentEvents* const events_;

  // Owned by the agent's thread.
  Breaker breaker_;
  std::string tripped_;     // why a breaker paused the turn now running ("" = none)
  // The turn's span while it runs (this thread's), for the links of what
  // it takes in.
  telemetry::Span* turn_span_ = nullptr;
  double turn_cost_ = 0;    // what the turn now running has cost (CostUnits)
  Conversation conversation_;
  std::optional<Journal> journal_;
  std::unique_ptr<ActivityFile> activity_;
  std::set<std::string> delivered_;
  UsageMeter usage_;
  UsageMeter in_team_;  // what its journal in its team now holds: its activity's
  llm::CancelToken cancel_;
  int64_t last_reported_tokens_ = 0;  // the provider's count for the last call
  int64_t last_estimated_tokens_ = 0;  // our raw estimate for the same call
  int compactions_ = 0;
  std::string journaled_place_;
  std::atomic<bool> compact_requested_{false};
  bool model_failed_ = false;  // the turn's failure was its model call's (the loop's thread)

  std::function<std::string()> notice_source_;
  std::function<void()> before_call_;
  std::function<void()> before_tool_;
  AfterTool after_tool_;

  // The lead's session asks HasPendingInput from its own thread too.
  std::mutex inbox_mu_;
  std::unique_ptr<Inbox> inbox_;  // guarded by inbox_mu_, with what it was made for:
  std::string inbox_team_;
  const TeamStore* inbox_store_ = nullptr;  // the store inbox_ is of
  // A lead away from its home team (ToolContext::home_team) reads its inbox
  // there too: what a person sends it there reaches it.
  std::unique_ptr<Inbox> home_inbox_;  // guarded by inbox_mu_
  Inbox* HomeInboxLocked();            // null: at home, or no home team
  // Takes what waits in `box` into the conversation, journaled first;
  // `team` (if not "") is said with each message.
  Status TakeInboxLocked(Inbox& box, const std::string& team);

  std::mutex notices_mu_;
  std::deque<std::string> notices_;  // guarded by notices_mu_
  // InterruptToRest: asked during the turn now running (cleared, with
  // the cancel, at its end), the words told at the next turn.
  bool rest_asked_ = false;  // guarded by notices_mu_
  std::string rest_note_;    // guarded by notices_mu_
  std::atomic<bool> resting_{false};
  std::atomic<bool> in_turn_{false};

  // What the UserPromptSubmit hooks said of messages from `user` not yet
  // taken in, by id (DecidePrompts); the agent's thread's own.
  std::map<std::string, hooks::Outcome> prompt_verdicts_;
};

}  // namespace mates::agent
