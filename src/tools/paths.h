// Where file tools may go: inside the workspace W only (DESIGN §5).
// Refused: absolute paths, any ".." component, and paths whose real
// location (symlinks followed, for the deepest part that exists) is outside
// W. Writes into W/.teams, W/.tasks and W/.mates are refused too — decided
// on where the write would really land, links resolved (DESIGN §10) — and
// a write goes to that resolved path: those files belong to the message and
// task tools. This confines the file tools; it does not sandbox `bash` (see
// bash_tool.cc).
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"
#include "store/workspace.h"

namespace mates::tools {

namespace fs = std::filesystem;

// InvalidArgument with the reason and what to do instead.
Result<fs::path> ResolveInWorkspace(const Workspace& ws, const std::string& path, bool for_write);

}  // namespace mates::tools
