#include "agent/agent_loop.h"

#include "tools/hook_calls.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <optional>
#include <utility>

#include "agent/frames.h"
#include "core/clock.h"
#include "core/ids.h"
#include "core/log.h"
#include "core/secrets.h"
#include "core/trace_context.h"
#include "store/messenger.h"
#include "store/task.h"
#include "store/team_store.h"

namespace mates::agent {

TurnEnd TurnEndOf(std::string_view stop_reason) {
  if (stop_reason == "refusal") return TurnEnd::kRefusal;
  if (stop_reason == "max_calls") return TurnEnd::kMaxCalls;
  if (stop_reason == "interrupted") return TurnEnd::kInterrupted;
  if (stop_reason == "budget") return TurnEnd::kBudget;
  if (stop_reason == "breaker") return TurnEnd::kBreaker;
  return TurnEnd::kEndTurn;
}

namespace {

// A person's words to the agent (the CLI's, the dashboard's): what
// UserPromptSubmit hooks see (DESIGN §22).
bool IsPersonsPrompt(const Message& m) {
  return m.sender == kUserName && (m.type == MessageType::kMessage || m.type == MessageType::kBroadcast);
}

// How `turn` ended, in words and as the enum.
void SetTurnEnd(TurnResult* turn, std::string_view stop_reason) {
  turn->stop_reason = std::string(stop_reason);
  turn->end = TurnEndOf(stop_reason);
}

}  // namespace

AgentLoop::AgentLoop(AgentSpec spec, llm::Provider* provider, const tools::ToolRegistry* tools,
                     tools::ToolContext* ctx, AgentEvents* events)
    : spec_(std::move(spec)),
      provider_(provider),
      tools_(tools),
      ctx_(ctx),
      events_(events),
      breaker_(spec_.breaker, spec_.turn_costs) {
  // What a long tool says of its progress shows in the activity. (Only
  // while one of its calls runs: no team move swaps activity_ then.)
  ctx_->progress = [this](const std::string& note) {
    if (activity_) activity_->Progress(note);
  };
}

std::string AgentLoop::model() const {
  return spec_.model.empty() ? provider_->default_model() : spec_.model;
}

namespace {
// Nothing that enters a conversation (and so its journal and every later
// request) carries a key, whichever way it came: a tool, a teammate's
// message, a model that was shown one.
void RedactBlocks(std::vector<llm::ContentBlock>* blocks) {
  for (auto& b : *blocks) {
    Secrets::RedactInPlace(&b.text);
    Secrets::RedactInPlace(&b.input_json);
  }
}
}  // namespace

Status AgentLoop::AddUser(std::vector<llm::ContentBlock> blocks,
                          const std::vector<std::string>& delivered) {
  std::erase_if(blocks, [](const llm::ContentBlock& b) {
    return b.type == llm::BlockType::kText && b.text.empty();
  });
  RedactBlocks(&blocks);
  if (blocks.empty()) return Status::Ok();
  if (journal_) MATES_RETURN_IF_ERROR(journal_->AppendMessage({llm::Role::kUser, blocks}, delivered));
  for (const auto& id : delivered) delivered_.insert(id);
  conversation_.AddUser(std::move(blocks));
  return Status::Ok();
}

Status AgentLoop::AddAssistant(std::vector<llm::ContentBlock> blocks) {
  std::erase_if(blocks, [](const llm::ContentBlock& b) {
    return b.type == llm::BlockType::kText && b.text.empty();
  });
  if (blocks.empty()) blocks.push_back(llm::ContentBlock::Text("(no reply)"));
  RedactBlocks(&blocks);
  if (journal_) MATES_RETURN_IF_ERROR(journal_->AppendMessage({llm::Role::kAssistant, blocks}));
  conversation_.AddAssistant(std::move(blocks));
  return Status::Ok();
}

void AgentLoop::AddNotice(std::string text) {
  std::lock_guard<std::mutex> lock(notices_mu_);
  notices_.push_back(std::move(text));
}

bool AgentLoop::InterruptToRest(std::string why) {
  std::lock_guard<std::mutex> lock(notices_mu_);
  if (!in_turn_.load()) return false;
  rest_asked_ = true;
  rest_note_ = std::move(why);
  cancel_.Cancel();
  return true;
}

bool AgentLoop::HasPendingInput() {
  {
    std::lock_guard<std::mutex> lock(notices_mu_);
    if (!notices_.empty()) return true;
  }
  if (spec_.read_inbox && !ctx_->team.empty()) {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    auto n = InboxLocked().PendingCount();
    if (n.ok() && *n > 0) return true;
    if (Inbox* home = HomeInboxLocked()) {
      auto h = home->PendingCount();
      if (h.ok() && *h > 0) return true;
    }
  }
  // Resting: the interrupted turn's last results wait for the person.
  if (resting_.load()) return false;
  return !conversation_.empty() && conversation_.messages().back().role == llm::Role::kUser;
}

int64_t AgentLoop::PendingMessages() {
  if (!spec_.read_inbox || ctx_->team.empty()) return 0;
  std::lock_guard<std::mutex> lock(inbox_mu_);
  auto n = InboxLocked().PendingCount();
  int64_t total = n.ok() ? static_cast<int64_t>(*n) : 0;
  if (Inbox* home = HomeInboxLocked()) {
    auto h = home->PendingCount();
    if (h.ok()) total += static_cast<int64_t>(*h);
  }
  return total;
}

void AgentLoop::ReportStopped(const std::string& why) {
  if (activity_) activity_->Stopped(why);
}

Status AgentLoop::TakeInboxAndNotices() {
  std::vector<std::string> notes;
  {
    std::lock_guard<std::mutex> lock(notices_mu_);
    if (!rest_note_.empty() && !rest_asked_) notes.push_back(std::exchange(rest_note_, ""));
    notes.insert(notes.end(), notices_.begin(), notices_.end());
    notices_.clear();
  }
  if (notice_source_) {
    std::string team_news = notice_source_();
    if (!team_news.empty()) notes.push_back(std::move(team_news));
  }
  std::vector<llm::ContentBlock> blocks;
  for (auto& n : notes) blocks.push_back(llm::ContentBlock::Text(std::move(n)));
  if (!blocks.empty()) MATES_RETURN_IF_ERROR(AddUser(std::move(blocks)));
  if (!spec_.read_inbox || ctx_->team.empty()) return Status::Ok();
  if (ctx_->hooks && ctx_->hooks->Wants(hooks::Event::kUserPromptSubmit)) {
    DecidePrompts(ctx_->team);
    if (!ctx_->home_team.empty() && ctx_->home_team != ctx_->team) DecidePrompts(ctx_->home_team);
  }
  std::lock_guard<std::mutex> lock(inbox_mu_);
  MATES_RETURN_IF_ERROR(TakeInboxLocked(InboxLocked(), ""));
  if (Inbox* home = HomeInboxLocked())
    MATES_RETURN_IF_ERROR(TakeInboxLocked(*home, ctx_->home_team));
  return Status::Ok();
}

Status AgentLoop::TakeInboxLocked(Inbox& box, const std::string& team) {
  if (!box.MayHavePending()) return Status::Ok();
  Status kept;
  bool handed = false;
  // Said once the inbox is let go (the log is not written under its lock).
  std::vector<std::string> blocked;
  auto taken = box.Take(
      [&](const std::vector<Message>& delivered) {
        handed = true;
        blocked.clear();
        if (delivered.empty()) return true;
        std::vector<llm::ContentBlock> msgs;
        std::vector<std::string> ids;
        for (const auto& m : delivered) {
          ids.push_back(m.id);
          if (spec_.metrics && m.timestamp > 0) {
            spec_.metrics->Observe(telemetry::kMessageDelivery, {{"team", ctx_->team}},
                                   std::max(0.0, WallSeconds() - m.timestamp));
          }
          MessageSpan(m);
          if (IsPersonsPrompt(m)) {
            // Decided before the take (DecidePrompts); one that came
            // since is decided now.
            auto v = prompt_verdicts_.find(m.id);
            hooks::Outcome o = v != prompt_verdicts_.end() ? v->second : PromptHooks(m.content);
            if (v != prompt_verdicts_.end()) prompt_verdicts_.erase(v);
            if (o.blocked) {
              // Claude Code erases a blocked prompt: the model never reads it.
              blocked.push_back("a message from user: " + o.reason);
              continue;
            }
            msgs.push_back(llm::ContentBlock::Text(FormatTeammateMessage(m, team)));
            if (!o.context.empty()) {
              msgs.push_back(llm::ContentBlock::Text("[UserPromptSubmit hook] " + NeutraliseFrames(o.context)));
            }
            continue;
          }
          msgs.push_back(llm::ContentBlock::Text(FormatTeammateMessage(m, team)));
          // Compacted in this same look, before the call (it is in what gets summarised).
          if (m.type == MessageType::kCompactRequest) compact_requested_.store(true);
        }
        // Journaled (with the ids) before the inbox lets go of them.
        kept = AddUser(std::move(msgs), ids);
        if (!kept.ok()) return false;
        if (events_ != nullptr) events_->OnMessages(spec_.name, delivered);
        return true;
      },
      [this](const std::string& id) { return delivered_.count(id) > 0; });
  MATES_RETURN_IF_ERROR(kept);
  if (taken.ok()) {
    for (const auto& b : blocked) ReportBlocked("UserPromptSubmit", b);
  }
  if (!taken.ok() && handed) return taken.status();  // journaled, not let go: the ids keep it from coming twice
  if (!taken.ok()) {
    // A team deleted under us, say: nothing to take in.
    LogDebug(spec_.name + ": inbox: " + taken.status().message());
  }
  return Status::Ok();
}

Inbox* AgentLoop::HomeInboxLocked() {
  const std::string& home = ctx_->home_team;
  if (home.empty() || home == ctx_->team) return nullptr;
  if (!home_inbox_) home_inbox_ = ctx_->store().InboxOf(home, spec_.name);
  return home_inbox_.get();
}

Inbox& AgentLoop::InboxLocked() {
  // Made once per team it is in (its paths cost more than the look).
  if (!inbox_ || inbox_team_ != ctx_->team || inbox_store_ != &ctx_->store()) {
    inbox_ = ctx_->store().InboxOf(ctx_->team, spec_.name);
    inbox_team_ = ctx_->team;
    inbox_store_ = &ctx_->store();
  }
  return *inbox_;
}

int64_t AgentLoop::BudgetTokens() const {
  if (spec_.context.budget_tokens > 0) return spec_.context.budget_tokens;
  return provider_->ContextWindow(model()) * 3 / 4;
}

int64_t AgentLoop::RawEstimate() const {
  return EstimateTokens(conversation_.messages()) + static_cast<int64_t>(spec_.system.size() / 4);
}

int64_t AgentLoop::EstimatedTokens() const {
  int64_t raw = RawEstimate();
  if (last_reported_tokens_ > 0 && last_estimated_tokens_ > 0) {
    // Scale by how the provider counted last time (within reason).
    double ratio = static_cast<double>(last_reported_tokens_) / static_cast<double>(last_estimated_tokens_);
    ratio = std::clamp(ratio, 0.5, 3.0);
    return static_cast<int64_t>(static_cast<double>(raw) * ratio);
  }
  return raw;
}

Status AgentLoop::MaybeCompact(bool force) {
  if (conversation_.empty()) return Status::Ok();
  if (!force && EstimatedTokens() <= BudgetTokens()) return Status::Ok();
  CompactRequest req;
  req.messages = &conversation_.messages();
  req.system = spec_.system;
  req.tools = tools_->Definitions();
  req.model = spec_.model;
  req.agent_id = spec_.name + "@" + ctx_->team;
  req.identity = spec_.identity;
  req.policy = spec_.context;
  fs::path base = journal_ ? journal_->path().parent_path()
                           : ctx_->ws.AgentsDir(ctx_->team.empty() ? "default" : ctx_->team);
  req.transcript_path = base / (spec_.name + ".transcript-" +
                                std::to_string(static_cast<int64_t>(WallSeconds() * 1000)) + ".jsonl");
  if (activity_) activity_->Thinking();
  MATES_ASSIGN_OR_RETURN(CompactResult r, AutoCompact(req, *provider_, &cancel_));
  MATES_RETURN_IF_ERROR(Spent(r.usage, model()));
  if (journal_) MATES_RETURN_IF_ERROR(journal_->AppendCompaction(r.messages, req.transcript_path.string()));
  conversation_.Reset(std::move(r.messages));
  ++compactions_;
  last_reported_tokens_ = last_estimated_tokens_ = 0;  // recalibrate on the next call
  if (events_ != nullptr) {
    events_->OnCompact(spec_.name, r.tokens_before, r.tokens_after, req.transcript_path.string());
  }
  StartSession("compact");
  return Status::Ok();
}

Status AgentLoop::Spent(const llm::Usage& u, const std::string& answered_by) {
  usage_.Add(u);
  in_team_.Add(u);
  if (spec_.team_spend) spec_.team_spend->Add(ctx_->team, answered_by, u);
  if (activity_) activity_->SetUsage(in_team_.total(), in_team_.calls());
  if (journal_) return journal_->AppendUsage(u, answered_by);
  if (spec_.usage_sink) return spec_.usage_sink(u, answered_by);
  return Status::Ok();
}

Status AgentLoop::Compact() { return MaybeCompact(/*force=*/true); }

// A tool call between the person's PreToolUse and PostToolUse hooks
// (DESIGN §22): a block is the model's answer instead of the tool's, an
// updated input is what runs, what a hook adds after is read with the
// result.
tools::ToolResult AgentLoop::RunWithHooks(const llm::ContentBlock& call) {
  if (!ctx_->hooks) return tools_->Run(call, *ctx_);
  const std::vector<std::string> names = tools::HookToolNames(call.name);
  auto parsed = ParseJson(call.input_json.empty() ? "{}" : call.input_json);
  const Json input = parsed.ok() ? *parsed : Json::object();
  Json pre = tools::HookInput(*ctx_);
  pre["tool_name"] = names.front();
  pre["tool_input"] = tools::ClaudeToolInput(call.name, input, *ctx_);
  pre["tool_use_id"] = call.id;
  hooks::Outcome before = tools::RunHooks(*ctx_, hooks::Event::kPreToolUse, names, pre);
  if (before.blocked) {
    ReportBlocked("PreToolUse", DescribeCall(call) + ": " + before.reason);
    return tools::ToolResult::Error("A PreToolUse hook blocked this call:\n" + before.reason);
  }
  llm::ContentBlock run = call;
  if (before.updated_input) run.input_json = DumpJson(tools::MatesToolInput(call.name, *before.updated_input, *ctx_));
  tools::ToolResult r = tools_->Run(run, *ctx_);
  if (!before.context.empty()) r.content += "\n[PreToolUse hook: " + before.context + "]";
  Json post = pre;
  auto ran = ParseJson(run.input_json.empty() ? "{}" : run.input_json);
  post["tool_input"] = tools::ClaudeToolInput(call.name, ran.ok() ? *ran : Json::object(), *ctx_);
  post["tool_response"] = {{"output", r.content}, {"is_error", r.is_error}};
  if (call.name == "bash") post["tool_response"]["stdout"] = r.content;
  hooks::Outcome after = tools::RunHooks(*ctx_, hooks::Event::kPostToolUse, names, post);
  // The tool has run: what a hook says of it goes to the model with it.
  if (after.blocked) {
    ReportBlocked("PostToolUse", DescribeCall(call) + ": " + after.reason);
    r.content += "\n[PostToolUse hook: " + after.reason + "]";
  }
  if (!after.context.empty()) r.content += "\n[PostToolUse hook: " + after.context + "]";
  return r;
}

// Board or file progress (breaker.h): a tool that succeeded and changes
// something, other than a message (which is talk, not work).
bool AgentLoop::MadeProgress(const std::string& name, const tools::ToolResult& r) const {
  if (r.is_error || name == "SendMessage") return false;
  std::shared_ptr<const tools::Tool> tool = tools_->Find(name);
  return tool != nullptr && !tool->read_only();
}

std::vector<llm::ContentBlock> AgentLoop::RunTools(const llm::Response& reply, bool* interrupted) {
  std::vector<llm::ContentBlock> results;
  for (const auto& b : reply.content) {
    if (b.type != llm::BlockType::kToolUse) continue;
    if (before_tool_ && !cancel_.cancelled()) before_tool_();
    if (cancel_.cancelled()) {
      *interrupted = true;
      results.push_back(llm::ContentBlock::ToolResult(b.id, "interrupted by the user before this tool ran", true));
      continue;
    }
    if (!tripped_.empty()) {
      results.push_back(llm::ContentBlock::ToolResult(b.id, "not run: you were paused (" + tripped_ + ")", true));
      continue;
    }
    if (events_ != nullptr) events_->OnToolCall(spec_.name, b);
    if (activity_) activity_->Tool(b);
    // execute_tool {name} (the GenAI conventions): what the tool starts —
    // a command, a hook, an MCP request, a message — carries its context.
    telemetry::Span span = StartSpan("execute_tool " + b.name, telemetry::SpanKind::kInternal);
    span.Set("gen_ai.operation.name", std::string("execute_tool"));
    span.Set("gen_ai.tool.name", b.name);
    span.Set("gen_ai.tool.call.id", b.id);
    span.Set("gen_ai.tool.type", std::string(tools_->Find(b.name) ? "function" : "extension"));
    tools::ToolResult r = [&] {
      std::optional<ScopedTrace> in_span;
      if (span.context().valid()) in_span.emplace(span.context());
      return RunWithHooks(b);
    }();
    if (r.refused) {
      span.Fail("refused", r.refused->what);
    } else if (r.is_error) {
      span.Fail("tool_error", r.content);
    }
    if (span.recording()) TaskSpan(b, r);
    span.End();
    if (cancel_.cancelled()) *interrupted = true;
    tripped_ = breaker_.AfterTool(b.name, b.input_json, r.is_error, MadeProgress(b.name, r), r.content);
    if (events_ != nullptr) events_->OnToolResult(spec_.name, b, r);
    if (after_tool_) after_tool_(b, r);
    // A refusal (the sandbox's, a board hook's) is kept in the activity,
    // where status and the dashboard show it.
    if (r.refused && r.refused->by == tools::Refusal::By::kHook) {
      ReportBlocked(r.refused->event, DescribeCall(b) + ": " + r.refused->what);
    } else if (r.refused) {
      if (activity_) activity_->Denied(b, r.refused->what);
      Count(telemetry::kSandboxRefusals, {});
    }
    Count(telemetry::kToolCalls, {{"tool", b.name},
                                  {"outcome", r.refused ? "refused" : r.is_error ? "error" : "ok"}});
    // A tool's output (a file, a command's, a server's) is content too: it
    // cannot forge a frame (DESIGN §19).
    results.push_back(
        llm::ContentBlock::ToolResult(b.id, r.content.empty() ? "(empty)" : NeutraliseFrames(r.content), r.is_error));
  }
  return results;
}

Result<TurnResult> AgentLoop::Run(const std::string& text) {
  MATES_RETURN_IF_ERROR(AddUser({llm::ContentBlock::Text(text)}));
  return Continue();
}

Result<TurnResult> AgentLoop::RunPrompt(const std::string& text) {
  hooks::Outcome o = PromptHooks(text);
  if (o.blocked) {
    ReportBlocked("UserPromptSubmit", "a prompt: " + o.reason);
    return Status::FailedPrecondition("a UserPromptSubmit hook blocked this prompt: " + o.reason);
  }
  std::vector<llm::ContentBlock> blocks{llm::ContentBlock::Text(text)};
  if (!o.context.empty()) {
    blocks.push_back(llm::ContentBlock::Text("[UserPromptSubmit hook] " + NeutraliseFrames(o.context)));
  }
  MATES_RETURN_IF_ERROR(AddUser(std::move(blocks)));
  return Continue();
}

Result<TurnResult> AgentLoop::Continue() {
  {
    std::lock_guard<std::mutex> lock(notices_mu_);
    resting_.store(false);
    in_turn_.store(true);
  }
  // Going on after a pause (a person's message): the breakers count anew.
  if (!tripped_.empty()) breaker_.Reset();
  tripped_.clear();
  turn_cost_ = 0;
  model_failed_ = false;
  // invoke_agent {name} (the GenAI conventions): the turn, under the host's
  // session; every span of the turn is under it.
  telemetry::Span turn_span = StartSpan("invoke_agent " + spec_.name, telemetry::SpanKind::kInternal);
  turn_span.Set("gen_ai.operation.name", std::string("invoke_agent"));
  turn_span.Set("gen_ai.agent.name", spec_.name);
  turn_span.Set("gen_ai.agent.id", spec_.name + "@" + (ctx_->team.empty() ? "none" : ctx_->team));
  turn_span.Set("gen_ai.provider.name", std::string(provider_->name()));
  turn_span.Set("gen_ai.request.model", model());
  if (!ctx_->team.empty()) turn_span.Set("mates.team", ctx_->team);
  auto r = [&] {
    std::optional<ScopedTrace> in_turn;
    if (turn_span.context().valid()) in_turn.emplace(turn_span.context());
    turn_span_ = &turn_span;
    auto turn = Loop();
    turn_span_ = nullptr;
    return turn;
  }();
  if (r.ok()) {
    turn_span.Set("mates.turn.stop_reason", r->stop_reason);
    turn_span.Set("mates.turn.calls", static_cast<int64_t>(r->calls));
  } else {
    turn_span.Fail(telemetry::ErrorTypeOf(r.status().code()), r.status().message());
  }
  turn_span.End();
  JournalTurnEnd(r);
  breaker_.EndTurn(turn_cost_);
  bool rests = false;
  {
    std::lock_guard<std::mutex> lock(notices_mu_);
    in_turn_.store(false);
    // An interrupt ends the turn it reached, and no other: one a person
    // asked for during this turn too, though the turn ended on its own
    // just before it landed.
    if ((r.ok() && r->interrupted) || rest_asked_) cancel_.Reset();
    rests = std::exchange(rest_asked_, false);
    resting_.store(rests);
  }
  if (activity_ && !r.ok() && r.status().code() != StatusCode::kCancelled) {
    activity_->Failed(r.status().message(), spec_.after_failure);
  } else if (activity_ && r->end == TurnEnd::kBreaker) {
    activity_->Failed(r->why, "a message lets it go on");
  } else if (activity_) {
    activity_->Idle(rests ? "interrupted: waits for a message" : "");
  }
  return r;
}

std::string AgentLoop::OverBudget() const {
  if (spec_.budget_tokens > 0) {
    int64_t used = TotalTokens(usage_.total());
    if (used >= spec_.budget_tokens) {
      return "its budget of " + HumanCount(spec_.budget_tokens) + " tokens is spent (" + HumanCount(used) +
             " used)";
    }
  }
  return spec_.team_spend ? spec_.team_spend->Exceeded() : "";
}

Result<bool> AgentLoop::ReadyForCall(TurnResult* turn) {
  // Spent: nothing more is taken in (what waits stays for whoever goes on).
  if (std::string over = OverBudget(); !over.empty()) {
    SetTurnEnd(turn, "budget");
    turn->why = over;
    if (events_ != nullptr) events_->OnNotice(spec_.name, "no further model calls: " + over);
    return false;
  }
  if (spec_.pacer) {
    spec_.pacer->BeforeTake(spec_.name,
                            [this] { return static_cast<int64_t>(delivered_.size()) + PendingMessages(); });
  }
  MATES_RETURN_IF_ERROR(TakeInboxAndNotices());
  if (before_call_) before_call_();
  if (conversation_.empty() || conversation_.messages().back().role != llm::Role::kUser) {
    if (turn->stop_reason.empty()) SetTurnEnd(turn, "end_turn");
    return false;  // nothing to answer
  }
  if (turn->calls >= spec_.max_calls) {
    SetTurnEnd(turn, "max_calls");
    if (events_ != nullptr) {
      events_->OnNotice(spec_.name, "stopped after " + std::to_string(turn->calls) +
                                        " model calls (the limit for one turn)");
    }
    return false;
  }
  Microcompact(conversation_.mutable_messages(), spec_.context);
  Status compacted = MaybeCompact(/*force=*/compact_requested_.exchange(false));
  if (!compacted.ok()) {
    if (compacted.code() == StatusCode::kCancelled) {
      turn->interrupted = true;
      SetTurnEnd(turn, "interrupted");
      return false;
    }
    return compacted.WithContext("compacting the conversation");
  }
  MATES_RETURN_IF_ERROR(conversation_.CheckReadyForCall());
  return true;
}

// What a model call tells as it goes: its text, its retries, a team's
// backoff, to the events and the activity file.
llm::StreamCallbacks AgentLoop::Callbacks() {
  llm::StreamCallbacks cb;
  if (events_ != nullptr) {
    cb.on_text = [this](std::string_view d) { events_->OnText(spec_.name, d); };
    cb.on_retry = [this](int attempt, int of, const Status& why, double delay) {
      events_->OnRetry(spec_.name, attempt, why, delay);
      if (activity_) activity_->Retrying(attempt + 1, of, delay, why.message());
    };
  } else {
    cb.on_retry = [this](int attempt, int of, const Status& why, double delay) {
      if (activity_) activity_->Retrying(attempt + 1, of, delay, why.message());
    };
  }
  // A rate limit another agent met: the whole team waits it out.
  cb.on_backoff = [this](const std::string& why, double delay) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", delay);
    if (events_ != nullptr) {
      events_->OnNotice(spec_.name, std::string("waits ") + secs + " s with the team: the provider asked to slow down (" +
                                        why + ")");
    }
    if (activity_) activity_->Retrying(1, 1, delay, "waits with the team: " + why);
  };
  return cb;
}

