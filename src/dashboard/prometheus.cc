#include "dashboard/prometheus.h"

#include "view/attention.h"

namespace mates::dashboard {

std::vector<telemetry::MetricReading> TeamReadings(const view::TeamView& v) {
  using Kind = telemetry::MetricReading::Kind;
  using Point = telemetry::MetricReading::Point;
  const std::string& team = v.team.name;
  std::vector<telemetry::MetricReading> out;
  // Each reading is made whole before the next is added (a reference into
  // `out` would not outlive its growing).
  auto reading = [](const char* name, const char* unit, Kind kind, const char* help) {
    return telemetry::MetricReading{name, unit, help, kind, {}, {}};
  };
  auto point = [](telemetry::Labels labels, double value) { return Point{std::move(labels), value, 0, {}}; };

  auto agents = reading("mates.agents", "{agent}", Kind::kGauge, "Members of the team by state, as status shows them");
  std::map<std::string, int> states;
  for (const auto& m : v.members) ++states[view::StateOf(m)];
  for (const auto& [state, n] : states) agents.points.push_back(point({{"team", team}, {"state", state}}, n));
  out.push_back(std::move(agents));

  auto tasks = reading("mates.tasks", "{task}", Kind::kGauge, "Tasks on the team's board by status");
  for (const char* status : {"pending", "in_progress", "completed"}) {
    auto it = v.board.find(status);
    tasks.points.push_back(point({{"team", team}, {"status", status}}, it == v.board.end() ? 0 : it->second));
  }
  out.push_back(std::move(tasks));

  auto unread = reading("mates.messages.unread", "{message}", Kind::kGauge, "Messages waiting in each member's inbox");
  for (const auto& m : v.members) {
    unread.points.push_back(point({{"team", team}, {"agent", m.member.name}}, static_cast<double>(m.unread)));
  }
  out.push_back(std::move(unread));

  auto merges = reading("mates.merge.requests", "{request}", Kind::kGauge, "Merge requests by state (worktree isolation)");
  int waiting = 0;
  for (const auto& [state, n] : v.merges) {
    merges.points.push_back(point({{"team", team}, {"state", state}}, n));
    if (state == "queued" || state == "checking" || state == "review") waiting += n;
  }
  out.push_back(std::move(merges));
  auto depth = reading("mates.merge.queue.depth", "{request}", Kind::kGauge,
                       "Merge requests not yet decided: queued, checking or in review");
  depth.points.push_back(point({{"team", team}}, waiting));
  out.push_back(std::move(depth));

  auto attention = reading("mates.attention.items", "{item}", Kind::kGauge,
                           "What needs a person now (status's attention list)");
  attention.points.push_back(point({{"team", team}}, static_cast<double>(view::Attention(v).size())));
  out.push_back(std::move(attention));

  // Each member's spend so far, as its activity says (its journal's sums;
  // a pane's CLI's own records).
  auto calls = reading("mates.model.calls", "{call}", Kind::kCounter, "Model calls of each member so far");
  auto tokens = reading("mates.tokens", "{token}", Kind::kCounter,
                        "Tokens each member's model calls read and wrote so far, by type (input: not from the cache)");
  auto cost = reading("mates.cost.usd", "USD", Kind::kCounter, "What each member's model calls cost so far, where priced");
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->calls == 0) continue;
    const std::string& who = m.member.name;
    calls.points.push_back(point({{"team", team}, {"agent", who}, {"model", m.activity->model}}, m.activity->calls));
    const llm::Usage& u = m.activity->tokens;
    for (const auto& [type, n] : {std::pair{"input", u.input_tokens}, std::pair{"output", u.output_tokens},
                                  std::pair{"cache_read", u.cache_read_input_tokens},
                                  std::pair{"cache_creation", u.cache_creation_input_tokens}}) {
      tokens.points.push_back(
          point({{"team", team}, {"agent", who}, {"model", m.activity->model}, {"type", type}}, static_cast<double>(n)));
    }
    if (m.activity->cost_usd) cost.points.push_back(point({{"team", team}, {"agent", who}}, *m.activity->cost_usd));
  }
  out.push_back(std::move(calls));
  out.push_back(std::move(tokens));
  out.push_back(std::move(cost));
  return out;
}

std::string MetricsText(const view::TeamView& v, const telemetry::Metrics* counted) {
  telemetry::Exposition out;
  for (const auto& r : TeamReadings(v)) {
    // Prometheus' name for OpenTelemetry's: '.' as '_', a counter's _total.
    const bool counter = r.kind == telemetry::MetricReading::Kind::kCounter;
    const std::string name = telemetry::MetricName(r.name) + (counter ? "_total" : "");
    out.Family(name, counter ? "counter" : "gauge", r.description);
    for (const auto& p : r.points) out.Sample(name, p.attributes, p.value);
  }
  if (counted != nullptr) counted->WriteTo(out);
  return out.text();
}

}  // namespace mates::dashboard
