// libFuzzer target: the HTTP providers' reply assembly (Anthropic, OpenAI
// Chat, OpenAI Responses, Gemini; the first byte chooses). The input is a
// server's reply body: streamed (SSE into the accumulators) and whole
// (JSON).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json.h"
#include "llm/anthropic.h"
#include "llm/gemini.h"
#include "llm/openai.h"
#include "llm/openai_responses.h"
#include "llm/retry.h"
#include "llm/sse.h"

using namespace mates;
using namespace mates::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int api = data[0] % 4;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string shown;
  TextDeduper text([&](std::string_view d) { shown.append(d); });
  if (api >= 2) {  // the providers whose readers are StreamReaders
    std::unique_ptr<StreamReader> acc;
    if (api == 2) {
      acc = std::make_unique<ResponsesStreamAccumulator>(&text);
    } else {
      acc = std::make_unique<GeminiStreamAccumulator>(&text);
    }
    SseParser sse([&](const SseEvent& e) { acc->OnEvent(e); });
    sse.Feed(body);
    if (acc->complete() && !acc->failed()) {
      auto r = acc->Take();
      if (r.ok()) (void)DumpJson(ResponseToJson(*r));
    }
    auto j = ParseJson(body);
    if (j.ok()) (void)(api == 2 ? ResponsesResponseFromJson(*j) : GeminiResponseFromJson(*j));
  } else if (api == 1) {
    OpenAIStreamAccumulator acc(&text);
    SseParser sse([&](const SseEvent& e) { acc.OnData(e.data); });
    sse.Feed(body);
    if (acc.done() && !acc.failed()) {
      auto r = acc.TakeResponse();
      if (r.ok()) (void)DumpJson(ResponseToJson(*r));
    }
    auto j = ParseJson(body);
    if (j.ok()) (void)OpenAIResponseFromJson(*j);
  } else {
    AnthropicStreamAccumulator acc(&text);
    SseParser sse([&](const SseEvent& e) { acc.OnEvent(e); });
    sse.Feed(body);
    if (acc.complete() && !acc.failed()) (void)DumpJson(ResponseToJson(acc.TakeResponse()));
    auto j = ParseJson(body);
    if (j.ok()) {
      auto r = AnthropicResponseFromJson(*j);
      if (r.ok()) (void)DumpJson(ResponseToJson(*r));
    }
  }
  (void)StatusForHttpError(429, body);
  return 0;
}
