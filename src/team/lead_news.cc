#include "team/lead_news.h"

#include "agent/frames.h"

namespace mates::team {

void LeadNews::OnStatus(const std::string& name, MemberStatus status, const std::string& detail,
                        bool anyone_working) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status == MemberStatus::kActive) {
      news_.erase(name);  // no longer idle: nothing to tell
    } else if (status == MemberStatus::kIdle) {
      news_[name] = detail.empty() ? name + " is idle" : name + " is idle (" + detail + ")";
    } else {
      news_[name] = name + " stopped" + (detail.empty() ? "" : " (" + detail + ")");
      wakes_lead_ = true;
    }
    if ((!anyone_working || one_at_a_time_) && !news_.empty()) wakes_lead_ = true;
  }
  waker_->Notify();
}

bool LeadNews::Pending() {
  std::lock_guard<std::mutex> lock(mu_);
  return wakes_lead_ && !news_.empty();
}

std::string LeadNews::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  wakes_lead_ = false;
  if (news_.empty()) return "";
  if (one_at_a_time_) {
    std::string line = news_.begin()->second;
    news_.erase(news_.begin());
    wakes_lead_ = !news_.empty();
    return "<team-update>" + agent::NeutraliseFrames(line) + "</team-update>";
  }
  std::string text;
  for (const auto& [name, line] : news_) text += (text.empty() ? "" : "; ") + line;
  news_.clear();
  return "<team-update>" + agent::NeutraliseFrames(text) + "</team-update>";
}

void LeadNews::Forget(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& n : names) news_.erase(n);
}

}  // namespace mates::team
