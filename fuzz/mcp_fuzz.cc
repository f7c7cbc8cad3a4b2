// libFuzzer target: MCP frames as `mates mcp` reads them (DESIGN §14). Each
// input is a session: its lines go one by one into a server with a tool
// that reads its arguments the way the team tools do. Every frame must be
// answered with at most one well-formed line, and nothing may throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "mcp/server.h"
#include "tools/tool.h"

using namespace mates;

namespace {

mcp::ToolSpec Reader() {
  mcp::ToolSpec t;
  t.name = "read";
  t.description = "Reads its arguments";
  t.input_schema = Json{{"type", "object"}};
  t.run = [](const Json& a, mcp::CallContext&) -> mcp::ToolOutcome {
    tools::InputReader in(a);
    (void)in.String("content", false);
    (void)in.Number("wait_seconds", 0, 0, 3600);
    (void)in.Id("task_id", false);
    (void)in.IdList("blockedBy");
    (void)in.Bool("peek", false);
    return {in.errors(), !in.ok()};
  };
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t frames = 0, written = 0;
  mcp::Server server({}, {Reader()}, [&](const std::string& frame) {
    ++written;
    if (frame.find('\n') != std::string::npos || !ParseJson(frame).ok()) std::abort();
  });
  size_t start = 0;
  while (start <= input.size()) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    std::string_view line = input.substr(start, end - start);
    if (!line.empty()) {
      ++frames;
      server.HandleFrame(line);
      if (written > frames) std::abort();  // one answer per frame at most
    }
    start = end + 1;
  }
  return 0;
}
