#include "tmux/cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <mutex>
#include <cstdlib>
#include <set>
#include <regex>
#include <thread>

#include "core/text.h"
#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/waker.h"
#include "tmux/agent_clis.h"
#include "tmux/claude_setup.h"
#include "tmux/cli_usage.h"
#include "git/worktrees.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"

#include "tmux/pane_screen.h"

namespace mates::tmux {

namespace {

// The process still runs: it exists and is not a zombie waiting for its
// parent (tmux) to reap it.
bool Running(int pid) {
  if (::kill(pid, 0) != 0) return false;
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return true;
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] != 'Z';
}

}  // namespace

Cluster::Cluster(ClusterConfig config) : config_(std::move(config)), tmux_(config_.socket()) {}

bool Cluster::IsUp() const { return tmux_.HasSession(config_.session); }

Result<std::vector<std::string>> Cluster::PrepareFirstRun() const {
  std::vector<std::string> notes;
  std::set<std::pair<fs::path, std::string>> done;
  for (const auto& a : config_.agents) {
    if (a.first_run != FirstRun::kClaudeCode) continue;
    auto file = ClaudeConfigFile(a.env);
    if (!file.ok()) return file.status().WithContext(a.name);
    std::string key = EnvOf(a.env, "ANTHROPIC_API_KEY");
    if (!done.insert({*file, key}).second) continue;
    auto changed = PrepareClaudeCode(*file, config_.work_dir, key);
    if (!changed.ok()) return changed.status().WithContext(a.name + ": Claude Code's first-run answers");
    if (changed->empty()) continue;
    std::string what;
    for (const auto& c : *changed) what += (what.empty() ? "" : ", ") + c;
    notes.push_back("Claude Code's first-run answers in " + file->string() + ": " + what);
  }
  return notes;
}

namespace {

// Where execvp would find `program` on `path` (relative names from `cwd`);
// "" if nowhere.
std::string FindProgram(const std::string& program, const std::string& path, const fs::path& cwd) {
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    fs::path p = fs::path(program).is_absolute() ? fs::path(program) : cwd / program;
    return runnable(p) ? p.string() : "";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    fs::path p = (dir.empty() ? cwd : fs::path(dir)) / program;
    if (runnable(p)) return p.string();
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

}  // namespace

Result<std::vector<AgentReadiness>> Cluster::Up(const std::function<void(const AgentReadiness&)>& progress,
                                                const std::function<void(const std::string&)>& notice) {
  if (IsUp()) {
    return Status::AlreadyExists("cluster " + config_.name + " is already up (session " + config_.session +
                                 "); mates cluster down first");
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);  // this mates
  // First, so that nothing is written for a program that is not there.
  MATES_RETURN_IF_ERROR(CheckPrograms(self));
  MATES_RETURN_IF_ERROR(EnsureDir(config_.state_dir()));
  // Before any pane starts: a question on screen is an agent that never
  // comes up.
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> notes, PrepareFirstRun());
  for (const auto& n : notes) {
    WarnIfFailed(Log("mates", config_.name, "info", n), "the message log");
    if (notice) notice(n);
  }
  MATES_ASSIGN_OR_RETURN(Placed placed, JoinTeam());
  MATES_RETURN_IF_ERROR(MakeSandbox());
  MATES_ASSIGN_OR_RETURN(placed.wiring, WireClis(self));
  MATES_RETURN_IF_ERROR(StartPanes(self, placed));
  return Handshake(progress);
}

Status Cluster::MakeSandbox() {
  bool wanted = false;
  for (const auto& a : config_.agents) wanted |= a.sandbox;
  if (!wanted || sandbox_settings_.mode == sandbox::Mode::kOff) return Status::Ok();
  const fs::path dir = SandboxDir();
  MATES_ASSIGN_OR_RETURN(sandbox_, sandbox::Sandbox::Make(config_.work_dir, sandbox_settings_, dir,
                                                          sandbox::Sandbox::Serving::kElsewhere));
  // The router serves both, at the paths both derive from the names.
  sandbox_->SetGate([dir](const std::string& team, const std::string& agent) -> Result<fs::path> {
    return sandbox::Sandbox::GateDirOf(dir, team, agent) / "s";
  });
  sandbox_->SetProxy([dir](const std::string& team, const std::string& agent) -> Result<fs::path> {
    return dir / "net" / sandbox::SocketDirName(team, agent) / "s";
  });
  return Status::Ok();
}

