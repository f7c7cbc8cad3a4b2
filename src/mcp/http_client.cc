// The client's HTTP sessions (see client.h): streamable HTTP, and the older
// HTTP+SSE.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/guarded.h"
#include "core/log.h"
#include "llm/http.h"
#include "llm/sse.h"
#include "mcp/client.h"
#include "mcp/client_parts.h"

namespace mates::mcp {
namespace {

using namespace internal;  // NOLINT: the shared parts of the sessions

// ---- streamable HTTP ----

// How long to wait before resuming a stream whose server named no `retry`,
// and the longest a server may ask for.
constexpr long kDefaultRetryMs = 1000;
constexpr long kMaxRetryMs = 60'000;
// The GET stream is reconnected after a failure with a backoff up to this.
constexpr double kMaxStreamBackoffS = 30;
// How long the handshake waits for the GET stream to open.
constexpr double kFirstGetWaitS = 2;

// Where a stream stands: its last event id and the retry it asked for.
struct StreamMark {
  std::string last_id;
  long retry_ms = -1;
};

class HttpSession : public Session {
 public:
  HttpSession(ServerConfig c, std::shared_ptr<const ClientServices> services)
      : config_(std::move(c)),
        http_(llm::NewCurlTransport()),
        auth_(OwnAuthorization(config_) ? nullptr
                                        : std::make_unique<oauth::Authorizer>(config_.name, config_.url,
                                                                              oauth::GrantStore(), services->login)),
        requests_(
            config_.name, std::move(services), [this](const std::string& frame) { Answer(frame); },
            [this](bool on) { on ? pending_.Hold() : pending_.Release(); }) {}
  ~HttpSession() override {
    stop_.Cancel(CancelToken::kForGood);
    if (listener_.joinable()) listener_.join();
    requests_.Stop();
    // The session is ours to end; a server that refuses (405) keeps it.
    std::string sid;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sid = session_id_;
    }
    if (!sid.empty()) {
      llm::HttpRequest req = Base("DELETE", DeadlineIn(2));
      (void)http_->Send(req, [](std::string_view) { return true; }, nullptr);
    }
  }

