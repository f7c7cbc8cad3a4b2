// See team_view.h.
#include "view/team_view.h"

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "store/merges.h"
#include "store/liveness.h"
#include "view/attention.h"

namespace mates::view {

namespace {

// A view's messages are at most about this many bytes (a row of a
// database may hold up to 16 MiB).
constexpr size_t kViewLogBytes = 4 << 20;

// What a part of a view that could not be read shows: nothing, unless the
// store is out of reach, which the looker is told.
template <typename T>
Result<T> OrEmpty(Result<T> r) {
  if (r.ok() || r.status().code() == StatusCode::kUnavailable) return r;
  return T();
}

}  // namespace

Result<TeamView> LookAtTeam(TeamStore& store, const std::string& team, size_t last_messages) {
  MATES_ASSIGN_OR_RETURN(TeamConfig config, store.LoadTeam(team));
  MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, OrEmpty(store.Board(team)->List(false)));
  MATES_ASSIGN_OR_RETURN(LogPage messages, OrEmpty(store.TailLog(team, last_messages, kViewLogBytes)));
  MATES_ASSIGN_OR_RETURN(auto activities, OrEmpty(store.Activities(team)));
  TeamView v;
  v.now = WallSeconds();
  v.team = std::move(config);
  for (const char* s : {"pending", "in_progress", "completed"}) v.board[s] = 0;
  std::map<std::string, Task> working;  // owner → its in-progress task (lowest id)
  for (const auto& t : tasks) {
    ++v.board[std::string(TaskStatusName(t.status))];
    if (t.status == TaskStatus::kInProgress && !t.owner.empty() && working.count(t.owner) == 0) {
      working[t.owner] = t;
    }
  }
  std::map<std::string, std::string> doc_of(activities.begin(), activities.end());
  std::map<std::string, AgentLease> lease_of;
  if (auto leases = store.Leases(team); leases.ok()) {
    for (auto& l : *leases) lease_of[l.agent] = std::move(l);
  }
  for (const auto& m : v.team.members) {
    MemberView mv;
    mv.member = m;
    if (auto it = lease_of.find(m.name); it != lease_of.end()) mv.lease = it->second;
    mv.shown = ShownOf(m, m.status == MemberStatus::kShutdown || store.IsHosted(team, m.name));
    if (auto it = working.find(m.name); it != working.end()) mv.task = it->second;
    // What waits for it (a count first: on a database, one cheap look).
    auto inbox = store.InboxOf(team, m.name);
    if (auto n = inbox->PendingCount(); n.ok() && *n > 0) {
      if (auto waiting = inbox->Peek(); waiting.ok() && !waiting->empty()) {
        mv.unread = waiting->size();
        mv.oldest_unread = waiting->front().timestamp;
        for (const auto& w : *waiting) mv.oldest_unread = std::min(mv.oldest_unread, w.timestamp);
      }
    }
    if (auto it = doc_of.find(m.name); it != doc_of.end()) {
      auto j = ParseJson(it->second);
      auto a = j.ok() ? agent::ActivityFromJson(*j) : Result<agent::Activity>(j.status());
      if (a.ok() && a->agent == m.name) mv.activity = std::move(*a);
    }
    v.members.push_back(std::move(mv));
  }
  v.messages = std::move(messages.messages);
  if (!store.FilesHere()) v.store = store.where();
  v.foreign = store.foreign();
  v.host = store.LiveHost(team);
  v.forecasts = store.Forecasts(team);
  auto merges = store.Merges(team)->List();
  if (merges.ok()) {
    for (const auto& m : *merges) ++v.merges[std::string(MergeStateName(m.status))];
    v.merge_list = std::move(*merges);
  }
  auto requests = store.Mail(team)->ListRequests();
  if (requests.ok()) v.requests = std::move(*requests);
  v.tasks = std::move(tasks);
  return v;
}

