// See http_guard.h.
#include "dashboard/http_guard.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace mates::dashboard {
namespace {

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kConflict:
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
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
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

void SendJson(httplib::Response& res, const Json& j, int status) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(DumpJson(j), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, Json{{"error", message}}, status);
}

void SendStatus(httplib::Response& res, const Status& s) { SendError(res, HttpStatusOf(s), s.message()); }

void TooLarge(const httplib::Request&, httplib::Response& res) {
  SendError(res, 413, "the request body is over " + std::to_string(kMaxBodyBytes >> 10) + " KiB");
}

bool ReadJsonBody(const httplib::Request& req, httplib::Response& res, Json* out) {
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
    SendError(res, 415, "send JSON (Content-Type: application/json)");
    return false;
  }
  auto j = ParseJson(req.body);
  if (!j.ok() || !j->is_object()) {
    SendError(res, 400, j.ok() ? "the body must be a JSON object" : j.status().message());
    return false;
  }
  *out = std::move(*j);
  return true;
}

bool HttpGuard::Admit(const httplib::Request& req, httplib::Response& res) const {
  const std::string host = req.get_header_value("Host");
  const std::string port = ":" + std::to_string(port_);
  if (host != "127.0.0.1" + port && host != "localhost" + port) {
    SendError(res, 403, "this dashboard answers to http://127.0.0.1" + port + " only");
    return false;
  }
  // A change asked from another page (a browser says which): refused, token
  // or not (DESIGN §19). A client that is no browser sends no Origin.
  if (req.method == "POST" && req.has_header("Origin")) {
    const std::string origin = req.get_header_value("Origin");
    if (origin != "http://127.0.0.1" + port && origin != "http://localhost" + port) {
      SendError(res, 403, "a change from another origin (" + origin.substr(0, 100) + ") is refused");
      return false;
    }
  }
  std::string given = req.get_param_value("token");
  const std::string auth = req.get_header_value("Authorization");
  if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
  if (!SameSecret(given, token_)) {
    res.set_header("WWW-Authenticate", "Bearer");
    if (req.path == "/" || req.path.empty()) {
      res.status = 401;
      res.set_content(
          "mates dashboard: this URL needs its token. Open the URL that `mates up` or `mates dashboard` printed "
          "(`mates status` shows it too).\n",
          "text/plain; charset=utf-8");
    } else {
      SendError(res, 401, "missing or wrong token (?token= or Authorization: Bearer)");
    }
    return false;
  }
  return true;
}

}  // namespace mates::dashboard
