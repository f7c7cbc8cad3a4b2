// See export.h.
#include "pg/export.h"

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/names.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/requests.h"
#include "store/roster.h"

namespace mates::pg {

namespace {

// The members' journals, as the host that resumes them would write them,
// the lead's subagents' usage journal, and each member's activity file.
Status ExportAgentFiles(Store& store, const std::string& team, const TeamConfig& config, const Workspace& into,
                        Exported* counted) {
  Exported& n = *counted;
  std::vector<std::string> journals;
  for (const auto& m : config.members) journals.push_back(m.name);
  journals.push_back(config.lead + ".subagents");
  for (const auto& name : journals) {
    MATES_ASSIGN_OR_RETURN(std::vector<std::string> lines, store.journals().Lines(team, name));
    if (lines.empty()) continue;
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    const fs::path path = into.JournalPath(team, name);
    auto here = ReadFilePrefix(path, kMaxJournalBytes + 1);
    if (here.ok() && here->size() > text.size() && here->compare(0, text.size(), text) == 0) {
      ++n.journals;  // the file is ahead of its copy: kept
      continue;
    }
    MATES_RETURN_IF_ERROR(EnsureDir(into.AgentsDir(team)));
    MATES_RETURN_IF_ERROR(WriteFileAtomic(path, text));
    ++n.journals;
  }
  // What each member did last, as its activity file: a document that does
  // not name its member is left out (readers check the rest, as they do a
  // file's).
  MATES_ASSIGN_OR_RETURN(auto activities, store.journals().Activities(team));
  for (const auto& [member, doc] : activities) {
    auto j = ParseJson(doc);
    if (!j.ok() || !j->is_object() || !j->contains("agent") || (*j)["agent"] != member ||
        config.Find(member) == nullptr) {
      continue;
    }
    MATES_RETURN_IF_ERROR(EnsureDir(into.AgentsDir(team)));
    MATES_RETURN_IF_ERROR(WriteFileAtomic(into.AgentsDir(team) / (member + ".status.json"), doc));
    ++n.activities;
  }
  return Status::Ok();
}

}  // namespace

Result<Exported> ExportTeam(Store& store, const std::string& team, const Workspace& into) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  if (Roster(into).Load(team).ok()) {
    return Status::AlreadyExists(into.root().string() + " holds a team '" + team + "' already");
  }
  MATES_ASSIGN_OR_RETURN(TeamConfig config, store.rosters().LoadTeam(team));
  MATES_ASSIGN_OR_RETURN(auto pending, store.mail().PendingByMember(team));
  MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, store.tasks().List(team, /*include_deleted=*/true));
  MATES_ASSIGN_OR_RETURN(std::vector<ProtocolRequest> requests, store.requests().List(team));
  MATES_ASSIGN_OR_RETURN(std::vector<MergeRequest> merges, store.merges().List(team));
  Exported n;
  n.members = config.members.size();
  n.requests = requests.size();
  n.merges = merges.size();
  n.tasks = tasks.size();

  Roster roster(into);
  MATES_RETURN_IF_ERROR(roster.CreateTeam(team, config.lead, config.description).status());
  MATES_RETURN_IF_ERROR(roster.Update(team, [&](TeamConfig& c) {
    c = config;
    return Status::Ok();
  }).status());
  for (const auto& m : config.members) MATES_RETURN_IF_ERROR(TouchFile(into.TeamDir(team) / (m.name + "_inbox.lock")));
  for (const auto& [member, list] : pending) {
    if (!ValidateName("member name", member).ok()) continue;  // not a name the files can hold
    Mailbox box(into.TeamDir(team), member);
    for (const auto& m : list) {
      MATES_RETURN_IF_ERROR(box.Append(m));
      ++n.undelivered;
    }
  }
  Board board(into.TasksDir(team));
  for (const auto& t : tasks) MATES_RETURN_IF_ERROR(board.Import(t));
  RequestStore request_files(into, team);
  for (const auto& r : requests) MATES_RETURN_IF_ERROR(request_files.Create(r));
  MergeStore merge_files(into, team);
  for (const auto& m : merges) MATES_RETURN_IF_ERROR(merge_files.Import(m));
  // The log, page by page, in the order sent.
  MessageLog log(into, team);
  for (int64_t cursor = 0;;) {
    MATES_ASSIGN_OR_RETURN(std::vector<Message> page, store.log().Read(team, &cursor));
    if (page.empty()) break;
    for (const auto& m : page) MATES_RETURN_IF_ERROR(log.Append(m));
    n.logged += page.size();
  }

  MATES_RETURN_IF_ERROR(ExportAgentFiles(store, team, config, into, &n));
  return n;
}

namespace {

// Moves what `from` holds into `to`, folder by folder: what `to` lacks is
// moved; a journal of `from` that the one in `to` is a start of replaces
// it (it is ahead of its copy); the rest of `from` is left.
Status MergeInto(const fs::path& from, const fs::path& to) {
  MATES_RETURN_IF_ERROR(EnsureDir(to));
  std::error_code ec;
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path target = to / it->path().filename();
    if (it->is_directory(ec) && fs::is_directory(target, ec)) {
      MATES_RETURN_IF_ERROR(MergeInto(it->path(), target));
      continue;
    }
    if (fs::exists(target, ec)) {
      if (it->path().extension() != ".jsonl") continue;
      auto theirs = ReadFilePrefix(target, kMaxJournalBytes + 1);
      auto ours = ReadFilePrefix(it->path(), kMaxJournalBytes + 1);
      if (!theirs.ok() || !ours.ok() || ours->size() <= theirs->size() ||
          ours->compare(0, theirs->size(), *theirs) != 0) {
        continue;
      }
    }
    std::error_code moved;
    fs::rename(it->path(), target, moved);
    if (moved) return Status::IOError("archive " + it->path().string() + ": " + moved.message());
  }
  if (ec) return Status::IOError("read " + from.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<ArchivedTeam> ArchiveTeam(Store& store, const Workspace& ws, const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(store.rosters().LoadTeam(team).status());
  MATES_ASSIGN_OR_RETURN(ArchivedTeam a, NewArchive(ws, team));
  const Workspace archive(a.root);
  // The database's state first, into the new folder (a failure leaves
  // nothing behind)...
  if (auto exported = ExportTeam(store, team, archive); !exported.ok()) {
    std::error_code ec;
    fs::remove_all(a.root, ec);
    return exported.status();
  }
  // ...then this machine's files of the team (its journals, which may be a
  // line ahead of their copies; activity; the host's log), and only then
  // does the team leave the database.
  std::error_code ec;
  if (fs::exists(ws.TeamDir(team), ec)) {
    MATES_RETURN_IF_ERROR(MergeInto(ws.TeamDir(team), archive.TeamDir(team)));
    fs::remove_all(ws.TeamDir(team), ec);
  }
  MATES_RETURN_IF_ERROR(store.rosters().DeleteTeam(team));
  return a;
}

}  // namespace mates::pg
