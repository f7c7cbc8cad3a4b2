#include "agent/usage.h"

#include <cstdio>

namespace mates::agent {

void UsageMeter::Add(const llm::Usage& u) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ += u;
  ++calls_;
}

void UsageMeter::Restore(const llm::Usage& u, int calls) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ = u;
  calls_ = calls;
}

llm::Usage UsageMeter::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

int UsageMeter::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::string HumanCount(int64_t n) {
  char buf[32];
  if (n >= 1000000) {
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  } else if (n >= 1000) {
    std::snprintf(buf, sizeof buf, "%.1fk", static_cast<double>(n) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  }
  return buf;
}

int64_t TotalTokens(const llm::Usage& u) {
  return u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens;
}

std::string DescribeTokens(const llm::Usage& u) {
  std::string out =
      HumanCount(u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens) + " in";
  if (u.cache_read_input_tokens > 0 || u.cache_creation_input_tokens > 0) {
    out += " (" + HumanCount(u.cache_read_input_tokens) + " cache read, " +
           HumanCount(u.cache_creation_input_tokens) + " cache write)";
  }
  return out + ", " + HumanCount(u.output_tokens) + " out";
}

std::string UsageMeter::Summary(const std::string& model, const PriceTable& prices) const {
  llm::Usage u = total();
  int calls = this->calls();
  return std::to_string(calls) + (calls == 1 ? " call, " : " calls, ") + DescribeTokens(u) + ", " +
         FormatCost(prices.Cost(model, u));
}

}  // namespace mates::agent
