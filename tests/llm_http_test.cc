// Each HTTP provider (Anthropic, OpenAI Chat, OpenAI Responses, Gemini)
// against `mates mock-llm` over real HTTP (127.0.0.1): text, tool use,
// parallel tool_use blocks, streaming and not, every fault kind.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/clock.h"
#include "llm/anthropic.h"
#include "llm/gemini.h"
#include "llm/mock_server.h"
#include "llm/openai.h"
#include "llm/openai_responses.h"
#include "support/test_util.h"

namespace mates::llm {
namespace {

using mates::testing::ReadAll;
using mates::testing::TempDir;

const char kScenario[] = R"({"rules": [
  {"agent": "lead", "when": "two tools", "once": false,
   "reply": [{"type": "text", "text": "Reading both files — carefully ✓."},
             {"type": "tool_use", "name": "read_file", "input": {"path": "a.txt"}},
             {"type": "tool_use", "name": "read_file", "input": {"path": "b.txt", "limit": 5}}]},
  {"agent": "lead", "when": "slow", "once": false, "delay_ms": 5000,
   "reply": [{"type": "text", "text": "late"}]},
  {"agent": "frontend", "once": false,
   "reply": [{"type": "text", "text": "frontend speaking"}]}],
 "default_reply": [{"type": "text", "text": "A plain answer that is long enough to be streamed in several pieces."}]})";

std::unique_ptr<MockServer> Serve(std::vector<std::string> faults = {}, std::string record = "") {
  auto sc = Scenario::Parse(kScenario, "test.json");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  MockServerOptions o;
  o.log_requests = false;
  o.record_path = record;
  for (const auto& f : faults) o.faults.push_back(*ParseFaultSpec(f));
  auto s = MockServer::Start(std::make_shared<Scenario>(std::move(*sc)), o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(*s);
}

RetryPolicy Quick() {
  RetryPolicy p;
  p.base_delay_s = 0.01;
  p.max_delay_s = 0.05;
  p.max_retries = 3;
  return p;
}

template <typename P, typename Options>
std::unique_ptr<Provider> MakeOne(Options o, const std::string& url, const std::string& key, bool stream,
                                  const RetryPolicy& retry) {
  o.base_url = url;
  o.api_key = key;
  o.stream = stream;
  o.retry = retry;
  return std::make_unique<P>(o, NewCurlTransport());
}

std::unique_ptr<Provider> Make(const std::string& kind, const std::string& url, bool stream,
                               RetryPolicy retry = Quick()) {
  if (kind == "anthropic") {
    return MakeOne<AnthropicProvider>(AnthropicOptions(), url, "sk-ant-secret-for-tests", stream, retry);
  }
  if (kind == "openai-responses") {
    return MakeOne<ResponsesProvider>(ResponsesOptions(), url + "/v1", "sk-openai-secret-for-tests", stream, retry);
  }
  if (kind == "gemini") {
    return MakeOne<GeminiProvider>(GeminiOptions(), url, "gemini-secret-for-tests", stream, retry);
  }
  return MakeOne<OpenAIProvider>(OpenAIOptions(), url + "/v1", "sk-openai-secret-for-tests", stream, retry);
}

// What the mock answers a refused request with, in each API's words.
std::string BadRequestWord(const std::string& kind) {
  return kind == "gemini" ? "HTTP 400 INVALID_ARGUMENT" : "HTTP 400 invalid_request_error";
}

Request Ask(const std::string& text, const std::string& agent = "lead@t") {
  Request r;
  r.model = "mock-model";
  r.system = "You are a test.";
  r.agent_id = agent;
  r.max_tokens = 256;
  r.tools = {{"read_file", "Read a file", R"({"type":"object","properties":{"path":{"type":"string"}}})"}};
  r.messages.push_back({Role::kUser, {ContentBlock::Text(text)}});
  return r;
}

struct Call {
  Result<Response> result = Status::Internal("not run");
  std::string streamed;
  int retries = 0;
  double seconds = 0;
};

Call CallModel(Provider& p, const Request& req, CancelToken* cancel = nullptr) {
  Call c;
  StreamCallbacks cb;
  cb.on_text = [&](std::string_view t) { c.streamed += t; };
  cb.on_retry = [&](int, int, const Status&, double) { ++c.retries; };
  auto t0 = std::chrono::steady_clock::now();
  c.result = p.Complete(req, cb, cancel);
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

class ProvidersOverHttp : public ::testing::TestWithParam<std::tuple<std::string, bool>> {
 protected:
  std::string kind() const { return std::get<0>(GetParam()); }
  bool stream() const { return std::get<1>(GetParam()); }
};

TEST_P(ProvidersOverHttp, TextReply) {
  auto server = Serve();
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("hello"));
  ASSERT_TRUE(c.result.ok()) << c.result.status().message();
  EXPECT_EQ(c.result->Text(), "A plain answer that is long enough to be streamed in several pieces.");
  EXPECT_EQ(c.streamed, c.result->Text());
  EXPECT_EQ(c.result->stop_reason, "end_turn");
  // A first request with breakpoints: what it sends is written to the
  // (mock's) prompt cache, as the API would count it.
  const llm::Usage& u = c.result->usage;
  EXPECT_GT(u.input_tokens + u.cache_creation_input_tokens, 0);
  EXPECT_EQ(u.cache_read_input_tokens, 0);
  EXPECT_GT(u.output_tokens, 0);
  EXPECT_EQ(c.retries, 0);
  // The same again: read from the cache.
  Call again = CallModel(*p, Ask("hello"));
  ASSERT_TRUE(again.result.ok());
  if (kind() == "anthropic") {
    EXPECT_EQ(again.result->usage.cache_read_input_tokens, u.cache_creation_input_tokens);
  }
}

TEST_P(ProvidersOverHttp, ParallelToolUseBlocks) {
  auto server = Serve();
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("use two tools please"));
  ASSERT_TRUE(c.result.ok()) << c.result.status().message();
  const Response& r = *c.result;
  ASSERT_EQ(r.content.size(), 3u);
  EXPECT_EQ(r.content[0].text, "Reading both files — carefully ✓.");
  EXPECT_EQ(r.content[1].name, "read_file");
  EXPECT_EQ(r.content[1].input_json, R"({"path":"a.txt"})");
  EXPECT_EQ(r.content[2].input_json, R"({"path":"b.txt","limit":5})");
  EXPECT_NE(r.content[1].id, r.content[2].id);
  EXPECT_EQ(r.stop_reason, "tool_use");
  // Answer the calls: the follow-up conversation is valid for the server.
  Request next = Ask("use two tools please");
  next.messages.push_back({Role::kAssistant, r.content});
  next.messages.push_back({Role::kUser, {ContentBlock::ToolResult(r.content[1].id, "A", false),
                                         ContentBlock::ToolResult(r.content[2].id, "B", true)}});
  Call follow = CallModel(*p, next);
  EXPECT_TRUE(follow.result.ok()) << follow.result.status().message();
}

