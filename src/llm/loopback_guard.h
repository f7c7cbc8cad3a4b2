// Who may talk to a server mates runs on loopback for people and agents
// (the dashboard, `mates mcp --http`): requests that name the server by
// 127.0.0.1 or localhost on its port (a browser tricked by DNS rebinding
// names another host), that no other site's page sent (a browser says
// whose page asks, in Origin), and that carry the server's token (in
// `?token=` or `Authorization: Bearer`), compared in constant time. Each
// server answers a refusal in its own shape.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>

namespace mates::llm {

// A secret of 32 bytes from the kernel, base64url (43 characters).
std::string NewSecretToken();

struct Refusal {
  int status = 403;  // 403 for the Host or Origin, 401 for the token
  std::string message;
};

class LoopbackGuard {
 public:
  LoopbackGuard() : token_(NewSecretToken()) {}
  const std::string& token() const { return token_; }
  // The port the server listens on (its Host check), once bound.
  void set_port(int port) { port_ = port; }
  // Why `req` is refused, or nothing. `check_origin`: an Origin other than
  // the server's own is refused (for what changes something, or always).
  std::optional<Refusal> Check(const httplib::Request& req, bool check_origin) const;

 private:
  const std::string token_;
  int port_ = -1;  // set before the server listens
};

}  // namespace mates::llm
