// mates claude list | status TEAM | send TEAM MEMBER TEXT | task TEAM SUBJECT
//
// Claude Code's own agent teams, watched and steered from mates (DESIGN
// §24): the teams in Claude Code's home (--home, else $CLAUDE_CONFIG_DIR,
// else ~/.claude), one of them at a glance (the same screen and document
// as `mates status`: roster and activity, board, per-member tokens and
// cost, messages read or not, attention), and the two things a person may
// do to one: send a member a message (into its inbox, as Claude Code's
// SendMessage writes it, from `user`) and put a task on its board. The
// same team is the store `claude:` (or `claude:DIR`) for every other
// command: `mates --store claude: log --team T`, `mates dashboard --claude T`.
#include <iostream>
#include <nlohmann/json.hpp>

#include "claude/claude_team.h"
#include "cli/cli_common.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/text.h"
#include "store/messenger.h"

namespace mates::cli {
namespace {

struct ClaudeArgs {
  std::string home;  // --home; "" = Claude Code's own
  std::string team;
  std::string member;
  std::string text;
  std::string summary;  // send's
  std::string description;  // task's
  std::vector<std::string> blocked_by;
  bool watch = false;
  bool json = false;
};

Result<fs::path> HomeOf(const ClaudeArgs& a) {
  if (!a.home.empty()) return fs::path(a.home);
  return claude::DefaultClaudeHome();
}

// The store URL of the home, for the commands that work on stores.
Result<std::string> StoreOf(const ClaudeArgs& a) {
  MATES_ASSIGN_OR_RETURN(fs::path home, HomeOf(a));
  return "claude:" + home.string();
}

int List(const ClaudeArgs& a) {
  auto home = HomeOf(a);
  if (!home.ok()) return Fail(home.status());
  claude::ClaudeHome h(*home);
  auto teams = h.ListTeams();
  if (!teams.ok()) return Fail(teams.status());
  Json out = Json::array();
  for (const auto& name : *teams) {
    auto c = h.LoadTeam(name);
    if (!c.ok()) {
      out.push_back({{"team", name}, {"error", c.status().message()}});
      continue;
    }
    auto tasks = h.Tasks(name);
    Json members = Json::array();
    for (const auto& m : c->members) members.push_back(m.name);
    out.push_back({{"team", c->name.empty() ? name : c->name},
                   {"lead", c->lead()},
                   {"members", members},
                   {"tasks", tasks.ok() ? Json(tasks->size()) : Json(nullptr)},
                   {"created_at", c->created_at},
                   {"running", h.SessionAlive(c->lead_session_id)},
                   {"session", c->lead_session_id}});
  }
  if (a.json) {
    std::cout << DumpJsonPretty(out) << std::endl;
    return 0;
  }
  if (out.empty()) {
    std::cout << "no Claude Code agent teams in " << (*home / "teams").string()
              << " (Claude Code makes one per session with CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1)" << std::endl;
    return 0;
  }
  for (const auto& t : out) {
    if (t.contains("error")) {
      std::cout << t["team"].get<std::string>() << "  (" << t["error"].get<std::string>() << ")\n";
      continue;
    }
    std::string names;
    for (const auto& m : t["members"]) names += (names.empty() ? "" : ", ") + m.get<std::string>();
    std::cout << ForTerminal(t["team"].get<std::string>()) << "  " << (t["running"].get<bool>() ? "running" : "ended")
              << "  " << t["members"].size() << " member" << (t["members"].size() == 1 ? "" : "s") << " ("
              << ForTerminal(names) << ")  " << (t["tasks"].is_null() ? std::string("?") : t["tasks"].dump())
              << " tasks  since " << IsoTime(t["created_at"].get<double>()).substr(0, 16) << "\n";
  }
  std::cout << "(mates claude status TEAM shows one)" << std::endl;
  return 0;
}

int Send(const ClaudeArgs& a) {
  auto home = HomeOf(a);
  if (!home.ok()) return Fail(home.status());
  claude::ClaudeHome h(*home);
  auto id = h.Send(a.team, kUserName, a.member, a.text, a.summary);
  if (!id.ok()) return Fail(id.status());
  std::cout << "sent to " << a.member << "'s inbox (" << (h.FilesOf(a.team).inboxes / (claude::FileNameOf(a.member) + ".json")).string()
            << "), msg_id " << *id << std::endl;
  return 0;
}

int Task(const ClaudeArgs& a) {
  auto home = HomeOf(a);
  if (!home.ok()) return Fail(home.status());
  claude::ClaudeHome h(*home);
  auto t = h.CreateTask(a.team, a.text, a.description, a.blocked_by);
  if (!t.ok()) return Fail(t.status());
  std::cout << "created #" << t->id << " [pending] " << ForTerminal(t->subject) << " on Claude Code team " << a.team
            << std::endl;
  return 0;
}

}  // namespace

void AddClaudeCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<ClaudeArgs>();
  CLI::App* c = app.add_subcommand("claude", "Claude Code's own agent teams: list, status, send a member a message, add a task");
  c->require_subcommand(1);
  auto home = [a](CLI::App* cmd) {
    cmd->add_option("--home", a->home, "Claude Code's home (default: $CLAUDE_CONFIG_DIR, else ~/.claude)");
  };

  CLI::App* list = c->add_subcommand("list", "The agent teams Claude Code keeps, running or not");
  home(list);
  list->add_flag("--json", a->json, "One JSON document");
  list->callback([&g, a] { g.action = [a] { return List(*a); }; });

  CLI::App* st = c->add_subcommand("status", "A Claude Code team at a glance: members, activity, cost, tasks, messages");
  home(st);
  st->add_option("team", a->team, "The team (see mates claude list)")->required();
  st->add_flag("--watch", a->watch, "Redraw whenever something changes (Ctrl-C ends it)");
  st->add_flag("--json", a->json, "One JSON document");
  st->callback([&g, a] {
    g.action = [&g, a] {
      auto store = StoreOf(*a);
      if (!store.ok()) return Fail(store.status());
      g.team = a->team;
      g.store = *store;
      g.store_given = true;
      return ShowStatusOf(g, a->watch, a->json);
    };
  });

  CLI::App* send = c->add_subcommand("send", "Send a member a message, as Claude Code's SendMessage does (from user)");
  home(send);
  send->add_option("team", a->team, "The team")->required();
  send->add_option("member", a->member, "Who gets it (team-lead, or a teammate's name)")->required();
  send->add_option("text", a->text, "What to say")->required();
  send->add_option("--summary", a->summary, "A few words Claude Code shows as its preview");
  send->callback([&g, a] { g.action = [a] { return Send(*a); }; });

  CLI::App* task = c->add_subcommand("task", "Put a task on a Claude Code team's board, as its TaskCreate does");
  home(task);
  task->add_option("team", a->team, "The team")->required();
  task->add_option("subject", a->text, "The task, in a few words")->required();
  task->add_option("--description", a->description, "What is to be done");
  task->add_option("--blocked-by", a->blocked_by, "Ids of tasks that must be done first");
  task->callback([&g, a] { g.action = [a] { return Task(*a); }; });
}

}  // namespace mates::cli
