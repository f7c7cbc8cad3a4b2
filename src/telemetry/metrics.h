// What a host counts as its agents work, and the Prometheus text format it
// is served in (DESIGN §29: `/metrics` on the dashboard's port, behind its
// token). Debian bookworm has no prometheus-cpp, and the text exposition
// format is a few rules (names, label escaping, a histogram's cumulative
// buckets with +Inf, _sum and _count): so this small writer, checked by
// `promtool check metrics` and scraped by a real Prometheus in the tests.
//
// Names follow OpenTelemetry's GenAI conventions where they define one
// (gen_ai.client.operation.duration → gen_ai_client_operation_duration_seconds,
// gen_ai.client.token.usage → gen_ai_client_token_usage, attributes with
// '.' as '_'), mates_… for the rest.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mates::telemetry {

// Label name → value; sorted by name, as the exposition writes them.
using Labels = std::map<std::string, std::string>;

// One exposition, family by family.
class Exposition {
 public:
  // `type`: counter, gauge or histogram. A family is written once; its
  // samples follow it.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // `name` is the family's, or its _bucket/_sum/_count for a histogram.
  void Sample(std::string_view name, const Labels& labels, double value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// A metric or label name as Prometheus takes it: [a-zA-Z_:][a-zA-Z0-9_:]*
// (a label name without ':'), anything else as '_'.
std::string MetricName(std::string_view name);
std::string LabelName(std::string_view name);

// One metric as OpenTelemetry names it, read at export time (otlp.h).
struct MetricReading {
  std::string name;  // dotted: gen_ai.client.token.usage
  std::string unit;  // UCUM: s, {token}
  std::string description;
  enum class Kind { kGauge, kCounter, kHistogram } kind = Kind::kGauge;
  struct Point {
    Labels attributes;
    double value = 0;               // a gauge's, a counter's; a histogram's sum
    uint64_t count = 0;             // a histogram's
    std::vector<uint64_t> buckets;  // a histogram's, per bound and one over (not cumulative)
  };
  std::vector<double> bounds;  // a histogram's
  std::vector<Point> points;
};

// The metrics a host's agents add to as they work (thread-safe). Every
// family is declared here, with its help and, for histograms, its bounds.
class Metrics {
 public:
  Metrics();
  void Add(std::string_view family, const Labels& labels, double by = 1);
  void Observe(std::string_view family, const Labels& labels, double value);
  // Every family and its series so far.
  void WriteTo(Exposition& out) const;
  // The same, as OpenTelemetry names them.
  std::vector<MetricReading> Read() const;

 private:
  enum class Kind { kCounter, kHistogram };
  struct Series {
    double value = 0;              // a counter's; a histogram's sum
    uint64_t count = 0;            // a histogram's
    std::vector<uint64_t> buckets;  // a histogram's, per bound (not cumulative)
  };
  struct Family {
    Kind kind;
    std::string otel_name;
    std::string unit;
    std::string help;
    std::vector<double> bounds;  // a histogram's upper bounds, ascending
    std::map<Labels, Series> series;
  };
  void Declare(std::string name, std::string otel_name, std::string unit, Kind kind, std::string help,
               std::vector<double> bounds = {});

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // guarded by mu_
};

// The families (names as exposed).
inline constexpr std::string_view kOperationDuration = "gen_ai_client_operation_duration_seconds";
inline constexpr std::string_view kTokenUsage = "gen_ai_client_token_usage";
inline constexpr std::string_view kSandboxRefusals = "mates_sandbox_refusals_total";
inline constexpr std::string_view kHookBlocks = "mates_hook_blocks_total";
inline constexpr std::string_view kMessageDelivery = "mates_message_delivery_seconds";
inline constexpr std::string_view kToolCalls = "mates_tool_calls_total";
inline constexpr std::string_view kMergeDuration = "mates_merge_duration_seconds";

}  // namespace mates::telemetry
