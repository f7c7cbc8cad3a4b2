// A Claude Code agent team as a TeamStore (DESIGN §24), so that what shows
// a mates team — `mates status`, its `--watch`, the dashboard's page and
// API, the attention list — shows one of Claude Code's as it is, from the
// files claude_team.h reads. The store URL is `claude:` (Claude Code's
// home, claude_team.h) or `claude:DIR` (that folder as the home).
//
// What maps to what: the roster is config.json (the lead is the member
// whose agentId is leadAgentId; a member is hosted while the lead's Claude
// Code runs); the board is tasks/<team>/; the log is every message
// delivered (from the transcripts) or waiting (the inboxes, `read`
// false), by time; protocol messages keep their type in `protocol`; the
// requests are the shutdown and plan requests among them, pending until an
// answer names them; each member's activity document is made from its
// transcript: state, the tool it runs, its model calls, tokens and cost
// from mates' price table; its journal is its transcript, as mates'
// journal lines. A person may send a member a message (Claude Code's inbox
// format, from "user") and create a task; everything else is refused
// with FailedPrecondition ("Claude Code's team: read-only here").
#pragma once

#include <memory>
#include <string>

#include "core/env.h"
#include "core/status.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::claude {

// Whether `url` names a Claude Code home ("claude:" or "claude:DIR").
bool IsClaudeStoreUrl(const std::string& url);
// The store of the Claude Code home `url` names; `ws` is where a person
// works (archives are refused: there is nothing of mates' to archive);
// `env`'s watcher turns its files' changes into wake-ups, and its prices
// price its members' usage.
Result<std::unique_ptr<TeamStore>> OpenClaudeStore(const std::string& url, const Workspace& ws, const Env& env);

}  // namespace mates::claude
