// The YAML configuration files mates reads (DESIGN §18–§22): the person's
// `$XDG_CONFIG_HOME/mates/config.yaml` and a workspace's
// `.mates/config.yaml`. Each reader takes its own section; this reads the
// file once, bounded, with one clear error naming the file.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "core/files.h"
#include "core/status.h"

namespace mates {

inline constexpr size_t kMaxConfigBytes = 1 << 20;

// The file's top-level map; a null node when the file is absent or empty.
// InvalidArgument "<file>: …" when it is larger than 1 MiB, does not parse
// or is not a map.
Result<YAML::Node> ReadConfigYaml(const fs::path& file);
// The same for YAML text already read (`origin` names it in errors).
Result<YAML::Node> ParseConfigYaml(const std::string& text, const std::string& origin);

}  // namespace mates
