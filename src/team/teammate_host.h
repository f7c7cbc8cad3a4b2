// TeammateHost: the teammates this process hosts, their threads, and the
// watchdog that holds each to its shutdown deadline (DESIGN §5: a teammate
// that does not answer a shutdown request in time is stopped).
//
// Teammates are shared: whoever works with one unlocked (the watchdog
// stopping it, the lead checking on it) holds it, so replacing or
// dropping it meanwhile frees nothing under their feet. A teammate that
// finished is joined with the lock free (its thread's last steps report to
// its manager, which may take this lock).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "store/roster.h"

namespace mates::team {

class Teammate;

class TeammateHost {
 public:
  explicit TeammateHost(double shutdown_timeout_s);
  // Stops every teammate, joins them and the watchdog.
  ~TeammateHost();
  TeammateHost(const TeammateHost&) = delete;
  TeammateHost& operator=(const TeammateHost&) = delete;

  // Takes `t` as the teammate of its name (not started yet); AlreadyExists
  // while one of that name runs.
  Status Add(const std::shared_ptr<Teammate>& t);
  std::shared_ptr<Teammate> Find(const std::string& name);
  std::vector<std::shared_ptr<Teammate>> All();
  // Whether any teammate not finished is active, counting `name` as
  // `status` (it is changing to that now).
  bool AnyActiveWith(const std::string& name, MemberStatus status);

  // Stops every teammate (interrupting their work) and joins them.
  void StopAll();
  // Interrupts every teammate for good without waiting (any thread).
  void InterruptAll(const std::string& why);

  // A shutdown request reached `name`: its deadline starts now.
  void OnShutdownDelivered(const std::string& name);
  // It answered (or stopped): no deadline any more.
  void OnShutdownDone(const std::string& name);

 private:
  void WatchdogLoop();

  // Constant after construction.
  const double shutdown_timeout_s_;

  std::mutex mu_;
  std::condition_variable cv_;  // deadlines added, stopping
  std::map<std::string, std::shared_ptr<Teammate>> teammates_;          // guarded by mu_
  std::map<std::string, SteadyClock::time_point> shutdown_deadlines_;  // guarded by mu_
  bool stopping_ = false;                                              // guarded by mu_
  std::thread watchdog_;
};

}  // namespace mates::team