  Result<Json> Request(const std::string& method, Json params, const Deadline& deadline,
                       const CancelToken* cancel) override {
    const int64_t id = next_id_.fetch_add(1);
    auto p = pending_.Add(id);
    StreamMark mark;
    bool streamed = false;
    Status posted = Post(RequestMessage(id, method, std::move(params)), deadline, cancel, p, &mark, &streamed);
    if (posted.ok() && !pending_.Ready(p) && streamed) posted = Resume(p, &mark, deadline, cancel, method);
    if (!posted.ok()) {
      pending_.Answer(id, posted);  // forgets it
      if (posted.code() == StatusCode::kCancelled || posted.code() == StatusCode::kTimeout) {
        return GaveUp(*this, id, method, cancel);
      }
      return posted;
    }
    if (!pending_.Ready(p)) {
      pending_.Answer(id, Status::Unavailable(""));  // forgets it
      return Status::Unavailable("server " + config_.name + " sent no answer to " + method);
    }
    auto answer = pending_.Wait(id, p, deadline, cancel);
    return std::move(*answer);
  }
  Status Notify(const std::string& method, Json params) override {
    return Post(NotificationMessage(method, std::move(params)), DeadlineIn(10), nullptr, nullptr, nullptr, nullptr);
  }
  bool alive() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return why_.empty();
  }
  std::string why() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return why_;
  }
  void SetProtocolVersion(const std::string& v) override {
    std::lock_guard<std::mutex> lock(mu_);
    protocol_ = v;
  }
  // Opens the GET stream and waits (a little) until it is open or
  // refused, so that nothing the server sends unasked from now on is
  // missed, nor mistaken for the resumption of a stream.
  void Opened() override {
    listener_ = std::thread([this] {
      NameThisThread("mcp-get:" + config_.name);
      RunGuarded("mcp server " + config_.name + " GET stream", [this] { Listen(); });
      first_get_.Cancel();
    });
    first_get_.WaitFor(kFirstGetWaitS);
  }

 private:
  llm::HttpRequest Base(const std::string& method, const Deadline& deadline) const {
    llm::HttpRequest req;
    req.method = method;
    req.url = config_.url;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!session_id_.empty()) req.headers.push_back("Mcp-Session-Id: " + session_id_);
      if (!protocol_.empty()) req.headers.push_back("MCP-Protocol-Version: " + protocol_);
    }
    for (const auto& [k, v] : config_.headers) req.headers.push_back(k + ": " + v);
    if (auth_ != nullptr) {
      if (std::string h = auth_->Header(); !h.empty()) req.headers.push_back(std::move(h));
    }
    if (deadline) req.total_timeout_s = std::max(0.001, SecondsLeft(deadline));
    return req;
  }

  // A server given its own Authorization header in .mcp.json is not one
  // mates logs in to.
  static bool OwnAuthorization(const ServerConfig& c) {
    return std::any_of(c.headers.begin(), c.headers.end(), [](const auto& kv) {
      std::string k = kv.first;
      std::transform(k.begin(), k.end(), k.begin(), [](unsigned char ch) { return std::tolower(ch); });
      return k == "authorization";
    });
  }

  // One message from the server, on whatever stream it came: an answer to
  // a waiter, a request of its own to answer, a notification.
  void Dispatch(const Json& msg) { (void)Route(msg, pending_, requests_, notified_); }

  // Our answer to a request of the server's, POSTed (a 202 comes back),
  // unless the session ends first.
  void Answer(const std::string& frame) {
    auto msg = ParseJson(frame);
    if (!msg.ok()) return;
    Status s = Post(*msg, DeadlineIn(10), &stop_, nullptr, nullptr, nullptr);
    if (!s.ok()) LogWarning("mcp server " + config_.name + ": our answer to its request was not delivered: " + s.message());
  }

  // Reads a body that is JSON or an event stream into Dispatch. Reading
  // stops once `waiting` (if any) has its answer; `mark` follows the
  // stream's ids and retry; `streamed` says it was an event stream.
  std::function<bool(std::string_view)> Reader(std::string* body, llm::SseParser* parser, bool* sse, bool* decided,
                                               bool* too_big, const std::shared_ptr<Pending>& waiting) {
    return [=, this](std::string_view bytes) {
      if (!*decided) {
        size_t first = bytes.find_first_not_of(" \t\r\n");
        if (first == std::string_view::npos) return true;
        *sse = bytes[first] != '{' && bytes[first] != '[';
        *decided = true;
      }
      if (*sse) {
        parser->Feed(bytes);
        return !(waiting && pending_.Ready(waiting));
      }
      if (body->size() + bytes.size() > kMaxServerFrameBytes) {
        *too_big = true;
        return false;
      }
      body->append(bytes);
      return true;
    };
  }

  // Sends `message` and reads what comes back; for a request, `waiting`
  // is its entry in pending_. A 401 or 403 goes to the authorizer, and
  // the message is sent again if it has a new token (kMaxLogins + 1 times
  // at most: it gives up on its own before).
  Status Post(const Json& message, const Deadline& deadline, const CancelToken* cancel,
              const std::shared_ptr<Pending>& waiting, StreamMark* mark, bool* streamed) {
    for (int attempt = 0;; ++attempt) {
      int refused = 0;
      std::string challenge;
      Status s = PostOnce(message, deadline, cancel, waiting, mark, streamed, &refused, &challenge);
      if (refused == 0 || auth_ == nullptr || attempt > oauth::kMaxLogins) return s;
      std::string why;
      if (!auth_->Refused(refused, challenge, &why)) return Status::FailedPrecondition(why);
    }
  }

  // One POST; `refused` is set to a 401's or 403's status (with its
  // WWW-Authenticate in `challenge`).
  Status PostOnce(const Json& message, const Deadline& deadline, const CancelToken* cancel,
                  const std::shared_ptr<Pending>& waiting, StreamMark* mark, bool* streamed, int* refused,
                  std::string* challenge) {
    llm::HttpRequest req = Base("POST", deadline);
    if (waiting) {
      // The answer may wait on a person or a model we were asked for
      // (PendingTable::Hold): the deadline moves, and the stream may be
      // quiet meanwhile.
      req.total_timeout_s = 0;
      req.low_speed_time_s = 24 * 3600;
      req.give_up = [this, waiting, deadline] { return pending_.Expired(waiting, deadline); };
    }
    req.body = DumpJson(message);
    req.headers.push_back("Content-Type: application/json");
    req.headers.push_back("Accept: application/json, text/event-stream");
    std::string body;
    bool sse = false, decided = false, too_big = false;
    llm::SseParser parser([this](const llm::SseEvent& e) {
      if (auto msg = ParseJson(e.data); msg.ok()) Dispatch(*msg);
    });
    auto r = http_->Send(req, Reader(&body, &parser, &sse, &decided, &too_big, waiting),
                         cancel != nullptr ? cancel->flag() : nullptr);
    if (mark != nullptr) *mark = {parser.last_id(), parser.retry_ms()};
    if (streamed != nullptr) *streamed = sse;
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kCancelled) return Status::Cancelled("cancelled");
      if (r.status().code() == StatusCode::kTimeout || (waiting ? pending_.Expired(waiting, deadline) : Expired(deadline))) {
        return Status::Timeout("timed out");
      }
      // A stream cut before our answer is resumed, like one ended (the
      // server keeps what it would have sent).
      if (sse && !parser.last_id().empty()) return Status::Ok();
      return Status::Unavailable("server " + config_.name + ": " + r.status().message());
    }
    if (r->status == 401 || r->status == 403) {
      *refused = r->status;
      auto h = r->headers.find("www-authenticate");
      if (h != r->headers.end()) *challenge = h->second;
    }
    if (auto sid = r->headers.find("mcp-session-id"); sid != r->headers.end()) {
      std::lock_guard<std::mutex> lock(mu_);
      session_id_ = sid->second;
    }
    MATES_RETURN_IF_ERROR(Refused(*r));
    if (too_big) return Status::InvalidArgument("server " + config_.name + " sent an answer over 16 MiB");
    if (!sse && !body.empty()) {
      auto msg = ParseJson(body);
      if (!msg.ok()) return Status::Unavailable("server " + config_.name + " sent a body that is not JSON");
      if (msg->is_array()) {
        for (const auto& m : *msg) Dispatch(m);
      } else {
        Dispatch(*msg);
      }
    }
    return Status::Ok();
  }

  // A status that is not a success, as the session's end or an error. A
  // 400, 404 or 405 before any session is NotFound: a server of the older
  // HTTP+SSE transport may be there (OpenHttpClient tries it).
  Status Refused(const llm::HttpResponse& r) {
    if (r.status == 400 || r.status == 404 || r.status == 405) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!session_id_.empty() && r.status == 404) {
        why_ = "server " + config_.name + " ended the session";
        return Status::Unavailable(why_);
      }
      if (session_id_.empty()) {
        return Status::NotFound("server " + config_.name + " answered HTTP " + std::to_string(r.status) + ": " +
                                r.body.substr(0, 300));
      }
    }
    if (r.status < 200 || r.status >= 300) {
      return Status::Unavailable("server " + config_.name + " answered HTTP " + std::to_string(r.status) + ": " +
                                 r.body.substr(0, 300));
    }
    return Status::Ok();
  }

  // Waits out the stream's retry (or `fallback_ms`), unless stopped.
  // False: stopped, cancelled or past the deadline.
  bool Pause(long retry_ms, long fallback_ms, const Deadline& deadline, const CancelToken* cancel) {
    long ms = retry_ms >= 0 ? std::min(retry_ms, kMaxRetryMs) : fallback_ms;
    CancelToken wake;
    CancelLink by_stop(&stop_, &wake);
    CancelLink by_cancel(const_cast<CancelToken*>(cancel), &wake);
    double s = std::min(static_cast<double>(ms) / 1000.0, SecondsLeft(deadline));
    if (s > 0) wake.WaitFor(s);
    return !wake.cancelled() && !Expired(deadline);
  }

  // GETs the stream from after `mark` (Last-Event-ID) and reads it into
  // Dispatch until `waiting` (if any) has its answer or it ends.
  Result<llm::HttpResponse> Get(StreamMark* mark, const Deadline& deadline, const CancelToken* cancel,
                                const std::shared_ptr<Pending>& waiting, std::function<void(int)> on_headers = {}) {
    llm::HttpRequest req = Base("GET", deadline);
    req.on_headers = std::move(on_headers);
    req.headers.push_back("Accept: text/event-stream");
    if (!mark->last_id.empty()) req.headers.push_back("Last-Event-ID: " + mark->last_id);
    // A stream may stay quiet for long: the server's pings, or the
    // reconnection, keep it.
    req.low_speed_time_s = 600;
    std::string body;
    bool sse = false, decided = false, too_big = false;
    llm::SseParser parser([this](const llm::SseEvent& e) {
      if (auto msg = ParseJson(e.data); msg.ok()) Dispatch(*msg);
    });
    CancelToken either;
    CancelLink by_stop(&stop_, &either);
    CancelLink by_cancel(const_cast<CancelToken*>(cancel), &either);
    auto r = http_->Send(req, Reader(&body, &parser, &sse, &decided, &too_big, waiting), either.flag());
    if (!parser.last_id().empty()) mark->last_id = parser.last_id();
    if (parser.retry_ms() >= 0) mark->retry_ms = parser.retry_ms();
    return r;
  }

  // The POST's stream ended before our answer: resumed from its last event
  // until the answer comes.
  Status Resume(const std::shared_ptr<Pending>& waiting, StreamMark* mark, const Deadline& deadline,
                const CancelToken* cancel, const std::string& method) {
    if (mark->last_id.empty()) {
      // Nothing to resume from: the answer may come on the GET stream.
      if (listening_.load()) return Status::Ok();
      return Status::Unavailable("server " + config_.name + " ended its stream without an answer to " + method);
    }
    for (int failures = 0; !pending_.Ready(waiting);) {
      if (!Pause(mark->retry_ms, kDefaultRetryMs, deadline, cancel)) {
        if (cancel != nullptr && cancel->cancelled()) return Status::Cancelled("cancelled");
        if (stop_.cancelled()) return Status::Unavailable("the session with server " + config_.name + " ended");
        return Status::Timeout("timed out");
      }
      auto r = Get(mark, deadline, cancel, waiting);
      if (pending_.Ready(waiting)) break;
      if (r.ok() && r->status == 405) {
        return Status::Unavailable("server " + config_.name + " ended its stream before answering " + method +
                                   " and offers no resumption (GET is 405)");
      }
      if (r.ok()) MATES_RETURN_IF_ERROR(Refused(*r));
      if (!r.ok() && ++failures >= 5) {
        return Status::Unavailable("server " + config_.name + ": resuming the answer to " + method + ": " +
                                   r.status().message());
      }
    }
    return Status::Ok();
  }

  // The GET stream: open from the handshake to the session's end,
  // reconnected from its last event.
  void Listen() {
    StreamMark mark;
    double backoff_s = 1;
    while (!stop_.cancelled()) {
      auto r = Get(&mark, std::nullopt, nullptr, nullptr, [this](int status) {
        listening_.store(status >= 200 && status < 300);
        first_get_.Cancel();
      });
      listening_.store(false);
      first_get_.Cancel();
      if (stop_.cancelled()) return;
      if (r.ok() && r->status == 405) return;  // the server sends nothing unasked
      if (r.ok() && r->status == 404 && !alive()) return;
      if (r.ok() && r->status >= 200 && r->status < 300) {
        backoff_s = 1;
        if (!Pause(mark.retry_ms, kDefaultRetryMs, std::nullopt, nullptr)) return;
        continue;
      }
      if (r.ok() && r->status == 404) {
        std::lock_guard<std::mutex> lock(mu_);
        why_ = "server " + config_.name + " ended the session";
        return;
      }
      if (!Pause(static_cast<long>(backoff_s * 1000), 0, std::nullopt, nullptr)) return;
      backoff_s = std::min(backoff_s * 2, kMaxStreamBackoffS);
    }
  }

  const ServerConfig config_;
  std::unique_ptr<llm::HttpTransport> http_;
  // Its OAuth tokens; null for a server with an Authorization header of
  // its own.
  const std::unique_ptr<oauth::Authorizer> auth_;
  std::atomic<int64_t> next_id_{1};
  PendingTable pending_;
  CancelToken stop_;
  CancelToken first_get_;               // the first GET was answered (or failed)
  std::atomic<bool> listening_{false};  // the GET stream is open
  mutable std::mutex mu_;
  std::string session_id_;  // guarded by mu_
  std::string protocol_;    // guarded by mu_
  std::string why_;         // guarded by mu_: "" while alive
  ServerRequests requests_;
  std::thread listener_;
};