TEST_P(ProvidersOverHttp, AgentsAreToldApart) {
  auto server = Serve();
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("hello", "frontend@t"));
  ASSERT_TRUE(c.result.ok());
  EXPECT_EQ(c.result->Text(), "frontend speaking");
}

TEST_P(ProvidersOverHttp, OverloadedIsRetriedAndSucceeds) {
  auto server = Serve({"status=529:first=2"});
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("hello"));
  ASSERT_TRUE(c.result.ok()) << c.result.status().message();
  EXPECT_EQ(c.retries, 2);
  EXPECT_EQ(server->requests(), 3);
}

TEST_P(ProvidersOverHttp, RetryAfterIsHonoured) {
  auto server = Serve({"status=429:retry_after=1"});
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("hello"));
  ASSERT_TRUE(c.result.ok()) << c.result.status().message();
  EXPECT_EQ(c.retries, 1);
  EXPECT_GE(c.seconds, 1.0);  // waited as told, not the 10 ms backoff
  EXPECT_LT(c.seconds, 3.0);
}

TEST_P(ProvidersOverHttp, BadRequestIsNotRetriedAndItsMessageReachesTheUser) {
  auto server = Serve();
  auto p = Make(kind(), server->url(), stream());
  Request bad = Ask("hello");
  // An orphan tool result: the API refuses this conversation.
  bad.messages[0].content.push_back(ContentBlock::ToolResult("toolu_nope", "x", false));
  Call c = CallModel(*p, bad);
  ASSERT_FALSE(c.result.ok());
  EXPECT_EQ(c.result.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.result.status().message().find(BadRequestWord(kind())), std::string::npos)
      << c.result.status().message();
  EXPECT_EQ(c.retries, 0);
  EXPECT_EQ(server->requests(), 1);
}