Result<llm::Response> AgentLoop::CallModel(TurnResult* turn) {
  llm::Request req;
  req.model = spec_.model;
  req.system = spec_.system;
  req.tools = tools_->Definitions();
  req.max_tokens = spec_.max_tokens;
  req.cache = spec_.cache;
  req.agent_id = spec_.name + "@" + (ctx_->team.empty() ? "none" : ctx_->team);
  llm::StreamCallbacks cb = Callbacks();
  int64_t estimate = RawEstimate();  // calibrated against the provider's count below
  if (activity_) activity_->Thinking();
  // Only this thread touches the conversation: lent to the request for the
  // call, given back however the call ends, even by an exception.
  struct Lent {
    Conversation& conversation;
    llm::Request& req;
    ~Lent() { conversation.GiveBack(std::move(req.messages)); }
  };
  req.messages = conversation_.Lend();
  // chat {model} (the GenAI conventions), a client span of the provider.
  telemetry::Span span = StartSpan("chat " + model(), telemetry::SpanKind::kClient);
  span.Set("gen_ai.operation.name", std::string("chat"));
  span.Set("gen_ai.provider.name", std::string(provider_->name()));
  if (spec_.tracer && !spec_.tracer->gen_ai_latest()) span.Set("gen_ai.system", std::string(provider_->name()));
  span.Set("gen_ai.request.model", model());
  span.Set("gen_ai.request.max_tokens", static_cast<int64_t>(req.max_tokens));
  span.Set("gen_ai.agent.name", spec_.name);
  const auto started = SteadyClock::now();
  Result<llm::Response> reply = [&] {
    Lent lent{conversation_, req};
    return provider_->Complete(req, cb, &cancel_);
  }();
  Measure(reply, std::chrono::duration<double>(SteadyClock::now() - started).count());
  if (reply.ok()) {
    const llm::Usage& u = reply->usage;
    // Input counts what came from the cache too, as the conventions ask;
    // the cache's part beside it.
    span.Set("gen_ai.usage.input_tokens",
             u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens);
    span.Set("gen_ai.usage.output_tokens", u.output_tokens);
    span.Set("gen_ai.usage.cache_read.input_tokens", u.cache_read_input_tokens);
    span.Set("gen_ai.usage.cache_creation.input_tokens", u.cache_creation_input_tokens);
    if (!reply->model.empty()) span.Set("gen_ai.response.model", reply->model);
    span.Set("gen_ai.response.finish_reasons", std::vector<std::string>{reply->stop_reason});
  } else {
    span.Fail(telemetry::ErrorTypeOf(reply.status().code()), reply.status().message());
  }
  span.End();
  ++turn->calls;
  if (events_ != nullptr) events_->OnTextEnd(spec_.name);
  if (!reply.ok()) return reply.status();
  MATES_RETURN_IF_ERROR(Spent(reply->usage, reply->model.empty() ? model() : reply->model));
  turn_cost_ += CostUnits(reply->usage);
  tripped_ = breaker_.AfterCall(turn_cost_);
  last_reported_tokens_ = reply->usage.input_tokens + reply->usage.cache_read_input_tokens +
                          reply->usage.cache_creation_input_tokens;
  last_estimated_tokens_ = estimate;
  MATES_RETURN_IF_ERROR(AddAssistant(reply->content));
  turn->text = reply->Text();
  SetTurnEnd(turn, reply->stop_reason);
  return reply;
}

