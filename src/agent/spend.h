// Spend: what a team's agents used and what they may still use (DESIGN §15).
//
// - TeamUsage / ReadTeamUsage: per agent, from the usage lines of the
//   journals in `.teams/<team>/agents/` (`<name>.jsonl`; a lead's
//   subagents in `<name>.subagents.jsonl`; a conversation set aside by
//   --fresh in `<name>.<time>.jsonl`, shown as "<name> (earlier)"), priced
//   by the model each line names. This is what `mates usage` prints, live
//   or archived.
// - TeamSpend: the running total of one session against the team's budget,
//   shared by all its agents (lead, teammates, subagents) across threads.
//   It starts from what the journals hold, so a resumed team does not get
//   its budget back by restarting; a team the lead makes in the session
//   shares the budget and counts what was spent before it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/prices.h"
#include "core/files.h"
#include "core/status.h"
#include "core/waker.h"
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
  std::string from;           // an agent CLI's: the records read ("Codex's session rollouts in …")
  std::string unknown;        // an agent CLI that records none: why its usage is unknown
};

struct TeamUsage {
  std::vector<AgentUsage> agents;  // by name
  llm::Usage total;
  int calls = 0;
  double cost_usd = 0;
  bool cost_known = true;
};

// Prices `by_model` into `a` (cost_usd, cost_known) at `prices`. What
// follows prices at the table it is given too.
void PriceAgentUsage(AgentUsage* a, const PriceTable& prices);
// Reads every journal in `agents_dir`. A missing folder is an empty team.
Result<TeamUsage> ReadTeamUsage(const fs::path& agents_dir, const PriceTable& prices);
// The same from the copies `store` keeps of the journals of `team`'s
// members, wherever they ran (DESIGN §13), and the lead's subagents'
// journals in `agents_dir` if given (those are this machine's only);
// nullopt if the store keeps no copies (the file store: read the folder).
Result<std::optional<TeamUsage>> ReadTeamUsage(TeamStore& store, const std::string& team, const PriceTable& prices,
                                               const fs::path& agents_dir = {});
// What `team`'s agents spent, wherever it is kept: the store's copies of
// their journals, whichever machine each ran on, or where the store keeps
// none (the files), the journals in `agents_dir`; and the members that are
// agent CLIs in panes, as their own records say (AddCliMembers). `mates
// usage` and `mates report`.
Result<TeamUsage> TeamUsageOf(TeamStore& store, const std::string& team, const fs::path& agents_dir,
                              const PriceTable& prices);
// The members whose usage their own CLI recorded (a cluster's panes,
// DESIGN §28), from their activity documents (`activities`: member,
// document, as TeamStore::Activities gives them), into `team`; a member
// already there (a journal) is left as it is.
void AddCliMembers(const std::vector<std::pair<std::string, std::string>>& activities, const PriceTable& prices,
                   TeamUsage* team);
// "1.2M tokens (80% cache reads), $1.23" / "…, cost unknown for model-x"
std::string DescribeTeamUsage(const TeamUsage& u);
// A team's budget against what its agents spent (`tokens`, `usd`: its
// journals, or their activity) and what else counts (budget.from's session
// before the team was made, the teams its sessions made): "1.2k tokens (95%
// used, 800 of it by team default's session before this team was made);
// $0.0200 (12% used)". What `mates usage` and `mates status` print.
std::string DescribeBudget(const TeamBudget& b, int64_t tokens, double usd);
// The share of input tokens that were cache reads, 0..1 (0 without input).
double CacheReadShare(const llm::Usage& u);

class TeamSpend {
 public:
  // `team`'s budget, and what its journals held when the session began
  // (plus, for a team a session made, what that session had spent before).
  TeamSpend(TeamBudget budget, const TeamUsage& before, const std::string& team, const PriceTable& prices);

