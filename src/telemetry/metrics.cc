#include "telemetry/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/text.h"

namespace mates::telemetry {
namespace {

// What one label value may hold (a model's or a tool's name; a value
// beyond is cut): a series is a key, not a record.
constexpr size_t kMaxLabelValueBytes = 200;
// Series per family at most: a family whose labels come from the team's
// names cannot grow without end.
constexpr size_t kMaxSeries = 2000;

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // The shortest form that reads back as `v` ("0.01", not 0.01000…02).
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

// `text` with a backslash and a newline escaped, and '"' too in a label value
// (HELP text leaves it as it is).
std::string Escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Sanitized(std::string_view name, bool colon) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                    (i > 0 && c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  return out.empty() ? "_" : out;
}

}  // namespace

std::string MetricName(std::string_view name) { return Sanitized(name, true); }
std::string LabelName(std::string_view name) { return Sanitized(name, false); }

void Exposition::Family(std::string_view name, std::string_view type, std::string_view help) {
  const std::string n = MetricName(name);
  text_ += "# HELP " + n + " " + Escape(help, false) + "\n# TYPE " + n + " " + std::string(type) + "\n";
}

void Exposition::Sample(std::string_view name, const Labels& labels, double value) {
  text_ += MetricName(name);
  if (!labels.empty()) {
    text_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) text_ += ',';
      first = false;
      text_ += LabelName(k) + "=\"" + Escape(CutUtf8(v, kMaxLabelValueBytes), true) + "\"";
    }
    text_ += '}';
  }
  text_ += ' ' + Number(value) + '\n';
}

Metrics::Metrics() {
  // OpenTelemetry's GenAI client metrics, their advised buckets.
  Declare(std::string(kOperationDuration), "gen_ai.client.operation.duration", "s", Kind::kHistogram,
          "GenAI operation duration (gen_ai.client.operation.duration): each model call of the host's agents",
          {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92});
  Declare(std::string(kTokenUsage), "gen_ai.client.token.usage", "{token}", Kind::kHistogram,
          "Tokens per model call (gen_ai.client.token.usage); input counts cache reads and writes",
          {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864});
  Declare(std::string(kMessageDelivery), "mates.message.delivery.duration", "s", Kind::kHistogram,
          "Seconds from a message's send to its recipient taking it into a turn",
          {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300});
  Declare(std::string(kMergeDuration), "mates.merge.duration", "s", Kind::kHistogram,
          "Seconds from the merge queue taking a request to its decision, by the state it ended in",
          {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1800});
  Declare(std::string(kToolCalls), "mates.tool.calls", "{call}", Kind::kCounter, "Tool calls of the host's agents, by tool and outcome");
  Declare(std::string(kSandboxRefusals), "mates.sandbox.refusals", "{call}", Kind::kCounter, "Tool calls the sandbox refused");
  Declare(std::string(kHookBlocks), "mates.hook.blocks", "{block}", Kind::kCounter, "What a hook blocked, by event");
}

void Metrics::Declare(std::string name, std::string otel_name, std::string unit, Kind kind, std::string help,
                      std::vector<double> bounds) {
  families_[std::move(name)] = Family{kind, std::move(otel_name), std::move(unit), std::move(help), std::move(bounds), {}};
}

void Metrics::Add(std::string_view family, const Labels& labels, double by) {
  std::lock_guard<std::mutex> lock(mu_);
  auto f = families_.find(family);
  if (f == families_.end() || f->second.kind != Kind::kCounter || !(by >= 0)) return;
  auto& series = f->second.series;
  if (series.size() >= kMaxSeries && series.count(labels) == 0) return;
  series[labels].value += by;
}

void Metrics::Observe(std::string_view family, const Labels& labels, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto f = families_.find(family);
  if (f == families_.end() || f->second.kind != Kind::kHistogram || std::isnan(value)) return;
  auto& series = f->second.series;
  if (series.size() >= kMaxSeries && series.count(labels) == 0) return;
  Series& s = series[labels];
  const auto& bounds = f->second.bounds;
  if (s.buckets.empty()) s.buckets.assign(bounds.size(), 0);
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (value <= bounds[i]) {
      ++s.buckets[i];
      break;
    }
  }
  s.value += value;
  ++s.count;
}

void Metrics::WriteTo(Exposition& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, f] : families_) {
    out.Family(name, f.kind == Kind::kCounter ? "counter" : "histogram", f.help);
    for (const auto& [labels, s] : f.series) {
      if (f.kind == Kind::kCounter) {
        out.Sample(name, labels, s.value);
        continue;
      }
      uint64_t cumulative = 0;
      Labels le = labels;
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        cumulative += i < s.buckets.size() ? s.buckets[i] : 0;
        le["le"] = Number(f.bounds[i]);
        out.Sample(name + "_bucket", le, static_cast<double>(cumulative));
      }
      le["le"] = "+Inf";
      out.Sample(name + "_bucket", le, static_cast<double>(s.count));
      out.Sample(name + "_sum", labels, s.value);
      out.Sample(name + "_count", labels, static_cast<double>(s.count));
    }
  }
}

std::vector<MetricReading> Metrics::Read() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<MetricReading> out;
  for (const auto& [name, f] : families_) {
    MetricReading r;
    r.name = f.otel_name;
    r.unit = f.unit;
    r.description = f.help;
    r.kind = f.kind == Kind::kCounter ? MetricReading::Kind::kCounter : MetricReading::Kind::kHistogram;
    r.bounds = f.bounds;
    for (const auto& [labels, s] : f.series) {
      MetricReading::Point p{labels, s.value, s.count, s.buckets};
      // Per bound, and the one above the last (the count's rest).
      if (r.kind == MetricReading::Kind::kHistogram) {
        uint64_t below = 0;
        for (uint64_t b : p.buckets) below += b;
        p.buckets.resize(f.bounds.size());
        p.buckets.push_back(s.count - below);
      }
      r.points.push_back(std::move(p));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace mates::telemetry
