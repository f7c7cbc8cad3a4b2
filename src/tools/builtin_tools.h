// The built-in tools (DESIGN §5), one factory each.
#pragma once

#include <memory>

#include "tools/tool.h"

namespace mates::tools {

std::unique_ptr<Tool> MakeBashTool();
std::unique_ptr<Tool> MakeReadFileTool();
std::unique_ptr<Tool> MakeWriteFileTool();
std::unique_ptr<Tool> MakeEditFileTool();
std::unique_ptr<Tool> MakeTaskCreateTool();
std::unique_ptr<Tool> MakeTaskGetTool();
std::unique_ptr<Tool> MakeTaskUpdateTool();
std::unique_ptr<Tool> MakeTaskListTool();
std::unique_ptr<Tool> MakeSendMessageTool();
std::unique_ptr<Tool> MakeTaskTool();  // subagent / background / teammate
std::unique_ptr<Tool> MakeTaskOutputTool();
std::unique_ptr<Tool> MakeTaskStopTool();
std::unique_ptr<Tool> MakeSkillTool();
std::unique_ptr<Tool> MakeTeamCreateTool();
std::unique_ptr<Tool> MakeTeamDeleteTool();

// The environment a `bash` child gets: an allowlist (PATH, HOME, locale…)
// plus MATES_WORKSPACE, MATES_TEAM and MATES_AGENT_NAME so that `mates send`
// and `mates tasks` work from the shell. Nothing else: no API keys.
std::vector<std::string> BashEnvironment(const ToolContext& ctx);

}  // namespace mates::tools
