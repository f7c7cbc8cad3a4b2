// mates report [--team T] [--store URL] [--archived [STAMP]]
//              [--html FILE | --md | --json]
//
// The post-mortem of a team's session (DESIGN §31, report/report.h): a
// live team, a stopped one, or an archive; Markdown on stdout unless told,
// one self-contained HTML page with --html, the whole record's analysis as
// JSON with --json. What the record lacks or holds damaged is said in the
// report (and, writing a page, on stderr): the report is still made.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/files.h"
#include "core/names.h"
#include "report/report.h"

namespace mates::cli {
namespace {

struct ReportArgs {
  std::string html;
  bool md = false;
  bool json = false;
  ArchivedChoice archived;
};

std::string StateOf(TeamStore& store, const std::string& team, const std::string& stamp) {
  if (!stamp.empty()) return "archived " + stamp + " (deleted)";
  if (auto host = store.LiveHost(team)) return "live (host pid " + std::to_string(host->pid) + ")";
  return "stopped (no host)";
}

int Report(Globals& g, const ReportArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (static_cast<int>(!a.html.empty()) + static_cast<int>(a.md) + static_cast<int>(a.json) > 1) {
    return Usage("--html, --md and --json are one each: choose one");
  }
  auto reading = OpenReadingStore(g, g.team, a.archived);
  if (!reading.ok()) return Fail(reading.status());
  TeamStore& store = *reading->store;
  auto team = store.LoadTeam(g.team);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), g.ws(), g.team, a.archived));
  auto r = report::Build(store, reading->ws, g.team, StateOf(store, g.team, reading->stamp), g.price_table);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    std::cout << DumpJsonPretty(report::ToJson(*r)) << std::endl;
    return 0;
  }
  if (a.html.empty()) {
    std::cout << report::Markdown(*r) << std::flush;
    return 0;
  }
  const std::string page = report::Html(*r);
  if (a.html == "-") {
    std::cout << page << std::flush;
    return 0;
  }
  if (Status s = WriteFileAtomic(a.html, page); !s.ok()) return Fail(s);
  for (const auto& n : r->notes) std::cerr << "report: " << n << "\n";
  std::cout << "wrote " << a.html << " (" << (page.size() + 1023) / 1024 << " KiB): team " << g.team << ", "
            << r->failures.size() << " failure(s) classified\n";
  return 0;
}

}  // namespace

void AddReportCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "A post-mortem of a team's session: timeline, messages, spend, failures by class, merges, decisions");
  AddTeamOption(cmd, g);
  AddStoreOption(cmd, g);
  cmd->add_option("--html", a->html, "Write one self-contained HTML page to FILE (- for stdout)")->type_name("FILE");
  cmd->add_flag("--md", a->md, "Markdown on stdout (the default)");
  cmd->add_flag("--json", a->json, "The report as one JSON document");
  AddArchivedOption(cmd, a->archived);
  cmd->callback([&g, a] { g.action = [&g, a] { return Report(g, *a); }; });
}

}  // namespace mates::cli
