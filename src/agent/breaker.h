// Circuit breakers (DESIGN §27): an agent going round in circles is paused
// before it spends more, and a person is asked to look.
//
// - the same tool call (name and input) failing `repeated_failures` times
//   in a row;
// - `stall_calls` model calls in a row with no board or file progress (a
//   successful call of a tool that changes something: not a read, not a
//   message);
// - a turn that has cost more than `spike` times the median turn of the
//   team's agents in this host (once `kMinTurns` turns have ended) and
//   more than `spike_floor` (a few calls' worth: ten short turns of idle
//   news make a tiny median, which an ordinary turn of four calls is ten
//   times — the demo's frontend was paused so, now and then). Cost
//   is weighed as the providers price it, relative to an input token: an
//   output token 5, a cache write 1.25, a cache read 0.1. Only the ratio
//   matters, so no price table is needed.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "llm/types.h"

namespace mates::agent {

struct BreakerLimits {
  int repeated_failures = 5;  // 0 = off
  int stall_calls = 0;        // 0 = off
  double spike = 10;          // 0 = off
  double spike_floor = 50000;  // input tokens' worth: ~$0.15 at $3 per million
};

// A usage's cost in input tokens' worth.
double CostUnits(const llm::Usage& u);

// The costs of the last turns of a host's agents, for their median.
class TurnCosts {
 public:
  static constexpr size_t kMinTurns = 8;
  static constexpr size_t kKept = 101;
  void Add(double cost);
  // The median of the turns kept, once there are kMinTurns.
  std::optional<double> Median() const;

 private:
  mutable std::mutex mu_;
  std::deque<double> costs_;  // guarded by mu_
};

// One agent's breaker (its own thread only).
class Breaker {
 public:
  Breaker(BreakerLimits limits, std::shared_ptr<TurnCosts> team);

  // A model call of the turn, what the turn has cost so far: "" or why
  // the agent is paused.
  std::string AfterCall(double turn_cost);
  // A tool call and what came of it: "" or why the agent is paused.
  std::string AfterTool(const std::string& name, const std::string& input_json, bool failed, bool progress,
                        const std::string& error);
  // The turn ended (and cost that); it goes into the team's median.
  void EndTurn(double turn_cost);
  // A person let the agent go on: the counts start again.
  void Reset();

 private:
  const BreakerLimits limits_;
  const std::shared_ptr<TurnCosts> team_;
  std::string failing_;  // the call failing now, name and input
  int failures_ = 0;     // times in a row it failed
  int stalled_ = 0;      // model calls since the last progress
};

}  // namespace mates::agent
