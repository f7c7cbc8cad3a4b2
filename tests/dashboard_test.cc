// The dashboard over real HTTP (curl), DESIGN §11: the host's (`mates up`)
// serves the page and the API behind its token and acts as `user`; `mates
// dashboard` is read-only and reads archives; bad requests get one clear
// error each. The page itself is driven in a real browser by
// tests/browser/dashboard.mjs.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/clock.h"
#include "core/json.h"
#include "store/merges.h"
#include "store/roster.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

using Reply = testing::HttpReply;
using Url = testing::DashboardUrl;
using testing::Http;
Url SplitUrl(const std::string& url) { return testing::SplitDashboardUrl(url); }

class DashboardTest : public ::testing::Test {
 protected:
  ~DashboardTest() override { testing::RunMates(ws_.path(), {"down", "--team", "dash", "--timeout", "5"}); }
  testing::CommandResult Mates(const std::vector<std::string>& args) { return testing::RunMates(ws_.path(), args); }
  Reply Get(const std::string& path) { return Http("GET", url_.base + path, {"Authorization: Bearer " + url_.token}); }
  Reply Post(const std::string& path, const std::string& body) {
    return Http("POST", url_.base + path, {"Authorization: Bearer " + url_.token}, body);
  }
  void Up(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"up", "--team", "dash", "--provider", "scripted", "--scenario",
                                     testing::ScenarioFixture("team_dashboard.yaml")};
    args.insert(args.end(), extra.begin(), extra.end());
    auto up = Mates(args);
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
    size_t at = up.out.find(" — dashboard http://127.0.0.1:");
    ASSERT_NE(at, std::string::npos) << up.out;
    std::string url = up.out.substr(at + std::string(" — dashboard ").size());
    url = url.substr(0, url.find('\n'));
    url_ = SplitUrl(url);
    ASSERT_FALSE(url_.token.empty()) << url;
    // Letters, digits, '-' and '_' only (DESIGN §11), and long enough.
    EXPECT_GE(url_.token.size(), 40u);
    EXPECT_EQ(url_.token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
  }

