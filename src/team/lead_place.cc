// See lead_place.h.
#include "team/lead_place.h"

#include "core/log.h"

namespace mates::team {

LeadPlace::LeadPlace(Workspace ws, TeamStore& store, agent::AgentLoop* lead, tools::ToolContext* lead_ctx)
    : ws_(std::move(ws)),
      store_(store),
      lead_(lead),
      lead_ctx_(lead_ctx),
      home_(lead_ctx->home_team.empty() ? lead_ctx->team : lead_ctx->home_team),
      team_(lead_ctx->team) {}

std::string LeadPlace::team() {
  std::lock_guard<std::mutex> lock(mu_);
  return team_;
}

void LeadPlace::KeepAway(std::unique_ptr<Hold> held) { away_ = std::move(held); }

void LeadPlace::SetOnMoved(std::function<void(const std::string&, const std::string&)> moved) {
  on_moved_ = std::move(moved);
}

void LeadPlace::MoveTo(const std::string& team) {
  const std::string from = lead_ctx_->team;
  // Hosted here now: the lead of that team is this process's, as its home
  // team's is (the lock of the team it leaves goes).
  away_.reset();
  if (team != home_) {
    auto held = store_.HoldLiveness(team, lead_name());
    if (held.ok()) {
      away_ = std::move(*held);
    } else {
      LogWarning("the lead of team " + team + " is not shown as hosted here: " + held.status().message());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    team_ = team;
  }
  lead_ctx_->team = team;
  Status s = lead_->MoveJournal(ws_.JournalPath(team, lead_name()), store_.JournalOf(team, lead_name()),
                                team, team == home_);
  if (!s.ok()) LogWarning("lead journal: " + s.message());
  if (on_moved_) on_moved_(from, team);
}

}  // namespace mates::team
