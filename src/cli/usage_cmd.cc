// mates usage [--team T] [--json] [--archived [STAMP]] [--store URL]
// mates usage --all [--json] [--store URL]
//
// What a team's agents spent (DESIGN §15): per agent the calls, input
// (uncached, cache writes, cache reads), output and cost, then the team's
// total and its budget, all from the usage lines of the agents' journals:
// a live team, one whose host is gone, or an archived one. Costs come from
// the price table (mates --prices FILE to change it); a model without a
// price shows its tokens and "cost unknown". With --all: every team of the
// store and every archive of this workspace, a line each, and their sum.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "agent/spend.h"
#include "agent/usage.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/names.h"
#include "store/archive.h"

namespace mates::cli {
namespace {

struct UsageArgs {
  bool json = false;
  bool all = false;
  ArchivedChoice archived;
};

Json CostJson(double usd, bool known) { return known ? Json(usd) : Json(nullptr); }

// A team's budget and what counts against it: the journals, what the
// session that made the team had spent before it, and what its sessions
// spent in teams they made. null for no budget.
Json BudgetJson(const agent::TeamUsage& u, const TeamBudget& b) {
  if (!b.any()) return nullptr;
  Json budget = TeamBudgetToJson(b);
  budget["used"] = {{"tokens", agent::TotalTokens(u.total) + b.counted_tokens()}, {"usd", u.cost_usd + b.counted_usd()}};
  return budget;
}

// A team's sums: calls, tokens, cache-read share, cost.
Json TotalsJson(const agent::TeamUsage& u) {
  return {{"calls", u.calls},
          {"usage", llm::UsageToJson(u.total)},
          {"tokens", agent::TotalTokens(u.total)},
          {"cache_read_share", agent::CacheReadShare(u.total)},
          {"cost_usd", CostJson(u.cost_usd, u.cost_known)},
          {"priced_cost_usd", u.cost_usd}};
}

Json UsageJson(const agent::TeamUsage& u, const TeamConfig& team, const agent::PriceTable& prices) {
  Json agents = Json::array();
  for (const auto& a : u.agents) {
    Json models = Json::object();
    for (const auto& [model, mu] : a.by_model) {
      auto cost = prices.Cost(model, mu);
      models[model.empty() ? "(unknown)" : model] = {{"usage", llm::UsageToJson(mu)},
                                                      {"cost_usd", cost ? Json(*cost) : Json(nullptr)}};
    }
    if (!a.unknown.empty()) {
      agents.push_back({{"agent", a.agent}, {"calls", nullptr}, {"usage", nullptr}, {"tokens", nullptr},
                        {"cost_usd", nullptr}, {"unknown", a.unknown}});
      continue;
    }
    agents.push_back({{"agent", a.agent},
                      {"from", a.from.empty() ? Json(nullptr) : Json(a.from)},
                      {"calls", a.calls},
                      {"usage", llm::UsageToJson(a.usage)},
                      {"tokens", agent::TotalTokens(a.usage)},
                      {"cost_usd", CostJson(a.cost_usd, a.cost_known)},
                      {"priced_cost_usd", a.cost_usd},
                      {"models", models}});
  }
  Json j = {{"team", team.name}, {"agents", agents}};
  j.update(TotalsJson(u));
  j["budget"] = BudgetJson(u, team.budget);
  return j;
}

std::string Cell(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : std::string(width - s.size(), ' ') + s + " ";
}

std::string CostCell(double usd, bool known) {
  if (known) return agent::FormatCost(usd);
  return usd > 0 ? agent::FormatCost(usd) + " + unknown" : std::string("unknown");
}

// A table of usage, a row per agent or team: `first` names the first
// column, `width` its width (a longer name is cut to it).
class UsageTable {
 public:
  UsageTable(std::ostringstream& o, const std::string& first, size_t width) : o_(o), width_(width) {
    o_ << first << std::string(width_ > first.size() ? width_ - first.size() : 1, ' ')
       << Cell("CALLS", 6) << Cell("INPUT", 9) << Cell("CACHE READ", 11) << Cell("CACHE WRITE", 12)
       << Cell("OUTPUT", 9) << " COST\n";
  }
  void Row(const std::string& name, int calls, const llm::Usage& x, const std::string& cost) {
    using agent::HumanCount;
    std::string n = name.size() > width_ - 1 ? name.substr(0, width_ - 2) + "…" : name;
    o_ << n << std::string(n.size() < width_ ? width_ - n.size() : 1, ' ')
       << Cell(std::to_string(calls), 6) << Cell(HumanCount(x.input_tokens), 9)
       << Cell(HumanCount(x.cache_read_input_tokens), 11)
       << Cell(HumanCount(x.cache_creation_input_tokens), 12)
       << Cell(HumanCount(x.output_tokens), 9) << " " << cost << "\n";
  }
  void Note(const std::string& name, const std::string& what) {
    o_ << name << std::string(name.size() < width_ ? width_ - name.size() : 1, ' ') << what << "\n";
  }

