// What a host's OTLP export did (DESIGN §29), beside its host.json in
// `.teams/<team>/telemetry.json`, for `mates status` and `mates doctor`:
//
//   {"traces": "http://…/v1/traces", "spans_sent": 120, "spans_dropped": 0,
//    "logs_sent": 3, "logs_dropped": 0, "metric_exports": 2,
//    "metric_exports_failed": 0, "last_error": "", "at": 1763884800.1}
//
// Written by the exporter's thread after each round; read only while the
// host lives (a dead host's figures say nothing of now).
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "store/workspace.h"
#include "telemetry/otlp.h"

namespace mates::host {

struct TelemetryReport {
  std::string traces_url, metrics_url, logs_url;
  telemetry::OtlpExporter::Stats stats;
  double at = 0;
};

Status WriteTelemetryReport(const Workspace& ws, const std::string& team, const telemetry::OtlpConfig& c,
                            const telemetry::OtlpExporter::Stats& s);
// nullopt when there is none or it does not read.
std::optional<TelemetryReport> ReadTelemetryReport(const Workspace& ws, const std::string& team);
void RemoveTelemetryReport(const Workspace& ws, const std::string& team);
// One line for a person: "exported to URL: 120 spans, 0 dropped", or what
// went wrong.
std::string DescribeTelemetry(const TelemetryReport& r);

}  // namespace mates::host
