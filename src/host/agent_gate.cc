#include "host/agent_gate.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/names.h"
#include "core/subprocess.h"
#include "core/unix_socket.h"
#include "sandbox/agent_sockets.h"
#include "sandbox/net_proxy.h"

namespace mates::host {
namespace {

constexpr size_t kMaxRequestBytes = 1 << 20;
constexpr size_t kMaxReplyBytes = 4 << 20;
constexpr size_t kMaxOutputBytes = 1 << 20;
constexpr size_t kMaxArgs = 256;
constexpr int kMaxRunning = 16;  // for all the host's agents
constexpr int kMaxPerAgent = 4;  // so that no agent keeps the others out
constexpr double kCommandTimeoutS = 300;
constexpr double kRequestTimeoutS = 10;

// Global options of mates that take a value, and those the gate never lets
// a sandboxed tool give (the host chooses the workspace, store and team).
bool IsGlobalWithValue(const std::string& a) { return a == "-w" || a == "--workspace" || a == "--prices"; }
bool ChoosesWhere(const std::string& a) {
  for (const char* o : {"--workspace", "--store", "--team", "--prices"}) {
    const std::string opt = o;
    if (a == opt || a.rfind(opt + "=", 0) == 0) return true;
  }
  return a == "-w" || (a.rfind("-w", 0) == 0 && a.size() > 2 && a[2] != '-');
}

// The subcommand: the first argument that is not a global option or its
// value; -1 if none.
int SubcommandAt(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (IsGlobalWithValue(args[i])) {
      ++i;
      continue;
    }
    if (!args[i].empty() && args[i][0] == '-') continue;
    return static_cast<int>(i);
  }
  return -1;
}

std::string Reply(int exit_code, const std::string& out, const std::string& err) {
  return DumpJson(Json{{"exit", exit_code}, {"out", out}, {"err", err}}) + "\n";
}

std::string SelfExe() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "mates" : self.string();
}

}  // namespace

bool GoesThroughTheGate(const std::vector<std::string>& args) {
  int at = SubcommandAt(args);
  if (at < 0) return false;
  for (const char* c : {"send", "inbox", "tasks", "log", "status", "merges", "team"}) {
    if (args[static_cast<size_t>(at)] == c) return true;
  }
  return false;
}

std::string RefusedInTheSandbox(const std::vector<std::string>& args) {
  int at = SubcommandAt(args);
  if (at < 0) return "";
  const std::string& c = args[static_cast<size_t>(at)];
  for (const char* person : {"stop", "restart", "interrupt", "attach", "up", "down", "ps", "logs", "report", "export", "import", "replay", "dashboard", "trust"}) {
    if (c == person) return "'mates " + c + "' is the person's: it cannot be run from an agent's sandbox";
  }
  return "";
}

std::string RefusedAtTheGate(const std::vector<std::string>& args) {
  if (args.empty()) return "no command";
  if (args.size() > kMaxArgs) return "more than 256 arguments";
  for (const auto& a : args) {
    if (ChoosesWhere(a)) {
      return "'" + a.substr(0, 40) + "': in a sandbox, mates works on this agent's own team and workspace";
    }
  }
  int at = SubcommandAt(args);
  if (at < 0) return "no command";
  const std::string& sub = args[static_cast<size_t>(at)];
  const std::string next = static_cast<size_t>(at) + 1 < args.size() ? args[static_cast<size_t>(at) + 1] : "";
  if (sub == "send" || sub == "inbox" || sub == "tasks" || sub == "log" || sub == "status") return "";
  if (sub == "merges" && (next == "list" || next == "show")) return "";
  if (sub == "team" && next == "show") return "";
  return "'mates " + sub + (next.empty() || next[0] == '-' ? "" : " " + next) +
         "' cannot be run from a sandbox (send, inbox, tasks, log, status, merges list|show and team show can)";
}

int RunThroughTheGate(const std::string& socket, const std::vector<std::string>& args) {
  Json req = {{"argv", args}};
  for (const auto& a : args) {
    if (a != "-") continue;
    std::string in;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0 && in.size() <= kMaxRequestBytes) in.append(buf, n);
    req["stdin"] = in;
    break;
  }
  std::string line = DumpJson(req) + "\n";
  if (line.size() > kMaxRequestBytes) {
    std::cerr << "mates: error: the command is larger than 1 MiB\n";
    return 2;
  }
  auto connected = ConnectUnix(socket);
  if (!connected.ok()) {
    std::cerr << "mates: error: cannot reach the host's gate: " << connected.status().message()
              << " (is the team's host still running?)\n";
    return 1;
  }
  const int fd = connected->get();
  std::string reply;
  // A gate that refuses (too many commands at once) answers and closes
  // without reading: its answer is read even if the command could not be
  // written whole.
  (void)SendAllTo(fd, line);
  if (!ReadSocketLine(fd, &reply, kMaxReplyBytes, DeadlineIn(kCommandTimeoutS + 30))) {
    std::cerr << "mates: error: the host's gate did not answer\n";
    return 1;
  }
  auto j = ParseJson(reply);
  if (!j.ok() || !j->is_object() || !(*j)["exit"].is_number_integer()) {
    std::cerr << "mates: error: the host's gate answered what is not an answer\n";
    return 1;
  }
  if ((*j)["out"].is_string()) std::cout << (*j)["out"].get<std::string>() << std::flush;
  if ((*j)["err"].is_string()) std::cerr << (*j)["err"].get<std::string>() << std::flush;
  return (*j)["exit"].get<int>();
}

