#include "dashboard/prometheus.h"

#include "view/attention.h"

namespace mates::dashboard {

std::string MetricsText(const view::TeamView& v, const telemetry::Metrics* counted) {
  using telemetry::Labels;
  const std::string& team = v.team.name;
  telemetry::Exposition out;

  out.Family("mates_agents", "gauge", "Members of the team by state, as status shows them");
  std::map<std::string, int> states;
  for (const auto& m : v.members) ++states[view::StateOf(m)];
  for (const auto& [state, n] : states) out.Sample("mates_agents", {{"team", team}, {"state", state}}, n);

  out.Family("mates_tasks", "gauge", "Tasks on the team's board by status");
  for (const char* status : {"pending", "in_progress", "completed"}) {
    auto it = v.board.find(status);
    out.Sample("mates_tasks", {{"team", team}, {"status", status}}, it == v.board.end() ? 0 : it->second);
  }

  out.Family("mates_messages_unread", "gauge", "Messages waiting in each member's inbox");
  for (const auto& m : v.members) {
    out.Sample("mates_messages_unread", {{"team", team}, {"agent", m.member.name}}, static_cast<double>(m.unread));
  }

  out.Family("mates_merge_requests", "gauge", "Merge requests by state (worktree isolation)");
  for (const auto& [state, n] : v.merges) out.Sample("mates_merge_requests", {{"team", team}, {"state", state}}, n);
  out.Family("mates_merge_queue_depth", "gauge", "Merge requests not yet decided: queued, checking or in review");
  int waiting = 0;
  for (const auto& [state, n] : v.merges) {
    if (state == "queued" || state == "checking" || state == "review") waiting += n;
  }
  out.Sample("mates_merge_queue_depth", {{"team", team}}, waiting);

  out.Family("mates_attention_items", "gauge", "What needs a person now (status's attention list)");
  out.Sample("mates_attention_items", {{"team", team}}, static_cast<double>(view::Attention(v).size()));

  // Each member's spend so far, as its activity says (its journal's sums;
  // a pane's CLI's own records).
  out.Family("mates_model_calls_total", "counter", "Model calls of each member so far");
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->calls == 0) continue;
    out.Sample("mates_model_calls_total", {{"team", team}, {"agent", m.member.name}, {"model", m.activity->model}},
               m.activity->calls);
  }
  out.Family("mates_tokens_total", "counter",
             "Tokens each member's model calls read and wrote so far, by type (input: not from the cache)");
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->calls == 0) continue;
    const llm::Usage& u = m.activity->tokens;
    for (const auto& [type, n] : {std::pair{"input", u.input_tokens}, std::pair{"output", u.output_tokens},
                                  std::pair{"cache_read", u.cache_read_input_tokens},
                                  std::pair{"cache_creation", u.cache_creation_input_tokens}}) {
      out.Sample("mates_tokens_total",
                 {{"team", team}, {"agent", m.member.name}, {"model", m.activity->model}, {"type", type}},
                 static_cast<double>(n));
    }
  }
  out.Family("mates_cost_usd_total", "counter", "What each member's model calls cost so far, where priced");
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->calls == 0 || !m.activity->cost_usd) continue;
    out.Sample("mates_cost_usd_total", {{"team", team}, {"agent", m.member.name}}, *m.activity->cost_usd);
  }
  if (counted != nullptr) counted->WriteTo(out);
  return out.text();
}

}  // namespace mates::dashboard
