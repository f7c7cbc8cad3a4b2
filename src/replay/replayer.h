// Replayer (DESIGN §31): the model of a replayed session and its pacer.
//
// As the provider, it answers each agent's model calls with the replies its
// journal recorded, in order, with the recorded usage (so that budgets and
// `mates usage` count what they counted), a recorded failure as a failure.
// Before each reply it compares what the agent's tools gave this time with
// what they gave then (masked: replay/normalise.h); the first difference
// is the agent's divergence. Recorded ids in a reply are the replay's.
//
// As the pacer (agent/pacer.h), it keeps the agents in their recorded
// order: every event — an agent taking its input for a call, a reply, the
// end of the reply's tools — waits until every other agent's events
// recorded before it have happened again. An agent's own events come in
// its own order. So a replay is one interleaving, the recorded one, and
// two replays of one record agree. A take also waits for the messages it
// took in then (counted). An agent that waits for input the replay has
// already given it (two recorded turns that the replay's take made one)
// is nudged; a replay in which nothing moves for `give_up_s` stops being
// paced, and the agent it waited for diverged.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/pacer.h"
#include "llm/provider.h"
#include "replay/normalise.h"
#include "replay/record.h"

namespace mates::replay {

// Where an agent's replay first differed from its record.
struct Divergence {
  int turn = 0;     // 1-based, as recorded
  int call = 0;     // 1-based
  std::string tool;  // the tool whose result differed; "" for the rest
  std::string what;  // in words
  std::string recorded, replayed;  // excerpts, masked
};

struct AgentOutcome {
  std::string name;
  int recorded_calls = 0;
  int replayed_calls = 0;
  std::optional<Divergence> divergence;
};

// A message the person sent during the session (`mates send`, the page):
// sent again, as `user`, where it came in the record.
struct PersonMessage {
  double ts = 0;
  std::string team;
  std::string to;  // "" for a broadcast
  std::string content;
  std::string summary;
};

struct ReplayerOptions {
  // The recorded workspace's root and the replay's (both read as
  // <workspace> in what is compared).
  std::vector<std::string> roots;
  double nudge_after_s = 0.05;  // nothing moved this long: the agent due is nudged
  double give_up_s = 10;        // nothing moved this long: pacing stops
  // The person's messages, and how one is sent (on the replayer's thread).
  std::vector<PersonMessage> person;
  std::function<Status(const PersonMessage&)> send;
};

class Replayer : public llm::Provider, public agent::Pacer {
 public:
  Replayer(std::vector<RecordedAgent> agents, ReplayerOptions options);
  ~Replayer() override;

  // llm::Provider
  Result<llm::Response> Complete(const llm::Request& request, const llm::StreamCallbacks& callbacks,
                                 llm::CancelToken* cancel) override;
  std::string_view name() const override { return "replay"; }
  std::string default_model() const override { return model_; }
  int64_t ContextWindow(const std::string&) const override;

  // agent::Pacer (a nudge is called with the replayer's lock held; a
  // null one unregisters)
  void BeforeTake(const std::string& agent, const std::function<int64_t()>& messages) override;
  bool MayClaim(const std::string& agent) override;
  void SetNudge(const std::string& agent, const void* owner,
                std::function<void(const std::string& note)> nudge) override;
  bool Pending() const override;

  // The session replayed now ends before `ts` (the next one's start): what
  // the record holds from then on is not waited for, nor nudged, yet.
  void Until(double ts);
  // Pacing stops (every wait returns); the session is over.
  void Finish();
  // Each agent's outcome (call after the session ended and Finish).
  std::vector<AgentOutcome> Outcomes() const;
  // What the replay had to do that the record did not say: nudges, and
  // whether pacing was given up.
  std::vector<std::string> notes() const;

 private:
  // kPerson: a message of the person's (its index in options_.person).
  enum class Kind { kTake, kReply, kEffects, kPerson };
  struct Event {
    double ts = 0;
    size_t agent = 0;
    size_t call = 0;
    Kind kind = Kind::kTake;
    bool done = false;
    bool nudged = false;
  };
  struct AgentState {
    RecordedAgent record;
    bool person = false;  // the person's messages, not an agent
    size_t served = 0;   // replies given
    int waiting = 0;     // threads of it waiting here now
    std::vector<size_t> take, reply, effects;  // its calls' events (npos: none)
    std::function<void(const std::string&)> nudge;
    const void* nudge_owner = nullptr;
    std::optional<Divergence> divergence;
    std::vector<std::string> taken_seen;  // masked texts it took in already matched
    std::vector<bool> taken_used;         // per recorded taken text (flattened)
    std::vector<std::string> taken_all;   // every recorded taken text, in order
  };

  AgentState* Find(const std::string& name);
  // Whether every other agent's event before `event` has happened; mu_ held.
  bool Due(size_t event) const;
  void Done(size_t event);  // mu_ held
  // Waits until `ready` or pacing stops; mu_ held through `lock`.
  void Await(std::unique_lock<std::mutex>& lock, AgentState& a, const std::function<bool()>& ready);
  // Compares the tool results of call `k` with the request's; mu_ held.
  void CompareResults(AgentState& a, size_t k, const llm::Request& request);
  // Learns ids from what the agent took in since its last reply; mu_ held.
  void LearnIds(AgentState& a, const llm::Request& request);
  void Diverged(AgentState& a, Divergence d);  // the first only; mu_ held
  llm::Response ReplyFor(const AgentState& a, size_t k) const;
  void Watch();  // the stall watcher's thread
  // Sends the person's message that is due now, if the next event is one;
  // true if it was. `lock` held on entry and return.
  bool SendPersons(std::unique_lock<std::mutex>& lock);

  const ReplayerOptions options_;
  std::string model_ = "replay";
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<AgentState> agents_;
  std::vector<Event> events_;   // in recorded order
  size_t frontier_ = 0;         // events before it are all done
  bool finished_ = false;       // pacing stopped
  double until_ = 1e300;        // Until's
  std::chrono::steady_clock::time_point moved_;  // the last event done
  IdMap ids_;
  std::vector<std::string> notes_;
  std::thread watcher_;
};

}  // namespace mates::replay
