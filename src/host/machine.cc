#include "host/machine.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"
#include "core/names.h"
#include "sandbox/sandbox.h"

namespace mates::host {

Status NoteHostHere(const fs::path& run_dir, const Workspace& ws, const std::string& team) {
  return WriteFileAtomic(run_dir / "where.json",
                         DumpJson(Json{{"workspace", ws.root().string()}, {"team", team}}) + "\n", 0600);
}

std::vector<HostHere> HostsHere() {
  std::vector<HostHere> out;
  const fs::path base = sandbox::RuntimeBase();
  struct stat st {};
  // Only a folder of this user's own is read (as RuntimeDirFor makes it).
  if (::lstat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) return out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    const std::string n = e.path().filename().string();
    const size_t dot = n.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == n.size() ||
        n.find_first_not_of("0123456789", dot + 1) != std::string::npos || n.size() - dot > 12) {
      continue;
    }
    const long pid = std::atol(n.c_str() + dot + 1);
    if (pid <= 0 || !sandbox::RuntimeDirInUse(e.path())) continue;
    auto text = ReadFilePrefix(e.path() / "where.json", 16 << 10);
    if (!text.ok()) continue;
    auto j = ParseJson(*text);
    if (!j.ok() || !j->is_object()) continue;
    auto ws = JsonString(*j, "workspace", true);
    auto team = JsonString(*j, "team", true);
    if (!ws.ok() || !team.ok() || ws->empty() || (*ws)[0] != '/' || !ValidateName("team name", *team).ok()) continue;
    out.push_back({fs::path(*ws), *team, pid});
  }
  std::sort(out.begin(), out.end(), [](const HostHere& a, const HostHere& b) {
    return std::tie(a.workspace, a.team, a.pid) < std::tie(b.workspace, b.team, b.pid);
  });
  return out;
}

}  // namespace mates::host
