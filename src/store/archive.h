// Archive, not destroy (DESIGN §11). Deleting a team (`TeamDelete`, `mates
// team delete`) moves its files to
//
//   .teams/.archive/<team>-<UTC yyyymmddThhmmss>/
//       .teams/<team>/   roster, message log, inboxes, journals, activity, requests
//       .tasks/<team>/   the board
//
// an archive being a workspace of its own that holds the one team: every
// reader (log, tasks, status, the dashboard) reads it through a Workspace
// rooted there, unchanged. Two archives of a team within one second get
// `-2`, `-3`… after the stamp. `--purge` deletes for real
// (Roster::DeleteTeam).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/workspace.h"

namespace mates {

struct ArchivedTeam {
  std::string team;
  std::string stamp;  // "20261123T081500" (or with "-2"…)
  fs::path root;      // a workspace holding the team
};

fs::path ArchivesDir(const Workspace& ws);
// A new, empty archive folder for `team` (its stamp claimed: mkdir is
// atomic), for a store that writes the team into it.
Result<ArchivedTeam> NewArchive(const Workspace& ws, std::string_view team);
// Moves `team` into a new archive (renames: the team vanishes from the
// workspace at one instant). NotFound when there is no such team.
Result<ArchivedTeam> ArchiveTeam(const Workspace& ws, std::string_view team);
// The archives (of `team`, or of every team for ""), oldest first.
Result<std::vector<ArchivedTeam>> ListArchives(const Workspace& ws, std::string_view team = "");
// One archive of `team`: the one with `stamp`, or the latest for "".
Result<ArchivedTeam> FindArchive(const Workspace& ws, std::string_view team, std::string_view stamp);

}  // namespace mates