namespace {

// One member of `mates status --json`.
Json MemberToJson(const MemberView& m, double now) {
  Json jm;
  jm["name"] = m.member.name;
  jm["role"] = std::string(MemberRoleName(m.member.role));
  jm["color"] = m.member.color;
  jm["status"] = std::string(ShownName(m.shown));
  jm["state"] = StateOf(m);
  jm["doing"] = DoingOf(m, now);
  jm["recorded_status"] = std::string(MemberStatusName(m.member.status));
  jm["backend"] = std::string(MemberBackendName(m.member.backend));
  jm["model"] = m.member.model;
  jm["unread"] = m.unread;
  jm["oldest_unread"] = m.unread > 0 ? Json(m.oldest_unread) : Json(nullptr);
  // Who holds it (DESIGN §32), and whose lease ended before, if any.
  jm["lease"] = m.lease ? Json{{"holder", m.lease->holder},
                               {"token", m.lease->token},
                               {"live", m.lease->live},
                               {"taken_from", m.lease->taken_from.empty() ? Json(nullptr) : Json(m.lease->taken_from)},
                               {"taken_at", m.lease->taken_at > 0 ? Json(m.lease->taken_at) : Json(nullptr)}}
                        : Json(nullptr);
  if (!m.member.role_title.empty()) jm["role_title"] = m.member.role_title;
  if (!m.member.foreign_json.empty()) {
    auto extra = ParseJson(m.member.foreign_json);
    if (extra.ok()) jm["extra"] = std::move(*extra);
  }
  if (m.activity) {
    Json a = agent::ActivityToJson(*m.activity);
    a["for_s"] = now - m.activity->since;
    jm["activity"] = std::move(a);
  } else {
    jm["activity"] = nullptr;
  }
  jm["task"] = m.task ? Json{{"id", m.task->id}, {"subject", m.task->subject}} : Json(nullptr);
  return jm;
}

}  // namespace

Json TeamViewToJson(const TeamView& v) {
  Json j;
  j["team"] = v.team.name;
  j["lead"] = v.team.lead;
  j["now"] = v.now;
  j["store"] = v.store.empty() ? Json(nullptr) : Json(v.store);
  j["foreign"] = v.foreign.empty() ? Json(nullptr) : Json(v.foreign);
  // What the members' spend (their activity) is held to, if anything.
  j["budget"] = v.team.budget.any() ? TeamBudgetToJson(v.team.budget) : Json(nullptr);
  if (v.host) {
    j["host"] = {{"pid", v.host->pid},
                 {"mode", std::string(HostModeName(v.host->mode))},
                 {"started_at", v.host->started_at},
                 {"uptime_s", v.host->pid > 0 ? v.now - v.host->started_at : 0},
                 {"dashboard", v.host->dashboard},
                 {"sandbox", v.host->sandbox.empty() ? Json(nullptr) : Json(v.host->sandbox)},
                 {"also", Json::array()}};
    for (const auto& a : v.host->also)
      j["host"]["also"].push_back({{"team", a.team}, {"dashboard", a.dashboard}});
    j["host"]["mcp_skipped"] = Json::array();
    for (const auto& s : v.host->mcp_skipped)
      j["host"]["mcp_skipped"].push_back({{"server", s.server}, {"why", s.why}});
  } else {
    j["host"] = nullptr;
  }
  // Conflicts forecast by the live host (DESIGN §30): members, tasks, files.
  j["forecasts"] = ForecastsToJson(v.forecasts)["forecasts"];
  j["board"] = Json::object();
  for (const auto& [k, n] : v.board) j["board"][k] = n;
  if (!v.merges.empty()) {
    j["merges"] = Json::object();
    for (const auto& [k, n] : v.merges) j["merges"][k] = n;
  }
  if (v.team.git.held()) {
    const TeamGit& g = v.team.git;
    j["merge_target_held"] = {{"target", g.target_name()},
                              {"was", g.target_at},
                              {"found", g.held_found},
                              {"since", g.held_since},
                              {"hint", "mates merges --team " + v.team.name + " resume"}};
  }
  j["members"] = Json::array();
  for (const auto& m : v.members) j["members"].push_back(MemberToJson(m, v.now));
  j["messages"] = Json::array();
  for (const auto& m : v.messages) j["messages"].push_back(MessageToJson(m));
  j["attention"] = AttentionToJson(Attention(v));
  return j;
}

}  // namespace mates::view
