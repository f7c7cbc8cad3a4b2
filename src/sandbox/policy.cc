#include "sandbox/policy.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "core/config_yaml.h"

namespace mates::sandbox {
namespace {

constexpr size_t kMaxEntries = 256;

// One file's sandbox section, as written.
struct Section {
  std::optional<Mode> mode;
  std::vector<fs::path> allow_write;
  std::vector<fs::path> deny_read;
  std::vector<std::string> network_allow;
};

int Strictness(Mode m) { return m == Mode::kOff ? 0 : m == Mode::kWorkspace ? 1 : 2; }

Result<std::vector<std::string>> Strings(const YAML::Node& n, const std::string& where) {
  std::vector<std::string> out;
  if (!n || n.IsNull()) return out;
  if (!n.IsSequence()) return Status::InvalidArgument(where + ": must be a list");
  if (n.size() > kMaxEntries) return Status::InvalidArgument(where + ": more than 256 entries");
  for (const auto& e : n) {
    if (!e.IsScalar()) return Status::InvalidArgument(where + ": must be a list of strings");
    out.push_back(e.as<std::string>());
  }
  return out;
}

// "~/x" or an absolute path; a relative one means nothing outside W and is
// refused rather than guessed at.
Result<fs::path> PathOf(const std::string& s, const std::string& where) {
  if (s.empty() || s.find('\0') != std::string::npos) return Status::InvalidArgument(where + ": an empty path");
  if (s == "~" || s.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    if (home == nullptr || *home != '/') return Status::InvalidArgument(where + ": '" + s + "' but HOME is not set");
    return (fs::path(home) / s.substr(s.size() > 1 ? 2 : 1)).lexically_normal();
  }
  if (s[0] != '/') return Status::InvalidArgument(where + ": '" + s + "' must be absolute or start with ~/");
  fs::path p = fs::path(s).lexically_normal();
  if (p == "/") return Status::InvalidArgument(where + ": '/' is everything");
  return p;
}

// A host name (a leading "*." for its subdomains) or host:port.
Status CheckHost(const std::string& h, const std::string& where) {
  std::string name = h;
  if (size_t colon = h.rfind(':'); colon != std::string::npos) {
    std::string port = h.substr(colon + 1);
    name = h.substr(0, colon);
    bool digits = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(port) == 0 || std::stoi(port) > 65535) {
      return Status::InvalidArgument(where + ": '" + h + "' has no port 1-65535 after ':'");
    }
  }
  if (name.rfind("*.", 0) == 0) name = name.substr(2);
  bool ok = !name.empty() && name.size() <= 253 && name.front() != '.' && name.back() != '.' &&
            name.find("..") == std::string::npos &&
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == std::string::npos;
  if (!ok) return Status::InvalidArgument(where + ": '" + h + "' is not a host name or host:port");
  return Status::Ok();
}

// The sandbox section of `file`; nullopt when the file or the section is
// not there.
Result<std::optional<Section>> ReadSection(const fs::path& file) {
  MATES_ASSIGN_OR_RETURN(YAML::Node root, ReadConfigYaml(file));
  if (root.IsNull()) return std::optional<Section>();
  const std::string origin = file.string();
  YAML::Node sb = root["sandbox"];
  if (!sb || sb.IsNull()) return std::optional<Section>();
  const std::string at = origin + ": sandbox";
  if (!sb.IsMap()) return Status::InvalidArgument(at + ": must be a map");
  Section s;
  try {
    for (const auto& kv : sb) {
      const std::string key = kv.first.as<std::string>();
      const std::string where = at + "." + key;
      if (key == "mode") {
        if (!kv.second.IsScalar()) return Status::InvalidArgument(where + ": must be off, workspace or strict");
        auto m = ParseMode(kv.second.as<std::string>());
        if (!m.ok()) return Status::InvalidArgument(where + ": " + m.status().message());
        s.mode = *m;
      } else if (key == "allow_write" || key == "deny_read") {
        MATES_ASSIGN_OR_RETURN(std::vector<std::string> list, Strings(kv.second, where));
        for (const auto& e : list) {
          MATES_ASSIGN_OR_RETURN(fs::path p, PathOf(e, where));
          (key == "allow_write" ? s.allow_write : s.deny_read).push_back(p);
        }
      } else if (key == "network") {
        if (!kv.second.IsMap()) return Status::InvalidArgument(where + ": must be a map with allow: [hosts]");
        for (const auto& nk : kv.second) {
          const std::string k = nk.first.as<std::string>();
          if (k != "allow") return Status::InvalidArgument(where + "." + k + ": not a setting (allow)");
          MATES_ASSIGN_OR_RETURN(std::vector<std::string> hosts, Strings(nk.second, where + ".allow"));
          for (const auto& h : hosts) MATES_RETURN_IF_ERROR(CheckHost(h, where + ".allow"));
          s.network_allow.insert(s.network_allow.end(), hosts.begin(), hosts.end());
        }
      } else {
        return Status::InvalidArgument(where + ": not a setting (mode, allow_write, deny_read, network)");
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(at + ": " + e.what());
  }
  return std::optional<Section>(std::move(s));
}

}  // namespace

fs::path UserConfigPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && *xdg == '/') return fs::path(xdg) / "mates" / "config.yaml";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : "/") / ".config" / "mates" / "config.yaml";
}

Result<Chosen> ChooseSettings(const fs::path& ws, std::optional<Mode> flag, bool workspace_trusted,
                              const fs::path& user_config) {
  MATES_ASSIGN_OR_RETURN(std::optional<Section> mine, ReadSection(user_config));
  const fs::path ws_file = ws / ".mates" / "config.yaml";
  MATES_ASSIGN_OR_RETURN(std::optional<Section> theirs, ReadSection(ws_file));
  Chosen c;
  Settings& s = c.settings;
  if (mine) {
    if (mine->mode) s.mode = *mine->mode;
    s.allow_write = mine->allow_write;
    s.deny_read = mine->deny_read;
    s.network_allow = mine->network_allow;
  }
  if (theirs) {
    s.deny_read.insert(s.deny_read.end(), theirs->deny_read.begin(), theirs->deny_read.end());
    std::vector<std::string> left_out;
    if (theirs->mode) {
      if (workspace_trusted || Strictness(*theirs->mode) >= Strictness(s.mode)) {
        s.mode = *theirs->mode;
      } else {
        left_out.push_back("mode: " + std::string(ModeName(*theirs->mode)));
      }
    }
    if (workspace_trusted) {
      s.allow_write.insert(s.allow_write.end(), theirs->allow_write.begin(), theirs->allow_write.end());
      s.network_allow.insert(s.network_allow.end(), theirs->network_allow.begin(), theirs->network_allow.end());
    } else {
      if (!theirs->allow_write.empty()) left_out.push_back("allow_write");
      if (!theirs->network_allow.empty()) left_out.push_back("network.allow");
    }
    if (!left_out.empty()) {
      std::string what;
      for (const auto& w : left_out) what += (what.empty() ? "" : ", ") + w;
      c.notes.push_back(ws_file.string() + " would widen the sandbox (" + what +
                        ") but is not trusted: left out; run `mates trust` in " + ws.string() + " to use it");
    }
  }
  if (flag) s.mode = *flag;
  return c;
}

}  // namespace mates::sandbox
