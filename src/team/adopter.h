// Adopter: on a store several hosts share (DESIGN §13), a thread that takes
// on the teammates of the lead's team that no process hosts (their host
// died or stopped), looking at each change of the team's roster and every
// few seconds (a dead host's liveness lock goes without a word).
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
  // `resume()`: brings back those no process hosts, and says who.
  Adopter(TeamStore& store, std::function<std::string()> team,
          std::function<Result<std::vector<std::string>>()> resume);
  ~Adopter();
  Adopter(const Adopter&) = delete;
  Adopter& operator=(const Adopter&) = delete;

  // Starts looking every `every_s` seconds; `said` hears each batch's names.
  // Once.
  void Start(double every_s, std::function<void(const std::vector<std::string>&)> said);
  // Stops looking without waiting (from the signal thread).
  void Interrupt();
  // Stops looking and joins the thread.
  void Stop();

 private:
  void Main(double every_s, const std::function<void(const std::vector<std::string>&)>& said);

  // Constant after construction.
  TeamStore& store_;
  const std::function<std::string()> team_;
  const std::function<Result<std::vector<std::string>>()> resume_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();

  std::atomic<bool> stop_{false};
  std::thread thread_;  // the caller's of Start/Stop only
};

}  // namespace mates::team
