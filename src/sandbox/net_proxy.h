// The sandbox's way out to the network (DESIGN §18, mode `workspace`): a
// sandbox has a network namespace of its own with loopback only, and
// reaches the hosts of `sandbox.network.allow` through a proxy the host
// runs.
//
//  - NetProxy (in the host): an HTTP proxy on a Unix socket per agent,
//    bound into that agent's sandbox. It takes `CONNECT host:port` (HTTPS,
//    or any TCP) and absolute-form HTTP requests (`GET http://host/…`),
//    and connects only where a rule allows; anything else gets a 403 whose
//    body names the host and how a person allows it, and is recorded as a
//    denial of that agent.
//  - The relay (`mates-relay`, a program of its own beside mates: the
//    sandbox's first process, sandbox/relay_main.cc):
//    listens on 127.0.0.1:3128 inside the sandbox (HTTP_PROXY and
//    HTTPS_PROXY point there) and on 127.0.0.1:PORT for each loopback
//    `host:port` rule (a database on the host's loopback, reached as if it
//    were local), passes each connection to the proxy's socket, runs the
//    command, and exits as it exits.
//
// Written by hand, and why: no Debian package proxies with a per-host
// allowlist across a Unix socket into a network namespace (tinyproxy and
// squid listen on TCP, which the sandbox cannot reach, and would be a
// second service to install, configure and supervise per agent); what is
// needed is a CONNECT and request-line parser and a byte pump, ~300 lines.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/files.h"
#include "core/status.h"

struct sockaddr;

namespace mates::sandbox {

class AgentSockets;

// Inside the sandbox: where the relay listens for HTTP(S) proxy clients.
inline constexpr int kRelayPort = 3128;

// One rule of network.allow: "host", "*.domain", or "host:port".
struct NetRule {
  std::string host;  // lower case; "*.x" matches x's subdomains
  int port = 0;      // 0 = any
};
Result<NetRule> ParseNetRule(const std::string& entry);
bool Allows(const std::vector<NetRule>& rules, const std::string& host, int port);
// "" for a public internet address; else what it is ("a loopback
// address", "a private address (written as IPv6)", …): loopback,
// unspecified, private, shared, link-local, multicast and reserved, for
// IPv4 and for IPv6, including v4-mapped, v4-compatible and NAT64 forms.
std::string NonPublicClass(const struct sockaddr* a);
std::string AddressText(const struct sockaddr* a);
// The loopback ports the relay forwards (rules 127.0.0.1:P, localhost:P,
// P >= 1024: a lower port needs a capability the sandbox has not, and is
// reached through the proxy only).
std::vector<int> LoopbackPorts(const std::vector<NetRule>& rules);

// The folder name of an agent's sockets and private tmp: "TEAM+AGENT",
// one of its own for each pair (DESIGN §26: names in paths are injective).
std::string SocketDirName(const std::string& team, const std::string& agent);

// What the proxy refused, for the agent's activity and the attention list.
struct NetDenial {
  std::string team, agent;
  std::string host;
  int port = 0;
  double at = 0;  // wall seconds
};

class NetProxy {
 public:
  // `dir`: the host's own folder for its sockets. `on_denied` is called on
  // the proxy's threads.
  NetProxy(std::vector<NetRule> rules, fs::path dir, std::function<void(const NetDenial&)> on_denied);
  ~NetProxy();
  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

  const std::vector<NetRule>& rules() const { return rules_; }
  // The socket of `agent` in `team` ("" team and agent: the host's shared
  // tools, MCP servers), made and served from the first call.
  Result<fs::path> SocketFor(const std::string& team, const std::string& agent);
  // The last denials, newest last (at most 64).
  std::vector<NetDenial> Denials() const;

 private:
  void Handle(int conn, const std::string& team, const std::string& agent);
  void Deny(const std::string& team, const std::string& agent, const std::string& host, int port);

  const std::vector<NetRule> rules_;
  const std::function<void(const NetDenial&)> on_denied_;
  mutable std::mutex mu_;
  std::vector<NetDenial> denials_;  // guarded by mu_
  std::atomic<bool> stop_{false};   // set as it goes: every pump ends
  std::unique_ptr<AgentSockets> sockets_;  // last: gone first
};

}  // namespace mates::sandbox
