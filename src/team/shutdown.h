// The shutdown protocol (DESIGN §3) as the lead runs it on a team: every
// teammate not stopped yet is sent a shutdown_request from the lead, and
// whoever asked waits, woken by the roster's changes, until each asked one
// has stopped or time is up. TeamDelete (TeamManager) and `mates down` both
// run it; what they do with one that did not stop in time is theirs (the
// manager stops its own thread; `down` leaves it to the host's SIGTERM).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/waker.h"
#include "store/roster.h"
#include "store/team_store.h"

namespace mates::team {

// Sends each teammate of `team` not stopped yet a shutdown request from its
// lead saying `why`; the names of those it was sent to (one that could not
// be sent is logged).
// `whom` (optional) narrows who is asked.
std::vector<std::string> AskToShutDown(TeamStore& store, const TeamConfig& team, const std::string& why,
                                       const std::function<bool(const Member&)>& whom = {});

// Whether `name` has stopped, by the roster: its status is `shutdown`, or it
// is not a member any more.
bool StoppedByRoster(TeamStore& store, const std::string& team, const std::string& name);

// Waits until `stopped(name)` holds for each of `asked`, or `until`; woken
// through `waker` by the roster's changes (and whatever else the caller
// notifies it of), and at least once a second. The names that had not
// stopped.
std::vector<std::string> WaitForShutdowns(TeamStore& store, const std::string& team,
                                          const std::vector<std::string>& asked,
                                          const std::function<bool(const std::string&)>& stopped,
                                          const Deadline& until, const std::shared_ptr<Waker>& waker);

}  // namespace mates::team
