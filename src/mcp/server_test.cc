// The MCP server on strings: the protocol (negotiation, errors of every
// kind, notifications, cancellation of a waiting call) with made-up tools,
// then the team's tools on a real workspace.
#include "mcp/server.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "mcp/team_tools.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates::mcp {
namespace {

// What the server wrote, one parsed frame each, with a wait for the answer
// to an id.
class Client {
 public:
  std::function<void(const std::string&)> Writer() {
    return [this](const std::string& frame) {
      auto j = ParseJson(frame);
      ASSERT_TRUE(j.ok()) << frame;
      ASSERT_EQ(frame.find('\n'), std::string::npos);
      {
        std::lock_guard<std::mutex> lock(mu_);
        frames_.push_back(*j);
      }
      cv_.notify_all();
    };
  }
  // The latest answer to `id` (waits up to 30 s for one).
  Json AnswerTo(const Json& id) {
    std::unique_lock<std::mutex> lock(mu_);
    Json found;
    cv_.wait_for(lock, std::chrono::seconds(30), [&] {
      for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
        if (f->contains("id") && (*f)["id"] == id) {
          found = *f;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return frames_.size();
  }
  bool Answered(const Json& id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& f : frames_) {
      if (f.contains("id") && f["id"] == id) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Json> frames_;
};

std::string Request(const Json& id, const std::string& method, const Json& params = Json::object()) {
  return DumpJson(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
}

std::string Call(const Json& id, const std::string& tool, const Json& arguments = Json::object()) {
  return Request(id, "tools/call", Json{{"name", tool}, {"arguments", arguments}});
}

const char* kInit = R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

int ErrorCode(const Json& answer) { return answer.contains("error") ? answer["error"]["code"].get<int>() : 0; }
std::string Text(const Json& answer) { return answer["result"]["content"][0]["text"]; }
bool IsError(const Json& answer) { return answer["result"]["isError"].get<bool>(); }

ToolSpec Echo() {
  ToolSpec t;
  t.name = "echo";
  t.description = "Says back its text";
  t.input_schema = Json::parse(R"({"type":"object","properties":{"text":{"type":"string"}}})");
  t.run = [](const Json& a, CallContext&) -> ToolOutcome {
    if (!a.contains("text")) return {"no text", true};
    return {a["text"].get<std::string>(), false};
  };
  return t;
}

ToolSpec Thrower() {
  ToolSpec t;
  t.name = "thrower";
  t.description = "Throws";
  t.input_schema = Json{{"type", "object"}};
  t.run = [](const Json&, CallContext&) -> ToolOutcome { throw std::runtime_error("boom"); };
  return t;
}

// Waits until cancelled (or 30 s); says when it started.
ToolSpec Sleeper(std::promise<void>* started, std::atomic<bool>* ended) {
  ToolSpec t;
  t.name = "sleeper";
  t.description = "Waits";
  t.input_schema = Json{{"type", "object"}};
  t.run = [started, ended](const Json&, CallContext& call) -> ToolOutcome {
    uint64_t seen = call.waker->generation();
    started->set_value();
    Deadline d = DeadlineIn(30);
    while (!call.cancelled.load() && !Expired(d)) seen = call.waker->WaitChange(seen, d);
    ended->store(true);
    return {call.cancelled.load() ? "cancelled" : "slept", false};
  };
  t.may_wait = [](const Json&) { return true; };
  return t;
}

TEST(McpServerTest, NegotiatesTheRevisionAndListsTools) {
  Client c;
  Server s({.version = "9"}, {Echo()}, c.Writer());
  s.HandleFrame(Request(1, "tools/list"));
  EXPECT_EQ(ErrorCode(c.AnswerTo(1)), kInvalidRequest) << "tools before initialize";
  s.HandleFrame(kInit);
  Json init = c.AnswerTo(0);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "mates");
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));
  s.HandleFrame(Request(2, "initialize", Json{{"protocolVersion", "2025-06-18"}}));
  EXPECT_EQ(ErrorCode(c.AnswerTo(2)), kInvalidRequest) << "initialize twice";
  s.HandleFrame(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  s.HandleFrame(Request("p", "ping"));
  EXPECT_EQ(c.AnswerTo("p")["result"], Json::object());
  s.HandleFrame(Request(3, "tools/list"));
  Json list = c.AnswerTo(3);
  ASSERT_EQ(list["result"]["tools"].size(), 1u);
  EXPECT_EQ(list["result"]["tools"][0]["name"], "echo");
  EXPECT_EQ(list["result"]["tools"][0]["inputSchema"]["type"], "object");
  s.HandleFrame(Request(4, "tools/list", Json{{"cursor", "x"}}));
  EXPECT_EQ(ErrorCode(c.AnswerTo(4)), kInvalidParams);

  // A revision we do not speak is answered with our newest.
  Client c2;
  Server s2({}, {}, c2.Writer());
  s2.HandleFrame(Request(0, "initialize", Json{{"protocolVersion", "2024-11-05"}}));
  EXPECT_EQ(c2.AnswerTo(0)["result"]["protocolVersion"], kProtocolVersions.front());
}

TEST(McpServerTest, EveryBadFrameGetsOneErrorAndTheServerGoesOn) {
  Client c;
  Server s({}, {Echo(), Thrower()}, c.Writer());
  s.HandleFrame(kInit);
  c.AnswerTo(0);
  struct Case {
    std::string frame;
    Json id;
    int code;
  };
  std::vector<Case> cases = {
      {"{not json", nullptr, kParseError},
      {std::string(kMaxFrameBytes + 1, ' '), nullptr, kParseError},
      {"[" + Request(1, "ping") + "]", nullptr, kInvalidRequest},
      {"42", nullptr, kInvalidRequest},
      {R"({"id":5,"method":"ping"})", 5, kInvalidRequest},
      {R"({"jsonrpc":"1.0","id":6,"method":"ping"})", 6, kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", nullptr, kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", nullptr, kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":7,"method":3})", 7, kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":8})", 8, kInvalidRequest},
      {R"({"jsonrpc":"2.0","id":9,"method":"tools/list","params":[1]})", 9, kInvalidParams},
      {Request(10, "resources/list"), 10, kMethodNotFound},
      {Request(11, "tools/call", Json{{"arguments", Json::object()}}), 11, kInvalidParams},
      {Call(12, "nope"), 12, kInvalidParams},
      {Request(13, "tools/call", Json{{"name", "echo"}, {"arguments", "x"}}), 13, kInvalidParams},
      {std::string(200, '[') + std::string(200, ']'), nullptr, kParseError},
  };
  for (const auto& k : cases) {
    size_t before = c.count();
    s.HandleFrame(k.frame);
    ASSERT_EQ(c.count(), before + 1) << k.frame.substr(0, 80);
    // The last frame is the answer; for id null there may be several.
    Json a = c.AnswerTo(k.id);
    EXPECT_EQ(ErrorCode(a), k.code) << k.frame.substr(0, 80);
  }
  // Notifications and responses are never answered, whatever they hold.
  size_t before = c.count();
  s.HandleFrame(R"({"jsonrpc":"2.0","method":"notifications/whatever","params":[1]})");
  s.HandleFrame(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}})");
  s.HandleFrame(R"({"jsonrpc":"2.0","id":99,"result":{}})");
  EXPECT_EQ(c.count(), before);
  // Failures of a tool are results, not protocol errors.
  s.HandleFrame(Call(20, "echo", Json::object()));
  Json no_text = c.AnswerTo(20);
  EXPECT_TRUE(IsError(no_text));
  EXPECT_EQ(Text(no_text), "no text");
  s.HandleFrame(Call(21, "thrower"));
  Json thrown = c.AnswerTo(21);
  EXPECT_TRUE(IsError(thrown));
  EXPECT_NE(Text(thrown).find("boom"), std::string::npos);
  s.HandleFrame(Call("s", "echo", Json{{"text", "still here"}}));
  EXPECT_EQ(Text(c.AnswerTo("s")), "still here");
}

TEST(McpServerTest, AWaitingCallLeavesTheServerFreeAndIsCancelled) {
  Client c;
  std::promise<void> started;
  std::atomic<bool> ended{false};
  Server s({}, {Echo(), Sleeper(&started, &ended)}, c.Writer());
  s.HandleFrame(kInit);
  c.AnswerTo(0);
  s.HandleFrame(Call("long", "sleeper"));
  started.get_future().wait();
  // The same id again while it waits is refused.
  s.HandleFrame(Call("long", "echo", Json{{"text", "x"}}));
  EXPECT_EQ(ErrorCode(c.AnswerTo("long")), kInvalidRequest);
  // The reader is free: ping and another call are answered meanwhile.
  s.HandleFrame(Request(1, "ping"));
  EXPECT_TRUE(c.AnswerTo(1).contains("result"));
  EXPECT_EQ(s.waiting_calls(), 1u);
  size_t before = c.count();
  s.HandleFrame(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"long","reason":"user"}})");
  ASSERT_TRUE(testing::WaitUntil([&] { return ended.load(); }));
  s.Shutdown();  // joins the call's thread
  EXPECT_EQ(c.count(), before) << "a cancelled request is not answered";
}

