// Usage and cost accounting per agent: tokens (cache included), calls, and
// an estimated cost where the model's price is known.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "agent/prices.h"
#include "llm/types.h"

namespace mates::agent {

class UsageMeter {
 public:
  void Add(const llm::Usage& u);
  // A resumed agent's usage so far (its journal's), `calls` calls.
  void Restore(const llm::Usage& u, int calls);
  llm::Usage total() const;
  int calls() const;
  // "12 calls, 10.2k in (8.0k cache read, 1.1k cache write), 2.3k out, $0.0500"
  // (", cost unknown" for a model without a price)
  std::string Summary(const std::string& model, const PriceTable& prices) const;

 private:
  mutable std::mutex mu_;
  llm::Usage total_;  // guarded by mu_
  int calls_ = 0;     // guarded by mu_
};

std::string HumanCount(int64_t n);
// Every token the model read or wrote (input of all kinds and output):
// what a token budget counts.
int64_t TotalTokens(const llm::Usage& u);
// "10.2k in (8.0k cache read, 1.1k cache write), 2.3k out"
std::string DescribeTokens(const llm::Usage& u);

}  // namespace mates::agent
