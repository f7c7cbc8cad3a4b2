// Levers (DESIGN §27): how a person's `mates stop|restart|interrupt` reach
// the host of a team. The host listens on a unix socket in its runtime
// folder (the person's own, 0700, outside every sandbox: a sandbox sees a
// /tmp of its own) and names it in host.json ("control"). A peer of another
// uid is refused (SO_PEERCRED), whatever the folder's modes.
//
// A request is one JSON line of at most 64 KiB,
//   {"op": "stop"|"restart"|"interrupt"|"attach", "team": T, "agent": NAME, "reason": "…"}
// and the answer one line, {"ok": true, "said": "…"} or {"ok": false,
// "error": "…"}. Requests are served one at a time on the levers' thread;
// a client has 5 s to send its line. An accepted "attach" keeps the
// connection: the attach handler serves it from then on (attach.h).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/files.h"
#include "core/status.h"

namespace mates::host {

struct LeverRequest {
  std::string op;  // stop | restart | interrupt | attach
  std::string team;
  std::string agent;
  std::string reason;  // stop's words to the agent ("" = the default)
};

// What a request does (the host's), in words, or one clear error.
using LeverHandler = std::function<Result<std::string>(const LeverRequest&)>;
// An "attach": takes `conn` (and answers on it) or leaves it, with the
// error to answer.
using AttachHandler = std::function<Status(const LeverRequest&, ScopedFd& conn)>;

// A request's text checked: a known op, valid names, bounded reason.
Result<LeverRequest> ParseLeverRequest(const std::string& line);
std::string LeverRequestLine(const LeverRequest& r);

class Levers {
 public:
  // Listens at `socket` (replacing what was there) and serves from now on.
  static Result<std::unique_ptr<Levers>> Start(fs::path socket, LeverHandler handler, AttachHandler attach);
  // Stops serving and removes the socket.
  ~Levers();
  Levers(const Levers&) = delete;
  Levers& operator=(const Levers&) = delete;

  const fs::path& path() const { return path_; }

 private:
  Levers(fs::path path, ScopedFd listen, LeverHandler handler, AttachHandler attach);
  void Serve();
  // The answer to the request on `conn`; "" if an attach took it.
  std::string Answer(ScopedFd& conn);

  const fs::path path_;
  ScopedFd listen_;
  const LeverHandler handler_;
  const AttachHandler attach_;
  ScopedFd wake_r_, wake_w_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The client: sends `r` to the host listening at `socket`, and returns
// what it said it did, or its error (Unavailable: nobody answers there).
Result<std::string> PullLever(const fs::path& socket, const LeverRequest& r);

}  // namespace mates::host