TEST_P(ProvidersOverHttp, AuthErrorIsNotRetried) {
  auto server = Serve({"status=401"});
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("hello"));
  ASSERT_FALSE(c.result.ok());
  EXPECT_NE(c.result.status().message().find("HTTP 401"), std::string::npos);
  EXPECT_EQ(server->requests(), 1);
}

TEST_P(ProvidersOverHttp, GivingUpSaysSo) {
  auto server = Serve({"status=503:every=1"});
  auto p = Make(kind(), server->url(), stream());
  Call c = CallModel(*p, Ask("hello"));
  ASSERT_FALSE(c.result.ok());
  EXPECT_EQ(c.result.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.result.status().message().find("gave up after 4 attempts"), std::string::npos);
  EXPECT_EQ(server->requests(), 4);
}

TEST_P(ProvidersOverHttp, CancellingAWaitingCallReturnsPromptly) {
  auto server = Serve();
  auto p = Make(kind(), server->url(), stream());
  CancelToken cancel;
  std::thread canceller([&] {
    // Cancel once the server has the request (it then waits 5 s).
    while (server->requests() == 0) std::this_thread::yield();
    cancel.Cancel();
  });
  Call c = CallModel(*p, Ask("slow please"), &cancel);
  canceller.join();
  EXPECT_EQ(c.result.status().code(), StatusCode::kCancelled);
  EXPECT_LT(c.seconds, 2.5);
}

INSTANTIATE_TEST_SUITE_P(Each, ProvidersOverHttp,
                         ::testing::Combine(::testing::Values("anthropic", "openai", "openai-responses", "gemini"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name + (std::get<1>(info.param) ? "_stream" : "_plain");
                         });

class StreamFaults : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamFaults, ACutStreamIsRetriedWithoutDuplicatedText) {
  auto server = Serve({"cut_stream_after=6"});
  auto p = Make(GetParam(), server->url(), /*stream=*/true);
  Call c = CallModel(*p, Ask("hello"));
  ASSERT_TRUE(c.result.ok()) << c.result.status().message();
  EXPECT_EQ(c.retries, 1);
  // Some text was shown before the cut; the retry showed only the rest.
  EXPECT_EQ(c.streamed, "A plain answer that is long enough to be streamed in several pieces.");
  EXPECT_EQ(c.result->Text(), c.streamed);
}

TEST_P(StreamFaults, AnErrorEventMidStreamIsRetried) {
  auto server = Serve({"error_event_after=5"});
  auto p = Make(GetParam(), server->url(), /*stream=*/true);
  Call c = CallModel(*p, Ask("use two tools please"));
  ASSERT_TRUE(c.result.ok()) << c.result.status().message();
  EXPECT_EQ(c.retries, 1);
  EXPECT_EQ(c.result->content.size(), 3u);
  EXPECT_EQ(c.streamed, "Reading both files — carefully ✓.");
}

