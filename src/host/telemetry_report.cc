#include "host/telemetry_report.h"

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/files.h"
#include "core/json.h"
#include "core/text.h"

namespace mates::host {
namespace {

fs::path ReportPath(const Workspace& ws, const std::string& team) { return ws.TeamDir(team) / "telemetry.json"; }

uint64_t Count(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

std::string Text(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? CutUtf8(j[key].get<std::string>(), 512) : "";
}

}  // namespace

Status WriteTelemetryReport(const Workspace& ws, const std::string& team, const telemetry::OtlpConfig& c,
                            const telemetry::OtlpExporter::Stats& s) {
  Json j = {{"traces", c.traces_url},
            {"metrics", c.metrics_url},
            {"logs", c.logs_url},
            {"spans_sent", s.spans_sent},
            {"spans_dropped", s.spans_dropped},
            {"logs_sent", s.logs_sent},
            {"logs_dropped", s.logs_dropped},
            {"metric_exports", s.metric_exports},
            {"metric_exports_failed", s.metric_exports_failed},
            {"last_error", s.last_error},
            {"at", WallSeconds()}};
  return WriteFileAtomic(ReportPath(ws, team), DumpJson(j) + "\n", 0600);
}

std::optional<TelemetryReport> ReadTelemetryReport(const Workspace& ws, const std::string& team) {
  auto text = ReadFilePrefix(ReportPath(ws, team), 64 << 10);
  if (!text.ok()) return std::nullopt;
  auto j = ParseJson(*text);
  if (!j.ok() || !j->is_object()) return std::nullopt;
  TelemetryReport r;
  r.traces_url = Text(*j, "traces");
  r.metrics_url = Text(*j, "metrics");
  r.logs_url = Text(*j, "logs");
  r.stats.spans_sent = Count(*j, "spans_sent");
  r.stats.spans_dropped = Count(*j, "spans_dropped");
  r.stats.logs_sent = Count(*j, "logs_sent");
  r.stats.logs_dropped = Count(*j, "logs_dropped");
  r.stats.metric_exports = Count(*j, "metric_exports");
  r.stats.metric_exports_failed = Count(*j, "metric_exports_failed");
  r.stats.last_error = Text(*j, "last_error");
  r.at = j->contains("at") && (*j)["at"].is_number() ? (*j)["at"].get<double>() : 0;
  return r;
}

void RemoveTelemetryReport(const Workspace& ws, const std::string& team) {
  std::error_code ec;
  fs::remove(ReportPath(ws, team), ec);
}

std::string DescribeTelemetry(const TelemetryReport& r) {
  const std::string& where = !r.traces_url.empty() ? r.traces_url : !r.metrics_url.empty() ? r.metrics_url : r.logs_url;
  const auto& s = r.stats;
  std::string line = "exported to " + where + ": " + std::to_string(s.spans_sent) + " spans, " +
                     std::to_string(s.logs_sent) + " log lines, " + std::to_string(s.metric_exports) +
                     " metric exports";
  const uint64_t dropped = s.spans_dropped + s.logs_dropped;
  if (dropped > 0 || s.metric_exports_failed > 0) {
    line += "; DROPPED " + std::to_string(s.spans_dropped) + " spans, " + std::to_string(s.logs_dropped) +
            " log lines, " + std::to_string(s.metric_exports_failed) + " metric exports";
  }
  if (!s.last_error.empty()) line += " (" + ForTerminal(s.last_error) + ")";
  return line;
}

}  // namespace mates::host
