// mates stop      [--team T] NAME [--reason TEXT]
// mates restart   [--team T] NAME
// mates interrupt [--team T] NAME
//
// A person's levers on one agent of a hosted team (DESIGN §27), pulled at
// the team's host through its levers' socket (host/levers.h), which
// host.json names: the host does what a lever says, in its own process,
// where the agent runs. A team nobody hosts has no levers: it says so.
#include <iostream>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/names.h"
#include "host/levers.h"
#include "store/host_info.h"
#include "store/team_store.h"

namespace mates::cli {
namespace {

struct LeverArgs {
  std::string agent;
  std::string reason;
};

int Pull(Globals& g, const std::string& op, const LeverArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (Status s = ValidateName("agent name", a.agent); !s.ok()) return Fail(s);
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok()) return Fail(store.status());
  auto team = (*store)->LoadTeam(g.team);
  if (!team.ok()) return Fail(team.status());
  if (team->Find(a.agent) == nullptr) {
    std::string names;
    for (const auto& m : team->members) names += (names.empty() ? "" : ", ") + m.name;
    return Fail(Status::NotFound("team '" + g.team + "' has no member '" + a.agent + "' (its members: " + names + ")"));
  }
  auto host = LeverHost(g, **store);
  if (!host.ok()) return Fail(host.status());
  host::LeverRequest r{op, g.team, a.agent, a.reason};
  auto said = host::PullLever(host->control, r);
  if (!said.ok()) return Fail(said.status());
  std::cout << *said << "\n";
  return 0;
}

void AddLever(CLI::App& app, Globals& g, const std::string& op, const std::string& help) {
  auto a = std::make_shared<LeverArgs>();
  CLI::App* cmd = app.add_subcommand(op, help);
  AddTeamOption(cmd, g);
  AddStoreOption(cmd, g);
  cmd->add_option("NAME", a->agent, "The agent")->required();
  if (op == "stop") cmd->add_option("--reason", a->reason, "What the agent is told (default: wrap up and stop)");
  cmd->callback([&g, op, a] { g.action = [&g, op, a] { return Pull(g, op, *a); }; });
}

}  // namespace

Result<HostInfo> LeverHost(Globals& g, TeamStore& store) {
  auto host = store.LiveHost(g.team);
  if (!host) {
    return Status::FailedPrecondition("team '" + g.team + "' is not hosted here, so nothing runs its agents; `" +
                                      g.Mates() + " up --team " + g.team + "` hosts it");
  }
  if (host->control.empty()) {
    return Status::FailedPrecondition("the host of team '" + g.team + "' (pid " + std::to_string(host->pid) +
                                      ") has no levers: it is from an earlier mates; `" + g.Mates() + " down` then `" +
                                      g.Mates() + " up` gives it them");
  }
  return *host;
}

void AddLeverCommands(CLI::App& app, Globals& g) {
  AddLever(app, g, "stop",
           "Ask a hosted teammate to wrap up and stop (a shutdown request; stopped if it does not answer in time)");
  AddLever(app, g, "restart",
           "Bring back a stopped or failed teammate with its identity, journal and context");
  AddLever(app, g, "interrupt",
           "End an agent's current turn (its model call cancelled, its tool killed); it waits for a message");
}

}  // namespace mates::cli
