// See http_serve.h.
#include "mcp/http_serve.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/guarded.h"
#include "llm/http_bounds.h"
#include "llm/http_server.h"
#include "llm/loopback_guard.h"
#include "mcp/jsonrpc.h"

namespace mates::mcp {
namespace {

constexpr char kPath[] = "/mcp";
// A GET stream's keep-alive comment, and the reconnection time it asks for.
constexpr auto kKeepAlive = std::chrono::seconds(15);
constexpr int kStreamRetryMs = 3000;

// The revisions a client may name in MCP-Protocol-Version.
bool KnownRevision(const std::string& v) {
  return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), v) != kProtocolVersions.end() ||
         v == "2025-03-26";
}

void SendRpcError(httplib::Response& res, int status, int code, const std::string& message) {
  res.status = status;
  res.set_content(ErrorFrame(nullptr, code, message), "application/json");
}

}  // namespace

// One client's session: its protocol object and the answers it wrote, by
// request id, until the POST that asked takes them.
struct ServedSession {
  std::string id;
  std::unique_ptr<Server> server;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> answers;  // guarded by mu: by the request id, dumped
  std::set<std::string> unanswered;            // guarded by mu: cancelled calls
  std::set<std::string> asking;                // guarded by mu: request ids whose POST waits
  bool closed = false;                         // guarded by mu
  int in_flight = 0;                           // guarded by mu: POSTs waiting, GET streams open
  SteadyClock::time_point used = SteadyClock::now();  // guarded by mu

  void Unanswered(const Json& id) {
    {
      std::lock_guard<std::mutex> lock(mu);
      unanswered.insert(DumpJson(id));
    }
    cv.notify_all();
  }
  void Take(const std::string& frame) {
    auto msg = ParseJson(frame);
    if (!msg.ok() || !msg->is_object() || !msg->contains("id")) return;
    {
      std::lock_guard<std::mutex> lock(mu);
      answers[DumpJson((*msg)["id"])] = frame;
    }
    cv.notify_all();
  }
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (closed) return;
      closed = true;
    }
    cv.notify_all();
    server->Shutdown();
  }
};

class HttpServe::Impl {
 public:
  explicit Impl(HttpServeOptions o) : options_(std::move(o)) {}

