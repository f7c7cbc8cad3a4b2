// What `cluster up` gives an agent CLI beyond its command (DESIGN §28): the
// options and environment that make it reach the team as its member
// through `mates mcp` — the team's tools allowed, as the person allowed
// them by putting the agent in the cluster — and reach its model at
// `model_url`, each CLI in its own way, and the files those name, written
// into the cluster's state folder.
//
//   Claude Code  --mcp-config=FILE --allowedTools=mcp__mates; ANTHROPIC_BASE_URL
//   Qwen Code    --mcp-config=FILE (the server trusted); OPENAI_BASE_URL
//   Codex        -c mcp_servers.mates.… (tools approved); -c model_providers.mates.…
//                (the Responses API, key from OPENAI_API_KEY)
//   Gemini CLI   GEMINI_CLI_HOME=DIR, a home of its own whose settings.json has
//                mcpServers (trusted) and the API key chosen;
//                GEMINI_CLI_TRUST_WORKSPACE=true; GOOGLE_GEMINI_BASE_URL
//   OpenCode     OPENCODE_CONFIG=FILE (mcp, the personality as instructions, with a
//                model_url an openai-compatible provider keyed by OPENAI_API_KEY)
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "telemetry/otlp.h"
#include "tmux/cluster_config.h"

namespace mates::tmux {

struct CliWiring {
  std::vector<std::string> args;  // after the program
  std::map<std::string, std::string> env;
};

// `mcp_server`: the command line of `mates mcp` as the agent (empty when
// the agent is not on MCP). Files go into `dir`, named after the agent.
Result<CliWiring> WireCli(const AgentConfig& a, const std::vector<std::string>& mcp_server,
                          const std::filesystem::path& dir);

// The name `cli` shows its model for the mates server's `tool`:
// mcp__mates__T (Claude Code, Qwen Code; Codex's namespace mcp__mates),
// mcp_mates_T (Gemini CLI), mates_T (OpenCode).
std::string McpToolName(CliPreset cli, std::string_view tool);

// `s` as a TOML basic string, quotes included (Codex's -c values are TOML).
std::string TomlString(std::string_view s);

// Codex reads no OTEL_* variable: its telemetry goes where its config's
// otel.exporter (events), otel.trace_exporter and otel.metrics_exporter
// say. The `-c` arguments that send each where the team's goes (DESIGN
// §29); none when telemetry is off.
std::vector<std::string> CodexTelemetryArgs(const telemetry::OtlpConfig& otlp);

}  // namespace mates::tmux
