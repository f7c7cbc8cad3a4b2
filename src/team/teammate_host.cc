#include "team/teammate_host.h"

#include <algorithm>

#include "core/guarded.h"
#include "team/teammate.h"

namespace mates::team {

TeammateHost::TeammateHost(double shutdown_timeout_s) : shutdown_timeout_s_(shutdown_timeout_s) {
  watchdog_ = std::thread([this] {
    NameThisThread("mates-watchdog");
    RunGuarded("the shutdown watchdog", [this] { WatchdogLoop(); });
  });
}

TeammateHost::~TeammateHost() {
  StopAll();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

Status TeammateHost::Add(const std::shared_ptr<Teammate>& t) {
  std::shared_ptr<Teammate> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = teammates_.find(t->name());
    if (it != teammates_.end()) {
      if (!it->second->finished()) return Status::AlreadyExists("teammate '" + t->name() + "' is already running");
      old = it->second;
    }
  }
  if (old) old->Join();  // lock free: its last steps may need it
  std::lock_guard<std::mutex> lock(mu_);
  auto it = teammates_.find(t->name());
  if (it != teammates_.end() && it->second != old) {
    return Status::AlreadyExists("teammate '" + t->name() + "' is already running");
  }
  teammates_[t->name()] = t;
  return Status::Ok();
}

std::shared_ptr<Teammate> TeammateHost::Find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = teammates_.find(name);
  return it == teammates_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Teammate>> TeammateHost::All() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Teammate>> all;
  for (auto& [name, t] : teammates_) all.push_back(t);
  return all;
}

bool TeammateHost::AnyActiveWith(const std::string& name, MemberStatus status) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [n, t] : teammates_) {
    if (!t->finished() && (n == name ? status : t->status()) == MemberStatus::kActive) return true;
  }
  return false;
}

void TeammateHost::StopAll() {
  auto all = All();
  for (auto& t : all) t->Stop(/*force=*/true, StopReason::kHostStopped, "its host stopped");
  for (auto& t : all) t->Join();
}

void TeammateHost::InterruptAll(const std::string& why) {
  for (auto& t : All()) t->Stop(/*force=*/true, StopReason::kHostStopped, why);
}

void TeammateHost::OnShutdownDelivered(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_deadlines_.count(name) == 0) {
      shutdown_deadlines_[name] = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                           std::chrono::duration<double>(shutdown_timeout_s_));
    }
  }
  cv_.notify_all();
}

void TeammateHost::OnShutdownDone(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_deadlines_.erase(name);
}

void TeammateHost::WatchdogLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (shutdown_deadlines_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !shutdown_deadlines_.empty(); });
      continue;
    }
    auto next = std::min_element(shutdown_deadlines_.begin(), shutdown_deadlines_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (SteadyClock::now() < next->second) {
      // A copy: while we wait the entry may be erased (an answer came),
      // and wait_until reads its deadline again when it wakes. (Waiting on
      // the map's own element was a use-after-free AddressSanitizer found.)
      const SteadyClock::time_point when = next->second;
      cv_.wait_until(lock, when);
      continue;
    }
    std::string name = next->first;
    shutdown_deadlines_.erase(next);
    auto it = teammates_.find(name);
    if (it == teammates_.end() || it->second->finished()) continue;
    std::shared_ptr<Teammate> t = it->second;  // held while used unlocked
    lock.unlock();
    t->Stop(/*force=*/true, StopReason::kShutdownUnanswered,
            "did not answer the shutdown request within " + std::to_string(static_cast<int>(shutdown_timeout_s_)) +
                " s");
    lock.lock();
  }
}

}  // namespace mates::team
