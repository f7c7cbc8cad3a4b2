#include "llm/loopback_guard.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>

#include "core/text.h"

namespace mates::llm {
namespace {

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string NewSecretToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // no kernel randomness: nothing safe to hand out
    got += static_cast<size_t>(n);
  }
  return Base64Unpadded(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes), /*url_safe=*/true);
}

std::optional<Refusal> LoopbackGuard::Check(const httplib::Request& req, bool check_origin) const {
  const std::string host = req.get_header_value("Host");
  const std::string port = ":" + std::to_string(port_);
  if (host != "127.0.0.1" + port && host != "localhost" + port) {
    return Refusal{403, "this server answers to http://127.0.0.1" + port + " only"};
  }
  // Asked from another site's page (a browser says which): refused, token
  // or not (DESIGN §19). A client that is no browser sends no Origin.
  if (check_origin && req.has_header("Origin")) {
    const std::string origin = req.get_header_value("Origin");
    if (origin != "http://127.0.0.1" + port && origin != "http://localhost" + port) {
      return Refusal{403, "a request from another origin (" + origin.substr(0, 100) + ") is refused"};
    }
  }
  std::string given = req.get_param_value("token");
  const std::string auth = req.get_header_value("Authorization");
  if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
  if (!SameSecret(given, token_)) return Refusal{401, "missing or wrong token (?token= or Authorization: Bearer)"};
  return std::nullopt;
}

}  // namespace mates::llm
