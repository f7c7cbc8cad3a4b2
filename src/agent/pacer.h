// Pacer: what keeps a replayed session's agents in their recorded order
// (DESIGN §31, replay/replay.h). A replay's host gives one to every agent
// loop and teammate; every other session has none (null), and nothing
// here costs it anything.
//
// An agent asks it before it takes its input for a model call (so that it
// takes in what it took in then) and before an idle teammate claims a
// task (so that a claim is made by whoever made it then); the replay's
// provider paces the replies itself. An agent that waits for input the
// replay has already given it is nudged: a notice, and a wake.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace mates::agent {

class Pacer {
 public:
  virtual ~Pacer() = default;
  // Before `agent` takes its inbox and notices for its next model call:
  // waits until that take is due (what came before it in the record has
  // happened again, and `messages()` — the inbox messages it has taken in
  // or has waiting — are at least as many as it had taken in by then).
  // Returns at once for an agent the record does not know, and once the
  // replay has given up pacing.
  virtual void BeforeTake(const std::string& agent, const std::function<int64_t()>& messages) = 0;
  // Before an idle teammate claims a task: false when its next recorded
  // turn did not start with a claim (a message starts it, or none does);
  // else waits until that turn is due and returns true.
  virtual bool MayClaim(const std::string& agent) = 0;
  // Whether the record holds events that have not happened again yet (and
  // the replay still paces them): a replayed session does not end while
  // it does, even when for a moment nobody works.
  virtual bool Pending() const = 0;
  // How to nudge `agent`: add `note` to its next turn (unless "") and wake
  // it. The agent's owner registers it once its loop is made, and before
  // it goes unregisters it (a null `nudge`: only if still `owner`'s).
  virtual void SetNudge(const std::string& agent, const void* owner,
                        std::function<void(const std::string& note)> nudge) = 0;
};

}  // namespace mates::agent