  // One model call's usage by an agent of `team` (any thread).
  void Add(const std::string& team, const std::string& model, const llm::Usage& u);
  // "" while within the budget; else why not, in words ("the team's budget
  // of 100.0k tokens is spent (101.2k used)", and where it went when the
  // session spent in more than one team: "(…: 80.0k in team default,
  // 21.2k in team api)").
  // The budget is the one a person set last: with Follow, changed while
  // the session runs (`mates budget set|clear`).
  std::string Exceeded() const;
  TeamBudget budget() const;
  // Follows the team's budget as a person changes it while the session
  // runs: once `changed` (woken by the team's roster) has moved, the next
  // Exceeded() asks `read` for the team's budget now and takes its limits
  // (what counts against them stays this session's). Called once, before
  // any agent uses this.
  void Follow(std::function<std::optional<TeamBudget>()> read, std::shared_ptr<Waker> changed);
  // Shares the budget with the team's other hosts (a store that spans
  // machines): `everywhere` says what the team's agents spent on every
  // machine, as the store has it now (tokens, dollars of priced calls;
  // nullopt when it cannot say this moment). While a limit is set, each
  // Exceeded() asks it and counts the larger of this session's own count
  // and the store's plus what only this session counts (what its budget
  // carries from other teams, the journals of this machine alone), so no
  // host calls the model once the team's hosts together spent the budget.
  // Called once, before any agent uses this.
  using SpentEverywhere = std::function<std::optional<std::pair<int64_t, double>>()>;
  void Share(SpentEverywhere everywhere);
  // The budget a team this session makes gets: the same, counting what the
  // session has spent so far (`from` the team the session began in).
  TeamBudget ForNewTeam() const;
  // The team the session began in.
  const std::string& team() const { return team_; }
  // What it prices the calls at (the session's Env::prices).
  const PriceTable& prices() const { return prices_; }
  // What the session spent in other teams (the ones it made) since the
  // last call: to be recorded in its own team's budget (spent_in_made).
  std::pair<int64_t, double> TakeSpentElsewhere();
  int64_t tokens() const;
  double usd() const;

 private:
  struct Part {
    std::string where;  // "in team default", "from team default"
    int64_t tokens = 0;
    double usd = 0;
  };
  std::string PartsLocked(bool in_usd) const;
  void Refresh() const;

  mutable TeamBudget budget_;  // guarded by mu_; its limits change in Refresh (const: Exceeded looks)
  const std::string team_;  // where the session began
  const PriceTable& prices_;
  mutable std::mutex mu_;
  int64_t tokens_ = 0;            // guarded by mu_
  double usd_ = 0;                // guarded by mu_: calls with a known price only
  std::vector<Part> parts_;       // guarded by mu_: the same, by where it was spent
  int64_t elsewhere_tokens_ = 0;  // guarded by mu_: not yet taken
  double elsewhere_usd_ = 0;      // guarded by mu_
  std::function<std::optional<TeamBudget>()> read_;
  std::shared_ptr<Waker> changed_;
  SpentEverywhere everywhere_;
  int64_t beside_tokens_ = 0;  // guarded by mu_: what this session counts and the store does not
  double beside_usd_ = 0;      // guarded by mu_
  mutable std::mutex refresh_mu_;  // one reader of the team's budget at a time, so none takes an older one last
  mutable uint64_t seen_ = 0;      // guarded by refresh_mu_: changed_'s generation last read
};

// What `spent` (a store's sums by model) comes to: tokens, and dollars of
// the models with a price.
std::pair<int64_t, double> PriceSpent(const std::vector<ModelSpend>& spent, const PriceTable& prices);

// What the work on `task` by `owner` spent, for a merge's provenance
// (DESIGN §30): the usage lines of the owner's journal while it held the
// task in progress — {"models": [...], "usage": {...}, "calls": N,
// "cost_usd": N|null}. Null when the journal cannot be read (an external
// CLI keeps none of mates', or it is over 64 MiB).
Json TaskWork(TeamStore& store, const std::string& team, int64_t task, const std::string& owner,
              const PriceTable& prices);

}  // namespace mates::agent