Status Cluster::CheckPrograms(const fs::path& self) const {
  // A command that is not there would only show as a dead pane: say so
  // before anything starts.
  const char* own_path = std::getenv("PATH");
  if (FindProgram("tmux", own_path != nullptr ? own_path : "", config_.work_dir).empty()) {
    return Status::FailedPrecondition("tmux: command not found on PATH (install it: apt-get install tmux)");
  }
  for (const auto& a : config_.agents) {
    std::string path = EnvOf(a.env, "PATH");
    if (!self.empty()) path = self.parent_path().string() + (path.empty() ? "" : ":" + path);
    if (FindProgram(a.command[0], path, config_.work_dir).empty()) {
      const KnownCli* known = KnownCliOf(a.command[0]);
      return Status::FailedPrecondition(
          a.name + ": " + a.command[0] + ": command not found" +
          (a.command[0].find('/') == std::string::npos ? " on PATH" : "") + " (install it" +
          (known != nullptr ? ": " + std::string(known->install) : std::string()) +
          ", or set the agent's command in " + config_.config_file.filename().string() + ")");
    }
  }
  return Status::Ok();
}

Result<Cluster::Placed> Cluster::JoinTeam() {
  // The agents are members of the team named after the cluster (backend
  // tmux), so `mates send` and teams reach them.
  const Workspace ws(config_.work_dir);
  Roster roster(ws);
  if (!roster.Load(config_.name).ok()) MATES_RETURN_IF_ERROR(roster.CreateTeam(config_.name).status());
  // Agents with `worktree: true` start in their own worktree (DESIGN §12).
  Placed placed;
  for (const auto& a : config_.agents) {
    if (!a.worktree) continue;
    MATES_ASSIGN_OR_RETURN(TeamConfig team, roster.Load(config_.name));
    TeamGit g = team.git;
    if (!g.configured()) {
      MATES_ASSIGN_OR_RETURN(g, git::PrepareTarget(ws, config_.name, TeamGit{}));
      MATES_RETURN_IF_ERROR(roster.Update(config_.name, [&](TeamConfig& c) {
        if (!c.git.configured()) c.git = g;
        g = c.git;
        return Status::Ok();
      }).status());
    }
    auto tree = git::EnsureTeammateWorktree(ws, config_.name, a.name, g);
    if (!tree.ok()) return tree.status().WithContext(a.name + "'s worktree");
    placed.trees[a.name] = *tree;
  }
  for (const auto& a : config_.agents) {
    Member m;
    m.name = a.name;
    m.role = MemberRole::kTeammate;
    m.backend = MemberBackend::kTmux;
    m.prompt = a.role;
    m.worktree = a.worktree;
    auto added = roster.AddMember(config_.name, m);
    if (added.ok()) continue;
    if (added.status().code() != StatusCode::kAlreadyExists) return added.status().WithContext("adding " + a.name + " to the team");
    MATES_RETURN_IF_ERROR(roster.Update(config_.name, [&](TeamConfig& c) {
      if (Member* mm = c.Find(a.name); mm != nullptr) {
        mm->status = MemberStatus::kIdle;
        mm->worktree = a.worktree;
      }
      return Status::Ok();
    }).status());
  }
  return placed;
}

Result<std::map<std::string, CliWiring>> Cluster::WireClis(const fs::path& self) const {
  std::map<std::string, CliWiring> out;
  for (const auto& a : config_.agents) {
    std::vector<std::string> server;
    if (a.mcp) {
      if (self.empty()) return Status::Internal("cannot find this mates binary for " + a.name + "'s MCP config");
      server = {self.string(), "--workspace", config_.work_dir.string(), "mcp", "--team", config_.name, "--as",
                a.name};
    }
    auto wired = WireCli(a, server, config_.state_dir());
    if (!wired.ok()) return wired.status().WithContext(a.name + "'s CLI");
    out[a.name] = std::move(*wired);
  }
  return out;
}

