// mates ps [--all] [--json]
//
// The teams hosted on this machine by this user (DESIGN §27), whatever the
// folder: each host notes where it is in its runtime folder
// (host/machine.h), and its team is read where it is kept — team,
// workspace, pid, uptime, agents by state, tokens, cost, what needs
// attention, the dashboard. With --all, the teams of this workspace's store
// that nobody hosts here are listed too.
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "agent/prices.h"
#include "agent/usage.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/text.h"
#include "host/machine.h"
#include "store/team_store.h"
#include "view/attention.h"
#include "view/team_view.h"

namespace mates::cli {
namespace {

struct PsArgs {
  bool all = false;
  bool json = false;
};

struct Row {
  std::string team;
  std::string workspace;
  std::optional<HostInfo> host;  // none: nobody hosts it here
  std::map<std::string, int> agents;  // state → count
  int64_t tokens = 0;
  double cost = 0;
  bool priced = true;
  size_t attention = 0;
  std::string error;  // the team could not be read
};

// What `team` of `ws`'s store looks like now.
Row Look(const Globals& g, const std::string& store_url, const Workspace& ws, const std::string& team,
         std::optional<HostInfo> host) {
  Row r{team, ws.root().string(), std::move(host), {}, 0, 0, true, 0, ""};
  auto store = OpenChosenStore(g, store_url, ws);
  if (!store.ok()) {
    r.error = store.status().message();
    return r;
  }
  auto v = view::LookAtTeam(**store, team, 0);
  if (!v.ok()) {
    r.error = v.status().message();
    return r;
  }
  if (!r.host) r.host = v->host;
  for (const auto& m : v->members) {
    r.agents[view::StateOf(m)]++;
    if (!m.activity || m.activity->calls == 0) continue;
    r.tokens += agent::TotalTokens(m.activity->tokens);
    if (m.activity->cost_usd) {
      r.cost += *m.activity->cost_usd;
    } else {
      r.priced = false;
    }
  }
  r.attention = view::Attention(*v).size();
  return r;
}

std::string Agents(const Row& r) {
  std::string out;
  for (const auto& [state, n] : r.agents) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  return out.empty() ? "-" : out;
}

Json ToJson(const Row& r, double now) {
  Json j{{"team", r.team}, {"workspace", r.workspace}, {"hosted", r.host.has_value()}};
  j["pid"] = r.host ? Json(r.host->pid) : Json(nullptr);
  j["started_at"] = r.host ? Json(r.host->started_at) : Json(nullptr);
  j["uptime_s"] = r.host ? Json(now - r.host->started_at) : Json(nullptr);
  j["dashboard"] = r.host && !r.host->dashboard.empty() ? Json(r.host->dashboard) : Json(nullptr);
  j["agents"] = r.agents;
  j["tokens"] = r.tokens;
  j["cost_usd"] = r.priced ? Json(r.cost) : Json(nullptr);
  j["attention"] = r.attention;
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

int Ps(Globals& g, const PsArgs& a) {
  const double now = WallSeconds();
  std::vector<Row> rows;
  std::set<std::pair<std::string, std::string>> seen;  // (workspace, team)
  for (const auto& h : host::HostsHere()) {
    Workspace ws(h.workspace);
    auto info = ReadHostInfo(ws, h.team);
    // The process that wrote where.json, hosting still (not a reused pid).
    if (!info.ok() || info->pid != h.pid) continue;
    std::vector<std::string> teams = {h.team};
    for (const auto& other : info->also) teams.push_back(other.team);
    for (const auto& t : teams) {
      if (!seen.insert({ws.root().string(), t}).second) continue;
      auto here = ReadLiveHost(ws, t);
      if (!here) here = *info;
      rows.push_back(Look(g, "", ws, t, here));
    }
  }
  if (a.all) {
    auto store = OpenChosenStore(g, g.store, g.ws());
    if (!store.ok()) return Fail(store.status());
    auto names = (*store)->ListTeams();
    if (!names.ok()) return Fail(names.status());
    for (const auto& t : *names) {
      if (seen.count({g.ws().root().string(), t}) > 0) continue;
      rows.push_back(Look(g, g.store, g.ws(), t, (*store)->LiveHost(t)));
    }
  }
  if (a.json) {
    Json out = Json::array();
    for (const auto& r : rows) out.push_back(ToJson(r, now));
    std::cout << DumpJsonPretty(Json{{"teams", out}}) << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::cout << "no team is hosted on this machine" << (a.all ? " or kept in this workspace" : "") << " (`"
              << g.Mates() << " up` hosts one" << (a.all ? "" : "; --all lists the workspace's teams too") << ")\n";
    return 0;
  }
  std::cout << PadColumns("TEAM", 14) << PadColumns("PID", 8) << PadColumns("UP", 8) << PadColumns("AGENTS", 26) << PadColumns("TOKENS", 8)
            << PadColumns("COST", 10) << PadColumns("ATTN", 5) << "WORKSPACE / DASHBOARD\n";
  for (const auto& r : rows) {
    const bool hosted = r.host.has_value();
    std::cout << PadColumns(r.team, 14) << PadColumns(hosted ? std::to_string(r.host->pid) : "-", 8)
              << PadColumns(hosted ? ShortDuration(now - r.host->started_at) : "-", 8)
              << PadColumns(r.error.empty() ? Agents(r) : "?", 26) << PadColumns(agent::HumanCount(r.tokens), 8)
              << PadColumns(r.tokens == 0 ? "-" : r.priced ? agent::FormatCost(r.cost) : "?", 10)
              << PadColumns(std::to_string(r.attention), 5) << r.workspace << "\n";
    if (hosted && !r.host->dashboard.empty()) std::cout << std::string(14, ' ') << r.host->dashboard << "\n";
    if (!r.error.empty()) std::cout << std::string(14, ' ') << "cannot be read: " << r.error << "\n";
  }
  return 0;
}

}  // namespace

void AddPsCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<PsArgs>();
  CLI::App* ps = app.add_subcommand("ps", "The teams hosted on this machine, whatever their folder");
  ps->add_flag("--all", a->all, "Also the teams of this workspace's store that nobody hosts here");
  AddStoreOption(ps, g);
  ps->add_flag("--json", a->json, "One JSON document");
  ps->callback([&g, a] { g.action = [&g, a] { return Ps(g, *a); }; });
}

}  // namespace mates::cli
