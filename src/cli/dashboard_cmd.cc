// mates dashboard [--team T] [--store URL] [--port P] [--archived [STAMP]]
// mates dashboard --claude TEAM [--claude-home DIR] [--port P]
//
// A team's dashboard, read-only (DESIGN §11): for a team no host serves,
// one whose host is on another machine (a team in a PostgreSQL store,
// looked at from anywhere), or an archive. It runs until Ctrl-C or
// SIGTERM. A hosted team's own dashboard (the one that can act) is named
// when this machine has it. With --claude, the page of one of Claude
// Code's own teams (DESIGN §24), which can send a member a message and
// add a task; the rest is Claude Code's.
#include <signal.h>

#include <iostream>

#include "claude/claude_team.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "stores/open_store.h"
#include "core/names.h"
#include "dashboard/dashboard.h"
#include "store/archive.h"
#include "store/host_info.h"
#include "store/roster.h"

namespace mates::cli {
namespace {

struct DashboardArgs {
  int port = 0;
  ArchivedChoice archived;
  std::string claude;       // --claude TEAM: a Claude Code team (DESIGN §24)
  std::string claude_home;  // --claude-home DIR
};

int Dashboard_(Globals& g, const DashboardArgs& a) {
  if (a.claude.empty() && !a.claude_home.empty()) return Usage("--claude-home goes with --claude TEAM");
  if (Status s = ValidateName("team name", a.claude.empty() ? g.team : a.claude); !s.ok()) return Fail(s);
  if (a.port < 0 || a.port > 65535) return Usage("--port must be 0..65535 (0 = any free port)");
  dashboard::DashboardOptions o;
  o.team = g.team;
  o.port = a.port;
  o.read_only = true;
  if (!a.claude.empty()) {
    // Claude Code's team: its page can send a member a message and add a
    // task, as Claude Code writes them; its store refuses the rest.
    if (a.archived.given()) return Usage("--claude shows a Claude Code team as it is: it has no archive");
    auto home = a.claude_home.empty() ? claude::DefaultClaudeHome() : Result<fs::path>(fs::path(a.claude_home));
    if (!home.ok()) return Fail(home.status());
    g.team = o.team = a.claude;
    g.store = "claude:" + home->string();
    o.read_only = false;
  }
  if (a.archived.given()) {
    auto archive = FindArchive(g.ws(), g.team, a.archived.stamp);
    if (!archive.ok()) return Fail(archive.status());
    o.ws = Workspace(archive->root);
    o.archived = archive->stamp;
  } else {
    o.ws = g.ws();
  }
  // An archive is this workspace's files, whichever store the team was in.
  if (!a.archived.given()) o.store_url = g.store;
  auto store = OpenTeamStore(o.store_url, o.ws, g.env());
  if (!store.ok()) return Fail(store.status());
  if (auto team = (*store)->LoadTeam(g.team); !team.ok()) {
    return Fail(SayIfArchived(team.status(), o.ws, g.team, a.archived));
  }
  // Blocked before the server's threads start (they inherit the mask):
  // only this thread takes them, in sigwait.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto page = dashboard::Dashboard::Start(o, g.env());
  if (!page.ok()) return Fail(page.status());
  std::cout << (a.claude.empty() ? "dashboard of team " : "dashboard of Claude Code team ") << g.team
            << (o.archived.empty() ? "" : " (archived " + o.archived + ")")
            << (o.read_only ? ", read-only: " : " (it sends messages and adds tasks): ") << (*page)->url() << std::endl;
  if (o.archived.empty()) {
    auto host = (*store)->LiveHost(g.team);
    if (host && !host->dashboard.empty()) {
      std::cout << "the host's dashboard (it can send, create tasks, decide plans): " << host->dashboard << std::endl;
    }
  }
  std::cout << "Ctrl-C ends it" << std::endl;
  int sig = 0;
  while (::sigwait(&stop, &sig) != 0) {
  }
  (*page)->Stop();
  return 0;
}

}  // namespace

void AddDashboardCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<DashboardArgs>();
  CLI::App* d = app.add_subcommand("dashboard", "A team's live page in a browser, read-only (up serves one that can act)");
  AddTeamOption(d, g);
  d->add_option("--port", a->port, "Port on 127.0.0.1 (default: any free port)");
  AddArchivedOption(d, a->archived);
  AddStoreOption(d, g);
  d->add_option("--claude", a->claude, "A Claude Code agent team instead (see mates claude list)");
  d->add_option("--claude-home", a->claude_home, "Claude Code's home (default: $CLAUDE_CONFIG_DIR, else ~/.claude)");
  d->callback([&g, a] { g.action = [&g, a] { return Dashboard_(g, *a); }; });
}

}  // namespace mates::cli
