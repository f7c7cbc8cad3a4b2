#include "mcp/client.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/guarded.h"
#include "core/log.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "core/trace_context.h"
#include "mcp/client_parts.h"

namespace mates::mcp {
namespace {

using namespace internal;  // NOLINT: the shared parts of the sessions

// ---- stdio ----

class StdioSession : public Session {
 public:
  StdioSession(std::string name, Subprocess proc, std::shared_ptr<const ClientServices> services)
      : name_(std::move(name)),
        proc_(std::move(proc)),
        requests_(
            name_, std::move(services), [this](const std::string& frame) { (void)Write(frame, DeadlineIn(5)); },
            [this](bool on) { on ? pending_.Hold() : pending_.Release(); }) {
    reader_ = std::thread([this] {
      NameThisThread("mcp:" + name_);
      RunGuarded("mcp server " + name_ + " reader", [this] { Read(); });
    });
  }
  ~StdioSession() override {
    stop_.Cancel(CancelToken::kForGood);
    reader_.join();
    requests_.Stop();  // its answers are written through proc_
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
    bool stopped = false;  // by us: its exit status says nothing
    for (;;) {
      auto line = proc_.ReadLine(std::nullopt, kMaxServerFrameBytes, &stop_);
      if (!line.ok()) {
        if (line.status().code() == StatusCode::kInvalidArgument) {
          LogWarning("mcp server " + name_ + ": skipped " + line.status().message());
          continue;
        }
        stopped = line.status().code() == StatusCode::kCancelled;
        why = stopped ? "server " + name_ + " was stopped" : "server " + name_ + " exited";
        break;
      }
      if (line->empty()) continue;
      // Answers may be larger than what a server takes (kMaxFrameBytes).
      auto msg = ParseJson(*line);
      if (!msg.ok()) {
        LogDebug("mcp server " + name_ + " wrote a line that is not JSON: " + line->substr(0, 200));
        continue;
      }
      if (Route(*msg, pending_, requests_, notified_) == Incoming::Kind::kInvalid) {
        LogDebug("mcp server " + name_ + " wrote a line that is not JSON-RPC: " + line->substr(0, 200));
      }
    }
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      closed_ = true;  // no writer touches stdin any more: Wait() closes it
    }
    SubprocessResult r = proc_.Wait();
    if (r.term_signal != 0) {
      why += " (killed by signal " + std::to_string(r.term_signal) + ")";
    } else if (r.exit_code >= 0 && !stopped) {
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
  ServerRequests requests_;
  std::thread reader_;
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
  // The span it was started in (DESIGN §29).
  AddTraceEnvironment(&out);
  return out;
}

}  // namespace

Result<std::unique_ptr<Session>> StartStdioSession(const ServerConfig& c, const fs::path& cwd,
                                                   const fs::path& stderr_log, const std::string& tag,
                                                   const sandbox::Sandbox& sandbox,
                                                   std::shared_ptr<const ClientServices> services) {
  SubprocessOptions o;
  o.argv = c.argv;
  o.env = ServerEnvironment(c.env);
  o.cwd = cwd.string();
  o.interactive = true;
  o.stderr_path = stderr_log.string();
  o.tag = tag;
  o.timeout_s = 2;  // once its stdin is closed, the grace before it is killed
  // Shared by the host's agents: its work root is the workspace.
  // What its command names under /tmp is seen inside: the command is the
  // person's (or a trusted workspace's) configuration, not a model's.
  auto confined = sandbox.Wrap({cwd, "", "mcp-" + c.name, false, sandbox::ProgramFolders(c.argv)}, std::move(o));
  if (!confined.ok()) return confined.status().WithContext("starting server " + c.name + " in its sandbox");
  auto p = Subprocess::Start(confined->options);
  if (!p.ok()) return p.status().WithContext("starting server " + c.name);
  return std::unique_ptr<Session>(std::make_unique<StdioSession>(c.name, std::move(*p), std::move(services)));
}

Result<std::unique_ptr<Client>> Client::Open(const ServerConfig& c, std::unique_ptr<Session> session,
                                             const ClientServices& services) {
  std::unique_ptr<Client> client(new Client(c, std::move(session)));
  client->session_->OnNotification(
      [self = client.get()](const std::string& method, const Json& params) { self->Notified(method, params); });
  Deadline deadline = DeadlineIn(c.startup_timeout_s);
  Json init = {{"protocolVersion", kClientRevisions.front()},
               {"capabilities", ClientCapabilities(services)},
               {"clientInfo", {{"name", "mates"}, {"version", MATES_VERSION}}}};
  auto r = client->session_->Request("initialize", init, deadline, nullptr);
  if (!r.ok()) return r.status().WithContext("server " + c.name + ": initialize");
  std::string version = r->is_object() && r->contains("protocolVersion") && (*r)["protocolVersion"].is_string()
                            ? (*r)["protocolVersion"].get<std::string>()
                            : "";
  const auto& spoken = kClientRevisions;
  if (std::find(spoken.begin(), spoken.end(), version) == spoken.end()) {
    return Status::FailedPrecondition("server " + c.name + " speaks MCP revision '" + version +
                                      "', which mates does not know (it speaks " + kClientRevisions.back() + " to " +
                                      kClientRevisions.front() + ")");
  }
  client->protocol_ = version;
  client->session_->SetProtocolVersion(version);
  if ((*r).contains("serverInfo") && (*r)["serverInfo"].is_object()) {
    auto n = JsonString((*r)["serverInfo"], "name", false);
    if (n.ok()) client->server_name_ = *n;
  }
  MATES_RETURN_IF_ERROR(client->session_->Notify("notifications/initialized", nullptr));
  client->session_->Opened();
  // A change told while we list is in the list.
  client->tools_changed_ = false;
  MATES_ASSIGN_OR_RETURN(client->tools_, client->ListTools(deadline));
  return client;
}

Result<std::vector<RemoteTool>> Client::ListTools(Deadline deadline) {
  std::vector<RemoteTool> out;
  Json cursor = nullptr;
  for (int page = 0; page < 100; ++page) {
    Json params = cursor.is_null() ? Json(nullptr) : Json{{"cursor", cursor}};
    auto list = session_->Request("tools/list", params, deadline, nullptr);
    if (!list.ok()) return list.status().WithContext("server " + config_.name + ": tools/list");
    if (!list->is_object() || !list->contains("tools") || !(*list)["tools"].is_array()) {
      return Status::FailedPrecondition("server " + config_.name + ": tools/list answered without a tools array");
    }
    for (const auto& t : (*list)["tools"]) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) continue;
      RemoteTool tool;
      tool.name = t["name"];
      auto d = JsonString(t, "description", false);
      tool.description = d.ok() ? *d : "";
      tool.input_schema = t.contains("inputSchema") && t["inputSchema"].is_object() ? t["inputSchema"]
                                                                                     : Json{{"type", "object"}};
      out.push_back(std::move(tool));
    }
    if (!list->contains("nextCursor") || !(*list)["nextCursor"].is_string()) break;
    cursor = (*list)["nextCursor"];
  }
  return out;
}