Result<bool> AgentLoop::AfterReply(const llm::Response& reply, TurnResult* turn, int* continuations) {
  if (reply.HasToolUse()) {
    bool interrupted = false;
    auto results = RunTools(reply, &interrupted);
    MATES_RETURN_IF_ERROR(AddUser(std::move(results)));
    if (interrupted) {
      turn->interrupted = true;
      SetTurnEnd(turn, "interrupted");
      return false;
    }
    if (reply.stop() == llm::StopReason::kMaxTokens && events_ != nullptr) {
      events_->OnNotice(spec_.name, "the reply was cut at max_tokens");
    }
    return true;
  }
  if (reply.stop() == llm::StopReason::kMaxTokens) {
    if (++*continuations > spec_.max_continuations) {
      if (events_ != nullptr) events_->OnNotice(spec_.name, "the reply was cut at max_tokens again; giving up on it");
      return false;
    }
    if (events_ != nullptr) events_->OnNotice(spec_.name, "the reply was cut at max_tokens; asking to continue");
    MATES_RETURN_IF_ERROR(AddUser({llm::ContentBlock::Text(
        "[Your reply was cut off at the output limit. Continue exactly where it stopped.]")}));
    return true;
  }
  if (reply.stop() == llm::StopReason::kPauseTurn) {
    MATES_RETURN_IF_ERROR(AddUser({llm::ContentBlock::Text("Continue.")}));
    return true;
  }
  if (reply.stop() == llm::StopReason::kRefusal && events_ != nullptr) {
    events_->OnNotice(spec_.name, "the model refused to continue");
  }
  // end_turn, stop_sequence, refusal: the turn is over. Whether to go on
  // with what arrived meanwhile (HasPendingInput) is the caller's decision.
  return false;
}

