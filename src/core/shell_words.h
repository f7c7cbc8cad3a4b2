// Splits a command string into words by the shell's quoting rules, without
// any expansion: whitespace separates words; '…' is literal; "…" is literal
// but for \" \\ \$ \` and a backslash-newline; outside quotes a backslash
// takes the next character as it is. `bash agent.sh 'BOSS OK' 0.3` is
// {bash, agent.sh, BOSS OK, 0.3}. `$HOME`, `*` and `~` stay as written (no
// shell runs): a config that needs them says `bash -c '…'`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mates {

// InvalidArgument for an unterminated quote or a trailing backslash.
Result<std::vector<std::string>> SplitShellWords(std::string_view s);

}  // namespace mates