  Status Start() {
    server_.set_tcp_nodelay(true);
    server_.set_socket_options([](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.set_keep_alive_timeout(5);
    server_.set_read_timeout(10);
    server_.set_write_timeout(10);
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      SendRpcError(res, 500, kInternalError, "internal error in mates mcp");
    });
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return Admit(req, res) ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
    });
    llm::PostBounded(
        server_, kPath, kMaxFrameBytes, [this](const httplib::Request& req, httplib::Response& res) { Post(req, res); },
        [](const httplib::Request&, httplib::Response& res) {
          SendRpcError(res, 413, kInvalidRequest, "a message over " + std::to_string(kMaxFrameBytes >> 20) + " MiB");
        });
    server_.Get(kPath, [this](const httplib::Request& req, httplib::Response& res) { Get(req, res); });
    server_.Delete(kPath, [this](const httplib::Request& req, httplib::Response& res) { Delete(req, res); });
    port_ = options_.port == 0 ? server_.bind_to_any_port("127.0.0.1")
                               : (server_.bind_to_port("127.0.0.1", options_.port) ? options_.port : -1);
    if (port_ <= 0) {
      return Status::Unavailable("mates mcp cannot listen on 127.0.0.1:" + std::to_string(options_.port) + " (in use?)");
    }
    guard_.set_port(port_);
    thread_ = server_.ServeInThread("mates-mcp-http", "mcp http server");
    return Status::Ok();
  }

  void Stop() {
    std::map<std::string, std::shared_ptr<ServedSession>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      all.swap(sessions_);
    }
    for (auto& [id, s] : all) s->Close();  // wakes what waits on them
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + kPath + "?token=" + guard_.token();
  }
  size_t sessions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.size();
  }

 private:
  bool Admit(const httplib::Request& req, httplib::Response& res) const {
    // A DELETE's body is never read: one that has a body is refused before
    // the library would read it unbounded (llm/http_bounds.h).
    const bool bodiless_delete = req.method == "DELETE" && !req.has_header("Transfer-Encoding") &&
                                 (!req.has_header("Content-Length") || req.get_header_value("Content-Length") == "0");
    if (llm::RefusedMethod(req) && !bodiless_delete) {
      SendRpcError(res, 405, kInvalidRequest, req.method + " is not served here");
      res.set_header("Connection", "close");
      return false;
    }
    // Every request, whatever it does: a page of another site must reach
    // nothing here (DNS rebinding).
    if (auto refused = guard_.Check(req, /*check_origin=*/true)) {
      if (refused->status == 401) res.set_header("WWW-Authenticate", "Bearer");
      SendRpcError(res, refused->status, -32001, refused->message);
      return false;
    }
    if (req.has_header("MCP-Protocol-Version") && !KnownRevision(req.get_header_value("MCP-Protocol-Version"))) {
      SendRpcError(res, 400, kInvalidRequest,
                   "MCP-Protocol-Version " + req.get_header_value("MCP-Protocol-Version").substr(0, 40) +
                       " is not spoken here");
      return false;
    }
    return true;
  }

  // The session a request names, or nothing with the answer sent.
  std::shared_ptr<ServedSession> Named(const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.get_header_value("Mcp-Session-Id");
    if (id.empty()) {
      SendRpcError(res, 400, kInvalidRequest, "Mcp-Session-Id is missing: initialize first");
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) {
      SendRpcError(res, 404, kInvalidRequest, "no such session (it ended): initialize again");
      return nullptr;
    }
    return it->second;
  }

  // A new session, ending the one idle longest if there are too many.
  std::shared_ptr<ServedSession> NewSession() {
    auto s = std::make_shared<ServedSession>();
    s->id = llm::NewSecretToken();
    ServedSession* raw = s.get();
    s->server = options_.make_session([raw](const std::string& frame) { raw->Take(frame); },
                                      [raw](const Json& id) { raw->Unanswered(id); });
    std::shared_ptr<ServedSession> ended;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return nullptr;
      if (sessions_.size() >= options_.max_sessions) {
        auto idle = sessions_.end();
        for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
          std::lock_guard<std::mutex> l(it->second->mu);
          if (it->second->in_flight > 0) continue;
          if (idle == sessions_.end() || it->second->used < idle->second->used) idle = it;
        }
        if (idle == sessions_.end()) return nullptr;
        ended = idle->second;
        sessions_.erase(idle);
      }
      sessions_[s->id] = s;
    }
    if (ended) ended->Close();
    return s;
  }

  void Post(const httplib::Request& req, httplib::Response& res) {
    auto msg = ParseJson(req.body);
    if (!msg.ok()) return SendRpcError(res, 400, kParseError, "not JSON: " + msg.status().message());
    if (!msg->is_object()) return SendRpcError(res, 400, kInvalidRequest, "one JSON-RPC message per request");
    Incoming in = Classify(*msg);
    std::shared_ptr<ServedSession> s;
    if (in.kind == Incoming::Kind::kRequest && in.method == "initialize") {
      if (req.has_header("Mcp-Session-Id")) {
        return SendRpcError(res, 400, kInvalidRequest, "initialize makes a session: send it without Mcp-Session-Id");
      }
      s = NewSession();
      if (!s) return SendRpcError(res, 503, kInternalError, "too many sessions are busy");
      res.set_header("Mcp-Session-Id", s->id);
    } else {
      s = Named(req, res);
      if (!s) return;
    }
    const std::string key = DumpJson(in.id);
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->used = SteadyClock::now();
      if (in.kind == Incoming::Kind::kRequest) {
        // Two waiting for one id could not both have its answer.
        if (!s->asking.insert(key).second) {
          return SendRpcError(res, 400, kInvalidRequest, "request id " + key.substr(0, 100) + " is already in use");
        }
        ++s->in_flight;
      }
    }
    s->server->HandleFrame(req.body);
    if (in.kind != Incoming::Kind::kRequest) {
      if (in.kind == Incoming::Kind::kInvalid) return SendRpcError(res, 400, in.error_code, in.error);
      res.status = 202;
      return;
    }
    // Its answer, written by the server now or later (a call that waits).
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return s->answers.count(key) > 0 || s->unanswered.count(key) > 0 || s->closed; });
    --s->in_flight;
    s->asking.erase(key);
    s->used = SteadyClock::now();
    auto it = s->answers.find(key);
    if (it == s->answers.end()) {
      s->unanswered.erase(key);
      res.status = s->closed ? 404 : 202;  // ended meanwhile, or cancelled: no response
      return;
    }
    res.status = 200;
    res.set_content(it->second, "application/json");
    s->answers.erase(it);
  }

  void Get(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Accept").find("text/event-stream") == std::string::npos) {
      return SendRpcError(res, 406, kInvalidRequest, "the stream is text/event-stream (say so in Accept)");
    }
    std::shared_ptr<ServedSession> s = Named(req, res);
    if (!s) return;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      ++s->in_flight;
    }
    auto first = std::make_shared<bool>(true);
    const int64_t event = next_event_.fetch_add(1);
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider(
        "text/event-stream",
        [s, first, event](size_t, httplib::DataSink& sink) {
          if (*first) {
            *first = false;
            // Where a client resumes from, and after how long.
            const std::string prime = "id: " + std::to_string(event) + "\nretry: " + std::to_string(kStreamRetryMs) +
                                      "\ndata: \n\n";
            return sink.write(prime.data(), prime.size());
          }
          // mates' server sends nothing unasked: a comment now and then,
          // looking every second whether the client or the session went.
          const auto keep_alive_at = SteadyClock::now() + kKeepAlive;
          while (SteadyClock::now() < keep_alive_at) {
            std::unique_lock<std::mutex> lock(s->mu);
            if (s->cv.wait_for(lock, std::chrono::seconds(1), [&] { return s->closed; })) return false;
            lock.unlock();
            if (!sink.is_writable()) return false;
          }
          static const char kComment[] = ": keep-alive\n\n";
          return sink.write(kComment, sizeof kComment - 1);
        },
        [s](bool) {
          std::lock_guard<std::mutex> lock(s->mu);
          --s->in_flight;
          s->used = SteadyClock::now();
        });
  }

  void Delete(const httplib::Request& req, httplib::Response& res) {
    std::shared_ptr<ServedSession> s = Named(req, res);
    if (!s) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_.erase(s->id);
    }
    s->Close();
    res.status = 200;
  }

  const HttpServeOptions options_;
  llm::LoopbackGuard guard_;
  int port_ = -1;
  std::atomic<int64_t> next_event_{1};
  // POSTs waiting for an answer and GET streams hold workers; heads come
  // through the front door (llm/http_server.h).
  llm::HttpServer server_{llm::FrontDoorLimits{.workers = 48}};
  std::thread thread_;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<ServedSession>> sessions_;  // guarded by mu_
  bool stopped_ = false;                                       // guarded by mu_
};

HttpServe::HttpServe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServe::~HttpServe() { Stop(); }

Result<std::unique_ptr<HttpServe>> HttpServe::Start(HttpServeOptions options) {
  if (!options.make_session) return Status::InvalidArgument("HttpServe needs make_session");
  auto impl = std::make_unique<Impl>(std::move(options));
  MATES_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<HttpServe>(new HttpServe(std::move(impl)));
}

void HttpServe::Stop() {
  if (impl_) impl_->Stop();
}
int HttpServe::port() const { return impl_->port(); }
std::string HttpServe::url() const { return impl_->url(); }
size_t HttpServe::sessions() const { return impl_->sessions(); }

}  // namespace mates::mcp
