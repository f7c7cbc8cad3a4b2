// `mates mcp --http` (DESIGN §23): the team's tools over streamable HTTP,
// from a real `mates` process to a real HTTP client — sessions, a call that
// waits and one cancelled, the GET stream, and every request it must
// refuse (token, Host, Origin, sessions, bodies, methods).
#include <gtest/gtest.h>
#include <httplib.h>

#include <csignal>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/json.h"
#include "core/subprocess.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::MatesBinary;
using testing::RunMates;
using testing::StartMates;
using testing::TempDir;

// cpp-httplib 0.11.4's client (Debian's, built as a library) sends with no
// MSG_NOSIGNAL: a body the server refuses mid-upload and closes on can
// raise SIGPIPE in this process, which would end the test rather than fail
// its request. The server's side (our front door) sends with MSG_NOSIGNAL.
const bool kClientSeesEpipe = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

// A `mates mcp --http` serving `member` of team t, and a client of it.
class Served {
 public:
  Served(const fs::path& ws, const std::string& member)
      : proc_(StartMates(ws, {"mcp", "--team", "t", "--as", member, "--http"})) {
    auto line = proc_.ReadLine(DeadlineIn(30));
    EXPECT_TRUE(line.ok()) << (line.ok() ? "" : line.status().message());
    if (!line.ok()) return;
    printed_ = *line;
    url_ = printed_.substr(printed_.rfind(' ') + 1);
    size_t port_at = url_.find("127.0.0.1:") + 10;
    port_ = std::atoi(url_.c_str() + port_at);
    token_ = url_.substr(url_.find("?token=") + 7);
  }
  ~Served() {
    proc_.Signal(SIGTERM);
    SubprocessResult r = proc_.Wait();
    EXPECT_EQ(r.exit_code, 0) << "it ends cleanly on SIGTERM";
  }

