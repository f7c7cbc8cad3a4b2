// Trust in a workspace's own files (DESIGN §19): what a repository supplies
// that starts commands or sends data — its `.mcp.json` servers, and (with
// hooks, DESIGN §22) `.mates/config.yaml` — is used only once the person
// trusted the workspace as it is. `mates trust` records the workspace's
// real path and the SHA-256 of each such file in
// `$XDG_CONFIG_HOME/mates/trust.json` (0600); a file whose bytes differ
// from what was trusted is untrusted again. Trust is the person's, kept
// outside every workspace: nothing in a checkout can grant it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/files.h"
#include "core/sha256.h"
#include "core/status.h"

namespace mates::trust {

// The files of a workspace that can start commands or send data, relative
// to its root.
const std::vector<std::string>& GatedFiles();

enum class FileTrust { kAbsent, kTrusted, kUntrusted, kChanged };
std::string_view FileTrustName(FileTrust t);  // absent, trusted, untrusted, changed

struct FileState {
  std::string file;    // relative to the workspace
  std::string sha256;  // of its bytes now; "" when absent
  FileTrust trust = FileTrust::kAbsent;
};

// A workspace as trust.json keeps it.
struct TrustedWorkspace {
  std::string root;  // its real path
  double trusted_at = 0;
  std::map<std::string, std::string> files;  // relative name -> SHA-256 (hex)
};

class TrustStore {
 public:
  // $XDG_CONFIG_HOME/mates/trust.json, else ~/.config/mates/trust.json.
  static fs::path DefaultPath();
  explicit TrustStore(fs::path file = DefaultPath()) : file_(std::move(file)) {}
  const fs::path& file() const { return file_; }

  // Each gated file of `workspace` and whether it is trusted as it is now.
  Result<std::vector<FileState>> Check(const fs::path& workspace) const;
  Result<FileState> CheckFile(const fs::path& workspace, const std::string& file) const;
  // Trusts `workspace`'s gated files as they are now (those present); what
  // it trusted before is replaced.
  Result<TrustedWorkspace> Trust(const fs::path& workspace);
  // NotFound if it was not trusted.
  Status Revoke(const fs::path& workspace);
  // Every trusted workspace, by path.
  Result<std::vector<TrustedWorkspace>> List() const;

 private:
  Result<std::map<std::string, TrustedWorkspace>> Load() const;
  Status Save(const std::map<std::string, TrustedWorkspace>& all) const;

  fs::path file_;
};

}  // namespace mates::trust
