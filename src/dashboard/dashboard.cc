// The dashboard's server (see dashboard.h): cpp-httplib for HTTP, the
// process's Watcher for changes, one thread of its own that turns file
// events into a sequence number per kind, and the event streams that wait
// on those numbers.
#include "dashboard/dashboard.h"

#include <sys/socket.h>
#include <sys/random.h>

#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <httplib.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/journal.h"
#include "core/clock.h"
#include "core/guarded.h"
#include "core/json.h"
#include "core/log.h"
#include "core/names.h"
#include "dashboard/source.h"
#include "view/team_view.h"
#include "dashboard_assets.h"
#include "llm/types.h"
#include "stores/open_store.h"
#include "store/messenger.h"
#include "store/merges.h"

namespace mates::dashboard {
namespace {

constexpr size_t kMaxBodyBytes = 256 << 10;          // a message or a task from the page
constexpr size_t kMaxStreams = 8;                    // open event streams
constexpr size_t kLogPageBytes = 8 << 20;            // per response: a 1 MiB message escaped fits
constexpr size_t kInitialMessages = 500;             // /api/messages without `after`
constexpr size_t kMaxJournalBytes = 64 << 20;        // a transcript's journal
constexpr size_t kTranscriptMessages = 300;          // the last ones shown
constexpr size_t kMaxBlockText = 16 << 10;           // each text or tool output, cut
constexpr double kKeepAliveSeconds = 15;             // a comment on an idle stream

void Cut(std::string& s, size_t max) {
  if (s.size() <= max) return;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  s = s.substr(0, end) + "\n… (" + std::to_string(s.size() - end) + " more bytes)";
}

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kConflict:
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

void SendJson(httplib::Response& res, const Json& j, int status = 200) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(DumpJson(j), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, Json{{"error", message}}, status);
}

void SendStatus(httplib::Response& res, const Status& s) { SendError(res, HttpStatusOf(s), s.message()); }

}  // namespace

std::string NewSecretToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // no kernel randomness: nothing safe to hand out
    got += static_cast<size_t>(n);
  }
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

class Dashboard::Impl {
 public:
  explicit Impl(DashboardOptions o) : options_(std::move(o)), token_(NewSecretToken()) {
    for (auto& w : kind_wakers_) w = std::make_shared<Waker>();
  }

