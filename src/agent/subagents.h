// SubagentManager: the `Task` tool's subagents, synchronous and in the
// background (DESIGN §5). A subagent is a fresh AgentLoop with the base
// tools only; a background one runs on a thread of its own, and when it
// finishes the parent is told at its next turn. The manager owns those
// threads: its destructor stops and joins them all.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/events.h"
#include "agent/spend.h"
#include "agent/usage.h"
#include "llm/provider.h"
#include "tools/tool.h"

namespace mates::agent {

class SubagentManager : public tools::SubagentRunner {
 public:
  // `announce` receives the notice of a finished background task.
  SubagentManager(llm::Provider* provider, tools::ToolContext parent_ctx, AgentEvents* events,
                  std::function<void(std::string)> announce);
  ~SubagentManager() override;

  Result<std::string> RunSubagent(const std::string& prompt, const std::string& model,
                                  llm::CancelToken* cancel) override;
  Result<std::string> StartBackground(const std::string& prompt, const std::string& description,
                                      const std::string& model) override;
  Result<tools::BackgroundStatus> Output(const std::string& id, bool block, double timeout_s) override;
  Result<tools::BackgroundStatus> Stop(const std::string& id) override;

  // Budgets and accounting (DESIGN §15): subagents count against `spend`
  // (may be null) and write each call's usage through `usage` (a
  // UsageJournal, shared by every subagent). Set before the first one runs.
  using UsageSink = std::function<Status(const llm::Usage&, const std::string& model)>;
  void SetSpend(std::shared_ptr<TeamSpend> spend, UsageSink usage) {
    spend_ = std::move(spend);
    usage_sink_ = std::move(usage);
  }

  // Stops every background subagent for good (its tool in flight is
  // killed); the destructor joins them.
  void InterruptAll();

  // Tokens spent by every subagent so far.
  const UsageMeter& usage() const { return usage_; }

 private:
  struct Job {
    tools::BackgroundStatus status;  // guarded by mu_
    llm::CancelToken cancel;
    std::thread thread;
  };
  Result<std::string> RunOne(const std::string& name, const std::string& prompt,
                             const std::string& model, llm::CancelToken* cancel);

  // Constant after construction.
  llm::Provider* const provider_;
  const tools::ToolContext parent_ctx_;
  AgentEvents* const events_;
  const std::function<void(std::string)> announce_;
  const std::unique_ptr<tools::ToolRegistry> tools_;

  UsageMeter usage_;
  std::shared_ptr<TeamSpend> spend_;          // set before any subagent runs
  UsageSink usage_sink_;                      // the same
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;  // guarded by mu_
  int next_id_ = 1;                                   // guarded by mu_
};

}  // namespace mates::agent
