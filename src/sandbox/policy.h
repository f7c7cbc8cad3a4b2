// Which sandbox a host's agents get (DESIGN §18, §19): the flag, the
// person's own `$XDG_CONFIG_HOME/mates/config.yaml`, and the workspace's
// `.mates/config.yaml`, each a `sandbox:` section:
//
//   sandbox:
//     mode: workspace            # off | workspace | strict
//     allow_write: [~/.cache/pip]
//     deny_read: [~/.config/acme]
//     network: {allow: [registry.npmjs.org, "127.0.0.1:5432"]}
//
// What narrows it (a stricter mode, more deny_read) counts from anywhere.
// What widens it (a looser mode, allow_write, network.allow) counts only
// from the person's own file or a workspace file the person trusted: a
// repository cannot open its own sandbox. The flag is the person's and
// wins over both files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/status.h"
#include "sandbox/sandbox.h"

namespace mates::sandbox {

// $XDG_CONFIG_HOME/mates/config.yaml, else ~/.config/mates/config.yaml.
fs::path UserConfigPath();

struct Chosen {
  Settings settings;
  // What was left out and why (an untrusted workspace file's widening), a
  // line each, for the person to read.
  std::vector<std::string> notes;
};

// `flag`: --sandbox, when given. `workspace_trusted`: whether W's
// .mates/config.yaml is trusted as it is (trust/trust.h). A file that does
// not parse, or names what is not a rule, is one clear error.
Result<Chosen> ChooseSettings(const fs::path& ws, std::optional<Mode> flag, bool workspace_trusted,
                              const fs::path& user_config = UserConfigPath());

}  // namespace mates::sandbox
