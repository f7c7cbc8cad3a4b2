// Teammate: one persistent teammate (seed v9): its own thread, AgentLoop,
// context, journal and teammate tools.
//
//   spawn -> active (work) -> idle -> active … -> shutdown
//
// Idle, it waits on one Waker subscribed to its inbox and placed in the
// process's claim line for the task board (store/claim_line.h: a change
// wakes as many idle teammates as there is work; stat polling where inotify
// is missing): a message resumes
// it; otherwise it claims a task (its assigned ones first, then the lowest
// claimable) and resumes with "Task #id: subject\ndescription"; after
// `idle_timeout` with no work it shuts down gracefully.
// Protocols: a shutdown_request gets a wrap-up turn that must answer it
// (approve: the teammate exits; reject: it goes on; no answer: one reminder,
// then it is stopped). A plan-mode teammate may only read until its plan is
// approved (checked before every model call).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "agent/agent_loop.h"
#include "core/clock.h"
#include "core/waker.h"
#include "store/claim_line.h"
#include "store/roster.h"
#include "store/team_store.h"
#include "store/watcher.h"
#include "team/status_writer.h"
#include "team/team_options.h"
#include "tools/tool.h"

namespace mates::team {

// What a teammate tells its host of itself (TeamManager implements it).
class TeammateHooks {
 public:
  virtual ~TeammateHooks() = default;
  // Its status changed (the lead is woken when nobody works any more).
  virtual void OnStatus(const std::string& name, MemberStatus status, const std::string& detail) = 0;
  // A shutdown request reached it (the watchdog starts), and it answered.
  virtual void OnShutdownDelivered(const std::string& name) = 0;
  virtual void OnShutdownDone(const std::string& name) = 0;
  // It stopped for good in its own worktree: what was kept, in words.
  virtual std::string CleanUpWorktree(const std::string& team, const std::string& name) = 0;
  // Whoever waits on teammates' states looks again.
  virtual void WakeWaiters() = 0;
};

// What a teammate works with, given by its host (which outlives it):
// references, not the host.
struct TeammateEnv {
  Workspace ws;
  llm::Provider& provider;
  agent::AgentEvents* events;  // may be null
  const TeamOptions& options;
  TeamStore& store;
  StatusWriter& statuses;
  std::string lead;  // the lead's name
  TeammateHooks& hooks;
};

// Why a teammate stopped: what decides whether the next host resumes it.
// Its text (for the lead and the roster) is kept apart.
enum class StopReason {
  kNone,
  kHostStopped,          // its host is stopping: resumable (left idle)
  kIdleTimeout,          // no work for idle_timeout
  kShutdownApproved,     // it approved a shutdown request
  kShutdownUnanswered,   // it did not answer one (in time)
  kTurnsFailing,         // its model calls keep failing
  kJournal,              // its journal could not be opened
  kTeamGone,             // its team was deleted under it
  kBudget,               // its token budget or the team's is spent
  kTakenOver,            // another host hosts it now (its liveness was lost)
  kPaused,               // a circuit breaker paused it (agent/breaker.h): `mates restart`
  kHandedOff,            // its host cannot write what it must (a full disk): left to another host
};
// Whether a teammate stopped for this reason is resumed by the next host.
inline bool Resumable(StopReason r) { return r == StopReason::kHostStopped || r == StopReason::kHandedOff; }

class Teammate {
 public:
  struct Config {
    std::string team;
    std::string name;
    std::string prompt;  // the lead's instructions (first message, and in the system prompt)
    std::string model;
    bool plan_mode = false;
    bool resume = false;      // take the conversation from the journal
    bool new_prompt = true;   // `prompt` is the next message (spawned or revived)
    fs::path work_root;        // its own git worktree (DESIGN §12); "" = the workspace
    TeamGit git;               // where its work merges (with work_root)
    int64_t budget_tokens = 0;   // its own token budget (0 = none)
    int64_t context_budget = 0;  // compacts above this (0 = the host's setting)
  };

  // `host_lock`: this process's claim to host it, its liveness in the
  // store (held until it exits).
  Teammate(Config config, TeammateEnv env, std::unique_ptr<Hold> host_lock);
  ~Teammate();
  Teammate(const Teammate&) = delete;
  Teammate& operator=(const Teammate&) = delete;

  void Start();
  // Asks the thread to end; `force` interrupts the current model call or
  // tool too (for good: a turn starting after it is stopped at once). The
  // first reason given stands; `why` is what the lead is told.
  void Stop(bool force, StopReason reason, const std::string& why);
  void Join();
  // A person's interrupt (DESIGN §27): the turn it is in ends at the next
  // safe point (its model call cancelled, its tool killed) and it rests,
  // claiming nothing, until a message comes, told `why` then. False when
  // it is not in a turn.
  bool Interrupt(const std::string& why) { return loop_->InterruptToRest(why); }

