#include "tools/paths.h"

namespace mates::tools {
namespace {

bool Within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

Result<fs::path> ResolveInWorkspace(const Workspace& ws, const std::string& path, bool for_write) {
  if (path.empty()) return Status::InvalidArgument("the path is empty");
  if (path.find('\0') != std::string::npos) return Status::InvalidArgument("the path contains a NUL byte");
  fs::path p(path);
  if (p.is_absolute()) {
    return Status::InvalidArgument("absolute paths are not allowed ('" + path +
                                   "'); give a path relative to the workspace " +
                                   ws.root().string());
  }
  for (const auto& part : p) {
    if (part == "..") {
      return Status::InvalidArgument("'..' is not allowed in paths ('" + path +
                                     "'): files outside the workspace are out of reach");
    }
  }
  fs::path full = (ws.root() / p).lexically_normal();
  std::error_code ec;
  fs::path root = fs::canonical(ws.root(), ec);
  if (ec) return Status::IOError("workspace " + ws.root().string() + ": " + ec.message());
  // The deepest part of the path that exists, symlinks resolved.
  fs::path existing = full;
  while (!fs::exists(fs::symlink_status(existing, ec)) && existing.has_parent_path() &&
         existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  fs::path real = fs::weakly_canonical(existing, ec);
  if (ec || !Within(real, root)) {
    return Status::InvalidArgument("'" + path + "' leads outside the workspace (through a symbolic link)");
  }
  if (fs::is_symlink(fs::symlink_status(full, ec))) {
    fs::path target = fs::weakly_canonical(full, ec);
    if (ec || !Within(target, root)) {
      return Status::InvalidArgument("'" + path + "' is a symbolic link that leads outside the workspace");
    }
  }
  if (for_write) {
    // Decided on where the write would really land, links resolved (a link
    // `notes -> .teams/t` made `notes/config.json` look like any file).
    fs::path real_target = fs::weakly_canonical(full, ec);
    if (ec) return Status::IOError("'" + path + "': " + ec.message());
    fs::path rel = real_target.lexically_relative(root);
    std::string first = rel.empty() ? "" : rel.begin()->string();
    if (first == ".teams" || first == ".tasks" || first == ".mates") {
      return Status::InvalidArgument("'" + path + "' is team state" +
                                     (real_target == full ? std::string() : " (through a symbolic link)") +
                                     ": use SendMessage and the Task tools, not file writes");
    }
    // Written where it was checked.
    return real_target;
  }
  return full;
}

}  // namespace mates::tools
