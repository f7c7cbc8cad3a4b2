// Forecaster: conflicts seen coming (DESIGN §30). Whenever an isolated
// teammate's worktree changes (a write, an edit, a command's end: the host
// calls Changed), a thread of the host snapshots it (a commit on no branch,
// git/worktrees.h) and merges it in memory (`git merge-tree`) with the
// team's target and with every other teammate's work in flight. A
// predicted conflict is put in the store (TeamStore::PutForecasts: status,
// its JSON and the page show it), and both owners and the lead are told,
// from merge-queue, before anyone submits; it goes when the work no
// longer conflicts (resolved, or one side landed and the other merged it).
//
// Changes are taken together: a pass starts `settle_s` after the first
// change it takes, and snapshots only the worktrees that changed. A
// teammate's work that landed (Landed) leaves the flight until it changes
// again.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "core/waker.h"
#include "store/forecast.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::git {

class Forecaster {
 public:
  struct Options {
    Workspace ws{"."};
    // The team to forecast for (the lead's: TeamCreate moves it); null
    // until Follow names one.
    std::function<std::string()> team;
    // What the lead should hear of a new forecast.
    std::function<void(const std::string&)> tell_lead;
    // The forecasts changed (they were put in the store).
    std::function<void()> on_change;
    double settle_s = 0.05;
    // The team's pane agents (members in tmux, DESIGN §28) run no tool of
    // the host's that could say Changed: with this, a pane agent with a
    // worktree is snapshotted every `pane_look_s` while its activity says
    // it works, and once more when it has worked since the last look.
    bool panes = false;
    double pane_look_s = 1.0;
    // Whether it forecasts now; null = always. One that does not stands
    // aside (forgets what it forecast and writes nothing) until it does: a
    // cluster's router forecasts for its pane agents only while no lead's
    // host forecasts for the team.
    std::function<bool()> serving;
  };
  Forecaster(TeamStore& store, Options options);
  ~Forecaster();
  Forecaster(const Forecaster&) = delete;
  Forecaster& operator=(const Forecaster&) = delete;

  // Forecasts for the team `team` names from now on (a host makes the
  // forecaster before the team manager its tools call into).
  void Follow(std::function<std::string()> team);
  // `member`'s worktree in `team` may have changed.
  void Changed(const std::string& team, const std::string& member);
  // `member`'s work landed on the target (its flight ends until it
  // changes again); the target moved.
  void Landed(const std::string& team, const std::string& member);
  // Ends the thread; its forecasts are emptied (a forecast lives with its
  // host).
  void Stop();
  // Passes made (tests, bench).
  uint64_t passes() const { return passes_.load(); }

 private:
  void Main();
  // Moves what changed in `team` out of the sets (under mu_).
  void Take(const std::string& team, std::set<std::string>* changed, std::set<std::string>* landed);
  // The pane agents of `team` whose worktree may have changed since the
  // last look (Options::panes); whether the team has any.
  bool LookAtPanes(const std::string& team, std::set<std::string>* changed);
  // Forgets what was forecast, writing nothing (Options::serving).
  void StandAside();
  void Pass(const std::string& team, std::set<std::string> changed, std::set<std::string> landed);
  void TakeSnapshots(const std::string& team, const TeamConfig& cfg, const std::set<std::string>& changed,
                     const std::set<std::string>& landed);
  void Publish(const std::string& team, std::vector<ConflictForecast> now);
  void Tell(const std::string& team, const ConflictForecast& f);

  const Options options_;
  TeamStore* const store_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> passes_{0};
  std::mutex mu_;
  std::function<std::string()> follow_;  // guarded by mu_
  std::string team_;  // the thread's own: the team served
  std::set<std::pair<std::string, std::string>> changed_;  // (team, member): guarded by mu_
  std::set<std::pair<std::string, std::string>> landed_;   // guarded by mu_
  // The thread's own: each member in flight's latest snapshot; the
  // private index folder; what was merged (a pair's key, both commits →
  // its conflicting files) so that an unchanged pair is not merged again;
  // the forecasts as last written.
  std::map<std::string, std::string> snapshots_;
  std::map<std::string, std::string> pane_seen_;  // a pane agent's activity (state, since) at the last look
  std::string index_dir_;
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> merged_;
  std::vector<ConflictForecast> current_;
  std::string written_team_;
  std::thread thread_;
};

}  // namespace mates::git
