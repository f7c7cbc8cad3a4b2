// See shutdown.h.
#include "team/shutdown.h"

#include "core/log.h"
#include "store/messenger.h"

namespace mates::team {

std::vector<std::string> AskToShutDown(TeamStore& store, const TeamConfig& team, const std::string& why,
                                       const std::function<bool(const Member&)>& whom) {
  std::vector<std::string> asked;
  std::unique_ptr<TeamMail> mail = store.Mail(team.name);
  Messenger messenger(*mail);
  for (const auto& m : team.members) {
    if (team.IsLead(m.name) || m.status == MemberStatus::kShutdown || (whom && !whom(m))) continue;
    SendRequest r;
    r.type = MessageType::kShutdownRequest;
    r.sender = team.lead;
    r.recipient = m.name;
    r.content = why;
    auto sent = messenger.Send(r);
    if (sent.ok()) {
      asked.push_back(m.name);
    } else {
      LogWarning("asking " + m.name + " to shut down: " + sent.status().message());
    }
  }
  return asked;
}

bool StoppedByRoster(TeamStore& store, const std::string& team, const std::string& name) {
  auto cfg = store.LoadTeam(team);
  if (!cfg.ok()) return false;  // unknown now: looked at again at the next wake-up
  const Member* m = cfg->Find(name);
  return m == nullptr || m->status == MemberStatus::kShutdown;
}

std::vector<std::string> WaitForShutdowns(TeamStore& store, const std::string& team,
                                          const std::vector<std::string>& asked,
                                          const std::function<bool(const std::string&)>& stopped,
                                          const Deadline& until, const std::shared_ptr<Waker>& waker) {
  auto watch = store.WatchRoster(team, waker);  // held while it waits
  std::vector<std::string> left;
  for (;;) {
    uint64_t seen = waker->generation();
    left.clear();
    for (const auto& name : asked) {
      if (!stopped(name)) left.push_back(name);
    }
    if (left.empty() || Expired(until)) return left;
    // The roster's change wakes this; a second bounds one missed (or no
    // watch at all).
    Deadline wait = DeadlineIn(1.0);
    if (until && *until < *wait) wait = until;
    waker->WaitChange(seen, wait);
  }
}

}  // namespace mates::team