 private:
  std::ostringstream& o_;
  size_t width_;
};

const char kUnpricedHint[] =
    "\nSome calls used a model without a price; mates --prices FILE adds it (`mates help` shows the file's "
    "form).\n";

std::string Render(const agent::TeamUsage& u, const TeamConfig& team) {
  std::ostringstream o;
  o << "team " << team.name << ": " << agent::DescribeTeamUsage(u) << "\n\n";
  UsageTable table(o, "AGENT", 20);
  bool from_clis = false;
  for (const auto& a : u.agents) {
    if (!a.unknown.empty()) {
      table.Note(a.agent, "unknown: " + a.unknown);
      continue;
    }
    from_clis = from_clis || !a.from.empty();
    table.Row(a.agent + (a.from.empty() ? "" : " *"), a.calls, a.usage, CostCell(a.cost_usd, a.cost_known));
  }
  table.Row("total", u.calls, u.total, CostCell(u.cost_usd, u.cost_known));
  if (team.budget.any()) {
    o << "\nbudget: " << agent::DescribeBudget(team.budget, agent::TotalTokens(u.total), u.cost_usd)
      << "\n";
  }
  if (from_clis) {
    o << "\n* an agent CLI in a pane: as its own records say";
    std::set<std::string> from;
    for (const auto& a : u.agents) {
      if (!a.from.empty()) from.insert(a.from);
    }
    for (const auto& f : from) o << "\n    " << f;
    o << "\n";
  }
  if (!u.cost_known) o << kUnpricedHint;
  return o.str();
}

int ShowUsage(Globals& g, const UsageArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  auto reading = OpenReadingStore(g, g.team, a.archived);
  if (!reading.ok()) return Fail(reading.status());
  TeamStore* store = reading->store.get();
  const Workspace& ws = reading->ws;
  auto team = store->LoadTeam(g.team);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), g.ws(), g.team, a.archived));
  auto u = agent::TeamUsageOf(*store, g.team, ws.AgentsDir(g.team), g.price_table);
  if (!u.ok()) return Fail(u.status());
  std::cout << (a.json ? DumpJsonPretty(UsageJson(*u, *team, g.price_table)) + "\n" : Render(*u, *team)) << std::flush;
  return 0;
}

// One line of `usage --all`: a team of the store, or an archive here.
struct TeamLine {
  std::string team;
  std::string stamp;  // an archive's; empty for a team of the store
  Result<agent::TeamUsage> usage;
};

std::string LineName(const TeamLine& l) {
  return l.stamp.empty() ? l.team : l.team + " (deleted " + l.stamp + ")";
}