// ---- HTTP+SSE (revision 2024-11-05) ----

// The transport before streamable HTTP: a GET opens an event stream whose
// first event, `endpoint`, names where to POST messages (on the same
// origin); every answer and request of the server's comes on the stream.
class LegacySseSession : public Session {
 public:
  LegacySseSession(ServerConfig c, std::shared_ptr<const ClientServices> services)
      : config_(std::move(c)),
        http_(llm::NewCurlTransport()),
        requests_(config_.name, std::move(services), [this](const std::string& frame) {
          auto msg = ParseJson(frame);
          if (msg.ok()) (void)Send(*msg, DeadlineIn(10), &stop_);
        }, [this](bool on) { on ? pending_.Hold() : pending_.Release(); }) {}
  ~LegacySseSession() override {
    stop_.Cancel(CancelToken::kForGood);
    if (reader_.joinable()) reader_.join();
    requests_.Stop();
  }

  // Opens the stream and waits for its endpoint.
  Status Connect(const Deadline& deadline) {
    reader_ = std::thread([this] {
      NameThisThread("mcp-sse:" + config_.name);
      RunGuarded("mcp server " + config_.name + " event stream", [this] { Read(); });
    });
    CancelToken wake;
    CancelLink link(&endpoint_known_, &wake);
    wake.WaitFor(SecondsLeft(deadline));
    std::lock_guard<std::mutex> lock(mu_);
    if (!endpoint_.empty()) return Status::Ok();
    if (!pending_.open()) return Status::Unavailable(pending_.why());
    return Status::Timeout("server " + config_.name + " named no endpoint on its event stream in time");
  }

