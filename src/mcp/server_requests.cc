#include "mcp/server_requests.h"

#include "core/guarded.h"
#include "core/log.h"
#include "core/text.h"
#include "store/elicitation.h"

namespace mates::mcp {
namespace {

// A path as a file: URI (RFC 8089), its bytes percent-encoded but for the
// unreserved ones and '/'.
std::string FileUri(const std::filesystem::path& p) { return "file://" + PercentEncode(p.string(), "/"); }

Json Declined() { return Json{{"action", "decline"}}; }

std::string AnswerElicitation(const std::string& server, const Incoming& in, const ClientServices& services,
                              const CancelToken& stop) {
  const Json& p = in.params;
  if (p.contains("mode") && p["mode"].is_string() && p["mode"] != "form") {
    return ErrorFrame(in.id, kInvalidParams, "mates answers form elicitations only, not mode " + DumpJson(p["mode"]));
  }
  if (!p.contains("message") || !p["message"].is_string()) {
    return ErrorFrame(in.id, kInvalidParams, "elicitation/create needs a message");
  }
  const Json schema = p.contains("requestedSchema") ? p["requestedSchema"] : Json::object();
  if (Status s = elicitation::CheckSchema(schema); !s.ok()) {
    return ErrorFrame(in.id, kInvalidParams, "mates cannot ask this: " + s.message());
  }
  switch (services.elicitation) {
    case ElicitationPolicy::kDecline:
      return ResultFrame(in.id, Declined());
    case ElicitationPolicy::kAcceptDefaults: {
      Json content = elicitation::WithDefaults(schema, Json::object());
      // What has no default cannot be made up: a person would have to say it.
      if (!elicitation::CheckAnswer(schema, content).ok()) return ResultFrame(in.id, Declined());
      return ResultFrame(in.id, Json{{"action", "accept"}, {"content", std::move(content)}});
    }
    case ElicitationPolicy::kAsk:
      break;
  }
  if (!services.ask) return ResultFrame(in.id, Declined());
  auto answer = services.ask(server, p, services.elicitation_timeout_s, stop);
  if (!answer.ok()) {
    LogInfo("mcp server " + server + ": its question was declined: " + answer.status().message());
    return ResultFrame(in.id, Declined());
  }
  Json result = *answer;
  if (!result.is_object() || !result.contains("action") || !result["action"].is_string()) {
    LogWarning("mcp server " + server + ": its question got an answer of no known shape; declined");
    return ResultFrame(in.id, Declined());
  }
  if (result["action"] == "accept") {
    Json content = result.contains("content") ? result["content"] : Json::object();
    if (Status s = elicitation::CheckAnswer(schema, content); !s.ok()) {
      LogWarning("mcp server " + server + ": the answer to its question does not fit it (" + s.message() +
                 "); declined");
      return ResultFrame(in.id, Declined());
    }
    result = Json{{"action", "accept"}, {"content", elicitation::WithDefaults(schema, std::move(content))}};
  } else if (result["action"] != "decline" && result["action"] != "cancel") {
    return ResultFrame(in.id, Declined());
  } else {
    result = Json{{"action", result["action"]}};
  }
  return ResultFrame(in.id, std::move(result));
}

}  // namespace

Result<ElicitationPolicy> ParseElicitationPolicy(const std::string& text) {
  if (text == "ask") return ElicitationPolicy::kAsk;
  if (text == "accept_defaults") return ElicitationPolicy::kAcceptDefaults;
  if (text == "decline") return ElicitationPolicy::kDecline;
  return Status::InvalidArgument("elicitation must be ask, accept_defaults or decline, not '" + text + "'");
}

const char* ElicitationPolicyName(ElicitationPolicy p) {
  switch (p) {
    case ElicitationPolicy::kAsk:
      return "ask";
    case ElicitationPolicy::kAcceptDefaults:
      return "accept_defaults";
    case ElicitationPolicy::kDecline:
      return "decline";
  }
  return "ask";
}

Json ClientCapabilities(const ClientServices& services) {
  Json caps = Json::object();
  caps["roots"] = Json{{"listChanged", false}};
  // Form elicitations ({} is how revisions before 2025-11-25 say it).
  caps["elicitation"] = Json::object();
  if (services.sample) caps["sampling"] = Json::object();
  return caps;
}

std::string AnswerServerRequest(const std::string& server, const Incoming& in, const ClientServices& services,
                                const CancelToken& stop) {
  if (in.method == "ping") return ResultFrame(in.id, Json::object());
  if (in.method == "roots/list") {
    Json roots = Json::array();
    for (const auto& r : services.roots) roots.push_back(Json{{"uri", FileUri(r)}, {"name", r.filename().string()}});
    return ResultFrame(in.id, Json{{"roots", std::move(roots)}});
  }
  if (in.method == "elicitation/create") return AnswerElicitation(server, in, services, stop);
  if (in.method == "sampling/createMessage" && services.sample) {
    auto r = services.sample(server, in.params, stop);
    if (!r.ok()) return ErrorFrame(in.id, kInternalError, r.status().message());
    return ResultFrame(in.id, std::move(*r));
  }
  return ErrorFrame(in.id, kMethodNotFound, "mates does not offer " + in.method);
}

ServerRequests::ServerRequests(std::string server, std::shared_ptr<const ClientServices> services,
                               std::function<void(const std::string& frame)> send, std::function<void(bool)> hold)
    : server_(std::move(server)), services_(std::move(services)), send_(std::move(send)), hold_(std::move(hold)) {}

ServerRequests::~ServerRequests() { Stop(); }

void ServerRequests::Stop() {
  std::vector<std::unique_ptr<Answering>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    all.swap(answering_);
  }
  stop_.Cancel(CancelToken::kForGood);
  for (auto& a : all) a->thread.join();
}

void ServerRequests::ReapLocked() {
  for (auto it = answering_.begin(); it != answering_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = answering_.erase(it);
    } else {
      ++it;
    }
  }
}

void ServerRequests::Handle(const Incoming& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  ReapLocked();
  if (answering_.size() >= kMaxAnswering) {
    send_(ErrorFrame(request.id, kInternalError,
                     "mates is answering " + std::to_string(kMaxAnswering) + " requests of this server already"));
    return;
  }
  auto a = std::make_unique<Answering>();
  Answering* self = a.get();
  a->thread = std::thread([this, self, request] {
    NameThisThread("mcp-ask:" + server_);
    RunGuarded("answering mcp server " + server_, [&] {
      // Whatever goes wrong, the server gets an answer: one it waits for
      // forever would hang the call that asked.
      const bool waits = (request.method == "elicitation/create" && services_->elicitation == ElicitationPolicy::kAsk &&
                          services_->ask) ||
                         (request.method == "sampling/createMessage" && services_->sample);
      if (waits && hold_) hold_(true);
      std::string frame;
      try {
        frame = AnswerServerRequest(server_, request, *services_, stop_);
      } catch (const std::exception& e) {
        frame = ErrorFrame(request.id, kInternalError, std::string("mates could not answer: ") + e.what());
      }
      if (waits && hold_) hold_(false);
      send_(frame);
    });
    self->done.store(true);
  });
  answering_.push_back(std::move(a));
}

}  // namespace mates::mcp
