#include "cli/cli_common.h"

#include <regex>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <sstream>
#include <iostream>

#include "agent/process_env.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/config_yaml.h"
#include "core/names.h"
#include "core/text.h"
#include "sandbox/policy.h"
#include "store/archive.h"
#include "store/elicitation.h"
#include "store/roster.h"
#include "tmux/cluster_config.h"
#include "trust/trust.h"

namespace mates::cli {

int Fail(const Status& s) {
  std::cerr << "mates: error: " << s.message() << std::endl;
  return ExitCodeFor(s);
}

int Usage(const std::string& message) {
  return Fail(Status::InvalidArgument(message));
}

std::string ShellQuoted(const std::string& w) {
  const bool bare = !w.empty() && std::all_of(w.begin(), w.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("@%+=:,./-_", c) != nullptr;
  });
  if (bare) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

fs::path CurrentTeamPath(const Workspace& ws) { return ws.root() / ".mates" / "team"; }

// `store:` of a config file, or "" when it has none.
Result<std::string> StoreIn(const fs::path& file) {
  MATES_ASSIGN_OR_RETURN(YAML::Node root, ReadConfigYaml(file));
  if (root.IsNull() || !root["store"]) return std::string();
  const YAML::Node n = root["store"];
  if (!n.IsScalar()) return Status::InvalidArgument(file.string() + ": store: must be a URL (file: or postgres://...)");
  return n.as<std::string>();
}

}  // namespace

const Env& Globals::env() const {
  if (!process) process = std::make_shared<ProcessEnv>(Watcher::OptionsFromVariables(), Clock::Real(), price_table);
  return process->env();
}

std::string Globals::Mates() const {
  std::string out = "mates";
  if (!workspace.empty()) out += " -w " + ShellQuoted(fs::absolute(workspace).lexically_normal().string());
  if (store_given && !store.empty()) out += " --store " + ShellQuoted(store);
  return out;
}

std::string Globals::Pasteable(const std::string& hint) const {
  if (hint.rfind("mates ", 0) != 0) return hint;
  return Mates() + hint.substr(5);
}

std::string Globals::PasteableIn(const std::string& text) const {
  static const std::regex kCommand("(^|[\\s(`])mates (?=[a-z])");
  std::string out;
  auto from = text.begin();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kCommand); it != std::sregex_iterator(); ++it) {
    const auto at = text.begin() + it->position() + it->length(1);
    out.append(from, at);
    out += Mates() + " ";  // not a regex format: a workspace path may hold a '$'
    from = at + 6;
  }
  return out.append(from, text.end());
}

CLI::Option* AddTeamOption(CLI::App* cmd, Globals& g) {
  return cmd->add_option("--team", g.team,
                         "The team (default: $MATES_TEAM, else the current team of `mates team use`, else default)");
}

void AddStoreOption(CLI::App* cmd, Globals& g) {
  cmd->add_option("--store", g.store,
                  "The store: file: or postgres://... (default: $MATES_STORE, else store: in .mates/config.yaml, "
                  "else file:)");
}

void AddProviderOptions(CLI::App* cmd, std::string& provider, std::string& model, std::string& base_url) {
  cmd->add_option("--provider", provider,
                  "anthropic, openai, openai-responses, gemini or scripted (default: anthropic if ANTHROPIC_API_KEY is set)");
  cmd->add_option("--model", model, "Model (default: $MATES_MODEL, else the provider's)");
  cmd->add_option("--base-url", base_url, "API base URL (anthropic: without /v1; openai, openai-responses: with /v1; gemini: without /v1beta)");
}

Result<std::string> CurrentTeam(const Workspace& ws) {
  const fs::path file = CurrentTeamPath(ws);
  MATES_ASSIGN_OR_RETURN(std::string text, ReadFilePrefix(file, 1024));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (Status s = ValidateName("team name", text); !s.ok()) {
    return Status::InvalidArgument(file.string() + ": " + s.message() + " (mates team use TEAM sets it)");
  }
  return text;
}

