// One unix socket per agent, all served by one thread: what the agent
// gate (host/agent_gate.h) and the network proxy (sandbox/net_proxy.h)
// listen on. A socket lives at DIR/TEAM+AGENT/s (SocketDirName), its
// folder 0700: the folder is what a sandbox binds, so that the agent
// cannot remove or replace the socket. Each connection is handled on a
// thread of its own, joined once it is done (a long-lived host keeps
// none), and every one at the end.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "core/status.h"

namespace mates::sandbox {

namespace fs = std::filesystem;

class AgentSockets {
 public:
  struct Caller {
    std::string team, agent;  // whose socket it came to
  };
  // On the serving thread, for each new connection: "" admits it; else
  // that text is written to it and it is closed. `running`: how many
  // connections are being handled now.
  using Admit = std::function<std::string(const Caller& who, size_t running)>;
  // On the connection's own thread.
  using Handle = std::function<void(ScopedFd conn, const Caller& who)>;

  AgentSockets(fs::path dir, int backlog, Admit admit, Handle handle);
  // Stops accepting, removes the sockets, and waits for every handler:
  // the owner first makes its handlers end (a stop flag, a cancel).
  ~AgentSockets();
  AgentSockets(const AgentSockets&) = delete;
  AgentSockets& operator=(const AgentSockets&) = delete;

  // The socket of `agent` in `team`, made and served from the first call.
  Result<fs::path> SocketFor(const std::string& team, const std::string& agent);

 private:
  struct Listener {
    Caller who;
    ScopedFd fd;
    fs::path path;
  };
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void Serve();
  // Joins the workers that are done. mu_ held.
  void ReapLocked();

  const fs::path dir_;
  const int backlog_;
  const Admit admit_;
  const Handle handle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Listener>> listeners_;  // guarded by mu_
  std::vector<Worker> workers_;                        // guarded by mu_
  ScopedFd wake_r_, wake_w_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace mates::sandbox
