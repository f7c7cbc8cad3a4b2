#include "store/liveness.h"

#include <nlohmann/json.hpp>

#include "core/file_lock.h"

namespace mates {

bool HostAlive(const Workspace& ws, std::string_view team, std::string_view member) {
  return FileLock::IsHeld(ws.AgentsDir(team) / (std::string(member) + ".lock"));
}

Shown ShownOf(const Member& m, bool hosted) {
  if (m.status != MemberStatus::kShutdown && !hosted) return Shown::kOffline;
  switch (m.status) {
    case MemberStatus::kActive: return Shown::kActive;
    case MemberStatus::kIdle: return Shown::kIdle;
    case MemberStatus::kShutdown: return Shown::kShutdown;
  }
  return Shown::kOffline;
}

std::string_view ShownName(Shown s) {
  switch (s) {
    case Shown::kActive: return "active";
    case Shown::kIdle: return "idle";
    case Shown::kShutdown: return "shutdown";
    case Shown::kOffline: return "offline";
  }
  return "offline";
}

std::string_view ShownStatus(const Member& m, bool hosted) { return ShownName(ShownOf(m, hosted)); }

std::string_view ShownStatus(const Workspace& ws, std::string_view team, const Member& m) {
  return ShownStatus(m, m.status == MemberStatus::kShutdown || HostAlive(ws, team, m.name));
}

Json TeamConfigToShownJson(const TeamConfig& c, const HostedFn& alive) {
  Json j = TeamConfigToJson(c);
  for (size_t i = 0; i < c.members.size(); ++i) {
    Json& jm = j["members"][i];
    jm["recorded_status"] = jm["status"];
    const Member& m = c.members[i];
    jm["status"] = ShownStatus(m, m.status == MemberStatus::kShutdown || alive(m.name));
  }
  return j;
}

Json TeamConfigToShownJson(const Workspace& ws, const TeamConfig& c) {
  return TeamConfigToShownJson(c, [&](std::string_view member) { return HostAlive(ws, c.name, member); });
}

}  // namespace mates
