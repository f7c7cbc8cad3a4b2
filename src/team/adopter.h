// Adopter: a thread that looks after the teammates of the lead's team at
// each change of its roster or board and every few seconds (a dead host's
// liveness lock goes without a word): on a store several hosts share
// (DESIGN §13) it takes on those no process hosts (their host died or
// stopped); under `up --respawn on-work` (DESIGN §27) it brings one back
// when a task waits that no live teammate can take.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/waker.h"
#include "store/team_store.h"

namespace mates::team {

class Adopter {
 public:
  // `team()`: the team to look after now (the lead's: it moves);
  // `look()`: does what is to be done now, and says it (a line each).
  Adopter(TeamStore& store, std::function<std::string()> team, std::function<std::vector<std::string>()> look);
  ~Adopter();
  Adopter(const Adopter&) = delete;
  Adopter& operator=(const Adopter&) = delete;

  // Starts looking every `every_s` seconds; `said` hears each line. Once.
  void Start(double every_s, std::function<void(const std::string&)> said);
  // Stops looking without waiting (from the signal thread).
  void Interrupt();
  // Stops looking and joins the thread.
  void Stop();

 private:
  void Main(double every_s, const std::function<void(const std::string&)>& said);

  // Constant after construction.
  TeamStore& store_;
  const std::function<std::string()> team_;
  const std::function<std::vector<std::string>()> look_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();

  std::atomic<bool> stop_{false};
  std::thread thread_;  // the caller's of Start/Stop only
};

}  // namespace mates::team
