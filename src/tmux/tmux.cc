#include "tmux/tmux.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "core/subprocess.h"

namespace mates::tmux {

namespace {

std::vector<std::string> LaunchArgs(const Launch& l) {
  std::vector<std::string> a;
  if (!l.cwd.empty()) a.insert(a.end(), {"-c", l.cwd});
  for (const auto& [k, v] : l.env) {
    if (k != "PATH") a.insert(a.end(), {"-e", k + "=" + v});
  }
  return a;
}

// tmux gives a new pane the PATH of the client that asked for it (over any
// -e PATH=…), so a launch's PATH goes in the client's own environment.
std::optional<std::vector<std::string>> ClientEnv(const Launch& l) {
  auto path = l.env.find("PATH");
  if (path == l.env.end()) return std::nullopt;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PATH=", 5) != 0) env.emplace_back(*e);
  }
  env.push_back("PATH=" + path->second);
  return env;
}

// Without the trailing newlines and spaces tmux's answers end in.
std::string TrimEnd(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::vector<std::string> Tmux::Base() const {
  std::vector<std::string> b = {"tmux"};
  if (!socket_.empty()) b.insert(b.end(), {"-L", socket_});
  return b;
}

Result<std::string> Tmux::Run(const std::vector<std::string>& args, const std::string& input) const {
  return RunAs(args, input, std::nullopt);
}

Result<std::string> Tmux::RunAs(const std::vector<std::string>& args, const std::string& input,
                                const std::optional<std::vector<std::string>>& env) const {
  SubprocessOptions o;
  o.env = env;
  o.argv = Base();
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdin_data = input;
  o.timeout_s = 20;
  o.max_output = 64 << 20;
  MATES_ASSIGN_OR_RETURN(SubprocessResult r, RunSubprocess(o));
  if (r.exit_code != 0) {
    std::string what = TrimEnd(r.err.empty() ? r.out : r.err);
    return Status::IOError("tmux " + (args.empty() ? std::string() : args[0]) + ": " +
                           (what.empty() ? "exit " + std::to_string(r.exit_code) : what));
  }
  return r.out;
}

bool Tmux::HasSession(const std::string& session) const { return Run({"has-session", "-t", "=" + session}).ok(); }

Result<std::string> Tmux::NewSession(const std::string& session, const Launch& launch, int width, int height) const {
  // Options first, in the same invocation (the first command starts the
  // server): they must hold for the first pane too.
  //
  // Every pane gets a pipe (to /dev/null) as it is made, from a hook that
  // runs before the server looks at its children again: a pane with a pipe
  // is marked dead only once tmux has read all its program wrote. Without
  // one, a program that prints why it cannot start and exits at once may
  // be reaped first and its last words dropped with the pty.
  const std::string pipe = "pipe-pane -o 'exec cat >/dev/null'";
  std::vector<std::string> a = {"set-option", "-g", "remain-on-exit", "on", ";",
                                "set-option", "-g", "history-limit", "100000", ";",
                                "set-hook", "-g", "after-new-session", pipe, ";",
                                "set-hook", "-g", "after-split-window", pipe, ";",
                                "set-hook", "-g", "after-new-window", pipe, ";",
                                "new-session", "-d", "-s", session, "-x", std::to_string(width),
                                "-y", std::to_string(height), "-P", "-F", "#{pane_id}"};
  auto extra = LaunchArgs(launch);
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back("--");
  a.insert(a.end(), launch.argv.begin(), launch.argv.end());
  MATES_ASSIGN_OR_RETURN(std::string out, RunAs(a, "", ClientEnv(launch)));
  return TrimEnd(out);
}

Result<std::string> Tmux::SplitWindow(const std::string& session, const Launch& launch) const {
  std::vector<std::string> a = {"split-window", "-d", "-t", "=" + session + ":", "-P", "-F", "#{pane_id}"};
  auto extra = LaunchArgs(launch);
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back("--");
  a.insert(a.end(), launch.argv.begin(), launch.argv.end());
  MATES_ASSIGN_OR_RETURN(std::string out, RunAs(a, "", ClientEnv(launch)));
  // Keep room for the next split.
  (void)SelectLayout(session, "tiled");
  return TrimEnd(out);
}

Result<std::string> Tmux::NewWindow(const std::string& session, const std::string& name, const Launch& launch) const {
  std::vector<std::string> a = {"new-window", "-d", "-t", "=" + session + ":", "-n", name, "-P", "-F", "#{pane_id}"};
  auto extra = LaunchArgs(launch);
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back("--");
  a.insert(a.end(), launch.argv.begin(), launch.argv.end());
  MATES_ASSIGN_OR_RETURN(std::string out, RunAs(a, "", ClientEnv(launch)));
  return TrimEnd(out);
}

Status Tmux::SetOption(const std::string& target, const std::string& option, const std::string& value) const {
  return Run({"set-option", "-t", target, option, value}).status();
}

Status Tmux::SelectLayout(const std::string& session, const std::string& layout) const {
  return Run({"select-layout", "-t", "=" + session + ":", layout}).status();
}

Result<std::vector<PaneInfo>> Tmux::ListPanes(const std::string& session) const {
  // One space between fields, the command last: it may hold spaces, the
  // others never do, and the status is empty while the pane lives. (Not
  // tabs: without a UTF-8 locale tmux prints every tab as '_'.)
  MATES_ASSIGN_OR_RETURN(std::string out,
                         Run({"list-panes", "-s", "-t", "=" + session, "-F",
                              "#{pane_id} #{pane_dead} #{pane_dead_status} #{pane_pid} #{pane_current_command}"}));
  std::vector<PaneInfo> panes;
  size_t start = 0;
  while (start < out.size()) {
    size_t nl = out.find('\n', start);
    std::string line = out.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? out.size() : nl + 1;
    std::vector<std::string> f;
    size_t from = 0;
    while (f.size() < 4) {
      size_t sp = line.find(' ', from);
      if (sp == std::string::npos) break;
      f.push_back(line.substr(from, sp - from));
      from = sp + 1;
    }
    f.push_back(line.substr(std::min(from, line.size())));
    if (f.size() < 5 || f[0].empty()) continue;
    PaneInfo p;
    p.id = f[0];
    p.dead = f[1] == "1";
    p.dead_status = p.dead && !f[2].empty() ? std::atoi(f[2].c_str()) : -1;
    p.pid = std::atoi(f[3].c_str());
    p.command = f[4];
    panes.push_back(p);
  }
  return panes;
}

Result<std::optional<int>> Tmux::DeadStatus(const std::string& pane) const {
  MATES_ASSIGN_OR_RETURN(std::string out, Run({"display-message", "-p", "-t", pane, "#{pane_dead} #{pane_dead_status}"}));
  if (out.rfind("1", 0) != 0) return std::optional<int>();
  size_t sp = out.find(' ');
  return std::optional<int>(sp == std::string::npos ? -1 : std::atoi(out.c_str() + sp + 1));
}

Result<std::string> Tmux::Capture(const std::string& pane) const {
  return Run({"capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", pane});
}

Status Tmux::Paste(const std::string& pane, const std::string& text) const {
  std::string buffer = "mates-" + pane.substr(pane.rfind('%') + 1);
  // One tmux client for both: it loads the buffer from its stdin, then
  // pastes it (a second command stops at the first's error).
  return Run({"load-buffer", "-b", buffer, "-", ";", "paste-buffer", "-p", "-d", "-b", buffer, "-t",
              pane},
             text)
      .status();
}

Status Tmux::SendKey(const std::string& pane, const std::string& key) const {
  return Run({"send-keys", "-t", pane, key}).status();
}

Status Tmux::KillSession(const std::string& session) const {
  return Run({"kill-session", "-t", "=" + session}).status();
}

std::string Tmux::SocketPath() const {
  auto asked = Run({"display-message", "-p", "#{socket_path}"});
  if (asked.ok() && !TrimEnd(*asked).empty()) return TrimEnd(*asked);
  const char* tmp = std::getenv("TMUX_TMPDIR");
  std::string dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return dir + "/tmux-" + std::to_string(::getuid()) + "/" + (socket_.empty() ? "default" : socket_);
}

Status Tmux::KillServer() const {
  std::string socket = SocketPath();
  Status s = Run({"kill-server"}).status();
  // Only a socket no server answers on any more (the server may take a
  // moment to go).
  for (int i = 0; i < 100; ++i) {
    if (!Run({"list-sessions"}).ok()) {
      ::unlink(socket.c_str());
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // No server answers any more: whether this call or something earlier
  // ended it, it is down.
  return Run({"list-sessions"}).ok() ? s : Status::Ok();
}

}  // namespace mates::tmux
