// `mates mock-llm`'s OpenAI Responses and Gemini APIs (DESIGN §28) at the
// wire, over real HTTP: the requests the real CLIs sent (Codex 0.171,
// Gemini CLI 0.61; recorded in tests/fixtures/cli_requests, their shape
// whole, each text over 160 characters — the CLIs' own prompts and tool
// descriptions, which are not ours to copy — replaced by a note) are served in
// each API's shape, streamed and not; a scenario's tool_use becomes each
// API's call and the call's answer is matched; malformed bodies, broken
// conversations and unknown models get one clear error each, in the API's
// shape; a stream cut in the middle ends without its last event.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json.h"
#include "llm/http.h"
#include "llm/mock_server.h"
#include "support/test_util.h"

namespace mates::llm {
namespace {

const char kScenario[] = R"({"rules": [
  {"when": "list the files", "once": false,
   "reply": [{"type": "text", "text": "Listing them."},
             {"type": "tool_use", "name": "exec_command", "input": {"cmd": "ls"}}]},
  {"when": "README.md", "once": false, "reply": [{"type": "text", "text": "I saw the README."}]}],
 "default_reply": [{"type": "text", "text": "Hello from mock-llm."}]})";

std::unique_ptr<MockServer> Serve(std::vector<std::string> faults = {}, std::vector<std::string> models = {}) {
  auto sc = Scenario::Parse(kScenario, "test.json");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  MockServerOptions o;
  o.log_requests = false;
  o.models = std::move(models);
  for (const auto& f : faults) o.faults.push_back(*ParseFaultSpec(f));
  auto s = MockServer::Start(std::make_shared<Scenario>(std::move(*sc)), o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(*s);
}

struct Reply {
  int status = 0;
  std::string body;  // what came, a cut stream's part too
  std::string content_type;
  std::string failure;  // the transport's, when the exchange broke off
};

Reply Post(const MockServer& server, const std::string& path, const std::string& body) {
  HttpRequest req;
  req.url = server.url() + path;
  req.body = body;
  req.headers = {"content-type: application/json"};
  Reply r;
  auto res = NewCurlTransport()->Send(req, [&](std::string_view d) {
    r.body.append(d);
    return true;
  }, nullptr);
  if (!res.ok()) {
    r.failure = res.status().message();
    return r;
  }
  r.status = res->status;
  r.body += res->body;
  r.content_type = res->headers.count("content-type") ? res->headers.at("content-type") : "";
  return r;
}

// The `data:` payloads of an SSE body, parsed.
std::vector<Json> Events(const std::string& sse) {
  std::vector<Json> out;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    size_t end = sse.find('\n', pos);
    auto j = ParseJson(sse.substr(pos + 6, end - pos - 6));
    EXPECT_TRUE(j.ok()) << sse.substr(pos, 200);
    if (j.ok()) out.push_back(*j);
    pos = end;
  }
  return out;
}

Json FixtureJson(const std::string& name) {
  auto j = ParseJson(testing::ReadAll(testing::Fixture("cli_requests/" + name)));
  EXPECT_TRUE(j.ok()) << name;
  return j.ok() ? *j : Json::object();
}

TEST(MockResponsesApi, CodexsOwnRequestIsAnsweredWithTheApisEvents) {
  auto server = Serve();
  Json body = FixtureJson("codex_first.json");
  ASSERT_TRUE(body["stream"].get<bool>());
  Reply r = Post(*server, "/v1/responses", DumpJson(body));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/event-stream");
  std::vector<Json> ev = Events(r.body);
  ASSERT_GE(ev.size(), 6u);
  EXPECT_EQ(ev.front()["type"], "response.created");
  EXPECT_EQ(ev.back()["type"], "response.completed");
  std::string text;
  for (size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i]["sequence_number"], i);  // in order, none missing
    if (ev[i]["type"] == "response.output_text.delta") text += ev[i]["delta"].get<std::string>();
  }
  EXPECT_EQ(text, "Hello from mock-llm.");
  const Json& done = ev.back()["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello from mock-llm.");
  EXPECT_GT(done["usage"]["input_tokens"].get<int64_t>(), 1000);  // Codex's instructions and tools
  EXPECT_EQ(done["usage"]["input_tokens_details"]["cached_tokens"], 0);
  // The same prompt again is read from the cache, as the API accounts it.
  Reply again = Post(*server, "/v1/responses", DumpJson(body));
  EXPECT_GT(Events(again.body).back()["response"]["usage"]["input_tokens_details"]["cached_tokens"].get<int64_t>(),
            1000);
}

