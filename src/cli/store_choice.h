// The store a command works on (DESIGN §13): --store URL, else
// $MATES_STORE — the file store (file:, the default: the files under W) or
// a PostgreSQL database (postgres://… or postgresql://…).
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "pg/connection.h"

namespace mates::cli {

// The PostgreSQL target, or nullopt for the file store.
Result<std::optional<pg::Target>> ChosenStore(const std::string& url);

}  // namespace mates::cli
