#include "llm/mock_server.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/clock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/limits.h"
#include "core/ids.h"
#include "llm/http_bounds.h"
#include "llm/http_server.h"
#include "llm/mock_api.h"
#include "llm/prompt_cache.h"
#include "llm/scripted.h"
#include "llm/validation.h"

namespace mates::llm {

Result<FaultSpec> ParseFaultSpec(std::string_view spec) {
  FaultSpec f;
  f.text = std::string(spec);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("bad --fault '" + f.text + "': " + why +
                                   " (status=CODE[:first=N|:every=N][:retry_after=S], "
                                   "cut_stream_after=N, error_event_after=N, stall_after=N)");
  };
  auto number = [](std::string_view s, double* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size() && *out >= 0;
  };
  size_t pos = 0;
  bool head = true;
  while (pos <= spec.size()) {
    size_t colon = spec.find(':', pos);
    std::string_view part = spec.substr(pos, colon == std::string_view::npos ? spec.npos : colon - pos);
    pos = colon == std::string_view::npos ? spec.size() + 1 : colon + 1;
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) return bad("expected key=value, got '" + std::string(part) + "'");
    std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    double v = 0;
    if (!number(value, &v)) return bad("'" + std::string(value) + "' is not a number >= 0");
    if (head) {
      head = false;
      if (key == "status") {
        f.kind = FaultSpec::Kind::kStatus;
        f.code = static_cast<int>(v);
        if (f.code < 100 || f.code > 599) return bad("status must be an HTTP status code");
      } else if (key == "stall_after") {
        f.kind = FaultSpec::Kind::kStall;
        f.after = static_cast<int>(v);
      } else if (key == "cut_stream_after") {
        f.kind = FaultSpec::Kind::kCutStream;
        f.after = static_cast<int>(v);
      } else if (key == "error_event_after") {
        f.kind = FaultSpec::Kind::kErrorEvent;
        f.after = static_cast<int>(v);
      } else {
        return bad("unknown fault '" + std::string(key) + "'");
      }
      continue;
    }
    if (key == "first") {
      f.first = static_cast<int>(v);
    } else if (key == "every") {
      f.every = static_cast<int>(v);
      if (f.every < 1) return bad("every must be >= 1");
    } else if (key == "retry_after" && f.kind == FaultSpec::Kind::kStatus) {
      f.retry_after = v;
    } else {
      return bad("unknown option '" + std::string(key) + "'");
    }
  }
  if (f.first > 0 && f.every > 0) return bad("give first or every, not both");
  if (f.first == 0 && f.every == 0) f.first = 1;
  return f;
}

namespace {

bool Applies(const FaultSpec& f, int request_number) {
  if (f.every > 0) return request_number % f.every == 0;
  return request_number <= f.first;
}

int64_t Tokens(const Json& j) { return EstimateTokens(DumpJson(j)); }

// The errors of no one API (a method, a body too large, a crash) are in
// Anthropic's shape, as before the other APIs were served.
using mock::AnthropicError;

}  // namespace

class MockServer::Impl {
 public:
  Impl(std::shared_ptr<Scenario> scenario, MockServerOptions options)
      : scenario_(std::move(scenario)), options_(std::move(options)) {}