TEST(MockResponsesApi, AToolUseIsAFunctionCallAndItsOutputIsMatched) {
  auto server = Serve();
  Json body = {{"model", "gpt-5-codex"}, {"stream", false}, {"store", false},
               {"input", Json::array({{{"role", "user"}, {"content", "please list the files"}}})}};
  // A model calls only what it is offered: without tools, the text alone
  // (and the rule is not used up).
  Reply text_only = Post(*server, "/v1/responses", DumpJson(body));
  ASSERT_EQ(text_only.status, 200) << text_only.body;
  EXPECT_EQ(ParseJson(text_only.body)->at("output").size(), 1u) << text_only.body;
  body["tools"] = Json::array({{{"type", "function"}, {"name", "exec_command"},
                                {"parameters", {{"type", "object"}}}}});
  Reply r = Post(*server, "/v1/responses", DumpJson(body));
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = ParseJson(r.body);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ((*j)["output"].size(), 2u);
  const Json& call = (*j)["output"][1];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_EQ(call["name"], "exec_command");
  EXPECT_EQ(call["arguments"], R"({"cmd":"ls"})");
  // Codex's next request: the call and its output appended.
  body["input"].push_back({{"type", "function_call"}, {"call_id", call["call_id"]}, {"name", "exec_command"},
                           {"arguments", call["arguments"]}});
  body["input"].push_back({{"type", "function_call_output"}, {"call_id", call["call_id"]}, {"output", "README.md"}});
  body["stream"] = true;
  Reply next = Post(*server, "/v1/responses", DumpJson(body));
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(Events(next.body).back()["response"]["output"][0]["content"][0]["text"], "I saw the README.");
}

TEST(MockResponsesApi, BrokenRequestsGetOneClearErrorInTheApisShape) {
  auto server = Serve({}, {"gpt-5*"});
  struct Case {
    std::string body;
    int status;
    std::string says;
  };
  const Json user = {{"role", "user"}, {"content", "hi"}};
  const std::vector<Case> cases = {
      {"{not json", 400, "not valid JSON"},
      {DumpJson(Json{{"model", "gpt-5"}}), 400, "Missing required parameter: 'input'."},
      {DumpJson(Json{{"input", "hi"}}), 400, "Missing required parameter: 'model'."},
      {DumpJson(Json{{"model", "gpt-5"}, {"input", Json::array({user, {{"type", "function_call_output"},
                                                                         {"call_id", "c9"}, {"output", "x"}}})}}),
       400, "No tool call found for function call output with call_id c9."},
      {DumpJson(Json{{"model", "gpt-5"}, {"input", Json::array({user, {{"type", "function_call"}, {"call_id", "c1"},
                                                                         {"name", "t"}, {"arguments", "{}"}}})}}),
       400, "No tool output found for function call c1."},
      {DumpJson(Json{{"model", "gpt-5"}, {"input", "hi"}, {"previous_response_id", "resp_1"}}), 400,
       "Previous response with id 'resp_1' not found."},
      {DumpJson(Json{{"model", "gpt-5"}, {"input", "hi"},
                     {"tools", Json::array({{{"type", "function"}, {"name", "bad name"}}})}}),
       400, "does not match pattern"},
      {DumpJson(Json{{"model", "gpt-4o"}, {"input", "hi"}}), 404, "The model `gpt-4o` does not exist"},
  };
  for (const auto& c : cases) {
    Reply r = Post(*server, "/v1/responses", c.body);
    EXPECT_EQ(r.status, c.status) << c.body;
    auto j = ParseJson(r.body);
    ASSERT_TRUE(j.ok()) << r.body;
    ASSERT_TRUE((*j)["error"].is_object()) << r.body;
    EXPECT_NE((*j)["error"]["message"].get<std::string>().find(c.says), std::string::npos) << r.body;
  }
}

