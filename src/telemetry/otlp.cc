#include "telemetry/otlp.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "core/secrets.h"
#include "core/text.h"
#include "llm/http.h"

namespace mates::telemetry {
namespace {

// ---- The wire: one message of either encoding ----------------------------
//
// Each call names a field by its number (protobuf) and its lowerCamelCase
// name (OTLP/JSON, which writes ids in hex, 64-bit integers as strings and
// enums as numbers). Zero values are left out, as proto3 leaves them.
class Msg {
 public:
  explicit Msg(bool json) : json_(json) {
    if (json_) j_ = Json::object();
  }

  // `keep`: written even when zero (a oneof's choice).
  Msg& Str(int field, const char* name, std::string_view v, bool keep = false) {
    if (v.empty() && !keep) return *this;
    if (json_) {
      j_[name] = std::string(v);
    } else {
      Tag(field, 2);
      Varint(v.size());
      bytes_.append(v);
    }
    return *this;
  }
  // An id: bytes on the wire, hex in JSON.
  Msg& Id(int field, const char* name, std::string_view hex) {
    if (hex.empty()) return *this;
    if (json_) {
      j_[name] = std::string(hex);
      return *this;
    }
    std::string raw;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
      raw += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
    }
    Tag(field, 2);
    Varint(raw.size());
    bytes_ += raw;
    return *this;
  }
  Msg& Fixed64(int field, const char* name, uint64_t v) {
    if (v == 0) return *this;
    if (json_) {
      j_[name] = std::to_string(v);
      return *this;
    }
    Tag(field, 1);
    Raw64(v);
    return *this;
  }
  Msg& Fixed32(int field, const char* name, uint32_t v) {
    if (v == 0) return *this;
    if (json_) {
      j_[name] = v;
      return *this;
    }
    Tag(field, 5);
    for (int i = 0; i < 4; ++i) bytes_ += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  // int64 as a varint (AnyValue.int_value); a string in JSON.
  Msg& Int64(int field, const char* name, int64_t v, bool keep = false) {
    if (v == 0 && !keep) return *this;
    if (json_) {
      j_[name] = std::to_string(v);
      return *this;
    }
    Tag(field, 0);
    Varint(static_cast<uint64_t>(v));
    return *this;
  }
  // An enum or a uint32 count: a varint; a number in JSON.
  Msg& Enum(int field, const char* name, uint32_t v) {
    if (v == 0) return *this;
    if (json_) {
      j_[name] = v;
      return *this;
    }
    Tag(field, 0);
    Varint(v);
    return *this;
  }
  Msg& Bool(int field, const char* name, bool v, bool keep = false) {
    if (!v && !keep) return *this;
    if (json_) {
      j_[name] = v;
      return *this;
    }
    Tag(field, 0);
    Varint(v ? 1 : 0);
    return *this;
  }
  // A double that is written even when 0 (a oneof's or an optional's).
  Msg& Double(int field, const char* name, double v) {
    if (json_) {
      j_[name] = std::isfinite(v) ? Json(v) : Json(std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
      return *this;
    }
    Tag(field, 1);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Raw64(bits);
    return *this;
  }
  Msg& PackedFixed64(int field, const char* name, const std::vector<uint64_t>& v) {
    if (v.empty()) return *this;
    if (json_) {
      Json a = Json::array();
      for (uint64_t x : v) a.push_back(std::to_string(x));
      j_[name] = std::move(a);
      return *this;
    }
    Tag(field, 2);
    Varint(v.size() * 8);
    for (uint64_t x : v) Raw64(x);
    return *this;
  }
  Msg& PackedDouble(int field, const char* name, const std::vector<double>& v) {
    if (v.empty()) return *this;
    if (json_) {
      j_[name] = v;
      return *this;
    }
    Tag(field, 2);
    Varint(v.size() * 8);
    for (double x : v) {
      uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      Raw64(bits);
    }
    return *this;
  }
  // A singular message field (written even when empty: a oneof's).
  Msg& One(int field, const char* name, const Msg& m) {
    if (json_) {
      j_[name] = m.j_;
      return *this;
    }
    Tag(field, 2);
    Varint(m.bytes_.size());
    bytes_ += m.bytes_;
    return *this;
  }
  // One more element of a repeated message field.
  Msg& Add(int field, const char* name, const Msg& m) {
    if (json_) {
      j_[name].push_back(m.j_);
      return *this;
    }
    return One(field, name, m);
  }

  std::string Body() const { return json_ ? j_.dump(-1, ' ', false, Json::error_handler_t::replace) : bytes_; }
  bool json() const { return json_; }

 private:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_ += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes_ += static_cast<char>(v);
  }
  void Tag(int field, int wire) { Varint((static_cast<uint64_t>(field) << 3) | wire); }
  void Raw64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }

  bool json_;
  std::string bytes_;
  Json j_;
};

// ---- opentelemetry.proto.common.v1 and resource.v1 ------------------------

Msg AnyValueOf(const AttributeValue& v, bool json) {
  Msg m(json);
  if (const auto* s = std::get_if<std::string>(&v)) return m.Str(1, "stringValue", *s, true);
  if (const auto* b = std::get_if<bool>(&v)) return m.Bool(2, "boolValue", *b, true);
  if (const auto* i = std::get_if<int64_t>(&v)) return m.Int64(3, "intValue", *i, true);
  if (const auto* d = std::get_if<double>(&v)) return m.Double(4, "doubleValue", *d);
  Msg array(json);
  for (const auto& s : std::get<std::vector<std::string>>(v)) array.Add(1, "values", AnyValueOf(s, json));
  return m.One(5, "arrayValue", array);
}

Msg KeyValueOf(const Attribute& a, bool json) {
  Msg kv(json);
  kv.Str(1, "key", a.key);
  kv.One(2, "value", AnyValueOf(a.value, json));
  return kv;
}

void AddAttributes(Msg& m, int field, const std::vector<Attribute>& attrs) {
  for (const auto& a : attrs) m.Add(field, "attributes", KeyValueOf(a, m.json()));
}

Msg ResourceOf(const OtlpConfig& c, bool json) {
  Msg r(json);
  std::vector<Attribute> attrs;
  for (const auto& [k, v] : c.resource) attrs.push_back({k, v});
  attrs.push_back({"telemetry.sdk.name", std::string("mates")});
  attrs.push_back({"telemetry.sdk.language", std::string("cpp")});
  attrs.push_back({"telemetry.sdk.version", std::string(MATES_VERSION)});
  AddAttributes(r, 1, attrs);
  return r;
}

std::vector<Attribute> AttributesOf(const Labels& labels) {
  std::vector<Attribute> out;
  for (const auto& [k, v] : labels) out.push_back({k, v});
  return out;
}

Msg ScopeOf(bool json) {
  Msg s(json);
  s.Str(1, "name", "mates");
  s.Str(2, "version", MATES_VERSION);
  return s;
}

}  // namespace

// ---- opentelemetry.proto.trace.v1 -----------------------------------------

std::string EncodeSpans(const std::vector<SpanRecord>& spans, const OtlpConfig& c, bool json) {
  Msg scope_spans(json);
  scope_spans.One(1, "scope", ScopeOf(json));
  for (const auto& s : spans) {
    Msg span(json);
    span.Id(1, "traceId", s.context.trace_id);
    span.Id(2, "spanId", s.context.span_id);
    span.Str(3, "traceState", s.context.state);
    span.Id(4, "parentSpanId", s.parent_span_id);
    span.Str(5, "name", s.name);
    span.Enum(6, "kind", static_cast<uint32_t>(s.kind));
    span.Fixed64(7, "startTimeUnixNano", static_cast<uint64_t>(s.start_ns));
    span.Fixed64(8, "endTimeUnixNano", static_cast<uint64_t>(s.end_ns));
    AddAttributes(span, 9, s.attributes);
    for (const auto& l : s.links) {
      Msg link(json);
      link.Id(1, "traceId", l.context.trace_id);
      link.Id(2, "spanId", l.context.span_id);
      link.Str(3, "traceState", l.context.state);
      AddAttributes(link, 4, l.attributes);
      link.Fixed32(6, "flags", 0x100 | (l.context.sampled ? 1 : 0));  // the W3C flags, "known whether remote"
      span.Add(13, "links", link);
    }
    Msg status(json);
    if (s.error) {
      status.Str(2, "message", s.status_message);
      status.Enum(3, "code", 2);  // STATUS_CODE_ERROR
    }
    span.One(15, "status", status);
    span.Fixed32(16, "flags", 0x100 | (s.context.sampled ? 1 : 0));
    scope_spans.Add(2, "spans", span);
  }
  scope_spans.Str(3, "schemaUrl", kSchemaUrl);
  Msg resource_spans(json);
  resource_spans.One(1, "resource", ResourceOf(c, json));
  resource_spans.Add(2, "scopeSpans", scope_spans);
  Msg request(json);  // ExportTraceServiceRequest
  request.Add(1, "resourceSpans", resource_spans);
  return request.Body();
}

