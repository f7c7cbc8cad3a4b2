// The MCP client side (DESIGN §14, §23): a session with one MCP server —
// over stdio (a child process, one JSON-RPC message per line) or streamable
// HTTP — and, on top of it, the handshake, the tool list and tool calls.
//
// A session is shared by the agents of a host: requests from several
// threads go out interleaved, each waits for the answer with its id. What
// the server asks of us (mcp/server_requests.h) is answered on threads of
// its own. Stdio sessions have a reader thread (owned by the session,
// joined when it goes) that hands answers to their waiters and notices the
// server's death.
//
// Streamable HTTP (revision 2025-03-26 and later): each message is a POST
// whose answer is a JSON body or an event stream. A stream the server ends
// before our answer is resumed: after the `retry` it gave (else 1 s), a GET
// with the stream's `Last-Event-ID`, until the answer or the deadline.
// Once the handshake is done a GET stream is kept open for what the server
// sends unasked (its requests, notifications), reconnected the same way;
// a server that answers that GET with 405 offers none. The session ends
// with a DELETE.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/cancel.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"
#include "sandbox/sandbox.h"
#include "mcp/server.h"
#include "mcp/server_requests.h"

namespace mates::mcp {

namespace fs = std::filesystem;

// One server of W/.mcp.json (mcp/config.h reads it).
struct ServerConfig {
  std::string name;
  // kSse: HTTP+SSE, the transport of revision 2024-11-05.
  enum class Transport { kStdio, kHttp, kSse } transport = Transport::kStdio;
  std::vector<std::string> argv;               // stdio: command, then args
  std::map<std::string, std::string> env;      // stdio: added to a clean environment
  std::string url;                             // http
  std::map<std::string, std::string> headers;  // http
  // Who gets its tools: "lead", "teammate" or a member's name; empty = all.
  std::vector<std::string> roles;
  double startup_timeout_s = 30;
  double call_timeout_s = 120;
  // How its questions to the user are answered (mcp.elicitation).
  ElicitationPolicy elicitation = ElicitationPolicy::kAsk;
  // How long a question put to a person waits for an answer before it is
  // declined (mcp.elicitation_timeout).
  double elicitation_timeout_s = 300;
  // Whether its sampling/createMessage is served (mcp.sampling: serve |
  // decline), when the client has a model to serve it with.
  bool sampling = true;
  // Why it is not started ("" = it is): its file is not trusted (DESIGN
  // §19). Such a server's `${VAR}`s are left as written, never expanded.
  std::string skipped;
};

// A server's answers may be larger than what it is sent.
inline constexpr size_t kMaxServerFrameBytes = 16 << 20;

// The transport-level session.
class Session {
 public:
  virtual ~Session() = default;
  // Sends a request; its result, or the server's error (IOError when it
  // could not be sent — nothing reached the server, so it may be sent
  // again to a new one —, Unavailable when the server went away after,
  // Timeout/Cancelled when `deadline`/`cancel` came first: the server is
  // then told with notifications/cancelled).
  virtual Result<Json> Request(const std::string& method, Json params, const Deadline& deadline,
                               const CancelToken* cancel) = 0;
  virtual Status Notify(const std::string& method, Json params) = 0;
  // False once the server is gone (its process ended, the HTTP session
  // expired); `why()` says how.
  virtual bool alive() const = 0;
  virtual std::string why() const = 0;
  // The negotiated revision, sent with every HTTP request.
  virtual void SetProtocolVersion(const std::string& /*version*/) {}
  // The handshake is done (an HTTP session opens its GET stream).
  virtual void Opened() {}

  // What the server notifies (progress, list changes) goes to `f`, on the
  // session's reader: quick, and never a request back to the server.
  void OnNotification(std::function<void(const std::string& method, const Json& params)> f) {
    std::lock_guard<std::mutex> lock(notify_mu_);
    on_notification_ = std::move(f);
  }

 protected:
  void Notified(const std::string& method, const Json& params) {
    std::function<void(const std::string&, const Json&)> f;
    {
      std::lock_guard<std::mutex> lock(notify_mu_);
      f = on_notification_;
    }
    if (f) f(method, params);
  }
  // Notified, for internal::Route.
  const std::function<void(const std::string&, const Json&)> notified_ = [this](const std::string& method,
                                                                               const Json& params) {
    Notified(method, params);
  };

