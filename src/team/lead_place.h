// LeadPlace: where a host's lead works (DESIGN §5, §11). One team at a
// time: TeamCreate moves the lead into the team it made (its board,
// messages, inbox and journal follow), TeamDelete brings it home. While it
// works away from home this host holds its liveness there too (one lead per
// team: no other host takes on the lead of a team this one made), and
// whoever must know (the host's host.json and pages) is told of each move.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "agent/agent_loop.h"
#include "store/team_store.h"
#include "store/workspace.h"
#include "tools/tool.h"

namespace mates::team {

class LeadPlace {
 public:
  // `lead` and `lead_ctx` (the lead's loop and tool context) and `store`
  // outlive this.
  LeadPlace(Workspace ws, TeamStore& store, agent::AgentLoop* lead, tools::ToolContext* lead_ctx);
  LeadPlace(const LeadPlace&) = delete;
  LeadPlace& operator=(const LeadPlace&) = delete;

  // The team it works in now; any thread.
  std::string team();
  // The team the run is for (the lead's ToolContext::home_team, else the
  // team it begins in).
  const std::string& home() const { return home_; }
  const std::string& lead_name() const { return lead_ctx_->agent; }
  // Moves it (on the lead's thread): its context, its journal, its
  // liveness away from home; then tells `moved`.
  void MoveTo(const std::string& team);
  // A session that begins with its lead in a team it made (where its last
  // session left it): its liveness there, kept until it leaves.
  void KeepAway(std::unique_ptr<Hold> held);
  // Told, on the lead's thread, of each move (from, to). Set before the
  // lead's first turn; nullptr before what it calls goes.
  void SetOnMoved(std::function<void(const std::string& from, const std::string& to)> moved);

 private:
  // Constant after construction.
  const Workspace ws_;
  TeamStore& store_;
  agent::AgentLoop* const lead_;
  tools::ToolContext* const lead_ctx_;  // its team changes (lead's thread only)
  const std::string home_;

  // The lead's thread only.
  std::unique_ptr<Hold> away_;  // its liveness in the team it works in, away from home
  std::function<void(const std::string&, const std::string&)> on_moved_;

  std::mutex mu_;
  std::string team_;  // guarded by mu_: lead_ctx_->team for other threads
};

}  // namespace mates::team