  Result<Json> Request(const std::string& method, Json params, const Deadline& deadline,
                       const CancelToken* cancel) override {
    const int64_t id = next_id_.fetch_add(1);
    auto p = pending_.Add(id);
    if (Status s = Send(RequestMessage(id, method, std::move(params)), deadline, cancel); !s.ok()) {
      pending_.Answer(id, s);  // forgets it
      return s;
    }
    auto answer = pending_.Wait(id, p, deadline, cancel);
    if (!answer) return GaveUp(*this, id, method, cancel);
    return std::move(*answer);
  }
  Status Notify(const std::string& method, Json params) override {
    return Send(NotificationMessage(method, std::move(params)), DeadlineIn(10), nullptr);
  }
  bool alive() const override { return pending_.open(); }
  std::string why() const override { return pending_.why(); }

 private:
  // Sends `message` to the endpoint; `cancel` (or the session's end) stops
  // the sending.
  Status Send(const Json& message, const Deadline& deadline, const CancelToken* cancel) {
    CancelToken either;
    CancelLink by_stop(&stop_, &either);
    CancelLink by_cancel(const_cast<CancelToken*>(cancel), &either);
    llm::HttpRequest req;
    {
      std::lock_guard<std::mutex> lock(mu_);
      req.url = endpoint_;
    }
    if (req.url.empty()) return Status::IOError("server " + config_.name + " has no endpoint yet");
    req.body = DumpJson(message);
    req.headers = {"Content-Type: application/json"};
    for (const auto& [k, v] : config_.headers) req.headers.push_back(k + ": " + v);
    req.total_timeout_s = std::max(0.001, SecondsLeft(deadline));
    auto r = http_->Send(req, [](std::string_view) { return true; }, either.flag());
    // Nothing was taken: it may go to a new session.
    if (!r.ok()) return Status::IOError("server " + config_.name + ": " + r.status().message());
    if (r->status < 200 || r->status >= 300) {
      return Status::IOError("server " + config_.name + " answered HTTP " + std::to_string(r->status) + ": " +
                             r->body.substr(0, 300));
    }
    return Status::Ok();
  }

