// mates cluster up|send|status|log|down|attach [-c FILE]: agent CLIs in
// tmux panes (seed 003). See src/tmux/cluster.h.
#include <unistd.h>

#include <atomic>
#include <map>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/run_options.h"
#include "core/log.h"
#include "host/agent_gate.h"
#include "sandbox/net_proxy.h"
#include "git/forecast.h"
#include "git/merge_queue.h"
#include "core/json.h"
#include "core/waker.h"
#include "store/watcher.h"
#include "tmux/cluster.h"

namespace mates::cli {
namespace {

constexpr const char* kDefaultClusterConfig = "config/cc-cluster.yaml";

struct ClusterArgs {
  std::string config = kDefaultClusterConfig;
  bool config_given = false;  // -c was given
  fs::path ws;                // the folder the command works in
  std::string from = "user";
  std::string agent;
  std::vector<std::string> text;
  double timeout = -1;
  bool follow = false;
  bool json = false;
  std::string sandbox;  // up: the mode of the agents with `sandbox: true`
};

// The config: -c's, else config/cc-cluster.yaml if there is one, else the
// one this folder's last `cluster up` used.
std::string ConfigPath(const ClusterArgs& a) {
  if (a.config_given || fs::exists(a.config)) return a.config;
  auto pointed = ReadFilePrefix(ClusterPointer(Workspace(a.ws)), 4096);
  if (!pointed.ok()) return a.config;
  std::string path = pointed->substr(0, pointed->find('\n'));
  return path.empty() ? a.config : path;
}

Result<tmux::Cluster> Load(const ClusterArgs& a) {
  const std::string path = ConfigPath(a);
  auto c = tmux::LoadClusterConfig(path);
  if (!c.ok() && !a.config_given && path == a.config && c.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("no cluster here: " + a.config + " does not exist and no `mates cluster up` ran in " +
                            a.ws.string() + " (-c FILE names a config)");
  }
  if (!c.ok()) return c.status();
  return tmux::Cluster(std::move(*c));
}

// `mates cluster SUB -c CONFIG`, pasteable from any folder.
std::string Hint(const ClusterArgs& a, const std::string& sub) {
  return "mates cluster " + sub + " -c " + ShellQuoted(fs::absolute(ConfigPath(a)).lexically_normal().string());
}

int Up(const ClusterArgs& a) {
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  bool boxed = false;
  for (const auto& agent : c->config().agents) boxed |= agent.sandbox;
  if (boxed) {
    auto settings = ChooseSandboxSettings(Workspace(c->config().work_dir), a.sandbox);
    if (!settings.ok()) return Fail(settings.status());
    c->SetSandbox(std::move(*settings));
  }
  auto otlp = ChooseTelemetry();
  if (!otlp.ok()) return Fail(otlp.status());
  for (const auto& w : otlp->warnings) std::cerr << "mates: warning: telemetry: " << w << std::endl;
  c->SetTelemetry(std::move(*otlp));
  std::cout << "starting cluster " << c->config().name << " (" << c->config().agents.size()
            << " agents, tmux -L " << c->config().socket() << ", session " << c->config().session << ")"
            << std::endl;
  auto r = c->Up([](const tmux::AgentReadiness& ar) {
    char t[32];
    std::snprintf(t, sizeof t, "%.1f s", ar.seconds);
    if (ar.ready) {
      std::cout << "  " << ar.agent << ": ready (" << t << ")" << std::endl;
    } else {
      std::cout << "  " << ar.agent << ": NOT ready: " << ar.error << std::endl;
    }
  }, [](const std::string& note) { std::cout << "  " << note << std::endl; });
  if (!r.ok()) return Fail(r.status());
  int failed = 0;
  for (const auto& ar : *r) failed += ar.ready ? 0 : 1;
  if (failed > 0) {
    return Fail(Status::Unavailable(std::to_string(failed) + " agent(s) did not come up; look with `" + Hint(a, "attach") +
                                    "`, stop with `" + Hint(a, "down") + "`"));
  }
  // From this folder, later commands need no -c.
  Status pointed = EnsureDir(ClusterPointer(Workspace(a.ws)).parent_path());
  if (pointed.ok()) {
    pointed = WriteFileAtomic(ClusterPointer(Workspace(a.ws)), fs::absolute(ConfigPath(a)).lexically_normal().string() + "\n");
  }
  WarnIfFailed(pointed, "this folder's cluster pointer");
  std::cout << "cluster up; from here:\n  " << Hint(a, "send") << " AGENT TEXT\n  " << Hint(a, "status") << "\n  "
            << Hint(a, "log") << "\n  " << Hint(a, "attach") << "\n  " << Hint(a, "down") << "\n(in "
            << a.ws.string() << " -c may be left out)" << std::endl;
  return 0;
}

int Send(const ClusterArgs& a) {
  // -1: the config's response_timeout.
  if (a.timeout != -1) {
    if (Status s = CheckSeconds("--timeout", a.timeout, 0, false); !s.ok()) return Fail(s);
  }
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  std::string text;
  for (const auto& w : a.text) text += (text.empty() ? "" : " ") + w;
  if (text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  auto reply = c->Send(a.from, a.agent, text, a.timeout);
  if (!reply.ok()) return Fail(reply.status());
  std::cout << *reply << std::endl;
  return 0;
}

// `obj[key]` when it is a list, else an empty one: state.json is read like
// input (an unsandboxed pane agent can write it), and never throws.
Json ListIn(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : Json::array();
}

// Each agent's sandbox mode as `up` recorded it in state.json ("off" for
// one without `sandbox: true`).
std::map<std::string, std::string> SandboxModes(const tmux::Cluster& c) {
  std::map<std::string, std::string> out;
  for (const auto& agent : c.config().agents) out[agent.name] = "off";
  auto text = ReadFilePrefix(c.config().state_dir() / "state.json", 1 << 20);
  auto j = text.ok() ? ParseJson(*text) : Result<Json>(text.status());
  if (!j.ok() || !j->is_object() || !(*j)["sandbox"].is_object()) return out;
  const Json& sb = (*j)["sandbox"];
  auto m = sb.find("mode");
  const std::string mode = m != sb.end() && m->is_string() ? m->get<std::string>() : "off";
  for (const auto& name : ListIn(sb, "agents")) {
    if (name.is_string() && out.count(name.get<std::string>()) > 0) out[name.get<std::string>()] = mode;
  }
  return out;
}

int StatusCmd(const ClusterArgs& a) {
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  auto st = c->AgentStatuses();
  if (!st.ok()) return Fail(st.status());
  auto modes = SandboxModes(*c);
  // A cluster one of whose agents exited is not "up".
  bool any_failed = false;
  for (const auto& s : *st) any_failed |= s.failed;
  const std::string state = !c->IsUp() ? "down" : any_failed ? "failed" : "up";
  if (a.json) {
    Json arr = Json::array();
    for (const auto& s : *st) {
      arr.push_back({{"name", s.name}, {"role", s.role}, {"reports_to", s.reports_to}, {"pane", s.pane},
                     {"alive", s.alive}, {"busy", s.busy}, {"failed", s.failed},
                     {"exit_status", s.failed && s.exit_status >= 0 ? Json(s.exit_status) : Json(nullptr)},
                     {"last_activity", s.last_activity}, {"sandbox", modes[s.name]},
                     {"error", s.error.empty() ? Json(nullptr) : Json(s.error)},
                     {"error_at", s.error_at.empty() ? Json(nullptr) : Json(s.error_at)}});
    }
    std::cout << DumpJson({{"cluster", c->config().name}, {"up", c->IsUp()}, {"state", state}, {"agents", arr}})
              << std::endl;
    return 0;
  }
  std::cout << "cluster " << c->config().name << ": " << state << "\n";
  for (const auto& s : *st) {
    // What went wrong is said, never a plain "idle" (DESIGN §20).
    std::string shown = s.alive ? (s.busy ? "busy" : s.error.empty() ? "idle" : "error")
                        : s.failed ? "failed" + (s.exit_status >= 0 ? " (exit " + std::to_string(s.exit_status) + ")" : "")
                                   : "dead";
    std::cout << "  " << s.name << "  " << (s.pane.empty() ? "-" : s.pane) << "  " << shown << "  last activity "
              << (s.last_activity.empty() ? "-" : s.last_activity)
              << (s.reports_to.empty() ? "" : "  reports to " + s.reports_to)
              << (modes[s.name] == "off" ? "" : "  sandbox: " + modes[s.name]) << "\n";
    if (!s.error.empty()) {
      std::cout << "      " << (s.error_at.empty() ? "" : s.error_at + "  ") << s.error << "\n";
    }
  }
  return 0;
}

std::string FormatEntry(const std::string& line) {
  auto j = ParseJson(line);
  if (!j.ok()) return "";
  return j->value("timestamp", "") + "  " + j->value("from", "") + " -> " + j->value("to", "") + " [" +
         j->value("type", "") + "] " + j->value("content", "");
}

int LogCmd(const ClusterArgs& a, const Env& env) {
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  const fs::path log = c->config().log_file;
  size_t offset = 0;
  auto print_new = [&] {
    auto data = ReadFile(log);
    if (!data.ok()) return;
    size_t end = data->rfind('\n');
    if (end == std::string::npos || end + 1 <= offset) return;
    std::string chunk = data->substr(offset, end + 1 - offset);
    offset = end + 1;
    for (const auto& line : tmux::CaptureLines(chunk)) {
      if (line.empty()) continue;
      std::cout << (a.json ? line : FormatEntry(line)) << "\n";
    }
    std::cout << std::flush;
  };
  print_new();
  if (!a.follow) return 0;
  (void)EnsureDir(log.parent_path());
  auto waker = std::make_shared<Waker>();
  auto sub = env.watcher.Subscribe(log.parent_path(), log.filename().string(), waker);
  for (;;) {
    uint64_t g = waker->generation();
    print_new();
    waker->WaitChange(g, DeadlineIn(1));
  }
}

int Down(const ClusterArgs& a) {
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  Status s = c->Down();
  if (!s.ok()) return Fail(s);
  std::cout << "cluster " << c->config().name << " is down" << std::endl;
  return 0;
}

int Route(const ClusterArgs& a, const Env& env) {
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  std::atomic<bool> stop{false};  // ends with the session (SIGHUP)
  // The cluster's host: it runs the team's merge queue too (DESIGN §12:
  // a pane agent's `mates tasks update N --status completed` merges the
  // same way as a hosted teammate's).
  git::MergeQueue::Options mq;
  mq.ws = Workspace(c->config().work_dir);
  const std::string team = c->config().name;
  mq.team = [team] { return team; };
  mq.running = [](const std::string&) { return true; };  // pane agents live as long as the session
  std::unique_ptr<TeamStore> store = FileTeamStore(mq.ws, env);
  mq.work_of = [&store, &env](const std::string& t, const MergeRequest& m) {
    return agent::TaskWork(*store, t, m.task, m.owner, env.prices);
  };
  // And the conflict forecast of its pane agents' worktrees (DESIGN §30),
  // while no lead's host forecasts for the team (its own takes them in).
  git::Forecaster::Options fo;
  fo.ws = mq.ws;
  fo.team = [team] { return team; };
  fo.panes = true;
  fo.serving = [&store, team] {
    auto cfg = store->LoadTeam(team);
    return !cfg.ok() || !store->IsHosted(team, cfg->lead);
  };
  auto forecast = std::make_shared<git::Forecaster>(*store, fo);
  mq.on_processed = [forecast](const std::string& t, const MergeRequest& m, double, double, double) {
    if (m.status == MergeState::kMerged) forecast->Landed(t, m.owner);
  };
  git::MergeQueue merges(*store, mq);
  // The sandboxed agents' gates (their `mates`, as themselves) and proxies
  // (network.allow), as `up` wrote them into state.json.
  std::unique_ptr<host::AgentGate> gate;
  std::unique_ptr<sandbox::NetProxy> proxy;
  auto state = ReadFilePrefix(c->config().state_dir() / "state.json", 1 << 20);
  auto j = state.ok() ? ParseJson(*state) : Result<Json>(state.status());
  if (j.ok() && j->is_object() && (*j)["sandbox"].is_object()) {
    const Json& sb = (*j)["sandbox"];
    const fs::path dir = c->SandboxDir();
    gate = std::make_unique<host::AgentGate>(host::AgentGate::Options{mq.ws, "", dir / "gate"});
    std::vector<sandbox::NetRule> rules;
    for (const auto& e : ListIn(sb, "network_allow")) {
      auto r = e.is_string() ? sandbox::ParseNetRule(e.get<std::string>()) : Result<sandbox::NetRule>(Status::InvalidArgument("not a string"));
      if (r.ok()) rules.push_back(*r);
    }
    if (!rules.empty()) proxy = std::make_unique<sandbox::NetProxy>(rules, dir / "net", nullptr);
    for (const auto& name : ListIn(sb, "agents")) {
      if (!name.is_string() || c->config().Find(name.get<std::string>()) == nullptr) continue;
      if (auto s = gate->SocketFor(team, name.get<std::string>()); !s.ok()) LogWarning(s.status().message());
      if (proxy) {
        if (auto s = proxy->SocketFor(team, name.get<std::string>()); !s.ok()) LogWarning(s.status().message());
      }
    }
  }
  Status s = c->Route(stop, env);
  merges.Stop();
  forecast->Stop();
  return s.ok() ? 0 : Fail(s);
}

int Attach(const ClusterArgs& a) {
  auto c = Load(a);
  if (!c.ok()) return Fail(c.status());
  if (!c->IsUp()) return Fail(Status::FailedPrecondition("cluster " + c->config().name + " is not up"));
  if (::isatty(STDIN_FILENO) != 1) return Fail(Status::FailedPrecondition("attach needs a terminal"));
  std::vector<std::string> argv = c->tmux().Base();
  argv.insert(argv.end(), {"attach-session", "-t", "=" + c->config().session});
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  ::execvp(cargv[0], cargv.data());
  return Fail(Status::FromErrno("exec tmux", errno));
}

}  // namespace

void AddClusterCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<ClusterArgs>();
  CLI::App* cl = app.add_subcommand("cluster", "Agent CLIs (Claude Code…) in tmux panes, with markers and a message log");
  cl->require_subcommand(1);
  auto config_opt = [&](CLI::App* sub) {
    sub->add_option("-c,--config", a->config,
                    "Cluster config (YAML); default: config/cc-cluster.yaml, else the one `cluster up` last used in "
                    "this folder")
        ->capture_default_str()
        ->each([a](const std::string&) { a->config_given = true; });
  };
  CLI::App* up = cl->add_subcommand("up", "Start every agent in its pane and handshake it");
  config_opt(up);
  AddSandboxOption(up, a->sandbox);
  up->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return Up(*a);
  }; });

  CLI::App* send = cl->add_subcommand("send", "Send TEXT to AGENT and print its reply (exit 1 on timeout)");
  config_opt(send);
  send->add_option("--from", a->from, "Who sends it (for the log)")->capture_default_str();
  send->add_option("--timeout", a->timeout, "Seconds to wait for the marker (default: the config's response_timeout)");
  send->add_option("AGENT", a->agent, "The agent")->required();
  send->add_option("TEXT", a->text, "What to send ('-' reads stdin)")->required();
  send->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return Send(*a);
  }; });

  CLI::App* status = cl->add_subcommand("status", "Each agent: pane alive, busy or idle, last activity");
  config_opt(status);
  status->add_flag("--json", a->json, "Machine-readable output");
  status->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return StatusCmd(*a);
  }; });

  CLI::App* log = cl->add_subcommand("log", "The cluster's message log");
  config_opt(log);
  log->add_flag("--follow,-f", a->follow, "Keep printing new entries");
  log->add_flag("--json", a->json, "The JSONL entries as they are");
  log->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return LogCmd(*a, g.env());
  }; });

  CLI::App* down = cl->add_subcommand("down", "Stop the agents and the cluster's tmux server");
  config_opt(down);
  down->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return Down(*a);
  }; });

  CLI::App* route = cl->add_subcommand("route", "The bridge between the team's mailboxes and the panes (started by up)");
  config_opt(route);
  route->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return Route(*a, g.env());
  }; });

  CLI::App* attach = cl->add_subcommand("attach", "Watch the panes (tmux attach)");
  config_opt(attach);
  attach->callback([&g, a] { g.action = [&g, a] {
    a->ws = g.ws().root();
    return Attach(*a);
  }; });
}

}  // namespace mates::cli
