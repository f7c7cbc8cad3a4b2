// Diagnostics on stderr as "mates: warning: …" lines, through spdlog.
// Never used for user-facing results (those go to stdout).
#pragma once

#include <functional>
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

// Where warnings and info lines go besides stderr, redacted as they are
// there: a host's OTLP export of logs (DESIGN §29). One tap at a time; an
// empty one removes it. The tap runs on the logging thread and must not
// block; a line it logs itself is not tapped again.
using LogTap = std::function<void(bool warning, const std::string& line)>;
void SetLogTap(LogTap tap);

}  // namespace mates
