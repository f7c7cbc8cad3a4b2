// mates log --team T [--follow] [--json] [--archived [STAMP]]
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "store/message_log.h"
#include "store/roster.h"
#include "store/watcher.h"

namespace mates::cli {
namespace {

struct LogArgs {
  std::string team;
  bool follow = false;
  bool json = false;
  ArchivedChoice archived;
};

int Log(Globals& g, const LogArgs& a) {
  if (a.follow && a.archived.given()) return Usage("an archive does not change: --follow has nothing to wait for");
  auto reading = ReadingWorkspace(g, a.team, a.archived);
  if (!reading.ok()) return Fail(reading.status());
  const Workspace& ws = *reading;
  auto team = Roster(ws).Load(a.team);
  if (!team.ok()) return Fail(team.status());
  MessageLog log(ws, a.team);
  std::shared_ptr<Waker> waker;
  Watcher::Subscription sub;
  if (a.follow) {
    waker = std::make_shared<Waker>();
    auto s = Watcher::Default().Subscribe(ws.TeamDir(a.team), log.path().filename().string(),
                                          waker);
    if (!s.ok()) return Fail(s.status());
    sub = std::move(*s);
  }
  uint64_t offset = 0;
  for (;;) {
    uint64_t seen = waker ? waker->generation() : 0;
    uint64_t next = 0;
    auto msgs = log.ReadFrom(offset, &next);
    if (!msgs.ok()) return Fail(msgs.status());
    offset = next;
    for (const auto& m : *msgs) {
      std::cout << (a.json ? DumpJson(MessageToJson(m)) : FormatMessage(m)) << "\n";
    }
    std::cout.flush();
    if (!a.follow) return 0;
    waker->WaitChange(seen, std::nullopt);
    // The team may have been deleted meanwhile.
    if (!std::filesystem::exists(ws.ConfigPath(a.team))) return 0;
  }
}

}  // namespace

void AddLogCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<LogArgs>();
  CLI::App* log = app.add_subcommand("log", "Every message sent in a team");
  log->add_option("--team", a->team, "Team name")->envname("MATES_TEAM")->required();
  log->add_flag("--follow,-f", a->follow, "Keep printing messages as they are sent");
  log->add_flag("--json", a->json, "One JSON object per line");
  AddArchivedOption(log, a->archived);
  log->callback([&g, a] { g.action = [&g, a] { return Log(g, *a); }; });
}

}  // namespace mates::cli
