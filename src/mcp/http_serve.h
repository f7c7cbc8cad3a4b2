// `mates mcp --http` (DESIGN §23): MCP servers (mcp/server.h) over
// streamable HTTP, so an agent in a container, on another machine (through
// an SSH tunnel) or any client that speaks HTTP only can join a team.
//
// One endpoint, http://127.0.0.1:PORT/mcp, behind llm::LoopbackGuard (the
// Host and Origin checks against DNS rebinding, and the token, given as
// `?token=` in the URL printed or as `Authorization: Bearer`).
// - POST: one JSON-RPC message. An `initialize` makes a session (its id in
//   `Mcp-Session-Id`, sent back with every later message; a session not
//   known is 404, one missing 400). A request is answered with its
//   response as JSON; a notification or a response gets 202. A waiting
//   call the client cancels (notifications/cancelled) is answered 202 with
//   no body: a cancelled request gets no response.
// - GET: the session's stream of what the server sends unasked — an event
//   with an id and a `retry` first, then a comment every 15 s — until the
//   session ends or the client goes.
// - DELETE: ends the session.
// At most `max_sessions` sessions: a new one ends the one idle longest.
// Bodies are bounded by kMaxFrameBytes whatever their framing.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "mcp/server.h"

namespace mates::mcp {

struct HttpServeOptions {
  int port = 0;  // 0: any free port
  size_t max_sessions = 16;
  // The protocol of one new session: `write` gets the frames it sends,
  // `unanswered` (its Options::on_unanswered) the ids it will not answer.
  std::function<std::unique_ptr<Server>(std::function<void(const std::string&)> write,
                                        std::function<void(const Json&)> unanswered)>
      make_session;
};

class HttpServe {
 public:
  static Result<std::unique_ptr<HttpServe>> Start(HttpServeOptions options);
  ~HttpServe();
  HttpServe(const HttpServe&) = delete;
  HttpServe& operator=(const HttpServe&) = delete;

  // Ends every session (their waiting calls cancelled) and the server.
  void Stop();
  int port() const;
  // The endpoint with its token: what a client is given.
  std::string url() const;
  size_t sessions() const;

  class Impl;

 private:
  explicit HttpServe(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mates::mcp
