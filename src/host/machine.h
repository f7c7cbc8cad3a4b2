// The hosts of this user on this machine (DESIGN §27, `mates ps`). Each
// host's runtime folder (sandbox::RuntimeDirFor: TMP/mates-UID/TEAM.PID,
// the user's own, 0700) holds `where.json`, {"workspace": W, "team": T}:
// where its host.json is. A folder whose PID is gone is a dead host's (the
// next host's start removes it); a live one is checked against its
// host.json, which says what it hosts.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/workspace.h"

namespace mates::host {

// Written by a host into its runtime folder once it is ready.
Status NoteHostHere(const fs::path& run_dir, const Workspace& ws, const std::string& team);

struct HostHere {
  fs::path workspace;
  std::string team;
  int64_t pid = 0;
};
// The hosts whose process still runs, by workspace then team; a folder
// that is not one (no where.json, a broken one, another's) is passed over.
std::vector<HostHere> HostsHere();

}  // namespace mates::host
