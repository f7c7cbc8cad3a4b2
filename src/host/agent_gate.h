// The agent gate (DESIGN §19): how `mates` run by an agent's tool inside
// its sandbox reaches the team. The tool cannot write team state (it is
// read-only there) nor reach the database (no network), so its `mates
// send`, `mates tasks …`, `mates inbox` go to a socket the host made for
// that agent alone and bound into that agent's sandbox
// (MATES_HOST_SOCKET). The host runs the command for it — the same mates,
// outside the sandbox, on the team's store — stamped as that agent: it
// sends as the agent (never as the lead, `user` or `merge-queue`), updates
// tasks as the agent, reads only its own inbox. Which agent is known by
// which socket was reached, not by anything the tool says.
//
// A request is one JSON line, {"argv": [...], "stdin": "..."} (at most
// 1 MiB); the answer one line, {"exit": N, "out": "...", "err": "..."}.
// Only the team's own commands are let through (send, inbox, tasks, log,
// status, merges list/show, team show), never an option that would choose
// another workspace, store or team; a command runs at most 300 s and its
// output is bounded; at most 4 run at a time per agent and 16 per host (a
// full gate answers at once that it is busy).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "core/cancel.h"
#include "core/status.h"
#include "store/workspace.h"

namespace mates::sandbox {
class AgentSockets;
}  // namespace mates::sandbox

namespace mates::host {

// The commands a sandboxed agent's `mates` sends through its gate rather
// than running itself (the client's test: argv[1] and on).
bool GoesThroughTheGate(const std::vector<std::string>& args);

// The client side: sends `args` (and stdin, when an argument is "-") to the
// gate at `socket`, prints what the command printed, and returns its exit
// code (1 with one error line when the gate cannot be reached).
int RunThroughTheGate(const std::string& socket, const std::vector<std::string>& args);

// Whether `args` is a command that only the person runs (the levers, the
// host's up and down, trust…), refused at once in a sandbox: why, or "".
std::string RefusedInTheSandbox(const std::vector<std::string>& args);

// Whether the gate lets `args` through for `agent`: "" if so, else why not.
std::string RefusedAtTheGate(const std::vector<std::string>& args);

class AgentGate {
 public:
  struct Options {
    Workspace ws{"."};
    std::string store_url;  // "" = the workspace's files
    fs::path dir;           // where its sockets live (the host's own, 0700)
    fs::path mates;         // the mates that runs the commands ("" = this program)
  };
  explicit AgentGate(Options options);
  ~AgentGate();
  AgentGate(const AgentGate&) = delete;
  AgentGate& operator=(const AgentGate&) = delete;

  // The socket of `agent` in `team`, made and served from the first call.
  Result<fs::path> SocketFor(const std::string& team, const std::string& agent);

 private:
  void Handle(ScopedFd conn, std::string team, std::string agent);
  std::string Answer(const std::string& request, const std::string& team, const std::string& agent,
                     const CancelToken* cancel);

  const Options options_;
  std::mutex mu_;
  std::map<std::string, int> busy_;  // guarded by mu_: commands running, by "TEAM\nAGENT"
  int busy_total_ = 0;               // guarded by mu_
  CancelToken stopping_;  // cancelled when the gate goes: every command's token is linked to it
  std::unique_ptr<sandbox::AgentSockets> sockets_;  // last: gone first
};

}  // namespace mates::host
