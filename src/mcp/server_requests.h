// What mates' MCP client answers when a server asks (DESIGN §23). A server
// may send requests of its own on any transport: `ping`, `roots/list`,
// `elicitation/create` (a question for the user, with a JSON schema of the
// answer) and `sampling/createMessage` (a model call on the client's
// behalf). Every request gets an answer, at once or when it is known:
// one the client cannot serve is a JSON-RPC error at once, never silence
// (a server waiting for an answer would hang the tool call that asked).
//
// ServerRequests answers one session's requests, each on a thread of its
// own (an elicitation waits for a person, a sampling for a model; the
// session's reader must go on meanwhile), at most kMaxAnswering at a time —
// beyond, the request is refused at once. Its threads are joined when it
// goes; what they wait for is cancelled first.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcp/oauth.h"
#include "core/cancel.h"
#include "core/json.h"
#include "core/status.h"
#include "mcp/jsonrpc.h"

namespace mates::mcp {

// How a server's `elicitation/create` is answered (`mcp.elicitation` in
// .mates/config.yaml).
enum class ElicitationPolicy {
  kAsk,             // put to a person (ClientServices::ask); declined if nobody can be asked
  kAcceptDefaults,  // accepted with the schema's defaults
  kDecline,         // declined
};
Result<ElicitationPolicy> ParseElicitationPolicy(const std::string& text);
const char* ElicitationPolicyName(ElicitationPolicy p);

// What the client offers its servers.
struct ClientServices {
  // roots/list: the folders the agents work in (absolute paths).
  std::vector<std::filesystem::path> roots;
  ElicitationPolicy elicitation = ElicitationPolicy::kAsk;
  double elicitation_timeout_s = 300;  // given to `ask`: then it declines
  // Puts server `server`'s elicitation (its params: message,
  // requestedSchema, checked) to a person; the answer is the result to
  // send ({action, content}); an error declines it. Waits, until `stop`
  // or `timeout_s`.
  std::function<Result<Json>(const std::string& server, const Json& params, double timeout_s, const CancelToken& stop)>
      ask;
  // Serves sampling/createMessage (its params) with a model; null: the
  // client does not offer sampling.
  std::function<Result<Json>(const std::string& server, const Json& params, const CancelToken& stop)> sample;
  // How a person logs in to an HTTP server that wants OAuth (mcp/oauth.h);
  // none: a server that wants a new login is an error saying to log in.
  std::optional<oauth::LoginOptions> login;
};

// The `capabilities` sent with initialize.
Json ClientCapabilities(const ClientServices& services);

// The answer to one server request, as a JSON-RPC frame (no newline).
// May wait (an elicitation put to a person, a sampling) until `stop`.
std::string AnswerServerRequest(const std::string& server, const Incoming& request, const ClientServices& services,
                                const CancelToken& stop);

class ServerRequests {
 public:
  static constexpr size_t kMaxAnswering = 8;
  // `send` takes each answer frame; it may be called from several threads
  // at once. `hold(true)` when an answer starts to wait on a person or a
  // model, `hold(false)` when it is in (the session's calls do not time
  // out meanwhile: internal::PendingTable::Hold).
  ServerRequests(std::string server, std::shared_ptr<const ClientServices> services,
                 std::function<void(const std::string& frame)> send, std::function<void(bool)> hold = {});
  ~ServerRequests();
  ServerRequests(const ServerRequests&) = delete;
  ServerRequests& operator=(const ServerRequests&) = delete;

  // Answers `request` (a kRequest) from a thread of its own. Thread-safe.
  void Handle(const Incoming& request);
  // Cancels what is still being answered and joins every thread (the
  // destructor does it too). Nothing is handled after.
  void Stop();

 private:
  struct Answering {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void ReapLocked();

  const std::string server_;
  const std::shared_ptr<const ClientServices> services_;
  const std::function<void(const std::string&)> send_;
  const std::function<void(bool)> hold_;
  CancelToken stop_;

  std::mutex mu_;
  std::vector<std::unique_ptr<Answering>> answering_;  // guarded by mu_
  bool stopped_ = false;                               // guarded by mu_
};

}  // namespace mates::mcp
