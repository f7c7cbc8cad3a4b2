// The report as Markdown and as JSON, and what every rendering says alike
// (format.h).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/prices.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/text.h"
#include "report/format.h"

namespace mates::report {

std::string Duration(double seconds) {
  if (!(seconds > 0)) seconds = 0;
  char buf[32];
  if (seconds < 10) {
    std::snprintf(buf, sizeof buf, "%.2fs", seconds);
    return buf;
  }
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    return buf;
  }
  return ShortDuration(seconds);
}

std::string Offset(const Report& r, double at) {
  if (at <= 0) return "—";
  return "+" + Duration(at - r.started);
}

std::string Spent(const llm::Usage& u, std::optional<double> cost_usd) {
  return agent::HumanCount(agent::TotalTokens(u)) + " tokens, " +
         (cost_usd ? agent::FormatCost(*cost_usd) : std::string("cost unknown"));
}

std::map<FailureClass, int> FailuresByClass(const Report& r) {
  std::map<FailureClass, int> n = r.failure_counts;
  for (FailureClass c : kFailureClasses) n.emplace(c, 0);
  return n;
}

std::string TaskCounts(const Report& r) {
  std::map<TaskStatus, int> n;
  for (const auto& t : r.tasks) ++n[t.task.status];
  const int live = static_cast<int>(r.tasks.size()) - n[TaskStatus::kDeleted];
  std::string s = std::to_string(n[TaskStatus::kCompleted]) + " of " + std::to_string(live) + " completed";
  if (n[TaskStatus::kInProgress] > 0) s += ", " + std::to_string(n[TaskStatus::kInProgress]) + " in progress";
  if (n[TaskStatus::kPending] > 0) s += ", " + std::to_string(n[TaskStatus::kPending]) + " pending";
  if (n[TaskStatus::kDeleted] > 0) s += " (" + std::to_string(n[TaskStatus::kDeleted]) + " deleted)";
  return s;
}

std::string SessionsSaid(const Report& r) {
  std::vector<std::string> said;
  for (const auto& s : r.sessions) {
    said.push_back((s.how.empty() ? std::string("a session") : s.how) + " " + Offset(r, s.started_at) +
                   (s.commit.empty() ? ", not in git" : " from " + s.commit.substr(0, 10)) +
                   (s.branch.empty() ? "" : " (" + s.branch + ")"));
  }
  return JoinWords(said, "; ");
}

std::string SubjectOf(const Report& r, int64_t task) {
  for (const auto& t : r.tasks) {
    if (t.task.id == task) return t.task.subject;
  }
  return "";
}

namespace {

Json Cost(std::optional<double> usd) { return usd ? Json(*usd) : Json(nullptr); }

Json AgentJson(const AgentReport& a) {
  return {{"name", a.name},
          {"role", a.role},
          {"model", a.model},
          {"calls", a.calls},
          {"usage", llm::UsageToJson(a.usage)},
          {"tokens", agent::TotalTokens(a.usage)},
          {"cost_usd", Cost(a.cost_known ? std::optional<double>(a.cost_usd) : std::nullopt)},
          {"turns", a.turns},
          {"tool_calls", a.tool_calls},
          {"tool_errors", a.tool_errors},
          {"compactions", a.compactions},
          {"tools", a.tools},
          {"first", a.first},
          {"last", a.last}};
}

Json TaskJson(const TaskReport& t) {
  return {{"id", t.task.id},
          {"subject", t.task.subject},
          {"status", TaskStatusName(t.task.status)},
          {"owner", t.task.owner},
          {"owners", t.owners},
          {"blocked_by", t.task.blocked_by},
          {"created_at", t.task.created_at},
          {"calls", t.calls},
          {"usage", llm::UsageToJson(t.usage)},
          {"tokens", agent::TotalTokens(t.usage)},
          {"cost_usd", Cost(t.cost_usd)}};
}

Json SessionsJson(const Report& r) {
  Json out = Json::array();
  for (const auto& s : r.sessions) {
    out.push_back({{"started_at", s.started_at}, {"how", s.how}, {"commit", s.commit}, {"branch", s.branch}});
  }
  return out;
}

}  // namespace

