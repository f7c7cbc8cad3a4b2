// The dashboard's server (see dashboard.h): cpp-httplib for HTTP behind an
// HttpGuard (token, Host), the page, the JSON API (TeamApi) over the team's
// Source, and the event streams of a ChangeFeed.
#include "dashboard/dashboard.h"

#include <sys/socket.h>

#include <httplib.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/env.h"
#include "core/guarded.h"
#include "core/names.h"
#include "dashboard/change_feed.h"
#include "dashboard/http_guard.h"
#include "dashboard/prometheus.h"
#include "dashboard/source.h"
#include "dashboard/team_api.h"
#include "report/report.h"
#include "dashboard_assets.h"
#include "llm/http_bounds.h"
#include "llm/http_server.h"
#include "stores/open_store.h"

namespace mates::dashboard {
namespace {


// The page: its script and styles inline, allowed by a nonce of this response.
void Page(httplib::Response& res) {
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

}  // namespace

class Dashboard::Impl {
 public:
  Impl(DashboardOptions o, const Env& env) : options_(std::move(o)), env_(env) {}

  Status Start() {
    TeamStore* store = options_.store;
    if (store == nullptr) {
      MATES_ASSIGN_OR_RETURN(own_store_, OpenTeamStore(options_.store_url, options_.ws, env_));
      store = own_store_.get();
    }
    source_ = std::make_unique<Source>(*store, options_.team, options_.merge_hooks);
    api_ = std::make_unique<TeamApi>(*source_, options_, env_.prices);
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
      NeverWaitOutOutagesOnThisThread();  // the server's own workers: a page answers 503 in an outage
      if (llm::RefusedMethod(req)) {
        // Before the library would read its body, unbounded.
        SendError(res, 405, req.method + " is not served here");
        res.set_header("Connection", "close");
        return httplib::Server::HandlerResponse::Handled;
      }
      return guard_.Admit(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                    : httplib::Server::HandlerResponse::Handled;
    });
    server_.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_header("X-Frame-Options", "DENY");
    });
    server_.Get("/", [](const httplib::Request&, httplib::Response& res) { Page(res); });
    server_.Get("/events", [this](const httplib::Request&, httplib::Response& res) { feed_.Serve(res); });
    // Prometheus' scrape, behind the same token (Bearer or ?token=).
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      auto v = source_->View();
      if (!v.ok()) return SendStatus(res, v.status());
      res.set_header("Cache-Control", "no-store");
      res.set_content(MetricsText(*v, options_.metrics.get()), "text/plain; version=0.0.4; charset=utf-8");
    });
    // The session's post-mortem (DESIGN §31), as `mates report --html`
    // makes it: a page of its own that may fetch nothing.
    server_.Get("/report", [this](const httplib::Request&, httplib::Response& res) {
      const std::string state = !options_.archived.empty() ? "archived " + options_.archived
                                : source_->store().LiveHost(options_.team) ? "live"
                                                                          : "stopped (no host)";
      auto r = report::Build(source_->store(), options_.ws, options_.team, state, env_.prices);
      if (!r.ok()) return SendStatus(res, r.status());
      res.set_header("Cache-Control", "no-store");
      res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
      res.set_content(report::Html(*r), "text/html; charset=utf-8");
    });
    api_->Register(server_);
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", options_.port) ? options_.port : -1;
    }
    if (port_ <= 0) {
      return Status::Unavailable("the dashboard cannot listen on 127.0.0.1:" + std::to_string(options_.port) +
                                 " (in use?)");
    }
    guard_.set_port(port_);
    feed_.Start(*source_);
    server_thread_ = server_.ServeInThread("mates-dashboard", "dashboard");
    return Status::Ok();
  }

  // The streams end first (they would hold the server's workers), then the
  // server, then the feed's thread.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    feed_.Stop();
    server_.stop();
    if (server_thread_.joinable()) server_thread_.join();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/?token=" + guard_.token(); }

 private:
  const DashboardOptions options_;
  const Env env_;  // references: the parts outlive the dashboard
  HttpGuard guard_;
  int port_ = -1;
  // Set by Start: the store when it is the dashboard's own (before the
  // source, which reads it); the feed's thread is told of changes through
  // the source, and the server's threads read and send through it (it is
  // safe to share).
  std::unique_ptr<TeamStore> own_store_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<TeamApi> api_;
  ChangeFeed feed_;
  // A page opens a stream and a few fetches at once; a stream holds its
  // worker for as long as the page is open. Heads come through the front
  // door (llm/http_server.h), so a connection without a whole request
  // holds no worker.
  llm::HttpServer server_{llm::FrontDoorLimits{.workers = ChangeFeed::kMaxStreams + 8,
                                               .idle_keep_alive = std::chrono::seconds(2)}};
  std::thread server_thread_;

  std::mutex mu_;
  bool stopped_ = false;  // guarded by mu_
};

Dashboard::Dashboard(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dashboard::~Dashboard() { Stop(); }

Result<std::unique_ptr<Dashboard>> Dashboard::Start(DashboardOptions options, const Env& env) {
  if (Status s = ValidateName("team name", options.team); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(std::move(options), env);
  MATES_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Dashboard>(new Dashboard(std::move(impl)));
}

int Dashboard::port() const { return impl_->port(); }
std::string Dashboard::url() const { return impl_->url(); }
void Dashboard::Stop() {
  if (impl_) impl_->Stop();
}

}  // namespace mates::dashboard