 private:
  std::mutex notify_mu_;
  std::function<void(const std::string&, const Json&)> on_notification_;  // guarded by notify_mu_
};

// The revisions the client speaks, newest first: every published one a
// server may answer with.
inline const std::vector<std::string> kClientRevisions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// Starts `c.argv` in `cwd` with `c.env` over a minimal environment; its
// stderr goes to `stderr_log`. `tag` marks it for the host's process
// clean-up (core/process_tree.h). It runs in `sandbox` with `cwd` as its
// work root (DESIGN §18). What the server asks is answered with
// `services`.
Result<std::unique_ptr<Session>> StartStdioSession(const ServerConfig& c, const fs::path& cwd,
                                                   const fs::path& stderr_log, const std::string& tag,
                                                   const sandbox::Sandbox& sandbox,
                                                   std::shared_ptr<const ClientServices> services);
// Streamable HTTP, or for kSse the older HTTP+SSE (its stream opened and its
// endpoint known before it returns).
Result<std::unique_ptr<Session>> StartHttpSession(const ServerConfig& c, std::shared_ptr<const ClientServices> services);

struct RemoteTool {
  std::string name;
  std::string description;
  Json input_schema;
};

// A server after the handshake.
class Client {
 public:
  // initialize (our newest revision and what `services` offers; the
  // server's answer must be a revision we speak), notifications/initialized,
  // then tools/list (every page).
  static Result<std::unique_ptr<Client>> Open(const ServerConfig& c, std::unique_ptr<Session> session,
                                              const ClientServices& services);

  const std::string& name() const { return config_.name; }
  const std::string& protocol_version() const { return protocol_; }
  const std::string& server_name() const { return server_name_; }
  // Its tools as listed when it opened.
  const std::vector<RemoteTool>& tools() const { return tools_; }
  // tools/list, every page (at most 100), each tool read strictly.
  Result<std::vector<RemoteTool>> ListTools(Deadline deadline);
  // Whether the server said its tools changed (notifications/tools/
  // list_changed) since the last time this was asked.
  bool TakeToolsChanged() { return tools_changed_.exchange(false); }
  bool alive() const { return session_->alive(); }
  std::string why() const { return session_->why(); }

  // tools/call; a failure of the call itself (timeout, server gone, a
  // JSON-RPC error) is a Status, a tool's own failure an is_error outcome.
  // `progress` (may be null) is told the server's progress notifications
  // for it, as a person reads them ("3/10: indexing"), on the session's
  // reader thread.
  Result<ToolOutcome> Call(const std::string& tool, const Json& arguments, double timeout_s,
                           const CancelToken* cancel, std::function<void(const std::string&)> progress = {});

 private:
  Client(ServerConfig c, std::unique_ptr<Session> s) : config_(std::move(c)), session_(std::move(s)) {}
  void Notified(const std::string& method, const Json& params);

  ServerConfig config_;
  std::mutex progress_mu_;
  int64_t next_progress_ = 1;  // guarded by progress_mu_
  std::map<int64_t, std::function<void(const std::string&)>> progress_;  // guarded by progress_mu_: by token
  // Last: gone first, its reader (which calls Notified) with it.
  std::unique_ptr<Session> session_;
  std::string protocol_;
  std::string server_name_;
  std::vector<RemoteTool> tools_;
  std::atomic<bool> tools_changed_{false};
};

// An HTTP server's session and handshake: streamable HTTP, and for a
// "type": "http" server that answers its initialize 400, 404 or 405, the
// older HTTP+SSE at the same URL (the specification's backwards-compatible
// way); `c.transport` kSse goes there at once.
Result<std::unique_ptr<Client>> OpenHttpClient(const ServerConfig& c, std::shared_ptr<const ClientServices> services);

// A tool result's content as text for a model: text blocks as they are,
// other blocks (images, resources) named with their type and size.
std::string ContentText(const Json& result);

}  // namespace mates::mcp
