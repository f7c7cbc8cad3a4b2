#include "tmux/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>
#include <set>

#include "core/bounded_regex.h"
#include "core/names.h"
#include "core/shell_words.h"

namespace mates::tmux {

namespace {

// Alternatives, not a bracket: std::regex matches bytes, and ❯ is three.
// (Captured lines have U+00A0 turned into a space already: Claude Code
// draws its prompt as "❯\u00a0".) An empty prompt may show a placeholder
// (Qwen Code: ">   Type your message or @path/to/file").
const char* kDefaultReadyPattern = R"(^\s*(│|\|)?\s*(>|❯|›)\s*(Type your message.*)?$)";
// The status line while the CLI works: Claude Code's, Qwen Code's.
const char* kDefaultBusyPattern = "esc to (interrupt|cancel)";

Status FieldError(const std::string& where, const std::string& what) {
  return Status::InvalidArgument(where + ": " + what);
}

Status CheckKeys(const YAML::Node& n, const std::string& where, const std::set<std::string>& known) {
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>();
    if (known.count(k) == 0) return FieldError(where.empty() ? k : where + "." + k, "unknown field");
  }
  return Status::Ok();
}

Result<std::string> String(const YAML::Node& n, const std::string& where, bool required, std::string dflt = "") {
  if (!n || n.IsNull()) {
    if (required) return FieldError(where, "missing");
    return dflt;
  }
  if (!n.IsScalar()) return FieldError(where, "must be a string");
  return n.as<std::string>();
}

Result<bool> Bool(const YAML::Node& n, const std::string& where) {
  if (!n || n.IsNull()) return false;
  if (n.IsScalar()) {
    const std::string v = n.as<std::string>();
    if (v == "true") return true;
    if (v == "false") return false;
  }
  return FieldError(where, "must be true or false");
}

Result<std::string> Regex(const YAML::Node& n, const std::string& where, std::string dflt) {
  if (n && !n.IsNull() && !n.IsScalar()) return FieldError(where, "must be a string (a regex)");
  std::string v = n && !n.IsNull() ? n.as<std::string>() : dflt;
  auto re = CompileBoundedRegex(v);
  if (!re.ok()) return FieldError(where, "invalid regex '" + v + "': " + re.status().message());
  return v;
}

Result<FirstRun> FirstRunOf(const YAML::Node& n, const std::string& where, FirstRun dflt) {
  if (!n || n.IsNull()) return dflt;
  std::string v = n.IsScalar() ? n.as<std::string>() : "";
  if (v == "auto") return FirstRun::kAuto;
  if (v == "claude-code") return FirstRun::kClaudeCode;
  if (v == "none") return FirstRun::kNone;
  return FieldError(where, "must be auto, claude-code or none");
}

// mcp: auto (on for Claude Code and Qwen Code), on, off.
enum class McpChoice { kAuto, kOn, kOff };
Result<McpChoice> McpOf(const YAML::Node& n, const std::string& where, McpChoice dflt) {
  if (!n || n.IsNull()) return dflt;
  std::string v = n.IsScalar() ? n.as<std::string>() : "";
  if (v == "auto") return McpChoice::kAuto;
  if (v == "on" || v == "true") return McpChoice::kOn;
  if (v == "off" || v == "false") return McpChoice::kOff;
  return FieldError(where, "must be auto, on or off");
}

Result<double> Seconds(const YAML::Node& n, const std::string& where, double dflt) {
  if (!n || n.IsNull()) return dflt;
  try {
    double v = n.as<double>();
    if (!(v > 0)) return FieldError(where, "must be a positive number of seconds");
    return v;
  } catch (const YAML::Exception&) {
    return FieldError(where, "must be a number of seconds");
  }
}

Result<std::vector<std::string>> Command(const YAML::Node& n, const std::string& where,
                                         std::vector<std::string> dflt) {
  if (!n || n.IsNull()) return dflt;
  std::vector<std::string> out;
  if (n.IsScalar()) {
    // Words by the shell's quoting rules, nothing expanded (no shell runs).
    auto words = SplitShellWords(n.as<std::string>());
    if (!words.ok()) return FieldError(where, words.status().message() + " (or give the command as a list)");
    out = std::move(*words);
  } else if (n.IsSequence()) {
    for (const auto& e : n) {
      if (!e.IsScalar()) return FieldError(where, "must be a string or a list of strings");
      out.push_back(e.as<std::string>());
    }
  } else {
    return FieldError(where, "must be a string or a list of strings");
  }
  if (out.empty()) return FieldError(where, "is empty");
  return out;
}

Result<std::map<std::string, std::string>> Env(const YAML::Node& n, const std::string& where) {
  std::map<std::string, std::string> env;
  if (!n || n.IsNull()) return env;
  if (!n.IsMap()) return FieldError(where, "must be a map of NAME: value");
  static const std::regex name_re("^[A-Za-z_][A-Za-z0-9_]*$");
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>();
    if (!std::regex_match(k, name_re)) return FieldError(where + "." + k, "not a variable name");
    if (!kv.second.IsScalar()) return FieldError(where + "." + k, "must be a string");
    env[k] = kv.second.as<std::string>();
  }
  return env;
}

