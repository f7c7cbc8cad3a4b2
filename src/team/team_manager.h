// TeamManager: the lead's teams (seed v8 layer 1: create_team,
// spawn_teammate, delete_team), behind TeamCreate, Task(team_name, name) and
// TeamDelete (DESIGN §5). What it composes, one concern each:
// - TeammateHost (teammate_host.h): the teammates this process hosts, their
//   threads and the shutdown watchdog; each teammate gets a TeammateEnv of
//   references, and tells the manager of itself through TeammateHooks;
// - LeadNews (lead_news.h): what the lead hears of them, coalesced;
// - LeadPlace (lead_place.h): the team the lead works in;
// - Adopter (adopter.h): on a shared store, teammates no host has;
// - the shutdown protocol (shutdown.h).
//
// - One team at a time: after TeamCreate the lead belongs to it (its task
//   board, messages and inbox, and its journal move there); TeamDelete
//   brings it back to the team it started in.
// - Shutdown: TeamDelete asks every teammate; each has `shutdown_timeout`
//   to answer; who does not is stopped, and the lead is told.
// - A host lock (agents/<name>.lock, an OFD lock) makes sure one process
//   hosts a teammate; a dead host's lock is released by the kernel, so
//   ResumeTeam can bring its teammates back from their journals (after
//   killing what their tools left running, core/process_tree.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_loop.h"
#include "core/waker.h"
#include "store/roster.h"
#include "store/team_store.h"
#include "team/adopter.h"
#include "team/lead_news.h"
#include "team/lead_place.h"
#include "team/team_options.h"
#include "team/status_writer.h"
#include "team/teammate.h"
#include "team/teammate_host.h"
#include "tools/tool.h"

namespace mates::team {



// What TeamDelete saw before the files went away.
struct TeamSummary {
  std::string team;
  std::map<std::string, int> messages_by_type;
  std::map<std::string, std::vector<int64_t>> tasks_by_owner;
  std::vector<std::string> stopped;  // "name (how)"
};

class TeamManager : public tools::TeamRuntime, private TeammateHooks {
 public:
  // `lead` and `lead_ctx` are the lead's loop and tool context (outlive
  // this); `on_spawn` is told of each teammate started (for colours).
  TeamManager(Workspace ws, llm::Provider* provider, agent::AgentEvents* events, TeamOptions options,
              agent::AgentLoop* lead, tools::ToolContext* lead_ctx,
              std::function<void(const Member&)> on_spawn = {});
  ~TeamManager() override;
  TeamManager(const TeamManager&) = delete;
  TeamManager& operator=(const TeamManager&) = delete;

  Result<std::string> CreateTeam(const std::string& name, const std::string& description,
                                 const std::string& isolation) override;
  Result<std::string> SpawnTeammate(const tools::TeammateSpec& spec) override;
  Result<std::string> DeleteTeam(const std::string& name) override;
  Result<std::string> PullLever(const std::string& action, const std::string& name) override;

  // Brings back the teammates of the lead's team that were working or idle
  // when their host died or stopped (resumed from their journals), and
  // that no process hosts now. Returns their names. `grace_s`: how long a
  // host that is starting allows for its dead predecessor's locks
  // (kDeadHostGraceS, for all of them together); the adopter, looking every
  // second, allows none.
  Result<std::vector<std::string>> ResumeTeam(double grace_s = 0);

  // For the lead's waiting loop: a teammate is working, or an idle one has
  // unread messages or a task it could claim (it is about to work).
  bool AnyActive();
  // Work the team waits on besides its teammates (the merge queue); counted
  // by AnyActive. nullptr to drop it (before what it calls goes away).
  void SetBusyElsewhere(std::function<bool()> busy);
  // What the lead hears of its teammates, coalesced: for the lead's session,
  // Pending, Take (the text for its next turn) and the waker notified on
  // news worth waking it for.
  LeadNews& news() { return news_; }

  // From now until StopAll, the lead's team is looked after at each change
  // of its roster or board and every `every_s` seconds (Adopter): with
  // `adopt` (a store several hosts share, DESIGN §13), its teammates that
  // no process hosts (their host died or stopped) are resumed here; with
  // `respawn` (`up --respawn on-work`, DESIGN §27), a task that waits with
  // no live teammate to take it brings a stopped one back. `said` hears
  // each thing done, in words. Once.
  void StartLookingAfter(double every_s, bool adopt, bool respawn, std::function<void(const std::string&)> said);

