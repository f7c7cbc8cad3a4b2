// mates status [--team T] [--store URL] [--watch] [--json] [--archived [STAMP]]
//
// A team at a glance (DESIGN §11): its host (pid, how it runs, uptime), the
// board by status, and per member the shown state (liveness: a member whose
// host is gone is `offline`), what it is doing and for how long (its
// activity file), its task (the board's in-progress task it owns), tokens
// and cost; then the last messages. `--json` is one document; `--watch`
// redraws whenever a file of the team changes (and every second, for the
// durations). The same on every store (DESIGN §13).
#include <unistd.h>

#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/activity.h"
#include "agent/spend.h"
#include "agent/usage.h"
#include "cli/cli_common.h"
#include "host/telemetry_report.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/names.h"
#include "core/text.h"
#include "view/attention.h"
#include "view/team_view.h"
#include "store/team_store.h"

namespace mates::cli {
namespace {

using view::MemberView;
using view::TeamView;

constexpr size_t kLastMessages = 8;

struct StatusArgs {
  bool watch = false;
  bool json = false;
  ArchivedChoice archived;
};

std::string Cost(const agent::Activity& a) {
  if (!a.usage_unknown.empty()) return "unknown";
  if (a.calls == 0) return "-";
  if (!a.cost_usd) return "?";
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.4f", *a.cost_usd);
  return buf;
}

int64_t InputTokens(const llm::Usage& u) {
  return u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
}

// What a member is doing, as one cell.
std::string Doing(const MemberView& m, double now) {
  if (!m.activity) return "-";
  if (m.shown == Shown::kOffline) return "(host gone)";
  return view::DoingOf(m, now);
}

std::string Cut(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max - 1;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + "…";
}


// What needs a person, on top (DESIGN §20): one line each, its hint below.
std::string RenderAttention(const Globals& g, const TeamView& v) {
  const auto items = view::Attention(v);
  if (items.empty()) return "";
  std::ostringstream o;
  o << "NEEDS ATTENTION (" << items.size() << "):\n";
  for (const auto& i : items) {
    o << "  ! " << Cut(i.subject, 200) << (i.since > 0 ? "  (" + ShortDuration(v.now - i.since) + " ago)" : "") << "\n";
    if (!i.hint.empty()) o << "      $ " << g.Pasteable(i.hint) << "\n";
    if (!i.note.empty()) o << "      " << g.PasteableIn(i.note) << "\n";
  }
  return o.str() + "\n";
}

// The team's line: whose it is, who hosts it and how.
std::string Heading(const TeamView& v) {
  std::ostringstream o;
  if (!v.foreign.empty()) {
    // Another system's team (DESIGN §24): whether it runs is its lead's.
    const bool runs = std::any_of(v.members.begin(), v.members.end(), [&](const MemberView& m) {
      return m.member.name == v.team.lead && m.shown != Shown::kOffline;
    });
    o << v.foreign << " team " << v.team.name << " — "
      << (runs ? "its lead's " + v.foreign + " runs" : "not running (its lead's " + v.foreign + " has ended)") << "\n"
      << v.store;
  } else {
    o << "team " << v.team.name;
  }
  if (!v.foreign.empty()) {
  } else if (v.host) {
    o << " — hosted";
    if (v.host->pid > 0) {
      o << " by pid " << v.host->pid << " (mates " << (v.host->mode == HostMode::kUnknown ? "?" : HostModeName(v.host->mode)) << ") since "
        << ClockTime(v.host->started_at) << ", " << ShortDuration(v.now - v.host->started_at);
    }
    if (!v.host->dashboard.empty()) o << "\ndashboard " << v.host->dashboard;
    for (const auto& a : v.host->also) {
      o << "\nalso hosts team " << a.team
        << (a.dashboard.empty() ? "" : " — dashboard " + a.dashboard);
    }
    if (v.host->sandbox == "off") {
      o << "\nsandbox: off — the agents' commands run as you, with all you can reach (who sent what holds "
           "for the agents' own tools only)";
    } else if (!v.host->sandbox.empty()) {
      o << "\nsandbox: " << v.host->sandbox;
    }
    if (!v.host->mcp_skipped.empty()) {
      std::string names;
      for (const auto& s : v.host->mcp_skipped) names += (names.empty() ? "" : ", ") + s.server;
      o << "\nmcp: skipped " << names << " — " << v.host->mcp_skipped.front().why;
    }
  } else if (std::any_of(v.team.members.begin(), v.team.members.end(),
                         [](const Member& m) { return m.backend == MemberBackend::kTmux; })) {
    o << " — its members are a tmux cluster's panes (mates cluster status, where it was brought up)";
  } else {
    o << " — not hosted";
  }
  return o.str();
}

// What the sandbox refused lately, and what the team spent.
std::string Spending(const Globals& g, const TeamView& v) {
  std::ostringstream o;
  // What the sandbox refused lately, newest first (DESIGN §18).
  std::vector<std::pair<double, std::string>> denied;
  for (const auto& m : v.members) {
    if (!m.activity) continue;
    for (const auto& d : m.activity->denials) denied.emplace_back(d.at, m.member.name + ": " + d.what);
  }
  if (!denied.empty()) {
    std::sort(denied.begin(), denied.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    o << "\nsandbox refused (latest first):\n";
    for (size_t i = 0; i < denied.size() && i < 5; ++i) {
      o << "  " << ClockTime(denied[i].first) << "  " << Cut(denied[i].second, 150) << "\n";
    }
  }
  // The team's spend so far, as its agents' activity files say.
  llm::Usage total;
  double cost = 0;
  bool priced = true;
  int calls = 0;
  std::set<std::string> unpriced;  // the models the price table has no price for
  for (const auto& m : v.members) {
    if (!m.activity || m.activity->calls == 0) continue;
    total += m.activity->tokens;
    calls += m.activity->calls;
    if (m.activity->cost_usd) {
      cost += *m.activity->cost_usd;
    } else {
      priced = false;
      if (!m.activity->model.empty()) unpriced.insert(m.activity->model);
    }
  }
  if (calls > 0) {
    o << "\nspent: " << agent::DescribeTokens(total) << " in " << calls << (calls == 1 ? " call, " : " calls, ")
      << (priced ? agent::FormatCost(cost) : cost > 0 ? agent::FormatCost(cost) + " + cost unknown" : "cost unknown")
      << " (" << g.Mates() << " usage --team " << v.team.name << ")\n";
    // "cost ?" explained: which model has no price, and how to give one.
    if (!unpriced.empty()) {
      std::string models;
      for (const auto& m : unpriced) models += (models.empty() ? "" : ", ") + m;
      o << "cost ?: no price for " << (unpriced.size() == 1 ? "model " : "models ") << models << " (`" << g.Mates()
        << " --prices FILE` gives one)\n";
    }
  }
  // Members whose spend no record says (a pane's CLI that keeps none).
  std::string unknown;
  for (const auto& m : v.members) {
    if (m.activity && !m.activity->usage_unknown.empty()) {
      unknown += (unknown.empty() ? "" : "; ") + m.member.name + ": " + m.activity->usage_unknown;
    }
  }
  if (!unknown.empty()) o << (calls > 0 ? "" : "\n") << "usage unknown (" << unknown << ")\n";
  if (v.team.budget.any()) {
    // As the agents see it (their activity), with what else counts.
    o << (calls > 0 ? "" : "\n")
      << "budget: " << agent::DescribeBudget(v.team.budget, agent::TotalTokens(total), cost)
      << "\n";
  }
  return o.str();
}

// Who hosts which agent where hosts hold them by leases (DESIGN §32), and
// each agent another host took over when its holder's lease ended.
std::string Hosts(const TeamView& v) {
  std::map<std::string, std::string> held;  // holder → its agents
  std::string taken;
  for (const auto& m : v.members) {
    if (!m.lease || !m.lease->live) continue;
    held[m.lease->holder] += (held[m.lease->holder].empty() ? "" : ", ") + m.member.name;
    if (!m.lease->taken_from.empty()) {
      taken += "taken over: " + m.member.name + " by " + m.lease->holder + " at " + ClockTime(m.lease->taken_at) +
               " (fencing token " + std::to_string(m.lease->token) + "): the lease of " + m.lease->taken_from +
               " ended unrenewed, and what it writes for " + m.member.name + " now is refused\n";
    }
  }
  if (held.empty()) return "";
  std::string o = "hosted by:";
  for (const auto& [holder, agents] : held) o += (o.size() > 10 ? " · " : " ") + holder + " (" + agents + ")";
  return o + "\n" + taken;
}

std::string Render(const Globals& g, const TeamView& v) {
  std::ostringstream o;
  o << RenderAttention(g, v);
  o << Heading(v);
  // The host's OTLP export (DESIGN §29), while it lives.
  if (v.host && v.foreign.empty()) {
    if (auto t = host::ReadTelemetryReport(g.ws(), v.team.name)) o << "\ntelemetry: " << host::DescribeTelemetry(*t);
  }
  o << "\nboard: " << v.board.at("pending") << " pending · " << v.board.at("in_progress") << " in progress · "
    << v.board.at("completed") << " completed\n";
  if (!v.merges.empty()) {
    std::string counts;
    for (const auto& [state, n] : v.merges) counts += (counts.empty() ? "" : " · ") + std::to_string(n) + " " + state;
    o << "merges: " << counts << " (" << g.Mates() << " merges --team " << v.team.name << " list)\n";
  }
  if (v.team.git.held()) {
    o << "merges: HELD — " << v.team.git.target_name() << " was moved outside the merge queue (to "
      << v.team.git.held_found.substr(0, 10) << "); look at it, then: " << g.Mates() << " merges --team " << v.team.name
      << " resume\n";
  }
  o << "\n";
  o << PadColumns("MEMBER", 14) << PadColumns("STATE", 10) << PadColumns("DOING", 42) << PadColumns("FOR", 8) << PadColumns("TASK", 26)
    << PadColumns("TOKENS in/out", 16) << "COST\n";
  for (const auto& m : v.members) {
    std::string since = m.activity && m.shown != Shown::kOffline ? ShortDuration(v.now - m.activity->since) : "-";
    std::string task = m.task ? Cut("#" + std::to_string(m.task->id) + " " + m.task->subject, 25) : "-";
    if (m.unread > 0) task = std::to_string(m.unread) + " unread" + (m.task ? ", " + task : "");
    std::string tokens = m.activity && m.activity->calls > 0
                             ? agent::HumanCount(InputTokens(m.activity->tokens)) + "/" +
                                   agent::HumanCount(m.activity->tokens.output_tokens)
                         : m.activity && !m.activity->usage_unknown.empty() ? "unknown"
                                                                             : "-";
    o << PadColumns(Cut(m.member.name, 13), 14) << PadColumns(view::StateOf(m), 10) << PadColumns(Cut(Doing(m, v.now), 41), 42) << PadColumns(since, 8)
      << PadColumns(task, 26) << PadColumns(tokens, 16) << (m.activity ? Cost(*m.activity) : "-") << "\n";
  }
  o << Hosts(v);
  o << Spending(g, v);
  o << "\nlast messages:\n";
  if (v.messages.empty()) o << "  (none)\n";
  for (const auto& m : v.messages) o << "  " << Cut(FormatMessage(m), 160) << "\n";
  return o.str();
}

// A store out of reach is news too (DESIGN §20), said where the team
// would have been; exit 1.
int OutOfReach(const Globals& g, const StatusArgs& a, const Status& why) {
  view::AttentionItem item{view::AttentionKind::kStoreUnreachable, "the team's store cannot be reached: " + why.message(), WallSeconds(),
                           g.Mates() + " status --team " + g.team + " --watch",
                           "it shows the team again once the store answers", ""};
  if (a.json) {
    std::cout << DumpJsonPretty(Json{{"team", g.team}, {"attention", view::AttentionToJson({item})}}) << std::endl;
  } else {
    std::cout << "NEEDS ATTENTION (1):\n  ! " << item.subject << "\n      $ " << item.hint << "\n      " << item.note
              << std::endl;
  }
  return 1;
}

// The team once, or redrawn whenever its roster, host, board, log or
// activity changes (and every second, for the durations and liveness: a
// dead host's locks just go free). A store out of reach is waited out,
// said on the screen.
int ShowStatus(const Globals& g, TeamStore& store, const Workspace& ws, const StatusArgs& a) {
  if (!a.watch) {
    auto v = view::LookAtTeam(store, g.team, kLastMessages);
    if (!v.ok() && v.status().code() == StatusCode::kUnavailable) return OutOfReach(g, a, v.status());
    if (!v.ok()) return Fail(SayIfArchived(v.status(), ws, g.team, a.archived));
    std::cout << (a.json ? DumpJsonPretty(view::TeamViewToJson(*v)) + "\n" : Render(g, *v)) << std::flush;
    return 0;
  }
  auto waker = std::make_shared<Waker>();
  constexpr TeamPart kParts[] = {TeamPart::kRoster, TeamPart::kHost, TeamPart::kBoard, TeamPart::kLog,
                                 TeamPart::kActivity, TeamPart::kMerges, TeamPart::kForecasts};
  std::vector<std::unique_ptr<Hold>> watches(std::size(kParts));
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  for (;;) {
    // A part not there yet (no board so far) is watched once it is.
    for (size_t i = 0; i < watches.size(); ++i) {
      if (watches[i]) continue;
      auto w = store.Watch(g.team, kParts[i], waker);
      if (w.ok()) watches[i] = std::move(*w);
    }
    uint64_t gen = waker->generation();
    auto v = view::LookAtTeam(store, g.team, kLastMessages);
    if (!v.ok()) {
      if (v.status().code() != StatusCode::kUnavailable) {
        return Fail(SayIfArchived(v.status(), ws, g.team, a.archived));
      }
      std::cout << (tty ? "\033[H\033[2J" : "\f\n") << "team " << g.team << ": " << v.status().message()
                << " — waiting for the store to come back" << std::endl;
      WaitOutOutage(v.status(), *waker, gen, std::nullopt);
      continue;
    }
    // Home and clear to the end: the screen is replaced, not scrolled.
    std::cout << (tty ? "\033[H\033[2J" : "\f\n") << Render(g, *v) << std::flush;
    waker->WaitChange(gen, DeadlineIn(1.0));
  }
}

int Status_(Globals& g, const StatusArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (a.watch && a.json) return Usage("--watch redraws a screen; --json prints one document: choose one");
  // An archive is this workspace's files, whichever store the team was in.
  if (a.archived.given()) {
    auto reading = ReadingWorkspace(g, g.team, a.archived);
    if (!reading.ok()) return Fail(reading.status());
    return ShowStatus(g, *FileTeamStore(*reading, g.env()), g.ws(), a);
  }
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok() && store.status().code() == StatusCode::kUnavailable && !a.watch) return OutOfReach(g, a, store.status());
  if (!store.ok()) return Fail(store.status());
  return ShowStatus(g, **store, g.ws(), a);
}

}  // namespace

int ShowStatusOf(Globals& g, bool watch, bool json) {
  StatusArgs a;
  a.watch = watch;
  a.json = json;
  return Status_(g, a);
}

void AddStatusCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<StatusArgs>();
  CLI::App* st = app.add_subcommand("status", "A team at a glance: host, board, what each member is doing, messages");
  AddTeamOption(st, g);
  AddStoreOption(st, g);
  st->add_flag("--watch", a->watch, "Redraw whenever something changes (Ctrl-C ends it)");
  st->add_flag("--json", a->json, "One JSON document");
  AddArchivedOption(st, a->archived);
  st->callback([&g, a] { g.action = [&g, a] { return Status_(g, *a); }; });
}

}  // namespace mates::cli
