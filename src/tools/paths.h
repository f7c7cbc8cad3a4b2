// Where file tools may go: inside the workspace W only (DESIGN §5).
// Refused: absolute paths, any ".." component, and paths whose real
// location (symlinks followed, for the deepest part that exists) is outside
// W. Writes into W/.teams and W/.tasks are refused too: those files belong
// to the message and task tools. This confines the file tools; it does not
// sandbox `bash` (see bash_tool.cc).
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