Result<TurnResult> AgentLoop::Loop() {
  TurnResult turn;
  int continuations = 0;
  int stop_blocks = 0;
  for (;;) {
    MATES_ASSIGN_OR_RETURN(bool call, ReadyForCall(&turn));
    if (!call) return turn;
    auto reply = CallModel(&turn);
    if (!reply.ok()) {
      if (reply.status().code() != StatusCode::kCancelled) {
        model_failed_ = true;
        return reply.status();
      }
      turn.interrupted = true;
      SetTurnEnd(&turn, "interrupted");
      return turn;
    }
    MATES_ASSIGN_OR_RETURN(bool again, AfterReply(*reply, &turn, &continuations));
    if (!tripped_.empty() && !turn.interrupted) {
      SetTurnEnd(&turn, "breaker");
      turn.why = "paused by a circuit breaker: " + tripped_;
      if (events_ != nullptr) events_->OnNotice(spec_.name, turn.why);
      return turn;
    }
    if (!again) {
      MATES_ASSIGN_OR_RETURN(bool kept, StopHookKeepsGoing(turn, &stop_blocks));
      if (!kept) return turn;
    }
  }
}

// The person's Stop (SubagentStop) hooks, at the end of a turn that ended
// by itself (DESIGN §22): a block is more work, the hook's words the
// model's next input. Claude Code's stop_hook_active says a turn already
// went on for one; at most kMaxStopBlocks times a turn.
Result<bool> AgentLoop::StopHookKeepsGoing(const TurnResult& turn, int* blocks) {
  constexpr int kMaxStopBlocks = 5;
  if (!ctx_->hooks || turn.interrupted || turn.end != TurnEnd::kEndTurn) return false;
  const hooks::Event e =
      tools_->scope() == tools::Scope::kSubagent ? hooks::Event::kSubagentStop : hooks::Event::kStop;
  if (!ctx_->hooks->Wants(e)) return false;
  Json in = tools::HookInput(*ctx_);
  in["stop_hook_active"] = *blocks > 0;
  in["last_assistant_message"] = turn.text;
  hooks::Outcome o = tools::RunHooks(*ctx_, e, {}, std::move(in));
  if (!o.blocked) return false;
  if (*blocks >= kMaxStopBlocks) {
    LogWarning(spec_.name + ": a " + std::string(hooks::EventName(e)) + " hook blocked " +
               std::to_string(kMaxStopBlocks) + " times in one turn; the turn ends");
    return false;
  }
  ++*blocks;
  ReportBlocked(std::string(hooks::EventName(e)), "the end of its turn: " + o.reason);
  MATES_RETURN_IF_ERROR(AddUser({llm::ContentBlock::Text("[" + std::string(hooks::EventName(e)) +
                                                         " hook] Not done yet:\n" + NeutraliseFrames(o.reason))}));
  return true;
}


void AgentLoop::DecidePrompts(const std::string& team) {
  std::unique_ptr<Inbox> box = ctx_->store().InboxOf(team, spec_.name);
  if (!box->MayHavePending()) return;
  auto waiting = box->Peek();
  if (!waiting.ok()) return;  // taken as it comes, then
  for (const auto& m : *waiting) {
    if (!IsPersonsPrompt(m) || delivered_.count(m.id) > 0 || prompt_verdicts_.count(m.id) > 0) continue;
    prompt_verdicts_.emplace(m.id, PromptHooks(m.content));
  }
}

}  // namespace mates::agent