Status SetCurrentTeam(const Workspace& ws, const std::string& team) {
  const fs::path file = CurrentTeamPath(ws);
  if (team.empty()) {
    std::error_code ec;
    fs::remove(file, ec);
    return ec ? Status::IOError("cannot remove " + file.string() + ": " + ec.message()) : Status::Ok();
  }
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(EnsureDir(file.parent_path()));
  return WriteFileAtomic(file, team + "\n");
}

fs::path ClusterPointer(const Workspace& ws) { return ws.root() / ".mates" / "cluster"; }

std::optional<fs::path> ClusterWorkspace(const Workspace& ws, const std::string& team) {
  auto pointed = ReadFilePrefix(ClusterPointer(ws), 4096);
  if (!pointed.ok()) return std::nullopt;
  const std::string config = pointed->substr(0, pointed->find('\n'));
  if (config.empty()) return std::nullopt;
  auto c = tmux::LoadClusterConfig(config);
  if (!c.ok() || c->name != team || !fs::exists(Workspace(c->work_dir).ConfigPath(team))) return std::nullopt;
  return c->work_dir;
}

Status ResolveTeamAndStore(Globals& g) {
  Workspace ws = g.ws();
  if (!g.team.empty()) {
    g.team_from = TeamFrom::kFlag;
  } else if (const char* env = std::getenv("MATES_TEAM"); env != nullptr && *env != '\0') {
    g.team = env;
    g.team_from = TeamFrom::kEnv;
  } else if (auto current = CurrentTeam(ws); current.ok()) {
    g.team = *current;
    g.team_from = TeamFrom::kCurrent;
  } else if (current.status().code() != StatusCode::kNotFound && !g.setting_current_team) {
    return current.status();
  } else {
    g.team = "default";
    g.team_from = TeamFrom::kDefault;
  }
  // A team named here that lives where a cluster brought up from here
  // works (`cluster up -c` with its work_dir elsewhere): that folder.
  if (g.team_from != TeamFrom::kDefault && !fs::exists(ws.ConfigPath(g.team))) {
    if (auto there = ClusterWorkspace(ws, g.team)) {
      g.workspace = there->string();
      ws = g.ws();
    }
  }

  g.store_given = !g.store.empty();
  if (g.store_given) return Status::Ok();
  if (const char* env = std::getenv("MATES_STORE"); env != nullptr && *env != '\0') {
    g.store = env;
    return Status::Ok();
  }
  const std::string kConfig = ".mates/config.yaml";
  MATES_ASSIGN_OR_RETURN(std::string in_ws, StoreIn(ws.root() / kConfig));
  if (!in_ws.empty()) {
    MATES_ASSIGN_OR_RETURN(trust::FileState state, trust::TrustStore().CheckFile(ws.root(), kConfig));
    if (state.trust == trust::FileTrust::kTrusted) {
      g.store = in_ws;
      return Status::Ok();
    }
    std::cerr << "mates: warning: " << (ws.root() / kConfig).string() << ": its store: is not used: the file is "
              << trust::FileTrustName(state.trust) << " (mates trust uses it)" << std::endl;
  }
  // The person's own file, when this process may read it (a command run
  // as another user with this HOME may not: then the files, said).
  auto in_user = StoreIn(sandbox::UserConfigPath());
  if (!in_user.ok() && in_user.status().code() == StatusCode::kIOError) {
    std::cerr << "mates: warning: " << in_user.status().message() << ": its store: is not used" << std::endl;
    return Status::Ok();
  }
  MATES_ASSIGN_OR_RETURN(g.store, std::move(in_user));
  if (g.store == "file" || g.store == "file:") g.store.clear();
  return Status::Ok();
}

Status CheckSeconds(const std::string& flag, double value, double min, bool min_inclusive) {
  bool ok = std::isfinite(value) && (min_inclusive ? value >= min : value > min) &&
            value <= kMaxSeconds;
  if (ok) return Status::Ok();
  std::ostringstream range;
  range << (min_inclusive ? ">= " : "> ") << min << " and <= " << kMaxSeconds;
  std::ostringstream got;
  got << value;
  return Status::InvalidArgument(flag + " takes a number of seconds " + range.str() + ", got " +
                                 got.str());
}

