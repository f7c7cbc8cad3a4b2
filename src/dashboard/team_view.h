// TeamView: a team as people look at it (DESIGN §11), read from its files:
// the host (host.json, if alive), the board by status, per member the shown
// state (liveness applied), activity and in-progress task, and the last
// messages. `mates status` prints it; the dashboard serves it as /api/team.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/activity.h"
#include "core/json.h"
#include "core/status.h"
#include "store/host_info.h"
#include "store/liveness.h"
#include "store/message.h"
#include "store/roster.h"
#include "store/task.h"
#include "store/workspace.h"

namespace mates::pg {
class Store;
}

namespace mates::view {

struct MemberView {
  Member member;
  std::string shown;  // liveness applied: active | idle | stopped | offline
  std::optional<agent::Activity> activity;
  std::optional<Task> task;  // the in-progress task it owns (lowest id)
};

struct TeamView {
  TeamConfig team;
  std::optional<HostInfo> host;
  std::map<std::string, int> board;  // status name → count
  std::map<std::string, int> merges;  // merge status → count (worktree isolation); empty if none
  std::vector<MemberView> members;
  std::vector<Message> messages;     // the last `last_messages`
  double now = 0;
  std::string store;  // where the team is kept, if not in the workspace's files (DESIGN §13)
};

Result<TeamView> LookAtTeam(const Workspace& ws, const std::string& team, size_t last_messages);
// The same of a team in a PostgreSQL store, from any machine: liveness is
// its locks, each member's activity its latest document there (one that
// is not one, written by hand say, is left out as an unreadable file is),
// and the host the one `ws` has, if it hosts the team's lead.
Result<TeamView> LookAtTeam(pg::Store& db, const Workspace& ws, const std::string& team, size_t last_messages);

// What every store has (DESIGN §13): the roster with liveness (`hosted`),
// the board and the last messages; LookAtTeam adds the file store's host,
// activity and merges.
TeamView ComposeView(TeamConfig team, const std::vector<Task>& tasks, const HostedFn& hosted,
                     std::vector<Message> messages);
// The document of `mates status --json`.
Json TeamViewToJson(const TeamView& v);

}  // namespace mates::view
