#include "tmux/agent_clis.h"

#include <array>

namespace mates::tmux {

std::span<const KnownCli> KnownClis() {
  // The versions the tests run (scripts/setup-claude-code, setup-qwen-code,
  // setup-agent-clis); Qwen Code's last release for Node 20.
  static constexpr std::array<KnownCli, 5> kClis = {{
      {"claude", "Claude Code", "npm install -g @anthropic-ai/claude-code"},
      {"codex", "Codex", "npm install -g @openai/codex"},
      {"gemini", "Gemini CLI", "npm install -g @google/gemini-cli"},
      {"opencode", "OpenCode", "npm install -g opencode-ai"},
      {"qwen", "Qwen Code", "npm install -g @qwen-code/qwen-code@0.15.10"},
  }};
  return kClis;
}

const KnownCli* KnownCliOf(std::string_view program) {
  const size_t slash = program.rfind('/');
  if (slash != std::string_view::npos) program.remove_prefix(slash + 1);
  for (const KnownCli& c : KnownClis()) {
    if (c.program == program) return &c;
  }
  return nullptr;
}

}  // namespace mates::tmux
