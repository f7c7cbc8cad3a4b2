// The store's schema in PostgreSQL (DESIGN §13), versioned: every step
// from version N to N+1 is one script, applied in one transaction under an
// advisory lock, so two `mates store migrate` at once apply it once.
#pragma once

#include "core/status.h"
#include "pg/connection.h"

namespace mates::pg {

// The version this binary reads and writes.
inline constexpr int kSchemaVersion = 13;

// The database's version: 0 when it has no mates schema.
Result<int> SchemaVersion(Connection& c);

// `mates store init`: creates the schema in a database that has none. At
// the current version already: nothing to do (returns it). Older: says to
// migrate. Newer: says to upgrade mates. Returns the version found.
Result<int> InitSchema(Connection& c);
// `mates store migrate`: brings an existing schema to kSchemaVersion.
// Returns the version it was at.
Result<int> MigrateSchema(Connection& c);

// Applies the steps up to `version` only (tests: a database as an older
// mates left it, to migrate).
Result<int> ApplySchemaUpTo(Connection& c, int version);

// What every other command checks first: FailedPrecondition saying what to
// run (init, migrate, or a newer mates) unless the schema is current.
Status CheckSchema(Connection& c);

}  // namespace mates::pg