  Status Start() {
    MATES_ASSIGN_OR_RETURN(std::unique_ptr<TeamStore> store, OpenTeamStore(options_.store_url, options_.ws));
    source_ = std::make_unique<Source>(std::move(store), options_.team);
    // A page opens a stream and a few fetches at once; a stream holds its
    // worker for as long as the page is open.
    server_.new_task_queue = [] { return new httplib::ThreadPool(kMaxStreams + 8); };
    server_.set_tcp_nodelay(true);
    // SO_REUSEADDR only: the library's default, SO_REUSEPORT, would let a
    // second server bind a port in use and share its connections.
    server_.set_socket_options([](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.set_payload_max_length(kMaxBodyBytes);
    server_.set_keep_alive_timeout(2);
    server_.set_read_timeout(10);
    server_.set_write_timeout(10);
    server_.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      SendError(res, 500, "internal error in the dashboard");
    });
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return Admit(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    server_.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_header("X-Frame-Options", "DENY");
    });
    Routes();
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", options_.port) ? options_.port : -1;
    }
    if (port_ <= 0) {
      return Status::Unavailable("the dashboard cannot listen on 127.0.0.1:" + std::to_string(options_.port) +
                                 " (in use?)");
    }
    source_->Subscribe(kind_wakers_, any_);
    watch_thread_ = std::thread([this] {
      NameThisThread("mates-dashwatch");
      RunGuarded("dashboard watch", [this] { WatchLoop(); });
    });
    server_thread_ = std::thread([this] {
      NameThisThread("mates-dashboard");
      RunGuarded("dashboard", [this] { server_.listen_after_bind(); });
    });
    // cpp-httplib 0.11's stop() does nothing until the listen loop runs.
    while (!server_.is_running()) std::this_thread::yield();
    return Status::Ok();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    changed_.notify_all();
    any_->Notify();
    server_.stop();
    if (server_thread_.joinable()) server_thread_.join();
    if (watch_thread_.joinable()) watch_thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/?token=" + token_; }

 private:
  // Token and Host, on every request.
  bool Admit(const httplib::Request& req, httplib::Response& res) {
    const std::string host = req.get_header_value("Host");
    const std::string port = ":" + std::to_string(port_);
    if (host != "127.0.0.1" + port && host != "localhost" + port) {
      SendError(res, 403, "this dashboard answers to http://127.0.0.1" + port + " only");
      return false;
    }
    std::string given = req.get_param_value("token");
    const std::string auth = req.get_header_value("Authorization");
    if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
    if (!SameSecret(given, token_)) {
      res.set_header("WWW-Authenticate", "Bearer");
      if (req.path == "/" || req.path.empty()) {
        res.status = 401;
        res.set_content(
            "mates dashboard: this URL needs its token. Open the URL that `mates up` or `mates dashboard` printed "
            "(`mates status` shows it too).\n",
            "text/plain; charset=utf-8");
      } else {
        SendError(res, 401, "missing or wrong token (?token= or Authorization: Bearer)");
      }
      return false;
    }
    return true;
  }

  bool Writable(httplib::Response& res) {
    if (!options_.read_only) return true;
    SendError(res, 403,
              options_.archived.empty()
                  ? "read-only: this is `mates dashboard`; the host's dashboard (`mates up`, see `mates status`) "
                    "can act"
                  : "read-only: an archived team");
    return false;
  }

  // The request's JSON object, or false with a 400 sent.
  bool Body(const httplib::Request& req, httplib::Response& res, Json* out) {
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      SendError(res, 415, "send JSON (Content-Type: application/json)");
      return false;
    }
    auto j = ParseJson(req.body);
    if (!j.ok() || !j->is_object()) {
      SendError(res, 400, j.ok() ? "the body must be a JSON object" : j.status().message());
      return false;
    }
    *out = std::move(*j);
    return true;
  }

  void Routes() {
    server_.Get("/", [this](const httplib::Request&, httplib::Response& res) { Page(res); });
    server_.Get("/events", [this](const httplib::Request&, httplib::Response& res) { Events(res); });
    server_.Get("/api/team", [this](const httplib::Request&, httplib::Response& res) {
      auto v = source_->View();
      if (!v.ok()) return SendStatus(res, v.status());
      Json j = view::TeamViewToJson(*v);
      j["read_only"] = options_.read_only;
      j["archived"] = options_.archived.empty() ? Json(nullptr) : Json(options_.archived);
      j["workspace"] = options_.ws.root().string();
      SendJson(res, j);
    });
    server_.Get("/api/tasks", [this](const httplib::Request&, httplib::Response& res) {
      auto list = source_->Tasks();
      if (!list.ok()) return SendStatus(res, list.status());
      Json tasks = Json::array();
      for (const auto& t : *list) tasks.push_back(TaskToJson(t));
      SendJson(res, Json{{"tasks", std::move(tasks)}});
    });
    server_.Get("/api/messages", [this](const httplib::Request& req, httplib::Response& res) { Messages(req, res); });
    server_.Get("/api/requests", [this](const httplib::Request&, httplib::Response& res) {
      auto list = source_->Requests();
      if (!list.ok()) return SendStatus(res, list.status());
      Json out = Json::array();
      for (const auto& r : *list) out.push_back(ProtocolRequestToJson(r));
      SendJson(res, Json{{"requests", std::move(out)}});
    });
    server_.Get("/api/merges", [this](const httplib::Request&, httplib::Response& res) {
      auto list = source_->Merges();
      if (!list.ok()) return SendStatus(res, list.status());
      Json out = Json::array();
      for (const auto& m : *list) out.push_back(MergeRequestToJson(m));
      SendJson(res, Json{{"merges", std::move(out)}});
    });
    server_.Post(R"(/api/merges/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      Json b;
      if (!Writable(res) || !Body(req, res, &b)) return;
      DecideMergeRequest(req.matches[1], b, res);
    });
    server_.Get(R"(/api/agents/([^/]+)/transcript)", [this](const httplib::Request& req, httplib::Response& res) {
      Transcript(req.matches[1], res);
    });
    server_.Post("/api/messages", [this](const httplib::Request& req, httplib::Response& res) {
      Json b;
      if (!Writable(res) || !Body(req, res, &b)) return;
      auto to = JsonString(b, "to", true);
      auto content = JsonString(b, "content", true);
      if (!to.ok()) return SendStatus(res, to.status());
      if (!content.ok()) return SendStatus(res, content.status());
      SendRequest r;
      r.sender = kUserName;
      r.type = *to == "*" ? MessageType::kBroadcast : MessageType::kMessage;
      r.recipient = *to == "*" ? "" : *to;
      r.content = *content;
      auto receipt = Send(r);
      if (!receipt.ok()) return SendStatus(res, receipt.status());
      SendJson(res, Json{{"id", receipt->message.id}, {"recipients", receipt->recipients}}, 201);
    });
    server_.Post("/api/tasks", [this](const httplib::Request& req, httplib::Response& res) {
      Json b;
      if (!Writable(res) || !Body(req, res, &b)) return;
      TaskDraft d;
      auto subject = JsonString(b, "subject", true);
      auto description = JsonString(b, "description", false);
      auto blocked = JsonArrayField(b, "blocked_by", false);
      if (!subject.ok()) return SendStatus(res, subject.status());
      if (!description.ok()) return SendStatus(res, description.status());
      if (!blocked.ok()) return SendStatus(res, blocked.status());
      d.subject = *subject;
      d.description = *description;
      if (*blocked != nullptr) {
        for (const auto& v : **blocked) {
          auto id = JsonId(v, "blocked_by");
          if (!id.ok()) return SendStatus(res, id.status());
          d.blocked_by.push_back(*id);
        }
      }
      auto t = source_->CreateTask(d);
      if (!t.ok()) return SendStatus(res, t.status());
      SendJson(res, TaskToJson(*t), 201);
    });
    server_.Post(R"(/api/requests/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      Json b;
      if (!Writable(res) || !Body(req, res, &b)) return;
      AnswerPlan(req.matches[1], b, res);
    });
    server_.Post(R"(/api/agents/([^/]+)/stop)", [this](const httplib::Request& req, httplib::Response& res) {
      Json b;
      if (!Writable(res) || !Body(req, res, &b)) return;
      AskToStop(req.matches[1], b, res);
    });
  }

  void Page(httplib::Response& res) {
    // The script and styles are inline, allowed by a nonce of this response.
    const std::string nonce = NewSecretToken().substr(0, 22);
    std::string html = kIndexHtml;
    auto put = [&html](const std::string& mark, const std::string& text) {
      size_t at = html.find(mark);
      if (at != std::string::npos) html.replace(at, mark.size(), text);
    };
    put("{{NONCE}}", nonce);
    put("{{NONCE}}", nonce);
    put("/*{{CSS}}*/", kAppCss);
    put("/*{{JS}}*/", kAppJs);
    res.set_header("Content-Security-Policy", "default-src 'none'; connect-src 'self'; img-src 'self' data:; "
                                              "style-src 'nonce-" + nonce + "'; script-src 'nonce-" + nonce +
                                              "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    res.set_header("Cache-Control", "no-store");
    res.set_content(html, "text/html; charset=utf-8");
  }

  // An event for every change: the page refetches what it names.
  void Events(httplib::Response& res) {
    if (streams_.fetch_add(1) >= kMaxStreams) {
      streams_.fetch_sub(1);
      return SendError(res, 503, "too many open dashboards (" + std::to_string(kMaxStreams) + ")");
    }
    auto seen = std::make_shared<std::array<uint64_t, kKinds>>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      *seen = seq_;
    }
    auto first = std::make_shared<bool>(true);
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, seen, first](size_t, httplib::DataSink& sink) {
          if (*first) {
            *first = false;
            const std::string hello = "retry: 1000\nevent: hello\ndata: {}\n\n";
            return sink.write(hello.data(), hello.size());
          }
          std::vector<std::string> kinds;
          {
            std::unique_lock<std::mutex> lock(mu_);
            changed_.wait_for(lock, std::chrono::duration<double>(kKeepAliveSeconds),
                              [&] { return stopping_ || seq_ != *seen; });
            if (stopping_) return false;
            for (int k = 0; k < kKinds; ++k) {
              if (seq_[k] != (*seen)[k]) kinds.push_back(kKindNames[k]);
            }
            *seen = seq_;
          }
          const std::string event = kinds.empty() ? std::string(": keep-alive\n\n")
                                                  : "event: change\ndata: " +
                                                        DumpJson(Json{{"kinds", kinds}}) + "\n\n";
          return sink.write(event.data(), event.size());
        },
        [this](bool) { streams_.fetch_sub(1); });
  }

  void Messages(const httplib::Request& req, httplib::Response& res) {
    Result<LogPage> page = Status::Internal("unreached");
    if (req.has_param("after")) {
      const std::string text = req.get_param_value("after");
      uint64_t after = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), after);
      if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return SendError(res, 400, "after: a cursor (0 or more), from `next`");
      }
      page = source_->MessagesAfter(after, kLogPageBytes);
    } else {
      page = source_->LastMessages(kInitialMessages, kLogPageBytes);
    }
    if (!page.ok()) return SendStatus(res, page.status());
    Json out = Json::array();
    for (const auto& m : page->messages) out.push_back(MessageToJson(m));
    SendJson(res, Json{{"messages", std::move(out)}, {"next", page->next}, {"more", page->more}});
  }

  // Sent through the team's store (its rules: Messenger's).
  Result<SendReceipt> Send(const SendRequest& r) {
    auto mail = source_->store().Mail(options_.team);
    return Messenger(*mail).Send(r);
  }

  void Transcript(const std::string& name, httplib::Response& res) {
    if (Status s = ValidateName("agent name", name); !s.ok()) return SendStatus(res, s);
    auto journal = source_->Journal(name, kMaxJournalBytes);
    if (!journal.ok()) {
      if (journal.status().code() == StatusCode::kNotFound) {
        return SendError(res, 404, "no journal for '" + name + "' in team '" + options_.team + "'");
      }
      return SendStatus(res, journal.status());
    }
    if (journal->too_large) {
      return SendError(res, 413, "the journal of '" + name + "' is over " + std::to_string(kMaxJournalBytes >> 20) +
                                     " MiB; read it with ordinary tools: " + journal->where);
    }
    const std::string* text = &journal->text;
    const std::string path = journal->where;
    agent::JournalState st = agent::Journal::ReplayText(*text, path);
    Json msgs = Json::array();
    size_t from = st.messages.size() > kTranscriptMessages ? st.messages.size() - kTranscriptMessages : 0;
    for (size_t i = from; i < st.messages.size(); ++i) {
      llm::ChatMessage m = st.messages[i];
      for (auto& b : m.content) {
        Cut(b.text, kMaxBlockText);
        if (b.input_json.size() > kMaxBlockText) {
          std::string shown = b.input_json;
          Cut(shown, kMaxBlockText);
          b.input_json = DumpJson(Json{{"(cut)", shown}});
        }
      }
      msgs.push_back(llm::MessageToJson(m));
    }
    Json j = {{"agent", name},
              {"messages", std::move(msgs)},
              {"total", st.messages.size()},
              {"calls", st.calls},
              {"compactions", st.compactions},
              {"usage", llm::UsageToJson(st.usage)}};
    if (st.problem) j["problem"] = "line " + std::to_string(st.problem->line) + ": " + st.problem->what;
    SendJson(res, j);
  }

  // A person decides a pending plan: the answer goes out as the lead's (the
  // responder the protocol knows), and the lead is told who decided.
  void AnswerPlan(const std::string& id, const Json& b, httplib::Response& res) {
    auto approve = JsonBool(b, "approve", false);
    if (!approve.ok() || !b.contains("approve") || !b["approve"].is_boolean()) {
      return SendError(res, 400, "approve: true or false is required");
    }
    auto feedback = JsonString(b, "feedback", false);
    if (!feedback.ok()) return SendStatus(res, feedback.status());
    if (Status s = ValidateName("request id", id); !s.ok()) return SendStatus(res, s);
    auto req = source_->store().Mail(options_.team)->GetRequest(id);
    if (!req.ok()) return SendStatus(res, req.status());
    if (req->kind != RequestKind::kPlanApproval) {
      return SendError(res, 409, "request " + id + " is a " + std::string(RequestKindName(req->kind)) +
                                     " request; only plans are decided here");
    }
    SendRequest r;
    r.type = MessageType::kPlanApprovalResponse;
    r.sender = req->responder;
    r.recipient = req->requester;
    r.request_id = id;
    r.approve = *approve;
    r.feedback = feedback->empty() ? "(decided by user on the dashboard)"
                                   : *feedback + " (decided by user on the dashboard)";
    auto sent = Send(r);
    if (!sent.ok()) return SendStatus(res, sent.status());
    SendRequest note;
    note.sender = kUserName;
    note.recipient = req->responder;
    note.content = std::string(*approve ? "I approved " : "I rejected ") + req->requester + "'s plan (" + id +
                   ") on the dashboard" + (feedback->empty() ? "." : ": " + *feedback);
    auto told = Send(note);
    Json j = {{"id", sent->message.id}, {"approved", *approve}};
    if (!told.ok()) j["warning"] = "the lead was not told: " + told.status().message();
    SendJson(res, j);
  }

  // A person decides a merge waiting for review (DESIGN §12).
  void DecideMergeRequest(const std::string& id_text, const Json& b, httplib::Response& res) {
    if (!b.contains("approve") || !b["approve"].is_boolean()) {
      return SendError(res, 400, "approve: true or false is required");
    }
    auto feedback = JsonString(b, "feedback", false);
    if (!feedback.ok()) return SendStatus(res, feedback.status());
    auto id = ParseId(id_text, "merge id");
    if (!id.ok()) return SendStatus(res, id.status());
    auto m = source_->DecideMerge(*id, b["approve"].get<bool>(), *feedback);
    if (!m.ok()) return SendStatus(res, m.status());
    SendJson(res, MergeRequestToJson(*m));
  }

  void AskToStop(const std::string& name, const Json& b, httplib::Response& res) {
    auto reason = JsonString(b, "reason", false);
    if (!reason.ok()) return SendStatus(res, reason.status());
    auto team = source_->store().LoadTeam(options_.team);
    if (!team.ok()) return SendStatus(res, team.status());
    SendRequest r;
    r.type = MessageType::kShutdownRequest;
    r.sender = team->lead;
    r.recipient = name;
    r.content = (reason->empty() ? std::string("Please wrap up your work and shut down.") : *reason) +
                " (asked by user on the dashboard)";
    auto sent = Send(r);
    if (!sent.ok()) return SendStatus(res, sent.status());
    SendJson(res, Json{{"id", sent->message.id}, {"request_id", sent->message.request_id}});
  }

  void WatchLoop() {
    std::array<uint64_t, kKinds> last{};
    for (int k = 0; k < kKinds; ++k) last[k] = kind_wakers_[k]->generation();
    uint64_t seen = any_->generation();
    auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
    double next_tick = now() + 1;
    for (;;) {
      seen = any_->WaitChange(seen, DeadlineIn(std::max(0.0, next_tick - now())));
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
      }
      std::array<bool, kKinds> bump{};
      for (int k = 0; k < kKinds; ++k) {
        uint64_t g = kind_wakers_[k]->generation();
        if (g != last[k]) {
          last[k] = g;
          bump[k] = true;
        }
      }
      if (now() >= next_tick) {
        next_tick = now() + 1;
        KindFlags ticked = source_->Tick();
        for (int k = 0; k < kKinds; ++k) bump[k] = bump[k] || ticked[k];
      }
      bool any = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (int k = 0; k < kKinds; ++k) {
          if (bump[k]) {
            ++seq_[k];
            any = true;
          }
        }
      }
      if (any) changed_.notify_all();
    }
  }

  const DashboardOptions options_;
  const std::string token_;
  int port_ = -1;
  httplib::Server server_;
  std::thread server_thread_;
  std::thread watch_thread_;

  // Set by Start: the watch thread is told of changes through it, and the
  // server's threads read and send through it (it is safe to share).
  std::unique_ptr<Source> source_;
  KindWakers kind_wakers_;
  std::shared_ptr<Waker> any_ = std::make_shared<Waker>();

  std::atomic<size_t> streams_{0};

  std::mutex mu_;
  std::condition_variable changed_;  // seq_ moved, or stopping_
  std::array<uint64_t, kKinds> seq_{};
  bool stopping_ = false;
};

Dashboard::Dashboard(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dashboard::~Dashboard() { Stop(); }

Result<std::unique_ptr<Dashboard>> Dashboard::Start(DashboardOptions options) {
  if (Status s = ValidateName("team name", options.team); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(std::move(options));
  MATES_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Dashboard>(new Dashboard(std::move(impl)));
}

int Dashboard::port() const { return impl_->port(); }
std::string Dashboard::url() const { return impl_->url(); }
void Dashboard::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace mates::dashboard
