#include "store/messenger.h"

#include <gtest/gtest.h>

#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/requests.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

class MessengerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Roster roster(ws_);
    ASSERT_TRUE(roster.CreateTeam("t").ok());
    for (const char* name : {"alice", "bob"}) {
      Member m;
      m.name = name;
      ASSERT_TRUE(roster.AddMember("t", m).ok());
    }
  }
  std::vector<Message> Inbox(const std::string& who) {
    return *Mailbox(ws_.TeamDir("t"), who).Drain();
  }
  Result<SendReceipt> Send(MessageType type, const std::string& from, const std::string& to,
                           const std::string& content = "x") {
    SendRequest r;
    r.type = type;
    r.sender = from;
    r.recipient = to;
    r.content = content;
    return Messenger(ws_, "t").Send(r);
  }

  TempDir dir_;
  Workspace ws_{dir_.path()};
};

TEST_F(MessengerTest, PointToPointIsDeliveredAndLogged) {
  auto r = Send(MessageType::kMessage, "lead", "alice", "use the new schema");
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto got = Inbox("alice");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].content, "use the new schema");
  EXPECT_EQ(got[0].recipient, "alice");
  EXPECT_TRUE(Inbox("bob").empty());
  uint64_t next = 0;
  auto log = MessageLog(ws_, "t").ReadFrom(0, &next);
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0].id, got[0].id);
}

