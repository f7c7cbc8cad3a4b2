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
#include "llm/loopback_guard.h"

namespace mates::dashboard {

// A request body's bound: a message or a task from the page.
inline constexpr size_t kMaxBodyBytes = 256 << 10;

using llm::NewSecretToken;

void SendJson(httplib::Response& res, const Json& j, int status = 200);
void SendError(httplib::Response& res, int status, const std::string& message);
// 400 invalid, 404 not found, 409 precondition or conflict, 503
// unavailable, else 500; the message as the JSON error.
void SendStatus(httplib::Response& res, const Status& s);

// The answer to a body over kMaxBodyBytes (413).
void TooLarge(const httplib::Request& req, httplib::Response& res);
// The request's JSON object, or false with a 415 or 400 sent.
bool ReadJsonBody(const httplib::Request& req, httplib::Response& res, Json* out);

// The dashboard's answers to what llm::LoopbackGuard refuses.
class HttpGuard {
 public:
  const std::string& token() const { return guard_.token(); }
  void set_port(int port) { guard_.set_port(port); }
  // Token and Host, on every request: false with the answer sent.
  bool Admit(const httplib::Request& req, httplib::Response& res) const;

 private:
  llm::LoopbackGuard guard_;
};

}  // namespace mates::dashboard
