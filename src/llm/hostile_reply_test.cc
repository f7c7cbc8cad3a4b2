// What a server may send that the API never would (DESIGN §10): fields
// null or of the wrong type, garbage, nesting 100,000 deep, floods. Each
// must come back as one provider error naming the field (or, for a model's
// tool input, an error the model reads), never an exception, a crash or an
// empty reply taken as real. Driven through a fake HttpTransport that
// replays canned bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "core/limits.h"
#include "core/secrets.h"
#include "llm/anthropic.h"
#include "llm/openai.h"

namespace mates::llm {
namespace {

// Answers with each of `replies` in turn (status, body; the last repeats).
class ScriptedTransport : public HttpTransport {
 public:
  explicit ScriptedTransport(std::vector<std::pair<int, std::string>> replies) : replies_(std::move(replies)) {}
  Result<HttpResponse> Send(const HttpRequest&, const std::function<bool(std::string_view)>& on_data,
                            const std::atomic<bool>*) override {
    const auto& [status, body] = replies_[std::min<size_t>(calls++, replies_.size() - 1)];
    HttpResponse r;
    r.status = status;
    r.headers["retry-after"] = "30";
    if (status >= 200 && status < 300) {
      on_data(body);
    } else {
      r.body = body;
    }
    return r;
  }
  size_t calls = 0;

 private:
  std::vector<std::pair<int, std::string>> replies_;
};

// Time that passes only when waited on: records every wait.
class FakeClock : public Clock {
 public:
  SteadyClock::time_point Now() override { return now; }
  bool Sleep(double seconds, const CancelToken* cancel) override {
    waits.push_back(seconds);
    now += std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(seconds));
    return cancel != nullptr && cancel->cancelled();
  }
  SteadyClock::time_point now{};
  std::vector<double> waits;
};

// Answers every Send with `status` and `body`, delivered in chunks of
// `chunk` bytes as a server would; counts the calls.
class CannedTransport : public HttpTransport {
 public:
  CannedTransport(int status, std::string body, size_t chunk = 7)
      : status_(status), body_(std::move(body)), chunk_(chunk) {}
  Result<HttpResponse> Send(const HttpRequest&, const std::function<bool(std::string_view)>& on_data,
                            const std::atomic<bool>*) override {
    ++calls;
    HttpResponse r;
    r.status = status_;
    if (status_ < 200 || status_ >= 300) {
      r.body = body_;
      return r;
    }
    for (size_t i = 0; i < body_.size(); i += chunk_) {
      if (!on_data(std::string_view(body_).substr(i, chunk_))) break;
    }
    return r;
  }
  std::atomic<int> calls{0};

