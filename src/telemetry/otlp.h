// OTLP/HTTP export of a host's traces, metrics and logs (DESIGN §29), to
// an OpenTelemetry collector, configured as every OpenTelemetry SDK is (the
// OTEL_* variables) or by the person's config's `telemetry:` section.
//
// The wire format is written here, by hand, from the field numbers of the
// official opentelemetry-proto definitions (v1: common, resource, trace,
// metrics, logs and their collector services): what a host sends is a few
// dozen fields, and libprotobuf would have mates build generated code from
// .proto files Debian does not package. The tests decode every request
// with the official definitions (opentelemetry-js's generated decoders) so
// that a wrong field number cannot pass.
//
// Export never blocks an agent: spans and log lines wait in bounded queues
// for the exporter's own thread; what does not fit, or what the collector
// would not take, is counted as dropped and shown (status, doctor).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "telemetry/metrics.h"
#include "telemetry/trace.h"

namespace mates::llm {
class HttpTransport;
}

namespace mates::telemetry {

// The semantic conventions mates' spans and metrics follow, and the
// schema their records name.
inline constexpr std::string_view kSemconvVersion = "1.37.0";
inline constexpr std::string_view kSchemaUrl = "https://opentelemetry.io/schemas/1.37.0";

struct OtlpConfig {
  // Where each signal goes; "" = not exported. The generic endpoint gets
  // /v1/traces, /v1/metrics and /v1/logs added; a per-signal one is used
  // as it is (the specification's rule).
  std::string traces_url, metrics_url, logs_url;
  bool json = false;  // http/json rather than http/protobuf
  std::vector<std::string> headers;  // "Name: value"
  std::vector<std::pair<std::string, std::string>> resource;  // service.name first
  Sampler sampler;
  double metric_interval_s = 60;
  double schedule_delay_s = 5;
  double timeout_s = 10;
  size_t max_queue = 2048;
  size_t max_batch = 512;
  size_t max_attribute_bytes = 4096;
  size_t max_attributes = 128;
  // OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental: the latest
  // GenAI attribute names only (the default also writes the ones Claude
  // Code's and older instrumentations read: gen_ai.system).
  bool gen_ai_latest = false;
  // What was given but could not be used, each in one sentence.
  std::vector<std::string> warnings;

  bool enabled() const { return !traces_url.empty() || !metrics_url.empty() || !logs_url.empty(); }

  // From the OTEL_* variables `get` returns (nullptr: unset), over the
  // person's `telemetry:` section (`endpoint`, `protocol`, `headers`,
  // `service_name`, `resource_attributes`, `sampler`, `sampler_arg`,
  // `metric_export_interval_ms`, `schedule_delay_ms`, `disabled`): the
  // variables win, as everywhere. Off when neither names an endpoint, or
  // when OTEL_SDK_DISABLED=true.
  static OtlpConfig From(const std::function<const char*(const char*)>& get, const Json& section);
  static OtlpConfig FromEnvironment(const Json& section);

  // The OTEL_* variables a pane's CLI is started with, so that its own
  // telemetry (Claude Code's, Codex's) goes where the team's does, marked
  // with the team's resource attributes and `extra` ones (DESIGN §29).
  std::vector<std::string> ChildEnvironment(const std::vector<std::pair<std::string, std::string>>& extra) const;
};

// The bodies of export requests, in either encoding.
std::string EncodeSpans(const std::vector<SpanRecord>& spans, const OtlpConfig& c, bool json);
std::string EncodeLogs(const std::vector<LogRecord>& logs, const OtlpConfig& c, bool json);
std::string EncodeMetrics(const std::vector<MetricReading>& metrics, int64_t start_ns, int64_t now_ns,
                          const OtlpConfig& c, bool json);

// The host's own exporter: one thread, bounded queues.
class OtlpExporter {
 public:
  struct Stats {
    uint64_t spans_sent = 0, spans_dropped = 0;
    uint64_t logs_sent = 0, logs_dropped = 0;
    uint64_t metric_exports = 0, metric_exports_failed = 0;
    std::string last_error;  // the collector's latest refusal or failure, in words
  };
  using MetricSource = std::function<std::vector<MetricReading>()>;

  using Report = std::function<void(const Stats&)>;
  // `report`: told the figures after each round that sent or dropped
  // something (on the exporter's thread). `transport`: null = curl's.
  OtlpExporter(OtlpConfig config, MetricSource metrics, Report report = {},
               std::shared_ptr<llm::HttpTransport> transport = nullptr);
  ~OtlpExporter();  // Shutdown()
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Never block: full queues drop (counted).
  void Add(SpanRecord span);
  void Add(LogRecord log);
  // Sends what is queued and the metrics once more, within the export
  // timeout, and stops the thread. Idempotent.
  void Shutdown();
  // Sends what is queued now, and waits for it at most the export timeout
  // and a second (a host that ends is not held by a collector that hangs).
  void Flush();

  Stats stats() const;
  const OtlpConfig& config() const { return config_; }

 private:
  void Run();
  // One request; false when it failed (said in stats_.last_error).
  bool Post(const std::string& url, std::string body);
  void SendSpans(std::vector<SpanRecord> batch);
  void SendLogs(std::vector<LogRecord> batch);
  void SendMetrics();

  const OtlpConfig config_;
  MetricSource metrics_;
  Report report_;
  std::shared_ptr<llm::HttpTransport> transport_;
  const int64_t started_ns_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable flushed_;
  std::deque<SpanRecord> spans_;  // guarded by mu_
  std::deque<LogRecord> logs_;    // guarded by mu_
  Stats stats_;                   // guarded by mu_
  uint64_t flush_asked_ = 0, flush_done_ = 0;  // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  Stats reported_;                // the thread's own: what report_ was told last
  std::atomic<bool> cancel_{false};  // ends a request in flight at shutdown's deadline
  std::thread thread_;
};

}  // namespace mates::telemetry
