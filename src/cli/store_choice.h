// The store a command works on (DESIGN §13, §17, §21: Globals::store) —
// the file store (file:, the default: the files under W) or
// a PostgreSQL database (postgres://… or postgresql://…), opened through
// the one factory (stores/open_store.h).
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::cli {

// The chosen store, seen from the workspace `ws`, in the process's parts
// (Globals::env).
struct Globals;
Result<std::unique_ptr<TeamStore>> OpenChosenStore(const Globals& g, const std::string& url, const Workspace& ws,
                                                   StoreUse use = {});

}  // namespace mates::cli
