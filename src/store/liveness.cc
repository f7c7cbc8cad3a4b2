#include "store/liveness.h"

#include <nlohmann/json.hpp>

#include "core/file_lock.h"

namespace mates {

bool HostAlive(const Workspace& ws, std::string_view team, std::string_view member) {
  return FileLock::IsHeld(ws.AgentsDir(team) / (std::string(member) + ".lock"));
}

std::string_view ShownStatus(const Member& m, bool hosted) {
  if (m.status == MemberStatus::kShutdown) return MemberStatusName(m.status);
  return hosted ? MemberStatusName(m.status) : "offline";
}

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
