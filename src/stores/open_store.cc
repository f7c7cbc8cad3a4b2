// See open_store.h.
#include "stores/open_store.h"

#include <algorithm>
#include <cstdlib>

#include "claude/claude_store.h"
#include "core/env.h"
#include "pg/connection.h"
#include "pg/export.h"
#include "pg/schema.h"
#include "pg/store.h"

namespace mates {
namespace {

// The database `url` names, or nullopt for the file store.
Result<std::optional<pg::Target>> DatabaseOf(const std::string& url) {
  if (IsFileStoreUrl(url) || claude::IsClaudeStoreUrl(url)) return std::optional<pg::Target>();
  const size_t colon = url.find(':');
  if (colon == std::string::npos || (url.rfind("postgres", 0) != 0)) {
    // Its scheme only: the rest of a URL may hold a password.
    return Status::InvalidArgument("the store '" + url.substr(0, std::min<size_t>(colon, 32)) +
                                   ":…' is neither file:, claude: nor a PostgreSQL URL (that starts with postgres:// or "
                                   "postgresql://)");
  }
  MATES_ASSIGN_OR_RETURN(pg::Target t, pg::ParseTarget(url));
  return std::optional<pg::Target>(std::move(t));
}

// A connection to the database `url` names, or the sentence that the file
// store needs none.
template <typename Fn>
Result<std::string> OnSchema(const std::string& url, double timeout_s, const std::string& file_store_says, Fn&& fn) {
  MATES_ASSIGN_OR_RETURN(std::optional<pg::Target> target, DatabaseOf(url));
  if (!target) return file_store_says;
  MATES_ASSIGN_OR_RETURN(pg::Connection c, pg::Connection::Open(*target, timeout_s));
  return fn(c);
}

}  // namespace

bool IsFileStoreUrl(const std::string& url) { return url.empty() || url == "file:" || url == "file"; }

Status CheckStoreUrl(const std::string& url) { return DatabaseOf(url).status(); }

Result<std::unique_ptr<TeamStore>> OpenTeamStore(const std::string& url, const Workspace& ws, const Env& env,
                                                 StoreUse use) {
  if (claude::IsClaudeStoreUrl(url)) return claude::OpenClaudeStore(url, ws, env);
  MATES_ASSIGN_OR_RETURN(std::optional<pg::Target> target, DatabaseOf(url));
  if (!target) return FileTeamStore(ws, env, use);
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<pg::Store> db, pg::Store::Open(*target));
  return pg::StoreTeams(std::move(db), ws);
}

Result<std::string> InitStoreSchema(const std::string& url, double timeout_s) {
  return OnSchema(url, timeout_s, "the file store keeps its state in W/.mates: nothing to initialise",
                  [](pg::Connection& c) -> Result<std::string> {
                    MATES_ASSIGN_OR_RETURN(int was, pg::InitSchema(c));
                    if (was == pg::kSchemaVersion) {
                      return c.target().shown + ": the mates schema is there already (version " +
                             std::to_string(was) + ")";
                    }
                    return c.target().shown + ": created the mates schema (version " +
                           std::to_string(pg::kSchemaVersion) + ")";
                  });
}

Result<std::string> MigrateStoreSchema(const std::string& url, double timeout_s) {
  return OnSchema(url, timeout_s, "the file store has no schema to migrate",
                  [](pg::Connection& c) -> Result<std::string> {
                    MATES_ASSIGN_OR_RETURN(int was, pg::MigrateSchema(c));
                    if (was == pg::kSchemaVersion) {
                      return c.target().shown + ": the mates schema is current (version " + std::to_string(was) +
                             ")";
                    }
                    return c.target().shown + ": migrated the mates schema from version " + std::to_string(was) +
                           " to " + std::to_string(pg::kSchemaVersion);
                  });
}

Result<std::string> CheckStoreSchema(const std::string& url, double timeout_s) {
  return OnSchema(url, timeout_s, "file store (W/.mates)", [](pg::Connection& c) -> Result<std::string> {
    MATES_RETURN_IF_ERROR(pg::CheckSchema(c));
    return c.target().shown + ": mates schema version " + std::to_string(pg::kSchemaVersion) + " (current)";
  });
}

Result<std::string> ExportStoreTeam(const std::string& url, const std::string& team, const fs::path& dir) {
  MATES_ASSIGN_OR_RETURN(std::optional<pg::Target> target, DatabaseOf(url));
  if (!target) {
    return Status::InvalidArgument(
        "export reads a PostgreSQL store: give --store postgres://... or set MATES_STORE");
  }
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<pg::Store> store, pg::Store::Open(*target));
  MATES_ASSIGN_OR_RETURN(pg::Exported n, pg::ExportTeam(*store, team, Workspace(dir)));
  return "exported team '" + team + "' (" + std::to_string(n.members) + " members, " +
         std::to_string(n.undelivered) + " undelivered messages, " + std::to_string(n.logged) + " logged, " +
         std::to_string(n.requests) + " requests, " + std::to_string(n.merges) + " merge requests, " +
         std::to_string(n.tasks) + " tasks, " + std::to_string(n.journals) + " journals) from " +
         store->target().shown + " to " + dir.string();
}

}  // namespace mates