TEST(MockResponsesApi, AStreamCutInTheMiddleEndsWithoutItsLastEvent) {
  auto server = Serve({"cut_stream_after=3"});
  Json body = {{"model", "gpt-5"}, {"stream", true}, {"input", "hi"}};
  Reply r = Post(*server, "/v1/responses", DumpJson(body));
  EXPECT_NE(r.failure.find("partial"), std::string::npos) << r.failure;
  EXPECT_EQ(Events(r.body).size(), 3u);
  EXPECT_EQ(r.body.find("response.completed"), std::string::npos);
  // An error in the middle of the stream is the API's response.failed.
  auto failing = Serve({"error_event_after=2"});
  Reply f = Post(*failing, "/v1/responses", DumpJson(body));
  std::vector<Json> ev = Events(f.body);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev.back()["type"], "response.failed");
  EXPECT_EQ(ev.back()["response"]["error"]["code"], "server_error");
}

TEST(MockGeminiApi, GeminiClisOwnRequestsAreAnsweredStreamedAndWhole) {
  auto server = Serve();
  Reply r = Post(*server, "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse",
                 DumpJson(FixtureJson("gemini_stream.json")));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "text/event-stream");
  std::vector<Json> chunks = Events(r.body);
  ASSERT_GE(chunks.size(), 2u);
  std::string text;
  for (const auto& c : chunks) text += c["candidates"][0]["content"]["parts"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "Hello from mock-llm.");
  const Json& last = chunks.back();
  EXPECT_EQ(last["candidates"][0]["finishReason"], "STOP");
  EXPECT_EQ(last["modelVersion"], "gemini-3.1-pro-preview");
  EXPECT_GT(last["usageMetadata"]["promptTokenCount"].get<int64_t>(), 1000);
  // Its routing call is not streamed: one GenerateContentResponse.
  Reply whole = Post(*server, "/v1beta/models/gemini-3.5-flash-lite:generateContent",
                     DumpJson(FixtureJson("gemini_router.json")));
  ASSERT_EQ(whole.status, 200) << whole.body;
  auto j = ParseJson(whole.body);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["candidates"][0]["content"]["role"], "model");
  EXPECT_EQ((*j)["candidates"][0]["finishReason"], "STOP");
  // It asks for JSON of a schema: the scenario's text is not JSON, so the
  // answer is the schema's least instance.
  auto routed = ParseJson((*j)["candidates"][0]["content"]["parts"][0]["text"].get<std::string>());
  ASSERT_TRUE(routed.ok()) << whole.body;
  EXPECT_TRUE((*routed)["complexity_score"].is_number_integer()) << whole.body;
  EXPECT_TRUE((*routed)["complexity_reasoning"].is_string()) << whole.body;
  // Without ?alt=sse a stream is one JSON array of responses.
  Reply array = Post(*server, "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                     DumpJson(FixtureJson("gemini_router.json")));
  ASSERT_EQ(array.status, 200);
  auto a = ParseJson(array.body);
  ASSERT_TRUE(a.ok()) << array.body;
  ASSERT_TRUE(a->is_array());
  EXPECT_EQ(a->back()["candidates"][0]["finishReason"], "STOP");
}

TEST(MockGeminiApi, AToolUseIsASignedFunctionCallAndItsResponseIsMatched) {
  auto server = Serve();
  Json body = {{"contents", Json::array({{{"role", "user"}, {"parts", Json::array({{{"text", "list the files"}}})}}})},
               {"tools", Json::array({{{"functionDeclarations", Json::array({{{"name", "exec_command"}}})}}})}};
  Reply r = Post(*server, "/v1beta/models/gemini-3-pro-preview:generateContent", DumpJson(body));
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = ParseJson(r.body);
  ASSERT_TRUE(j.ok());
  const Json& parts = (*j)["candidates"][0]["content"]["parts"];
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]["text"], "Listing them.");
  EXPECT_EQ(parts[1]["functionCall"]["name"], "exec_command");
  EXPECT_EQ(parts[1]["functionCall"]["args"], (Json{{"cmd", "ls"}}));
  ASSERT_TRUE(parts[1].contains("thoughtSignature"));
  // The model's turn sent back with its signature, then the answer.
  body["contents"].push_back((*j)["candidates"][0]["content"]);
  body["contents"].push_back({{"role", "user"},
                              {"parts", Json::array({{{"functionResponse",
                                                       {{"name", "exec_command"},
                                                        {"response", {{"output", "README.md"}}}}}}})}});
  Reply next = Post(*server, "/v1beta/models/gemini-3-pro-preview:generateContent", DumpJson(body));
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(ParseJson(next.body)->at("candidates")[0]["content"]["parts"][0]["text"], "I saw the README.");
  // Without the signature, a Gemini 3 model refuses the call's turn, as
  // the real API does; a 2.5 model does not ask for one.
  body["contents"][1]["parts"][1].erase("thoughtSignature");
  Reply unsigned_call = Post(*server, "/v1beta/models/gemini-3-pro-preview:generateContent", DumpJson(body));
  EXPECT_EQ(unsigned_call.status, 400);
  EXPECT_NE(unsigned_call.body.find("missing a thought_signature"), std::string::npos) << unsigned_call.body;
  EXPECT_EQ(Post(*server, "/v1beta/models/gemini-2.5-pro:generateContent", DumpJson(body)).status, 200);
}

