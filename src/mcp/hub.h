// Hub: the MCP servers of a host (DESIGN §14), started once and shared by
// its agents. Each server's tools become agent tools named
// mcp__<server>__<tool>, with the server's description and input schema.
// A server that says its tools changed (notifications/tools/list_changed)
// is listed again before the next turn of any agent, and a restarted one
// is taken as it now lists: each agent's registry asks the hub (SourceFor)
// on every turn.
//
// A server that dies is restarted at the next call to it (a call it died
// during is an error result: it may have done part of its work, so it is
// not sent again); one that will not start is tried again after a backoff
// (1 s, doubling, at most 30 s), its calls failing meanwhile with the
// reason. Timeouts and cancellations tell the server
// (notifications/cancelled). Nothing a server does ends an agent: every
// failure is an is_error result.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mcp/client.h"
#include "store/workspace.h"
#include "tools/tool.h"
#include "trust/trust.h"

namespace mates::mcp {

// What a tool result may carry to a model (the rest is cut, and said).
inline constexpr size_t kMaxResultBytes = 100 << 10;

// How a server of the hub is: running, failed to start, or down since.
enum class ServerRun { kRunning, kFailed, kDown, kSkipped };

struct ServerState {
  std::string name;
  std::string transport;  // "stdio" | "http"
  ServerRun run = ServerRun::kFailed;
  std::string state;      // as said to a person: "running", "failed: why", "down: why"
  std::string why;        // the same without its first word ("" when running)
  std::vector<std::string> roles;
  std::vector<RemoteTool> tools;
  int restarts = 0;
};

class Hub : public std::enable_shared_from_this<Hub> {
 public:
  // The servers of W/.mcp.json (mcp/config.h), those of an untrusted file
  // skipped; servers' stderr goes to W/.mates/mcp/<name>.log, stdio
  // servers run in W.
  // Stdio servers run in `sandbox` (DESIGN §18).
  static Result<std::shared_ptr<Hub>> Load(const Workspace& ws,
                                           const trust::TrustStore& trust = trust::TrustStore(),
                                           std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off());
  Hub(Workspace ws, std::vector<ServerConfig> servers,
      std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off());
  ~Hub();
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  // Starts every server, side by side, and lists its tools; returns once
  // each is up or has failed (within its startup timeout). Failures are
  // warnings: the agents go without those tools.
  void Start();
  bool empty() const { return servers_.empty(); }
  // Who answers the servers' questions and serves their samplings (its
  // roots and policy are the hub's); for servers started from now on.
  void SetServices(ClientServices services) {
    std::lock_guard<std::mutex> lock(services_mu_);
    services_ = std::move(services);
  }

  // The tools `agent` gets (lead or teammate), per the servers' roles. The
  // hub must be owned by a shared_ptr (Load makes one).
  std::vector<std::unique_ptr<tools::Tool>> ToolsFor(const std::string& agent, bool is_lead);
  // The same, as they are on each turn: for an agent's registry.
  std::shared_ptr<tools::ToolSource> SourceFor(const std::string& agent, bool is_lead);
  // Lists again each running server that said its tools changed (a failed
  // listing keeps the tools it had, and is logged).
  void Refresh();
  // Counts the changes to any server's tools.
  uint64_t generation() const { return generation_.load(); }
  std::vector<ServerState> States() const;

  // One call (what the tools run); `progress` is told what the server
  // says of it as it goes.
  tools::ToolResult Call(const std::string& server, const std::string& tool, const Json& arguments,
                         const CancelToken* cancel, const std::function<void(const std::string&)>& progress = {});

 private:
  struct Server {
    ServerConfig config;
    mutable std::mutex mu;
    std::shared_ptr<Client> client;  // guarded by mu; null when not running
    std::vector<RemoteTool> tools;   // guarded by mu: as last listed
    std::string error;               // guarded by mu: why it is not running
    int restarts = 0;                // guarded by mu
    int failures = 0;                // guarded by mu: starts failed in a row
    Deadline retry_at;               // guarded by mu
    // Held while its tools are listed again: an agent that asks meanwhile
    // waits for the new list rather than go on with the old.
    std::mutex refresh_mu;
  };
  // The running client of `s`, started (or restarted) if need be.
  Result<std::shared_ptr<Client>> Running(Server& s);
  Result<std::shared_ptr<Client>> StartLocked(Server& s);
  // Drops `dead` as the server's client (if it still is).
  void Forget(Server& s, const std::shared_ptr<Client>& dead);

  const Workspace ws_;
  const std::shared_ptr<const sandbox::Sandbox> sandbox_;
  std::mutex services_mu_;
  ClientServices services_;  // guarded by services_mu_
  std::vector<std::unique_ptr<Server>> servers_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace mates::mcp