// Every team of the store, then every archive of this workspace (oldest
// first), a line each, and their sum. A team whose journals cannot be read
// is said on its line, and the command fails once all is shown.
int ShowAllUsage(Globals& g, const UsageArgs& a) {
  std::vector<TeamLine> lines;
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok()) return Fail(store.status());
  std::string where = (*store)->where();
  if ((*store)->spans_machines()) where += " (archives in " + g.ws().root().string() + ")";
  auto teams = (*store)->ListTeams();
  if (!teams.ok()) return Fail(teams.status());
  for (const auto& t : *teams) {
    auto u = agent::TeamUsageOf(**store, t, g.ws().AgentsDir(t), g.price_table);
    if (!u.ok() && u.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
    lines.push_back({t, "", std::move(u)});
  }
  auto archives = ListArchives(g.ws());
  if (!archives.ok()) return Fail(archives.status());
  for (const auto& ar : *archives) {
    lines.push_back(
        {ar.team, ar.stamp, agent::ReadTeamUsage(Workspace(ar.root).AgentsDir(ar.team), g.price_table)});
  }
  agent::TeamUsage sum;
  int unreadable = 0;
  for (const auto& l : lines) {
    if (!l.usage.ok()) {
      ++unreadable;
      continue;
    }
    sum.calls += l.usage->calls;
    sum.total += l.usage->total;
    sum.cost_usd += l.usage->cost_usd;
    sum.cost_known = sum.cost_known && l.usage->cost_known;
  }
  if (a.json) {
    Json teams = Json::array();
    for (const auto& l : lines) {
      Json t = {{"team", l.team}, {"archived", l.stamp.empty() ? Json(nullptr) : Json(l.stamp)}};
      if (l.usage.ok()) {
        t.update(TotalsJson(*l.usage));
      } else {
        t["error"] = l.usage.status().message();
      }
      teams.push_back(std::move(t));
    }
    Json j = {{"where", where}, {"teams", teams}};
    j.update(TotalsJson(sum));
    std::cout << DumpJsonPretty(j) << std::endl;
  } else if (lines.empty()) {
    std::cout << "no teams in " << where << "\n" << std::flush;
  } else {
    std::ostringstream o;
    const size_t archived = archives->size(), live = lines.size() - archived;
    o << "teams in " << where << ": " << live << (live == 1 ? " team, " : " teams, ") << archived
      << " deleted; " << agent::DescribeTeamUsage(sum) << "\n\n";
    size_t width = 6;  // "total "
    for (const auto& l : lines) width = std::max(width, LineName(l).size() + 2);
    UsageTable table(o, "TEAM", width);
    for (const auto& l : lines) {
      if (l.usage.ok()) {
        table.Row(LineName(l), l.usage->calls, l.usage->total,
                  CostCell(l.usage->cost_usd, l.usage->cost_known));
      } else {
        table.Note(LineName(l), "cannot be read: " + l.usage.status().message());
      }
    }
    table.Row("total", sum.calls, sum.total, CostCell(sum.cost_usd, sum.cost_known));
    if (!sum.cost_known) o << kUnpricedHint;
    std::cout << o.str() << std::flush;
  }
  if (unreadable > 0) {
    return Fail(Status::IOError("the journals of " + std::to_string(unreadable) +
                                (unreadable == 1 ? " team" : " teams") +
                                " could not be read; the total leaves them out"));
  }
  return 0;
}

int RunUsage(Globals& g, UsageArgs a) {
  if (a.all) {
    if (g.team_from == TeamFrom::kFlag) return Usage("usage --all sums every team: leave out --team");
    if (a.archived.given())
      return Usage("usage --all takes in the archives already: leave out --archived");
    return ShowAllUsage(g, a);
  }
  return ShowUsage(g, a);
}

struct BudgetArgs {
  std::optional<int64_t> tokens;
  std::optional<double> usd;
  bool json = false;
};

