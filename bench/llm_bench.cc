// LLM layer: SSE parsing throughput, and the client's cost per request
// against mates mock-llm next to a plain libcurl POST of the same request.
#include <benchmark/benchmark.h>
#include <curl/curl.h>

#include <nlohmann/json.hpp>

#include "llm/anthropic.h"
#include "llm/mock_server.h"
#include "llm/sse.h"

using namespace mates;
using namespace mates::llm;

namespace {

// A long Anthropic stream: many small text deltas, as real ones are.
std::string RecordedStream(size_t deltas) {
  std::string s =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
      "\"usage\":{\"input_tokens\":1000}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
  for (size_t i = 0; i < deltas; ++i) {
    s += "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
         "\"delta\":{\"type\":\"text_delta\",\"text\":\"token \xC3\xA9 " + std::to_string(i) +
         "\"}}\r\n\r\n";
  }
  s += "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
       "\"end_turn\"},\"usage\":{\"output_tokens\":500}}\n\nevent: message_stop\ndata: "
       "{\"type\":\"message_stop\"}\n\n";
  return s;
}

void BM_SseParse(benchmark::State& state) {
  const std::string stream = RecordedStream(20000);
  size_t events = 0;
  for (auto _ : state) {
    SseParser p([&](const SseEvent&) { ++events; });
    for (size_t i = 0; i < stream.size(); i += 4096) p.Feed(std::string_view(stream).substr(i, 4096));
  }
  benchmark::DoNotOptimize(events);
  state.SetBytesProcessed(static_cast<int64_t>(stream.size()) * state.iterations());
}

void BM_SseParseAndAccumulate(benchmark::State& state) {
  const std::string stream = RecordedStream(20000);
  for (auto _ : state) {
    TextDeduper text([](std::string_view) {});
    AnthropicStreamAccumulator acc(&text);
    SseParser p([&](const SseEvent& e) { acc.OnEvent(e); });
    for (size_t i = 0; i < stream.size(); i += 4096) p.Feed(std::string_view(stream).substr(i, 4096));
    benchmark::DoNotOptimize(acc.TakeResponse());
  }
  state.SetBytesProcessed(static_cast<int64_t>(stream.size()) * state.iterations());
}

std::unique_ptr<MockServer> g_server;

const char kScenario[] = R"({"default_reply": [{"type": "text", "text":
  "A reply of a few sentences, streamed in small pieces as a model would send it. It has some length to it so that parsing shows, but not so much that the network dominates."}]})";

MockServer& Server() {
  if (!g_server) {
    auto sc = Scenario::Parse(kScenario, "bench.json");
    if (!sc.ok()) {
      std::fprintf(stderr, "%s\n", sc.status().message().c_str());
      std::exit(1);
    }
    MockServerOptions o;
    o.log_requests = false;
    auto started = MockServer::Start(std::make_shared<Scenario>(std::move(*sc)), o);
    if (!started.ok()) {
      std::fprintf(stderr, "%s\n", started.status().message().c_str());
      std::exit(1);
    }
    g_server = std::move(*started);
  }
  return *g_server;
}

Request BenchRequest() {
  Request r;
  r.model = "mock";
  r.system = "You are a benchmark.";
  r.agent_id = "lead@bench";
  r.messages.push_back({Role::kUser, {ContentBlock::Text("Say something.")}});
  return r;
}

void BM_AnthropicClientRequest(benchmark::State& state) {
  AnthropicOptions o;
  o.base_url = Server().url();
  o.stream = state.range(0) != 0;
  AnthropicProvider p(o, NewCurlTransport());
  Request req = BenchRequest();
  for (auto _ : state) {
    auto r = p.Complete(req, {}, nullptr);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
  }
}

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

// The baseline: the same request body (built once), POSTed with libcurl on a
// reused handle, the response read and thrown away unparsed.
void BM_PlainCurlRequest(benchmark::State& state) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURL* h = curl_easy_init();
  std::string body = DumpJson(AnthropicRequestBody(BenchRequest(), "mock", state.range(0) != 0));
  std::string url = Server().url() + "/v1/messages";
  curl_slist* headers = curl_slist_append(nullptr, "content-type: application/json");
  for (auto _ : state) {
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Discard);
    // As the client does: accept compressed responses.
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (CURLcode rc = curl_easy_perform(h); rc != CURLE_OK) {
      state.SkipWithError((std::string("POST ") + url + ": " + curl_easy_strerror(rc)).c_str());
      break;
    }
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
}

}  // namespace

BENCHMARK(BM_SseParse)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SseParseAndAccumulate)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlainCurlRequest)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AnthropicClientRequest)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