 private:
  int status_;
  std::string body_;
  size_t chunk_;
};

RetryPolicy NoWait() {
  RetryPolicy p;
  p.max_retries = 2;
  p.base_delay_s = 0.001;
  p.max_delay_s = 0.001;
  return p;
}

Request Ask() {
  Request r;
  r.messages.push_back({Role::kUser, {ContentBlock::Text("hi")}});
  r.agent_id = "lead@t";
  return r;
}

struct Outcome {
  Result<Response> reply;
  int calls;
};

Outcome Anthropic(const std::string& body, bool stream = true, int status = 200) {
  AnthropicOptions o;
  o.stream = stream;
  o.retry = NoWait();
  auto t = std::make_unique<CannedTransport>(status, body);
  CannedTransport* raw = t.get();
  AnthropicProvider p(o, std::move(t));
  auto r = p.Complete(Ask(), {}, nullptr);
  return {std::move(r), raw->calls.load()};
}

Outcome OpenAI(const std::string& body, bool stream = true, int status = 200) {
  OpenAIOptions o;
  o.stream = stream;
  o.retry = NoWait();
  auto t = std::make_unique<CannedTransport>(status, body);
  CannedTransport* raw = t.get();
  OpenAIProvider p(o, std::move(t));
  auto r = p.Complete(Ask(), {}, nullptr);
  return {std::move(r), raw->calls.load()};
}

std::string Sse(const std::vector<std::pair<std::string, std::string>>& events) {
  std::string out;
  for (const auto& [name, data] : events) out += "event: " + name + "\ndata: " + data + "\n\n";
  return out;
}

const std::string kStart =
    R"({"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":3,"output_tokens":1}}})";

// One malformed field, as the stream's event `name` with `data`, inside an
// otherwise well-formed reply.
std::string AnthropicWith(const std::string& name, const std::string& data) {
  return Sse({{"message_start", kStart},
              {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"},
              {name, data},
              {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
              {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"}})"},
              {"message_stop", R"({"type":"message_stop"})"}});
}

void ExpectMalformed(const Outcome& o, const std::string& field) {
  ASSERT_FALSE(o.reply.ok()) << "a malformed reply was taken as real (expected one naming " << field << ")";
  EXPECT_EQ(o.reply.status().code(), StatusCode::kUnavailable);
  const std::string& m = o.reply.status().message();
  EXPECT_NE(m.find("malformed reply"), std::string::npos) << m;
  EXPECT_NE(m.find(field), std::string::npos) << "does not name '" << field << "': " << m;
  EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  EXPECT_EQ(o.calls, 1) << "a malformed reply is what the server meant: not retried";
}

// Item 7 (Anthropic): index null, stop_reason 42, tool name null, usage
// "many" ended the run with internal: [json.exception.type_error.302].
TEST(HostileReplyTest, AnthropicFieldsOfTheWrongTypeAreNamed) {
  ExpectMalformed(Anthropic(AnthropicWith("content_block_delta",
                                          R"({"type":"content_block_delta","index":null,"delta":{"type":"text_delta","text":"x"}})")),
                  "'index'");
  ExpectMalformed(Anthropic(AnthropicWith("message_delta", R"({"type":"message_delta","delta":{"stop_reason":42}})")),
                  "'stop_reason'");
  ExpectMalformed(Anthropic(AnthropicWith("content_block_start",
                                          R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":null}})")),
                  "'name'");
  ExpectMalformed(Anthropic(AnthropicWith("message_delta", R"({"type":"message_delta","usage":{"output_tokens":"many"}})")),
                  "'output_tokens'");
  ExpectMalformed(Anthropic(AnthropicWith("content_block_delta",
                                          R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}})")),
                  "'text'");
  ExpectMalformed(Anthropic(AnthropicWith("content_block_delta",
                                          R"({"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"x"}})")),
                  "no block 9");
  ExpectMalformed(Anthropic(AnthropicWith("content_block_delta", "[1, 2")), "malformed JSON");
  // Not streamed: the same fields.
  ExpectMalformed(Anthropic(R"({"id":"m","content":[{"type":"tool_use","id":"t","name":null}],"stop_reason":"tool_use"})", false),
                  "'name'");
  ExpectMalformed(Anthropic(R"({"id":"m","content":[],"stop_reason":42})", false), "'stop_reason'");
  ExpectMalformed(Anthropic(R"({"id":"m","content":[],"usage":{"input_tokens":"many"}})", false), "'input_tokens'");
  ExpectMalformed(Anthropic(R"({"id":"m","content":"text"})", false), "'content'");
  ExpectMalformed(Anthropic(R"([1,2,3])", false), "not a JSON object");
}

// Item 7: a garbage stream ending in message_stop was accepted as an empty
// reply.
TEST(HostileReplyTest, AnthropicGarbageEndingInMessageStopIsNoReply) {
  ExpectMalformed(Anthropic("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), "before message_start");
  ExpectMalformed(Anthropic("garbage\n\nmore garbage\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
                  "before message_start");
  ExpectMalformed(Anthropic(Sse({{"message_start", "not json"}, {"message_stop", "{}"}})), "malformed JSON");
  // Pings and events the API may add later are fine.
  auto ok = Anthropic(Sse({{"message_start", kStart}, {"ping", "{\"type\":\"ping\"}"}, {"brand_new", "{}"},
                           {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}})"},
                           {"message_stop", "{\"type\":\"message_stop\"}"}}));
  ASSERT_TRUE(ok.reply.ok()) << ok.reply.status().message();
  EXPECT_EQ(ok.reply->usage.output_tokens, 5);
}

// Item 7 (OpenAI): index "zero", usage "many", name null.
TEST(HostileReplyTest, OpenAIFieldsOfTheWrongTypeAreNamed) {
  auto chunk = [](const std::string& delta_or_rest) {
    return "data: {\"id\":\"c\",\"choices\":[{\"index\":0," + delta_or_rest + "}]}\n\n";
  };
  const std::string done = "data: [DONE]\n\n";
  ExpectMalformed(OpenAI(chunk(R"("delta":{"tool_calls":[{"index":"zero","id":"a","function":{"name":"f","arguments":"{}"}}]})") + done),
                  "'index'");
  ExpectMalformed(OpenAI(chunk(R"("delta":{"content":"hi"})") +
                         "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":\"many\"}}\n\n" + done),
                  "'prompt_tokens'");
  ExpectMalformed(OpenAI(chunk(R"("delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":null,"arguments":"{}"}}]})") + done),
                  "names no function");
  ExpectMalformed(OpenAI(chunk(R"("delta":{"content":5})") + done), "'content'");
  ExpectMalformed(OpenAI(chunk(R"("finish_reason":{"x":1})") + done), "'finish_reason'");
  ExpectMalformed(OpenAI("data: {not json\n\n" + done), "malformed JSON");
  ExpectMalformed(OpenAI(done), "before any chunk");
  ExpectMalformed(OpenAI(R"({"choices":[{"message":{"content":null,"tool_calls":[{"id":"a","function":{"name":"f","arguments":5}}]}}]})", false),
                  "'arguments'");
  ExpectMalformed(OpenAI(R"({"choices":[{"message":{"content":"x"}}],"usage":{"completion_tokens":"many"}})", false),
                  "'completion_tokens'");
  ExpectMalformed(OpenAI(R"({"choices":"x"})", false), "'choices'");
  ExpectMalformed(OpenAI(R"([])", false), "not a JSON object");
}

std::string Deep(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  return s + "1" + std::string(depth, '}');
}

// Item 1: a model's tool input nested ~100,000 deep segfaulted (stack
// overflow in the JSON dump), with either provider, as a string or as an
// object.
TEST(HostileReplyTest, DeepToolInputBecomesAnErrorTheModelReads) {
  Json partial = Deep(100000);  // a JSON string holding the deep text
  auto a = Anthropic(Sse({{"message_start", kStart},
                          {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}})"},
                          {"content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":" + DumpJson(partial) + "}}"},
                          {"content_block_stop", R"({"type":"content_block_stop","index":0})"},
                          {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use"}})"},
                          {"message_stop", R"({"type":"message_stop"})"}}),
                     true);
  ASSERT_TRUE(a.reply.ok()) << a.reply.status().message();
  ASSERT_EQ(a.reply->content.size(), 1u);
  EXPECT_EQ(a.reply->content[0].input_json, "{}");
  EXPECT_NE(a.reply->content[0].input_error.find("deeper than 128"), std::string::npos) << a.reply->content[0].input_error;
  // OpenAI, arguments as a string.
  auto o = OpenAI("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"bash\",\"arguments\":" +
                  DumpJson(partial) + "}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
  ASSERT_TRUE(o.reply.ok()) << o.reply.status().message();
  EXPECT_NE(o.reply->content[0].input_error.find("deeper than 128"), std::string::npos);
  // OpenAI, arguments as an object (Ollama): the chunk itself is too deep.
  auto obj = OpenAI("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"bash\",\"arguments\":" +
                    Deep(100000) + "}}]}}]}\n\ndata: [DONE]\n\n");
  ExpectMalformed(obj, "deeper than 128");
  // Not streamed: a whole reply nested too deep.
  ExpectMalformed(Anthropic(Deep(100000), false), "reply");
}