// `budget show|set|clear` (DESIGN §15, §21): a team's budget, seen and
// changed from the command line. A running host keeps the budget it
// started with; said when there is one.
int Budget(Globals& g, const BudgetArgs& a, const std::string& verb) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (verb == "set") {
    if (!a.tokens && !a.usd) return Usage("budget set takes --tokens N, --usd X or both");
    if (a.tokens && !(*a.tokens >= 0 && *a.tokens <= kMaxBudgetTokens)) {
      return Usage("--tokens must be a number of tokens from 0 to 1e12 (0 = no token budget)");
    }
    if (a.usd && !(*a.usd >= 0 && *a.usd <= 1e9)) {
      return Usage("--usd must be a number of dollars from 0 to 1e9 (0 = no dollar budget)");
    }
  }
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok()) return Fail(store.status());
  Result<TeamConfig> team = (*store)->LoadTeam(g.team);
  if (team.ok() && verb != "show") {
    const bool clear = verb == "clear";
    team = (*store)->UpdateTeam(g.team, [&](TeamConfig& c) {
      c.budget.Give(clear ? std::optional<int64_t>(0) : a.tokens, clear ? std::optional<double>(0) : a.usd);
      return Status::Ok();
    });
  }
  if (!team.ok()) return Fail(team.status());
  auto u = agent::TeamUsageOf(**store, g.team, g.ws().AgentsDir(g.team), g.price_table);
  if (!u.ok()) return Fail(u.status());
  const TeamBudget& b = team->budget;
  if (a.json) {
    std::cout << DumpJsonPretty(Json{{"team", g.team}, {"budget", BudgetJson(*u, b)}}) << std::endl;
  } else if (!b.any()) {
    std::cout << "team " << g.team << " has no budget"
              << (verb == "show" ? "; to give it one: " + g.Mates() + " budget set --team " + g.team + " --tokens 1000000"
                                 : "")
              << "\n";
  } else {
    std::cout << "team " << g.team << ": budget " << agent::DescribeBudget(b, agent::TotalTokens(u->total), u->cost_usd)
              << "\n";
  }
  if (!a.json && u->calls > 0) std::cout << "spent: " << agent::DescribeTeamUsage(*u) << "\n";
  if (auto host = (*store)->LiveHost(g.team); host && verb != "show") {
    std::cout << "the host of team " << g.team << (host->pid > 0 ? " (pid " + std::to_string(host->pid) + ")" : "")
              << " applies it from its agents' next model call\n";
  }
  return 0;
}

}  // namespace

void AddBudgetCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<BudgetArgs>();
  CLI::App* budget = app.add_subcommand("budget", "See, set or clear what a team may spend on the model");
  budget->require_subcommand(1);
  AddTeamOption(budget, g);
  AddStoreOption(budget, g);
  auto verb = [&g, a](CLI::App* cmd, const std::string& name) {
    cmd->add_flag("--json", a->json, "One JSON document");
    cmd->callback([&g, a, name] { g.action = [&g, a, name] { return Budget(g, *a, name); }; });
  };
  verb(budget->add_subcommand("show", "The team's budget and how much of it is used"), "show");
  CLI::App* set = budget->add_subcommand("set", "Set the team's budget (what it spent so far counts)");
  set->add_option("--tokens", a->tokens, "Tokens its agents may read and write in all (0 = no token budget)");
  set->add_option("--usd", a->usd, "US dollars, priced with the price table (0 = no dollar budget)");
  verb(set, "set");
  verb(budget->add_subcommand("clear", "Remove the team's budget"), "clear");
}

void AddUsageCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<UsageArgs>();
  CLI::App* cmd = app.add_subcommand("usage", "Tokens and cost per agent and for the team, from the journals");
  AddTeamOption(cmd, g);
  cmd->add_flag("--all", a->all,
                "Every team of the store and every archived one here, a line each, and the sum");
  cmd->add_flag("--json", a->json, "One JSON document");
  AddArchivedOption(cmd, a->archived);
  AddStoreOption(cmd, g);
  cmd->callback([&g, a] { g.action = [&g, a] { return RunUsage(g, *a); }; });
}

}  // namespace mates::cli