fs::path Resolve(const fs::path& base, const std::string& p) {
  fs::path path(p);
  fs::path out = (path.is_absolute() ? path : base / path).lexically_normal();
  if (!out.has_filename() && out.has_parent_path() && out != out.root_path()) out = out.parent_path();  // "a/b/" -> "a/b"
  return out;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

const AgentConfig* ClusterConfig::Find(const std::string& n) const {
  for (const auto& a : agents) {
    if (a.name == n) return &a;
  }
  return nullptr;
}

Result<ClusterConfig> LoadClusterConfig(const fs::path& file) {
  std::error_code ec;
  fs::path abs = fs::absolute(file, ec);
  if (!fs::exists(abs, ec)) {
    return Status::NotFound("no cluster config " + file.string() + " (use -c FILE; see examples/cluster)");
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(abs.string());
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file.string() + ": " + e.what());
  }
  auto wrap = [&](Status s) { return Status::InvalidArgument(file.string() + ": " + s.message()); };
  if (!root.IsMap()) return wrap(FieldError("(top)", "must be a map with 'cluster' and 'agents'"));
  if (Status s = CheckKeys(root, "", {"cluster", "agents"}); !s.ok()) return wrap(s);
  const YAML::Node c = root["cluster"];
  if (!c || !c.IsMap()) return wrap(FieldError("cluster", "missing (a map)"));
  if (Status s = CheckKeys(c, "cluster", {"name", "session_name", "work_dir", "command", "env", "startup_timeout",
                                          "response_timeout", "log_file", "ready_pattern", "busy_pattern",
                                          "first_run", "mcp"});
      !s.ok()) {
    return wrap(s);
  }
  ClusterConfig cfg;
  cfg.config_file = abs;
  fs::path base = abs.parent_path();
#define MATES_FIELD(var, expr)         \
  auto var##_r = (expr);               \
  if (!var##_r.ok()) return wrap(var##_r.status()); \
  auto var = *var##_r
  MATES_FIELD(name, String(c["name"], "cluster.name", true));
  MATES_FIELD(session, String(c["session_name"], "cluster.session_name", false, name));
  MATES_FIELD(work_dir, String(c["work_dir"], "cluster.work_dir", false, "."));
  MATES_FIELD(command, Command(c["command"], "cluster.command", {"claude", "--append-system-prompt-file",
                                                                  "{personality_file}"}));
  MATES_FIELD(env, Env(c["env"], "cluster.env"));
  MATES_FIELD(startup, Seconds(c["startup_timeout"], "cluster.startup_timeout", 60));
  MATES_FIELD(response, Seconds(c["response_timeout"], "cluster.response_timeout", 30));
  MATES_FIELD(log_file, String(c["log_file"], "cluster.log_file", false, "logs/messages.jsonl"));
  MATES_FIELD(ready, Regex(c["ready_pattern"], "cluster.ready_pattern", kDefaultReadyPattern));
  MATES_FIELD(busy, Regex(c["busy_pattern"], "cluster.busy_pattern", kDefaultBusyPattern));
  MATES_FIELD(first_run, FirstRunOf(c["first_run"], "cluster.first_run", FirstRun::kAuto));
  MATES_FIELD(mcp, McpOf(c["mcp"], "cluster.mcp", McpChoice::kAuto));
  if (Status s = ValidateName("cluster.name", name); !s.ok()) return wrap(s);
  if (Status s = ValidateName("cluster.session_name", session); !s.ok()) return wrap(s);
  cfg.name = name;
  cfg.session = session;
  cfg.work_dir = Resolve(base, work_dir);
  if (!fs::is_directory(cfg.work_dir, ec)) {
    return wrap(FieldError("cluster.work_dir", cfg.work_dir.string() + " is not a folder"));
  }
  cfg.startup_timeout_s = startup;
  cfg.response_timeout_s = response;
  cfg.log_file = Resolve(base, log_file);

  const YAML::Node agents = root["agents"];
  if (!agents || !agents.IsSequence() || agents.size() == 0) return wrap(FieldError("agents", "missing (a list)"));
  std::set<std::string> names, markers;
  std::set<int> panes;
  for (size_t i = 0; i < agents.size(); ++i) {
    std::string w = "agents[" + std::to_string(i) + "]";
    const YAML::Node a = agents[i];
    if (!a.IsMap()) return wrap(FieldError(w, "must be a map"));
    if (Status s = CheckKeys(a, w, {"name", "role", "personality_prompt_path", "marker", "pane_index", "command",
                                    "env", "reports_to", "ready_pattern", "busy_pattern", "first_run",
                                    "worktree", "mcp"});
        !s.ok()) {
      return wrap(s);
    }
    AgentConfig ag;
    MATES_FIELD(aname, String(a["name"], w + ".name", true));
    if (Status s = ValidateName(w + ".name", aname); !s.ok()) return wrap(s);
    if (!names.insert(aname).second) return wrap(FieldError(w + ".name", "'" + aname + "' appears twice"));
    ag.name = aname;
    MATES_FIELD(role, String(a["role"], w + ".role", false, aname));
    ag.role = role;
    MATES_FIELD(pers, String(a["personality_prompt_path"], w + ".personality_prompt_path", true));
    ag.personality_file = Resolve(base, pers);
    if (!fs::is_regular_file(ag.personality_file, ec)) {
      return wrap(FieldError(w + ".personality_prompt_path", ag.personality_file.string() + " does not exist"));
    }
    MATES_FIELD(marker, String(a["marker"], w + ".marker", true));
    if (marker.empty() || marker.find('\n') != std::string::npos) {
      return wrap(FieldError(w + ".marker", "must be one non-empty line"));
    }
    if (!markers.insert(marker).second) return wrap(FieldError(w + ".marker", "'" + marker + "' is another agent's"));
    ag.marker = marker;
    if (!a["pane_index"]) return wrap(FieldError(w + ".pane_index", "missing"));
    try {
      ag.pane_index = a["pane_index"].as<int>();
    } catch (const YAML::Exception&) {
      return wrap(FieldError(w + ".pane_index", "must be a whole number"));
    }
    if (ag.pane_index < 0 || !panes.insert(ag.pane_index).second) {
      return wrap(FieldError(w + ".pane_index", "must be unique and >= 0"));
    }
    MATES_FIELD(acmd, Command(a["command"], w + ".command", command));
    for (auto& arg : acmd) {
      arg = Replace(Replace(Replace(arg, "{personality_file}", ag.personality_file.string()), "{marker}", marker),
                    "{name}", aname);
    }
    ag.command = acmd;
    MATES_FIELD(aenv, Env(a["env"], w + ".env"));
    ag.env = env;
    for (const auto& [k, v] : aenv) ag.env[k] = v;
    MATES_FIELD(reports, String(a["reports_to"], w + ".reports_to", false));
    ag.reports_to = reports;
    MATES_FIELD(aready, Regex(a["ready_pattern"], w + ".ready_pattern", ready));
    ag.ready_pattern = aready;
    MATES_FIELD(abusy, Regex(a["busy_pattern"], w + ".busy_pattern", busy));
    ag.busy_pattern = abusy;
    MATES_FIELD(afirst, FirstRunOf(a["first_run"], w + ".first_run", first_run));
    if (afirst == FirstRun::kAuto) {
      afirst = !ag.command.empty() && fs::path(ag.command[0]).filename() == "claude" ? FirstRun::kClaudeCode
                                                                                      : FirstRun::kNone;
    }
    ag.first_run = afirst;
    MATES_FIELD(amcp, McpOf(a["mcp"], w + ".mcp", mcp));
    const std::string program = ag.command.empty() ? "" : fs::path(ag.command[0]).filename().string();
    ag.mcp = amcp == McpChoice::kOn || (amcp == McpChoice::kAuto && (program == "claude" || program == "qwen"));
    MATES_FIELD(tree, Bool(a["worktree"], w + ".worktree"));
    ag.worktree = tree;
    cfg.agents.push_back(ag);
  }
#undef MATES_FIELD
  // The hierarchy: given, or the seed's.
  bool has_boss = names.count("grand_boss") > 0, has_manager = names.count("middle_manager") > 0;
  for (size_t i = 0; i < cfg.agents.size(); ++i) {
    auto& ag = cfg.agents[i];
    if (!ag.reports_to.empty()) {
      if (names.count(ag.reports_to) == 0 || ag.reports_to == ag.name) {
        return wrap(FieldError("agents[" + std::to_string(i) + "].reports_to",
                               "'" + ag.reports_to + "' is not another agent of the cluster"));
      }
      continue;
    }
    if (ag.name == "grand_boss") continue;
    if (ag.name == "middle_manager") {
      if (has_boss) ag.reports_to = "grand_boss";
    } else if (has_manager) {
      ag.reports_to = "middle_manager";
    } else if (has_boss) {
      ag.reports_to = "grand_boss";
    }
  }
  std::sort(cfg.agents.begin(), cfg.agents.end(),
            [](const AgentConfig& a, const AgentConfig& b) { return a.pane_index < b.pane_index; });
  return cfg;
}

}  // namespace mates::tmux