  // The port the host's dashboard listens on.
  int Port() const {
    const std::string hostport = url_.base.substr(7, url_.base.find('/', 7) == std::string::npos
                                                         ? std::string::npos
                                                         : url_.base.find('/', 7) - 7);
    return std::stoi(hostport.substr(hostport.find(':') + 1));
  }
  // A socket connected to the dashboard, with 20 s timeouts both ways; -1
  // if it cannot connect.
  int Connect() const {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(Port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
  }
  static bool SendAll(int fd, const std::string& s) {
    for (size_t at = 0; at < s.size();) {
      ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  // A client that sends a whole chunked POST of `size` bytes before it
  // reads anything (as curl does with an upload): whether every byte was
  // taken, and the HTTP status it then read (-1: none).
  std::pair<bool, int> SendWholeThenRead(const std::string& path, size_t size) {
    const int fd = Connect();
    if (fd < 0) return {false, -1};
    auto send_all = [fd](const std::string& s) { return SendAll(fd, s); };
    bool sent = send_all("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(Port()) + "\r\nAuthorization: Bearer " + url_.token +
                         "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    for (size_t done = 0; sent && done < size; done += 0x10000) sent = send_all(chunk);
    sent = sent && send_all("0\r\n\r\n");
    std::string got;
    char buf[4096];
    for (ssize_t n; got.find("\r\n") == std::string::npos && (n = ::read(fd, buf, sizeof buf)) > 0;) {
      got.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return {sent, got.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(got.c_str() + 9) : -1};
  }

  // A client that asks `Expect: 100-continue`, sends 1 MiB chunked once
  // told to go on, reads its answer, then sends 2 MiB more and ends its
  // side: the answer's status, and what came after the answer (empty and
  // `clean` if the host dropped the rest and closed without a reset).
  struct AfterContinue {
    int status = -1;
    std::string after;
    bool clean = false;
  };
  AfterContinue ContinueThenMore(const std::string& path) {
    AfterContinue out;
    const int fd = Connect();
    if (fd < 0) return out;
    auto send_all = [fd](const std::string& s) { return SendAll(fd, s); };
    std::string got;
    char buf[4096];
    auto read_until = [&](const std::string& mark) {
      for (ssize_t n; got.find(mark) == std::string::npos && (n = ::read(fd, buf, sizeof buf)) > 0;) {
        got.append(buf, static_cast<size_t>(n));
      }
      return got.find(mark) != std::string::npos;
    };
    const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
    bool ok = send_all("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(Port()) +
                       "\r\nAuthorization: Bearer " + url_.token +
                       "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                       "Expect: 100-continue\r\n\r\n") &&
              read_until("\r\n\r\n") && got.rfind("HTTP/1.1 100 ", 0) == 0;
    got.erase(0, got.find("\r\n\r\n") + 4);
    for (int i = 0; ok && i < 16; ++i) ok = send_all(chunk);
    // The answer: its head, then its Content-Length's worth of body.
    if (ok && read_until("\r\n\r\n") && got.rfind("HTTP/1.1 ", 0) == 0) {
      out.status = std::atoi(got.c_str() + 9);
      std::string head = got.substr(0, got.find("\r\n\r\n") + 4);
      std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
      const size_t cl = head.find("\r\ncontent-length: ");
      const size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 18));
      got.erase(0, head.size());
      for (ssize_t n; got.size() < length && (n = ::read(fd, buf, sizeof buf)) > 0;) {
        got.append(buf, static_cast<size_t>(n));
      }
      got.erase(0, std::min(length, got.size()));
      for (int i = 0; ok && i < 32; ++i) ok = send_all(chunk);
      ::shutdown(fd, SHUT_WR);
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
      out.clean = ok && n == 0;
      out.after = got;
    }
    ::close(fd);
    return out;
  }

  TempDir ws_;
  Url url_;
};

TEST_F(DashboardTest, TheHostServesPageAndApiOnlyWithItsToken) {
  Up({"Start the team"});
  // The URL is in host.json, so status shows it.
  auto st = Mates({"status", "--team", "dash", "--json"});
  auto sj = ParseJson(st.out);
  ASSERT_TRUE(sj.ok()) << st.out;
  EXPECT_EQ((*sj)["host"]["dashboard"], url_.base + "/?token=" + url_.token);
  // It holds the token: only its owner reads it.
  EXPECT_EQ(fs::status(ws_.path() / ".teams/dash/host.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  // The token, on every request: none, a wrong one, one a byte short.
  EXPECT_EQ(Http("GET", url_.base + "/").code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/api/team").code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/events").code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/nothing-here").code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/?token=" + url_.token.substr(1)).code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/api/team", {"Authorization: Bearer x" + url_.token}).code, 401);
  EXPECT_EQ(Http("POST", url_.base + "/api/messages", {}, R"({"to":"lead","content":"hi"})").code, 401);
  // Another Host (DNS rebinding) is refused even with the token.
  EXPECT_EQ(Http("GET", url_.base + "/?token=" + url_.token, {"Host: attacker.example:80"}).code, 403);

  // The page: every asset inline, a CSP nonce, no outside URL.
  auto page = Http("GET", url_.base + "/?token=" + url_.token);
  ASSERT_EQ(page.code, 200);
  EXPECT_NE(page.body.find("<script nonce="), std::string::npos);
  EXPECT_EQ(page.body.find("{{"), std::string::npos);
  EXPECT_EQ(page.body.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.body.find("href=\"http"), std::string::npos);

  // The roster, with the planner the lead started.
  Deadline d = DeadlineIn(20);
  Json team;
  for (;;) {
    team = Get("/api/team").json();
    bool planner = false;
    for (const auto& m : team["members"]) planner |= m["name"] == "planner";
    if (planner || Expired(d)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(team.is_object());
  EXPECT_EQ(team["team"], "dash");
  EXPECT_EQ(team["read_only"], false);
  EXPECT_EQ(team["members"].size(), 2u) << team;

  // A message as user: the lead answers into user's inbox.
  auto sent = Post("/api/messages", R"({"to":"lead","content":"ping http"})");
  ASSERT_EQ(sent.code, 201) << sent.body;
  EXPECT_EQ(sent.json()["recipients"], Json::array({"lead"}));
  auto pong = Mates({"inbox", "--team", "dash", "user", "--wait", "20"});
  EXPECT_NE(pong.out.find("pong http"), std::string::npos) << pong.out << pong.err;
  auto log = Get("/api/messages").json();
  bool from_user = false;
  for (const auto& m : log["messages"]) from_user |= m["sender"] == "user" && m["content"] == "ping http";
  EXPECT_TRUE(from_user) << log;
  // `after` continues where `next` left off.
  auto rest = Get("/api/messages?after=" + std::to_string(log["next"].get<uint64_t>())).json();
  EXPECT_TRUE(rest["messages"].is_array());

  // A task, and its dependency.
  auto t1 = Post("/api/tasks", R"({"subject":"Parse","description":"the grammar"})");
  ASSERT_EQ(t1.code, 201) << t1.body;
  auto t2 = Post("/api/tasks", R"({"subject":"Test","blocked_by":[)" + std::to_string(t1.json()["id"].get<int>()) + "]}");
  ASSERT_EQ(t2.code, 201) << t2.body;
  auto tasks = Get("/api/tasks").json();
  ASSERT_EQ(tasks["tasks"].size(), 2u) << tasks;
  EXPECT_EQ(tasks["tasks"][1]["blockedBy"], Json::array({t1.json()["id"]}));

  // The planner's plan, decided on the page's behalf.
  Json plan;
  d = DeadlineIn(20);
  while (plan.is_null() && !Expired(d)) {
    const Json requests = Get("/api/requests").json();
    for (const auto& r : requests["requests"]) {
      if (r["kind"] == "plan_approval" && r["status"] == "pending") plan = r;
    }
    if (plan.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(plan.is_null()) << testing::ReadAll(ws_.path() / ".teams/dash/host.log") << Get("/api/requests").body;
  const std::string rid = plan["request_id"];
  EXPECT_EQ(Post("/api/requests/" + rid, R"({"feedback":"x"})").code, 400);  // approve is required
  EXPECT_EQ(Post("/api/requests/" + rid, R"({"approve":"yes"})").code, 400);
  auto ok = Post("/api/requests/" + rid, R"({"approve":true,"feedback":"go ahead"})");
  ASSERT_EQ(ok.code, 200) << ok.body;
  EXPECT_EQ(Post("/api/requests/" + rid, R"({"approve":false})").code, 409);  // answered already
  EXPECT_EQ(Post("/api/requests/r-0000000000000000", R"({"approve":true})").code, 404);
  bool approved = false;
  const Json after = Get("/api/requests").json();
  for (const auto& r : after["requests"]) {
    approved |= r["request_id"] == rid && r["status"] == "approved";
  }
  EXPECT_TRUE(approved);

  // The transcript of an agent, from its journal.
  auto tr = Get("/api/agents/lead/transcript");
  ASSERT_EQ(tr.code, 200) << tr.body;
  EXPECT_GT(tr.json()["messages"].size(), 0u);
  EXPECT_EQ(Get("/api/agents/nobody/transcript").code, 404);
  EXPECT_EQ(Get("/api/agents/..%2F..%2Fetc/transcript").code, 404);  // no such route once decoded
  EXPECT_EQ(Get("/api/agents/bad%20name/transcript").code, 400);
  EXPECT_EQ(Get("/api/agents/..%2Econfig/transcript").code, 400);

  // Asking the planner to stop is a shutdown request from the lead.
  auto stop = Post("/api/agents/planner/stop", "{}");
  ASSERT_EQ(stop.code, 200) << stop.body;
  EXPECT_EQ(stop.json()["request_id"].get<std::string>().rfind("r-", 0), 0u);
  EXPECT_EQ(Post("/api/agents/lead/stop", "{}").code, 400);  // the lead is not asked
  EXPECT_EQ(Post("/api/agents/ghost/stop", "{}").code, 404);

  // The host's levers (DESIGN §27): each refusal with its reason.
  EXPECT_EQ(Get("/api/team").json()["levers"], true);
  auto idle = Post("/api/agents/lead/interrupt", "{}");
  EXPECT_EQ(idle.code, 409);
  EXPECT_NE(idle.body.find("is idle: nothing to interrupt"), std::string::npos) << idle.body;
  EXPECT_EQ(Post("/api/agents/lead/restart", "{}").code, 409);
  EXPECT_EQ(Post("/api/agents/ghost/restart", "{}").code, 404);
  EXPECT_EQ(Post("/api/agents/bad%20name/interrupt", "{}").code, 400);
  EXPECT_EQ(Post("/api/agents/planner/pause", "{}").code, 404);  // no such lever
  d = DeadlineIn(30);
  while (!Expired(d) && Post("/api/agents/planner/restart", "{}").code != 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // until the planner has stopped
  }
  EXPECT_FALSE(Expired(d)) << "the stopped planner was not restarted from the page";
  auto running = Post("/api/agents/planner/restart", "{}");
  EXPECT_EQ(running.code, 409);
  EXPECT_NE(running.body.find("is running"), std::string::npos) << running.body;

  auto down = Mates({"down", "--team", "dash"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(Http("GET", url_.base + "/?token=" + url_.token).code, 200);  // gone with its host
}

// /metrics (DESIGN §29): the hosted team in Prometheus' text format,
// behind the page's token; what the store says (members, tasks, spend) and
// what the host counted as its agents worked (model calls with the GenAI
// conventions' names, tools, deliveries). promtool finds it valid, and a
// real Prometheus (Debian's) scrapes it with the token and answers a
// PromQL query for the team's tokens.
TEST_F(DashboardTest, APrometheusScrapesTheHostsMetricsWithTheToken) {
  Up({"Start the team"});
  // The planner's plan request has reached the lead: a spawn, a send and a
  // delivery counted.
  std::string text;
  ASSERT_TRUE(testing::WaitUntil([&] {
    text = Get("/metrics").body;
    return text.find("mates_message_delivery_seconds_count{team=\"dash\"}") != std::string::npos;
  }, 30)) << text;
  auto has = [&](const std::string& line) { return text.find(line) != std::string::npos; };
  EXPECT_TRUE(has("# TYPE mates_agents gauge\n")) << text;
  EXPECT_TRUE(has("mates_tasks{status=\"pending\",team=\"dash\"} 0\n")) << text;
  EXPECT_TRUE(has("mates_tool_calls_total{agent=\"lead\",outcome=\"ok\",team=\"dash\",tool=\"Task\"} 1\n")) << text;
  EXPECT_TRUE(has("mates_tool_calls_total{agent=\"planner\",outcome=\"ok\",team=\"dash\",tool=\"SendMessage\"} 1\n"))
      << text;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_count{gen_ai_agent_name=\"lead\","
                  "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"scripted\",gen_ai_request_model=")) << text;
  EXPECT_TRUE(has("gen_ai_client_token_usage_bucket{gen_ai_agent_name=\"planner\"")) << text;
  EXPECT_TRUE(has("mates_tokens_total{agent=\"lead\",model=")) << text;
  // Only with the token: none is 401; ?token= serves as the header does.
  EXPECT_EQ(Http("GET", url_.base + "/metrics").code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/metrics", {"Authorization: Bearer x" + url_.token}).code, 401);
  EXPECT_EQ(Http("GET", url_.base + "/metrics?token=" + url_.token).code, 200);

  // promtool's own check of the format and its naming rules.
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "metrics.txt", text);
  auto checked = testing::Run({"sh", "-c", "promtool check metrics < " + (dir.path() / "metrics.txt").string()});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;

  // A real Prometheus scrapes the host every 200 ms with the token.
  const int port = testing::FreePort();
  ASSERT_GT(port, 0);
  testing::WriteAll(dir.path() / "prometheus.yml",
                    "global: {scrape_interval: 1s}\n"
                    "scrape_configs:\n"
                    "  - job_name: mates\n"
                    "    scrape_interval: 200ms\n"
                    "    scrape_timeout: 200ms\n"
                    "    authorization: {credentials: " + url_.token + "}\n"
                    "    static_configs: [{targets: ['127.0.0.1:" + std::to_string(Port()) + "']}]\n");
  Subprocess prometheus = testing::Start(
      {"prometheus", "--config.file=" + (dir.path() / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir.path() / "data").string(), "--web.listen-address=127.0.0.1:" + std::to_string(port),
       "--log.level=warn"});
  const std::string query = "http://127.0.0.1:" + std::to_string(port) +
                            "/api/v1/query?query=sum(mates_tokens_total%7Bteam%3D%22dash%22%7D)";
  Json answer;
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto r = Http("GET", query);
    answer = r.json();
    return r.code == 200 && answer.is_object() && answer["data"]["result"].is_array() &&
           !answer["data"]["result"].empty();
  }, 30)) << answer.dump();
  if (answer.is_object() && answer["data"]["result"].is_array() && !answer["data"]["result"].empty()) {
    EXPECT_GT(std::stod(answer["data"]["result"][0]["value"][1].get<std::string>()), 0) << answer.dump();
  }
  // And it sees the target up, scraped with the token (a 401 would be down).
  auto targets = Http("GET", "http://127.0.0.1:" + std::to_string(port) + "/api/v1/targets").json();
  EXPECT_EQ(targets["data"]["activeTargets"][0]["health"], "up") << targets.dump();
  prometheus.Signal(SIGTERM);
}

TEST_F(DashboardTest, BadRequestsGetOneClearError) {
  Up();
  auto post = [&](const std::string& path, const std::string& body, const std::string& type = "application/json") {
    return Http("POST", url_.base + path, {"Authorization: Bearer " + url_.token}, body, type);
  };
  auto r = post("/api/messages", "not json");
  EXPECT_EQ(r.code, 400);
  EXPECT_TRUE(r.json()["error"].is_string()) << r.body;
  EXPECT_EQ(post("/api/messages", "[1,2]").code, 400);
  EXPECT_EQ(post("/api/messages", R"({"to":"lead"})").code, 400);             // content missing
  EXPECT_EQ(post("/api/messages", R"({"to":"lead","content":""})").code, 400);
  EXPECT_EQ(post("/api/messages", R"({"to":"lead","content":42})").code, 400);
  EXPECT_EQ(post("/api/messages", R"({"to":"ghost","content":"hi"})").code, 404);
  EXPECT_EQ(post("/api/messages", R"({"to":"lead","content":"hi"})", "text/plain").code, 415);
  EXPECT_EQ(post("/api/messages", std::string(300 << 10, ' ')).code, 413);
  std::string deep(100000, '[');
  EXPECT_EQ(post("/api/messages", deep).code, 400);
  EXPECT_EQ(post("/api/tasks", R"({"subject":"  "})").code, 400);
  EXPECT_EQ(post("/api/tasks", R"({"subject":"x","blocked_by":["a"]})").code, 400);
  EXPECT_EQ(post("/api/tasks", R"({"subject":"x","blocked_by":[99]})").code, 404);
  EXPECT_EQ(Get("/api/messages?after=-1").code, 400);
  EXPECT_EQ(Get("/api/messages?after=abc").code, 400);
  EXPECT_EQ(Get("/api/messages?after=").code, 400);
  // 0 is an offset like any other (an empty log's `next`).
  EXPECT_EQ(Get("/api/messages?after=0").code, 200);
  EXPECT_EQ(Get("/api/no-such").code, 404);
  // The host lives on and still answers.
  EXPECT_EQ(Get("/api/team").code, 200);
}

// #50: a chunked body skipped the 256 KiB bound (cpp-httplib bounds only a
// Content-Length; 1 GB took the host to ~1 GB). Bounded now whatever the
// framing, on every path and method, and the host's memory does not grow
// by what was sent.
TEST_F(DashboardTest, ABodyIsBoundedWhateverItsFraming) {
  Up();
  auto host = ParseJson(testing::ReadAll(ws_.path() / ".teams/dash/host.json"));
  ASSERT_TRUE(host.ok());
  const pid_t pid = (*host)["pid"].get<pid_t>();
  auto peak = [pid] {
    std::string status = testing::ReadAll("/proc/" + std::to_string(pid) + "/status");
    size_t at = status.find("VmHWM:");
    return at == std::string::npos ? size_t{0} : std::stoull(status.substr(at + 6)) * 1024;
  };
  const std::vector<std::string> chunked = {"Authorization: Bearer " + url_.token, "Transfer-Encoding: chunked"};
  const size_t before = peak();
  ASSERT_GT(before, 0u);
  EXPECT_EQ(Http("POST", url_.base + "/api/messages", chunked, std::string(64 << 20, ' ')).code, 413);
  // Half the body: a host that held it would be over by 64 MiB; threads
  // and the sanitizers' shadow memory (ThreadSanitizer adds ~20 MiB here)
  // stay well under.
  EXPECT_LT(peak(), before + (32u << 20)) << "the host held a body over its bound";
  EXPECT_EQ(Http("POST", url_.base + "/api/tasks", chunked, std::string(1 << 20, ' ')).code, 413);
  EXPECT_EQ(Http("POST", url_.base + "/api/nowhere", chunked, std::string(1 << 20, ' ')).code, 413);
  EXPECT_EQ(Http("PUT", url_.base + "/api/tasks", chunked, std::string(1 << 20, ' ')).code, 405);
  EXPECT_EQ(Http("PATCH", url_.base + "/api/tasks", {"Authorization: Bearer " + url_.token}, "{}").code, 405);
  // Within the bound, chunked is served like any body.
  auto sent = Http("POST", url_.base + "/api/messages", chunked, R"({"to":"lead","content":"chunked hello"})");
  EXPECT_EQ(sent.code, 201) << sent.body;
  EXPECT_EQ(Http("POST", url_.base + "/api/nowhere", chunked, "{}").code, 404);
  // A client that sends all before it reads gets its 413, not a reset: the
  // host (cpp-httplib under PostBounded) reads and drops the rest of a
  // refused body before it closes; a server that closed on unread bytes
  // would reset the connection and the client would lose its answer.
  // 128 MiB is well past what the two sockets' buffers hold (up to 36 MiB
  // with this kernel's defaults).
  auto [taken, status] = SendWholeThenRead("/api/messages", 128u << 20);
  EXPECT_TRUE(taken) << "the host closed on a body it had refused while it was still coming";
  EXPECT_EQ(status, 413);
  // The same after an interim `100 Continue` (curl asks for one before a
  // body over 1 MiB): the 413 that follows it ends the connection, and the
  // body's rest is dropped, not read as a next request and then reset.
  auto continued = ContinueThenMore("/api/messages");
  EXPECT_EQ(continued.status, 413);
  EXPECT_TRUE(continued.clean) << "the host reset the connection after its 413";
  EXPECT_EQ(continued.after, "") << "the rest of a refused body was answered as a request";
  EXPECT_EQ(Get("/api/team").code, 200);
}

// #50: a closed tab kept its event stream until the next keep-alive (15 s),
// so a page opened a few times met 503. A hundred pages opened and closed
// at once, then one more: it gets its stream.
TEST_F(DashboardTest, PagesClosedDoNotKeepTheNextOneFromItsEvents) {
  Up();
  const int port = Port();
  const std::string hostport = "127.0.0.1:" + std::to_string(port);
  // Opens /events, reads until the stream says hello (or the server says
  // no), closes; the HTTP status.
  auto open_and_close = [&] {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    const std::string req = "GET /events HTTP/1.1\r\nHost: " + hostport + "\r\nAuthorization: Bearer " + url_.token +
                            "\r\n\r\n";
    (void)!::write(fd, req.data(), req.size());
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string got;
    char buf[4096];
    for (ssize_t n; got.find("event: hello") == std::string::npos && got.find("\r\n\r\n{") == std::string::npos &&
                    (n = ::read(fd, buf, sizeof buf)) > 0;) {
      got.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return got.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(got.c_str() + 9) : -1;
  };
  int refused = 0;
  for (int i = 0; i < 100; ++i) refused += open_and_close() == 200 ? 0 : 1;
  EXPECT_EQ(refused, 0);
  EXPECT_EQ(open_and_close(), 200) << "a page opened after others were closed was refused its events";
  EXPECT_EQ(Get("/api/team").code, 200);
}

// #50: sixteen sockets sending a header line now and then, without a
// token, made the dashboard time out for as long as they liked (each held
// one of its workers). With 32 of them open, the API answers at its usual
// pace; each is answered 408 at the head's deadline.
TEST_F(DashboardTest, SlowHeadsWithoutATokenDoNotStarveThePage) {
  Up();
  const int port = std::stoi(url_.base.substr(url_.base.rfind(':') + 1));
  testing::SlowHeads slow(port, 32, "GET /api/team HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n");
  ASSERT_EQ(slow.open(), 32);
  // Timed in this process, over a socket of its own: what is measured is
  // the host's answer, not a curl process starting (~20 ms alone, and
  // most of a figure taken with another test beside it).
  const std::string request = "GET /api/team HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nAuthorization: Bearer " + url_.token + "\r\nConnection: close\r\n\r\n";
  std::vector<double> ms;
  for (int i = 0; i < 100; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const int fd = Connect();
    ASSERT_GE(fd, 0) << "request " << i;
    ASSERT_TRUE(SendAll(fd, request));
    std::string got;
    char buf[16384];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
    ::close(fd);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    ASSERT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << "request " << i << ": " << got.substr(0, 200);
  }
  std::sort(ms.begin(), ms.end());
  const double p99 = ms[98];
  RecordProperty("api_p99_ms_beside_32_slow_heads", std::to_string(p99));
  std::printf("API p99 beside 32 slow heads: %.1f ms (p50 %.1f ms)\n", p99, ms[50]);
  // DESIGN §25's figure; a sanitizer's build is several times slower.
  if (!testing::kSanitized) {
    EXPECT_LE(p99, 100.0);
  }
  const std::string answer = slow.AnswerOfFirst();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
}

// A POST a browser makes for another page (its Origin says so) is refused,
// token or not (#50); the dashboard's own page, and clients that are no
// browser, are served.
TEST_F(DashboardTest, APostFromAnotherOriginIsRefused) {
  Up();
  const std::string body = R"({"to":"lead","content":"hello"})";
  const std::string auth = "Authorization: Bearer " + url_.token;
  auto evil = Http("POST", url_.base + "/api/messages", {auth, "Origin: http://evil.example"}, body);
  EXPECT_EQ(evil.code, 403) << evil.body;
  EXPECT_NE(evil.body.find("another origin"), std::string::npos) << evil.body;
  EXPECT_EQ(Http("POST", url_.base + "/api/messages", {auth, "Origin: null"}, body).code, 403);
  const std::string own = url_.base.substr(0, url_.base.find('/', 7));  // http://127.0.0.1:PORT
  EXPECT_EQ(Http("POST", url_.base + "/api/messages", {auth, "Origin: " + own}, body).code, 201);
  EXPECT_EQ(Http("POST", url_.base + "/api/messages", {auth}, body).code, 201);
  EXPECT_EQ(Http("GET", url_.base + "/api/team", {auth, "Origin: http://evil.example"}).code, 200);
}

// Worktree isolation's merges (DESIGN §12): listed, and one waiting for
// review decided from the page; what cannot be decided is one clear error.
TEST_F(DashboardTest, MergesAreListedAndDecided) {
  Up();
  Workspace ws(ws_.path());
  Member w1;
  w1.name = "w1";
  w1.backend = MemberBackend::kExternal;
  w1.status = MemberStatus::kShutdown;  // nobody to wait for at `down`
  ASSERT_TRUE(Roster(ws).AddMember("dash", w1).ok());
  MergeStore store(ws, "dash");
  MergeRequest m;
  m.task = 1;
  m.owner = "w1";
  m.branch = "mates/w1@dash";
  m.commit = std::string(40, 'a');
  m.status = MergeState::kFailed;
  m.output = "the build is broken";
  ASSERT_TRUE(store.Create(m).ok());
  m.status = MergeState::kReview;
  auto review = store.Create(m);
  ASSERT_TRUE(review.ok());
  auto list = Get("/api/merges");
  ASSERT_EQ(list.code, 200) << list.body;
  ASSERT_EQ(list.json()["merges"].size(), 2u) << list.body;
  EXPECT_EQ(list.json()["merges"][0]["output"], "the build is broken");
  EXPECT_EQ(list.json()["merges"][1]["status"], "review");
  EXPECT_EQ(Post("/api/merges/1", R"({"approve":true})").code, 409);  // failed, not in review
  EXPECT_EQ(Post("/api/merges/9", R"({"approve":true})").code, 404);
  EXPECT_EQ(Post("/api/merges/x", R"({"approve":true})").code, 400);
  EXPECT_EQ(Post("/api/merges/2", R"({"feedback":"no decision"})").code, 400);
  auto rejected = Post("/api/merges/2", R"({"approve":false,"feedback":"split it"})");
  ASSERT_EQ(rejected.code, 200) << rejected.body;
  EXPECT_EQ(rejected.json()["status"], "rejected");
  EXPECT_EQ(rejected.json()["decided_by"], "user");
  // The owner heard it from merge-queue.
  auto inbox = Mates({"inbox", "--team", "dash", "w1", "--peek"});
  EXPECT_NE(inbox.out.find("merge rejected by user: split it"), std::string::npos) << inbox.out << inbox.err;
}

TEST_F(DashboardTest, PortChoicesAndNoDashboard) {
  auto busy = Mates({"up", "--team", "dash", "--provider", "scripted", "--scenario",
                     testing::ScenarioFixture("team_dashboard.yaml"), "--dashboard-port", "70000"});
  EXPECT_EQ(busy.exit_code, 2) << busy.err;
  auto both = Mates({"up", "--team", "dash", "--provider", "scripted", "--scenario",
                     testing::ScenarioFixture("team_dashboard.yaml"), "--dashboard-port", "8080", "--no-dashboard"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  auto none = Mates({"up", "--team", "dash", "--provider", "scripted", "--scenario",
                     testing::ScenarioFixture("team_dashboard.yaml"), "--no-dashboard"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out.find("dashboard http"), std::string::npos) << none.out;
  auto st = ParseJson(Mates({"status", "--team", "dash", "--json"}).out);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)["host"]["dashboard"], "");
  ASSERT_EQ(Mates({"down", "--team", "dash"}).exit_code, 0);

  // A port that is taken: `up` fails and says so; no host is left.
  auto other = testing::StartMates(ws_.path(), {"dashboard", "--team", "dash"});
  auto line = other.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  std::string port = line->substr(line->rfind("127.0.0.1:") + 10);
  port = port.substr(0, port.find('/'));
  auto taken = Mates({"up", "--team", "dash", "--provider", "scripted", "--scenario",
                      testing::ScenarioFixture("team_dashboard.yaml"), "--dashboard-port", port});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_NE(taken.err.find("127.0.0.1:" + port), std::string::npos) << taken.err;
  EXPECT_NE(Mates({"status", "--team", "dash"}).out.find("not hosted"), std::string::npos);
  ::kill(other.pid(), SIGTERM);
  EXPECT_EQ(other.Wait().exit_code, 0);
}

TEST_F(DashboardTest, TheDashboardCommandIsReadOnlyAndReadsArchives) {
  ASSERT_EQ(Mates({"team", "create", "dash", "--members", "alice"}).exit_code, 0);
  ASSERT_EQ(Mates({"send", "--team", "dash", "--to", "alice", "hello from the archive"}).exit_code, 0);
  auto serve = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"dashboard", "--team", "dash"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::StartMates(ws_.path(), args);
  };
  {
    auto p = serve({});
    auto line = p.ReadLine(DeadlineIn(10));
    ASSERT_TRUE(line.ok());
    ASSERT_NE(line->find("read-only: http://127.0.0.1:"), std::string::npos) << *line;
    url_ = SplitUrl(line->substr(line->find("http://")));
    auto team = Get("/api/team");
    ASSERT_EQ(team.code, 200) << team.body;
    EXPECT_EQ(team.json()["read_only"], true);
    auto no = Post("/api/messages", R"({"to":"alice","content":"hi"})");
    EXPECT_EQ(no.code, 403);
    EXPECT_NE(no.body.find("read-only"), std::string::npos) << no.body;
    EXPECT_EQ(Post("/api/tasks", R"({"subject":"x"})").code, 403);
    EXPECT_EQ(team.json()["levers"], false);
    EXPECT_EQ(Post("/api/agents/alice/restart", "{}").code, 403);
    EXPECT_EQ(Http("GET", url_.base + "/api/team").code, 401);
    ::kill(p.pid(), SIGTERM);
    EXPECT_EQ(p.Wait().exit_code, 0);
  }
  ASSERT_EQ(Mates({"team", "delete", "dash"}).exit_code, 0);
  auto p = serve({"--archived"});
  auto line = p.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  ASSERT_NE(line->find("(archived "), std::string::npos) << *line;
  url_ = SplitUrl(line->substr(line->find("http://")));
  auto team = Get("/api/team").json();
  EXPECT_TRUE(team["archived"].is_string()) << team;
  auto msgs = Get("/api/messages").json();
  ASSERT_EQ(msgs["messages"].size(), 1u) << msgs;
  EXPECT_EQ(msgs["messages"][0]["content"], "hello from the archive");
  // Its post-mortem, as `mates report --html` makes it, behind the token.
  auto page = Get("/report");
  ASSERT_EQ(page.code, 200) << page.body;
  EXPECT_NE(page.body.find("<h1>Team dash</h1>"), std::string::npos);
  EXPECT_NE(page.body.find("hello from the archive"), std::string::npos);
  EXPECT_NE(page.body.find("archived "), std::string::npos);
  EXPECT_EQ(Http("GET", url_.base + "/report").code, 401);
  ::kill(p.pid(), SIGINT);
  EXPECT_EQ(p.Wait().exit_code, 0);

  auto missing = Mates({"dashboard", "--team", "nosuch"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nosuch"), std::string::npos) << missing.err;
  EXPECT_EQ(Mates({"dashboard", "--team", "dash", "--port", "-3"}).exit_code, 2);
}

}  // namespace
}  // namespace mates