TEST(HostileReplyTest, OversizedToolInputIsRefusedForTheModelToRead) {
  std::string big = "{\"command\": \"" + std::string(kMaxToolInputBytes, 'x') + "\"}";
  auto o = OpenAI("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"bash\",\"arguments\":" +
                  DumpJson(Json(big)) + "}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
  ASSERT_TRUE(o.reply.ok()) << o.reply.status().message();
  EXPECT_NE(o.reply->content[0].input_error.find("bytes"), std::string::npos) << o.reply->content[0].input_error;
}

// Item 15: 200 MB of streamed text took 1.4 GB of memory; a reply is cut
// off at 64 MiB.
TEST(HostileReplyTest, AReplyOverSixtyFourMebibytesIsCutOffAndRefused) {
  std::string delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                      "\"delta\":{\"type\":\"text_delta\",\"text\":\"" + std::string(60000, 'x') + "\"}}\n\n";
  std::string body = Sse({{"message_start", kStart},
                          {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"}});
  while (body.size() < kMaxReplyBytes + (1 << 20)) body += delta;
  AnthropicOptions o;
  o.retry = NoWait();
  auto t = std::make_unique<CannedTransport>(200, body, 1 << 16);
  CannedTransport* raw = t.get();
  AnthropicProvider p(o, std::move(t));
  size_t shown = 0;
  StreamCallbacks cb;
  cb.on_text = [&](std::string_view d) { shown += d.size(); };
  auto r = p.Complete(Ask(), cb, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over 64 MiB"), std::string::npos) << r.status().message();
  EXPECT_EQ(raw->calls.load(), 1);
  EXPECT_LE(shown, kMaxReplyBytes);
  // One SSE line over 16 MiB.
  std::string line = "data: " + std::string(kMaxSseLineBytes + 10, 'y') + "\n\n";
  ExpectMalformed(Anthropic(Sse({{"message_start", kStart}}) + line + Sse({{"message_stop", "{}"}})), "longer than");
}

// Item 3: a server's 401 that echoes the key was printed verbatim.
TEST(HostileReplyTest, AServerEchoingTheKeyHasItRedacted) {
  Secrets::Add("TEST_KEY", "sk-ant-echoed-secret-0123456789");
  auto a = Anthropic(R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-echoed-secret-0123456789"}})",
                     true, 401);
  ASSERT_FALSE(a.reply.ok());
  EXPECT_EQ(a.reply.status().message().find("sk-ant-echoed-secret"), std::string::npos) << a.reply.status().message();
  EXPECT_NE(a.reply.status().message().find("[redacted]"), std::string::npos);
  auto o = OpenAI("bad key: sk-ant-echoed-secret-0123456789", true, 401);
  EXPECT_EQ(o.reply.status().message().find("sk-ant-echoed-secret"), std::string::npos);
  // Error bodies of the wrong shape are said as they are.
  auto odd = Anthropic(R"({"error":{"message":42,"type":null}})", true, 400);
  EXPECT_NE(odd.reply.status().message().find("HTTP 400"), std::string::npos) << odd.reply.status().message();
}

// The retry loop's waits go through a Clock: retry-after is honoured (30 s
// twice here) and a test sees it without waiting a minute.
TEST(HostileReplyTest, RetryWaitsGoThroughTheClock) {
  FakeClock clock;
  AnthropicOptions o;
  o.stream = false;
  o.retry.clock = &clock;
  auto t = std::make_unique<ScriptedTransport>(std::vector<std::pair<int, std::string>>{
      {429, R"({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}})"},
      {529, R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})"},
      {200, R"({"id":"m","content":[{"type":"text","text":"at last"}],"stop_reason":"end_turn"})"}});
  ScriptedTransport* raw = t.get();
  AnthropicProvider p(o, std::move(t));
  auto start = SteadyClock::now();
  auto r = p.Complete(Ask(), {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Text(), "at last");
  EXPECT_EQ(raw->calls, 3u);
  EXPECT_EQ(clock.waits, (std::vector<double>{30, 30}));
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(5));
  // A cancelled wait ends the call as cancelled.
  CancelToken cancel;
  cancel.Cancel();
  auto t2 = std::make_unique<ScriptedTransport>(std::vector<std::pair<int, std::string>>{{429, "{}"}});
  AnthropicProvider p2(o, std::move(t2));
  EXPECT_EQ(p2.Complete(Ask(), {}, &cancel).status().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace mates::llm