INSTANTIATE_TEST_SUITE_P(Each, StreamFaults, ::testing::Values("anthropic", "openai", "openai-responses", "gemini"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Gemini 3 refuses a call's turn sent back without the thoughtSignature
// it came with: the provider keeps it on the block (and the journal) and
// sends it back.
TEST(LlmHttpTest, AGeminiCallsSignatureGoesBackWithIt) {
  auto server = Serve();
  for (bool stream : {true, false}) {
    auto p = Make("gemini", server->url(), stream);
    Request req = Ask("use two tools please");
    req.model = "gemini-3-pro-preview";
    Call c = CallModel(*p, req);
    ASSERT_TRUE(c.result.ok()) << c.result.status().message();
    ASSERT_EQ(c.result->content.size(), 3u);
    EXPECT_FALSE(c.result->content[1].signature.empty());
    auto journal = ResponseFromJson(ResponseToJson(*c.result));
    ASSERT_TRUE(journal.ok());
    EXPECT_EQ(journal->content[1].signature, c.result->content[1].signature);
    req.messages.push_back({Role::kAssistant, journal->content});
    req.messages.push_back({Role::kUser, {ContentBlock::ToolResult(journal->content[1].id, "A", false),
                                          ContentBlock::ToolResult(journal->content[2].id, "B", false)}});
    Call next = CallModel(*p, req);
    EXPECT_TRUE(next.result.ok()) << next.result.status().message();
  }
}

TEST(LlmHttpTest, ConnectionRefusedIsRetriedThenUnavailable) {
  int port;
  {
    auto server = Serve();
    port = server->port();
  }  // stopped: nothing listens there now
  auto p = Make("anthropic", "http://127.0.0.1:" + std::to_string(port), true);
  Call c = CallModel(*p, Ask("hello"));
  EXPECT_EQ(c.result.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(c.retries, 3);
  EXPECT_NE(c.result.status().message().find("cannot connect"), std::string::npos);
}

TEST(LlmHttpTest, RecordedRequestsHoldBodiesButNoKeys) {
  TempDir dir;
  fs::path rec = dir.path() / "rec.jsonl";
  {
    auto server = Serve({}, rec.string());
    auto a = Make("anthropic", server->url(), true);
    auto o = Make("openai", server->url(), false);
    ASSERT_TRUE(CallModel(*a, Ask("hello")).result.ok());
    ASSERT_TRUE(CallModel(*o, Ask("hello")).result.ok());
  }
  std::string data = ReadAll(rec);
  EXPECT_EQ(std::count(data.begin(), data.end(), '\n'), 2);
  EXPECT_NE(data.find(R"("endpoint":"/v1/messages")"), std::string::npos);
  EXPECT_NE(data.find(R"("endpoint":"/v1/chat/completions")"), std::string::npos);
  EXPECT_NE(data.find(R"("user_id":"lead@t")"), std::string::npos);
  EXPECT_EQ(data.find("secret-for-tests"), std::string::npos);
}

TEST(LlmHttpTest, FaultSpecsAreCheckedWithClearErrors) {
  EXPECT_TRUE(ParseFaultSpec("status=529").ok());
  EXPECT_EQ(ParseFaultSpec("status=429:every=3:retry_after=2")->every, 3);
  EXPECT_EQ(ParseFaultSpec("cut_stream_after=4")->first, 1);
  for (const char* bad : {"status=99", "status=abc", "explode=1", "status=500:first=1:every=2",
                          "cut_stream_after=2:retry_after=1", "status", "status=500:every=0"}) {
    auto f = ParseFaultSpec(bad);
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(f.status().message().find("bad --fault"), std::string::npos);
  }
}

// The user-facing command: its first line, its errors, its exit.
TEST(MockLlmCommandTest, ListensSaysWhereAndStopsOnSigterm) {
  TempDir dir;
  mates::testing::WriteAll(dir.path() / "s.json", kScenario);
  auto p = mates::testing::Start({mates::testing::MatesBinary(), "mock-llm", "--scenario",
                                  (dir.path() / "s.json").string(), "--quiet"});
  auto line = p.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->rfind("listening on http://127.0.0.1:", 0), 0u) << *line;
  std::string url = line->substr(std::string("listening on ").size());
  auto provider = Make("anthropic", url, true);
  Call c = CallModel(*provider, Ask("hello"));
  EXPECT_TRUE(c.result.ok()) << c.result.status().message();
  p.Signal(SIGTERM);
  EXPECT_EQ(p.Wait().exit_code, 0);
}

TEST(MockLlmCommandTest, BadScenarioOrFaultIsExit2BeforeListening) {
  TempDir dir;
  mates::testing::WriteAll(dir.path() / "bad.json", R"({"rules": [{"when": "(", "reply": []}]})");
  auto r = mates::testing::Run({mates::testing::MatesBinary(), "mock-llm", "--scenario",
                                (dir.path() / "bad.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("bad.json: rules[0].when: invalid regex"), std::string::npos) << r.err;
  mates::testing::WriteAll(dir.path() / "ok.json", kScenario);
  r = mates::testing::Run({mates::testing::MatesBinary(), "mock-llm", "--scenario",
                           (dir.path() / "ok.json").string(), "--fault", "status=7"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad --fault 'status=7'"), std::string::npos) << r.err;
  r = mates::testing::Run({mates::testing::MatesBinary(), "mock-llm", "--scenario",
                           (dir.path() / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace mates::llm