// ---- opentelemetry.proto.logs.v1 ------------------------------------------

std::string EncodeLogs(const std::vector<LogRecord>& logs, const OtlpConfig& c, bool json) {
  Msg scope_logs(json);
  scope_logs.One(1, "scope", ScopeOf(json));
  for (const auto& l : logs) {
    Msg rec(json);
    rec.Fixed64(1, "timeUnixNano", static_cast<uint64_t>(l.time_ns));
    rec.Enum(2, "severityNumber", static_cast<uint32_t>(l.severity));
    rec.Str(3, "severityText", l.severity_text);
    rec.One(5, "body", AnyValueOf(l.body, json));
    AddAttributes(rec, 6, l.attributes);
    if (l.context.valid()) {
      rec.Fixed32(8, "flags", l.context.sampled ? 1 : 0);
      rec.Id(9, "traceId", l.context.trace_id);
      rec.Id(10, "spanId", l.context.span_id);
    }
    rec.Fixed64(11, "observedTimeUnixNano", static_cast<uint64_t>(l.time_ns));
    scope_logs.Add(2, "logRecords", rec);
  }
  scope_logs.Str(3, "schemaUrl", kSchemaUrl);
  Msg resource_logs(json);
  resource_logs.One(1, "resource", ResourceOf(c, json));
  resource_logs.Add(2, "scopeLogs", scope_logs);
  Msg request(json);  // ExportLogsServiceRequest
  request.Add(1, "resourceLogs", resource_logs);
  return request.Body();
}

// ---- opentelemetry.proto.metrics.v1 ---------------------------------------

std::string EncodeMetrics(const std::vector<MetricReading>& metrics, int64_t start_ns, int64_t now_ns,
                          const OtlpConfig& c, bool json) {
  constexpr uint32_t kCumulative = 2;  // AGGREGATION_TEMPORALITY_CUMULATIVE
  Msg scope_metrics(json);
  scope_metrics.One(1, "scope", ScopeOf(json));
  for (const auto& r : metrics) {
    if (r.points.empty()) continue;
    Msg metric(json);
    metric.Str(1, "name", r.name);
    metric.Str(2, "description", r.description);
    metric.Str(3, "unit", r.unit);
    Msg data(json);
    for (const auto& p : r.points) {
      Msg point(json);
      if (r.kind == MetricReading::Kind::kHistogram) {
        point.Fixed64(2, "startTimeUnixNano", static_cast<uint64_t>(start_ns));
        point.Fixed64(3, "timeUnixNano", static_cast<uint64_t>(now_ns));
        point.Fixed64(4, "count", p.count);
        point.Double(5, "sum", p.value);
        std::vector<uint64_t> buckets = p.buckets;
        buckets.resize(r.bounds.size() + 1, 0);
        point.PackedFixed64(6, "bucketCounts", buckets);
        point.PackedDouble(7, "explicitBounds", r.bounds);
        AddAttributes(point, 9, AttributesOf(p.attributes));
      } else {
        AddAttributes(point, 7, AttributesOf(p.attributes));
        if (r.kind == MetricReading::Kind::kCounter) {
          point.Fixed64(2, "startTimeUnixNano", static_cast<uint64_t>(start_ns));
        }
        point.Fixed64(3, "timeUnixNano", static_cast<uint64_t>(now_ns));
        point.Double(4, "asDouble", p.value);
      }
      data.Add(1, "dataPoints", point);
    }
    switch (r.kind) {
      case MetricReading::Kind::kGauge: metric.One(5, "gauge", data); break;
      case MetricReading::Kind::kCounter:
        data.Enum(2, "aggregationTemporality", kCumulative);
        data.Bool(3, "isMonotonic", true);
        metric.One(7, "sum", data);
        break;
      case MetricReading::Kind::kHistogram:
        data.Enum(2, "aggregationTemporality", kCumulative);
        metric.One(9, "histogram", data);
        break;
    }
    scope_metrics.Add(2, "metrics", metric);
  }
  scope_metrics.Str(3, "schemaUrl", kSchemaUrl);
  Msg resource_metrics(json);
  resource_metrics.One(1, "resource", ResourceOf(c, json));
  resource_metrics.Add(2, "scopeMetrics", scope_metrics);
  Msg request(json);  // ExportMetricsServiceRequest
  request.Add(1, "resourceMetrics", resource_metrics);
  return request.Body();
}

}  // namespace mates::telemetry