TEST(MockGeminiApi, BrokenRequestsGetOneClearErrorInTheApisShape) {
  auto server = Serve({}, {"gemini-2.5-*"});
  const Json hi = {{"role", "user"}, {"parts", Json::array({{{"text", "hi"}}})}};
  const Json call = {{"role", "model"}, {"parts", Json::array({{{"functionCall", {{"name", "t"}}}}})}};
  const Json answer = {{"role", "user"},
                       {"parts", Json::array({{{"functionResponse", {{"name", "t"}, {"response", Json::object()}}}}})}};
  struct Case {
    std::string model, body;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"gemini-2.5-pro", "[1,", 400, "not valid JSON"},
      {"gemini-2.5-pro", "{}", 400, "contents is not specified"},
      {"gemini-2.5-pro", DumpJson(Json{{"contents", Json::array({{{"role", "robot"}, {"parts", hi["parts"]}}})}}),
       400, "Please use a valid role: user, model."},
      {"gemini-2.5-pro", DumpJson(Json{{"contents", Json::array({{{"role", "user"}, {"parts", Json::array()}}})}}),
       400, "contents.parts must not be empty"},
      {"gemini-2.5-pro", DumpJson(Json{{"contents", Json::array({hi, answer})}}), 400,
       "function response turn comes immediately after a function call turn"},
      {"gemini-2.5-pro", DumpJson(Json{{"contents", Json::array({hi, call, hi})}}), 400,
       "number of function response parts is equal to the number of function call parts"},
      {"gemini-2.5-pro",
       DumpJson(Json{{"contents", Json::array({hi})},
                     {"tools", Json::array({{{"functionDeclarations", Json::array({{{"name", "9lives"}}})}}})}}),
       400, "Invalid function name"},
      {"gemini-1.0-pro", DumpJson(Json{{"contents", Json::array({hi})}}), 404,
       "models/gemini-1.0-pro is not found for API version v1beta"},
  };
  for (const auto& c : cases) {
    Reply r = Post(*server, "/v1beta/models/" + c.model + ":generateContent", c.body);
    EXPECT_EQ(r.status, c.status) << c.body;
    auto j = ParseJson(r.body);
    ASSERT_TRUE(j.ok()) << r.body;
    EXPECT_EQ((*j)["error"]["code"], c.status) << r.body;
    EXPECT_EQ((*j)["error"]["status"], c.status == 404 ? "NOT_FOUND" : "INVALID_ARGUMENT");
    EXPECT_NE((*j)["error"]["message"].get<std::string>().find(c.says), std::string::npos) << r.body;
  }
  // A call answered in the next turn is fine.
  EXPECT_EQ(Post(*server, "/v1beta/models/gemini-2.5-pro:generateContent",
                 DumpJson(Json{{"contents", Json::array({hi, call, answer})}}))
                .status,
            200);
  // A path that is no method of a model is no endpoint.
  EXPECT_EQ(Post(*server, "/v1beta/models/gemini-2.5-pro:explode", "{}").status, 404);
}

TEST(MockGeminiApi, AStreamCutInTheMiddleEndsWithoutItsFinishReason) {
  auto server = Serve({"cut_stream_after=2"});
  Json body = {{"contents", Json::array({{{"parts", Json::array({{{"text", "hi"}}})}}})}};
  Reply r = Post(*server, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", DumpJson(body));
  EXPECT_NE(r.failure.find("partial"), std::string::npos) << r.failure;
  EXPECT_EQ(Events(r.body).size(), 2u);
  EXPECT_EQ(r.body.find("finishReason"), std::string::npos);
}

}  // namespace
}  // namespace mates::llm