Json ToJson(const Report& r) {
  Json agents = Json::array(), tasks = Json::array(), bars = Json::array(), flow = Json::array(),
       last = Json::array(), merges = Json::array(), requests = Json::array(), failures = Json::array(),
       decisions = Json::array(), by_class = Json::object();
  for (const auto& a : r.agents) agents.push_back(AgentJson(a));
  for (const auto& t : r.tasks) tasks.push_back(TaskJson(t));
  for (const auto& b : r.bars) {
    bars.push_back({{"agent", b.agent}, {"task", b.task}, {"from", b.from}, {"to", b.to}, {"open", b.open}});
  }
  for (const auto& [pair, n] : r.flow) flow.push_back({{"from", pair.first}, {"to", pair.second}, {"count", n}});
  for (const auto& m : r.messages) last.push_back(MessageToJson(m));
  for (const auto& m : r.merges) merges.push_back(MergeRequestToJson(m));
  for (const auto& q : r.requests) requests.push_back(ProtocolRequestToJson(q));
  for (const auto& f : r.failures) {
    failures.push_back({{"class", FailureClassName(f.kind)}, {"at", f.at}, {"agent", f.agent}, {"task", f.task},
                        {"what", f.what}, {"where", f.where}, {"count", f.count}});
  }
  for (const auto& [c, n] : FailuresByClass(r)) by_class[std::string(FailureClassName(c))] = n;
  for (const auto& d : r.decisions) decisions.push_back({{"at", d.at}, {"who", d.who}, {"what", d.what}});
  return {{"team", r.team},
          {"state", r.state},
          {"where", r.where},
          {"lead", r.lead},
          {"sessions", SessionsJson(r)},
          {"started", r.started},
          {"ended", r.ended},
          {"made", r.made},
          {"totals",
           {{"calls", r.calls},
            {"usage", llm::UsageToJson(r.usage)},
            {"tokens", agent::TotalTokens(r.usage)},
            {"cost_usd", Cost(r.cost_known ? std::optional<double>(r.cost_usd) : std::nullopt)}}},
          {"budget", r.budget.empty() ? Json(nullptr) : Json(r.budget)},
          {"agents", agents},
          {"tasks", tasks},
          {"timeline", bars},
          {"messages",
           {{"total", r.messages_total}, {"by_type", r.message_types}, {"flow", flow}, {"last", last}}},
          {"merges", merges},
          {"requests", requests},
          {"failures", failures},
          {"failures_by_class", by_class},
          {"decisions", decisions},
          {"notes", r.notes}};
}

namespace {

// A table cell: one line, no pipe, no markup a renderer would run.
std::string Cell(std::string_view s, size_t max = 160) {
  std::string out;
  for (char c : CutUtf8(std::string(s), max)) {
    switch (c) {
      case '\n': case '\r': case '\t': out += ' '; break;
      case '|': out += "\\|"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '`': out += '\''; break;
      case '*': case '_': case '[': case ']': out += '\\'; out += c; break;
      default: out += c;
    }
  }
  return out;
}

// A strip of `width` characters drawing [from, to) of the record's span.
std::string Strip(const Report& r, double from, double to, size_t width) {
  const double span = std::max(r.ended - r.started, 1e-9);
  auto col = [&](double t) {
    return std::min(width - 1, static_cast<size_t>(std::max(0.0, (t - r.started) / span) * static_cast<double>(width)));
  };
  std::string out;
  const size_t a = col(from), b = std::max(col(to), a);
  for (size_t i = 0; i < width; ++i) out += i >= a && i <= b ? "█" : "·";
  return out;
}

void Summary(std::ostringstream& o, const Report& r) {
  o << "# Report: team " << Cell(r.team) << "\n\n";
  o << "- **state**: " << Cell(r.state) << " — kept in " << Cell(r.where) << "\n";
  o << "- **span**: " << UtcIsoTime(r.started) << " to " << UtcIsoTime(r.ended) << " ("
    << Duration(r.ended - r.started) << ")\n";
  if (!r.sessions.empty()) o << "- **sessions**: " << Cell(SessionsSaid(r), 600) << "\n";
  o << "- **agents**: " << r.agents.size() << ", lead " << Cell(r.lead) << "\n";
  o << "- **tasks**: " << TaskCounts(r) << "\n";
  o << "- **messages**: " << r.messages_total << "; **merges**: " << r.merges.size() << "\n";
  o << "- **spent**: " << r.calls << " model calls, "
    << Spent(r.usage, r.cost_known ? std::optional<double>(r.cost_usd) : std::nullopt) << "\n";
  if (!r.budget.empty()) o << "- **budget**: " << Cell(r.budget, 400) << "\n";
  std::vector<std::string> classes;
  for (const auto& [c, n] : FailuresByClass(r)) {
    if (n > 0) classes.push_back(std::string(FailureClassName(c)) + " " + std::to_string(n));
  }
  o << "- **failures**: " << (classes.empty() ? "none" : JoinWords(classes)) << "\n";
  o << "- made " << UtcIsoTime(r.made) << " by `mates report`\n\n";
}

void Timeline(std::ostringstream& o, const Report& r) {
  o << "## Timeline\n\nWho held which task in progress, when (the record's span is the strip's width).\n\n";
  if (r.bars.empty()) {
    o << "No task was taken in progress.\n\n";
    return;
  }
  o << "| agent | task | from | for | |\n|---|---|---|---|---|\n";
  for (const auto& b : r.bars) {
    o << "| " << Cell(b.agent) << " | " << TaskRef(b.task) << " " << Cell(SubjectOf(r, b.task), 60) << " | "
      << Offset(r, b.from) << " | " << Duration(b.to - b.from) << (b.open ? " (still)" : "") << " | `"
      << Strip(r, b.from, b.to, 40) << "` |\n";
  }
  o << "\n";
}

void Failures(std::ostringstream& o, const Report& r) {
  o << "## Failures\n\n";
  o << "| class | count | what it covers |\n|---|---|---|\n";
  for (const auto& [c, n] : FailuresByClass(r)) {
    o << "| " << FailureClassName(c) << " | " << n << " | " << Cell(FailureClassMeaning(c), 300) << " |\n";
  }
  o << "\n";
  if (r.failures.empty()) o << "Nothing failed.\n";
  for (const auto& f : r.failures) {
    o << "- **" << FailureClassName(f.kind) << "** " << Offset(r, f.at)
      << (f.agent.empty() ? "" : " " + Cell(f.agent)) << (f.task == 0 ? "" : " " + TaskRef(f.task)) << ": "
      << Cell(f.what, 400) << " _(" << Cell(f.where) << ")_\n";
  }
  o << "\n";
}

void Spend(std::ostringstream& o, const Report& r) {
  o << "## Tokens and cost\n\n| agent | role | model | calls | turns | tool calls (failed) | tokens | cost |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const auto& a : r.agents) {
    o << "| " << Cell(a.name) << " | " << Cell(a.role) << " | " << Cell(a.model) << " | " << a.calls << " | "
      << a.turns << " | " << a.tool_calls << " (" << a.tool_errors << ") | "
      << agent::HumanCount(agent::TotalTokens(a.usage)) << " | "
      << (a.cost_known ? agent::FormatCost(a.cost_usd) : "unknown") << " |\n";
  }
  o << "\n| task | subject | status | owners | calls | tokens | cost |\n|---|---|---|---|---|---|---|\n";
  for (const auto& t : r.tasks) {
    o << "| " << TaskRef(t.task.id) << " | " << Cell(t.task.subject, 80) << " | " << TaskStatusName(t.task.status)
      << " | " << Cell(JoinWords(t.owners)) << " | " << t.calls << " | "
      << agent::HumanCount(agent::TotalTokens(t.usage)) << " | "
      << (t.cost_usd ? agent::FormatCost(*t.cost_usd) : "unknown") << " |\n";
  }
  o << "\n";
}

