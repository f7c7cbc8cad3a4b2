// The dashboard's HTTP surface as a guard (DESIGN §11): who may ask (the
// token, compared in constant time; a Host of 127.0.0.1 or localhost on
// its port, against DNS rebinding), what a body must be (a JSON object,
// bounded), and how a Status becomes an HTTP answer. Internal to
// src/dashboard: it is the only place besides dashboard.cc that sees
// cpp-httplib.
#pragma once

#include <httplib.h>

#include <string>

#include "core/json.h"
#include "core/status.h"

namespace mates::dashboard {

// A request body's bound: a message or a task from the page.
inline constexpr size_t kMaxBodyBytes = 256 << 10;

// A secret of 32 bytes from the kernel, base64url (43 characters).
std::string NewSecretToken();

void SendJson(httplib::Response& res, const Json& j, int status = 200);
void SendError(httplib::Response& res, int status, const std::string& message);
// 400 invalid, 404 not found, 409 precondition or conflict, 503
// unavailable, else 500; the message as the JSON error.
void SendStatus(httplib::Response& res, const Status& s);

// The answer to a body over kMaxBodyBytes (413).
void TooLarge(const httplib::Request& req, httplib::Response& res);
// The request's JSON object, or false with a 415 or 400 sent.
bool ReadJsonBody(const httplib::Request& req, httplib::Response& res, Json* out);

class HttpGuard {
 public:
  HttpGuard() : token_(NewSecretToken()) {}
  const std::string& token() const { return token_; }
  // The port the server listens on (its Host check), once bound.
  void set_port(int port) { port_ = port; }
  // Token and Host, on every request: false with the answer sent.
  bool Admit(const httplib::Request& req, httplib::Response& res) const;

 private:
  const std::string token_;
  int port_ = -1;  // set before the server listens
};

}  // namespace mates::dashboard
