#include "agent/breaker.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/text.h"

namespace mates::agent {

double CostUnits(const llm::Usage& u) {
  return static_cast<double>(u.input_tokens) + 5.0 * static_cast<double>(u.output_tokens) +
         1.25 * static_cast<double>(u.cache_creation_input_tokens) + 0.1 * static_cast<double>(u.cache_read_input_tokens);
}

void TurnCosts::Add(double cost) {
  std::lock_guard<std::mutex> lock(mu_);
  costs_.push_back(cost);
  if (costs_.size() > kKept) costs_.pop_front();
}

std::optional<double> TurnCosts::Median() const {
  std::vector<double> v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (costs_.size() < kMinTurns) return std::nullopt;
    v.assign(costs_.begin(), costs_.end());
  }
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

Breaker::Breaker(BreakerLimits limits, std::shared_ptr<TurnCosts> team) : limits_(limits), team_(std::move(team)) {}

std::string Breaker::AfterCall(double turn_cost) {
  ++stalled_;
  if (limits_.stall_calls > 0 && stalled_ >= limits_.stall_calls) {
    return std::to_string(stalled_) + " model calls in a row changed neither the board nor a file";
  }
  if (limits_.spike > 0 && team_) {
    std::optional<double> median = team_->Median();
    if (median && *median > 0 && turn_cost > limits_.spike * *median && turn_cost > limits_.spike_floor) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.0f", turn_cost / *median);
      return std::string("this turn has cost ") + ratio + " times the team's median turn (over " +
             std::to_string(static_cast<int>(limits_.spike)) + " times pauses it)";
    }
  }
  return "";
}

std::string Breaker::AfterTool(const std::string& name, const std::string& input_json, bool failed, bool progress,
                               const std::string& error) {
  if (progress) stalled_ = 0;
  if (!failed) {
    failing_.clear();
    failures_ = 0;
    return "";
  }
  std::string call = name + "\n" + input_json;
  if (call != failing_) {
    failing_ = std::move(call);
    failures_ = 0;
  }
  if (limits_.repeated_failures > 0 && ++failures_ >= limits_.repeated_failures) {
    return "the same " + name + " call failed " + std::to_string(failures_) +
           " times in a row (last: " + CutUtf8(error.substr(0, error.find('\n')), 120) + ")";
  }
  return "";
}

void Breaker::EndTurn(double turn_cost) {
  if (team_ && turn_cost > 0) team_->Add(turn_cost);
}

void Breaker::Reset() {
  failing_.clear();
  failures_ = 0;
  stalled_ = 0;
}

}  // namespace mates::agent
