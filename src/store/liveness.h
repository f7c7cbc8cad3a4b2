// Liveness (DESIGN §10): the status a roster records is the last one its
// host wrote, and a host that died wrote nothing more. So wherever a
// member's status is shown, it is checked against the member's host lock
// (`agents/<name>.lock`, held by the process that hosts it, freed by the
// kernel when that process dies): nobody holds it → `offline`.
#pragma once

#include <functional>
#include <string_view>

#include "store/roster.h"
#include "store/workspace.h"

namespace mates {

// Whether some process hosts `member` of `team` now.
bool HostAlive(const Workspace& ws, std::string_view team, std::string_view member);
// What to show for `m`: "shutdown" as recorded; else its recorded status if
// its host lives, else "offline".
std::string_view ShownStatus(const Workspace& ws, std::string_view team, const Member& m);
// TeamConfigToJson with each member's "status" shown as above and the
// recorded one kept as "recorded_status".
Json TeamConfigToShownJson(const Workspace& ws, const TeamConfig& c);

// The same wherever liveness is kept (a PostgreSQL store holds it in
// advisory locks, DESIGN §13): `alive(member)` says whether it is hosted.
using HostedFn = std::function<bool(std::string_view member)>;
std::string_view ShownStatus(const Member& m, bool hosted);

// A member as shown: its recorded status, or offline when nobody hosts it.
enum class Shown { kActive, kIdle, kShutdown, kOffline };
Shown ShownOf(const Member& m, bool hosted);
std::string_view ShownName(Shown s);  // active | idle | shutdown | offline
Json TeamConfigToShownJson(const TeamConfig& c, const HostedFn& alive);

}  // namespace mates
