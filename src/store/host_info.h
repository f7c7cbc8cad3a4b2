// The host of a team (DESIGN §11): the process that hosts its lead (`mates
// up`, `mates run`, `mates demo`) records itself in `.teams/<team>/host.json`
//
//   {"pid": 4242, "start_time": 123456, "started_at": 1763884800.1,
//    "mode": "up", "lead": "lead", "dashboard": "http://127.0.0.1:PORT/?token=…",
//    "also": [{"team": "made", "dashboard": "http://…"}], "sandbox": "workspace",
//    "control": "/tmp/mates-1000/T.4242/control"}
//
// and removes it when it ends. The file says who; the lead's host lock says
// whether: a host killed with SIGKILL leaves the file, and a file whose
// lock nobody holds is a dead host's (ReadLiveHost says nothing then).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/workspace.h"

namespace mates {

class TeamStore;

// How a host runs (host.json's "mode"): `mates run`, `mates up`, `mates
// demo`, or `mates up --teammates` (a host of the team's teammates, not
// its lead: DESIGN §13). A mode this mates does not know is kUnknown.
enum class HostMode { kUnknown, kRun, kUp, kDemo, kTeammates };
std::string_view HostModeName(HostMode m);  // run | up | demo | teammates ("" unknown)
HostMode HostModeOf(std::string_view name);

// Another team the same host hosts (its lead's home team, or the team the
// lead made and works in), and that team's page ("" = none).
struct AlsoHosted {
  std::string team;
  std::string dashboard;
};
// At most this many in host.json (a host hosts the lead's home team and
// the one it works in; more is not a host's file).
inline constexpr size_t kMaxAlsoHosted = 16;

// An MCP server of the workspace the host did not start, and why (its
// .mcp.json is not trusted, DESIGN §19).
struct SkippedServer {
  std::string server;
  std::string why;
};
inline constexpr size_t kMaxSkippedServers = 64;

struct HostInfo {
  int64_t pid = 0;
  uint64_t start_time = 0;  // the kernel's, to tell a reused pid (ProcessStartTime)
  double started_at = 0;    // wall seconds
  HostMode mode = HostMode::kUnknown;
  std::string lead;
  std::string dashboard;    // "" = none
  std::vector<AlsoHosted> also;  // "also": [{"team", "dashboard"}]
  std::vector<SkippedServer> mcp_skipped;  // "mcp_skipped": [{"server", "why"}]
  // Where the agents' commands run (DESIGN §18): "off", "workspace",
  // "strict"; "" = not said (a host from before the sandbox).
  std::string sandbox;
  // The socket of its levers (host/levers.h: `mates stop|restart|
  // interrupt`); "" = none (a host from before them).
  std::string control;
};

fs::path HostInfoPath(const Workspace& ws, std::string_view team);
Status WriteHostInfo(const Workspace& ws, std::string_view team, const HostInfo& h);
// What host.json says, whether its host lives or not.
Result<HostInfo> ReadHostInfo(const Workspace& ws, std::string_view team);
// Removes it if it is still this process's.
void RemoveHostInfo(const Workspace& ws, std::string_view team);
// The host of `team` if one is alive (its lead's host lock is held); the
// file's content when readable (a host that has not written it yet: pid 0).
std::optional<HostInfo> ReadLiveHost(const Workspace& ws, std::string_view team);
// The same for a team kept in `store` (whose liveness says whether its lead
// is hosted), hosted from `ws`: nothing if its host is another
// workspace's (another machine's) or has not written host.json yet. A host
// of teammates only (mode "teammates") lives while its process does.
std::optional<HostInfo> ReadLiveHost(const Workspace& ws, std::string_view team, TeamStore& store);

}  // namespace mates