AgentGate::AgentGate(Options options) : options_(std::move(options)) {
  sockets_ = std::make_unique<sandbox::AgentSockets>(
      options_.dir, 16,
      [this](const sandbox::AgentSockets::Caller& who, size_t) {
        // Admitted, it counts until its handler is done.
        std::lock_guard<std::mutex> l(mu_);
        int& mine = busy_[who.team + "\n" + who.agent];
        if (mine >= kMaxPerAgent || busy_total_ >= kMaxRunning) {
          return Reply(1, "", "mates: error: the host is running " +
                                  std::string(mine >= kMaxPerAgent ? "4 commands for this agent"
                                                                   : "16 commands for its agents") +
                                  " already; try again\n");
        }
        ++mine;
        ++busy_total_;
        return std::string();
      },
      [this](ScopedFd conn, const sandbox::AgentSockets::Caller& who) {
        Handle(std::move(conn), who.team, who.agent);
        std::lock_guard<std::mutex> l(mu_);
        --busy_[who.team + "\n" + who.agent];
        --busy_total_;
      });
}

AgentGate::~AgentGate() {
  stopping_.Cancel(CancelToken::kForGood);  // every command still running
  sockets_.reset();
}

Result<fs::path> AgentGate::SocketFor(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("member name", agent));
  // RUNTIME/gate/TEAM+AGENT/s: the folder is what a sandbox binds.
  return sockets_->SocketFor(team, agent);
}

void AgentGate::Handle(ScopedFd conn, std::string team, std::string agent) {
  std::string request;
  if (!ReadSocketLine(conn.get(), &request, kMaxRequestBytes, DeadlineIn(kRequestTimeoutS))) {
    SendAllTo(conn.get(), Reply(2, "", "mates: error: the request was not one line of at most 1 MiB\n"));
    return;
  }
  // The command ends with the tool that asked for it (DESIGN §26): when
  // the asker's end of the connection closes (its tool ended, and the
  // sandbox with it), or the host stops, the command is killed — an
  // abandoned `mates log -f` keeps no host rights and holds no exit.
  CancelToken cancel;
  stopping_.Link(&cancel);
  std::thread watch([&] {
    struct pollfd p[2] = {{conn.get(), POLLRDHUP, 0}, {cancel.wake_fd(), POLLIN, 0}};
    for (;;) {
      int rc = ::poll(p, 2, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || p[1].revents != 0) return;  // done, or stopping
      if ((p[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        cancel.Cancel();
        return;
      }
      p[0].revents = 0;
    }
  });
  const std::string reply = Answer(request, team, agent, &cancel);
  cancel.Cancel();  // (ends the watch)
  watch.join();
  stopping_.Unlink(&cancel);
  SendAllTo(conn.get(), reply);
}

std::string AgentGate::Answer(const std::string& request, const std::string& team, const std::string& agent,
                              const CancelToken* cancel) {
  auto j = ParseJson(request);
  if (!j.ok() || !j->is_object() || !(*j)["argv"].is_array()) {
    return Reply(2, "", "mates: error: the request is not {\"argv\": [...]}\n");
  }
  std::vector<std::string> args;
  for (const auto& a : (*j)["argv"]) {
    if (!a.is_string()) return Reply(2, "", "mates: error: every argument must be a string\n");
    args.push_back(a.get<std::string>());
  }
  if (std::string why = RefusedAtTheGate(args); !why.empty()) return Reply(2, "", "mates: error: " + why + "\n");
  SubprocessOptions o;
  o.argv = {options_.mates.empty() ? SelfExe() : options_.mates.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (const char* k : {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}) {
    if (const char* v = std::getenv(k); v != nullptr) env.push_back(std::string(k) + "=" + v);
  }
  env.push_back("MATES_WORKSPACE=" + options_.ws.root().string());
  env.push_back("MATES_TEAM=" + team);
  env.push_back("MATES_AGENT_NAME=" + agent);
  env.push_back("MATES_AS_AGENT=" + agent);
  env.push_back("MATES_STORE=" + (options_.store_url.empty() ? std::string("file") : options_.store_url));
  o.env = env;
  o.cwd = options_.ws.root().string();
  if ((*j)["stdin"].is_string()) o.stdin_data = (*j)["stdin"].get<std::string>();
  o.timeout_s = kCommandTimeoutS;
  o.max_output = kMaxOutputBytes;
  auto r = RunSubprocess(o, cancel);
  if (!r.ok()) return Reply(1, "", "mates: error: the host could not run the command: " + r.status().message() + "\n");
  if (r->cancelled) return Reply(1, "", "mates: error: the command was stopped (its tool ended, or the host stops)\n");
  int code = r->exit_code >= 0 ? r->exit_code : 1;
  std::string err = r->err;
  if (r->timed_out) err += "mates: error: the command took more than 300 s and was stopped\n";
  return Reply(code, r->out, err);
}

}  // namespace mates::host
