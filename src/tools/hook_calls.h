// The agent side of hooks (DESIGN §22): what a hook is told of an agent
// and its tool calls, in Claude Code's words, and where it runs.
//
// A hook written for Claude Code matches and reads Claude Code's tool
// names and inputs, so mates' file and shell tools are shown to it as
// Claude Code's: bash as Bash ({command, timeout in ms}), read_file as
// Read, write_file as Write and edit_file as Edit ({file_path absolute,
// content, old_string, new_string, replace_all}); a matcher may name
// either ("Bash" or "bash"). An updatedInput comes back the same way.
// Other tools (TaskCreate, SendMessage, mcp__…) keep their own names and
// inputs.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "hooks/hooks.h"
#include "tools/tool.h"

namespace mates::tools {

// The names a matcher is tried on: Claude Code's (if it has one) and mates'.
std::vector<std::string> HookToolNames(const std::string& tool);
// `input` (mates' shape) as Claude Code's tool would take it, and back.
Json ClaudeToolInput(const std::string& tool, const Json& input, const ToolContext& ctx);
Json MatesToolInput(const std::string& tool, const Json& input, const ToolContext& ctx);

// Every hook's input starts so: session_id (the agent, name@team),
// transcript_path (its journal), cwd, permission_mode, team_name,
// agent_name.
Json HookInput(const ToolContext& ctx);
// The agent's sandbox and place, the bash tool's environment (no secrets)
// with CLAUDE_PROJECT_DIR, its work folder.
hooks::Launch HookLaunch(const ToolContext& ctx);

// Runs `e`'s hooks for the agent of `ctx` if it has any; an outcome with
// nothing in it otherwise. Non-blocking errors are logged for people.
hooks::Outcome RunHooks(const ToolContext& ctx, hooks::Event e, const std::vector<std::string>& subjects,
                        Json input);

}  // namespace mates::tools
