#include "tmux/cluster_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <regex>
#include <set>

#include "core/bounded_regex.h"
#include "core/files.h"
#include "core/names.h"
#include "core/shell_words.h"
#include "tmux/cli_wiring.h"

namespace mates::tmux {

namespace {

// Alternatives, not a bracket: std::regex matches bytes, and ❯ is three.
// (Captured lines have U+00A0 turned into a space already: Claude Code
// draws its prompt as "❯\u00a0".) An empty prompt may show a placeholder
// (Qwen Code and Gemini CLI: ">   Type your message or @path/to/file";
// Codex: "› Ask Codex to do anything"; OpenCode's box: "┃  Ask anything…").
const char* kDefaultReadyPattern =
    R"(^\s*(│|\||┃)?\s*((>|❯|›)\s*((Type your message|Ask Codex to do anything).*)?|Ask anything….*)$)";
// The status line while the CLI works: Claude Code's, Qwen Code's,
// Codex's ("esc to interrupt"), Gemini CLI's ("esc to cancel"), OpenCode's
// ("esc interrupt").
const char* kDefaultBusyPattern = "esc (to )?(interrupt|cancel)";

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

constexpr std::pair<CliPreset, std::string_view> kCliNames[] = {
    {CliPreset::kClaude, "claude"}, {CliPreset::kQwen, "qwen"},         {CliPreset::kCodex, "codex"},
    {CliPreset::kGemini, "gemini"}, {CliPreset::kOpenCode, "opencode"}};

Result<CliPreset> CliOf(const YAML::Node& n, const std::string& where, CliPreset dflt) {
  if (!n || n.IsNull()) return dflt;
  std::string v = n.IsScalar() ? n.as<std::string>() : "";
  for (const auto& [cli, name] : kCliNames) {
    if (v == name) return cli;
  }
  return FieldError(where, "must be claude, qwen, codex, gemini or opencode (or give a command)");
}

// A preset's command. Who the agent is: Claude Code and Qwen Code append
// the personality file to their system prompt; Codex takes it as developer
// instructions (a TOML string on its command line); OpenCode reads it as
// instructions from its config (cli_wiring.cc); Gemini CLI, which has no
// such option, is told by the handshake.
std::vector<std::string> PresetCommand(CliPreset cli, const std::string& personality) {
  switch (cli) {
    case CliPreset::kQwen:
      return {"qwen", "--append-system-prompt", personality};
    case CliPreset::kCodex:
      return {"codex", "-c", "developer_instructions=" + TomlString(personality)};
    case CliPreset::kGemini:
      return {"gemini"};
    case CliPreset::kOpenCode:
      return {"opencode"};
    case CliPreset::kClaude:
    case CliPreset::kNone:
      break;
  }
  return {"claude", "--append-system-prompt-file", "{personality_file}"};
}

// When the CLI waits for input. OpenCode draws its input box mid-screen
// at first; its bottom row ends in "ctrl+p commands" throughout, with
// "esc interrupt" on it while it works.
std::string PresetReadyPattern(CliPreset cli) {
  return cli == CliPreset::kOpenCode ? R"(ctrl\+p commands)" : kDefaultReadyPattern;
}

// mcp: auto (on for the CLIs with a preset), on, off.
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

Result<std::map<std::string, std::string>> EnvVars(const YAML::Node& n, const std::string& where) {
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

// An http(s) URL without spaces, or `dflt` when absent.
Result<std::string> ModelUrl(const YAML::Node& n, const std::string& where, const std::string& dflt) {
  MATES_ASSIGN_OR_RETURN(std::string url, String(n, where, false, dflt));
  if (url.empty()) return url;
  if ((url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) ||
      url.find_first_of(" \t\r\n\"'") != std::string::npos) {
    return FieldError(where, "must be an http:// or https:// URL");
  }
  while (url.back() == '/') url.pop_back();
  return url;
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

std::string_view CliPresetName(CliPreset cli) {
  for (const auto& [c, name] : kCliNames) {
    if (c == cli) return name;
  }
  return "";
}

CliPreset CliPresetOf(std::string_view program) {
  const size_t slash = program.rfind('/');
  if (slash != std::string_view::npos) program.remove_prefix(slash + 1);
  for (const auto& [cli, name] : kCliNames) {
    if (program == name) return cli;
  }
  return CliPreset::kNone;
}

const AgentConfig* ClusterConfig::Find(const std::string& n) const {
  for (const auto& a : agents) {
    if (a.name == n) return &a;
  }
  return nullptr;
}

namespace {

// What the `cluster` section gives every agent that does not say otherwise.
struct AgentDefaults {
  std::vector<std::string> command;  // empty: the preset's (`cli`), else Claude Code's
  CliPreset cli = CliPreset::kNone;
  std::string model_url;
  std::map<std::string, std::string> env;
  std::string ready;  // "" = the preset's
  std::string busy;
  FirstRun first_run = FirstRun::kAuto;
  McpChoice mcp = McpChoice::kAuto;
};

// The `cluster` section into `cfg` (paths against `base`); what its agents
// inherit into `*defaults`.
Status ParseCluster(const YAML::Node& c, const fs::path& base, ClusterConfig& cfg, AgentDefaults* defaults) {
  if (!c || !c.IsMap()) return FieldError("cluster", "missing (a map)");
  MATES_RETURN_IF_ERROR(CheckKeys(c, "cluster", {"name", "session_name", "work_dir", "command", "env",
                                                 "startup_timeout", "response_timeout", "log_file",
                                                 "ready_pattern", "busy_pattern", "first_run", "mcp", "cli",
                                                 "model_url"}));
  MATES_ASSIGN_OR_RETURN(cfg.name, String(c["name"], "cluster.name", true));
  MATES_ASSIGN_OR_RETURN(cfg.session, String(c["session_name"], "cluster.session_name", false, cfg.name));
  MATES_ASSIGN_OR_RETURN(std::string work_dir, String(c["work_dir"], "cluster.work_dir", false, "."));
  MATES_ASSIGN_OR_RETURN(defaults->command, Command(c["command"], "cluster.command", {}));
  MATES_ASSIGN_OR_RETURN(defaults->cli, CliOf(c["cli"], "cluster.cli", CliPreset::kNone));
  MATES_ASSIGN_OR_RETURN(defaults->model_url, ModelUrl(c["model_url"], "cluster.model_url", ""));
  MATES_ASSIGN_OR_RETURN(defaults->env, EnvVars(c["env"], "cluster.env"));
  MATES_ASSIGN_OR_RETURN(cfg.startup_timeout_s, Seconds(c["startup_timeout"], "cluster.startup_timeout", 60));
  MATES_ASSIGN_OR_RETURN(cfg.response_timeout_s, Seconds(c["response_timeout"], "cluster.response_timeout", 30));
  MATES_ASSIGN_OR_RETURN(std::string log_file, String(c["log_file"], "cluster.log_file", false, "logs/messages.jsonl"));
  MATES_ASSIGN_OR_RETURN(defaults->ready, Regex(c["ready_pattern"], "cluster.ready_pattern", ""));
  MATES_ASSIGN_OR_RETURN(defaults->busy, Regex(c["busy_pattern"], "cluster.busy_pattern", kDefaultBusyPattern));
  MATES_ASSIGN_OR_RETURN(defaults->first_run, FirstRunOf(c["first_run"], "cluster.first_run", FirstRun::kAuto));
  MATES_ASSIGN_OR_RETURN(defaults->mcp, McpOf(c["mcp"], "cluster.mcp", McpChoice::kAuto));
  MATES_RETURN_IF_ERROR(ValidateName("cluster.name", cfg.name));
  MATES_RETURN_IF_ERROR(ValidateName("cluster.session_name", cfg.session));
  cfg.work_dir = Resolve(base, work_dir);
  std::error_code ec;
  if (!fs::is_directory(cfg.work_dir, ec)) {
    return FieldError("cluster.work_dir", cfg.work_dir.string() + " is not a folder");
  }
  cfg.log_file = Resolve(base, log_file);
  return Status::Ok();
}

// What the agents parsed so far hold, that no two may share.
struct Taken {
  std::set<std::string> names, markers;
  std::set<int> panes;
};

// One entry of `agents` (`w` names it in errors).
Result<AgentConfig> ParseAgent(const YAML::Node& a, const std::string& w, const fs::path& base,
                               const AgentDefaults& defaults, Taken& taken) {
  if (!a.IsMap()) return FieldError(w, "must be a map");
  MATES_RETURN_IF_ERROR(CheckKeys(a, w, {"name", "role", "personality_prompt_path", "marker", "pane_index",
                                         "command", "env", "reports_to", "ready_pattern", "busy_pattern",
                                         "first_run", "worktree", "mcp", "sandbox", "cli", "model_url"}));
  AgentConfig ag;
  MATES_ASSIGN_OR_RETURN(ag.name, String(a["name"], w + ".name", true));
  MATES_RETURN_IF_ERROR(ValidateName(w + ".name", ag.name));
  if (!taken.names.insert(ag.name).second) return FieldError(w + ".name", "'" + ag.name + "' appears twice");
  MATES_ASSIGN_OR_RETURN(ag.role, String(a["role"], w + ".role", false, ag.name));
  MATES_ASSIGN_OR_RETURN(std::string personality, String(a["personality_prompt_path"], w + ".personality_prompt_path", true));
  ag.personality_file = Resolve(base, personality);
  std::error_code ec;
  if (!fs::is_regular_file(ag.personality_file, ec)) {
    return FieldError(w + ".personality_prompt_path", ag.personality_file.string() + " does not exist");
  }
  MATES_ASSIGN_OR_RETURN(ag.marker, String(a["marker"], w + ".marker", true));
  if (ag.marker.empty() || ag.marker.find('\n') != std::string::npos) {
    return FieldError(w + ".marker", "must be one non-empty line");
  }
  if (!taken.markers.insert(ag.marker).second) return FieldError(w + ".marker", "'" + ag.marker + "' is another agent's");
  if (!a["pane_index"]) return FieldError(w + ".pane_index", "missing");
  try {
    ag.pane_index = a["pane_index"].as<int>();
  } catch (const YAML::Exception&) {
    return FieldError(w + ".pane_index", "must be a whole number");
  }
  if (ag.pane_index < 0 || !taken.panes.insert(ag.pane_index).second) {
    return FieldError(w + ".pane_index", "must be unique and >= 0");
  }
  // The command: the agent's; else its preset's; else the cluster's; else
  // the cluster's preset's (Claude Code's without one).
  MATES_ASSIGN_OR_RETURN(const CliPreset cli, CliOf(a["cli"], w + ".cli", CliPreset::kNone));
  auto read = ReadFilePrefix(ag.personality_file, 1 << 20);
  const std::string personality_text = read.ok() ? *read : "";
  std::vector<std::string> fallback = defaults.command;
  if (cli != CliPreset::kNone || fallback.empty()) {
    fallback = PresetCommand(cli != CliPreset::kNone ? cli : defaults.cli, personality_text);
  }
  MATES_ASSIGN_OR_RETURN(ag.command, Command(a["command"], w + ".command", fallback));
  for (auto& arg : ag.command) {
    arg = Replace(Replace(Replace(arg, "{personality_file}", ag.personality_file.string()), "{marker}", ag.marker),
                  "{name}", ag.name);
  }
  MATES_ASSIGN_OR_RETURN(auto env, EnvVars(a["env"], w + ".env"));
  ag.env = defaults.env;
  for (const auto& [k, v] : env) ag.env[k] = v;
  MATES_ASSIGN_OR_RETURN(ag.reports_to, String(a["reports_to"], w + ".reports_to", false));
  MATES_ASSIGN_OR_RETURN(ag.busy_pattern, Regex(a["busy_pattern"], w + ".busy_pattern", defaults.busy));
  // The preset: given, or the one the program is.
  ag.cli = cli != CliPreset::kNone ? cli : CliPresetOf(ag.command[0]);
  ag.enter_delay_ms = ag.cli == CliPreset::kGemini ? 300 : 0;
  MATES_ASSIGN_OR_RETURN(ag.ready_pattern,
                         Regex(a["ready_pattern"], w + ".ready_pattern",
                               !defaults.ready.empty() ? defaults.ready : PresetReadyPattern(ag.cli)));
  MATES_ASSIGN_OR_RETURN(ag.model_url, ModelUrl(a["model_url"], w + ".model_url", defaults.model_url));
  MATES_ASSIGN_OR_RETURN(ag.first_run, FirstRunOf(a["first_run"], w + ".first_run", defaults.first_run));
  if (ag.first_run == FirstRun::kAuto) ag.first_run = ag.cli == CliPreset::kClaude ? FirstRun::kClaudeCode : FirstRun::kNone;
  MATES_ASSIGN_OR_RETURN(McpChoice mcp, McpOf(a["mcp"], w + ".mcp", defaults.mcp));
  ag.mcp = mcp == McpChoice::kOn || (mcp == McpChoice::kAuto && ag.cli != CliPreset::kNone);
  MATES_ASSIGN_OR_RETURN(ag.worktree, Bool(a["worktree"], w + ".worktree"));
  MATES_ASSIGN_OR_RETURN(ag.sandbox, Bool(a["sandbox"], w + ".sandbox"));
  if (ag.sandbox && ag.mcp) {
    // `mates mcp` is a long-lived server; the sandbox's gate runs one
    // command at a time.
    return FieldError(w + ".sandbox", "a sandboxed agent reaches the team with `mates send` and `mates tasks`, not "
                                      "over MCP: set mcp: false for it");
  }
  return ag;
}

// The hierarchy: given (another agent of the cluster), or the seed's.
Status FillReportsTo(std::vector<AgentConfig>& agents, const std::set<std::string>& names) {
  const bool has_boss = names.count("grand_boss") > 0, has_manager = names.count("middle_manager") > 0;
  for (size_t i = 0; i < agents.size(); ++i) {
    AgentConfig& ag = agents[i];
    if (!ag.reports_to.empty()) {
      if (names.count(ag.reports_to) == 0 || ag.reports_to == ag.name) {
        return FieldError("agents[" + std::to_string(i) + "].reports_to",
                          "'" + ag.reports_to + "' is not another agent of the cluster");
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
  return Status::Ok();
}

Status ParseConfig(const YAML::Node& root, const fs::path& abs, ClusterConfig& cfg) {
  if (!root.IsMap()) return FieldError("(top)", "must be a map with 'cluster' and 'agents'");
  MATES_RETURN_IF_ERROR(CheckKeys(root, "", {"cluster", "agents"}));
  cfg.config_file = abs;
  const fs::path base = abs.parent_path();
  AgentDefaults defaults;
  MATES_RETURN_IF_ERROR(ParseCluster(root["cluster"], base, cfg, &defaults));
  const YAML::Node agents = root["agents"];
  if (!agents || !agents.IsSequence() || agents.size() == 0) return FieldError("agents", "missing (a list)");
  Taken taken;
  for (size_t i = 0; i < agents.size(); ++i) {
    MATES_ASSIGN_OR_RETURN(AgentConfig ag,
                           ParseAgent(agents[i], "agents[" + std::to_string(i) + "]", base, defaults, taken));
    cfg.agents.push_back(std::move(ag));
  }
  MATES_RETURN_IF_ERROR(FillReportsTo(cfg.agents, taken.names));
  std::sort(cfg.agents.begin(), cfg.agents.end(),
            [](const AgentConfig& a, const AgentConfig& b) { return a.pane_index < b.pane_index; });
  return Status::Ok();
}

}  // namespace

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
  ClusterConfig cfg;
  if (Status s = ParseConfig(root, abs, cfg); !s.ok()) return Status::InvalidArgument(file.string() + ": " + s.message());
  return cfg;
}

}  // namespace mates::tmux
