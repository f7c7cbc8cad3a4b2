#include "store/merges.h"

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/limits.h"
#include "core/log.h"

namespace mates {

namespace {
constexpr MergeState kAllStates[] = {MergeState::kQueued,   MergeState::kChecking, MergeState::kReview,
                                     MergeState::kMerged,   MergeState::kConflict, MergeState::kFailed,
                                     MergeState::kRejected};
}  // namespace

std::string_view MergeStateName(MergeState s) {
  switch (s) {
    case MergeState::kQueued: return "queued";
    case MergeState::kChecking: return "checking";
    case MergeState::kReview: return "review";
    case MergeState::kMerged: return "merged";
    case MergeState::kConflict: return "conflict";
    case MergeState::kFailed: return "failed";
    case MergeState::kRejected: return "rejected";
  }
  return "queued";
}

Result<MergeState> ParseMergeState(std::string_view name) {
  for (MergeState s : kAllStates) {
    if (MergeStateName(s) == name) return s;
  }
  return Status::InvalidArgument("unknown merge status '" + std::string(name) + "'");
}

namespace {
// The checks and hooks one request keeps (a team has one check command).
constexpr size_t kMaxChecks = 16;
}  // namespace

Json CheckRunToJson(const CheckRun& c) {
  return {{"command", c.command},     {"commit", c.commit},         {"exit_code", c.exit_code},   {"signal", c.signal},
          {"timed_out", c.timed_out}, {"duration_s", c.duration_s}, {"output_sha256", c.output_sha256}};
}

Json HookRunToJson(const HookRun& h) { return {{"event", h.event}, {"ran", h.ran}, {"blocked", h.blocked}}; }

Json MergeRequestToJson(const MergeRequest& m) {
  Json files = Json::array();
  for (const auto& f : m.files) files.push_back(f);
  Json checks = Json::array();
  for (const auto& c : m.checks) checks.push_back(CheckRunToJson(c));
  Json hooks = Json::array();
  for (const auto& h : m.hooks) hooks.push_back(HookRunToJson(h));
  return {{"id", m.id},
          {"task", m.task},
          {"subject", m.subject},
          {"owner", m.owner},
          {"branch", m.branch},
          {"commit", m.commit},
          {"status", MergeStateName(m.status)},
          {"output", m.output},
          {"files", std::move(files)},
          {"target", m.target},
          {"merged_commit", m.merged_commit},
          {"checked_on", m.checked_on},
          {"approved", m.approved},
          {"decided_by", m.decided_by},
          {"feedback", m.feedback},
          {"checks", std::move(checks)},
          {"hooks", std::move(hooks)},
          {"created_at", m.created_at},
          {"updated_at", m.updated_at}};
}

Result<MergeRequest> MergeRequestFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a merge request is not a JSON object");
  MergeRequest m;
  MATES_ASSIGN_OR_RETURN(m.id, JsonInt(j, "id", true));
  MATES_ASSIGN_OR_RETURN(m.task, JsonInt(j, "task", true));
  if (m.id < 1 || m.task < 1) return Status::InvalidArgument("merge and task ids start at 1");
  MATES_ASSIGN_OR_RETURN(m.subject, JsonString(j, "subject", false));
  MATES_ASSIGN_OR_RETURN(m.owner, JsonString(j, "owner", true));
  MATES_ASSIGN_OR_RETURN(m.branch, JsonString(j, "branch", true));
  MATES_ASSIGN_OR_RETURN(m.commit, JsonString(j, "commit", true));
  MATES_ASSIGN_OR_RETURN(std::string status, JsonString(j, "status", true));
  MATES_ASSIGN_OR_RETURN(m.status, ParseMergeState(status));
  MATES_ASSIGN_OR_RETURN(m.output, JsonString(j, "output", false));
  MATES_ASSIGN_OR_RETURN(const Json* files, JsonArrayField(j, "files", false));
  if (files != nullptr) {
    for (const auto& f : *files) {
      if (!f.is_string()) return Status::InvalidArgument("'files' must hold strings");
      m.files.push_back(f.get<std::string>());
    }
  }
  MATES_ASSIGN_OR_RETURN(m.target, JsonString(j, "target", false));
  MATES_ASSIGN_OR_RETURN(m.merged_commit, JsonString(j, "merged_commit", false));
  MATES_ASSIGN_OR_RETURN(m.checked_on, JsonString(j, "checked_on", false));
  MATES_ASSIGN_OR_RETURN(m.approved, JsonBool(j, "approved", false));
  MATES_ASSIGN_OR_RETURN(m.decided_by, JsonString(j, "decided_by", false));
  MATES_ASSIGN_OR_RETURN(m.feedback, JsonString(j, "feedback", false));
  MATES_ASSIGN_OR_RETURN(const Json* checks, JsonArrayField(j, "checks", false));
  for (size_t i = 0; checks != nullptr && i < checks->size() && i < kMaxChecks; ++i) {
    const Json& c = (*checks)[i];
    if (!c.is_object()) return Status::InvalidArgument("'checks' must hold objects");
    CheckRun run;
    MATES_ASSIGN_OR_RETURN(run.command, JsonString(c, "command", false));
    MATES_ASSIGN_OR_RETURN(run.commit, JsonString(c, "commit", false));
    MATES_ASSIGN_OR_RETURN(int64_t code, JsonInt(c, "exit_code", false));
    MATES_ASSIGN_OR_RETURN(int64_t signal, JsonInt(c, "signal", false));
    run.exit_code = static_cast<int>(std::clamp<int64_t>(code, -1, 255));
    run.signal = static_cast<int>(std::clamp<int64_t>(signal, 0, 128));
    MATES_ASSIGN_OR_RETURN(run.timed_out, JsonBool(c, "timed_out", false));
    MATES_ASSIGN_OR_RETURN(run.duration_s, JsonNumber(c, "duration_s", 0));
    MATES_ASSIGN_OR_RETURN(run.output_sha256, JsonString(c, "output_sha256", false));
    m.checks.push_back(std::move(run));
  }
  MATES_ASSIGN_OR_RETURN(const Json* hooks, JsonArrayField(j, "hooks", false));
  for (size_t i = 0; hooks != nullptr && i < hooks->size() && i < kMaxChecks; ++i) {
    const Json& h = (*hooks)[i];
    if (!h.is_object()) return Status::InvalidArgument("'hooks' must hold objects");
    HookRun run;
    MATES_ASSIGN_OR_RETURN(run.event, JsonString(h, "event", true));
    MATES_ASSIGN_OR_RETURN(int64_t ran, JsonInt(h, "ran", false));
    run.ran = static_cast<int>(std::clamp<int64_t>(ran, 0, 1000));
    MATES_ASSIGN_OR_RETURN(run.blocked, JsonBool(h, "blocked", false));
    m.hooks.push_back(std::move(run));
  }
  MATES_ASSIGN_OR_RETURN(m.created_at, JsonNumber(j, "created_at", 0));
  MATES_ASSIGN_OR_RETURN(m.updated_at, JsonNumber(j, "updated_at", 0));
  return m;
}

