// README.md's examples as tests run them (DESIGN §21): its blocks, and a
// block as a bash script that runs each line as printed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/files.h"

namespace mates::testing {

// The repository's root (the tests' fixtures are in tests/scenarios).
fs::path SourceRoot();

// The lines of README.md's first code block opened by `fence` under the
// heading `## heading`, comments cut ("  # …"); empty if there is none.
std::vector<std::string> ReadmeBlock(const std::string& heading, const std::string& fence = "```\n");

// A block's lines as a bash script that stops at the first line that
// fails: a variable or a cd as it is; a line that watches or serves
// (--watch, --follow, dashboard) works if it is still at it after 3 s, and
// `cluster attach` if it is still attached, on a terminal (script(1)),
// after 3 s; one put in the background (`--port N &`) is waited for until
// its port answers. `claude_missing` (where Claude Code would be, "" if
// it is there) skips the lines that run it, loudly. `adapt` may change a
// line first (to run it as on another machine). `lines` counts those run.
std::string ScriptOf(const std::vector<std::string>& block, const std::string& claude_missing, int* lines,
                     const std::function<std::string(const std::string&)>& adapt = {});

}  // namespace mates::testing