  // The endpoint an `endpoint` event names: on the server's own origin.
  Result<std::string> Resolve(const std::string& said) const {
    const size_t scheme = config_.url.find("://");
    const size_t path_at = config_.url.find('/', scheme + 3);
    const std::string origin = config_.url.substr(0, path_at);
    if (!said.empty() && said[0] == '/') return origin + said;
    if (said.rfind(origin + "/", 0) == 0) return said;
    return Status::InvalidArgument("server " + config_.name + " named an endpoint off its origin: " + said.substr(0, 200));
  }

  void Read() {
    llm::HttpRequest req;
    req.method = "GET";
    req.url = config_.url;
    req.headers = {"Accept: text/event-stream"};
    for (const auto& [k, v] : config_.headers) req.headers.push_back(k + ": " + v);
    req.low_speed_time_s = 600;  // the server's pings, if any, keep it
    std::string why = "server " + config_.name + " closed its event stream";
    llm::SseParser parser([&](const llm::SseEvent& e) {
      if (e.event == "endpoint") {
        auto url = Resolve(e.data);
        if (!url.ok()) {
          why = url.status().message();
          stop_.Cancel();  // nothing can be sent to it
          return;
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          endpoint_ = *url;
        }
        endpoint_known_.Cancel();
        return;
      }
      auto msg = ParseJson(e.data);
      if (!msg.ok()) return;
      (void)Route(*msg, pending_, requests_, notified_);
    });
    auto r = http_->Send(req, [&](std::string_view bytes) {
      parser.Feed(bytes);
      return !stop_.cancelled();
    }, stop_.flag());
    if (!r.ok() && !stop_.cancelled()) why = "server " + config_.name + ": " + r.status().message();
    if (r.ok() && (r->status < 200 || r->status >= 300)) {
      why = "server " + config_.name + " answered its event stream's GET with HTTP " + std::to_string(r->status);
    }
    if (stop_.cancelled() && why.find("closed") != std::string::npos) why = "the session with server " + config_.name + " ended";
    pending_.CloseAll(why);
    endpoint_known_.Cancel();
  }

