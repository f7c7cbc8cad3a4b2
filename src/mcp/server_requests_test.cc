#include "mcp/server_requests.h"

#include <gtest/gtest.h>

#include <condition_variable>

namespace mates::mcp {
namespace {

Json AnswerTo(const std::string& frame, const ClientServices& services) {
  CancelToken stop;
  auto answer = ParseJson(AnswerServerRequest("srv", ParseFrame(frame), services, stop));
  EXPECT_TRUE(answer.ok());
  return answer.ok() ? *answer : Json();
}

const char kAsk[] =
    R"({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Who?","requestedSchema":)"
    R"({"type":"object","properties":{"name":{"type":"string","default":"Ann"},"age":{"type":"integer","default":30},)"
    R"("tags":{"type":"array","items":{"enum":["a","b"]},"default":["a"]},"note":{"type":"string"}}}}})";

TEST(McpServerRequestsTest, PingAndRootsAreAnsweredAndTheRestRefusedAtOnce) {
  ClientServices s;
  s.roots = {"/work/my repo"};
  EXPECT_EQ(AnswerTo(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", s),
            Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  EXPECT_EQ(AnswerTo(R"({"jsonrpc":"2.0","id":2,"method":"roots/list"})", s)["result"],
            Json::parse(R"({"roots":[{"uri":"file:///work/my%20repo","name":"my repo"}]})"));
  Json unknown = AnswerTo(R"({"jsonrpc":"2.0","id":"x","method":"resources/frobnicate"})", s);
  EXPECT_EQ(unknown["id"], "x");
  EXPECT_EQ(unknown["error"]["code"], kMethodNotFound);
  // No provider to sample with: not offered, so not served.
  Json sampling = AnswerTo(R"({"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}})", s);
  EXPECT_EQ(sampling["error"]["code"], kMethodNotFound);
  EXPECT_FALSE(ClientCapabilities(s).contains("sampling"));
  EXPECT_TRUE(ClientCapabilities(s).contains("elicitation"));
  EXPECT_TRUE(ClientCapabilities(s).contains("roots"));
}

TEST(McpServerRequestsTest, ElicitationFollowsThePolicyAndFillsInDefaults) {
  ClientServices s;
  s.elicitation = ElicitationPolicy::kDecline;
  EXPECT_EQ(AnswerTo(kAsk, s)["result"], Json::parse(R"({"action":"decline"})"));
  s.elicitation = ElicitationPolicy::kAcceptDefaults;
  EXPECT_EQ(AnswerTo(kAsk, s)["result"],
            Json::parse(R"({"action":"accept","content":{"name":"Ann","age":30,"tags":["a"]}})"));
  // A required field without a default cannot be made up: declined.
  std::string required = kAsk;
  required.replace(required.find(R"("type":"object",)"), 16, R"("type":"object","required":["note"],)");
  EXPECT_EQ(AnswerTo(required, s)["result"]["action"], "decline");
  // ask: what the person says, defaults filled in where they said nothing.
  s.elicitation = ElicitationPolicy::kAsk;
  EXPECT_EQ(AnswerTo(kAsk, s)["result"]["action"], "decline") << "nobody to ask: declined";
  Json asked_with;
  s.ask = [&](const std::string& server, const Json& params, double, const CancelToken&) -> Result<Json> {
    EXPECT_EQ(server, "srv");
    asked_with = params;
    return Json::parse(R"({"action":"accept","content":{"name":"Bo","note":"hi"}})");
  };
  EXPECT_EQ(AnswerTo(kAsk, s)["result"],
            Json::parse(R"({"action":"accept","content":{"name":"Bo","note":"hi","age":30,"tags":["a"]}})"));
  EXPECT_EQ(asked_with["message"], "Who?");
  s.ask = [](const std::string&, const Json&, double, const CancelToken&) -> Result<Json> {
    return Status::Timeout("nobody answered");
  };
  EXPECT_EQ(AnswerTo(kAsk, s)["result"]["action"], "decline");
  // Only form elicitations; a malformed one is an error, not silence.
  EXPECT_EQ(AnswerTo(R"({"jsonrpc":"2.0","id":5,"method":"elicitation/create","params":{"mode":"url","message":"m"}})", s)
                ["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(AnswerTo(R"({"jsonrpc":"2.0","id":6,"method":"elicitation/create","params":{}})", s)["error"]["code"],
            kInvalidParams);
}

TEST(McpServerRequestsTest, LongAnswersRunBesideEachOtherAndABusyClientSaysSoAtOnce) {
  auto s = std::make_shared<ClientServices>();
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  s->ask = [&](const std::string&, const Json&, double, const CancelToken& stop) -> Result<Json> {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++waiting;
    }
    cv.notify_all();
    stop.WaitFor(60);  // a person who never answers, until the session ends
    return Status::Cancelled("the session ended");
  };
  std::vector<Json> sent;
  ServerRequests requests("srv", s, [&](const std::string& frame) {
    std::lock_guard<std::mutex> lock(mu);
    sent.push_back(Json::parse(frame));
    cv.notify_all();
  });
  for (size_t i = 0; i < ServerRequests::kMaxAnswering; ++i) {
    std::string frame = kAsk;
    frame.replace(frame.find("\"e1\""), 4, std::to_string(i));
    requests.Handle(ParseFrame(frame));
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30),
                            [&] { return waiting == static_cast<int>(ServerRequests::kMaxAnswering); }));
  }
  requests.Handle(ParseFrame(R"({"jsonrpc":"2.0","id":"late","method":"ping"})"));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return sent.size() == 1; }));
    EXPECT_EQ(sent[0]["id"], "late");
    EXPECT_EQ(sent[0]["error"]["code"], kInternalError) << "refused while eight wait";
  }
  requests.Stop();  // the askers are cancelled: each question is declined
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(sent.size(), 1 + ServerRequests::kMaxAnswering);
  for (size_t i = 1; i < sent.size(); ++i) EXPECT_EQ(sent[i]["result"]["action"], "decline");
}

