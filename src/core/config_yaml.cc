#include "core/config_yaml.h"

namespace mates {

Result<YAML::Node> ParseConfigYaml(const std::string& text, const std::string& origin) {
  if (text.size() > kMaxConfigBytes) return Status::InvalidArgument(origin + ": larger than 1 MiB");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(origin + ": " + e.what());
  }
  if (!root || root.IsNull()) return YAML::Node(YAML::NodeType::Null);
  if (!root.IsMap()) return Status::InvalidArgument(origin + ": must be a map");
  return root;
}

Result<YAML::Node> ReadConfigYaml(const fs::path& file) {
  auto text = ReadFilePrefix(file, kMaxConfigBytes + 1);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return YAML::Node(YAML::NodeType::Null);
    return text.status();
  }
  return ParseConfigYaml(*text, file.string());
}

}  // namespace mates
