// mates logs [--team T] [NAME...] [-f] [--since D] [--json]
//
// What the agents do, interleaved by time like `docker compose logs`
// (DESIGN §27): from each agent's journal its turns' inputs (who sent what,
// notices, tasks), its text, its tool calls with their arguments, their
// results (cut; errors marked — a sandbox's refusal and a hook's block are
// results), its model calls and compactions; and, following, the changes
// of its activity that no journal holds (retrying, a failed turn, stopped).
// A colour per agent on a terminal. `mates log` stays the message log.
//
// Following reads what each journal gained, woken by inotify on the
// agents' folder for IN_MODIFY: journals are appended through a file
// descriptor kept open, which the store's Watcher (close-write and rename
// only, so that an append does not wake every watcher of a team) does not
// see. A store kept elsewhere (PostgreSQL) is read once a second.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "agent/activity.h"
#include "agent/journal.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/names.h"
#include "core/text.h"
#include "store/team_store.h"
#include "view/attention.h"

namespace mates::cli {
namespace {

constexpr size_t kMaxJournalBytes = 64u << 20;
constexpr size_t kCut = 200;

struct LogsArgs {
  std::vector<std::string> names;
  bool follow = false;
  std::string since;
  bool json = false;
};

struct Entry {
  double ts = 0;
  std::string agent;
  std::string kind;  // in, say, tool, result, error, call, compact, state
  std::string text;
};

// "30s", "10m", "2h", "1d" → seconds; nullopt if not one.
std::optional<double> ParseSpan(const std::string& s) {
  if (s.size() < 2) return std::nullopt;
  const char unit = s.back();
  const std::string n = s.substr(0, s.size() - 1);
  if (n.find_first_not_of("0123456789") != std::string::npos || n.size() > 9) return std::nullopt;
  const double v = std::stod(n);
  switch (unit) {
    case 's': return v;
    case 'm': return v * 60;
    case 'h': return v * 3600;
    case 'd': return v * 86400;
    default: return std::nullopt;
  }
}

std::string OneLine(std::string s, size_t cut = kCut) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  s = CutUtf8(s, cut);
  return s;
}

std::string Attr(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const size_t end = tag.find('"', at + key.size());
  return end == std::string::npos ? "" : tag.substr(at + key.size(), end - at - key.size());
}

// A turn's input as a person reads it: a message frame as "from (type):
// text", another frame by its name.
std::string Input(const std::string& text) {
  std::string out, rest = text;
  while (!rest.empty()) {
    const size_t open = rest.find('<');
    if (open == std::string::npos || rest.compare(open, 2, "</") == 0) {
      out += rest;
      break;
    }
    const size_t close = rest.find('>', open);
    const size_t space = rest.find_first_of(" >", open);
    if (close == std::string::npos || space == std::string::npos) {
      out += rest;
      break;
    }
    const std::string name = rest.substr(open + 1, space - open - 1);
    const std::string tag = rest.substr(open, close - open + 1);
    const std::string end = "</" + name + ">";
    const size_t body_end = rest.find(end, close);
    if (name.empty() || body_end == std::string::npos) {
      out += rest.substr(0, close + 1);
      rest = rest.substr(close + 1);
      continue;
    }
    out += rest.substr(0, open);
    std::string body = rest.substr(close + 1, body_end - close - 1);
    if (name == "teammate-message") {
      const std::string type = Attr(tag, "type");
      out += Attr(tag, "teammate_id") + (type.empty() || type == "message" ? "" : " (" + type + ")") + ": " + body;
    } else {
      out += "[" + name + "] " + body;
    }
    rest = rest.substr(body_end + end.size());
  }
  return out;
}

std::string ToolCall(const Json& b) {
  const Json& input = FieldOr(b, "input");
  const std::string name = StringOr(b, "name");
  return (name.empty() ? "?" : name) + OneLine(input.is_null() ? "{}" : DumpJson(input), kCut);
}

// One journal line's entries.
void EntriesOf(const std::string& agent, const std::string& line, std::vector<Entry>* out) {
  auto parsed = ParseJson(line);
  if (!parsed.ok() || !parsed->is_object()) return;
  const Json& j = *parsed;
  const std::string kind = StringOr(j, "kind");
  const Json& at = FieldOr(j, "ts");
  const double ts = at.is_number() ? at.get<double>() : 0;
  if (kind == "usage") {
    const Json& u = FieldOr(j, "usage");
    if (!u.is_object()) return;
    auto n = [&](const char* k) {
      const Json& v = FieldOr(u, k);
      return v.is_number_integer() ? v.get<int64_t>() : 0;
    };
    out->push_back({ts, agent, "call",
                    StringOr(j, "model") + ": " +
                        std::to_string(n("input_tokens") + n("cache_read_input_tokens") +
                                       n("cache_creation_input_tokens")) +
                        " in, " + std::to_string(n("output_tokens")) + " out"});
    return;
  }
  if (kind == "compact") {
    out->push_back({ts, agent, "compact", "the conversation was compacted"});
    return;
  }
  if (kind == "turn_end") {
    const std::string end = StringOr(j, "end"), why = StringOr(j, "why");
    out->push_back({ts, agent, "state",
                    OneLine((end == "failed" ? std::string("turn failed") : "turn ended: " + end) +
                            (why.empty() ? "" : ": " + why))});
    return;
  }
  const Json& m = FieldOr(j, "message");
  if (kind != "message" || !m.is_object()) return;
  const bool user = StringOr(m, "role") == "user";
  const Json& content = FieldOr(m, "content");
  if (content.is_string()) {
    const std::string t = content.get<std::string>();
    out->push_back({ts, agent, user ? "in" : "say", OneLine(user ? Input(t) : t)});
    return;
  }
  if (!content.is_array()) return;
  for (const auto& b : content) {
    const std::string type = StringOr(b, "type");
    if (type == "text") {
      const std::string t = StringOr(b, "text");
      if (!t.empty()) out->push_back({ts, agent, user ? "in" : "say", OneLine(user ? Input(t) : t)});
    } else if (type == "tool_use") {
      out->push_back({ts, agent, "tool", ToolCall(b)});
    } else if (type == "tool_result") {
      const bool error = FieldOr(b, "is_error").is_boolean() && FieldOr(b, "is_error").get<bool>();
      out->push_back({ts, agent, error ? "error" : "result", OneLine(agent::ToolResultText(FieldOr(b, "content")))});
    }
  }
}

// What an agent's activity says that its journal does not: the
// moments it retries, fails or stops ("" when nothing of that).
std::string StateNews(const agent::Activity& a) {
  switch (a.state) {
    case agent::ActivityState::kRetrying:
      return "retrying" + (a.retry ? " (attempt " + std::to_string(a.retry->attempt) + " of " +
                                         std::to_string(a.retry->of) + "): " + OneLine(a.retry->cause)
                                   : std::string());
    case agent::ActivityState::kStopped: return "stopped: " + OneLine(a.doing);
    default: break;
  }
  if (a.error) return "turn failed: " + OneLine(a.error->reason) + (a.error->next.empty() ? "" : " — " + a.error->next);
  return "";
}

class Printer {
 public:
  Printer(bool json, bool color) : json_(json), color_(color) {}
  void Print(const Entry& e) {
    if (json_) {
      std::cout << DumpJson(Json{{"ts", e.ts}, {"agent", e.agent}, {"kind", e.kind}, {"text", e.text}}) << "\n";
      return;
    }
    auto it = colors_.find(e.agent);
    const std::string sgr = it == colors_.end() ? "1" : it->second;
    const std::string name = e.agent + std::string(e.agent.size() < width_ ? width_ - e.agent.size() : 0, ' ');
    const std::string prefix = color_ ? "\033[" + sgr + "m" + name + " |\033[0m " : name + " | ";
    static const std::map<std::string, std::string> kMarks = {
        {"in", "← "}, {"say", ""}, {"tool", "⏺ "}, {"result", "  ⎿ "}, {"error", "  ⎿ error: "},
        {"call", "· model "}, {"compact", "· "}, {"state", "! "}};
    std::cout << ClockTime(e.ts) << " " << prefix << kMarks.at(e.kind) << e.text << "\n";
  }
  // The agents shown: their names' width, and each its roster colour
  // (the lead, which has none, in bold).
  void Agents(const TeamConfig& team, const std::vector<std::string>& names) {
    static const std::map<std::string, std::string> kSgr = {{"red", "31"},  {"green", "32"},   {"yellow", "33"},
                                                            {"blue", "34"}, {"magenta", "35"}, {"cyan", "36"}};
    for (const auto& n : names) {
      width_ = std::max(width_, n.size());
      const Member* m = team.Find(n);
      auto c = m == nullptr ? kSgr.end() : kSgr.find(m->color);
      if (c != kSgr.end()) colors_[n] = c->second;
    }
  }
  void Flush() { std::cout << std::flush; }

