// The agent CLIs mates drives or lets join a team (DESIGN §28), each with
// the line that installs it: what `doctor` and `cluster up` say when one is
// missing.
#pragma once

#include <span>
#include <string_view>

namespace mates::tmux {

struct KnownCli {
  std::string_view program;  // on PATH
  std::string_view name;     // as people call it
  std::string_view install;  // the command that installs it
};

std::span<const KnownCli> KnownClis();
// The CLI whose program is `program` (a name or a path), or null.
const KnownCli* KnownCliOf(std::string_view program);

}  // namespace mates::tmux
