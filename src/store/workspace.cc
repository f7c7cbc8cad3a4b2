#include "store/workspace.h"

#include <cstdlib>

namespace mates {

Workspace::Workspace(const fs::path& root) {
  std::error_code ec;
  fs::path abs = fs::absolute(root.empty() ? fs::path(".") : root, ec);
  root_ = (ec ? root : abs).lexically_normal();
  // "a/b/" normalises to "a/b/" (empty last element): drop it.
  if (!root_.has_filename() && root_.has_parent_path() && root_ != root_.root_path()) {
    root_ = root_.parent_path();
  }
}

Workspace WorkspaceFrom(const std::string& flag) {
  if (!flag.empty()) return Workspace(flag);
  const char* env = std::getenv("MATES_WORKSPACE");
  if (env != nullptr && *env != '\0') return Workspace(env);
  return Workspace(fs::current_path());
}

}  // namespace mates
