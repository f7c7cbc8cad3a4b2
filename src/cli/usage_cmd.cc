// mates usage [--team T] [--json] [--archived [STAMP]] [--store URL]
//
// What a team's agents spent (DESIGN §15): per agent the calls, input
// (uncached, cache writes, cache reads), output and cost, then the team's
// total and its budget, all from the usage lines of the agents' journals:
// a live team, one whose host is gone, or an archived one. Costs come from
// the price table (mates --prices FILE to change it); a model without a
// price shows its tokens and "cost unknown".
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/spend.h"
#include "agent/usage.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/json.h"
#include "core/names.h"
#include "pg/store.h"
#include "store/roster.h"

namespace mates::cli {
namespace {

struct UsageArgs {
  std::string team = "default";
  std::string store;
  bool json = false;
  ArchivedChoice archived;
};

Json CostJson(double usd, bool known) { return known ? Json(usd) : Json(nullptr); }

Json UsageJson(const agent::TeamUsage& u, const TeamConfig& team) {
  Json agents = Json::array();
  for (const auto& a : u.agents) {
    Json models = Json::object();
    for (const auto& [model, mu] : a.by_model) {
      auto cost = agent::CostUsd(model, mu);
      models[model.empty() ? "(unknown)" : model] = {{"usage", llm::UsageToJson(mu)},
                                                      {"cost_usd", cost ? Json(*cost) : Json(nullptr)}};
    }
    agents.push_back({{"agent", a.agent},
                      {"calls", a.calls},
                      {"usage", llm::UsageToJson(a.usage)},
                      {"tokens", agent::TotalTokens(a.usage)},
                      {"cost_usd", CostJson(a.cost_usd, a.cost_known)},
                      {"priced_cost_usd", a.cost_usd},
                      {"models", models}});
  }
  Json j = {{"team", team.name},
            {"agents", agents},
            {"calls", u.calls},
            {"usage", llm::UsageToJson(u.total)},
            {"tokens", agent::TotalTokens(u.total)},
            {"cache_read_share", agent::CacheReadShare(u.total)},
            {"cost_usd", CostJson(u.cost_usd, u.cost_known)},
            {"priced_cost_usd", u.cost_usd}};
  j["budget"] = nullptr;
  if (const TeamBudget& b = team.budget; b.any()) {
    // What counts against it: the journals, what the session that made the
    // team had spent before it, and what its sessions spent in teams they made.
    Json budget = TeamBudgetToJson(b);
    budget["used"] = {{"tokens", agent::TotalTokens(u.total) + b.counted_tokens()},
                      {"usd", u.cost_usd + b.counted_usd()}};
    j["budget"] = std::move(budget);
  }
  return j;
}

std::string Cell(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : std::string(width - s.size(), ' ') + s + " ";
}

std::string Render(const agent::TeamUsage& u, const TeamConfig& team) {
  using agent::HumanCount;
  std::ostringstream o;
  o << "team " << team.name << ": " << agent::DescribeTeamUsage(u) << "\n\n";
  o << "AGENT               " << Cell("CALLS", 6) << Cell("INPUT", 9) << Cell("CACHE READ", 11)
    << Cell("CACHE WRITE", 12) << Cell("OUTPUT", 9) << " COST\n";
  auto row = [&](const std::string& name, int calls, const llm::Usage& x, const std::string& cost) {
    std::string n = name.size() > 19 ? name.substr(0, 18) + "…" : name;
    o << n << std::string(n.size() < 20 ? 20 - n.size() : 1, ' ') << Cell(std::to_string(calls), 6)
      << Cell(HumanCount(x.input_tokens), 9) << Cell(HumanCount(x.cache_read_input_tokens), 11)
      << Cell(HumanCount(x.cache_creation_input_tokens), 12) << Cell(HumanCount(x.output_tokens), 9) << " "
      << cost << "\n";
  };
  auto cost = [](double usd, bool known) {
    if (known) return agent::FormatCost(usd);
    return usd > 0 ? agent::FormatCost(usd) + " + unknown" : std::string("unknown");
  };
  for (const auto& a : u.agents) row(a.agent, a.calls, a.usage, cost(a.cost_usd, a.cost_known));
  row("total", u.calls, u.total, cost(u.cost_usd, u.cost_known));
  if (team.budget.any()) {
    o << "\nbudget: " << agent::DescribeBudget(team.budget, agent::TotalTokens(u.total), u.cost_usd)
      << "\n";
  }
  if (!u.cost_known) {
    o << "\nSome calls used a model without a price; mates --prices FILE adds it (see docs/design.md §15).\n";
  }
  return o.str();
}

// A team on PostgreSQL: its members' journals as the database keeps them,
// whichever machine each ran on.
int ShowStoreUsage(const UsageArgs& a, pg::Store& database, const Workspace& ws) {
  std::unique_ptr<TeamStore> store = pg::StoreTeams(database);
  auto team = store->LoadTeam(a.team);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), ws, a.team, a.archived));
  auto u = agent::ReadTeamUsage(*store, a.team);
  if (!u.ok()) return Fail(u.status());
  agent::TeamUsage usage = u->value_or(agent::TeamUsage{});
  std::cout << (a.json ? DumpJsonPretty(UsageJson(usage, *team)) + "\n" : Render(usage, *team)) << std::flush;
  return 0;
}

int ShowUsage(Globals& g, const UsageArgs& a) {
  if (Status s = ValidateName("team name", a.team); !s.ok()) return Fail(s);
  // An archive is this workspace's files, whichever store the team was in.
  if (!a.archived.given()) {
    auto database = OpenChosenStore(a.store);
    if (!database.ok()) return Fail(database.status());
    if (*database) return ShowStoreUsage(a, **database, g.ws());
  }
  auto ws = ReadingWorkspace(g, a.team, a.archived);
  if (!ws.ok()) return Fail(ws.status());
  auto team = Roster(*ws).Load(a.team);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), g.ws(), a.team, a.archived));
  auto u = agent::ReadTeamUsage(ws->AgentsDir(a.team));
  if (!u.ok()) return Fail(u.status());
  std::cout << (a.json ? DumpJsonPretty(UsageJson(*u, *team)) + "\n" : Render(*u, *team)) << std::flush;
  return 0;
}

}  // namespace

void AddUsageCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<UsageArgs>();
  CLI::App* cmd = app.add_subcommand("usage", "Tokens and cost per agent and for the team, from the journals");
  cmd->add_option("--team", a->team, "The team")->envname("MATES_TEAM")->capture_default_str();
  cmd->add_flag("--json", a->json, "One JSON document");
  AddArchivedOption(cmd, a->archived);
  AddStoreOption(cmd, a->store);
  cmd->callback([&g, a] { g.action = [&g, a] { return ShowUsage(g, *a); }; });
}

}  // namespace mates::cli