  Status Start() {
    // Responses go out in several writes; without TCP_NODELAY each waits for
    // the client's delayed ACK (~25 ms a request on loopback).
    server_.set_tcp_nodelay(true);
    // SO_REUSEADDR only: the library's default, SO_REUSEPORT, would let a
    // second server bind a port in use and share its connections.
    server_.set_socket_options([](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    // Bodies beyond the bound are refused (413) before they are read whole.
    server_.set_payload_max_length(kMaxHttpBodyBytes);
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res,
                                     std::exception_ptr) {
      res.status = 500;
      res.set_content(AnthropicError("api_error", "internal error in mates mock-llm"),
                      "application/json");
    });
    Routes();
    if (!options_.record_path.empty()) {
      record_.reset(::open(options_.record_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
      if (!record_.valid()) return Status::FromErrno("open " + options_.record_path, errno);
    }
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", options_.port) ? options_.port : -1;
    }
    if (port_ <= 0) {
      return Status::Unavailable("cannot listen on 127.0.0.1:" + std::to_string(options_.port) +
                                 " (in use?)");
    }
    thread_ = server_.ServeInThread("mates-mock-llm", "mock-llm");
    return Status::Ok();
  }

  // The APIs served: Anthropic's, OpenAI's chat and responses, Gemini's,
  // a 404 for any other POST, and /health.
  void Routes() {
    // Bodies read by the routes themselves, bounded whatever their framing
    // (llm/http_bounds.h); other methods refused before the library reads
    // their bodies.
    const auto too_large = [](const httplib::Request&, httplib::Response& res) {
      res.set_content(AnthropicError("request_too_large", "the request body is over " +
                                                              std::to_string(kMaxHttpBodyBytes >> 20) + " MiB"),
                      "application/json");
    };
    const auto post = [&](const std::string& pattern, BodyHandler handler) {
      PostBounded(server_, pattern, kMaxHttpBodyBytes, std::move(handler), too_large);
    };
    server_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!RefusedMethod(req)) return httplib::Server::HandlerResponse::Unhandled;
      res.status = 405;
      res.set_content(AnthropicError("invalid_request_error", req.method + " is not served here"), "application/json");
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    });
    post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
      Handle(*anthropic_, req, res, {});
    });
    post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      Handle(*chat_, req, res, {});
    });
    post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
      Handle(*responses_, req, res, {});
    });
    post("/v1/messages/count_tokens", [](const httplib::Request& req, httplib::Response& res) {
      auto j = ParseJson(req.body);
      res.set_content(DumpJson(Json{{"input_tokens", j.ok() ? Tokens(*j) : 0}}), "application/json");
    });
    // Gemini names the model and the method in the path.
    post(R"(/v1(?:beta)?/models/([A-Za-z0-9._-]{1,128}):(generateContent|streamGenerateContent|countTokens))",
         [this](const httplib::Request& req, httplib::Response& res) {
           const std::string method = req.matches[2].str();
           if (method == "countTokens") {
             auto j = ParseJson(req.body);
             res.set_content(DumpJson(Json{{"totalTokens", j.ok() ? Tokens(*j) : 0}}), "application/json");
             return;
           }
           GeminiRoute route{req.matches[1].str(), method == "streamGenerateContent",
                             req.has_param("alt") && req.get_param_value("alt") == "sse"};
           Handle(*gemini_, req, res, route);
         });
    post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      Log("POST " + req.path + " -> 404 (no such endpoint)");
      res.status = 404;
      res.set_content(AnthropicError("not_found_error", "no such endpoint"), "application/json");
    });
    server_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(stall_mu_);
      stopping_ = true;
    }
    stall_cv_.notify_all();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  int requests() const { return served_.load(); }

 private:
  // Gemini's route: the model and the method are in the path.
  struct GeminiRoute {
    std::string model;
    bool stream = false;
    bool sse = false;
  };

  // Keeps a stream open with pings only, until the client goes away or the
  // server stops.
  bool Stall(httplib::DataSink& sink, const std::string& ping) {
    std::unique_lock<std::mutex> lock(stall_mu_);
    while (!stopping_) {
      lock.unlock();
      if (!sink.write(ping.data(), ping.size())) return false;
      lock.lock();
      stall_cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_; });
    }
    return false;
  }

  void Log(const std::string& line) {
    if (!options_.log_requests) return;
    std::lock_guard<std::mutex> lock(log_mu_);
    std::cerr << "[" << ClockTime(WallSeconds()) << "] " << line << std::endl;
  }

  // `usage`: what the response reports (OpenAI's input_tokens count the
  // cached ones too, as its prompt_tokens do).
  void Record(const std::string& endpoint, const std::string& agent, const Json& body,
              bool stream, int status, const std::string& fault, const Usage* usage = nullptr) {
    if (!record_.valid()) return;
    Json line = {{"time", IsoTime(WallSeconds())}, {"endpoint", endpoint}, {"agent", agent},
                 {"stream", stream}, {"status", status}};
    if (!fault.empty()) line["fault"] = fault;
    if (usage != nullptr) line["usage"] = UsageToJson(*usage);
    line["body"] = body;  // the body only: never the headers (API keys)
    std::lock_guard<std::mutex> lock(log_mu_);
    (void)WriteAll(record_.get(), DumpJson(line) + "\n", options_.record_path.c_str());
  }

  bool ModelServed(const std::string& model) const {
    if (options_.models.empty()) return true;
    for (const auto& glob : options_.models) {
      if (GlobMatch(glob, model)) return true;
    }
    return false;
  }

  void Handle(const MockApi& api, const httplib::Request& req, httplib::Response& res, const GeminiRoute& route) {
    const auto start = std::chrono::steady_clock::now();  // delay_ms counts from here
    const int n = ++served_;
    const std::string& endpoint = req.path;
    auto error = [&](int status, const std::string& type, const std::string& message) {
      res.status = status;
      res.set_content(api.Error(status, type, message), "application/json");
    };
    auto parsed = ParseJson(req.body);
    MockCall call;
    call.body = parsed.ok() ? *parsed : Json::object();
    call.agent_id = api.AgentId(call.body);
    if (call.agent_id.empty()) call.agent_id = req.get_header_value("x-mates-agent");
    if (call.agent_id.size() > 256) call.agent_id.clear();
    call.model = route.model.empty() ? StringOr(call.body, "model", "mock") : route.model;
    call.stream = route.model.empty() ? mock::Flag(call.body, "stream") : route.stream;
    call.sse = route.model.empty() || route.sse;
    const std::string agent = AgentName(call.agent_id);
    // Faults first: they stand for trouble on the server, whatever the request.
    const FaultSpec* stream_fault = nullptr;
    for (const auto& f : options_.faults) {
      if (!Applies(f, n)) continue;
      if (f.kind == FaultSpec::Kind::kStatus) {
        if (f.retry_after >= 0) res.set_header("retry-after", std::to_string(static_cast<int>(f.retry_after)));
        error(f.code, mock::ErrorTypeFor(f.code), "injected fault " + f.text);
        Log("POST " + endpoint + " agent=" + agent + " -> " + std::to_string(f.code) + " (fault " + f.text + ")");
        Record(endpoint, agent, call.body, call.stream, f.code, f.text);
        return;
      }
      if (call.stream && stream_fault == nullptr) stream_fault = &f;
    }
    if (!parsed.ok()) {
      error(400, "invalid_request_error", "The request body is not valid JSON: " + parsed.status().message());
      Log("POST " + endpoint + " -> 400 (" + parsed.status().message() + ")");
      Record(endpoint, agent, Json(req.body), call.stream, 400, "");
      return;
    }
    if (Status valid = api.Validate(call); !valid.ok()) {
      error(400, "invalid_request_error", valid.message());
      Log("POST " + endpoint + " agent=" + agent + " -> 400 " + valid.message());
      Record(endpoint, agent, call.body, call.stream, 400, "");
      return;
    }
    if (!ModelServed(call.model)) {
      res.status = 404;
      res.set_content(api.UnknownModel(call.model), "application/json");
      Log("POST " + endpoint + " agent=" + agent + " -> 404 unknown model " + call.model);
      Record(endpoint, agent, call.body, call.stream, 404, "");
      return;
    }
    // A reply that a fault will cut short is not the rule's one use: the
    // client's retry gets it (a `once` rule stays unspent). Nor is a side
    // call's (a title, a routing decision), nor a reply with calls to a
    // request that offers no tools: a model calls only what it is offered,
    // so that request gets the reply's text, and the rule is there still
    // for the client's turn with its tools.
    const std::string user_text = api.UserText(call.body);
    ScenarioReply reply = scenario_->Reply(agent, user_text, /*consume=*/false, TeamOfAgent(call.agent_id));
    const Json& tools = mock::Field(call.body, "tools");
    const bool offers_tools = tools.is_array() && !tools.empty();
    const bool calls = std::any_of(reply.content.begin(), reply.content.end(),
                                   [](const ContentBlock& b) { return b.type == BlockType::kToolUse; });
    if (calls && !offers_tools) {
      std::erase_if(reply.content, [](const ContentBlock& b) { return b.type == BlockType::kToolUse; });
      if (reply.content.empty()) reply.content.push_back(ContentBlock::Text(""));
      reply.stop_reason = "end_turn";
    } else if (stream_fault == nullptr && !api.SideCall(call)) {
      reply = scenario_->Reply(agent, user_text, /*consume=*/true, TeamOfAgent(call.agent_id));
    }
    mock::NameCallsAsOffered(api.OfferedTools(call.body), &reply);
    if (reply.delay_ms > 0) SleepUntilOnTime(start + std::chrono::milliseconds(reply.delay_ms));
    // Prompt caching as the API accounts it (DESIGN §15).
    Usage usage = api.Accounted(cache_, call);
    usage.output_tokens = mock::OutputTokens(reply);
    Log("POST " + endpoint + " agent=" + (agent.empty() ? "-" : agent) + " rule=" +
        (reply.rule < 0 ? std::string("default") : std::to_string(reply.rule)) + " -> 200 " +
        reply.stop_reason + (call.stream ? " (stream)" : "") +
        (stream_fault != nullptr ? " fault " + stream_fault->text : ""));
    Record(endpoint, agent, call.body, call.stream, 200, stream_fault != nullptr ? stream_fault->text : "", &usage);
    if (!call.stream) {
      res.set_content(api.Whole(reply, call, usage), "application/json");
      return;
    }
    auto events = std::make_shared<std::vector<std::string>>(api.Events(reply, call, usage, options_.text_chunk));
    const FaultSpec fault = stream_fault != nullptr ? *stream_fault : FaultSpec{};
    const bool faulted = stream_fault != nullptr;
    const std::string ping = api.Ping(call);
    const std::string error_event = api.ErrorEvent(call, "Overloaded (injected fault)");
    res.set_header("cache-control", "no-cache");
    res.set_chunked_content_provider(
        api.ContentType(call), [this, events, fault, faulted, ping, error_event](size_t, httplib::DataSink& sink) {
          for (size_t i = 0; i < events->size(); ++i) {
            if (faulted && static_cast<int>(i) == fault.after) {
              if (fault.kind == FaultSpec::Kind::kCutStream) return false;  // connection dropped
              if (fault.kind == FaultSpec::Kind::kStall) return Stall(sink, ping);
              sink.write(error_event.data(), error_event.size());
              sink.done();
              return true;
            }
            const std::string& e = (*events)[i];
            if (!sink.write(e.data(), e.size())) return false;
          }
          sink.done();
          return true;
        });
  }

  std::shared_ptr<Scenario> scenario_;
  MockServerOptions options_;
  const std::unique_ptr<MockApi> anthropic_ = AnthropicMockApi();
  const std::unique_ptr<MockApi> chat_ = ChatMockApi();
  const std::unique_ptr<MockApi> responses_ = ResponsesMockApi();
  const std::unique_ptr<MockApi> gemini_ = GeminiMockApi();
  PromptCache cache_{[] { return WallSeconds(); }};
  // Many agents wait on delay_ms at once: more workers than the default.
  // Heads come through the front door (llm/http_server.h).
  HttpServer server_{FrontDoorLimits{.workers = 64}};
  std::thread thread_;
  int port_ = -1;
  std::atomic<int> served_{0};
  std::mutex log_mu_;  // stderr lines and the record file
  std::mutex stall_mu_;
  std::condition_variable stall_cv_;  // ends stalled streams at Stop()
  bool stopping_ = false;             // guarded by stall_mu_
  ScopedFd record_;
};

MockServer::MockServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MockServer::~MockServer() { Stop(); }

Result<std::unique_ptr<MockServer>> MockServer::Start(std::shared_ptr<Scenario> scenario,
                                                      MockServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(scenario), std::move(options));
  MATES_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<MockServer>(new MockServer(std::move(impl)));
}

int MockServer::port() const { return impl_->port(); }
std::string MockServer::url() const { return "http://127.0.0.1:" + std::to_string(port()); }
void MockServer::Stop() {
  if (impl_) impl_->Stop();
}
int MockServer::requests() const { return impl_->requests(); }

}  // namespace mates::llm
