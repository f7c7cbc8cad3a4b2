// Diagnostics on stderr as "mates: warning: …" lines, through spdlog.
// Never used for user-facing results (those go to stdout).
#pragma once

#include <string>

#include "core/status.h"

namespace mates {

void LogWarning(const std::string& message);
void LogInfo(const std::string& message);
// Debug lines appear only with MATES_DEBUG=1.
void LogDebug(const std::string& message);
// For a failure that must not stop what goes on but must not pass unsaid:
// "mates: warning: <what>: <message>".
void WarnIfFailed(const Status& s, const std::string& what);

}  // namespace mates
