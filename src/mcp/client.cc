#include "mcp/client.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/guarded.h"
#include "core/log.h"
#include "core/subprocess.h"
#include "llm/http.h"
#include "llm/sse.h"

namespace mates::mcp {
namespace {

// What a request waits on: its answer, or the session's end. `wake` is
// cancelled to wake the waiter (the caller's token is linked to it too).
struct Pending {
  std::optional<Result<Json>> answer;
  CancelToken wake;
};

Status ServerError(const Json& error) {
  std::string message = error.is_object() && error.contains("message") && error["message"].is_string()
                            ? error["message"].get<std::string>()
                            : DumpJson(error);
  int code = error.is_object() && error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
  return Status::FailedPrecondition("the server answered with error " + std::to_string(code) + ": " + message);
}

double SecondsLeft(const Deadline& d) {
  if (!d) return 1e9;
  return std::max(0.0, std::chrono::duration<double>(*d - SteadyClock::now()).count());
}

// The requests in flight of one session, by id: what both transports share.
class PendingTable {
 public:
  // Registers request `id` and links `cancel` to its wake-up.
  std::shared_ptr<Pending> Add(int64_t id) {
    auto p = std::make_shared<Pending>();
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) p->answer = Status::Unavailable(why_);
    table_[id] = p;
    return p;
  }
  void Answer(int64_t id, Result<Json> answer) {
    std::shared_ptr<Pending> p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = table_.find(id);
      if (it == table_.end()) return;  // given up on, or not ours
      p = it->second;
      table_.erase(it);
      p->answer = std::move(answer);
    }
    p->wake.Cancel();
  }
  // Every waiter gets `why` as its answer; later requests too.
  void CloseAll(const std::string& why) {
    std::map<int64_t, std::shared_ptr<Pending>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = false;
      why_ = why;
      all.swap(table_);
      for (auto& [id, p] : all) p->answer = Status::Unavailable(why);
    }
    for (auto& [id, p] : all) p->wake.Cancel();
  }
  // Waits for the answer to `id`; nullopt if the deadline or the cancel
  // came first (the request is then forgotten).
  std::optional<Result<Json>> Wait(int64_t id, const std::shared_ptr<Pending>& p, const Deadline& deadline,
                                   const CancelToken* cancel) {
    CancelLink link(const_cast<CancelToken*>(cancel), &p->wake);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (p->answer) return std::move(*p->answer);
        if ((cancel != nullptr && cancel->cancelled()) || Expired(deadline)) {
          table_.erase(id);
          return std::nullopt;
        }
      }
      p->wake.WaitFor(SecondsLeft(deadline));
    }
  }
  bool open() const {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }
  std::string why() const {
    std::lock_guard<std::mutex> lock(mu_);
    return why_;
  }

 private:
  mutable std::mutex mu_;
  std::map<int64_t, std::shared_ptr<Pending>> table_;  // guarded by mu_
  bool open_ = true;                                   // guarded by mu_
  std::string why_;                                    // guarded by mu_
};

// The timeout or the cancel of request `id`, said to the server too.
Status GaveUp(Session& s, int64_t id, const std::string& method, const CancelToken* cancel) {
  const bool cancelled = cancel != nullptr && cancel->cancelled();
  std::string reason = cancelled ? "cancelled" : "timed out";
  (void)s.Notify("notifications/cancelled", Json{{"requestId", id}, {"reason", reason}});
  return cancelled ? Status::Cancelled(method + " cancelled") : Status::Timeout(method + " timed out");
}