  const ServerConfig config_;
  std::unique_ptr<llm::HttpTransport> http_;
  std::atomic<int64_t> next_id_{1};
  PendingTable pending_;
  CancelToken stop_;
  CancelToken endpoint_known_;
  mutable std::mutex mu_;
  std::string endpoint_;  // guarded by mu_
  ServerRequests requests_;
  std::thread reader_;
};

}  // namespace

Result<std::unique_ptr<Session>> StartHttpSession(const ServerConfig& c, std::shared_ptr<const ClientServices> services) {
  if (c.transport == ServerConfig::Transport::kSse) {
    auto s = std::make_unique<LegacySseSession>(c, std::move(services));
    MATES_RETURN_IF_ERROR(s->Connect(DeadlineIn(c.startup_timeout_s)));
    return std::unique_ptr<Session>(std::move(s));
  }
  return std::unique_ptr<Session>(std::make_unique<HttpSession>(c, std::move(services)));
}

Result<std::unique_ptr<Client>> OpenHttpClient(const ServerConfig& c, std::shared_ptr<const ClientServices> services) {
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, StartHttpSession(c, services));
  auto client = Client::Open(c, std::move(session), *services);
  if (client.ok() || c.transport != ServerConfig::Transport::kHttp || client.status().code() != StatusCode::kNotFound) {
    return client;
  }
  // The backwards-compatible way the specification gives: a 4xx to the
  // initialize POST, then a GET for the older transport's event stream.
  ServerConfig old = c;
  old.transport = ServerConfig::Transport::kSse;
  auto legacy = StartHttpSession(old, services);
  if (!legacy.ok()) {
    return Status::Unavailable(client.status().message() + "; nor does it speak HTTP+SSE: " + legacy.status().message());
  }
  LogInfo("mcp server " + c.name + " speaks the older HTTP+SSE transport (\"type\": \"sse\" says so)");
  return Client::Open(old, std::move(*legacy), *services);
}

}  // namespace mates::mcp
