// The team as MCP tools (DESIGN §14): what `mates mcp` serves to an external
// agent that joins a team as one of its members. The board and message
// tools run the built-in tools' code (tools/), so an external agent meets
// the same role rules and the same messages as a mates agent.
#pragma once

#include <string>
#include <vector>

#include "mcp/server.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::mcp {

// Who the server speaks as: a member of `team` (or `user`, a person).
struct TeamIdentity {
  Workspace ws{"."};
  std::string team;
  std::string name;
  // The store the team is in (DESIGN §13), which must outlive the tools.
  TeamStore& store;
};

// The longest read_inbox wait a call may ask for.
inline constexpr double kMaxInboxWaitSeconds = 3600;

// send_message, read_inbox, list_tasks, get_task, create_task, update_task,
// claim_task, team_status.
std::vector<ToolSpec> TeamTools(const TeamIdentity& who);
// What the initialize result tells the client about them.
std::string TeamInstructions(const TeamIdentity& who);

}  // namespace mates::mcp