TEST_F(MessengerTest, BroadcastReachesEveryoneButTheSender) {
  auto r = Send(MessageType::kBroadcast, "alice", "", "schema changed");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->recipients, (std::vector<std::string>{"lead", "bob"}));
  EXPECT_EQ(Inbox("lead").size(), 1u);
  EXPECT_EQ(Inbox("bob").size(), 1u);
  EXPECT_TRUE(Inbox("alice").empty());
  EXPECT_EQ(Send(MessageType::kBroadcast, "alice", "bob").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(MessengerTest, UnknownRecipientIsAnErrorAndCreatesNoInbox) {
  auto r = Send(MessageType::kMessage, "lead", "carol");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("carol"), std::string::npos);
  EXPECT_FALSE(fs::exists(ws_.TeamDir("t") / "carol_inbox.jsonl"));
  EXPECT_FALSE(fs::exists(ws_.TeamDir("t") / "carol_inbox.lock"));
  EXPECT_EQ(Send(MessageType::kMessage, "mallory", "alice").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Send(MessageType::kMessage, "lead", "../x").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Send(MessageType::kMessage, "lead", "lead").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Send(MessageType::kMessage, "lead", "alice", "").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(MessengerTest, RoleRulesAreEnforced) {
  EXPECT_EQ(Send(MessageType::kShutdownRequest, "alice", "bob").status().code(),
            StatusCode::kFailedPrecondition);
  SendRequest resp;
  resp.type = MessageType::kPlanApprovalResponse;
  resp.sender = "alice";
  resp.recipient = "bob";
  resp.request_id = "r-1";
  resp.approve = true;
  EXPECT_EQ(Messenger(ws_, "t").Send(resp).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Send(MessageType::kPlanApprovalRequest, "lead", "alice").status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(MessengerTest, ShutdownRoundTrip) {
  auto req = Send(MessageType::kShutdownRequest, "lead", "alice", "");
  ASSERT_TRUE(req.ok());
  std::string rid = req->message.request_id;
  ASSERT_FALSE(rid.empty());
  auto stored = RequestStore(ws_, "t").Get(rid);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->status, RequestState::kPending);
  EXPECT_EQ(stored->responder, "alice");

  SendRequest resp;
  resp.type = MessageType::kShutdownResponse;
  resp.sender = "bob";  // not the one asked
  resp.request_id = rid;
  resp.approve = true;
  resp.content = "done";
  EXPECT_EQ(Messenger(ws_, "t").Send(resp).status().code(), StatusCode::kFailedPrecondition);
  resp.sender = "alice";
  resp.approve.reset();
  EXPECT_EQ(Messenger(ws_, "t").Send(resp).status().code(), StatusCode::kInvalidArgument);
  resp.approve = true;
  auto ok = Messenger(ws_, "t").Send(resp);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->recipients, std::vector<std::string>{"lead"});
  EXPECT_EQ(RequestStore(ws_, "t").Get(rid)->status, RequestState::kApproved);
  // Answering twice is refused.
  EXPECT_EQ(Messenger(ws_, "t").Send(resp).status().code(), StatusCode::kFailedPrecondition);
  auto lead_inbox = Inbox("lead");
  ASSERT_EQ(lead_inbox.size(), 1u);
  EXPECT_EQ(lead_inbox[0].type, MessageType::kShutdownResponse);
  EXPECT_EQ(lead_inbox[0].approve, true);
}

TEST_F(MessengerTest, PlanApprovalRejectThenResubmit) {
  auto req = Send(MessageType::kPlanApprovalRequest, "bob", "", "1. read 2. write");
  ASSERT_TRUE(req.ok()) << req.status().message();
  EXPECT_EQ(req->recipients, std::vector<std::string>{"lead"});
  SendRequest resp;
  resp.type = MessageType::kPlanApprovalResponse;
  resp.sender = "lead";
  resp.request_id = req->message.request_id;
  resp.approve = false;
  resp.feedback = "add tests first";
  auto rejected = Messenger(ws_, "t").Send(resp);
  ASSERT_TRUE(rejected.ok()) << rejected.status().message();
  auto bob = Inbox("bob");
  ASSERT_EQ(bob.size(), 1u);
  EXPECT_EQ(bob[0].approve, false);
  EXPECT_EQ(bob[0].feedback, "add tests first");
  auto again = Send(MessageType::kPlanApprovalRequest, "bob", "", "0. tests 1. read 2. write");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->message.request_id, req->message.request_id);
}

// A plan sent again while the first still waits: the first is stale, no
// longer waiting for anyone, and an answer to it is refused as answered.
TEST_F(MessengerTest, AResubmittedPlanClearsTheStaleOne) {
  auto first = Send(MessageType::kPlanApprovalRequest, "bob", "", "1. read 2. write");
  ASSERT_TRUE(first.ok());
  auto other = Send(MessageType::kPlanApprovalRequest, "alice", "", "alice's plan");
  ASSERT_TRUE(other.ok());
  auto second = Send(MessageType::kPlanApprovalRequest, "bob", "", "0. tests 1. read 2. write");
  ASSERT_TRUE(second.ok());
  RequestStore requests(ws_, "t");
  auto stale = requests.Get(first->message.request_id);
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->status, RequestState::kRejected);
  EXPECT_EQ(stale->response, "superseded by the plan of " + second->message.request_id);
  EXPECT_EQ(requests.Get(second->message.request_id)->status, RequestState::kPending);
  EXPECT_EQ(requests.Get(other->message.request_id)->status, RequestState::kPending) << "another's plan stays";
  SendRequest late;
  late.type = MessageType::kPlanApprovalResponse;
  late.sender = "lead";
  late.request_id = first->message.request_id;
  late.approve = true;
  EXPECT_EQ(Messenger(ws_, "t").Send(late).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(MessengerTest, UnknownRequestIsNotFound) {
  SendRequest resp;
  resp.type = MessageType::kShutdownResponse;
  resp.sender = "alice";
  resp.request_id = "r-nope";
  resp.approve = true;
  EXPECT_EQ(Messenger(ws_, "t").Send(resp).status().code(), StatusCode::kNotFound);
  resp.request_id = "../../etc/passwd";
  EXPECT_EQ(Messenger(ws_, "t").Send(resp).status().code(), StatusCode::kInvalidArgument);
}

// An MCP server's question (DESIGN §23): a member asks user; only user
// answers, with fields the question's schema takes; the answer is kept on
// the request and goes to no inbox (a model would only see noise).
TEST_F(MessengerTest, AQuestionGoesToUserAndOnlyUserAnswersItWithFieldsThatFit) {
  const std::string question =
      R"({"server":"gh","message":"Which repo?","requestedSchema":{"type":"object","properties":)"
      R"({"repo":{"type":"string","minLength":1},"private":{"type":"boolean","default":false}},"required":["repo"]}})";
  auto to_bob = Send(MessageType::kElicitationRequest, "lead", "bob", question);
  EXPECT_EQ(to_bob.status().code(), StatusCode::kFailedPrecondition) << "a question goes to user";
  auto bad = Send(MessageType::kElicitationRequest, "lead", "user", R"({"server":"gh","message":"m","requestedSchema":{"properties":{"a":{"type":"object"}}}})");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << "a question a person cannot answer";
  auto from_user = Send(MessageType::kElicitationRequest, "user", "user", question);
  EXPECT_FALSE(from_user.ok());
  auto asked = Send(MessageType::kElicitationRequest, "lead", "user", question);
  ASSERT_TRUE(asked.ok()) << asked.status().message();
  const std::string id = asked->message.request_id;
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Inbox("user").size(), 1u);
  auto answer = [&](const std::string& from, bool approve, const std::string& content) {
    SendRequest r;
    r.type = MessageType::kElicitationResponse;
    r.sender = from;
    r.request_id = id;
    r.approve = approve;
    r.content = content;
    return Messenger(ws_, "t").Send(r);
  };
  EXPECT_EQ(answer("alice", true, R"({"repo":"x"})").status().code(), StatusCode::kFailedPrecondition)
      << "a member cannot answer for the person";
  EXPECT_EQ(answer("lead", true, R"({"repo":"x"})").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(answer("user", true, R"({"private":true})").status().message(), "field 'repo': it is required");
  EXPECT_EQ(answer("user", true, R"({"repo":""})").status().message(),
            "field 'repo': at least 1 characters are wanted");
  EXPECT_EQ(answer("user", true, "not json").status().code(), StatusCode::kInvalidArgument);
  auto ok = answer("user", true, R"({"repo":"mates"})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ok->recipients.empty());
  EXPECT_TRUE(Inbox("lead").empty()) << "the host reads the request, not an inbox";
  auto req = RequestStore(ws_, "t").Get(id);
  ASSERT_TRUE(req.ok());
  EXPECT_EQ(req->kind, RequestKind::kElicitation);
  EXPECT_EQ(req->status, RequestState::kApproved);
  EXPECT_EQ(req->response, R"({"repo":"mates"})");
  EXPECT_EQ(answer("user", false, "").status().code(), StatusCode::kFailedPrecondition) << "answered once";
}

}  // namespace
}  // namespace mates
