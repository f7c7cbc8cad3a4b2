#include "trust/trust.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/json.h"
#include "core/limits.h"

namespace mates::trust {
namespace {

constexpr size_t kMaxGatedFileBytes = 1 << 20;  // as .mcp.json and config.yaml are bounded where they are read
constexpr size_t kMaxTrustFileBytes = 16 << 20;

// The workspace as trust.json names it: its real path, so that a link to
// it, or a path with `..`, is the same workspace.
Result<std::string> RealRoot(const fs::path& workspace) {
  std::error_code ec;
  fs::path real = fs::canonical(workspace, ec);
  if (ec) return Status::NotFound("no workspace " + workspace.string() + ": " + ec.message());
  return real.string();
}

}  // namespace

const std::vector<std::string>& GatedFiles() {
  static const std::vector<std::string> files = {".mcp.json", ".mates/config.yaml"};
  return files;
}

std::string_view FileTrustName(FileTrust t) {
  switch (t) {
    case FileTrust::kAbsent: return "absent";
    case FileTrust::kTrusted: return "trusted";
    case FileTrust::kUntrusted: return "untrusted";
    case FileTrust::kChanged: return "changed";
  }
  return "untrusted";
}

fs::path TrustStore::DefaultPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && xdg[0] == '/') return fs::path(xdg) / "mates" / "trust.json";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && home[0] != '\0' ? home : "/") / ".config" / "mates" / "trust.json";
}

Result<std::map<std::string, TrustedWorkspace>> TrustStore::Load() const {
  std::map<std::string, TrustedWorkspace> all;
  auto text = ReadFilePrefix(file_, kMaxTrustFileBytes + 1);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return all;
    return text.status();
  }
  auto corrupt = [&](const std::string& why) {
    return Status::Corrupt(file_.string() + " is corrupt: " + why + " (fix it, or remove it to trust nothing)");
  };
  if (text->size() > kMaxTrustFileBytes) return corrupt("it is far too large");
  auto doc = ParseJson(*text);
  if (!doc.ok()) return corrupt(doc.status().message());
  auto ws = doc->is_object() ? doc->find("workspaces") : doc->end();
  if (!doc->is_object() || ws == doc->end() || !ws->is_object()) return corrupt("no \"workspaces\" object");
  for (const auto& [root, entry] : ws->items()) {
    if (!entry.is_object()) return corrupt("workspace " + root + " is not an object");
    TrustedWorkspace t;
    t.root = root;
    auto at = entry.find("trusted_at");
    if (at != entry.end() && at->is_number()) t.trusted_at = at->get<double>();
    auto files = entry.find("files");
    if (files == entry.end() || !files->is_object()) return corrupt("workspace " + root + " has no \"files\" object");
    for (const auto& [name, hash] : files->items()) {
      if (!hash.is_string()) return corrupt("workspace " + root + ": " + name + " has no SHA-256");
      t.files[name] = hash.get<std::string>();
    }
    all[root] = std::move(t);
  }
  return all;
}

Status TrustStore::Save(const std::map<std::string, TrustedWorkspace>& all) const {
  Json ws = Json::object();
  for (const auto& [root, t] : all) {
    Json files = Json::object();
    for (const auto& [name, hash] : t.files) files[name] = hash;
    ws[root] = Json{{"trusted_at", t.trusted_at}, {"files", std::move(files)}};
  }
  MATES_RETURN_IF_ERROR(EnsureDir(file_.parent_path()));
  return WriteFileAtomic(file_, DumpJsonPretty(Json{{"workspaces", std::move(ws)}}), 0600);
}

Result<FileState> TrustStore::CheckFile(const fs::path& workspace, const std::string& file) const {
  FileState s;
  s.file = file;
  std::error_code ec;
  if (!fs::exists(workspace, ec)) return s;  // a workspace made later holds nothing yet
  MATES_ASSIGN_OR_RETURN(std::string root, RealRoot(workspace));
  auto bytes = ReadFilePrefix(fs::path(root) / file, kMaxGatedFileBytes + 1);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return s;  // absent
    return bytes.status();
  }
  s.sha256 = Sha256Hex(*bytes);
  MATES_ASSIGN_OR_RETURN(auto all, Load());
  s.trust = FileTrust::kUntrusted;
  if (auto it = all.find(root); it != all.end()) {
    if (auto known = it->second.files.find(file); known != it->second.files.end()) {
      s.trust = known->second == s.sha256 ? FileTrust::kTrusted : FileTrust::kChanged;
    }
  }
  return s;
}

Result<std::vector<FileState>> TrustStore::Check(const fs::path& workspace) const {
  std::vector<FileState> out;
  for (const auto& f : GatedFiles()) {
    MATES_ASSIGN_OR_RETURN(FileState s, CheckFile(workspace, f));
    out.push_back(std::move(s));
  }
  return out;
}

Result<TrustedWorkspace> TrustStore::Trust(const fs::path& workspace) {
  MATES_ASSIGN_OR_RETURN(std::string root, RealRoot(workspace));
  MATES_RETURN_IF_ERROR(EnsureDir(file_.parent_path()));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(fs::path(file_.string() + ".lock")));
  MATES_ASSIGN_OR_RETURN(auto all, Load());
  TrustedWorkspace t;
  t.root = root;
  t.trusted_at = WallSeconds();
  for (const auto& f : GatedFiles()) {
    auto bytes = ReadFilePrefix(fs::path(root) / f, kMaxGatedFileBytes + 1);
    if (!bytes.ok()) {
      if (bytes.status().code() == StatusCode::kNotFound) continue;
      return bytes.status();
    }
    t.files[f] = Sha256Hex(*bytes);
  }
  all[root] = t;
  MATES_RETURN_IF_ERROR(Save(all));
  return t;
}

Status TrustStore::Revoke(const fs::path& workspace) {
  MATES_ASSIGN_OR_RETURN(std::string root, RealRoot(workspace));
  MATES_RETURN_IF_ERROR(EnsureDir(file_.parent_path()));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(fs::path(file_.string() + ".lock")));
  MATES_ASSIGN_OR_RETURN(auto all, Load());
  if (all.erase(root) == 0) return Status::NotFound(root + " is not trusted");
  return Save(all);
}

Result<std::vector<TrustedWorkspace>> TrustStore::List() const {
  MATES_ASSIGN_OR_RETURN(auto all, Load());
  std::vector<TrustedWorkspace> out;
  for (auto& [root, t] : all) out.push_back(std::move(t));
  return out;
}

}  // namespace mates::trust
