// The store a command works on (DESIGN §13): --store URL, else
// $MATES_STORE — the file store (file:, the default: the files under W) or
// a PostgreSQL database (postgres://… or postgresql://…).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "pg/connection.h"
#include "pg/store.h"

namespace mates::cli {

// The PostgreSQL target, or nullopt for the file store.
Result<std::optional<pg::Target>> ChosenStore(const std::string& url);

// The chosen store, opened (its schema checked): nullptr for the file
// store.
Result<std::unique_ptr<pg::Store>> OpenChosenStore(const std::string& url);

// `--store URL` (default $MATES_STORE) on a command that works on either.
void AddStoreOption(CLI::App* cmd, std::string& url);

}  // namespace mates::cli