MergeStore::MergeStore(const Workspace& ws, std::string_view team)
    : team_(team), dir_(ws.MergesDir(team)), lock_(ws.MergesDir(team) / ".lock") {}

Result<MergeRequest> MergeStore::GetUnlocked(int64_t id) const {
  if (id < 1 || id > kMaxTaskId) return Status::InvalidArgument("merge ids are numbers from 1");
  fs::path path = dir_ / (std::to_string(id) + ".json");
  auto data = ReadFilePrefix(path, kMaxMergeBytes + 1);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("no merge request " + std::to_string(id) + " in team '" + team_ + "'");
    }
    return data.status();
  }
  // What is on disk and cannot be read is Corrupt (exit 1): the caller's
  // input was fine.
  if (data->size() > kMaxMergeBytes) return Status::Corrupt(path.string() + " is too large");
  auto j = ParseJson(*data);
  if (!j.ok()) return Status::Corrupt(path.string() + ": " + j.status().message());
  auto m = MergeRequestFromJson(*j);
  if (!m.ok()) return Status::Corrupt(path.string() + ": " + m.status().message());
  if (m->id != id) return Status::Corrupt(path.string() + " holds merge " + std::to_string(m->id));
  return m;
}

Result<MergeRequest> MergeStore::Get(int64_t id) const { return GetUnlocked(id); }

