#include "agent/prices.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/limits.h"

namespace mates::agent {

namespace {

// Anthropic: a 5-minute cache write costs 1.25 x input, a read 0.1 x.
Price Anthropic(double input, double output) { return Price{input, output, input * 1.25, input * 0.1}; }
// OpenAI: caching is automatic (no write surcharge); reads at `cached`.
Price OpenAI(double input, double output, double cached) { return Price{input, output, input, cached}; }
// Gemini: implicit caching as OpenAI's, reads at `cached` (prompts up to
// 200k tokens where the price steps up beyond).
Price Gemini(double input, double output, double cached) { return Price{input, output, input, cached}; }

constexpr size_t kMaxPricesFileBytes = 1 << 20;
constexpr double kMaxPrice = 1e6;  // USD per million tokens: anything above is a typo

}  // namespace

PriceTable PriceTable::Builtin() {
  // USD per million tokens, as published by Anthropic and OpenAI in 2025-26.
  PriceTable t;
  auto& m = t.by_prefix_;
  // 4.5 on, as Claude Code 2.1's own price list has them.
  m["claude-opus-4-5"] = Anthropic(5, 25);
  m["claude-opus-4-6"] = Anthropic(5, 25);
  m["claude-opus-4-7"] = Anthropic(5, 25);
  m["claude-opus-4-8"] = Anthropic(5, 25);
  m["claude-sonnet-5"] = Anthropic(3, 15);
  m["claude-opus-4"] = Anthropic(15, 75);  // 4.0 and 4.1
  m["claude-3-opus"] = Anthropic(15, 75);
  m["claude-sonnet-4"] = Anthropic(3, 15);  // 4.0 and 4.5
  m["claude-3-7-sonnet"] = Anthropic(3, 15);
  m["claude-3-5-sonnet"] = Anthropic(3, 15);
  m["claude-haiku-4"] = Anthropic(1, 5);
  m["claude-3-5-haiku"] = Anthropic(0.8, 4);
  m["claude-3-haiku"] = Price{0.25, 1.25, 0.30, 0.03};
  m["gpt-5"] = OpenAI(1.25, 10, 0.125);
  m["gpt-5-mini"] = OpenAI(0.25, 2, 0.025);
  m["gpt-5-nano"] = OpenAI(0.05, 0.4, 0.005);
  m["gpt-4.1"] = OpenAI(2, 8, 0.5);
  m["gpt-4.1-mini"] = OpenAI(0.4, 1.6, 0.1);
  m["gpt-4.1-nano"] = OpenAI(0.1, 0.4, 0.025);
  m["gpt-4o"] = OpenAI(2.5, 10, 1.25);
  m["gpt-4o-mini"] = OpenAI(0.15, 0.6, 0.075);
  m["o1"] = OpenAI(15, 60, 7.5);
  m["o3"] = OpenAI(2, 8, 0.5);
  m["o3-mini"] = OpenAI(1.1, 4.4, 0.55);
  m["o4-mini"] = OpenAI(1.1, 4.4, 0.275);
  // As published by Google in 2025-26.
  m["gemini-3-pro"] = Gemini(2, 12, 0.2);
  m["gemini-3.1-pro"] = Gemini(2, 12, 0.2);
  m["gemini-3-flash"] = Gemini(0.5, 3, 0.05);
  m["gemini-2.5-pro"] = Gemini(1.25, 10, 0.125);
  m["gemini-2.5-flash"] = Gemini(0.3, 2.5, 0.03);
  m["gemini-2.5-flash-lite"] = Gemini(0.1, 0.4, 0.01);
  m["gemini-2.0-flash"] = Gemini(0.1, 0.4, 0.025);
  return t;
}

Status PriceTable::Merge(const fs::path& file) {
  auto text = ReadFilePrefix(file, kMaxPricesFileBytes + 1);
  if (!text.ok()) return Status::InvalidArgument("--prices " + file.string() + ": " + text.status().message());
  if (text->size() > kMaxPricesFileBytes) {
    return Status::InvalidArgument("--prices " + file.string() + ": larger than 1 MiB");
  }
  return MergeText(*text, file.string());
}

Status PriceTable::MergeText(const std::string& text, const std::string& name) {
  auto bad = [&](const std::string& why) { return Status::InvalidArgument("prices " + name + ": " + why); };
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return bad(e.what());
  }
  if (!root.IsMap() || !root["models"] || !root["models"].IsMap()) {
    return bad("expected {models: {MODEL_PREFIX: {input: N, output: N, cache_write: N, cache_read: N}}}");
  }
  std::map<std::string, Price> add;
  for (const auto& kv : root["models"]) {
    std::string key;
    try {
      key = kv.first.as<std::string>();
    } catch (const YAML::Exception&) {
      return bad("a model name is not a string");
    }
    if (key.empty() || key.size() > 200) return bad("a model name must have 1 to 200 characters");
    const YAML::Node& v = kv.second;
    if (!v.IsMap()) return bad("models." + key + ": expected a map of prices");
    Price p;
    std::optional<double> cw, cr;
    static const std::set<std::string> kKnown = {"input", "output", "cache_write", "cache_read"};
    for (const auto& f : v) {
      std::string field;
      double value = 0;
      try {
        field = f.first.as<std::string>();
        if (kKnown.count(field) == 0) {
          return bad("models." + key + "." + field + ": unknown field (input, output, cache_write, cache_read)");
        }
        value = f.second.as<double>();
      } catch (const YAML::Exception&) {
        return bad("models." + key + "." + field + ": expected a number (USD per million tokens)");
      }
      if (!std::isfinite(value) || value < 0 || value > kMaxPrice) {
        return bad("models." + key + "." + field + ": must be a number from 0 to 1000000");
      }
      if (field == "input") p.input = value;
      if (field == "output") p.output = value;
      if (field == "cache_write") cw = value;
      if (field == "cache_read") cr = value;
    }
    if (!v["input"] || !v["output"]) return bad("models." + key + ": input and output are required");
    p.cache_write = cw.value_or(p.input);
    p.cache_read = cr.value_or(p.input);
    add[key] = p;
  }
  for (auto& [k, p] : add) by_prefix_[k] = p;
  return Status::Ok();
}

std::optional<Price> PriceTable::Find(const std::string& model) const {
  std::string name = model;
  if (size_t slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  const Price* best = nullptr;
  size_t best_len = 0;
  for (const auto& [key, price] : by_prefix_) {
    if (key.size() > best_len && name.compare(0, key.size(), key) == 0) {
      best = &price;
      best_len = key.size();
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<double> PriceTable::Cost(const std::string& model, const llm::Usage& u) const {
  auto p = Find(model);
  if (!p) return std::nullopt;
  auto d = [](int64_t n) { return static_cast<double>(n); };
  return (d(u.input_tokens) * p->input + d(u.output_tokens) * p->output +
          d(u.cache_creation_input_tokens) * p->cache_write + d(u.cache_read_input_tokens) * p->cache_read) /
         1e6;
}

Result<PriceTable> LoadPrices(const std::string& file) {
  std::string path = file;
  if (path.empty()) {
    const char* env = std::getenv("MATES_PRICES");
    if (env != nullptr) path = env;
  }
  PriceTable t = PriceTable::Builtin();
  if (!path.empty()) MATES_RETURN_IF_ERROR(t.Merge(path));
  return t;
}

std::string FormatCost(std::optional<double> usd) {
  if (!usd) return "cost unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, *usd >= 1 ? "$%.2f" : "$%.4f", *usd);
  return buf;
}

}  // namespace mates::agent
