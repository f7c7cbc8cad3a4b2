// mates team [--store URL] list | show [T] | use [T] [--clear]
//            | create T [--members a,b] | join T NAME | delete T
// On the file store (the default) or a PostgreSQL one (DESIGN §13), where
// a member is hosted while its host holds its liveness lock, and a deleted
// team is archived into this workspace as the file layout (pg/export.h),
// or gone with --purge.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "git/worktrees.h"
#include "store/host_info.h"
#include "core/clock.h"
#include "core/env.h"
#include "core/names.h"
#include "store/archive.h"
#include "store/board.h"
#include "store/liveness.h"
#include "store/roster.h"
#include "store/task_folders.h"

namespace mates::cli {
namespace {

struct TeamArgs {
  std::string team;  // the TEAM argument
  std::string member;
  std::string members;
  std::string lead = "lead";
  std::string description;
  std::string role = "teammate";
  std::string backend = "external";
  std::string isolation;  // join: "" = the team's, for an in-process teammate
  bool json = false;
  bool archived = false;  // team list --archived
  bool purge = false;     // team delete --purge
  bool clear = false;     // team use --clear
};

// How `m` is shown: a member nobody hosts is offline.
Shown ShownIn(TeamStore& teams, const TeamConfig& c, const Member& m) {
  return ShownOf(m, m.status == MemberStatus::kShutdown || teams.IsHosted(c.name, m.name));
}

Json ShownJson(TeamStore& teams, const TeamConfig& c) {
  return TeamConfigToShownJson(c, [&](std::string_view m) { return teams.IsHosted(c.name, std::string(m)); });
}

// Statuses as DESIGN §10 shows them: a member nobody hosts is offline.
void PrintTeam(TeamStore& teams, const TeamConfig& c) {
  std::cout << "team " << c.name << " (lead: " << c.lead << ", " << c.members.size()
            << " members)\n";
  if (!c.description.empty()) std::cout << "  " << c.description << "\n";
  for (const auto& m : c.members) {
    std::string line = "  " + m.name;
    line.resize(std::max<size_t>(line.size() + 1, 20), ' ');
    line += m.role_title.empty() ? std::string(MemberRoleName(m.role)) : m.role_title;
    line.resize(std::max<size_t>(line.size() + 1, 30), ' ');
    line += std::string(ShownName(ShownIn(teams, c, m)));
    line.resize(std::max<size_t>(line.size() + 1, 40), ' ');
    line += std::string(MemberBackendName(m.backend));
    if (!m.color.empty()) line += "  " + m.color;
    if (!m.model.empty()) line += "  model " + m.model;
    std::cout << line << "\n";
  }
}

// The archives of deleted teams, oldest first.
int ListArchived(Globals& g, const TeamArgs& a) {
  auto all = ListArchives(g.ws());
  if (!all.ok()) return Fail(all.status());
  Json out = Json::array();
  for (const auto& ar : *all) {
    Workspace archive(ar.root);
    auto c = Roster(archive).Load(ar.team);
    auto tasks = g.env().folders.BoardOf(archive.TasksDir(ar.team))->List(false);
    size_t members = c.ok() ? c->members.size() : 0, n_tasks = tasks.ok() ? tasks->size() : 0;
    if (a.json) {
      out.push_back({{"team", ar.team},
                     {"stamp", ar.stamp},
                     {"path", ar.root.string()},
                     {"members", members},
                     {"tasks", n_tasks}});
    } else {
      std::cout << ar.team << "  " << ar.stamp << "  " << members << " members, " << n_tasks << " tasks  "
                << fs::relative(ar.root, g.ws().root()).string() << "\n";
    }
  }
  if (a.json) std::cout << DumpJsonPretty(out) << std::endl;
  if (!a.json && all->empty()) std::cout << "no archived teams in " << g.ws().root().string() << "\n";
  return 0;
}

int List(Globals& g, const TeamArgs& a) {
  auto teams = OpenChosenStore(g, g.store, g.ws());
  if (!teams.ok()) return Fail(teams.status());
  if (a.archived) {
    return ListArchived(g, a);  // this workspace's, whichever store the teams were in
  }
  auto names = (*teams)->ListTeams();
  if (!names.ok()) return Fail(names.status());
  Json out = Json::array();
  for (const auto& t : *names) {
    auto c = (*teams)->LoadTeam(t);
    if (!c.ok()) {
      std::cerr << "mates: warning: " << c.status().message() << std::endl;
      continue;
    }
    if (a.json) {
      out.push_back(ShownJson(**teams, *c));
    } else {
      size_t active = 0;
      for (const auto& m : c->members) active += ShownIn(**teams, *c, m) == Shown::kActive ? 1 : 0;
      std::cout << (c->name == g.team ? "* " : "  ") << c->name << "  " << c->members.size() << " members, "
                << active << " active\n";
    }
  }
  if (a.json) std::cout << DumpJsonPretty(out) << std::endl;
  if (!a.json && names->empty()) std::cout << "no teams in " << (*teams)->where() << "\n";
  return 0;
}

int Show(Globals& g, const TeamArgs& a) {
  auto teams = OpenChosenStore(g, g.store, g.ws());
  if (!teams.ok()) return Fail(teams.status());
  auto c = (*teams)->LoadTeam(a.team.empty() ? g.team : a.team);
  if (!c.ok()) return Fail(c.status());
  if (a.json) {
    std::cout << DumpJsonPretty(ShownJson(**teams, *c)) << std::endl;
  } else {
    PrintTeam(**teams, *c);
  }
  return 0;
}

int Create(Globals& g, const TeamArgs& a) {
  // Validate everything before creating anything.
  std::vector<std::string> members = SplitList(a.members);
  Status lead_ok = ValidateMemberName(a.lead);
  if (!lead_ok.ok()) return Fail(lead_ok);
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string& m = members[i];
    Status s = ValidateMemberName(m);
    if (!s.ok()) return Fail(s);
    if (m == a.lead) return Usage("'" + m + "' is the lead already");
    if (std::find(members.begin(), members.begin() + static_cast<ptrdiff_t>(i), m) !=
        members.begin() + static_cast<ptrdiff_t>(i)) {
      return Usage("'" + m + "' is listed twice in --members");
    }
  }
  Status s = ValidateName("team name", a.team);
  if (!s.ok()) return Fail(s);
  auto backend = ParseMemberBackend(a.backend);
  if (!backend.ok()) return Fail(backend.status());
  auto teams = OpenChosenStore(g, g.store, g.ws());
  if (!teams.ok()) return Fail(teams.status());
  auto c = (*teams)->CreateTeam(a.team, a.lead, a.description);
  if (!c.ok()) return Fail(c.status());
  for (const auto& name : members) {
    Member m;
    m.name = name;
    m.role = MemberRole::kTeammate;
    m.backend = *backend;
    auto added = (*teams)->AddMember(a.team, m);
    if (!added.ok()) return Fail(added.status());
  }
  auto final_config = (*teams)->LoadTeam(a.team);
  if (!final_config.ok()) return Fail(final_config.status());
  if (a.json) {
    std::cout << DumpJsonPretty(ShownJson(**teams, *final_config)) << std::endl;
  } else {
    std::cout << "created team " << a.team << " in " << (*teams)->where() << "\n";
    PrintTeam(**teams, *final_config);
  }
  return 0;
}

int Join(Globals& g, const TeamArgs& a) {
  if (a.role != "teammate") return Usage("--role must be 'teammate' (a team has one lead)");
  auto backend = ParseMemberBackend(a.backend);
  if (!backend.ok()) return Usage("--backend must be in-process, tmux or external");
  std::optional<Isolation> isolation;
  if (!a.isolation.empty()) {
    auto parsed = ParseIsolation(a.isolation);
    if (!parsed.ok()) return Usage(parsed.status().message());
    isolation = *parsed;
  }
  if (isolation == Isolation::kWorktree && *backend != MemberBackend::kInProcess) {
    return Usage("--isolation worktree is for an in-process teammate, whose host makes its worktree (a pane agent "
                 "gets one from its cluster file: worktree: true)");
  }
  Member m;
  m.name = a.member;
  m.role = MemberRole::kTeammate;
  m.backend = *backend;
  auto teams = OpenChosenStore(g, g.store, g.ws());
  if (!teams.ok()) return Fail(teams.status());
  if (!isolation && *backend == MemberBackend::kInProcess) {
    // The team's setting, as for a teammate the lead spawns.
    auto c = (*teams)->LoadTeam(a.team);
    if (!c.ok()) return Fail(c.status());
    isolation = c->git.isolation;
  }
  m.worktree = isolation == Isolation::kWorktree;
  auto added = (*teams)->AddMember(a.team, m);
  if (!added.ok()) return Fail(added.status());
  if (a.json) {
    auto c = (*teams)->LoadTeam(a.team);
    if (!c.ok()) return Fail(c.status());
    std::cout << DumpJsonPretty(ShownJson(**teams, *c)) << std::endl;
  } else {
    std::cout << added->agent_id << " joined (colour " << added->color << ")\n";
  }
  return 0;
}

// A deletion for good (--purge), said.
int Purged(const Status& s, const TeamArgs& a) {
  if (!s.ok()) return Fail(s);
  if (a.json) {
    std::cout << DumpJson(Json{{"deleted", a.team}, {"archive", nullptr}}) << std::endl;
  } else {
    std::cout << "deleted team " << a.team << " for good\n";
  }
  return 0;
}

// An archive, said.
int Archived(const Globals& g, const Workspace& ws, const Result<ArchivedTeam>& archived, const TeamArgs& a) {
  if (!archived.ok()) return Fail(archived.status());
  if (a.json) {
    std::cout << DumpJson(Json{{"deleted", a.team}, {"archive", archived->root.string()}, {"stamp", archived->stamp}})
              << std::endl;
  } else {
    std::cout << "deleted team " << a.team << "; archived in " << fs::relative(archived->root, ws.root()).string()
              << " (" << g.Mates() << " log --team " << a.team << " --archived shows its messages; --purge deletes for good)\n";
  }
  return 0;
}

// Archives the team (DESIGN §11): what the store holds and this machine's
// files of it go into an archive of this workspace. --purge deletes it for
// good, this machine's files of it too (its journals here would bring it
// back).
int Delete(Globals& g, const TeamArgs& a) {
  auto teams = OpenChosenStore(g, g.store, g.ws());
  if (!teams.ok()) return Fail(teams.status());
  TeamStore& store = **teams;
  // Its worktrees go first (unmerged work stays on its branch, DESIGN §12).
  // (Not under a live host: its teammates may be working in them.) A
  // shared store's worktrees are each host's, on its own machine.
  if (auto c = store.LoadTeam(a.team); c.ok() && c->git.configured() && store.WorktreesHere()) {
    if (store.LiveHost(a.team)) {
      std::cerr << "mates: the team is hosted: its worktrees stay in " << g.ws().WorktreesDir(a.team).string()
                << std::endl;
    } else {
      for (const auto& k : git::CleanUpTeam(g.ws(), *c)) std::cerr << "mates: " << k << std::endl;
    }
  }
  if (!a.purge) return Archived(g, g.ws(), store.Archive(a.team), a);
  return Purged(store.DeleteTeam(a.team), a);
}

// `team use [TEAM] [--clear]`: sets, clears or says the workspace's
// current team (DESIGN §21).
int Use(Globals& g, const TeamArgs& a) {
  const Workspace ws = g.ws();
  if (a.clear || !a.team.empty()) {
    if (a.clear && !a.team.empty()) return Usage("give a TEAM or --clear, not both");
    if (Status s = SetCurrentTeam(ws, a.team); !s.ok()) return Fail(s);
    if (a.clear) {
      std::cout << "no current team in " << ws.root().string() << " (commands work on "
                << (std::getenv("MATES_TEAM") != nullptr ? "$MATES_TEAM" : "team default") << ")\n";
      return 0;
    }
    std::cout << "current team: " << a.team << " (in " << ws.root().string() << ")";
    auto teams = OpenChosenStore(g, g.store, ws);
    if (teams.ok() && (*teams)->HasTeam(a.team).code() == StatusCode::kNotFound) {
      std::cout << "; it does not exist yet: mates run or mates team create " << a.team << " makes it";
    }
    std::cout << "\n";
    if (const char* env = std::getenv("MATES_TEAM"); env != nullptr && *env != '\0' && a.team != env) {
      std::cerr << "mates: warning: $MATES_TEAM (" << env << ") is set and comes first\n";
    }
    return 0;
  }
  static constexpr const char* kFrom[] = {"--team", "$MATES_TEAM", "mates team use", "the default"};
  std::cout << g.team << " (from " << kFrom[static_cast<int>(g.team_from)] << ")\n";
  return 0;
}

}  // namespace

