#include "store/archive.h"

#include <algorithm>
#include <ctime>

#include "core/clock.h"
#include "core/files.h"
#include "core/names.h"

namespace mates {
namespace {

std::string UtcStamp(double wall_seconds) {
  std::time_t t = static_cast<std::time_t>(wall_seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
  return buf;
}

// The team an archive folder holds: the one folder under its .teams.
std::optional<std::string> TeamIn(const fs::path& root) {
  std::error_code ec;
  std::optional<std::string> found;
  for (fs::directory_iterator it(root / ".teams", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!it->is_directory(ec) || !ValidateName("team name", name).ok()) continue;
    if (found) return std::nullopt;  // not an archive mates made
    found = name;
  }
  return found;
}

}  // namespace

fs::path ArchivesDir(const Workspace& ws) { return ws.TeamsDir() / ".archive"; }

Result<ArchivedTeam> NewArchive(const Workspace& ws, std::string_view team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(EnsureDir(ArchivesDir(ws)));
  std::error_code ec;
  ArchivedTeam a;
  a.team = std::string(team);
  const std::string stamp = UtcStamp(WallSeconds());
  // A new folder claims the stamp (mkdir is atomic: two deleters cannot
  // both get one).
  for (int n = 1;; ++n) {
    a.stamp = n == 1 ? stamp : stamp + "-" + std::to_string(n);
    a.root = ArchivesDir(ws) / (a.team + "-" + a.stamp);
    if (fs::create_directory(a.root, ec)) break;
    if (ec) return Status::IOError("create " + a.root.string() + ": " + ec.message());
    if (n > 1000) return Status::IOError("no free archive name for team '" + a.team + "'");
  }
  return a;
}

Result<ArchivedTeam> ArchiveTeam(const Workspace& ws, std::string_view team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  std::error_code ec;
  if (!fs::exists(ws.ConfigPath(team), ec)) {
    return Status::NotFound("no team '" + std::string(team) + "' in " + ws.root().string());
  }
  MATES_ASSIGN_OR_RETURN(ArchivedTeam a, NewArchive(ws, team));
  Workspace archive(a.root);
  MATES_RETURN_IF_ERROR(EnsureDir(archive.TeamsDir()));
  // The roster first: from this instant the team is gone from the workspace.
  fs::rename(ws.TeamDir(team), archive.TeamDir(team), ec);
  if (ec) {
    fs::remove_all(a.root, ec);
    return Status::IOError("archive " + ws.TeamDir(team).string() + ": " + ec.message());
  }
  if (fs::exists(ws.TasksDir(team), ec)) {
    MATES_RETURN_IF_ERROR(EnsureDir(archive.TasksDir(team).parent_path()));
    fs::rename(ws.TasksDir(team), archive.TasksDir(team), ec);
    if (ec) return Status::IOError("archive " + ws.TasksDir(team).string() + ": " + ec.message());
  }
  return a;
}

Result<std::vector<ArchivedTeam>> ListArchives(const Workspace& ws, std::string_view team) {
  std::vector<ArchivedTeam> out;
  std::error_code ec;
  fs::directory_iterator it(ArchivesDir(ws), ec), end;
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return Status::IOError("list " + ArchivesDir(ws).string() + ": " + ec.message());
  }
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    std::string dir = it->path().filename().string();
    auto held = TeamIn(it->path());
    if (!held || dir.size() <= held->size() + 1 || dir.compare(0, held->size() + 1, *held + "-") != 0) continue;
    if (!team.empty() && *held != team) continue;
    out.push_back({*held, dir.substr(held->size() + 1), it->path()});
  }
  // Stamps sort as times; "-2" after its stamp.
  std::sort(out.begin(), out.end(), [](const ArchivedTeam& x, const ArchivedTeam& y) {
    auto key = [](const std::string& s) {
      size_t dash = s.find('-');
      return std::make_pair(s.substr(0, dash), dash == std::string::npos ? 1 : std::atoi(s.c_str() + dash + 1));
    };
    return x.team != y.team ? x.team < y.team : key(x.stamp) < key(y.stamp);
  });
  return out;
}

Result<ArchivedTeam> FindArchive(const Workspace& ws, std::string_view team, std::string_view stamp) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(std::vector<ArchivedTeam> all, ListArchives(ws, team));
  if (all.empty()) return Status::NotFound("team '" + std::string(team) + "' has no archive in " + ws.root().string());
  if (stamp.empty()) return all.back();
  std::string stamps;
  for (const auto& a : all) {
    if (a.stamp == stamp) return a;
    stamps += (stamps.empty() ? "" : ", ") + a.stamp;
  }
  return Status::NotFound("team '" + std::string(team) + "' has no archive " + std::string(stamp) + " (it has " +
                          stamps + ")");
}

}  // namespace mates