TEST(McpServerTest, ShutdownCancelsWaitingCalls) {
  Client c;
  std::promise<void> started;
  std::atomic<bool> ended{false};
  auto s = std::make_unique<Server>(Server::Options{}, std::vector<ToolSpec>{Sleeper(&started, &ended)}, c.Writer());
  s->HandleFrame(kInit);
  s->HandleFrame(Call(1, "sleeper"));
  started.get_future().wait();
  s.reset();  // the client went away: the call is cancelled and joined, fast
  EXPECT_TRUE(ended.load());
  EXPECT_FALSE(c.Answered(1));
}

class McpTeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Roster(ws_).CreateTeam("t", "lead").ok());
    for (const char* name : {"w1", "w2"}) {
      Member m;
      m.name = name;
      ASSERT_TRUE(Roster(ws_).AddMember("t", m).ok());
    }
  }
  std::unique_ptr<Server> ServerAs(const std::string& name, Client& c) {
    TeamIdentity who{ws_, "t", name, *store_};
    auto s = std::make_unique<Server>(Server::Options{.instructions = TeamInstructions(who)}, TeamTools(who),
                                      c.Writer());
    s->HandleFrame(kInit);
    c.AnswerTo(0);
    return s;
  }
  testing::TempDir dir_;
  Workspace ws_{dir_.path()};
  std::unique_ptr<TeamStore> store_ = FileTeamStore(ws_, testing::TestEnv());
};