void AddTeamCommands(CLI::App& app, Globals& g) {
  auto args = std::make_shared<TeamArgs>();
  CLI::App* team = app.add_subcommand("team", "List, show, create, join and delete teams");
  team->require_subcommand(1);
  AddStoreOption(team, g);

  CLI::App* list = team->add_subcommand("list", "List the teams of the workspace");
  list->add_flag("--json", args->json, "Machine-readable output");
  list->add_flag("--archived", args->archived, "List the archives of deleted teams");
  list->callback([&g, args] { g.action = [&g, args] { return List(g, *args); }; });

  CLI::App* show = team->add_subcommand("show", "Show a team's roster with statuses");
  show->add_option("TEAM", args->team, "Team name (default: the team of --team, $MATES_TEAM or mates team use)");
  show->add_flag("--json", args->json, "Machine-readable output");
  show->callback([&g, args] { g.action = [&g, args] { return Show(g, *args); }; });

  CLI::App* use = team->add_subcommand("use", "Set the workspace's current team: the one commands work on when "
                                                "neither --team nor $MATES_TEAM says (no TEAM: say which it is)");
  use->add_option("TEAM", args->team, "Team name");
  use->add_flag("--clear", args->clear, "Forget the current team (commands then work on team default)");
  use->callback([&g, args] {
    g.setting_current_team = true;
    g.action = [&g, args] { return Use(g, *args); };
  });

  CLI::App* create = team->add_subcommand("create", "Create a team (the lead is a member)");
  create->add_option("TEAM", args->team, "Team name")->required();
  AddListOption(create, "--members", args->members, "Teammates to add");
  create->add_option("--lead", args->lead, "The lead's member name")->capture_default_str();
  create->add_option("--description", args->description, "What the team is for");
  create->add_flag("--json", args->json, "Machine-readable output");
  create->callback([&g, args] { g.action = [&g, args] { return Create(g, *args); }; });

  CLI::App* join = team->add_subcommand("join", "Add a member to a team");
  join->add_option("TEAM", args->team, "Team name")->required();
  join->add_option("NAME", args->member, "The new member's name")->required();
  join->add_option("--backend", args->backend, "in-process, tmux or external")
      ->capture_default_str();
  join->add_option("--role", args->role, "Role (teammate)")->capture_default_str();
  join->add_option("--isolation", args->isolation,
                   "An in-process teammate's working copy: worktree (its own git worktree, made by the host that "
                   "runs it) or shared (default: the team's setting)");
  join->add_flag("--json", args->json, "Machine-readable output");
  join->callback([&g, args] { g.action = [&g, args] { return Join(g, *args); }; });

  CLI::App* del = team->add_subcommand("delete", "Delete a team: its files move to .teams/.archive (--purge: gone)");
  del->add_option("TEAM", args->team, "Team name")->required();
  del->add_flag("--purge", args->purge, "Delete its inboxes, log and tasks for good instead of archiving them");
  del->add_flag("--json", args->json, "Machine-readable output");
  del->callback([&g, args] { g.action = [&g, args] { return Delete(g, *args); }; });
}

}  // namespace mates::cli
