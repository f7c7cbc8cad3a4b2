// An MCP server (DESIGN §14): the protocol of a tools server, over any
// line-based transport. `mates mcp` feeds it stdin's lines and prints what
// it writes; tests feed it strings.
//
// Calls run on the reader's thread, in order, except those a tool says may
// wait (read_inbox with wait_seconds): each of those runs on a thread of its
// own, owned by the server, so that the client can go on talking to it — a
// ping, another call, or `notifications/cancelled`, which wakes the waiting
// call and drops its answer (a cancelled request is not answered).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json.h"
#include "core/waker.h"
#include "mcp/jsonrpc.h"

namespace mates::mcp {

// The protocol revisions spoken, newest first (2025-06-18 or newer).
inline const std::vector<std::string> kProtocolVersions = {"2025-11-25", "2025-06-18"};

// What a tool's run sees of its call: a cancellation flag and a waker that
// is notified when the flag is set (a waiting tool subscribes it to what it
// waits for, and so wakes for either).
struct CallContext {
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();
  std::atomic<bool> cancelled{false};
};

struct ToolOutcome {
  std::string text;
  bool is_error = false;
};

struct ToolSpec {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema;  // a JSON Schema object
  bool read_only = false;
  // Runs the call; `arguments` is an object. Must not throw (the server
  // catches anyway and answers with an error result).
  std::function<ToolOutcome(const Json& arguments, CallContext& call)> run;
  // Whether this call may block for long (it then runs on its own thread).
  std::function<bool(const Json& arguments)> may_wait;
};

class Server {
 public:
  struct Options {
    std::string name = "mates";
    std::string version;
    std::string instructions;  // sent with the initialize result; "" = none
    size_t max_waiting_calls = 32;
    // Told of a request that gets no answer: a waiting call the client
    // cancelled (a transport that waits for each answer stops waiting).
    std::function<void(const Json& request_id)> on_unanswered;
  };
  // `write` gets each outgoing frame (no newline); the server calls it from
  // one thread at a time.
  Server(Options options, std::vector<ToolSpec> tools, std::function<void(const std::string&)> write);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // One frame from the client (a line without its newline).
  void HandleFrame(std::string_view frame);
  // The client is gone: cancels the calls still waiting and joins their
  // threads (their answers are dropped).
  void Shutdown();

  bool initialized() const { return initialized_.load(); }
  size_t waiting_calls() const;

 private:
  struct Waiting {
    std::string key;  // the request id, dumped
    CallContext call;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void Send(const std::string& frame);
  void HandleRequest(const Incoming& in);
  void HandleNotification(const Incoming& in);
  Json InitializeResult(const Json& params) const;
  Json ToolsList() const;
  // tools/call: answered here, or later from a thread of its own.
  void CallTool(const Incoming& in);
  Json RunTool(const ToolSpec& tool, const Json& arguments, CallContext& call) const;
  void Cancel(const Json& request_id);
  // Joins the threads of calls that have finished.
  void Reap();

  const Options options_;
  const std::vector<ToolSpec> tools_;
  const std::function<void(const std::string&)> write_;
  std::mutex write_mu_;
  std::atomic<bool> initialized_{false};

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Waiting>> waiting_;  // guarded by mu_
  bool shut_down_ = false;                                   // guarded by mu_
};

}  // namespace mates::mcp
