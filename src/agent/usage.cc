#include "agent/usage.h"

#include <cstdio>

namespace mates::agent {

std::optional<Price> PriceOf(const std::string& model) {
  auto has = [&](const char* s) { return model.find(s) != std::string::npos; };
  // Longest, most specific names first.
  if (has("opus-4-5") || has("opus-4-6") || has("opus-4-7") || has("opus-4-8")) return Price{5, 25};
  if (has("opus")) return Price{15, 75};
  if (has("sonnet")) return Price{3, 15};
  if (has("haiku-4")) return Price{1, 5};
  if (has("3-5-haiku")) return Price{0.8, 4};
  if (has("haiku")) return Price{0.25, 1.25};
  if (has("gpt-4o-mini")) return Price{0.15, 0.6};
  if (has("gpt-4o")) return Price{2.5, 10};
  if (has("gpt-4.1-mini")) return Price{0.4, 1.6};
  if (has("gpt-4.1")) return Price{2, 8};
  return std::nullopt;
}

std::optional<double> CostUsd(const std::string& model, const llm::Usage& u) {
  auto p = PriceOf(model);
  if (!p) return std::nullopt;
  double in = static_cast<double>(u.input_tokens) * p->input +
              static_cast<double>(u.cache_creation_input_tokens) * p->input * 1.25 +
              static_cast<double>(u.cache_read_input_tokens) * p->input * 0.1;
  return (in + static_cast<double>(u.output_tokens) * p->output) / 1e6;
}

void UsageMeter::Add(const llm::Usage& u) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ += u;
  ++calls_;
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

std::string UsageMeter::Summary(const std::string& model) const {
  llm::Usage u = total();
  int calls = this->calls();
  std::string out = std::to_string(calls) + (calls == 1 ? " call, " : " calls, ") +
                    HumanCount(u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens) +
                    " in";
  if (u.cache_read_input_tokens > 0 || u.cache_creation_input_tokens > 0) {
    out += " (" + HumanCount(u.cache_read_input_tokens) + " cache read, " +
           HumanCount(u.cache_creation_input_tokens) + " cache write)";
  }
  out += ", " + HumanCount(u.output_tokens) + " out";
  if (auto cost = CostUsd(model, u)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ", ~$%.4f", *cost);
    out += buf;
  }
  return out;
}

}  // namespace mates::agent
