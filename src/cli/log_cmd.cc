// mates log --team T [--store URL] [--follow] [--json] [--archived [STAMP]]
//           [--delivery]
//
// --delivery (DESIGN §11): for each message and recipient, whether it is
// `queued` (still in the inbox), `delivered` (in an agent's turn: its id is
// in the agent's journal), `quarantined` (its inbox line was moved aside as
// unreadable), or `read` (drained by someone who keeps no journal: `mates
// inbox`, a pane agent's router, a person).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "agent/journal.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/files.h"
#include "core/log.h"
#include "store/mailbox.h"
#include "store/team_store.h"

namespace mates::cli {
namespace {

struct LogArgs {
  bool follow = false;
  bool json = false;
  bool delivery = false;
  ArchivedChoice archived;
};

// Where each message stands for each recipient, from the inboxes, the
// quarantines and the journals as they are now.
class DeliveryView {
 public:
  DeliveryView(const Workspace& ws, const TeamConfig& team) : ws_(ws), team_(team) {}

  // recipient → state, for `m`.
  std::map<std::string, std::string> Of(const Message& m) {
    std::map<std::string, std::string> out;
    for (const auto& to : Recipients(m)) out[to] = StateFor(to, m.id);
    return out;
  }

 private:
  std::vector<std::string> Recipients(const Message& m) const {
    if (m.type != MessageType::kBroadcast) return {m.recipient};
    std::vector<std::string> to;  // the members of the team when it was sent
    for (const auto& member : team_.members) {
      if (member.name != m.sender && member.joined_at <= m.timestamp + 1) to.push_back(member.name);
    }
    return to;
  }

  std::string StateFor(const std::string& member, const std::string& id) {
    Load(member);
    if (queued_[member].count(id) > 0) return "queued";
    if (delivered_[member].count(id) > 0) return "delivered";
    if (quarantine_[member].find("\"" + id + "\"") != std::string::npos) return "quarantined";
    return "read";
  }

  void Load(const std::string& member) {
    if (!loaded_.insert(member).second) return;
    fs::path dir = ws_.TeamDir(team_.name);
    auto pending = Mailbox(dir, member).Peek();
    if (pending.ok()) {
      for (const auto& m : *pending) queued_[member].insert(m.id);
    }
    auto journal = agent::Journal::Load(ws_.JournalPath(team_.name, member));
    if (journal.ok()) delivered_[member] = std::move(journal->delivered);
    auto q = ReadFilePrefix(dir / (member + "_inbox.quarantine"), 16 << 20);
    if (q.ok()) quarantine_[member] = std::move(*q);
  }

  const Workspace& ws_;
  const TeamConfig& team_;
  std::set<std::string> loaded_;
  std::map<std::string, std::set<std::string>> queued_, delivered_;
  std::map<std::string, std::string> quarantine_;
};

// Prints `m`, with where it stands for each recipient if `delivery`.
void Print(const Message& m, bool json, DeliveryView* delivery) {
  if (delivery == nullptr) {
    std::cout << (json ? DumpJson(MessageToJson(m)) : FormatMessage(m)) << "\n";
    return;
  }
  auto states = delivery->Of(m);
  if (json) {
    Json j = MessageToJson(m);
    j["delivery"] = Json::object();
    for (const auto& [to, state] : states) j["delivery"][to] = state;
    std::cout << DumpJson(j) << "\n";
  } else {
    std::string line;
    for (const auto& [to, state] : states) line += (line.empty() ? "" : ", ") + to + " " + state;
    std::cout << FormatMessage(m) << "\n    ↳ " << line << "\n";
  }
}

// The team's log in order, in pages (a long log is never one result in
// memory); --follow wakes on its changes and waits out a store out of
// reach. `ws` is where the files are (the delivery view reads them).
int ShowLog(const Globals& g, TeamStore& store, const Workspace& ws, const Workspace& home, const LogArgs& a) {
  if (a.delivery && !store.FilesHere()) {
    return Usage("--delivery reads the agents' journals in this workspace: not for a team kept in " + store.where());
  }
  auto team = store.LoadTeam(g.team);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), home, g.team, a.archived));
  std::optional<DeliveryView> delivery;
  if (a.delivery) delivery.emplace(ws, *team);
  auto waker = std::make_shared<Waker>();
  std::unique_ptr<Hold> watch;
  if (a.follow) {
    auto w = store.Watch(g.team, TeamPart::kLog, waker);
    if (!w.ok()) return Fail(w.status());
    watch = std::move(*w);
  }
  uint64_t cursor = 0;
  bool said_lost = false;
  for (;;) {
    uint64_t seen = waker->generation();
    Status failed = Status::Ok();
    for (;;) {
      auto page = store.LogAfter(g.team, cursor, 0);
      if (!page.ok()) {
        failed = page.status();
        break;
      }
      for (const auto& m : page->messages) Print(m, a.json, delivery ? &*delivery : nullptr);
      std::cout.flush();
      if (page->next == cursor) break;
      cursor = page->next;
    }
    if (!failed.ok()) {
      // Following, a store that cannot be reached is waited out.
      if (!a.follow || failed.code() != StatusCode::kUnavailable) return Fail(failed);
      if (!said_lost) LogWarning("log: " + failed.message() + ": waiting for the store to come back");
      said_lost = true;
      WaitOutOutage(failed, *waker, seen, std::nullopt);
      continue;
    }
    said_lost = false;
    if (!a.follow) return 0;
    waker->WaitChange(seen, std::nullopt);
    // The team may have been deleted meanwhile.
    if (store.HasTeam(g.team).code() == StatusCode::kNotFound) return 0;
  }
}

int Log(Globals& g, const LogArgs& a) {
  if (a.follow && a.archived.given()) return Usage("an archive does not change: --follow has nothing to wait for");
  if (a.follow && a.delivery) return Usage("--delivery is a snapshot: it cannot --follow");
  // An archive is this workspace's files, whichever store the team was in.
  if (a.archived.given()) {
    auto reading = ReadingWorkspace(g, g.team, a.archived);
    if (!reading.ok()) return Fail(reading.status());
    return ShowLog(g, *FileTeamStore(*reading, g.env()), *reading, g.ws(), a);
  }
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok()) return Fail(store.status());
  return ShowLog(g, **store, g.ws(), g.ws(), a);
}

}  // namespace

void AddLogCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<LogArgs>();
  CLI::App* log = app.add_subcommand("log", "Every message sent in a team");
  AddTeamOption(log, g);
  AddStoreOption(log, g);
  log->add_flag("--follow,-f", a->follow, "Keep printing messages as they are sent");
  log->add_flag("--json", a->json, "One JSON object per line");
  log->add_flag("--delivery", a->delivery,
                "Per recipient: queued, delivered (in an agent's turn), quarantined or read");
  AddArchivedOption(log, a->archived);
  log->callback([&g, a] { g.action = [&g, a] { return Log(g, *a); }; });
}

}  // namespace mates::cli