TEST_F(McpTeamTest, ListsTheEightTools) {
  Client c;
  auto s = ServerAs("w1", c);
  s->HandleFrame(Request(1, "tools/list"));
  std::vector<std::string> names;
  Json list = c.AnswerTo(1);
  for (const auto& t : list["result"]["tools"]) {
    names.push_back(t["name"]);
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_GT(t["description"].get<std::string>().size(), 40u) << t["name"];
  }
  EXPECT_EQ(names, (std::vector<std::string>{"send_message", "read_inbox", "list_tasks", "get_task", "create_task",
                                             "update_task", "claim_task", "team_status"}));
}

TEST_F(McpTeamTest, MessagesGoThroughTheTeamsInboxes) {
  Client c;
  auto s = ServerAs("w1", c);
  s->HandleFrame(Call(1, "send_message", Json{{"recipient", "lead"}, {"content", "hello from outside"}}));
  Json sent = c.AnswerTo(1);
  ASSERT_FALSE(IsError(sent)) << Text(sent);
  auto got = Mailbox(ws_.TeamDir("t"), "lead").Drain();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].sender, "w1");
  EXPECT_EQ((*got)[0].content, "hello from outside");
  // Role rules are the built-in tool's: a teammate cannot ask for a shutdown.
  s->HandleFrame(Call(2, "send_message", Json{{"type", "shutdown_request"}, {"recipient", "w2"}}));
  EXPECT_TRUE(IsError(c.AnswerTo(2)));
  s->HandleFrame(Call(3, "send_message", Json{{"recipient", "nobody"}, {"content", "x"}}));
  EXPECT_TRUE(IsError(c.AnswerTo(3)));

  // An empty inbox, then one with a message, drained once.
  s->HandleFrame(Call(4, "read_inbox"));
  EXPECT_EQ(Text(c.AnswerTo(4)), "No new messages.");
  SendRequest r;
  r.sender = "lead";
  r.recipient = "w1";
  r.content = "do task 1";
  ASSERT_TRUE(Messenger(ws_, "t").Send(r).ok());
  s->HandleFrame(Call(5, "read_inbox", Json{{"peek", true}}));
  EXPECT_NE(Text(c.AnswerTo(5)).find("do task 1"), std::string::npos);
  s->HandleFrame(Call(6, "read_inbox"));
  std::string text = Text(c.AnswerTo(6));
  EXPECT_NE(text.find("teammate_id=\"lead\""), std::string::npos) << text;
  EXPECT_NE(text.find("do task 1"), std::string::npos);
  s->HandleFrame(Call(7, "read_inbox"));
  EXPECT_EQ(Text(c.AnswerTo(7)), "No new messages.");
  s->HandleFrame(Call(8, "read_inbox", Json{{"wait_seconds", -1}}));
  EXPECT_TRUE(IsError(c.AnswerTo(8)));
}