std::string FormatMessage(const Message& m) {
  std::string out = "[" + ClockTime(m.timestamp) + "] " + m.sender;
  if (!m.recipient.empty()) out += " -> " + m.recipient;
  // Another system's own type, where it has one (Claude Code's protocol).
  out += " (" + (m.protocol.empty() ? std::string(MessageTypeName(m.type)) : ForTerminal(m.protocol));
  if (!m.request_id.empty()) out += " " + ForTerminal(m.request_id);
  if (m.approve.has_value()) out += *m.approve ? ", approved" : ", rejected";
  out += ")";
  if (m.read.has_value() && !*m.read) out += " UNREAD";
  if (!m.summary.empty()) out += " [" + ForTerminal(m.summary) + "]";
  if (m.type == MessageType::kElicitationRequest) {
    if (auto q = elicitation::ParseQuestion(m.content); q.ok()) {
      out += ": MCP server " + ForTerminal(q->server) + " asks: " + ForTerminal(q->message);
      for (const auto& line : elicitation::DescribeFields(q->schema)) out += "\n    " + ForTerminal(line);
      out += "\n  answer: mates answer " + m.request_id + " NAME=VALUE...  or: mates answer " + m.request_id +
             " --decline";
      return out;
    }
  }
  // What members write may hold anything; a terminal shows it harmless.
  out += ": " + ForTerminal(m.content);
  if (!m.feedback.empty() && m.feedback != m.content) out += "\n  feedback: " + ForTerminal(m.feedback);
  return out;
}

namespace {
std::string IdList(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) {
    if (!s.empty()) s += ", ";
    s += "#" + std::to_string(id);
  }
  return s;
}
}  // namespace

std::string FormatTaskLine(const Task& t, const std::map<int64_t, TaskStatus>* board) {
  std::string out = "#" + std::to_string(t.id) + " [" + std::string(TaskStatusName(t.status)) +
                    "] " + t.subject;
  if (!t.owner.empty()) out += "  (owner: " + t.owner + ")";
  if (!t.paths.empty()) {
    out += "  lease:";
    for (const auto& p : t.paths) out += " " + p;
  }
  if (t.blocked_by.empty()) return out;
  if (board == nullptr || t.status != TaskStatus::kPending) return out + "  depends on " + IdList(t.blocked_by);
  // A pending task says whether it can start now.
  std::vector<int64_t> open;
  for (int64_t id : t.blocked_by) {
    auto it = board->find(id);
    if (it == board->end() || it->second != TaskStatus::kCompleted) open.push_back(id);
  }
  return out + (open.empty() ? "  ready (" + IdList(t.blocked_by) + " done)" : "  blocked by " + IdList(open));
}

std::string FormatTaskDetail(const Task& t) {
  std::string out = "#" + std::to_string(t.id) + " " + t.subject + "\n";
  out += "  status:      " + std::string(TaskStatusName(t.status)) + "\n";
  out += "  owner:       " + (t.owner.empty() ? std::string("-") : t.owner) + "\n";
  if (!t.active_form.empty()) out += "  active form: " + t.active_form + "\n";
  out += "  depends on:  " + (t.blocked_by.empty() ? std::string("-") : IdList(t.blocked_by)) + "\n";
  out += "  blocks:      " + (t.blocks.empty() ? std::string("-") : IdList(t.blocks)) + "\n";
  if (!t.paths.empty()) {
    out += "  lease:      ";
    for (const auto& p : t.paths) out += " " + p;
    out += "\n";
  }
  if (t.metadata_json != "{}") out += "  metadata:    " + t.metadata_json + "\n";
  if (!t.description.empty()) out += "\n" + t.description + "\n";
  return out;
}

CLI::Option* AddListOption(CLI::App* cmd, const std::string& name, std::string& joined, const std::string& help) {
  return cmd->add_option(name, joined, help + " (repeat it, or separate with commas)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::Join);
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string piece = s.substr(start, end - start);
    while (!piece.empty() && piece.front() == ' ') piece.erase(piece.begin());
    while (!piece.empty() && piece.back() == ' ') piece.pop_back();
    if (!piece.empty()) out.push_back(piece);
    start = end + 1;
  }
  return out;
}

