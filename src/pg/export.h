// A team of the PostgreSQL store as the file store's layout (DESIGN §13):
// `mates store export` writes one into a folder to inspect or keep with
// ordinary tools, and deleting a team archives it this way (DESIGN §11:
// archive, not destroy) into the deleting machine's workspace, where every
// `--archived` reader reads it as it reads a file store's archive.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"
#include "pg/store.h"
#include "store/archive.h"
#include "store/workspace.h"

namespace mates::pg {

struct Exported {
  size_t members = 0;
  size_t undelivered = 0;  // messages still in inboxes
  size_t logged = 0;       // messages in the log
  size_t requests = 0;
  size_t merges = 0;
  size_t tasks = 0;
  size_t journals = 0;
  size_t activities = 0;
};

// Writes `team` into the workspace `into` (roster, inboxes, log, requests,
// merges, board, journals, activity). AlreadyExists if `into` holds that team; a
// journal file there already that the copy is a start of is kept (it is
// ahead: lines the server did not take yet).
Result<Exported> ExportTeam(Store& store, const std::string& team, const Workspace& into);

// Archives `team`: a new archive folder in `ws` (store/archive.h) gets this
// machine's files of the team (journals, activity, host log) and the
// database's state, and only then is the team deleted from the database.
// NotFound for a team the database does not hold.
Result<ArchivedTeam> ArchiveTeam(Store& store, const Workspace& ws, const std::string& team);

}  // namespace mates::pg
