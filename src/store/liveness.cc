#include "store/liveness.h"

#include <nlohmann/json.hpp>

#include "core/file_lock.h"

namespace mates {

bool HostAlive(const Workspace& ws, std::string_view team, std::string_view member) {
  return FileLock::IsHeld(ws.AgentsDir(team) / (std::string(member) + ".lock"));
}

std::string_view ShownStatus(const Workspace& ws, std::string_view team, const Member& m) {
  if (m.status == MemberStatus::kShutdown) return MemberStatusName(m.status);
  return HostAlive(ws, team, m.name) ? MemberStatusName(m.status) : "offline";
}

Json TeamConfigToShownJson(const Workspace& ws, const TeamConfig& c) {
  Json j = TeamConfigToJson(c);
  for (size_t i = 0; i < c.members.size(); ++i) {
    Json& jm = j["members"][i];
    jm["recorded_status"] = jm["status"];
    jm["status"] = ShownStatus(ws, c.name, c.members[i]);
  }
  return j;
}

}  // namespace mates