Json RequestMessage(int64_t id, const std::string& method, Json params) {
  Json m = Json::object();
  m["jsonrpc"] = "2.0";
  m["id"] = id;
  m["method"] = method;
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

Json NotificationMessage(const std::string& method, Json params) {
  Json m = Json::object();
  m["jsonrpc"] = "2.0";
  m["method"] = method;
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

// An answer to a request the server sent us: ping is answered, the rest
// (sampling, roots, elicitation) is not offered.
std::string AnswerServerRequest(const Incoming& in) {
  if (in.method == "ping") return ResultFrame(in.id, Json::object());
  return ErrorFrame(in.id, kMethodNotFound, "mates does not offer " + in.method);
}

// ---- stdio ----

class StdioSession : public Session {
 public:
  StdioSession(std::string name, Subprocess proc) : name_(std::move(name)), proc_(std::move(proc)) {
    reader_ = std::thread([this] {
      NameThisThread("mcp:" + name_);
      RunGuarded("mcp server " + name_ + " reader", [this] { Read(); });
    });
  }
  ~StdioSession() override {
    stop_.Cancel(CancelToken::kForGood);
    reader_.join();
  }

  Result<Json> Request(const std::string& method, Json params, const Deadline& deadline,
                       const CancelToken* cancel) override {
    const int64_t id = next_id_.fetch_add(1);
    auto p = pending_.Add(id);
    if (Status w = Write(DumpJson(RequestMessage(id, method, std::move(params))), deadline); !w.ok()) {
      pending_.Answer(id, w);  // forgets it
      return w;
    }
    auto answer = pending_.Wait(id, p, deadline, cancel);
    if (!answer) return GaveUp(*this, id, method, cancel);
    return std::move(*answer);
  }
  Status Notify(const std::string& method, Json params) override {
    return Write(DumpJson(NotificationMessage(method, std::move(params))), DeadlineIn(5));
  }
  bool alive() const override { return pending_.open(); }
  std::string why() const override { return pending_.why(); }

 private:
  Status Write(const std::string& frame, const Deadline& deadline) {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (closed_) return Status::IOError(pending_.why());
    // Dead already, though what it left behind may hold its input open: it
    // cannot read this, so it is not sent (the hub sends it to a new one).
    if (proc_.Exited()) return Status::IOError("server " + name_ + " has exited");
    Status s = proc_.WriteStdin(frame + "\n", deadline);
    if (s.code() == StatusCode::kUnavailable) return Status::IOError("server " + name_ + ": " + s.message());
    if (!s.ok()) return Status(s.code(), "server " + name_ + ": " + s.message());
    return s;
  }

  void Read() {
    std::string why;
    for (;;) {
      auto line = proc_.ReadLine(std::nullopt, kMaxServerFrameBytes, &stop_);
      if (!line.ok()) {
        if (line.status().code() == StatusCode::kInvalidArgument) {
          LogWarning("mcp server " + name_ + ": skipped " + line.status().message());
          continue;
        }
        why = line.status().code() == StatusCode::kCancelled ? "server " + name_ + " was stopped"
                                                              : "server " + name_ + " exited";
        break;
      }
      if (line->empty()) continue;
      // Answers may be larger than what a server takes (kMaxFrameBytes).
      auto msg = ParseJson(*line);
      if (!msg.ok()) {
        LogDebug("mcp server " + name_ + " wrote a line that is not JSON: " + line->substr(0, 200));
        continue;
      }
      Incoming in = Classify(*msg);
      switch (in.kind) {
        case Incoming::Kind::kResponse: {
          if (!in.id.is_number_integer()) break;
          if (msg->contains("error")) {
            pending_.Answer(in.id.get<int64_t>(), ServerError((*msg)["error"]));
          } else {
            pending_.Answer(in.id.get<int64_t>(), (*msg)["result"]);
          }
          break;
        }
        case Incoming::Kind::kRequest:
          (void)Write(AnswerServerRequest(in), DeadlineIn(5));
          break;
        case Incoming::Kind::kNotification:
          break;  // logging, progress, list changes: nothing mates acts on
        case Incoming::Kind::kInvalid:
          LogDebug("mcp server " + name_ + " wrote a line that is not JSON-RPC: " + line->substr(0, 200));
          break;
      }
    }
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      closed_ = true;  // no writer touches stdin any more: Wait() closes it
    }
    SubprocessResult r = proc_.Wait();
    if (r.term_signal != 0) {
      why += " (killed by signal " + std::to_string(r.term_signal) + ")";
    } else if (r.exit_code >= 0 && why.find("stopped") == std::string::npos) {
      why += " (status " + std::to_string(r.exit_code) + ")";
    }
    pending_.CloseAll(why);
  }

  const std::string name_;
  Subprocess proc_;
  CancelToken stop_;
  std::atomic<int64_t> next_id_{1};
  PendingTable pending_;
  std::mutex write_mu_;
  bool closed_ = false;  // guarded by write_mu_
  std::thread reader_;
};

// ---- streamable HTTP ----

class HttpSession : public Session {
 public:
  explicit HttpSession(ServerConfig c) : config_(std::move(c)), http_(llm::NewCurlTransport()) {}
  ~HttpSession() override {
    // Sessions end with the client (a DELETE is optional: the server may
    // refuse it; nothing depends on it).
  }

  Result<Json> Request(const std::string& method, Json params, const Deadline& deadline,
                       const CancelToken* cancel) override {
    const int64_t id = next_id_.fetch_add(1);
    std::optional<Result<Json>> answer;
    Status posted = Post(RequestMessage(id, method, std::move(params)), id, deadline, cancel, &answer);
    if (!posted.ok()) {
      if (posted.code() == StatusCode::kCancelled || posted.code() == StatusCode::kTimeout) {
        return GaveUp(*this, id, method, cancel);
      }
      return posted;
    }
    if (!answer) return Status::Unavailable("server " + config_.name + " sent no answer to " + method);
    return std::move(*answer);
  }
  Status Notify(const std::string& method, Json params) override {
    return Post(NotificationMessage(method, std::move(params)), -1, DeadlineIn(10), nullptr, nullptr);
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

 private:
  // POSTs one message; for a request (`id` >= 0) the answer with its id,
  // whether it comes as one JSON body or within an event stream.
  Status Post(const Json& message, int64_t id, const Deadline& deadline, const CancelToken* cancel,
              std::optional<Result<Json>>* answer) {
    llm::HttpRequest req;
    req.url = config_.url;
    req.body = DumpJson(message);
    req.headers = {"Content-Type: application/json", "Accept: application/json, text/event-stream"};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!session_id_.empty()) req.headers.push_back("Mcp-Session-Id: " + session_id_);
      if (!protocol_.empty()) req.headers.push_back("MCP-Protocol-Version: " + protocol_);
    }
    for (const auto& [k, v] : config_.headers) req.headers.push_back(k + ": " + v);
    req.total_timeout_s = std::max(0.001, SecondsLeft(deadline));
    std::string body;  // a JSON answer, collected
    bool sse = false, decided = false, too_big = false;
    auto take = [&](const Json& msg) {
      Incoming in = Classify(msg);
      if (in.kind == Incoming::Kind::kResponse && answer != nullptr && in.id.is_number_integer() &&
          in.id.get<int64_t>() == id) {
        *answer = msg.contains("error") ? Result<Json>(ServerError(msg["error"])) : Result<Json>(msg["result"]);
      }
    };
    llm::SseParser parser([&](const llm::SseEvent& e) {
      auto msg = ParseJson(e.data);
      if (msg.ok()) take(*msg);
    });
    auto on_data = [&](std::string_view bytes) {
      if (!decided) {
        size_t first = bytes.find_first_not_of(" \t\r\n");
        if (first == std::string_view::npos) return true;
        sse = bytes[first] != '{' && bytes[first] != '[';
        decided = true;
      }
      if (sse) {
        parser.Feed(bytes);
        return !(answer != nullptr && answer->has_value());  // the answer is in: done with this stream
      }
      if (body.size() + bytes.size() > kMaxServerFrameBytes) {
        too_big = true;
        return false;
      }
      body.append(bytes);
      return true;
    };
    auto r = http_->Post(req, on_data, cancel != nullptr ? cancel->flag() : nullptr);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kCancelled) return Status::Cancelled("cancelled");
      if (Expired(deadline)) return Status::Timeout("timed out");
      return Status::Unavailable("server " + config_.name + ": " + r.status().message());
    }
    if (auto sid = r->headers.find("mcp-session-id"); sid != r->headers.end()) {
      std::lock_guard<std::mutex> lock(mu_);
      session_id_ = sid->second;
    }
    if (r->status == 404 && !session_id_.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      why_ = "server " + config_.name + " ended the session";
      return Status::Unavailable(why_);
    }
    if (r->status < 200 || r->status >= 300) {
      return Status::Unavailable("server " + config_.name + " answered HTTP " + std::to_string(r->status) + ": " +
                                 r->body.substr(0, 300));
    }
    if (too_big) return Status::InvalidArgument("server " + config_.name + " sent an answer over 16 MiB");
    if (!sse && !body.empty() && answer != nullptr) {
      auto msg = ParseJson(body);
      if (!msg.ok()) return Status::Unavailable("server " + config_.name + " sent a body that is not JSON");
      if (msg->is_array()) {
        for (const auto& m : *msg) take(m);
      } else {
        take(*msg);
      }
    }
    return Status::Ok();
  }

  const ServerConfig config_;
  std::unique_ptr<llm::HttpTransport> http_;
  std::atomic<int64_t> next_id_{1};
  mutable std::mutex mu_;
  std::string session_id_;  // guarded by mu_
  std::string protocol_;    // guarded by mu_
  std::string why_;         // guarded by mu_: "" while alive
};

