// Which MCP servers a workspace's agents use (DESIGN §14): W/.mcp.json in
// Claude Code's format, so one file serves both —
//   {"mcpServers": {NAME: {"command": "npx", "args": [...], "env": {...}},
//                   NAME: {"type": "http", "url": "https://…", "headers": {...}}}}
// ("type": "stdio" may be said; `${VAR}` and `${VAR:-default}` are expanded
// in command, args, env, url and headers) — and the `mcp` section of mates'
// own W/.mates/config.yaml for what Claude Code's format has no word for:
//   mcp:
//     startup_timeout: 30      # seconds to start and list tools
//     call_timeout: 120        # seconds per tool call
//     elicitation: ask         # a server's questions: ask | accept_defaults | decline
//     elicitation_timeout: 300 # seconds a question waits for a person, then declined
//     sampling: serve          # a server's sampling/createMessage: serve (the lead's model) | decline
//     servers:
//       NAME: {roles: [lead], call_timeout: 600, elicitation: decline}
// roles: "lead", "teammate" or members' names; absent = everyone.
// .mcp.json's servers run only once the workspace is trusted (DESIGN §19,
// trust/trust.h).
#pragma once

#include <vector>

#include "mcp/client.h"
#include "store/workspace.h"
#include "trust/trust.h"

namespace mates::mcp {

// W/.mcp.json's servers with the settings of W/.mates/config.yaml, sorted
// by name. No .mcp.json: none. Anything wrong is InvalidArgument naming
// the file and the server. A .mcp.json that `trust` does not trust as it
// is (DESIGN §19) gives its servers as written, each `skipped` saying why.
Result<std::vector<ServerConfig>> LoadServerConfigs(const Workspace& ws, const trust::TrustStore& trust);
// Why `f`, a gated file of the workspace at `root`, is not used.
std::string UntrustedReason(const trust::FileState& f, const fs::path& root);

// Parses the text of a .mcp.json (`origin` names it in errors); `${VAR}`s
// are expanded only if `expand`.
Result<std::vector<ServerConfig>> ParseMcpJson(std::string_view text, const std::string& origin, bool expand = true);

// Whether `agent` (the lead or not) gets the server's tools.
bool ServesRole(const ServerConfig& c, const std::string& agent, bool is_lead);

}  // namespace mates::mcp
