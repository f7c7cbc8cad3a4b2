#include "store/host_info.h"

#include "core/text.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "store/liveness.h"
#include "store/roster.h"
#include "store/team_store.h"

namespace mates {

std::string_view HostModeName(HostMode m) {
  switch (m) {
    case HostMode::kRun: return "run";
    case HostMode::kUp: return "up";
    case HostMode::kDemo: return "demo";
    case HostMode::kTeammates: return "teammates";
    case HostMode::kUnknown: break;
  }
  return "";
}

HostMode HostModeOf(std::string_view name) {
  for (HostMode m : {HostMode::kRun, HostMode::kUp, HostMode::kDemo, HostMode::kTeammates}) {
    if (name == HostModeName(m)) return m;
  }
  return HostMode::kUnknown;
}

fs::path HostInfoPath(const Workspace& ws, std::string_view team) { return ws.TeamDir(team) / "host.json"; }

Status WriteHostInfo(const Workspace& ws, std::string_view team, const HostInfo& h) {
  Json j;
  j["pid"] = h.pid;
  j["start_time"] = h.start_time;
  j["started_at"] = h.started_at;
  j["mode"] = std::string(HostModeName(h.mode));
  j["lead"] = h.lead;
  j["dashboard"] = h.dashboard;
  if (!h.also.empty()) {
    j["also"] = Json::array();
    for (const auto& a : h.also)
      j["also"].push_back({{"team", a.team}, {"dashboard", a.dashboard}});
  }
  if (!h.mcp_skipped.empty()) {
    j["mcp_skipped"] = Json::array();
    for (const auto& s : h.mcp_skipped) j["mcp_skipped"].push_back({{"server", s.server}, {"why", s.why}});
  }
  if (!h.sandbox.empty()) j["sandbox"] = h.sandbox;
  if (!h.control.empty()) j["control"] = h.control;
  // Owner-only: the dashboard's URL carries its token.
  return WriteFileAtomic(HostInfoPath(ws, team), DumpJson(j) + "\n", 0600);
}

Result<HostInfo> ReadHostInfo(const Workspace& ws, std::string_view team) {
  MATES_ASSIGN_OR_RETURN(std::string text, ReadFilePrefix(HostInfoPath(ws, team), 64 << 10));
  MATES_ASSIGN_OR_RETURN(Json j, ParseJson(text));
  if (!j.is_object()) return Status::InvalidArgument("host.json is not an object");
  HostInfo h;
  MATES_ASSIGN_OR_RETURN(h.pid, JsonInt(j, "pid", true));
  MATES_ASSIGN_OR_RETURN(int64_t start, JsonInt(j, "start_time", false));
  h.start_time = static_cast<uint64_t>(start < 0 ? 0 : start);
  MATES_ASSIGN_OR_RETURN(h.started_at, JsonNumber(j, "started_at", 0));
  MATES_ASSIGN_OR_RETURN(std::string mode, JsonString(j, "mode", false));
  h.mode = HostModeOf(mode);
  MATES_ASSIGN_OR_RETURN(h.lead, JsonString(j, "lead", false));
  MATES_ASSIGN_OR_RETURN(h.dashboard, JsonString(j, "dashboard", false));
  if (h.pid <= 0) return Status::InvalidArgument("host.json: pid must be positive");
  MATES_ASSIGN_OR_RETURN(h.sandbox, JsonString(j, "sandbox", false));
  if (!h.sandbox.empty() && h.sandbox != "off" && h.sandbox != "workspace" && h.sandbox != "strict") {
    return Status::InvalidArgument("host.json: sandbox must be off, workspace or strict");
  }
  MATES_ASSIGN_OR_RETURN(h.control, JsonString(j, "control", false));
  if (!h.control.empty() && (h.control[0] != '/' || h.control.size() > 4096)) {
    return Status::InvalidArgument("host.json: control must be an absolute path");
  }
  if (j.contains("also") && !j["also"].is_null()) {
    const Json& also = j["also"];
    if (!also.is_array() || also.size() > kMaxAlsoHosted) {
      return Status::InvalidArgument("host.json: also must be a list of at most " +
                                     std::to_string(kMaxAlsoHosted) + " teams");
    }
    for (const Json& a : also) {
      if (!a.is_object())
        return Status::InvalidArgument("host.json: each of also must be an object");
      AlsoHosted other;
      MATES_ASSIGN_OR_RETURN(other.team, JsonString(a, "team", true));
      MATES_RETURN_IF_ERROR(ValidateName("host.json: also's team", other.team));
      MATES_ASSIGN_OR_RETURN(other.dashboard, JsonString(a, "dashboard", false));
      h.also.push_back(std::move(other));
    }
  }
  if (j.contains("mcp_skipped") && !j["mcp_skipped"].is_null()) {
    const Json& skipped = j["mcp_skipped"];
    if (!skipped.is_array() || skipped.size() > kMaxSkippedServers) {
      return Status::InvalidArgument("host.json: mcp_skipped must be a list of at most " +
                                     std::to_string(kMaxSkippedServers) + " servers");
    }
    for (const Json& s : skipped) {
      if (!s.is_object()) return Status::InvalidArgument("host.json: each of mcp_skipped must be an object");
      SkippedServer one;
      MATES_ASSIGN_OR_RETURN(one.server, JsonString(s, "server", true));
      MATES_ASSIGN_OR_RETURN(one.why, JsonString(s, "why", false));
      one.server = CutUtf8(one.server, 64);
      one.why = CutUtf8(one.why, 512);
      h.mcp_skipped.push_back(std::move(one));
    }
  }
  return h;
}

void RemoveHostInfo(const Workspace& ws, std::string_view team) {
  auto h = ReadHostInfo(ws, team);
  if (h.ok() && h->pid == ::getpid()) {
    std::error_code ec;
    fs::remove(HostInfoPath(ws, team), ec);
  }
}

namespace {

// host.json's host, checked against the running process (pid 0 if the
// host has not written it yet, or it is an earlier host's).
HostInfo HostOf(const Workspace& ws, std::string_view team) {
  auto h = ReadHostInfo(ws, team);
  if (!h.ok()) return HostInfo{};
  // The file of an earlier host, with a new one starting: not this one's.
  if (ProcessStartTime(static_cast<pid_t>(h->pid)) != h->start_time) return HostInfo{};
  return *h;
}

}  // namespace

std::optional<HostInfo> ReadLiveHost(const Workspace& ws, std::string_view team) {
  auto c = Roster(ws).Load(team);
  if (!c.ok() || !HostAlive(ws, team, c->lead)) return std::nullopt;
  return HostOf(ws, team);
}

std::optional<HostInfo> ReadLiveHost(const Workspace& ws, std::string_view team, TeamStore& store) {
  // A host of teammates only holds no lock of the lead's: its process says.
  if (HostInfo h = HostOf(ws, team); h.pid > 0 && h.mode == HostMode::kTeammates) {
    if (!ProcessLives(static_cast<pid_t>(h.pid), h.start_time)) return std::nullopt;
    return h;
  }
  auto c = store.LoadTeam(std::string(team));
  if (!c.ok() || !store.IsHosted(c->name, c->lead)) return std::nullopt;
  // Hosted, but not from this workspace (another machine's host, or one
  // still starting): none here.
  HostInfo h = HostOf(ws, team);
  if (h.pid <= 0) return std::nullopt;
  return h;
}

}  // namespace mates