  httplib::Client Client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  httplib::Headers Auth(const std::string& session = "") const {
    httplib::Headers h{{"Authorization", "Bearer " + token_}, {"Accept", "application/json, text/event-stream"}};
    if (!session.empty()) h.emplace("Mcp-Session-Id", session);
    return h;
  }
  // An initialized session's id.
  std::string Initialize() {
    auto r = Client().Post("/mcp", Auth(), Rpc(1, "initialize", {{"protocolVersion", "2025-11-25"},
                                                                  {"capabilities", Json::object()},
                                                                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                           "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    if (!r) return "";
    EXPECT_EQ(Json::parse(r->body)["result"]["protocolVersion"], "2025-11-25");
    std::string sid = r->get_header_value("Mcp-Session-Id");
    auto n = Client().Post("/mcp", Auth(sid), R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                           "application/json");
    EXPECT_TRUE(n && n->status == 202);
    return sid;
  }
  static std::string Rpc(int id, const std::string& method, const Json& params = Json::object()) {
    return DumpJson(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  }

  const std::string& printed() const { return printed_; }
  const std::string& url() const { return url_; }
  const std::string& token() const { return token_; }
  int port() const { return port_; }

 private:
  Subprocess proc_;
  std::string printed_, url_, token_;
  int port_ = 0;
};

void MakeTeam(const TempDir& ws) {
  ASSERT_EQ(RunMates(ws.path(), {"team", "create", "t", "--members", "alice,bob"}).exit_code, 0);
}

TEST(McpHttpTest, TheTeamsToolsInSessionsWithAWaitingCallAndTheStream) {
  TempDir ws;
  MakeTeam(ws);
  Served s(ws.path(), "alice");
  EXPECT_NE(s.printed().find("serving team t as alice over MCP"), std::string::npos) << s.printed();
  const std::string sid = s.Initialize();
  ASSERT_FALSE(sid.empty());
  auto tools = s.Client().Post("/mcp", s.Auth(sid), Served::Rpc(2, "tools/list"), "application/json");
  ASSERT_TRUE(tools && tools->status == 200);
  EXPECT_EQ(Json::parse(tools->body)["result"]["tools"].size(), 8u);

  // A call acts as the member served.
  auto sent = s.Client().Post("/mcp", s.Auth(sid),
                              Served::Rpc(3, "tools/call",
                                          {{"name", "send_message"},
                                           {"arguments", {{"type", "message"}, {"recipient", "bob"},
                                                          {"content", "over http"}, {"summary", "hi"}}}}),
                              "application/json");
  ASSERT_TRUE(sent && sent->status == 200) << (sent ? sent->body : "");
  auto inbox = RunMates(ws.path(), {"inbox", "--team", "t", "bob", "--json"});
  EXPECT_NE(inbox.out.find("\"sender\":\"alice\""), std::string::npos) << inbox.out;
  EXPECT_NE(inbox.out.find("over http"), std::string::npos);

  // A call that waits holds its POST until a message comes; the session
  // goes on meanwhile.
  auto waiting = std::async(std::launch::async, [&] {
    return s.Client().Post("/mcp", s.Auth(sid),
                           Served::Rpc(4, "tools/call", {{"name", "read_inbox"}, {"arguments", {{"wait_seconds", 60}}}}),
                           "application/json");
  });
  auto ping = s.Client().Post("/mcp", s.Auth(sid), Served::Rpc(5, "ping"), "application/json");
  ASSERT_TRUE(ping && ping->status == 200);
  ASSERT_EQ(RunMates(ws.path(), {"send", "--team", "t", "--from", "bob", "--to", "alice", "back to you"}).exit_code, 0);
  auto read = waiting.get();
  ASSERT_TRUE(read && read->status == 200);
  EXPECT_NE(read->body.find("back to you"), std::string::npos) << read->body;

  // The GET stream: an event with an id and a retry first.
  std::string stream;
  auto got = s.Client().Get("/mcp", s.Auth(sid), [&](const char* data, size_t n) {
    stream.append(data, n);
    return stream.find("\n\n") == std::string::npos;  // the first event is enough
  });
  EXPECT_NE(stream.find("id: "), std::string::npos) << stream;
  EXPECT_NE(stream.find("retry: 3000"), std::string::npos) << stream;

  // DELETE ends it.
  auto del = s.Client().Delete("/mcp", s.Auth(sid));
  ASSERT_TRUE(del && del->status == 200);
  auto after = s.Client().Post("/mcp", s.Auth(sid), Served::Rpc(6, "ping"), "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 404) << "an ended session is not known";
}

TEST(McpHttpTest, ACancelledCallIsAnsweredWithNoResponseAndTakesNothing) {
  TempDir ws;
  MakeTeam(ws);
  Served s(ws.path(), "alice");
  const std::string sid = s.Initialize();
  // The same call twice at once, one id: whichever comes second is refused
  // at once (both would wait for one answer); the other waits.
  auto ask = [&] {
    return std::async(std::launch::async, [&] {
      return s.Client().Post("/mcp", s.Auth(sid),
                             Served::Rpc(7, "tools/call", {{"name", "read_inbox"}, {"arguments", {{"wait_seconds", 600}}}}),
                             "application/json");
    });
  };
  auto first = ask();
  auto second = ask();
  std::future<httplib::Result>* refused = nullptr;
  while (refused == nullptr) {
    if (first.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) refused = &first;
    if (refused == nullptr && second.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) {
      refused = &second;
    }
  }
  auto& waiting = refused == &first ? second : first;
  auto dup = refused->get();
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->status, 400);
  EXPECT_NE(dup->body.find("already in use"), std::string::npos) << dup->body;
  // A cancel that comes before the call is made is dropped, so it is sent
  // again until the waiting POST ends.
  auto status = std::future_status::timeout;
  for (int i = 0; i < 600 && status == std::future_status::timeout; ++i) {
    auto c = s.Client().Post("/mcp", s.Auth(sid),
                             R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})",
                             "application/json");
    ASSERT_TRUE(c && c->status == 202);
    status = waiting.wait_for(std::chrono::milliseconds(100));
  }
  auto r = waiting.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(r->body, "");
  ASSERT_EQ(RunMates(ws.path(), {"send", "--team", "t", "--from", "bob", "--to", "alice", "kept"}).exit_code, 0);
  auto peek = RunMates(ws.path(), {"inbox", "--team", "t", "alice", "--peek"});
  EXPECT_NE(peek.out.find("kept"), std::string::npos) << "the cancelled read took nothing";
}

TEST(McpHttpTest, EveryRequestItMustRefuseIsRefusedClearly) {
  TempDir ws;
  MakeTeam(ws);
  Served s(ws.path(), "alice");
  auto c = s.Client();
  const std::string init = Served::Rpc(1, "initialize", {{"protocolVersion", "2025-06-18"}});
  auto status = [&](const httplib::Result& r) { return r ? r->status : -1; };

  auto no_token = c.Post("/mcp", init, "application/json");
  EXPECT_EQ(status(no_token), 401);
  EXPECT_EQ(no_token->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(status(c.Post("/mcp", {{"Authorization", "Bearer " + std::string(43, 'A')}}, init, "application/json")), 401);
  EXPECT_EQ(status(c.Post(("/mcp?token=" + s.token()).c_str(), init, "application/json")), 200) << "?token= works";
  // DNS rebinding: another Host, or a page of another site, token or not.
  httplib::Headers evil_host = s.Auth();
  evil_host.emplace("Host", "evil.example.com");
  EXPECT_EQ(status(c.Post("/mcp", evil_host, init, "application/json")), 403);
  httplib::Headers evil_origin = s.Auth();
  evil_origin.emplace("Origin", "http://evil.example.com");
  EXPECT_EQ(status(c.Post("/mcp", evil_origin, init, "application/json")), 403);
  httplib::Headers own_origin = s.Auth();
  own_origin.emplace("Origin", "http://127.0.0.1:" + std::to_string(s.port()));
  EXPECT_EQ(status(c.Post("/mcp", own_origin, init, "application/json")), 200);

  // Sessions.
  auto no_session = c.Post("/mcp", s.Auth(), Served::Rpc(2, "tools/list"), "application/json");
  EXPECT_EQ(status(no_session), 400);
  EXPECT_NE(no_session->body.find("Mcp-Session-Id is missing"), std::string::npos) << no_session->body;
  EXPECT_EQ(status(c.Post("/mcp", s.Auth("nope"), Served::Rpc(2, "tools/list"), "application/json")), 404);
  EXPECT_EQ(status(c.Delete("/mcp", s.Auth("nope"))), 404);
  const std::string sid = s.Initialize();
  EXPECT_EQ(status(c.Post("/mcp", s.Auth(sid), init, "application/json")), 400) << "initialize inside a session";

  // Bodies and headers.
  auto not_json = c.Post("/mcp", s.Auth(sid), "{not json", "application/json");
  EXPECT_EQ(status(not_json), 400);
  EXPECT_EQ(Json::parse(not_json->body)["error"]["code"], -32700);
  EXPECT_EQ(status(c.Post("/mcp", s.Auth(sid), "[1,2]", "application/json")), 400);
  httplib::Headers future = s.Auth(sid);
  future.emplace("MCP-Protocol-Version", "2099-01-01");
  EXPECT_EQ(status(c.Post("/mcp", future, Served::Rpc(3, "ping"), "application/json")), 400);
  EXPECT_EQ(status(c.Post("/mcp", s.Auth(sid), std::string(5 << 20, ' '), "application/json")), 413);
  // Chunked, with no length to refuse it by: still bounded.
  size_t sent = 0;
  auto chunked = c.Post(
      "/mcp", s.Auth(sid),
      [&](size_t, httplib::DataSink& sink) {
        std::string piece(1 << 20, ' ');
        if (sent >= (64u << 20)) {
          sink.done();
          return true;
        }
        if (!sink.write(piece.data(), piece.size())) return false;
        sent += piece.size();  // counted once written: a piece refused was not sent
        return true;
      },
      "application/json");
  // Refused: a 413, or, when the server's answer and close overtook the
  // upload (a slow client, under TSan: the front door drops a refused
  // body's rest for its linger, then closes), a write that failed before
  // the 64 MiB were sent; either way the server stays up.
  // (A write that fails ends the upload from the body's provider: the
  // client says Canceled then, or Write.)
  const bool cut = !chunked && (chunked.error() == httplib::Error::Write || chunked.error() == httplib::Error::Canceled);
  const bool refused = status(chunked) == 413 || (cut && sent < (64u << 20));
  EXPECT_TRUE(refused) << "status " << status(chunked) << ", " << sent << " bytes sent"
                       << (chunked ? "" : ", " + httplib::to_string(chunked.error()));
  EXPECT_EQ(status(c.Post("/mcp", s.Auth(sid), Served::Rpc(4, "ping"), "application/json")), 200);
  EXPECT_EQ(status(c.Put("/mcp", s.Auth(sid), "{}", "application/json")), 405);
  httplib::Headers stream_json = s.Auth(sid);
  stream_json.erase("Accept");
  stream_json.emplace("Accept", "application/json");
  EXPECT_EQ(status(c.Get("/mcp", stream_json)), 406);
}

TEST(McpHttpTest, AMemberIsServedOnceAndOptionsAreChecked) {
  TempDir ws;
  MakeTeam(ws);
  Served s(ws.path(), "alice");
  auto twice = RunMates(ws.path(), {"mcp", "--team", "t", "--as", "alice", "--http"});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("served already"), std::string::npos) << twice.err;
  auto port_alone = RunMates(ws.path(), {"mcp", "--team", "t", "--as", "bob", "--port", "8931"});
  EXPECT_EQ(port_alone.exit_code, 2);
  EXPECT_NE(port_alone.err.find("--port is for --http"), std::string::npos) << port_alone.err;
  auto taken = RunMates(ws.path(), {"mcp", "--team", "t", "--as", "bob", "--http", "--port", std::to_string(s.port())});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_NE(taken.err.find("cannot listen"), std::string::npos) << taken.err;
  // The sixteenth session after the first ends the one idle longest.
  const std::string first = s.Initialize();
  for (int i = 0; i < 16; ++i) ASSERT_FALSE(s.Initialize().empty());
  auto gone = s.Client().Post("/mcp", s.Auth(first), Served::Rpc(2, "ping"), "application/json");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
}

}  // namespace
}  // namespace mates
