#include "llm/mock_server.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

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

std::string ErrorTypeFor(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return "api_error";
  }
}

std::string AnthropicError(const std::string& type, const std::string& message) {
  return DumpJson(Json{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}});
}

std::string OpenAIError(const std::string& type, const std::string& message) {
  return DumpJson(Json{{"error", {{"message", message}, {"type", type}, {"param", nullptr},
                                  {"code", nullptr}}}});
}

// Pieces of at most `n` bytes that never split a UTF-8 sequence.
std::vector<std::string> SplitUtf8(const std::string& s, size_t n) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t end = std::min(s.size(), i + std::max<size_t>(n, 1));
    while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
    out.push_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

// obj[key], or null when obj is not an object or has no such member (a
// const operator[] on a missing key is undefined behaviour).
const Json& Field(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

bool Flag(const Json& obj, const char* key) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

// The newest user turn's text from a raw Anthropic body (tolerant of block
// types mates does not model, as real clients send them).
std::string AnthropicUserText(const Json& body) {
  const Json& msgs = Field(body, "messages");
  for (auto it = msgs.rbegin(); it != msgs.rend(); ++it) {
    if (StringOr(*it, "role") != "user") continue;
    const Json& c = Field(*it, "content");
    if (c.is_string()) return c.get<std::string>();
    std::string out;
    for (const auto& b : c) {
      std::string type = StringOr(b, "type");
      std::string piece;
      if (type == "text") {
        piece = StringOr(b, "text");
      } else if (type == "tool_result") {
        const Json& rc = Field(b, "content");
        if (rc.is_string()) {
          piece = rc.get<std::string>();
        } else if (rc.is_array()) {
          for (const auto& p : rc) {
            if (StringOr(p, "type") == "text") piece += (piece.empty() ? "" : "\n") + StringOr(p, "text");
          }
        }
      } else {
        continue;
      }
      if (!out.empty()) out += "\n";
      out += piece;
    }
    return out;
  }
  return "";
}

// The newest user turn of an OpenAI body: everything after the last
// assistant message (tool results and user text).
std::string OpenAIUserText(const Json& body) {
  const Json& msgs = Field(body, "messages");
  std::vector<std::string> parts;
  for (auto it = msgs.rbegin(); it != msgs.rend(); ++it) {
    std::string role = StringOr(*it, "role");
    if (role == "assistant") break;
    if (role != "user" && role != "tool") continue;
    const Json& c = Field(*it, "content");
    std::string piece;
    if (c.is_string()) {
      piece = c.get<std::string>();
    } else if (c.is_array()) {
      for (const auto& p : c) {
        if (StringOr(p, "type") == "text") piece += (piece.empty() ? "" : "\n") + StringOr(p, "text");
      }
    }
    parts.push_back(piece);
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += "\n";
    out += *it;
  }
  return out;
}

int64_t Tokens(const Json& j) { return EstimateTokens(DumpJson(j)); }

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
      Handle(req, res, /*openai=*/false);
    });
    post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      Handle(req, res, /*openai=*/true);
    });
    post("/v1/messages/count_tokens", [](const httplib::Request& req, httplib::Response& res) {
      auto j = ParseJson(req.body);
      res.set_content(DumpJson(Json{{"input_tokens", j.ok() ? Tokens(*j) : 0}}), "application/json");
    });
    post(".*", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content(AnthropicError("not_found_error", "no such endpoint"), "application/json");
    });
    server_.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
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
    thread_ = std::thread([this] {
      NameThisThread("mates-mock-llm");
      RunGuarded("mock-llm", [this] { server_.listen_after_bind(); });
    });
    // cpp-httplib 0.11's stop() does nothing until the listen loop runs, so
    // a Stop() right after Start() would leave it running forever: return
    // only once it runs (a few microseconds; the library offers no signal).
    while (!server_.is_running()) std::this_thread::yield();
    return Status::Ok();
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
  // Keeps a stream open with pings only, until the client goes away or the
  // server stops.
  bool Stall(httplib::DataSink& sink, bool openai) {
    const std::string ping = openai ? ": ping\n\n" : "event: ping\ndata: {\"type\": \"ping\"}\n\n";
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

  void Handle(const httplib::Request& req, httplib::Response& res, bool openai) {
    const auto start = std::chrono::steady_clock::now();  // delay_ms counts from here
    const int n = ++served_;
    const std::string endpoint = openai ? "/v1/chat/completions" : "/v1/messages";
    auto error = [&](int status, const std::string& type, const std::string& message) {
      res.status = status;
      res.set_content(openai ? OpenAIError(type, message) : AnthropicError(type, message),
                      "application/json");
    };
    auto parsed = ParseJson(req.body);
    Json body = parsed.ok() ? *parsed : Json::object();
    const std::string agent_id =
        openai ? StringOr(body, "user") : StringOr(Field(body, "metadata"), "user_id");
    const std::string agent = AgentName(agent_id);
    bool stream = Flag(body, "stream");
    // Faults first: they stand for trouble on the server, whatever the request.
    const FaultSpec* stream_fault = nullptr;
    for (const auto& f : options_.faults) {
      if (!Applies(f, n)) continue;
      if (f.kind == FaultSpec::Kind::kStatus) {
        if (f.retry_after >= 0) res.set_header("retry-after", std::to_string(static_cast<int>(f.retry_after)));
        error(f.code, ErrorTypeFor(f.code), "injected fault " + f.text);
        Log("POST " + endpoint + " agent=" + agent + " -> " + std::to_string(f.code) + " (fault " + f.text + ")");
        Record(endpoint, agent, body, stream, f.code, f.text);
        return;
      }
      if (stream && stream_fault == nullptr) stream_fault = &f;
    }
    if (!parsed.ok()) {
      error(400, "invalid_request_error", "The request body is not valid JSON: " + parsed.status().message());
      Log("POST " + endpoint + " -> 400 (" + parsed.status().message() + ")");
      Record(endpoint, agent, Json(req.body), stream, 400, "");
      return;
    }
    Status valid = openai ? ValidateOpenAIRequest(body)
                          : ValidateAnthropicRequest(body, /*strict_alternation=*/false);
    if (!valid.ok()) {
      error(400, "invalid_request_error", valid.message());
      Log("POST " + endpoint + " agent=" + agent + " -> 400 " + valid.message());
      Record(endpoint, agent, body, stream, 400, "");
      return;
    }
    std::string user_text = openai ? OpenAIUserText(body) : AnthropicUserText(body);
    // A reply that a fault will cut short is not the rule's one use: the
    // client's retry gets it (a `once` rule stays unspent).
    ScenarioReply reply =
        scenario_->Reply(agent, user_text, /*consume=*/stream_fault == nullptr, TeamOfAgent(agent_id));
    if (reply.delay_ms > 0) SleepUntilOnTime(start + std::chrono::milliseconds(reply.delay_ms));
    std::string model = StringOr(body, "model", "mock");
    // Prompt caching as the API accounts it (DESIGN §15).
    Usage usage = openai ? cache_.OpenAI(agent, body) : cache_.Anthropic(agent, body);
    int64_t out_tokens = 0;
    for (const auto& b : reply.content) {
      out_tokens += EstimateTokens(b.type == BlockType::kText ? b.text : b.input_json);
    }
    Log("POST " + endpoint + " agent=" + (agent.empty() ? "-" : agent) + " rule=" +
        (reply.rule < 0 ? std::string("default") : std::to_string(reply.rule)) + " -> 200 " +
        reply.stop_reason + (stream ? " (stream)" : "") +
        (stream_fault != nullptr ? " fault " + stream_fault->text : ""));
    usage.output_tokens = out_tokens;
    Record(endpoint, agent, body, stream, 200, stream_fault != nullptr ? stream_fault->text : "", &usage);
    bool include_usage = openai && Flag(Field(body, "stream_options"), "include_usage");
    if (!stream) {
      res.set_content(openai ? OpenAIJson(reply, model, usage) : AnthropicJson(reply, model, usage),
                      "application/json");
      return;
    }
    auto events = std::make_shared<std::vector<std::string>>(
        openai ? OpenAIEvents(reply, model, usage, include_usage) : AnthropicEvents(reply, model, usage));
    FaultSpec fault = stream_fault != nullptr ? *stream_fault : FaultSpec{};
    bool faulted = stream_fault != nullptr;
    res.set_header("cache-control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, events, fault, faulted, openai](size_t, httplib::DataSink& sink) {
          for (size_t i = 0; i < events->size(); ++i) {
            if (faulted && static_cast<int>(i) == fault.after) {
              if (fault.kind == FaultSpec::Kind::kCutStream) return false;  // connection dropped
              if (fault.kind == FaultSpec::Kind::kStall) return Stall(sink, openai);
              std::string err =
                  openai ? "data: " + OpenAIError("overloaded_error", "Overloaded (injected fault)") + "\n\n"
                         : "event: error\ndata: " + AnthropicError("overloaded_error", "Overloaded (injected fault)") + "\n\n";
              sink.write(err.data(), err.size());
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

  std::string AnthropicJson(const ScenarioReply& reply, const std::string& model, const Usage& usage) {
    Response r;
    r.id = NewId("msg");
    r.model = model;
    r.content = reply.content;
    r.stop_reason = reply.stop_reason;
    r.usage = usage;
    return DumpJson(ResponseToJson(r));
  }

  std::vector<std::string> AnthropicEvents(const ScenarioReply& reply, const std::string& model,
                                           const Usage& usage) {
    std::vector<std::string> ev;
    auto add = [&](const char* name, const Json& data) {
      ev.push_back(std::string("event: ") + name + "\ndata: " + DumpJson(data) + "\n\n");
    };
    add("message_start",
        {{"type", "message_start"},
         {"message",
          {{"id", NewId("msg")}, {"type", "message"}, {"role", "assistant"}, {"model", model},
           {"content", Json::array()}, {"stop_reason", nullptr}, {"stop_sequence", nullptr},
           {"usage", {{"input_tokens", usage.input_tokens},
                      {"cache_creation_input_tokens", usage.cache_creation_input_tokens},
                      {"cache_read_input_tokens", usage.cache_read_input_tokens}, {"output_tokens", 1}}}}}});
    add("ping", {{"type", "ping"}});
    for (size_t i = 0; i < reply.content.size(); ++i) {
      const ContentBlock& b = reply.content[i];
      if (b.type == BlockType::kText) {
        add("content_block_start", {{"type", "content_block_start"}, {"index", i},
                                    {"content_block", {{"type", "text"}, {"text", ""}}}});
        for (const auto& piece : SplitUtf8(b.text, options_.text_chunk)) {
          add("content_block_delta", {{"type", "content_block_delta"}, {"index", i},
                                      {"delta", {{"type", "text_delta"}, {"text", piece}}}});
        }
      } else {
        add("content_block_start",
            {{"type", "content_block_start"}, {"index", i},
             {"content_block", {{"type", "tool_use"}, {"id", b.id}, {"name", b.name},
                                {"input", Json::object()}}}});
        for (const auto& piece : SplitUtf8(b.input_json, 16)) {
          add("content_block_delta", {{"type", "content_block_delta"}, {"index", i},
                                      {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}});
        }
      }
      add("content_block_stop", {{"type", "content_block_stop"}, {"index", i}});
    }
    add("message_delta", {{"type", "message_delta"},
                          {"delta", {{"stop_reason", reply.stop_reason}, {"stop_sequence", nullptr}}},
                          {"usage", {{"output_tokens", usage.output_tokens}}}});
    add("message_stop", {{"type", "message_stop"}});
    return ev;
  }

  static std::string FinishReason(const std::string& stop_reason) {
    if (stop_reason == "tool_use") return "tool_calls";
    if (stop_reason == "max_tokens") return "length";
    if (stop_reason == "refusal") return "content_filter";
    return "stop";
  }

  // OpenAI's usage: prompt_tokens counts the cached ones too.
  static Json OpenAIUsage(const Usage& u) {
    return {{"prompt_tokens", u.input_tokens},
            {"completion_tokens", u.output_tokens},
            {"total_tokens", u.input_tokens + u.output_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cache_read_input_tokens}}}};
  }

  std::string OpenAIJson(const ScenarioReply& reply, const std::string& model, const Usage& usage) {
    Json msg = {{"role", "assistant"}};
    std::string text;
    Json calls = Json::array();
    for (const auto& b : reply.content) {
      if (b.type == BlockType::kText) {
        text += b.text;
      } else {
        calls.push_back({{"id", b.id}, {"type", "function"},
                         {"function", {{"name", b.name}, {"arguments", b.input_json}}}});
      }
    }
    msg["content"] = text.empty() ? Json(nullptr) : Json(text);
    if (!calls.empty()) msg["tool_calls"] = calls;
    return DumpJson(Json{{"id", NewId("chatcmpl")}, {"object", "chat.completion"},
                         {"created", static_cast<int64_t>(WallSeconds())}, {"model", model},
                         {"choices", Json::array({{{"index", 0}, {"message", msg},
                                                   {"finish_reason", FinishReason(reply.stop_reason)}}})},
                         {"usage", OpenAIUsage(usage)}});
  }

  std::vector<std::string> OpenAIEvents(const ScenarioReply& reply, const std::string& model,
                                        const Usage& usage, bool include_usage) {
    std::vector<std::string> ev;
    std::string id = NewId("chatcmpl");
    int64_t created = static_cast<int64_t>(WallSeconds());
    auto chunk = [&](const Json& delta, const Json& finish) {
      Json c = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
                {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
      ev.push_back("data: " + DumpJson(c) + "\n\n");
    };
    chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
    int call_index = 0;
    for (const auto& b : reply.content) {
      if (b.type == BlockType::kText) {
        for (const auto& piece : SplitUtf8(b.text, options_.text_chunk)) chunk({{"content", piece}}, nullptr);
        continue;
      }
      chunk({{"tool_calls", Json::array({{{"index", call_index}, {"id", b.id}, {"type", "function"},
                                          {"function", {{"name", b.name}, {"arguments", ""}}}}})}},
            nullptr);
      for (const auto& piece : SplitUtf8(b.input_json, 16)) {
        chunk({{"tool_calls", Json::array({{{"index", call_index}, {"function", {{"arguments", piece}}}}})}},
              nullptr);
      }
      ++call_index;
    }
    chunk(Json::object(), FinishReason(reply.stop_reason));
    if (include_usage) {
      Json u = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model},
                {"choices", Json::array()},
                {"usage", OpenAIUsage(usage)}};
      ev.push_back("data: " + DumpJson(u) + "\n\n");
    }
    ev.push_back("data: [DONE]\n\n");
    return ev;
  }

  std::shared_ptr<Scenario> scenario_;
  MockServerOptions options_;
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