  // Stops every teammate (those working are interrupted), joins their
  // threads. Statuses stay idle so the next host resumes them.
  void StopAll();
  // Interrupts every teammate for good without waiting (from the signal
  // thread); StopAll joins them later.
  void InterruptAll(const std::string& why);
  // Where the lead works: its team now (TeamCreate and TeamDelete move it;
  // any thread), the team the run is for, who is told when it moves, a
  // session that begins away from home (LeadPlace).
  LeadPlace& place() { return place_; }
  const LeadPlace& place() const { return place_; }
  // Under a budget: what the session spent in the teams it made since the
  // last time, recorded in its own team's budget (after a team is deleted,
  // and at the session's end), so that its next session counts it.
  void RecordSpendElsewhere();
  std::optional<TeamSummary> last_deleted();
  // The teams deleted (and archived) in this run, in the order deleted.
  std::vector<std::string> deleted_teams();
  // Tokens used by all teammates so far, as text, priced at `prices` (for
  // the end of a run).
  std::string UsageSummary(const agent::PriceTable& prices);

  // A person's levers on one teammate of the lead's team (DESIGN §27);
  // each answers what it did in words, or one clear error.
  // Stop: a shutdown request from the lead (`why` its words); one that
  // does not answer in `shutdown_timeout` is stopped.
  Result<std::string> StopTeammate(const std::string& name, const std::string& why);
  // Restart: a stopped or failed teammate (or one no host has) comes back
  // here with its identity, journal and context, told so; refused while it
  // runs.
  // `by`: who pulled it, as the teammate is told.
  Result<std::string> RestartTeammate(const std::string& name, const std::string& by = "the person (mates restart)");
  // Interrupt: its turn ends at the next safe point and it rests until a
  // message comes; refused when it is not working.
  Result<std::string> InterruptTeammate(const std::string& name,
                                        const std::string& by = "The person interrupted your last turn (mates "
                                                                "interrupt)");

  // Whether `name` is a teammate of this host that has not finished.
  bool Running(const std::string& name);
  // Wakes whoever waits on teammates' states (the lead, TeamDelete).
  void WakeWaiters() override;
  const Workspace& ws() const { return ws_; }
  // Where the teams are kept (DESIGN §13): the lead's context's store.
  TeamStore& store() { return store_; }

 private:
  // TeammateHooks.
  void OnStatus(const std::string& name, MemberStatus status, const std::string& detail) override;
  void OnShutdownDelivered(const std::string& name) override;
  void OnShutdownDone(const std::string& name) override;
  // An isolated teammate stopped for good: its worktree and branch go if
  // clean and merged. Returns what was kept, in words ("" if nothing).
  std::string CleanUpWorktree(const std::string& team, const std::string& name) override;

  const std::shared_ptr<agent::TeamSpend>& spend() const { return options_.spend; }
  // One look of the Adopter: what it did, a line each.
  std::vector<std::string> LookAfterTeam();
  // A stopped teammate brought back for a task that waits, if no teammate
  // of the team is live (each one at most every 30 s, doubling to 10 min
  // while it keeps stopping); what was done ("" = nothing).
  std::string RespawnForWork();
  // The teammate `name` of the lead's team as a lever finds it: in the
  // roster, not the lead, one of this host's kind.
  Result<Member> LeverTarget(const std::string& name, const char* verb);
  // `held`: its liveness, taken already (null: taken here).
  Status StartTeammate(const Member& m, const std::string& prompt, bool resume, bool new_prompt,
                       std::unique_ptr<Hold> held = nullptr);
  // Its liveness; FailedPrecondition if another process hosts it.
  Result<std::unique_ptr<Hold>> HostMember(const std::string& team, const std::string& name);
  // The team's target set up (once) with this host's settings.
  Result<TeamGit> EnsureTarget(const std::string& team, const TeamConfig& c);
  // DeleteTeam's phases after the shutdown protocol (team/shutdown.h): how
  // each one ended (stopping those still running); what the team did.
  std::string HowItStopped(const std::string& team, const std::string& name);
  bool StoppedFor(const std::string& team, const std::string& name);
  void SummarizeWork(const std::string& team, TeamSummary* summary);

  // Constant after construction.
  const Workspace ws_;
  llm::Provider* const provider_;
  agent::AgentEvents* const events_;
  const TeamOptions options_;
  const std::function<void(const Member&)> on_spawn_;
  const std::shared_ptr<Waker> status_waker_ = std::make_shared<Waker>();  // any status change
  TeamStore& store_;

  LeadPlace place_;
  LeadNews news_;
  StatusWriter statuses_;  // outlives host_: teammates write statuses to their end
  TeammateHost host_;
  Adopter adopter_;  // stopped first by StopAll and InterruptAll
  std::atomic<bool> adopt_{false};
  std::atomic<bool> respawn_{false};
  // When each teammate was last respawned, and how long before the next
  // may be: the adopter's thread only.
  struct Respawned {
    SteadyClock::time_point at;
    double wait_s = 0;
  };
  std::map<std::string, Respawned> respawned_;

  std::mutex mu_;
  std::vector<std::string> deleted_teams_;   // guarded by mu_
  std::optional<TeamSummary> last_deleted_;  // guarded by mu_
  std::function<bool()> busy_elsewhere_;     // guarded by mu_
};

}  // namespace mates::team