// ---- The exporter ----------------------------------------------------------

namespace mates::telemetry {

OtlpExporter::OtlpExporter(OtlpConfig config, MetricSource metrics, Report report,
                           std::shared_ptr<llm::HttpTransport> transport)
    : config_(std::move(config)), metrics_(std::move(metrics)), report_(std::move(report)),
      transport_(transport ? std::move(transport) : llm::NewCurlTransport()), started_ns_(UnixNanos()) {
  thread_ = std::thread([this] { Run(); });
}

OtlpExporter::~OtlpExporter() { Shutdown(); }

void OtlpExporter::Add(SpanRecord span) {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.traces_url.empty() || stopping_) return;
  if (spans_.size() >= config_.max_queue) {
    ++stats_.spans_dropped;
    return;
  }
  spans_.push_back(std::move(span));
  if (spans_.size() >= config_.max_batch) wake_.notify_one();
}

void OtlpExporter::Add(LogRecord log) {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.logs_url.empty() || stopping_) return;
  if (logs_.size() >= config_.max_queue) {
    ++stats_.logs_dropped;
    return;
  }
  logs_.push_back(std::move(log));
  if (logs_.size() >= config_.max_batch) wake_.notify_one();
}

OtlpExporter::Stats OtlpExporter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void OtlpExporter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return;
  const uint64_t ticket = ++flush_asked_;
  wake_.notify_one();
  flushed_.wait_for(lock, std::chrono::duration<double>(config_.timeout_s + 1),
                    [&] { return flush_done_ >= ticket || stopping_; });
}

void OtlpExporter::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_one();
  if (!thread_.joinable()) return;
  // What is queued goes out within the timeout; a collector that does not
  // answer by then is left (its requests cancelled), not waited for.
  std::thread watchdog;
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  watchdog = std::thread([&] {
    std::unique_lock<std::mutex> lock(done_mu);
    if (!done_cv.wait_for(lock, std::chrono::duration<double>(config_.timeout_s + 1), [&] { return done; })) {
      cancel_.store(true);
    }
  });
  thread_.join();
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
  }
  done_cv.notify_one();
  watchdog.join();
}

void OtlpExporter::Run() {
  using Clock = std::chrono::steady_clock;
  auto next_metrics = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(config_.metric_interval_s));
  const auto delay = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config_.schedule_delay_s));
  auto next_batch = Clock::now() + delay;
  for (;;) {
    std::vector<SpanRecord> spans;
    std::vector<LogRecord> logs;
    bool metrics_due = false, stopping = false;
    uint64_t flush_ticket = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto until = config_.metrics_url.empty() ? next_batch : std::min(next_batch, next_metrics);
      wake_.wait_until(lock, until, [&] {
        return stopping_ || flush_asked_ > flush_done_ || spans_.size() >= config_.max_batch ||
               logs_.size() >= config_.max_batch;
      });
      stopping = stopping_;
      flush_ticket = flush_asked_;
      const auto now = Clock::now();
      const bool batch_due = stopping || flush_ticket > flush_done_ || now >= next_batch;
      auto take = [&](auto& queue, auto& out) {
        // Everything when it is time; else full batches only.
        while (!queue.empty() && (batch_due || queue.size() >= config_.max_batch)) {
          const size_t n = std::min(queue.size(), config_.max_batch);
          for (size_t i = 0; i < n; ++i) {
            out.push_back(std::move(queue.front()));
            queue.pop_front();
          }
          if (!batch_due) break;
        }
      };
      take(spans_, spans);
      take(logs_, logs);
      if (batch_due) next_batch = now + delay;
      metrics_due = !config_.metrics_url.empty() && (stopping || flush_ticket > flush_done_ || now >= next_metrics);
      if (metrics_due) {
        next_metrics = now + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(config_.metric_interval_s));
      }
    }
    // Batches of at most max_batch each.
    for (size_t at = 0; at < spans.size(); at += config_.max_batch) {
      SendSpans({std::make_move_iterator(spans.begin() + static_cast<ptrdiff_t>(at)),
                 std::make_move_iterator(spans.begin() + static_cast<ptrdiff_t>(std::min(spans.size(), at + config_.max_batch)))});
    }
    for (size_t at = 0; at < logs.size(); at += config_.max_batch) {
      SendLogs({std::make_move_iterator(logs.begin() + static_cast<ptrdiff_t>(at)),
                std::make_move_iterator(logs.begin() + static_cast<ptrdiff_t>(std::min(logs.size(), at + config_.max_batch)))});
    }
    if (metrics_due) SendMetrics();
    Stats now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (flush_ticket > flush_done_) flush_done_ = flush_ticket;
      now = stats_;
    }
    if (report_ && (!spans.empty() || !logs.empty() || metrics_due || now.spans_dropped != reported_.spans_dropped ||
                    now.logs_dropped != reported_.logs_dropped)) {
      report_(now);
      reported_ = now;
    }
    flushed_.notify_all();
    if (stopping) {
      std::lock_guard<std::mutex> lock(mu_);
      if (spans_.empty() && logs_.empty()) return;
    }
  }
}

