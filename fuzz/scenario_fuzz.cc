// libFuzzer target: scenario loading (JSON and YAML) and a reply from what
// loaded.
#include <cstddef>
#include <cstdint>
#include <string>

#include "llm/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* names[] = {"s.json", "s.yaml", "s"};
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto sc = mates::llm::Scenario::Parse(text, names[data[0] % 3]);
  if (sc.ok()) {
    (void)sc->Reply("lead", "Task #3: migrate the API");
    (void)sc->Reply("lead", text.substr(0, 64), /*consume=*/false);
  }
  return 0;
}
