// What agent CLIs record of their usage, as mates reads it back
// (tmux/cli_usage.h): Claude Code's transcripts, Codex's rollouts and
// Gemini CLI's chat logs are files other programs (or a person) wrote.
// Whatever they hold, nothing crashes, counts never go negative, a call
// is at most a line, and the model named came from the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tmux/cli_usage.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* cli : {"claude", "codex", "gemini"}) {
    // No marker: every input is read as the member's session.
    auto u = mates::tmux::SessionUsage(cli, text, {});
    Check(u.has_value());
    Check(u->usage.input_tokens >= 0 && u->usage.output_tokens >= 0 && u->usage.cache_read_input_tokens >= 0 &&
          u->usage.cache_creation_input_tokens >= 0);
    Check(u->calls >= 0 && static_cast<size_t>(u->calls) <= size);
    Check(u->model.size() <= size);
    // A marker the input lacks: not the member's.
    Check(!mates::tmux::SessionUsage(cli, text, {std::string(size + 1, 'x')}).has_value());
  }
  return 0;
}