Status MergeStore::Write(const MergeRequest& m) const {
  return WriteFileAtomic(dir_ / (std::to_string(m.id) + ".json"), DumpJsonPretty(MergeRequestToJson(m)));
}

Result<MergeRequest> MergeStore::Create(MergeRequest m) {
  MATES_RETURN_IF_ERROR(EnsureDir(dir_));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_));
  int64_t last = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".json") continue;
    auto id = ParseId(e.path().stem().string(), "merge id");
    if (id.ok()) last = std::max(last, *id);
  }
  if (ec) return Status::Internal("cannot list " + dir_.string() + ": " + ec.message());
  if (last >= kMaxTaskId) {
    return Status::FailedPrecondition(dir_.string() + " holds a merge request numbered " + std::to_string(last) +
                                      "; no id is left after it");
  }
  m.id = last + 1;
  m.created_at = m.updated_at = WallSeconds();
  MATES_RETURN_IF_ERROR(Write(m));
  return m;
}

Status MergeStore::Import(const MergeRequest& m) {
  if (m.id < 1 || m.id > kMaxTaskId) return Status::InvalidArgument("merge ids are numbers from 1");
  MATES_RETURN_IF_ERROR(EnsureDir(dir_));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_));
  return Write(m);
}

Result<std::vector<MergeRequest>> MergeStore::List() const {
  // Ids are dense from 1 and never reused, so the files are read by id: a
  // readdir() racing a request being rewritten (rename over it) may skip
  // its entry, and a list that loses a queued request lets a run end early.
  // Ids past the dense run (a file made by hand) are read as the folder
  // lists them; a huge one costs one read, not a probe of every id below.
  std::vector<MergeRequest> out;
  std::error_code ec;
  if (!fs::exists(dir_, ec)) return out;
  std::set<int64_t> listed;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".json") continue;
    auto id = ParseId(e.path().stem().string(), "merge id");
    if (id.ok()) listed.insert(*id);
  }
  int64_t id = 1;
  for (;; ++id) {
    auto m = GetUnlocked(id);
    if (m.ok()) {
      out.push_back(std::move(*m));
    } else if (m.status().code() == StatusCode::kNotFound) {
      break;
    } else {
      LogDebug("merges: skipping request " + std::to_string(id) + ": " + m.status().message());
    }
  }
  for (auto it = listed.upper_bound(id); it != listed.end(); ++it) {
    auto m = GetUnlocked(*it);
    if (m.ok()) {
      out.push_back(std::move(*m));
    } else {
      LogDebug("merges: skipping request " + std::to_string(*it) + ": " + m.status().message());
    }
  }
  return out;
}

Result<MergeRequest> MergeStore::Update(int64_t id, const std::function<Status(MergeRequest&)>& mutate) {
  MATES_RETURN_IF_ERROR(EnsureDir(dir_));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_));
  MATES_ASSIGN_OR_RETURN(MergeRequest m, GetUnlocked(id));
  MATES_RETURN_IF_ERROR(mutate(m));
  m.id = id;
  m.updated_at = WallSeconds();
  MATES_RETURN_IF_ERROR(Write(m));
  return m;
}

}  // namespace mates