// A minimal environment: what any program needs, no keys (DESIGN §10).
std::vector<std::string> ServerEnvironment(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (const char* k : {"HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PATH"}) {
    const char* v = std::getenv(k);
    if (v != nullptr) env[k] = v;
  }
  if (env.count("PATH") == 0) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

Result<std::unique_ptr<Session>> StartStdioSession(const ServerConfig& c, const fs::path& cwd,
                                                   const fs::path& stderr_log, const std::string& tag,
                                                   const sandbox::Sandbox& sandbox) {
  SubprocessOptions o;
  o.argv = c.argv;
  o.env = ServerEnvironment(c.env);
  o.cwd = cwd.string();
  o.interactive = true;
  o.stderr_path = stderr_log.string();
  o.tag = tag;
  o.timeout_s = 2;  // once its stdin is closed, the grace before it is killed
  // Shared by the host's agents: its work root is the workspace.
  auto confined = sandbox.Wrap({cwd, "", "mcp-" + c.name}, std::move(o));
  if (!confined.ok()) return confined.status().WithContext("starting server " + c.name + " in its sandbox");
  auto p = Subprocess::Start(confined->options);
  if (!p.ok()) return p.status().WithContext("starting server " + c.name);
  return std::unique_ptr<Session>(std::make_unique<StdioSession>(c.name, std::move(*p)));
}

Result<std::unique_ptr<Session>> StartHttpSession(const ServerConfig& c) {
  return std::unique_ptr<Session>(std::make_unique<HttpSession>(c));
}

Result<std::unique_ptr<Client>> Client::Open(const ServerConfig& c, std::unique_ptr<Session> session) {
  std::unique_ptr<Client> client(new Client(c, std::move(session)));
  Deadline deadline = DeadlineIn(c.startup_timeout_s);
  Json init = {{"protocolVersion", kProtocolVersions.front()},
               {"capabilities", Json::object()},
               {"clientInfo", {{"name", "mates"}, {"version", "0.1.0"}}}};
  auto r = client->session_->Request("initialize", init, deadline, nullptr);
  if (!r.ok()) return r.status().WithContext("server " + c.name + ": initialize");
  std::string version = r->is_object() && r->contains("protocolVersion") && (*r)["protocolVersion"].is_string()
                            ? (*r)["protocolVersion"].get<std::string>()
                            : "";
  const auto& spoken = kProtocolVersions;
  if (std::find(spoken.begin(), spoken.end(), version) == spoken.end()) {
    return Status::FailedPrecondition("server " + c.name + " speaks MCP revision '" + version +
                                      "', mates speaks 2025-06-18 or newer");
  }
  client->protocol_ = version;
  client->session_->SetProtocolVersion(version);
  if ((*r).contains("serverInfo") && (*r)["serverInfo"].is_object()) {
    auto n = JsonString((*r)["serverInfo"], "name", false);
    if (n.ok()) client->server_name_ = *n;
  }
  MATES_RETURN_IF_ERROR(client->session_->Notify("notifications/initialized", nullptr));
  Json cursor = nullptr;
  for (int page = 0; page < 100; ++page) {
    Json params = cursor.is_null() ? Json(nullptr) : Json{{"cursor", cursor}};
    auto list = client->session_->Request("tools/list", params, deadline, nullptr);
    if (!list.ok()) return list.status().WithContext("server " + c.name + ": tools/list");
    if (!list->is_object() || !list->contains("tools") || !(*list)["tools"].is_array()) {
      return Status::FailedPrecondition("server " + c.name + ": tools/list answered without a tools array");
    }
    for (const auto& t : (*list)["tools"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
      RemoteTool tool;
      tool.name = t["name"];
      auto d = JsonString(t, "description", false);
      tool.description = d.ok() ? *d : "";
      tool.input_schema = t.contains("inputSchema") && t["inputSchema"].is_object() ? t["inputSchema"]
                                                                                     : Json{{"type", "object"}};
      client->tools_.push_back(std::move(tool));
    }
    if (!list->contains("nextCursor") || !(*list)["nextCursor"].is_string()) break;
    cursor = (*list)["nextCursor"];
  }
  return client;
}

Result<ToolOutcome> Client::Call(const std::string& tool, const Json& arguments, double timeout_s,
                                 const CancelToken* cancel) {
  auto r = session_->Request("tools/call", Json{{"name", tool}, {"arguments", arguments}}, DeadlineIn(timeout_s),
                             cancel);
  if (!r.ok()) return r.status();
  ToolOutcome out;
  out.text = ContentText(*r);
  out.is_error = r->is_object() && r->contains("isError") && (*r)["isError"].is_boolean() && (*r)["isError"].get<bool>();
  return out;
}

std::string ContentText(const Json& result) {
  std::string out;
  auto add = [&](const std::string& piece) { out += (out.empty() ? "" : "\n") + piece; };
  if (result.is_object() && result.contains("content") && result["content"].is_array()) {
    for (const auto& block : result["content"]) {
      if (!block.is_object()) continue;
      std::string type = block.contains("type") && block["type"].is_string() ? block["type"].get<std::string>() : "?";
      if (type == "text" && block.contains("text") && block["text"].is_string()) {
        add(block["text"].get<std::string>());
      } else if (type == "resource" && block.contains("resource") && block["resource"].is_object() &&
                 block["resource"].contains("text") && block["resource"]["text"].is_string()) {
        add(block["resource"]["text"].get<std::string>());
      } else if (type == "resource_link" && block.contains("uri") && block["uri"].is_string()) {
        add("[resource link: " + block["uri"].get<std::string>() + "]");
      } else {
        size_t bytes = block.contains("data") && block["data"].is_string() ? block["data"].get_ref<const std::string&>().size() : 0;
        add("[" + type + (bytes > 0 ? ", " + std::to_string(bytes) + " bytes of base64" : "") + "]");
      }
    }
  }
  if (out.empty() && result.is_object() && result.contains("structuredContent")) {
    out = DumpJson(result["structuredContent"]);
  }
  return out;
}

}  // namespace mates::mcp
