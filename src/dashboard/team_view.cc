// See team_view.h.
#include "dashboard/team_view.h"

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "pg/store.h"
#include "store/board.h"
#include "store/merges.h"
#include "store/liveness.h"
#include "store/message_log.h"

namespace mates::view {

TeamView ComposeView(TeamConfig team, const std::vector<Task>& tasks, const HostedFn& hosted,
                     std::vector<Message> messages) {
  TeamView v;
  v.now = WallSeconds();
  v.team = std::move(team);
  for (const char* s : {"pending", "in_progress", "completed"}) v.board[s] = 0;
  std::map<std::string, Task> working;  // owner → its in-progress task (lowest id)
  for (const auto& t : tasks) {
    ++v.board[std::string(TaskStatusName(t.status))];
    if (t.status == TaskStatus::kInProgress && !t.owner.empty() && working.count(t.owner) == 0) {
      working[t.owner] = t;
    }
  }
  for (const auto& m : v.team.members) {
    MemberView mv;
    mv.member = m;
    mv.shown = std::string(ShownStatus(m, m.status == MemberStatus::kShutdown || hosted(m.name)));
    if (auto it = working.find(m.name); it != working.end()) mv.task = it->second;
    v.members.push_back(std::move(mv));
  }
  v.messages = std::move(messages);
  return v;
}

Result<TeamView> LookAtTeam(const Workspace& ws, const std::string& team, size_t last_messages) {
  MATES_ASSIGN_OR_RETURN(TeamConfig config, Roster(ws).Load(team));
  auto tasks = SharedBoard(ws.TasksDir(team))->List(false);
  auto msgs = MessageLog(ws, team).Tail(last_messages);
  TeamView v = ComposeView(
      std::move(config), tasks.ok() ? *tasks : std::vector<Task>(),
      [&](std::string_view member) { return HostAlive(ws, team, member); },
      msgs.ok() ? std::move(*msgs) : std::vector<Message>());
  v.host = ReadLiveHost(ws, team);
  for (auto& mv : v.members) {
    auto a = agent::ReadActivity(ws.AgentsDir(team) / (mv.member.name + ".status.json"));
    if (a.ok()) mv.activity = std::move(*a);
  }
  auto merges = MergeStore(ws, team).List();
  if (merges.ok()) {
    for (const auto& m : *merges) ++v.merges[std::string(MergeStateName(m.status))];
  }
  return v;
}

Result<TeamView> LookAtTeam(pg::Store& db, const Workspace& ws, const std::string& team, size_t last_messages) {
  MATES_ASSIGN_OR_RETURN(TeamConfig config, db.LoadTeam(team));
  MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, db.ListTasks(team));
  // Bounded as the file's tail is (a row may hold up to 16 MiB).
  MATES_ASSIGN_OR_RETURN(std::vector<Message> messages, db.TailLog(team, last_messages, nullptr, 4 << 20));
  MATES_ASSIGN_OR_RETURN(auto activities, db.Activities(team));
  TeamView v = ComposeView(
      std::move(config), tasks,
      [&](std::string_view member) {
        auto hosted = db.IsHosted(team, std::string(member));
        return hosted.ok() && *hosted;
      },
      std::move(messages));
  v.store = db.target().shown;
  std::map<std::string, std::string> doc_of(activities.begin(), activities.end());
  for (auto& mv : v.members) {
    auto it = doc_of.find(mv.member.name);
    if (it == doc_of.end()) continue;
    auto j = ParseJson(it->second);
    auto a = j.ok() ? agent::ActivityFromJson(*j) : Result<agent::Activity>(j.status());
    if (a.ok() && a->agent == mv.member.name) mv.activity = std::move(*a);
  }
  auto teams = pg::StoreTeams(db);
  v.host = ReadLiveHost(ws, team, *teams);
  auto merges = db.ListMerges(team);
  if (merges.ok()) {
    for (const auto& m : *merges) ++v.merges[std::string(MergeStateName(m.status))];
  }
  return v;
}

Json TeamViewToJson(const TeamView& v) {
  Json j;
  j["team"] = v.team.name;
  j["lead"] = v.team.lead;
  j["now"] = v.now;
  j["store"] = v.store.empty() ? Json(nullptr) : Json(v.store);
  // What the members' spend (their activity) is held to, if anything.
  j["budget"] = v.team.budget.any() ? TeamBudgetToJson(v.team.budget) : Json(nullptr);
  if (v.host) {
    j["host"] = {{"pid", v.host->pid},
                 {"mode", v.host->mode},
                 {"started_at", v.host->started_at},
                 {"uptime_s", v.host->pid > 0 ? v.now - v.host->started_at : 0},
                 {"dashboard", v.host->dashboard},
                 {"also", Json::array()}};
    for (const auto& a : v.host->also)
      j["host"]["also"].push_back({{"team", a.team}, {"dashboard", a.dashboard}});
  } else {
    j["host"] = nullptr;
  }
  j["board"] = Json::object();
  for (const auto& [k, n] : v.board) j["board"][k] = n;
  if (!v.merges.empty()) {
    j["merges"] = Json::object();
    for (const auto& [k, n] : v.merges) j["merges"][k] = n;
  }
  j["members"] = Json::array();
  for (const auto& m : v.members) {
    Json jm;
    jm["name"] = m.member.name;
    jm["role"] = std::string(MemberRoleName(m.member.role));
    jm["color"] = m.member.color;
    jm["status"] = m.shown;
    jm["recorded_status"] = std::string(MemberStatusName(m.member.status));
    if (m.activity) {
      Json a = agent::ActivityToJson(*m.activity);
      a["for_s"] = v.now - m.activity->since;
      jm["activity"] = std::move(a);
    } else {
      jm["activity"] = nullptr;
    }
    jm["task"] = m.task ? Json{{"id", m.task->id}, {"subject", m.task->subject}} : Json(nullptr);
    j["members"].push_back(std::move(jm));
  }
  j["messages"] = Json::array();
  for (const auto& m : v.messages) j["messages"].push_back(MessageToJson(m));
  return j;
}

}  // namespace mates::view
