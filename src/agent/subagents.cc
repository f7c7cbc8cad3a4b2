#include "agent/subagents.h"

#include "core/guarded.h"

#include "agent/agent_loop.h"
#include "agent/frames.h"
#include "agent/prompts.h"

#include <optional>

namespace mates::agent {

namespace {

// A subagent's model calls for its one task (a lead's turn has --max-turns).
constexpr int kSubagentMaxCalls = 50;

}  // namespace
namespace {

// What a subagent shows: its tool calls and notices. Its text is its answer,
// which goes back to the agent that asked, not to the screen.
class SubagentEvents : public AgentEvents {
 public:
  explicit SubagentEvents(AgentEvents* to) : to_(to) {}
  void OnToolCall(const std::string& a, const llm::ContentBlock& c) override { to_->OnToolCall(a, c); }
  void OnToolResult(const std::string& a, const llm::ContentBlock& c, const tools::ToolResult& r) override {
    to_->OnToolResult(a, c, r);
  }
  void OnRetry(const std::string& a, int n, const Status& why, double d) override { to_->OnRetry(a, n, why, d); }
  void OnCompact(const std::string& a, int64_t b, int64_t f, const std::string& t) override {
    to_->OnCompact(a, b, f, t);
  }
  void OnNotice(const std::string& a, const std::string& t) override { to_->OnNotice(a, t); }

 private:
  AgentEvents* to_;
};

}  // namespace

SubagentManager::SubagentManager(llm::Provider* provider, tools::ToolContext parent_ctx,
                                 AgentEvents* events, std::function<void(std::string)> announce)
    : provider_(provider),
      parent_ctx_(std::move(parent_ctx)),
      events_(events),
      announce_(std::move(announce)),
      tools_(tools::MakeToolRegistry(tools::Scope::kSubagent)) {}

SubagentManager::~SubagentManager() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, job] : jobs_) {
      job->cancel.Cancel();
      if (job->thread.joinable()) threads.push_back(std::move(job->thread));
    }
  }
  for (auto& t : threads) t.join();
}

Result<std::string> SubagentManager::RunOne(const std::string& name, const std::string& prompt,
                                            const std::string& model, llm::CancelToken* cancel) {
  tools::ToolContext ctx = parent_ctx_;
  ctx.is_lead = false;
  ctx.subagents = nullptr;
  ctx.teams = nullptr;
  ctx.cancel = cancel;
  PromptFacts facts;
  facts.ws = ctx.ws;
  facts.name = parent_ctx_.agent;
  AgentSpec spec;
  spec.name = name;
  spec.system = SubagentSystemPrompt(facts);
  spec.identity = "You are a subagent working for '" + parent_ctx_.agent + "'.";
  spec.model = model;
  spec.max_calls = kSubagentMaxCalls;
  spec.team_spend = spend_;
  spec.usage_sink = usage_sink_;
  std::optional<SubagentEvents> events;
  if (events_ != nullptr) events.emplace(events_);
  AgentLoop loop(spec, provider_, tools_.get(), &ctx, events ? &*events : nullptr);
  // The parent's cancel (an interrupt) reaches the subagent's own call at
  // once: its token is linked under the parent's.
  CancelLink link(cancel, loop.cancel_token());
  auto r = loop.Run(prompt);
  usage_.Add(loop.usage().total());
  if (!r.ok()) return r.status();
  if (r->interrupted) return Status::Cancelled("the subagent was interrupted");
  if (r->text.empty()) return std::string("(the subagent finished without a final answer)");
  return r->text;
}

Result<std::string> SubagentManager::RunSubagent(const std::string& prompt, const std::string& model,
                                                 llm::CancelToken* cancel) {
  int n;
  {
    std::lock_guard<std::mutex> lock(mu_);
    n = next_id_++;
  }
  return RunOne(parent_ctx_.agent + "-sub" + std::to_string(n), prompt, model, cancel);
}

Result<std::string> SubagentManager::StartBackground(const std::string& prompt,
                                                     const std::string& description,
                                                     const std::string& model) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string id = "bg-" + std::to_string(next_id_++);
  auto job = std::make_unique<Job>();
  job->status = {id, description, tools::BackgroundState::kRunning, ""};
  Job* j = job.get();
  jobs_[id] = std::move(job);
  j->thread = std::thread([this, j, id, prompt, model, description] {
    Result<std::string> r = Status::Internal("the background task stopped on an unexpected error");
    NameThisThread(parent_ctx_.agent + "-" + id);
    RunGuarded("background task " + id, [&] { r = RunOne(parent_ctx_.agent + "-" + id, prompt, model, &j->cancel); });
    using tools::BackgroundState;
    BackgroundState state = j->cancel.cancelled() ? BackgroundState::kStopped
                            : r.ok()               ? BackgroundState::kCompleted
                                                   : BackgroundState::kFailed;
    std::string output = state == BackgroundState::kStopped ? "" : r.ok() ? *r : r.status().message();
    // Announced before it shows as finished: whoever sees it finished
    // (TaskOutput) finds the notice already queued for the next turn.
    if (announce_ && state != BackgroundState::kStopped) {
      announce_("<background-task id=\"" + id + "\" description=\"" + FrameAttribute(description) + "\" status=\"" +
                std::string(tools::BackgroundStateName(state)) + "\">\n" + NeutraliseFrames(output) +
                "\n</background-task>");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      j->status.state = state;
      j->status.output = output;
    }
    done_cv_.notify_all();
  });
  return id;
}

Result<tools::BackgroundStatus> SubagentManager::Output(const std::string& id, bool block,
                                                        double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound("no background task '" + id + "'");
  Job* j = it->second.get();
  if (block) {
    done_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                      [&] { return j->status.state != tools::BackgroundState::kRunning; });
  }
  return j->status;
}

void SubagentManager::InterruptAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, job] : jobs_) job->cancel.Cancel(CancelToken::kForGood);
}

Result<tools::BackgroundStatus> SubagentManager::Stop(const std::string& id) {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return Status::NotFound("no background task '" + id + "'");
    Job* j = it->second.get();
    if (j->status.state != tools::BackgroundState::kRunning) return j->status;
    j->cancel.Cancel();
  }
  // Wait for it to wind down (a tool call in flight is killed).
  std::unique_lock<std::mutex> lock(mu_);
  Job* j = jobs_[id].get();
  done_cv_.wait(lock, [&] { return j->status.state != tools::BackgroundState::kRunning; });
  return j->status;
}

}  // namespace mates::agent
