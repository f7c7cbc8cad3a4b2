// Usage and cost accounting per agent: tokens (cache included), calls, and
// an estimated cost where the model's price is known.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "llm/types.h"

namespace mates::agent {

// USD per million tokens (input, output); cache writes cost 1.25x input,
// cache reads 0.1x (Anthropic's rule, applied as an estimate to all).
struct Price {
  double input = 0;
  double output = 0;
};
std::optional<Price> PriceOf(const std::string& model);
std::optional<double> CostUsd(const std::string& model, const llm::Usage& u);

class UsageMeter {
 public:
  void Add(const llm::Usage& u);
  llm::Usage total() const;
  int calls() const;
  // "12 calls, 10.2k in (8.0k cache read, 1.1k cache write), 2.3k out, ≈ $0.05"
  std::string Summary(const std::string& model) const;

 private:
  mutable std::mutex mu_;
  llm::Usage total_;  // guarded by mu_
  int calls_ = 0;     // guarded by mu_
};

std::string HumanCount(int64_t n);

}  // namespace mates::agent
