// Spend: what a team's agents used and what they may still use (DESIGN §15).
//
// - TeamUsage / ReadTeamUsage: per agent, from the usage lines of the
//   journals in `.teams/<team>/agents/` (`<name>.jsonl`; a lead's
//   subagents in `<name>.subagents.jsonl`), priced by the model each line
//   names. This is what `mates usage` prints, live or archived.
// - TeamSpend: the running total of one session against the team's budget,
//   shared by all its agents (lead, teammates, subagents) across threads.
//   It starts from what the journals hold, so a resumed team does not get
//   its budget back by restarting.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/prices.h"
#include "core/files.h"
#include "core/status.h"
#include "llm/types.h"
#include "store/roster.h"
#include "store/team_store.h"

namespace mates::agent {

struct AgentUsage {
  std::string agent;  // "lead", "alice", "lead (subagents)"
  llm::Usage usage;
  int calls = 0;
  std::map<std::string, llm::Usage> by_model;
  double cost_usd = 0;        // of the calls whose model has a price
  bool cost_known = true;     // false: some calls' model has no price
};

struct TeamUsage {
  std::vector<AgentUsage> agents;  // by name
  llm::Usage total;
  int calls = 0;
  double cost_usd = 0;
  bool cost_known = true;
};

// Prices `by_model` into `a` (cost_usd, cost_known) with CurrentPrices().
void PriceAgentUsage(AgentUsage* a);
// Reads every journal in `agents_dir`. A missing folder is an empty team.
Result<TeamUsage> ReadTeamUsage(const fs::path& agents_dir);
// The same from the copies `store` keeps of the journals of `team`'s
// members, wherever they ran (DESIGN §13), and the lead's subagents'
// journals in `agents_dir` if given (those are this machine's only);
// nullopt if the store keeps no copies (the file store: read the folder).
Result<std::optional<TeamUsage>> ReadTeamUsage(TeamStore& store, const std::string& team,
                                               const fs::path& agents_dir = {});
// "1.2M tokens (80% cache reads), $1.23" / "…, cost unknown for model-x"
std::string DescribeTeamUsage(const TeamUsage& u);
// The share of input tokens that were cache reads, 0..1 (0 without input).
double CacheReadShare(const llm::Usage& u);

class TeamSpend {
 public:
  TeamSpend(TeamBudget budget, const TeamUsage& before);

  // One model call's usage (any thread).
  void Add(const std::string& model, const llm::Usage& u);
  // "" while within the budget; else why not, in words ("the team's budget
  // of 100.0k tokens is spent: 101.2k used").
  std::string Exceeded() const;
  const TeamBudget& budget() const { return budget_; }
  int64_t tokens() const;
  double usd() const;

 private:
  const TeamBudget budget_;
  mutable std::mutex mu_;
  int64_t tokens_ = 0;  // guarded by mu_
  double usd_ = 0;      // guarded by mu_: calls with a known price only
};

}  // namespace mates::agent