TEST_F(McpTeamTest, AWaitingReadWakesOnTheMessage) {
  Client c;
  auto s = ServerAs("w1", c);
  s->HandleFrame(Call("r", "read_inbox", Json{{"wait_seconds", 60}}));
  ASSERT_EQ(s->waiting_calls(), 1u);
  SendRequest r;
  r.sender = "w2";
  r.recipient = "w1";
  r.content = "ping from w2";
  ASSERT_TRUE(Messenger(ws_, "t").Send(r).ok());
  auto start = std::chrono::steady_clock::now();
  Json a = c.AnswerTo("r");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20)) << "woken, not timed out";
  EXPECT_NE(Text(a).find("ping from w2"), std::string::npos);
}

TEST_F(McpTeamTest, ACancelledReadIsNotAnsweredAndTheNextReadsOn) {
  Client c;
  auto s = ServerAs("w1", c);
  s->HandleFrame(Call("r", "read_inbox", Json{{"wait_seconds", 60}}));
  s->HandleFrame(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}})");
  ASSERT_TRUE(testing::WaitUntil([&] { return s->waiting_calls() == 0; }));
  EXPECT_FALSE(c.Answered("r"));
  SendRequest r;
  r.sender = "lead";
  r.recipient = "w1";
  r.content = "after the cancel";
  ASSERT_TRUE(Messenger(ws_, "t").Send(r).ok());
  s->HandleFrame(Call(2, "read_inbox"));
  EXPECT_NE(Text(c.AnswerTo(2)).find("after the cancel"), std::string::npos);
}

TEST_F(McpTeamTest, TasksFollowTheBoardsRules) {
  Client lead_c, w1_c;
  auto lead = ServerAs("lead", lead_c);
  auto w1 = ServerAs("w1", w1_c);
  lead->HandleFrame(Call(1, "create_task", Json{{"subject", "first"}}));
  EXPECT_NE(Text(lead_c.AnswerTo(1)).find("#1"), std::string::npos);
  lead->HandleFrame(Call(2, "create_task", Json{{"subject", "second"}, {"blockedBy", Json::array({1})}}));
  EXPECT_FALSE(IsError(lead_c.AnswerTo(2)));
  // The blocked task cannot be claimed; the next claimable one is #1.
  w1->HandleFrame(Call(3, "claim_task", Json{{"task_id", 2}}));
  EXPECT_TRUE(IsError(w1_c.AnswerTo(3)));
  w1->HandleFrame(Call(4, "claim_task"));
  EXPECT_NE(Text(w1_c.AnswerTo(4)).find("Claimed task #1"), std::string::npos);
  w1->HandleFrame(Call(5, "claim_task"));
  EXPECT_NE(Text(w1_c.AnswerTo(5)).find("Nothing to claim"), std::string::npos);
  // w2 may not complete w1's task; w1 may.
  Client w2_c;
  auto w2 = ServerAs("w2", w2_c);
  w2->HandleFrame(Call(6, "update_task", Json{{"task_id", 1}, {"status", "completed"}}));
  EXPECT_TRUE(IsError(w2_c.AnswerTo(6)));
  w1->HandleFrame(Call(7, "update_task", Json{{"task_id", "1"}, {"status", "completed"}}));
  EXPECT_FALSE(IsError(w1_c.AnswerTo(7)));
  w2->HandleFrame(Call(8, "list_tasks"));
  EXPECT_NE(Text(w2_c.AnswerTo(8)).find("ready to claim: #2"), std::string::npos);
  w2->HandleFrame(Call(9, "get_task", Json{{"task_id", 1}}));
  EXPECT_NE(Text(w2_c.AnswerTo(9)).find("\"completed\""), std::string::npos);
  w2->HandleFrame(Call(10, "get_task", Json{{"task_id", "x"}}));
  EXPECT_TRUE(IsError(w2_c.AnswerTo(10)));
  w2->HandleFrame(Call(11, "team_status"));
  std::string status = Text(w2_c.AnswerTo(11));
  EXPECT_NE(status.find("1 pending, 0 in progress, 1 completed"), std::string::npos) << status;
  EXPECT_NE(status.find("w1 (teammate)"), std::string::npos) << status;
}

TEST_F(McpTeamTest, ANonMemberOrAMissingTeamIsAnErrorResult) {
  Client c;
  auto s = ServerAs("stranger", c);
  s->HandleFrame(Call(1, "list_tasks"));
  Json a = c.AnswerTo(1);
  EXPECT_TRUE(IsError(a));
  EXPECT_NE(Text(a).find("not a member"), std::string::npos);
  ASSERT_TRUE(Roster(ws_).DeleteTeam("t").ok());
  Client c2;
  auto s2 = ServerAs("w1", c2);
  s2->HandleFrame(Call(2, "read_inbox"));
  EXPECT_TRUE(IsError(c2.AnswerTo(2)));
}

}  // namespace
}  // namespace mates::mcp
