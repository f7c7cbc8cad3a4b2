// libFuzzer target: the SSE parser fed arbitrary bytes in arbitrary chunks.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "llm/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size: lines and CRLFs cut anywhere.
  const size_t chunk = 1 + data[0] % 17;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t events = 0;
  mates::llm::SseParser parser([&](const mates::llm::SseEvent& e) { events += e.data.size() + e.event.size(); },
                               /*max_line=*/4096);
  for (size_t i = 0; i < bytes.size(); i += chunk) parser.Feed(bytes.substr(i, chunk));
  parser.Finish();
  return 0;
}
