// LeadNews: what the lead has not heard yet about its teammates (DESIGN §5:
// "the lead is told when a teammate goes idle or stops, without flooding
// its context").
//
// One line per teammate, the latest winning ("alice is idle", "bob stopped
// (no work for 60 s)"), handed over as one <team-update> at the lead's next
// turn. The lead is *woken* for it only when it matters: a teammate
// stopped, or nobody is working any more. Idle news while others still
// work just waits for the next turn.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/waker.h"
#include "store/roster.h"

namespace mates::team {

class LeadNews {
 public:
  // `one_at_a_time`: the benchmark's naive baseline (what other agent teams
  // do): every change wakes the lead and is a turn of its own.
  explicit LeadNews(bool one_at_a_time = false) : one_at_a_time_(one_at_a_time) {}
  // `name` went to `status`; `anyone_working`: whether some teammate is
  // active after this change.
  void OnStatus(const std::string& name, MemberStatus status, const std::string& detail, bool anyone_working);
  // News worth waking the lead for is waiting.
  bool Pending();
  // The news as text for the lead's next turn ("" if none); clears it.
  std::string Take();
  // Drops what is waiting about these teammates (their team is gone).
  void Forget(const std::vector<std::string>& names);
  // Notified whenever news worth waking the lead for comes.
  const std::shared_ptr<Waker>& waker() const { return waker_; }

 private:
  const bool one_at_a_time_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  std::mutex mu_;
  std::map<std::string, std::string> news_;  // guarded by mu_: name -> line
  bool wakes_lead_ = false;                  // guarded by mu_
};

}  // namespace mates::team