bool OtlpExporter::Post(const std::string& url, std::string body) {
  llm::HttpRequest req;
  req.url = url;
  req.body = std::move(body);
  req.headers = config_.headers;
  req.headers.push_back(config_.json ? "Content-Type: application/json" : "Content-Type: application/x-protobuf");
  req.headers.push_back("User-Agent: mates/" MATES_VERSION);
  req.connect_timeout_s = std::min(config_.timeout_s, 10.0);
  req.total_timeout_s = config_.timeout_s;
  req.low_speed_time_s = std::max<long>(1, static_cast<long>(config_.timeout_s));
  std::string failure;
  // A collector asking to slow down (429, 502, 503, 504) gets one more try
  // after a second, as the specification's retryable codes.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string collected;
    auto r = transport_->Send(req, [&](std::string_view d) {
      if (collected.size() < 4096) collected.append(d.substr(0, 4096 - collected.size()));
      return true;
    }, &cancel_);
    if (r.ok() && r->status / 100 == 2) {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.last_error.clear();
      return true;
    }
    if (r.ok()) {
      failure = "the collector answered " + std::to_string(r->status) + " to " + url;
      std::string says = ForTerminal(CutUtf8(r->body, 200));
      if (!says.empty() && config_.json) failure += ": " + says;
      const bool retry = r->status == 429 || r->status == 502 || r->status == 503 || r->status == 504;
      if (!retry || cancel_.load()) break;
    } else {
      failure = "the collector at " + url + " cannot be reached: " + r.status().message();
      if (cancel_.load()) break;
    }
    if (attempt == 0) {
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) break;  // shutting down: no second wait
      wake_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_; });
    }
  }
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = stats_.last_error.empty();
    stats_.last_error = Secrets::Redact(failure);
  }
  // Said once when export starts failing, not at every batch.
  if (first) LogWarning("telemetry: " + failure + "; what it would not take is dropped and counted");
  return false;
}

void OtlpExporter::SendSpans(std::vector<SpanRecord> batch) {
  if (batch.empty()) return;
  const bool ok = Post(config_.traces_url, EncodeSpans(batch, config_, config_.json));
  std::lock_guard<std::mutex> lock(mu_);
  (ok ? stats_.spans_sent : stats_.spans_dropped) += batch.size();
}

void OtlpExporter::SendLogs(std::vector<LogRecord> batch) {
  if (batch.empty()) return;
  const bool ok = Post(config_.logs_url, EncodeLogs(batch, config_, config_.json));
  std::lock_guard<std::mutex> lock(mu_);
  (ok ? stats_.logs_sent : stats_.logs_dropped) += batch.size();
}

void OtlpExporter::SendMetrics() {
  std::vector<MetricReading> readings = metrics_ ? metrics_() : std::vector<MetricReading>{};
  // The exporter's own: what it dropped.
  MetricReading drops{"mates.telemetry.dropped", "{record}", "Spans and log records not exported: queue full or refused",
                      MetricReading::Kind::kCounter, {}, {}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    drops.points.push_back({{{"signal", "traces"}}, static_cast<double>(stats_.spans_dropped), 0, {}});
    drops.points.push_back({{{"signal", "logs"}}, static_cast<double>(stats_.logs_dropped), 0, {}});
  }
  readings.push_back(std::move(drops));
  const bool ok = Post(config_.metrics_url, EncodeMetrics(readings, started_ns_, UnixNanos(), config_, config_.json));
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? stats_.metric_exports : stats_.metric_exports_failed);
}

}  // namespace mates::telemetry
