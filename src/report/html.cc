// The report as one HTML page: its styles and the timeline's SVG inline, no
// script, and a Content-Security-Policy that lets the page fetch nothing
// (a report opened offline looks the same; one opened online tells no one).
// Every text of the record is escaped: it is anyone's (a model's, a
// teammate's, a file name).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "agent/prices.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/text.h"
#include "report/format.h"

namespace mates::report {
namespace {

std::string Esc(std::string_view s, size_t max = 100000) {
  std::string out;
  out.reserve(std::min(s.size(), max) + 16);
  for (char c : CutUtf8(std::string(s.substr(0, std::min(s.size(), max * 4))), max)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A task's colour: hues spread by the golden angle, so neighbours differ.
std::string Hue(int64_t task) { return std::to_string(static_cast<int>(std::fmod(task * 137.508, 360.0))); }

const char kStyle[] = R"css(
:root{--bg:#f7f7f5;--fg:#1d1d1f;--mute:#6b6b70;--card:#fff;--line:#e2e2e0;--bad:#c9372c;--good:#2f8f46;--warn:#b7791f;--lane:#efefec}
@media (prefers-color-scheme:dark){:root{--bg:#16171a;--fg:#e8e8ea;--mute:#9a9aa2;--card:#202226;--line:#33363c;--bad:#f0604f;--good:#55c271;--warn:#e0a84a;--lane:#25272c}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
.sub{color:var(--mute);margin:0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(130px,1fr));gap:10px;margin-top:16px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card b{display:block;font-size:18px}.card span{color:var(--mute);font-size:12px}
.card.bad b{color:var(--bad)}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);border-radius:8px;overflow:hidden}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--mute);font-size:12px}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr:last-child td{border-bottom:0}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin-bottom:10px}
.chip{border:1px solid var(--line);border-radius:999px;padding:2px 10px;background:var(--card);font-size:12px}
.chip.on{border-color:var(--bad);color:var(--bad);font-weight:600}
.cls{font-weight:600;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
.cls.specification{color:#8e5bd6}.cls.coordination{color:var(--warn)}.cls.verification{color:#d2691e}
.cls.tooling{color:#3b7dd8}.cls.provider{color:var(--bad)}.cls.budget{color:#b0369b}
.st{font-size:12px;padding:1px 7px;border-radius:999px;border:1px solid var(--line)}
.st.merged,.st.completed{color:var(--good)}.st.conflict,.st.failed,.st.rejected{color:var(--bad)}
.st.in_progress,.st.queued,.st.checking,.st.review{color:var(--warn)}
.mute{color:var(--mute)}.where{color:var(--mute);font-size:12px}
svg{width:100%;min-width:720px;height:auto;background:var(--card);border:1px solid var(--line);border-radius:8px}
svg text{font:11px system-ui,sans-serif;fill:var(--fg)}svg .axis{fill:var(--mute)}
svg .lane{fill:var(--lane)}svg .tick{stroke:var(--line)}
.scroll{overflow-x:auto;border-radius:8px}svg .call{stroke:var(--mute);opacity:.55}
.heat{display:inline-block;min-width:28px;text-align:center;border-radius:4px;padding:0 4px}
details summary{cursor:pointer;color:var(--mute);margin:8px 0}
ul.plain{margin:0;padding-left:18px}
footer{margin-top:32px;color:var(--mute);font-size:12px}
)css";

class Page {
 public:
  explicit Page(const Report& r) : r_(r) {}

  std::string Render() {
    o_ << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
          "<title>Report: team "
       << Esc(r_.team) << "</title><style>" << kStyle << "</style></head><body><main>\n";
    Header();
    Timeline();
    Failures();
    Spend();
    Messages();
    Merges();
    Decisions();
    Notes();
    o_ << "<footer>Made " << Esc(UtcIsoTime(r_.made)) << " by <code>mates report</code> from the team's record ("
       << Esc(r_.where) << ").</footer>\n</main></body></html>\n";
    return o_.str();
  }

 private:
  void Card(const std::string& value, const std::string& label, bool bad = false) {
    o_ << "<div class=\"card" << (bad ? " bad" : "") << "\"><b>" << Esc(value) << "</b><span>" << Esc(label)
       << "</span></div>";
  }

  void Header() {
    o_ << "<h1>Team " << Esc(r_.team) << "</h1><p class=\"sub\">" << Esc(r_.state) << " · lead " << Esc(r_.lead)
       << " · " << Esc(UtcIsoTime(r_.started)) << " to " << Esc(UtcIsoTime(r_.ended)) << "</p>\n<div class=\"cards\">";
    int failures = 0;
    for (const auto& [c, n] : FailuresByClass(r_)) failures += n;
    Card(Duration(r_.ended - r_.started), "span of the record");
    Card(std::to_string(r_.agents.size()), "agents");
    Card(TaskCounts(r_), "tasks");
    Card(std::to_string(r_.messages_total), "messages");
    Card(std::to_string(r_.merges.size()), "merge requests");
    Card(agent::HumanCount(agent::TotalTokens(r_.usage)) + " · " +
             (r_.cost_known ? agent::FormatCost(r_.cost_usd) : std::string("cost unknown")),
         std::to_string(r_.calls) + " model calls");
    Card(std::to_string(failures), "failures", failures > 0);
    o_ << "</div>\n";
    if (!r_.sessions.empty()) o_ << "<p class=\"mute\">Sessions: " << Esc(SessionsSaid(r_)) << "</p>\n";
    if (!r_.budget.empty()) o_ << "<p class=\"mute\">Budget: " << Esc(r_.budget) << "</p>\n";
  }

  // The Gantt: a lane per agent, a bar per task held, failures (red
  // triangles) and merges (diamonds) where they happened.
  void Timeline() {
    o_ << "<h2 id=\"timeline\">Timeline</h2>\n";
    const double left = 130, width = 1000, right = width - 20, top = 26, lane = 30;
    const double span = std::max(r_.ended - r_.started, 1e-6);
    auto x = [&](double t) { return left + std::clamp((t - r_.started) / span, 0.0, 1.0) * (right - left); };
    std::map<std::string, size_t> row;
    for (const auto& a : r_.agents) row.emplace(a.name, row.size());
    for (const auto& b : r_.bars) row.emplace(b.agent, row.size());
    const double height = top + lane * static_cast<double>(std::max<size_t>(row.size(), 1)) + 10;
    o_ << "<div class=\"scroll\"><svg viewBox=\"0 0 " << Num(width) << " " << Num(height) << "\" role=\"img\" aria-label=\"timeline\">";
    for (int i = 0; i <= 5; ++i) {
      const double t = r_.started + span * i / 5, at = x(t);
      o_ << "<line class=\"tick\" x1=\"" << Num(at) << "\" y1=\"18\" x2=\"" << Num(at) << "\" y2=\"" << Num(height - 6)
         << "\"/><text class=\"axis\" x=\"" << Num(at) << "\" y=\"13\" text-anchor=\""
         << (i == 0 ? "start" : i == 5 ? "end" : "middle") << "\">" << Esc(Offset(r_, t)) << "</text>";
    }
    for (const auto& [name, i] : row) {
      const double y = top + lane * static_cast<double>(i);
      o_ << "<rect class=\"lane\" x=\"" << Num(left) << "\" y=\"" << Num(y + 3) << "\" width=\"" << Num(right - left)
         << "\" height=\"" << Num(lane - 6) << "\" rx=\"4\"/><text x=\"8\" y=\"" << Num(y + lane / 2 + 4) << "\">"
         << Esc(name, 18) << "</text>";
    }
    for (const auto& a : r_.agents) {
      const double y = top + lane * static_cast<double>(row[a.name]);
      for (double t : a.call_times) {
        o_ << "<line class=\"call\" x1=\"" << Num(x(t)) << "\" y1=\"" << Num(y + 4) << "\" x2=\"" << Num(x(t))
           << "\" y2=\"" << Num(y + 8) << "\"/>";
      }
    }
    for (const auto& b : r_.bars) {
      const double y = top + lane * static_cast<double>(row[b.agent]), x0 = x(b.from),
                   w = std::max(3.0, x(b.to) - x0);
      o_ << "<g class=\"bar\" data-task=\"" << b.task << "\"><rect x=\"" << Num(x0) << "\" y=\"" << Num(y + 6)
         << "\" width=\"" << Num(w) << "\" height=\"" << Num(lane - 12) << "\" rx=\"3\" fill=\"hsl(" << Hue(b.task)
         << ",55%,55%)\"" << (b.open ? " stroke=\"currentColor\" stroke-dasharray=\"3 2\"" : "") << "><title>"
         << Esc(TaskRef(b.task) + " " + SubjectOf(r_, b.task) + " — " + b.agent + ", " + Offset(r_, b.from) + " for " +
                Duration(b.to - b.from) + (b.open ? " (still in progress)" : ""))
         << "</title></rect>";
      if (w > 26) {
        o_ << "<text x=\"" << Num(x0 + 4) << "\" y=\"" << Num(y + lane / 2 + 4) << "\">" << TaskRef(b.task) << "</text>";
      }
      o_ << "</g>";
    }
    Marks(row, x, top, lane);
    o_ << "</svg></div>\n<p class=\"where\">A bar: a task held in progress (dashed: still held); a tick: a model call; "
          "<span style=\"color:var(--bad)\">▲</span> a failure; ◆ a merge request decided.</p>\n";
    if (r_.bars.empty()) o_ << "<p class=\"mute\">No task was taken in progress.</p>\n";
  }

  template <typename X>
  void Marks(std::map<std::string, size_t>& row, const X& x, double top, double lane) {
    for (const auto& m : r_.merges) {
      auto it = row.find(m.owner);
      if (it == row.end() || m.updated_at <= 0) continue;
      const double cx = x(m.updated_at), cy = top + lane * static_cast<double>(it->second) + lane / 2;
      const char* fill = m.status == MergeState::kMerged ? "var(--good)" : MergeOpen(m.status) ? "var(--warn)" : "var(--bad)";
      o_ << "<path class=\"merge\" d=\"M" << Num(cx) << " " << Num(cy - 6) << " l6 6 l-6 6 l-6 -6z\" fill=\"" << fill
         << "\"><title>" << Esc("merge request " + std::to_string(m.id) + " (" + TaskRef(m.task) + "): " +
                                std::string(MergeStateName(m.status)))
         << "</title></path>";
    }
    for (const auto& f : r_.failures) {
      auto it = row.find(f.agent);
      if (it == row.end() || f.at <= 0) continue;
      const double cx = x(f.at), cy = top + lane * static_cast<double>(it->second + 1) - 4;
      o_ << "<path class=\"failure\" d=\"M" << Num(cx) << " " << Num(cy - 9) << " l5 9 h-10z\" fill=\"var(--bad)\"><title>"
         << Esc(std::string(FailureClassName(f.kind)) + ": " + f.what, 400) << "</title></path>";
    }
  }

  void Failures() {
    o_ << "<h2 id=\"failures\">Failures</h2>\n<div class=\"chips\">";
    for (const auto& [c, n] : FailuresByClass(r_)) {
      o_ << "<span class=\"chip" << (n > 0 ? " on" : "") << "\" title=\"" << Esc(FailureClassMeaning(c)) << "\">"
         << FailureClassName(c) << " " << n << "</span>";
    }
    o_ << "</div>\n";
    if (r_.failures.empty()) {
      o_ << "<p class=\"mute\">Nothing failed.</p>\n";
      return;
    }
    o_ << "<div class=\"scroll\"><table><tr><th>class</th><th>when</th><th>agent</th><th>task</th><th>what</th></tr>";
    for (const auto& f : r_.failures) {
      o_ << "<tr class=\"failure-row\" data-class=\"" << FailureClassName(f.kind) << "\"><td><span class=\"cls "
         << FailureClassName(f.kind) << "\">" << FailureClassName(f.kind) << "</span></td><td>" << Esc(Offset(r_, f.at))
         << "</td><td>" << Esc(f.agent) << "</td><td>" << (f.task == 0 ? "" : TaskRef(f.task)) << "</td><td>"
         << Esc(f.what, 600) << (f.count > 1 ? " <span class=\"mute\">×" + std::to_string(f.count) + "</span>" : "")
         << "<div class=\"where\">" << Esc(f.where) << "</div></td></tr>";
    }
    o_ << "</table></div>\n";
  }

  void Spend() {
    o_ << "<h2 id=\"spend\">Tokens and cost</h2>\n<div class=\"scroll\"><table><tr><th>agent</th><th>role</th><th>model</th>"
          "<th class=\"n\">calls</th><th class=\"n\">turns</th><th class=\"n\">tool calls</th>"
          "<th class=\"n\">failed</th><th class=\"n\">tokens</th><th class=\"n\">cost</th></tr>";
    for (const auto& a : r_.agents) {
      o_ << "<tr><td>" << Esc(a.name) << "</td><td>" << Esc(a.role) << "</td><td>" << Esc(a.model)
         << "</td><td class=\"n\">" << a.calls << "</td><td class=\"n\">" << a.turns << "</td><td class=\"n\">"
         << a.tool_calls << "</td><td class=\"n\">" << a.tool_errors << "</td><td class=\"n\">"
         << agent::HumanCount(agent::TotalTokens(a.usage)) << "</td><td class=\"n\">"
         << (a.cost_known ? agent::FormatCost(a.cost_usd) : "unknown") << "</td></tr>";
    }
    o_ << "</table></div>\n<h3>Per task</h3>\n<div class=\"scroll\"><table><tr><th>task</th><th>subject</th><th>status</th><th>owners</th>"
          "<th class=\"n\">calls</th><th class=\"n\">tokens</th><th class=\"n\">cost</th></tr>";
    for (const auto& t : r_.tasks) {
      o_ << "<tr><td><span style=\"color:hsl(" << Hue(t.task.id) << ",55%,50%)\">■</span> " << TaskRef(t.task.id)
         << "</td><td>" << Esc(t.task.subject, 200) << "</td><td><span class=\"st " << TaskStatusName(t.task.status)
         << "\">" << TaskStatusName(t.task.status) << "</span></td><td>" << Esc(JoinWords(t.owners))
         << "</td><td class=\"n\">" << t.calls << "</td><td class=\"n\">"
         << agent::HumanCount(agent::TotalTokens(t.usage)) << "</td><td class=\"n\">"
         << (t.cost_usd ? agent::FormatCost(*t.cost_usd) : "unknown") << "</td></tr>";
    }
    o_ << "</table></div>\n";
  }

  // Who wrote to whom: a matrix, shaded by count; then the last messages.
  void Messages() {
    o_ << "<h2 id=\"messages\">Messages</h2>\n<p class=\"mute\">" << r_.messages_total << " in all";
    for (const auto& [type, n] : r_.message_types) o_ << " · " << Esc(type) << " " << n;
    o_ << "</p>\n";
    std::vector<std::string> senders, recipients;
    int most = 1;
    for (const auto& [pair, n] : r_.flow) {
      if (std::find(senders.begin(), senders.end(), pair.first) == senders.end()) senders.push_back(pair.first);
      if (std::find(recipients.begin(), recipients.end(), pair.second) == recipients.end()) recipients.push_back(pair.second);
      most = std::max(most, n);
    }
    if (!r_.flow.empty()) {
      o_ << "<div class=\"scroll\"><table class=\"flow\"><tr><th>from \\ to</th>";
      for (const auto& to : recipients) o_ << "<th class=\"n\">" << (to == "*" ? "everyone" : Esc(to)) << "</th>";
      o_ << "</tr>";
      for (const auto& from : senders) {
        o_ << "<tr><th>" << Esc(from) << "</th>";
        for (const auto& to : recipients) {
          auto it = r_.flow.find({from, to});
          const int n = it == r_.flow.end() ? 0 : it->second;
          o_ << "<td class=\"n\">";
          if (n > 0) {
            o_ << "<span class=\"heat\" style=\"background:hsla(210,70%,55%," << Num(0.15 + 0.6 * n / most) << ")\">"
               << n << "</span>";
          }
          o_ << "</td>";
        }
        o_ << "</tr>";
      }
      o_ << "</table></div>\n";
    }
    if (r_.messages.empty()) return;
    o_ << "<details><summary>The last " << r_.messages.size() << " messages</summary><div class=\"scroll\"><table>"
       << "<tr><th>when</th><th>from</th><th>to</th><th>type</th><th>words</th></tr>";
    for (const auto& m : r_.messages) {
      o_ << "<tr><td>" << Esc(Offset(r_, m.timestamp)) << "</td><td>" << Esc(m.sender) << "</td><td>"
         << (m.type == MessageType::kBroadcast ? "everyone" : Esc(m.recipient)) << "</td><td>"
         << MessageTypeName(m.type) << "</td><td>" << Esc(m.summary.empty() ? m.content : m.summary, 400)
         << "</td></tr>";
    }
    o_ << "</table></div></details>\n";
  }

  void Merges() {
    o_ << "<h2 id=\"merges\">Merges</h2>\n";
    if (r_.merges.empty()) {
      o_ << "<p class=\"mute\">None (the team shares one checkout, or nothing was submitted).</p>\n";
      return;
    }
    o_ << "<div class=\"scroll\"><table><tr><th>request</th><th>task</th><th>owner</th><th>state</th><th>checks</th><th>decided by</th></tr>";
    for (const auto& m : r_.merges) {
      o_ << "<tr><td>" << m.id << "</td><td>" << TaskRef(m.task) << " " << Esc(m.subject, 120) << "</td><td>"
         << Esc(m.owner) << "</td><td><span class=\"st " << MergeStateName(m.status) << "\">"
         << MergeStateName(m.status) << "</span>";
      if (!m.files.empty()) o_ << "<div class=\"where\">" << Esc(JoinWords(m.files, ", ", 8)) << "</div>";
      o_ << "</td><td>";
      for (const auto& c : m.checks) {
        o_ << "<div><code>" << Esc(c.command, 120) << "</code> "
           << (c.timed_out ? std::string("timed out") : "exit " + std::to_string(c.exit_code)) << " in "
           << Duration(c.duration_s) << "</div>";
      }
      o_ << "</td><td>" << (m.decided_by.empty() ? "the queue" : Esc(m.decided_by)) << "</td></tr>";
    }
    o_ << "</table></div>\n";
  }

  void Decisions() {
    o_ << "<h2 id=\"decisions\">Decisions</h2>\n";
    if (r_.decisions.empty()) {
      o_ << "<p class=\"mute\">No one decided anything the record shows.</p>\n";
      return;
    }
    o_ << "<div class=\"scroll\"><table><tr><th>when</th><th>who</th><th>what</th></tr>";
    for (const auto& d : r_.decisions) {
      o_ << "<tr><td>" << Esc(Offset(r_, d.at)) << "</td><td>" << Esc(d.who) << "</td><td>" << Esc(d.what, 600)
         << "</td></tr>";
    }
    o_ << "</table></div>\n";
  }

  void Notes() {
    if (r_.notes.empty()) return;
    o_ << "<h2 id=\"notes\">About the record</h2>\n<ul class=\"plain\">";
    for (const auto& n : r_.notes) o_ << "<li>" << Esc(n, 800) << "</li>";
    o_ << "</ul>\n";
  }

  const Report& r_;
  std::ostringstream o_;
};

}  // namespace

std::string Html(const Report& r) { return Page(r).Render(); }

}  // namespace mates::report
