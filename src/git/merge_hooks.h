// The person's merge hooks (DESIGN §22), mates' own events on Claude Code's
// contract: MergeQueued when the queue takes a request, before anything is
// merged or checked (a block bounces it to its owner, the hook's words the
// reason); MergeDecided once a request is merged, bounced or rejected
// (what it says is for people only). A MergeQueued matcher is tried on the
// request's owner, a MergeDecided one on its new state (merged, conflict,
// failed, rejected).
//
// The input is the agent events' (session_id merge-queue@TEAM, cwd,
// team_name, agent_name merge-queue) with `merge` (the request as `mates
// merges show --json` has it) and `task` ({id, subject}). The hooks run
// in the merge checks' sandbox, from the workspace.
#pragma once

#include <memory>
#include <string>

#include "hooks/hooks.h"
#include "sandbox/sandbox.h"
#include "store/merges.h"
#include "store/workspace.h"

namespace mates::git {

struct MergeHooks {
  std::shared_ptr<const hooks::Runner> runner;  // null: none
  std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off();
  Workspace ws{"."};
};

// Runs `e`'s hooks for `m` of `team`; an empty outcome when there are
// none. Errors (a hook that failed, timed out) are logged for people.
hooks::Outcome RaiseMergeHook(const MergeHooks& h, hooks::Event e, const std::string& team, const MergeRequest& m);

}  // namespace mates::git