 private:
  const bool json_;
  const bool color_;
  size_t width_ = 0;
  std::map<std::string, std::string> colors_;
};

int Logs(Globals& g, const LogsArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  std::optional<double> since;
  if (!a.since.empty()) {
    since = ParseSpan(a.since);
    if (!since) return Usage("--since must be a number and a unit: 30s, 10m, 2h or 1d, not '" + a.since + "'");
  }
  for (const auto& n : a.names) {
    if (Status s = ValidateName("agent name", n); !s.ok()) return Fail(s);
  }
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok()) return Fail(store.status());
  auto team = (*store)->LoadTeam(g.team);
  if (!team.ok()) return Fail(team.status());
  std::vector<std::string> names;
  for (const auto& n : a.names) {
    if (team->Find(n) == nullptr) {
      std::string all;
      for (const auto& m : team->members) all += (all.empty() ? "" : ", ") + m.name;
      return Fail(Status::NotFound("team '" + g.team + "' has no member '" + n + "' (its members: " + all + ")"));
    }
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  if (names.empty()) {
    for (const auto& m : team->members) names.push_back(m.name);
  }
  const double from = since ? WallSeconds() - *since : 0;
  Printer out(a.json, !a.json && ::isatty(STDOUT_FILENO) == 1);
  out.Agents(*team, names);

  // What each journal holds now, interleaved.
  std::map<std::string, size_t> read;  // agent → bytes of its journal read
  std::vector<Entry> entries;
  for (const auto& n : names) {
    auto j = (*store)->ReadJournal(g.team, n, kMaxJournalBytes);
    if (!j.ok()) {
      if (j.status().code() != StatusCode::kNotFound) return Fail(j.status());
      read[n] = 0;
      continue;
    }
    if (j->too_large) return Fail(Status::FailedPrecondition(n + "'s journal is over 64 MiB: " + j->where));
    // Whole lines only: one being written is read when it is whole.
    const size_t whole = j->text.rfind('\n') == std::string::npos ? 0 : j->text.rfind('\n') + 1;
    read[n] = whole;
    size_t at = 0;
    for (size_t nl; at < whole && (nl = j->text.find('\n', at)) != std::string::npos; at = nl + 1) {
      EntriesOf(n, j->text.substr(at, nl - at), &entries);
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) { return x.ts < y.ts; });
  for (const auto& e : entries) {
    if (e.ts >= from) out.Print(e);
  }
  out.Flush();
  if (!a.follow) return 0;

  // Following: what each journal gains and each activity's news.
  const bool files = (*store)->FilesHere();
  const fs::path dir = g.ws().AgentsDir(g.team);
  ScopedFd watch(files ? ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC) : -1);
  if (watch.valid()) {
    (void)EnsureDir(dir);
    if (::inotify_add_watch(watch.get(), dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
      watch.reset();
    }
  }
  std::map<std::string, std::string> said;  // agent → its last state news
  for (;;) {
    std::vector<Entry> fresh;
    for (const auto& n : names) {
      if (files) {
        auto text = ReadFilePrefix(g.ws().JournalPath(g.team, n), kMaxJournalBytes);
        if (!text.ok()) continue;
        if (text->size() < read[n]) read[n] = 0;  // replaced (a compaction's rewrite)
        const size_t whole = text->rfind('\n') == std::string::npos ? 0 : text->rfind('\n') + 1;
        for (size_t at = read[n], nl; at < whole && (nl = text->find('\n', at)) != std::string::npos; at = nl + 1) {
          EntriesOf(n, text->substr(at, nl - at), &fresh);
        }
        read[n] = std::max(read[n], whole);
      } else {
        auto j = (*store)->ReadJournal(g.team, n, kMaxJournalBytes);
        if (!j.ok() || j->too_large) continue;
        const size_t whole = j->text.rfind('\n') == std::string::npos ? 0 : j->text.rfind('\n') + 1;
        if (whole < read[n]) read[n] = 0;
        for (size_t at = read[n], nl; at < whole && (nl = j->text.find('\n', at)) != std::string::npos; at = nl + 1) {
          EntriesOf(n, j->text.substr(at, nl - at), &fresh);
        }
        read[n] = std::max(read[n], whole);
      }
    }
    auto activities = (*store)->Activities(g.team);
    if (activities.ok()) {
      for (const auto& [member, doc] : *activities) {
        if (std::find(names.begin(), names.end(), member) == names.end()) continue;
        auto parsed = ParseJson(doc);
        if (!parsed.ok()) continue;
        auto act = agent::ActivityFromJson(*parsed);
        if (!act.ok()) continue;
        const std::string news = StateNews(*act);
        if (news == said[member]) continue;
        said[member] = news;
        if (!news.empty()) fresh.push_back({WallSeconds(), member, "state", news});
      }
    }
    std::stable_sort(fresh.begin(), fresh.end(), [](const Entry& x, const Entry& y) { return x.ts < y.ts; });
    for (const auto& e : fresh) out.Print(e);
    out.Flush();
    if (!std::cout) return 0;  // the reader went (a pipe closed)
    struct pollfd p = {watch.valid() ? watch.get() : -1, POLLIN, 0};
    (void)::poll(&p, watch.valid() ? 1 : 0, 1000);
    if (watch.valid()) {
      char buf[4096];
      while (::read(watch.get(), buf, sizeof buf) > 0) {
      }
    }
  }
}

}  // namespace

void AddLogsCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<LogsArgs>();
  CLI::App* logs = app.add_subcommand(
      "logs", "What the agents do, interleaved: turns, tool calls and results, errors, retries (see `log` for messages)");
  AddTeamOption(logs, g);
  AddStoreOption(logs, g);
  logs->add_option("NAME", a->names, "Only these agents (default: all)");
  logs->add_flag("-f,--follow", a->follow, "Keep printing what they do (Ctrl-C ends it)");
  logs->add_option("--since", a->since, "Only what happened in this last span: 30s, 10m, 2h, 1d");
  logs->add_flag("--json", a->json, "One JSON object per line: ts, agent, kind, text");
  logs->callback([&g, a] { g.action = [&g, a] { return Logs(g, *a); }; });
}

}  // namespace mates::cli