void Messages(std::ostringstream& o, const Report& r) {
  o << "## Messages\n\n" << r.messages_total << " in all.";
  for (const auto& [type, n] : r.message_types) o << " " << type << ": " << n << ".";
  o << "\n\n| from | to | messages |\n|---|---|---|\n";
  for (const auto& [pair, n] : r.flow) {
    o << "| " << Cell(pair.first) << " | " << (pair.second == "*" ? "everyone" : Cell(pair.second)) << " | " << n
      << " |\n";
  }
  o << "\n";
  for (const auto& m : r.messages) {
    o << "- " << Offset(r, m.timestamp) << " " << Cell(m.sender) << " → "
      << (m.type == MessageType::kBroadcast ? "everyone" : Cell(m.recipient)) << " ("
      << MessageTypeName(m.type) << "): " << Cell(m.summary.empty() ? m.content : m.summary, 200) << "\n";
  }
  o << "\n";
}

void Merges(std::ostringstream& o, const Report& r) {
  o << "## Merges\n\n";
  if (r.merges.empty()) {
    o << "None (the team shares one checkout, or nothing was submitted).\n\n";
    return;
  }
  o << "| request | task | owner | state | checks | decided by |\n|---|---|---|---|---|---|\n";
  for (const auto& m : r.merges) {
    std::vector<std::string> checks;
    for (const auto& c : m.checks) {
      checks.push_back("'" + Cell(c.command, 60) + "' " +
                       (c.timed_out ? std::string("timed out") : "exit " + std::to_string(c.exit_code)) + " in " +
                       Duration(c.duration_s));
    }
    o << "| " << m.id << " | " << TaskRef(m.task) << " " << Cell(m.subject, 60) << " | " << Cell(m.owner) << " | "
      << MergeStateName(m.status) << " | " << (checks.empty() ? "—" : JoinWords(checks, "; ")) << " | "
      << (m.decided_by.empty() ? "the queue" : Cell(m.decided_by)) << " |\n";
  }
  o << "\n";
}

void Decisions(std::ostringstream& o, const Report& r) {
  o << "## Decisions\n\n";
  if (r.decisions.empty()) o << "No one decided anything the record shows.\n";
  for (const auto& d : r.decisions) {
    o << "- " << Offset(r, d.at) << " " << (d.who.empty() ? "" : "**" + Cell(d.who) + "** ") << Cell(d.what, 400)
      << "\n";
  }
  o << "\n";
}

}  // namespace

std::string Markdown(const Report& r) {
  std::ostringstream o;
  Summary(o, r);
  Timeline(o, r);
  Failures(o, r);
  Spend(o, r);
  Messages(o, r);
  Merges(o, r);
  Decisions(o, r);
  if (!r.notes.empty()) {
    o << "## About the record\n\n";
    for (const auto& n : r.notes) o << "- " << Cell(n, 600) << "\n";
    o << "\n";
  }
  return o.str();
}

}  // namespace mates::report
