// Prices: what a model's tokens cost (DESIGN §15), in one place.
//
// A table of USD per million tokens for input, output, cache writes and
// cache reads, keyed by model-name prefix: "claude-sonnet-4" prices
// claude-sonnet-4-5-20250929; the longest key that prefixes the name wins,
// and a router's "vendor/" in front of the name is ignored. The built-in
// table holds current Anthropic and OpenAI models; `--prices FILE` (or
// MATES_PRICES) adds to it or overrides it, YAML or JSON:
//
//   models:
//     claude-sonnet-4: {input: 3, output: 15, cache_write: 3.75, cache_read: 0.30}
//     my-local-model:  {input: 0, output: 0}     # cache prices default to input's
//
// An unknown model has no price: its tokens are shown and its cost is
// "unknown", never a guess.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/files.h"
#include "core/status.h"
#include "llm/types.h"

namespace mates::agent {

struct Price {
  double input = 0;        // USD per million uncached input tokens
  double output = 0;
  double cache_write = 0;  // Anthropic: 1.25 x input (5-minute cache); OpenAI: = input
  double cache_read = 0;   // Anthropic: 0.1 x input; OpenAI: 0.1-0.5 x input
};

class PriceTable {
 public:
  // The built-in table.
  static PriceTable Builtin();
  // Adds the models of `file` to this table (overriding same-named keys).
  // InvalidArgument naming the file and the field on a bad one.
  Status Merge(const fs::path& file);
  // The same on a document's text (`name` for errors).
  Status MergeText(const std::string& text, const std::string& name);

  std::optional<Price> Find(const std::string& model) const;
  // USD for `u` at `model`'s price; nullopt when the model is unknown.
  std::optional<double> Cost(const std::string& model, const llm::Usage& u) const;
  const std::map<std::string, Price>& entries() const { return by_prefix_; }

 private:
  std::map<std::string, Price> by_prefix_;
};

// The built-in table with `--prices FILE` ("" = $MATES_PRICES, if set)
// merged over it. A process loads it once and hands it down in its Env
// (core/env.h: `prices`); nothing prices with a table of its own.
Result<PriceTable> LoadPrices(const std::string& file);

// "$0.0123" ("$1.23" from a dollar up); "cost unknown" for nullopt.
std::string FormatCost(std::optional<double> usd);

}  // namespace mates::agent