// What a server sends is input: schemas of the wrong shapes, an asker
// that answers nonsense or throws. Every request still gets an answer: a
// question mates cannot put is an error naming why, whatever the policy.
TEST(McpServerRequestsTest, HostileQuestionsAndAnswersStillGetAnAnswer) {
  ClientServices s;
  for (auto policy : {ElicitationPolicy::kAcceptDefaults, ElicitationPolicy::kDecline, ElicitationPolicy::kAsk}) {
    s.elicitation = policy;
    for (const char* schema :
         {R"("nope")", R"({"properties":7})", R"({"properties":{"a":7,"b":{"default":{"x":1}}}})",
          R"({"properties":{"a":{"type":"string","default":null}}})", R"({"properties":{"a":{"type":"object"}}})",
          R"({"properties":{"a":{"type":"string"}},"required":[1,null]})",
          R"({"properties":{"a":{"type":"integer","default":"x"}}})"}) {
      Json answer = AnswerTo(
          std::string(R"({"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","requestedSchema":)") +
              schema + "}}",
          s);
      EXPECT_EQ(answer["error"]["code"], kInvalidParams) << schema << " " << answer;
    }
  }
  s.elicitation = ElicitationPolicy::kAsk;
  s.ask = [](const std::string&, const Json&, double, const CancelToken&) -> Result<Json> { return Json::array(); };
  EXPECT_EQ(AnswerTo(kAsk, s)["result"]["action"], "decline");
  s.ask = [](const std::string&, const Json&, double, const CancelToken&) -> Result<Json> { return Json{{"action", 7}}; };
  EXPECT_EQ(AnswerTo(kAsk, s)["result"]["action"], "decline");
  // An answer that does not fit the question is not passed on.
  for (const char* content : {R"({"age":"old"})", R"({"colour":"red"})", R"({"tags":["z"]})", R"([1])"}) {
    s.ask = [&](const std::string&, const Json&, double, const CancelToken&) -> Result<Json> {
      return Json{{"action", "accept"}, {"content", Json::parse(content)}};
    };
    EXPECT_EQ(AnswerTo(kAsk, s)["result"], Json::parse(R"({"action":"decline"})")) << content;
  }
  // An asker that throws: the thread still answers, with an error.
  auto throwing = std::make_shared<ClientServices>();
  throwing->ask = [](const std::string&, const Json&, double, const CancelToken&) -> Result<Json> {
    throw std::runtime_error("boom");
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Json> sent;
  ServerRequests requests("srv", throwing, [&](const std::string& frame) {
    std::lock_guard<std::mutex> lock(mu);
    sent.push_back(Json::parse(frame));
    cv.notify_all();
  });
  requests.Handle(ParseFrame(kAsk));
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return !sent.empty(); }));
  EXPECT_EQ(sent[0]["id"], "e1");
  EXPECT_EQ(sent[0]["error"]["code"], kInternalError);
}

TEST(McpServerRequestsTest, PoliciesParseAndNameThemselves) {
  for (auto p : {ElicitationPolicy::kAsk, ElicitationPolicy::kAcceptDefaults, ElicitationPolicy::kDecline}) {
    auto parsed = ParseElicitationPolicy(ElicitationPolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_FALSE(ParseElicitationPolicy("yes").ok());
}

}  // namespace
}  // namespace mates::mcp
