// `GET /metrics` (DESIGN §29): a team in Prometheus' text format — what
// the store says at the scrape (members by state, tasks, unread messages,
// merges, attention, each member's calls, tokens and cost so far) and what
// the host counted as its agents worked (telemetry::Metrics: model call
// durations and tokens, tool calls, message delivery, sandbox refusals,
// hook blocks).
#pragma once

#include <string>
#include <vector>

#include "telemetry/metrics.h"
#include "view/team_view.h"

namespace mates::dashboard {

// What the store says of the team now, as OpenTelemetry names it (the
// host's OTLP export of metrics reads it too).
std::vector<telemetry::MetricReading> TeamReadings(const view::TeamView& v);
// `counted`: the host's, or null (a read-only `mates dashboard`).
std::string MetricsText(const view::TeamView& v, const telemetry::Metrics* counted);

}  // namespace mates::dashboard
