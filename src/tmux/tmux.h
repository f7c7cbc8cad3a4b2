// Tmux: a client for one tmux server, driven with argv (never a shell).
//
// - Every call is `tmux -L <socket> …` (or the user's default server when
//   the socket is ""), so tests and clusters use a private server and
//   never touch a person's own tmux.
// - Panes are addressed by their `%id`, which tmux never reuses while the
//   server lives, never by index (indexes drift when panes close).
// - Text goes in through a named paste buffer per pane (`load-buffer` from
//   stdin, then `paste-buffer -p`, bracketed when the program asked for
//   it), so quotes, newlines and unicode arrive as they are and two panes
//   can be typed into at once without mixing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mates::tmux {

struct PaneInfo {
  std::string id;       // "%3"
  bool dead = false;    // its program exited (remain-on-exit keeps the pane)
  int dead_status = -1;  // then its exit status (-1: unknown, or alive)
  int pid = 0;          // the pane's program
  std::string command;  // what runs in it now
};

struct Launch {
  std::string cwd;
  std::vector<std::string> argv;           // run directly by tmux (no shell)
  std::map<std::string, std::string> env;  // added to the pane's environment (PATH too)
};

class Tmux {
 public:
  explicit Tmux(std::string socket) : socket_(std::move(socket)) {}

  // Runs one tmux command; its stdout. `input` is fed to stdin.
  Result<std::string> Run(const std::vector<std::string>& args, const std::string& input = "") const;

  bool HasSession(const std::string& session) const;
  // A new detached session whose first pane runs `launch`; its pane id.
  // The server keeps panes whose program exited (remain-on-exit) and
  // 100,000 lines of history, set before the first pane starts.
  Result<std::string> NewSession(const std::string& session, const Launch& launch, int width = 200,
                                 int height = 50) const;
  // Another pane in the session's window; its pane id.
  Result<std::string> SplitWindow(const std::string& session, const Launch& launch) const;
  // A new window (in the background) running `launch`; its pane id.
  Result<std::string> NewWindow(const std::string& session, const std::string& name, const Launch& launch) const;
  Status SetOption(const std::string& target, const std::string& option, const std::string& value) const;
  Status SelectLayout(const std::string& session, const std::string& layout) const;
  Result<std::vector<PaneInfo>> ListPanes(const std::string& session) const;

  // The pane's whole history and screen, wrapped lines joined.
  Result<std::string> Capture(const std::string& pane) const;
  // The exit status of the pane's program if it exited (remain-on-exit
  // keeps the pane); nullopt while it runs.
  Result<std::optional<int>> DeadStatus(const std::string& pane) const;
  // Types `text` into the pane (through buffer "mates-<pane>").
  Status Paste(const std::string& pane, const std::string& text) const;
  // Presses a key ("Enter", "C-c", …).
  Status SendKey(const std::string& pane, const std::string& key) const;

  Status KillSession(const std::string& session) const;
  // Ends this socket's server (every session on it) and removes its socket
  // file (tmux leaves it behind).
  Status KillServer() const;
  // Where this server's socket is: asked of the running server, else where
  // tmux puts it ($TMUX_TMPDIR or /tmp, then tmux-<uid>/<socket>).
  std::string SocketPath() const;

  const std::string& socket() const { return socket_; }
  // The argv prefix of every call ("tmux", "-L", socket).
  std::vector<std::string> Base() const;

 private:
  // Run, the tmux client itself with `env` (nullopt: ours).
  Result<std::string> RunAs(const std::vector<std::string>& args, const std::string& input,
                            const std::optional<std::vector<std::string>>& env) const;

  std::string socket_;
};

}  // namespace mates::tmux