Result<ToolOutcome> Client::Call(const std::string& tool, const Json& arguments, double timeout_s,
                                 const CancelToken* cancel, std::function<void(const std::string&)> progress) {
  Json params = {{"name", tool}, {"arguments", arguments}};
  int64_t token = 0;
  if (progress) {
    std::lock_guard<std::mutex> lock(progress_mu_);
    token = next_progress_++;
    progress_[token] = std::move(progress);
    params["_meta"] = {{"progressToken", token}};
  }
  // The tool call's span, as MCP carries trace context (DESIGN §29).
  if (const TraceContext& t = CurrentTrace(); t.valid()) {
    params["_meta"]["traceparent"] = t.Traceparent();
    if (!t.state.empty()) params["_meta"]["tracestate"] = t.state;
  }
  auto r = session_->Request("tools/call", std::move(params), DeadlineIn(timeout_s), cancel);
  if (token != 0) {
    std::lock_guard<std::mutex> lock(progress_mu_);
    progress_.erase(token);
  }
  if (!r.ok()) return r.status();
  ToolOutcome out;
  out.text = ContentText(*r);
  out.is_error = r->is_object() && r->contains("isError") && (*r)["isError"].is_boolean() && (*r)["isError"].get<bool>();
  return out;
}

// notifications/progress {progressToken, progress, total?, message?} for a
// call of ours, as a person reads it.
void Client::Notified(const std::string& method, const Json& params) {
  if (method == "notifications/tools/list_changed") {
    tools_changed_ = true;
    return;
  }
  if (method != "notifications/progress" || !params.contains("progressToken") ||
      !params["progressToken"].is_number_integer()) {
    return;
  }
  auto number = [&](const char* key) -> std::string {
    if (!params.contains(key) || !params[key].is_number()) return "";
    Json n = params[key];
    const double d = n.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 1e15) n = static_cast<int64_t>(d);
    return n.dump();
  };
  std::string note = number("progress");
  if (note.empty()) return;
  if (std::string total = number("total"); !total.empty()) note += "/" + total;
  if (params.contains("message") && params["message"].is_string()) note += ": " + params["message"].get<std::string>();
  // Told under the lock: once its call has returned (and taken its token
  // out), nobody is told any more.
  std::lock_guard<std::mutex> lock(progress_mu_);
  auto it = progress_.find(params["progressToken"].get<int64_t>());
  if (it != progress_.end()) it->second(CutUtf8(note, 200));
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
