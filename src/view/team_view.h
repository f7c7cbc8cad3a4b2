// TeamView: a team as people look at it (DESIGN §11), read from its store:
// the host (host.json, if alive), the board by status, per member the shown
// state (liveness applied), activity and in-progress task, and the last
// messages. `mates status` prints it, the dashboard serves it as /api/team,
// and `mates mcp`'s team_status answers with it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/activity.h"
#include "core/json.h"
#include "core/status.h"
#include "store/forecast.h"
#include "store/host_info.h"
#include "store/liveness.h"
#include "store/merges.h"
#include "store/message.h"
#include "store/requests.h"
#include "store/roster.h"
#include "store/task.h"
#include "store/team_store.h"

namespace mates::view {

struct MemberView {
  Member member;
  Shown shown = Shown::kOffline;  // liveness applied
  std::optional<agent::Activity> activity;
  std::optional<Task> task;  // the in-progress task it owns (lowest id)
  size_t unread = 0;         // messages waiting in its inbox
  double oldest_unread = 0;  // when the oldest of them was sent
  std::optional<AgentLease> lease;  // who holds it, where hosts hold agents by leases (DESIGN §32)
};

struct TeamView {
  TeamConfig team;
  std::optional<HostInfo> host;
  std::vector<ConflictForecast> forecasts;  // the live host's, from any machine (DESIGN §30)
  std::map<std::string, int> board;  // status name → count
  std::map<std::string, int> merges;  // merge status → count (worktree isolation); empty if none
  std::vector<Task> tasks;                 // the board, by id
  std::vector<MergeRequest> merge_list;    // by id
  std::vector<ProtocolRequest> requests;   // shutdown and plan requests
  std::vector<MemberView> members;
  std::vector<Message> messages;     // the last `last_messages`
  double now = 0;
  std::string store;  // where the team is kept, if not in the workspace's files (DESIGN §13)
  std::string foreign;  // "Claude Code" for one of its teams (DESIGN §24); "" for mates'
};

// The team as `store` has it, from any machine: liveness as the store
// keeps it, each member's activity its latest document (one that is not
// one, written by hand say, is left out), and the host that this machine's
// workspace has, if any. A store out of reach is an error (Unavailable);
// a board or log that cannot be read otherwise is shown empty.
Result<TeamView> LookAtTeam(TeamStore& store, const std::string& team, size_t last_messages);
// The document of `mates status --json`.
Json TeamViewToJson(const TeamView& v);

}  // namespace mates::view
