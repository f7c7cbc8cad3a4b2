// libFuzzer target: both providers' reply assembly. The input is a server's
// reply body: streamed (SSE into the accumulators) and whole (JSON).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json.h"
#include "llm/anthropic.h"
#include "llm/openai.h"
#include "llm/retry.h"
#include "llm/sse.h"

using namespace mates;
using namespace mates::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool openai = (data[0] & 1) != 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string shown;
  TextDeduper text([&](std::string_view d) { shown.append(d); });
  if (openai) {
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
