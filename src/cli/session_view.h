// What the CLI shows of a host::Session: its lines and events on the live
// output, the REPL of `mates run` without a goal (lines typed at the
// terminal or piped, its slash commands answered from the host's store,
// every other line a turn of the lead's: Session::Prompt), and its exit.
#pragma once

#include <string>

#include "cli/live_output.h"
#include "host/session.h"

namespace mates::cli {

// The session's lines and events on `out` (each teammate in its colour).
host::SessionOutput SessionOutputTo(LiveOutput& out);

// Reads lines until the end of input, /quit or the session stops.
// `provider_name` is what its greeting names.
void Repl(host::Session& session, LiveOutput& out, const std::string& provider_name);

// What a finished session exits with: its error printed (DESIGN §10's one
// clear line) and its code, or a signal's.
int SessionExit(const host::SessionResult& r);

}  // namespace mates::cli