Result<Launch> Cluster::LaunchOf(const AgentConfig& a, const Placed& placed, const fs::path& self) const {
  Launch l;
  auto tree = placed.trees.find(a.name);
  l.cwd = tree != placed.trees.end() ? tree->second.string() : config_.work_dir.string();
  l.argv = a.command;
  l.env = a.env;
  if (auto w = placed.wiring.find(a.name); w != placed.wiring.end() && !l.argv.empty()) {
    l.argv.insert(l.argv.begin() + 1, w->second.args.begin(), w->second.args.end());
    // The person's own env wins over what the preset sets.
    for (const auto& [k, v] : w->second.env) l.env.emplace(k, v);
  }
  for (const auto& kv : otlp_.ChildEnvironment({{"mates.team", config_.name}, {"gen_ai.agent.name", a.name}})) {
    const size_t eq = kv.find('=');
    l.env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  // Claude Code exports only when asked to; Codex where its config says.
  if (otlp_.enabled()) l.env.emplace("CLAUDE_CODE_ENABLE_TELEMETRY", "1");
  if (a.cli == CliPreset::kCodex && !l.argv.empty()) {
    const auto otel = CodexTelemetryArgs(otlp_);
    l.argv.insert(l.argv.begin() + 1, otel.begin(), otel.end());
  }
  l.env["MATES_TEAM"] = config_.name;
  l.env["MATES_AGENT_NAME"] = a.name;
  l.env["MATES_WORKSPACE"] = config_.work_dir.string();
  // `mates send` and `mates tasks` work from the agent's shell tool.
  std::string path = EnvOf(a.env, "PATH");
  if (!self.empty()) l.env["PATH"] = self.parent_path().string() + (path.empty() ? "" : ":" + path);
  if (a.sandbox && sandbox_) {
    auto boxed = sandbox_->WrapPane({l.cwd, config_.name, a.name, /*speaks=*/true}, l.argv, l.cwd);
    if (!boxed.ok()) return Status(boxed.status()).WithContext(a.name + "'s sandbox");
    l.argv = std::move(*boxed);
  }
  return l;
}

Status Cluster::StartPanes(const fs::path& self, const Placed& placed) {
  Json state;
  state["socket"] = config_.socket();
  state["session"] = config_.session;
  state["started_at"] = IsoTime(WallSeconds());
  state["panes"] = Json::object();
  // What the router serves for the sandboxed agents.
  if (sandbox_) {
    Json boxed = Json::array();
    for (const auto& a : config_.agents) {
      if (a.sandbox) boxed.push_back(a.name);
    }
    state["sandbox"] = {{"mode", std::string(sandbox::ModeName(sandbox_->mode()))},
                        {"network_allow", sandbox_->settings().network_allow},
                        {"agents", boxed}};
  }
  state["started_at_s"] = WallSeconds();
  state["records"] = Json::object();
  for (size_t i = 0; i < config_.agents.size(); ++i) {
    const AgentConfig& a = config_.agents[i];
    MATES_ASSIGN_OR_RETURN(const Launch l, LaunchOf(a, placed, self));
    // Where its CLI keeps its sessions (their usage: the router reads it),
    // as its environment says: the pane's own, over this process's, which
    // the tmux server and so the pane inherit.
    const std::string cli(a.cli == CliPreset::kNone ? "" : CliPresetName(a.cli));
    const fs::path records = RecordsOf(cli, [&](const std::string& name) {
      if (auto it = l.env.find(name); it != l.env.end()) return it->second;
      const char* v = std::getenv(name.c_str());
      return std::string(v != nullptr ? v : "");
    });
    state["records"][a.name] = {{"cli", cli}, {"path", records.string()}};
    auto pane = i == 0 ? tmux_.NewSession(config_.session, l) : tmux_.SplitWindow(config_.session, l);
    if (!pane.ok()) {
      WarnIfFailed(tmux_.KillServer(), "stopping the half-started session");
      return pane.status().WithContext("starting " + a.name);
    }
    state["panes"][a.name] = *pane;
  }
  MATES_RETURN_IF_ERROR(WriteFileAtomic(config_.state_dir() / "state.json", DumpJsonPretty(state)));
  // The router lives in the session (it goes down with it).
  if (!self.empty()) {
    Launch r;
    r.cwd = config_.work_dir.string();
    r.argv = {self.string(), "cluster", "route", "-c", config_.config_file.string()};
    auto router = tmux_.NewWindow(config_.session, "router", r);
    if (!router.ok()) return router.status().WithContext("starting the router");
  }
  return Status::Ok();
}

std::vector<AgentReadiness> Cluster::Handshake(const std::function<void(const AgentReadiness&)>& progress) {
  // In parallel: ready only once the agent answered with its marker (the
  // marker in its command line does not count: it is older than the
  // handshake).
  std::vector<AgentReadiness> out(config_.agents.size());
  std::vector<std::thread> threads;
  std::mutex mu;
  for (size_t i = 0; i < config_.agents.size(); ++i) {
    threads.emplace_back([&, i] { RunGuarded("the handshake with " + config_.agents[i].name, [&] {
      const AgentConfig& a = config_.agents[i];
      auto t0 = SteadyClock::now();
      AgentReadiness r;
      r.agent = a.name;
      const std::string text = "You are " + a.name + " (" + a.role + ") in the cluster " + config_.name +
                               ". Reply with your marker to confirm you are ready.";
      auto reply = Send("mates", a.name, text, config_.startup_timeout_s);
      r.seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
      r.ready = reply.ok();
      if (!reply.ok()) r.error = reply.status().message();
      std::lock_guard<std::mutex> lock(mu);
      out[i] = r;
      if (progress) progress(r);
    }); });
  }
  for (auto& t : threads) t.join();
  return out;
}

Result<std::vector<AgentStatus>> Cluster::AgentStatuses() const {
  std::vector<AgentStatus> out;
  auto data = ReadFile(config_.state_dir() / "state.json");
  Json panes = Json::object();
  if (data.ok()) {
    auto j = ParseJson(*data);
    auto p = j.ok() ? JsonObjectField(*j, "panes", false) : Result<const Json*>(j.status());
    if (p.ok() && *p != nullptr) panes = **p;
  }
  std::vector<PaneInfo> live;
  if (IsUp()) {
    auto l = tmux_.ListPanes(config_.session);
    if (l.ok()) live = *l;
  }
  // Last activity per agent, from the message log; and its last answer, an
  // error until a result follows.
  std::map<std::string, std::string> last;
  std::map<std::string, std::pair<std::string, std::string>> failed;  // agent → (time, why)
  auto log = ReadFile(config_.log_file);
  if (log.ok()) {
    for (const auto& line : CaptureLines(*log)) {
      auto j = ParseJson(line);
      if (!j.ok()) continue;
      // The log is a file anyone may write: strings only.
      auto field = [&](const char* key) {
        auto v = JsonString(*j, key, false);
        return v.ok() ? *v : std::string();
      };
      std::string ts = field("timestamp");
      last[field("from")] = ts;
      last[field("to")] = ts;
      const std::string type = field("type");
      if (type == "error") failed[field("from")] = {ts, CutUtf8(field("content"), 300)};
      if (type == "result") failed.erase(field("from"));
    }
  }
  for (const auto& a : config_.agents) {
    AgentStatus s;
    s.name = a.name;
    s.role = a.role;
    s.reports_to = a.reports_to;
    auto pane = JsonString(panes, a.name.c_str(), false);
    s.pane = pane.ok() ? *pane : "";
    for (const auto& p : live) {
      if (p.id != s.pane) continue;
      s.alive = !p.dead;
      s.failed = p.dead;
      s.exit_status = p.dead_status;
    }
    if (s.alive) {
      auto lock = FileLock::TryAcquire(config_.state_dir() / (a.name + ".busy"));
      s.busy = !lock.ok();
    }
    s.last_activity = last.count(a.name) ? last[a.name] : "";
    if (s.failed) {
      // A dead pane's screen is final: what its program said last.
      auto screen = tmux_.Capture(s.pane);
      s.error = DeadPane(a, s.exit_status, screen.ok() ? CaptureLines(*screen) : std::vector<std::string>{}, "")
                    .message();
    } else if (auto f = failed.find(a.name); f != failed.end()) {
      s.error_at = f->second.first;
      s.error = f->second.second;
    }
    out.push_back(s);
  }
  return out;
}

Status Cluster::Down() {
  std::vector<int> pids;
  if (IsUp()) {
    auto panes = tmux_.ListPanes(config_.session);
    if (panes.ok()) {
      for (const auto& p : *panes) {
        if (!p.dead && p.pid > 0) pids.push_back(p.pid);
      }
    }
  } else if (!fs::exists(config_.state_dir() / "state.json")) {
    return Status::FailedPrecondition("cluster " + config_.name + " is not up");
  }
  // The agents first (their whole process groups), then the server.
  for (int pid : pids) {
    ::kill(-pid, SIGTERM);
    ::kill(pid, SIGTERM);
  }
  Deadline grace = DeadlineIn(2);
  for (int pid : pids) {
    while (Running(pid) && !Expired(grace)) Clock::Real().Sleep(0.02, nullptr);
    if (Running(pid)) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
  WarnIfFailed(tmux_.KillServer(), "killing the tmux server");
  std::error_code ec;
  fs::remove(config_.state_dir() / "state.json", ec);
  // Nobody waits on the pane agents any more (their inboxes are kept).
  Roster roster{Workspace(config_.work_dir)};
  for (const auto& a : config_.agents) {
    WarnIfFailed(roster.SetStatus(config_.name, a.name, MemberStatus::kShutdown), a.name + "'s status");
  }
  return Status::Ok();
}

}  // namespace mates::tmux