  const std::string& name() const { return config_.name; }
  bool finished() const { return finished_.load(); }
  // Why it stopped (kNone while it runs).
  StopReason stop_reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_reason_;
  }
  // Handed off (kHandedOff) within the last `seconds`: this host, which
  // could not write for it, does not take it back meanwhile.
  bool HandedOffWithin(double seconds) const {
    const double at = handed_off_at_.load();
    return at > 0 && std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count() - at < seconds;
  }
  // Finished, and its last status is in the lead's news.
  bool reported() const { return reported_.load(); }
  MemberStatus status() const { return status_.load(); }
  // Active, idle but in the middle of claiming a task, or not yet past its
  // start (a resumed journal replayed, a first status set).
  bool working() const {
    return status_.load() == MemberStatus::kActive || claiming_.load() || starting_.load();
  }
  const agent::UsageMeter& usage() const { return loop_->usage(); }
  std::string model() const { return loop_->model(); }

 private:
  class EventsTap;

  void Main();
  // Brings the target into its worktree, if it has one (a fast-forward, or
  // a merge that would not conflict, only in a clean worktree); what to
  // tell it when that could not be done ("" when done or not isolated).
  std::string RefreshWorktree();
  // Where this host takes it up: the machine's name and the workspace
  // ("HOST:W"), which hold its files and worktree.
  std::string Place() const;
  // Waits for work: a message, or a task it claimed; false when it is to stop.
  // Woken by its inbox's and the board's changes, claiming through the
  // store's board; a store it cannot reach is waited out.
  bool IdleWait();
  // One look for work in the board (through the claim line when in it): a
  // task handed to it (`handed`) or claimed, or none.
  Result<std::optional<Task>> LookForTask(ClaimLine::Place& place, bool in_line, bool* handed);
  // IdleWait after a person's interrupt: it waits for a message only
  // (no claim, out of the claim line); false when it is to stop.
  bool RestWait();
  // Whether a TeammateIdle hook blocked its going idle (its words queued).
  bool IdleHookKeepsWorking(int* blocks);
  // Makes what IdleWait waits on, once: whether it is all watched.
  bool WatchForWork();
  // Whether this host still hosts it (a lost liveness lock is looked at
  // now, not at the keeper's next look); false: taken over, stopping.
  // Its lease could not be renewed just now (the store out of reach), and
  // it was not found taken: an idle teammate then does nothing (claims
  // nothing, takes in nothing) until it is renewed, or found taken (then it
  // stops, as taken over). Ending it there shut it down for good.
  bool Unrenewed();
  bool StillHosted();
  // What ends an idle wait before it looks at the board: a stop, its
  // budget spent or another host hosting it (false), input waiting (true);
  // nullopt if none.
  std::optional<bool> IdleEnds();

  // After a look that claimed nothing (`claim`: how the claim went): no
  // longer claiming, whoever waits told; true if the board is gone (the
  // stop reason is set).
  bool BoardGoneAfterMiss(const Status& claim);
  // The idle timeout ran out (the stop reason is set).
  bool IdleTimedOut(const Deadline& deadline);
  // The task is its work now: told to the agent, status active.
  void TakeTask(const Task& t);
  std::string LeaseOverlapNotice(const Task& t);
  void GiveBackClaim(const Task& t);
  void WaitIdle(uint64_t seen, const Deadline& deadline, bool seed_polling, bool watched);
  // After a resume: tells the agent which of its tasks are still in
  // progress; the board's error when it cannot be read.
  Status RemindOfTasksInProgress();
  void SetStatus(MemberStatus s, const std::string& detail = "");
  // Records why it stops, unless a reason was given already.
  void SetStopReason(StopReason reason, const std::string& detail);
  // Plan approval: lifts plan mode once the lead approved a plan of ours.
  void CheckPlanApproval();
  // Shutdown requests delivered to us: approved / pending ones.
  bool ShutdownApproved();
  bool ShutdownPending();

  // Constant after construction.
  const Config config_;
  const TeammateEnv env_;
  std::unique_ptr<Hold> host_lock_;

  tools::ToolContext ctx_;  // the agent's thread only (plan_mode changes)
  std::unique_ptr<tools::ToolRegistry> tools_;
  std::unique_ptr<EventsTap> events_;
  std::unique_ptr<agent::AgentLoop> loop_;
  std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  // The agent's thread only, from its first idle wait to the end of Main
  // (WatchForWork): its inbox's watch, the store's claim line for its
  // board (or, where the store has none, a watch of the board), and the
  // board.
  std::unique_ptr<Hold> inbox_watch_;
  std::shared_ptr<ClaimLine> line_;
  std::unique_ptr<Hold> board_watch_;
  std::unique_ptr<TaskBoard> board_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  // Another host took it over: its roster entry is that host's now.
  std::atomic<bool> taken_over_{false};
  std::atomic<bool> finished_{false};
  std::atomic<double> handed_off_at_{0};  // steady seconds when handed off (0: never)
  std::atomic<bool> reported_{false};
  std::atomic<MemberStatus> status_{MemberStatus::kIdle};
  // From its making until Main has set its first status: a teammate whose
  // thread has not run yet, or is replaying a long journal, is about to
  // work, and the lead waiting for its team must not find it idle.
  std::atomic<bool> starting_{true};
  std::atomic<bool> claiming_{false};

  mutable std::mutex mu_;
  std::set<std::string> shutdown_requests_;  // delivered to us, guarded by mu_
  StopReason stop_reason_ = StopReason::kNone;  // guarded by mu_
  std::string stop_detail_;                  // guarded by mu_: the reason in words
};

}  // namespace mates::team
