// The one place a store is chosen (DESIGN §17): a URL names it, and what
// comes back is a TeamStore that every caller uses alike.
//
//   "" | file:              the files under the workspace W (the default)
//   postgres://… | postgresql://…   a PostgreSQL database shared by hosts
//                           on several machines (DESIGN §13)
//   claude: | claude:DIR    Claude Code's own agent teams, in its home
//                           (claude/claude_store.h, DESIGN §24)
//
// A command takes the URL by the rule of DESIGN §21. Nothing outside
// src/pg/ and this file knows which backend it has; what only a database
// has — its schema — is administered through the functions below, which
// say what they did in a sentence for a person.
#pragma once

#include <memory>
#include <string>

#include "core/env.h"
#include "core/status.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates {

// Whether `url` names the file store.
bool IsFileStoreUrl(const std::string& url);
// `url` checked without being opened (a forked host opens its own
// connections): InvalidArgument naming what is wrong.
Status CheckStoreUrl(const std::string& url);
// The store `url` names, seen from the workspace `ws` of this machine:
// where the file store's files are, where a deleted team is archived, and
// where a host of a team says so (host.json). A database is connected to
// and its schema checked (FailedPrecondition naming what to run). `env`:
// the process's parts (core/env.h), which must outlive the store.
Result<std::unique_ptr<TeamStore>> OpenTeamStore(const std::string& url, const Workspace& ws, const Env& env,
                                                 StoreUse use = {});

// mates store init | migrate | status: the schema of the database `url`
// names, connecting for up to `timeout_s`; what was found or done, as a
// sentence. The file store has no schema: each says so.
Result<std::string> InitStoreSchema(const std::string& url, double timeout_s);
Result<std::string> MigrateStoreSchema(const std::string& url, double timeout_s);
Result<std::string> CheckStoreSchema(const std::string& url, double timeout_s);
// mates store export: `team` of the database `url` names written as the
// file layout into the workspace at `dir`; what was written, as a sentence.
Result<std::string> ExportStoreTeam(const std::string& url, const std::string& team, const fs::path& dir);

}  // namespace mates