std::string SandboxedAgent() {
  const char* as = std::getenv("MATES_AS_AGENT");
  return as != nullptr ? std::string(as) : "";
}

std::string RefusedAtTheGate(const CLI::App& app) {
  // The commands an agent's gate runs, and nothing past them (DESIGN §26):
  // checked on what CLI11 parsed, so a short-option cluster (`-qw DIR`),
  // `--opt=value` or an option after `--` means what it means to mates.
  std::vector<const CLI::App*> chain = {&app};
  for (;;) {
    const auto subs = chain.back()->get_subcommands();
    if (subs.empty()) break;
    chain.push_back(subs.front());
  }
  std::string path;
  for (size_t i = 1; i < chain.size(); ++i) path += (i > 1 ? " " : "") + chain[i]->get_name();
  const std::string sub = chain.size() > 1 ? chain[1]->get_name() : "";
  const std::string next = chain.size() > 2 ? chain[2]->get_name() : "";
  const bool allowed = sub == "send" || sub == "inbox" || sub == "tasks" || sub == "log" || sub == "status" ||
                       (sub == "merges" && (next == "list" || next == "show")) || (sub == "team" && next == "show");
  if (!allowed) {
    return "'mates " + path +
           "' cannot be run from a sandbox (send, inbox, tasks, log, status, merges list|show and team show can)";
  }
  for (const CLI::App* a : chain) {
    for (const char* where : {"--workspace", "--store", "--team", "--prices"}) {
      const CLI::Option* o = a->get_option_no_throw(where);
      if (o != nullptr && o->count() > 0) {
        return std::string(where) + ": in a sandbox, mates works on this agent's own team and workspace";
      }
    }
  }
  return "";
}

std::string RefusedIdentity(const std::string& option, const std::string& name) {
  const std::string as = SandboxedAgent();
  if (as.empty() || name.empty() || name == as) return "";
  return "from " + as + "'s sandbox, mates acts as " + as + " only (" + option + " " + name + " refused)";
}

std::string DefaultMember(const TeamConfig& team) {
  const char* env = std::getenv("MATES_AGENT_NAME");
  return env != nullptr && *env != '\0' ? std::string(env) : team.lead;
}

void AddArchivedOption(CLI::App* cmd, ArchivedChoice& choice) {
  choice.options.push_back(
      cmd->add_option("--archived", choice.stamp, "Read the team's archive (a deleted team; the latest, or the one of STAMP)")
          ->expected(0, 1));
}

Result<Workspace> ReadingWorkspace(const Globals& g, const std::string& team, const ArchivedChoice& choice) {
  Workspace ws = g.ws();
  if (!choice.given()) return ws;
  MATES_ASSIGN_OR_RETURN(ArchivedTeam a, FindArchive(ws, team, choice.stamp));
  return Workspace(a.root);
}

Result<ReadingStore> OpenReadingStore(const Globals& g, const std::string& team, const ArchivedChoice& choice) {
  if (!choice.given()) {
    MATES_ASSIGN_OR_RETURN(std::unique_ptr<TeamStore> store, OpenChosenStore(g, g.store, g.ws()));
    return ReadingStore{g.ws(), std::move(store), ""};
  }
  MATES_ASSIGN_OR_RETURN(ArchivedTeam a, FindArchive(g.ws(), team, choice.stamp));
  Workspace ws(a.root);
  return ReadingStore{ws, FileTeamStore(ws, g.env()), a.stamp};
}

Status SayIfArchived(Status s, const Workspace& ws, const std::string& team,
                     const ArchivedChoice& choice) {
  if (s.code() != StatusCode::kNotFound || choice.options.empty() || choice.given()) return s;
  auto archives = ListArchives(ws, team);
  if (!archives.ok() || archives->empty()) return s;
  std::string which = archives->size() == 1 ? archives->back().stamp
                                            : "latest " + archives->back().stamp + " of " +
                                                  std::to_string(archives->size()) +
                                                  ", listed by mates team list --archived";
  return Status(s.code(), s.message() + "; it was deleted and archived (" + which +
                              "): add --archived to read it");
}

}  // namespace mates::cli
