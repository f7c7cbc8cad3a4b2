#include "store/roster.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/text.h"
#include "core/limits.h"
#include "core/names.h"
#include "store/watcher.h"

namespace mates {

std::string_view MemberStatusName(MemberStatus s) {
  switch (s) {
    case MemberStatus::kActive:
      return "active";
    case MemberStatus::kIdle:
      return "idle";
    case MemberStatus::kShutdown:
      return "shutdown";
  }
  return "idle";
}

Result<MemberStatus> ParseMemberStatus(std::string_view name) {
  if (name == "active") return MemberStatus::kActive;
  if (name == "idle") return MemberStatus::kIdle;
  if (name == "shutdown") return MemberStatus::kShutdown;
  // The s09 seed said "working" for active.
  if (name == "working") return MemberStatus::kActive;
  return Status::InvalidArgument("unknown member status '" + std::string(name) +
                                 "' (valid: active, idle, shutdown)");
}

std::string_view MemberRoleName(MemberRole r) { return r == MemberRole::kLead ? "lead" : "teammate"; }

std::string_view MemberBackendName(MemberBackend b) {
  switch (b) {
    case MemberBackend::kInProcess:
      return "in-process";
    case MemberBackend::kTmux:
      return "tmux";
    case MemberBackend::kExternal:
      return "external";
  }
  return "in-process";
}

Result<MemberBackend> ParseMemberBackend(std::string_view name) {
  if (name == "in-process") return MemberBackend::kInProcess;
  if (name == "tmux") return MemberBackend::kTmux;
  if (name == "external") return MemberBackend::kExternal;
  return Status::InvalidArgument("unknown backend '" + std::string(name) + "' (valid: in-process, tmux, external)");
}

const std::vector<std::string>& TeammateColors() {
  static const std::vector<std::string> colors = {"cyan", "yellow", "magenta", "green", "blue"};
  return colors;
}

const Member* TeamConfig::Find(std::string_view member) const {
  for (const auto& m : members) {
    if (m.name == member) return &m;
  }
  return nullptr;
}

Member* TeamConfig::Find(std::string_view member) {
  for (auto& m : members) {
    if (m.name == member) return &m;
  }
  return nullptr;
}

Json TeamConfigToJson(const TeamConfig& c) {
  // Set a member at a time, not through initializer lists (which copy
  // every value once more): the roster is written at every status change.
  Json members = Json::array();
  members.get_ref<Json::array_t&>().reserve(c.members.size());
  for (const auto& m : c.members) {
    Json jm = JsonObject(12);
    jm["name"] = m.name;
    jm["agent_id"] = m.agent_id;
    jm["role"] = m.role_title.empty() ? std::string(MemberRoleName(m.role)) : m.role_title;
    jm["status"] = std::string(MemberStatusName(m.status));
    jm["color"] = m.color;
    jm["backend"] = std::string(MemberBackendName(m.backend));
    if (m.role != MemberRole::kLead) {
      jm["model"] = m.model;
      jm["plan_mode_required"] = m.plan_mode_required;
      jm["prompt"] = m.prompt;
    }
    jm["joined_at"] = m.joined_at;
    if (m.worktree) jm["worktree"] = true;
    if (m.budget_tokens > 0) jm["budget_tokens"] = m.budget_tokens;
    if (m.context_budget > 0) jm["context_budget"] = m.context_budget;
    members.push_back(std::move(jm));
  }
  Json j = JsonObject(8);
  j["name"] = c.name;
  j["created_at"] = c.created_at;
  j["lead"] = c.lead;
  if (!c.description.empty()) j["description"] = c.description;
  j["members"] = std::move(members);
  if (c.git.configured() || c.git.isolation != Isolation::kShared) {
    j["git"] = {{"isolation", IsolationName(c.git.isolation)},
                {"target_branch", c.git.target_branch},
                {"merge_check", c.git.merge_check},
                {"merge_timeout", c.git.merge_timeout_s},
                {"merge_review", c.git.merge_review}};
    if (!c.git.remote.empty()) j["git"]["remote"] = c.git.remote;
    if (!c.git.target_at.empty()) j["git"]["target_at"] = c.git.target_at;
    if (!c.git.target_moving_to.empty()) j["git"]["target_moving_to"] = c.git.target_moving_to;
    if (c.git.held()) j["git"]["held"] = {{"found", c.git.held_found}, {"since", c.git.held_since}};
  }
  // (Kept with no budget too: one given again counts it.)
  if (c.budget.any() || c.budget.spent_in_made_tokens > 0) j["budget"] = TeamBudgetToJson(c.budget);
  if (!c.sessions.empty()) {
    Json sessions = Json::array();
    for (const auto& s : c.sessions) {
      sessions.push_back({{"started_at", s.started_at}, {"how", s.how}, {"commit", s.commit}, {"branch", s.branch}});
    }
    j["sessions"] = std::move(sessions);
  }
  return j;
}

void TeamConfig::NoteSession(TeamSession s) {
  sessions.push_back(std::move(s));
  if (sessions.size() > kMaxTeamSessions) sessions.erase(sessions.begin(), sessions.end() - kMaxTeamSessions);
}

Json TeamBudgetToJson(const TeamBudget& b) {
  Json j = JsonObject(4);
  j["tokens"] = b.tokens;
  j["usd"] = b.usd;
  if (!b.from.empty()) {
    j["from"] = b.from;
    j["spent_before"] = {{"tokens", b.spent_before_tokens}, {"usd", b.spent_before_usd}};
  }
  if (b.spent_in_made_tokens > 0) {
    j["spent_in_teams_made"] = {{"tokens", b.spent_in_made_tokens}, {"usd", b.spent_in_made_usd}};
  }
  return j;
}

std::string_view IsolationName(Isolation i) { return i == Isolation::kWorktree ? "worktree" : "shared"; }

Result<Isolation> ParseIsolation(std::string_view name) {
  if (name == "shared") return Isolation::kShared;
  if (name == "worktree") return Isolation::kWorktree;
  return Status::InvalidArgument("isolation must be 'shared' or 'worktree', not '" + std::string(name) + "'");
}

// Spending a budget counts besides the journals, `{tokens, usd}` under
// `key` of `budget` (absent: none). At most 1e15 tokens and $1e12: a
// hand-edited count must not overflow the sums it goes into.
Status ReadCounted(const Json& budget, const char* key, int64_t* tokens, double* usd) {
  constexpr int64_t kMaxTokens = 1'000'000'000'000'000;
  constexpr double kMaxUsd = 1e12;
  MATES_ASSIGN_OR_RETURN(const Json* counted, JsonObjectField(budget, key, false));
  if (counted == nullptr) return Status::Ok();
  MATES_ASSIGN_OR_RETURN(*tokens, JsonInt(*counted, "tokens", false, 0));
  MATES_ASSIGN_OR_RETURN(*usd, JsonNumber(*counted, "usd", 0));
  if (!(*tokens >= 0 && *tokens <= kMaxTokens) || !(*usd >= 0 && *usd <= kMaxUsd)) {
    return Status::InvalidArgument(std::string("budget.") + key +
                                   ": tokens and usd must be from 0 to 1e15 and 1e12");
  }
  return Status::Ok();
}

namespace {

// One member of the roster `c` read so far.
Result<Member> MemberFromJson(const Json& jm, const TeamConfig& c) {
  Member m;
  MATES_ASSIGN_OR_RETURN(m.name, JsonString(jm, "name", true));
  // Names become file names (inboxes, journals, locks): a roster edited
  // by hand must not lead anywhere a name from the CLI could not.
  MATES_RETURN_IF_ERROR(ValidateName("member name", m.name));
  if (c.Find(m.name) != nullptr) {
    return Status::InvalidArgument("member '" + m.name + "' is listed twice");
  }
  MATES_ASSIGN_OR_RETURN(m.agent_id, JsonString(jm, "agent_id", false, m.name + "@" + c.name));
  MATES_ASSIGN_OR_RETURN(std::string role, JsonString(jm, "role", false, "teammate"));
  m.role = role == "lead" ? MemberRole::kLead : MemberRole::kTeammate;
  if (role != "lead" && role != "teammate") m.role_title = role;
  MATES_ASSIGN_OR_RETURN(std::string status, JsonString(jm, "status", false, "idle"));
  MATES_ASSIGN_OR_RETURN(m.status, ParseMemberStatus(status));
  MATES_ASSIGN_OR_RETURN(m.color, JsonString(jm, "color", false));
  MATES_ASSIGN_OR_RETURN(std::string backend, JsonString(jm, "backend", false, "in-process"));
  MATES_ASSIGN_OR_RETURN(m.backend, ParseMemberBackend(backend));
  MATES_ASSIGN_OR_RETURN(m.model, JsonString(jm, "model", false));
  MATES_ASSIGN_OR_RETURN(m.plan_mode_required, JsonBool(jm, "plan_mode_required", false));
  MATES_ASSIGN_OR_RETURN(m.prompt, JsonString(jm, "prompt", false));
  MATES_ASSIGN_OR_RETURN(m.joined_at, JsonNumber(jm, "joined_at", 0));
  MATES_ASSIGN_OR_RETURN(m.worktree, JsonBool(jm, "worktree", false));
  MATES_ASSIGN_OR_RETURN(m.budget_tokens, JsonInt(jm, "budget_tokens", false, 0));
  MATES_ASSIGN_OR_RETURN(m.context_budget, JsonInt(jm, "context_budget", false, 0));
  if (m.budget_tokens < 0 || m.context_budget < 0) {
    return Status::InvalidArgument("member '" + m.name + "': budgets must be >= 0");
  }
  return m;
}

// The team's git settings (DESIGN §12).
Result<TeamGit> TeamGitFromJson(const Json& git) {
  TeamGit g;
  MATES_ASSIGN_OR_RETURN(std::string isolation, JsonString(git, "isolation", false, "shared"));
  MATES_ASSIGN_OR_RETURN(g.isolation, ParseIsolation(isolation));
  MATES_ASSIGN_OR_RETURN(g.target_branch, JsonString(git, "target_branch", false));
  MATES_ASSIGN_OR_RETURN(g.merge_check, JsonString(git, "merge_check", false));
  MATES_ASSIGN_OR_RETURN(g.merge_timeout_s, JsonNumber(git, "merge_timeout", 600));
  MATES_ASSIGN_OR_RETURN(g.merge_review, JsonBool(git, "merge_review", false));
  MATES_ASSIGN_OR_RETURN(g.remote, JsonString(git, "remote", false));
  if (!g.remote.empty()) MATES_RETURN_IF_ERROR(ValidateName("git remote", g.remote));
  MATES_ASSIGN_OR_RETURN(g.target_at, JsonString(git, "target_at", false));
  MATES_ASSIGN_OR_RETURN(g.target_moving_to, JsonString(git, "target_moving_to", false));
  MATES_ASSIGN_OR_RETURN(const Json* held, JsonObjectField(git, "held", false));
  if (held != nullptr) {
    MATES_ASSIGN_OR_RETURN(g.held_found, JsonString(*held, "found", true));
    MATES_ASSIGN_OR_RETURN(g.held_since, JsonNumber(*held, "since", 0));
  }
  for (const std::string* id : {&g.target_at, &g.target_moving_to, &g.held_found}) {
    if (!id->empty() && (id->size() < 40 || id->size() > 64 ||
                         id->find_first_not_of("0123456789abcdef") != std::string::npos)) {
      return Status::InvalidArgument("git: '" + *id + "' is not a commit id");
    }
  }
  if (!(g.merge_timeout_s > 0)) return Status::InvalidArgument("git.merge_timeout must be positive");
  return g;
}

}  // namespace

Result<TeamConfig> TeamConfigFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("config is not a JSON object");
  TeamConfig c;
  MATES_ASSIGN_OR_RETURN(c.name, JsonString(j, "name", true));
  MATES_ASSIGN_OR_RETURN(c.description, JsonString(j, "description", false));
  MATES_ASSIGN_OR_RETURN(c.lead, JsonString(j, "lead", false));
  MATES_ASSIGN_OR_RETURN(c.created_at, JsonNumber(j, "created_at", 0));
  auto it = j.find("members");
  if (it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Status::InvalidArgument("'members' must be an array");
    for (const auto& jm : *it) {
      MATES_ASSIGN_OR_RETURN(Member m, MemberFromJson(jm, c));
      c.members.push_back(std::move(m));
    }
  }
  MATES_ASSIGN_OR_RETURN(const Json* git, JsonObjectField(j, "git", false));
  if (git != nullptr) {
    MATES_ASSIGN_OR_RETURN(c.git, TeamGitFromJson(*git));
  }
  MATES_ASSIGN_OR_RETURN(const Json* budget, JsonObjectField(j, "budget", false));
  if (budget != nullptr) {
    MATES_ASSIGN_OR_RETURN(c.budget.tokens, JsonInt(*budget, "tokens", false, 0));
    MATES_ASSIGN_OR_RETURN(c.budget.usd, JsonNumber(*budget, "usd", 0));
    if (c.budget.tokens < 0 || !(c.budget.usd >= 0) || c.budget.usd > 1e9) {
      return Status::InvalidArgument("budget: tokens and usd must be >= 0");
    }
    MATES_ASSIGN_OR_RETURN(c.budget.from, JsonString(*budget, "from", false));
    if (!c.budget.from.empty()) {
      MATES_RETURN_IF_ERROR(ValidateName("budget.from", c.budget.from));
      MATES_RETURN_IF_ERROR(ReadCounted(*budget, "spent_before", &c.budget.spent_before_tokens,
                                        &c.budget.spent_before_usd));
    }
    MATES_RETURN_IF_ERROR(ReadCounted(*budget, "spent_in_teams_made",
                                      &c.budget.spent_in_made_tokens, &c.budget.spent_in_made_usd));
  }
  MATES_ASSIGN_OR_RETURN(const Json* sessions, JsonArrayField(j, "sessions", false));
  if (sessions != nullptr) {
    for (const auto& js : *sessions) {
      TeamSession s;
      MATES_ASSIGN_OR_RETURN(s.started_at, JsonNumber(js, "started_at", 0));
      MATES_ASSIGN_OR_RETURN(s.how, JsonString(js, "how", false));
      MATES_ASSIGN_OR_RETURN(s.commit, JsonString(js, "commit", false));
      MATES_ASSIGN_OR_RETURN(s.branch, JsonString(js, "branch", false));
      if (s.how.size() > 64 || s.commit.size() > 64 || s.branch.size() > 256) {
        return Status::InvalidArgument("sessions: a session's how, commit or branch is too long");
      }
      c.NoteSession(std::move(s));
    }
  }
  MATES_RETURN_IF_ERROR(ValidateName("team name", c.name));
  if (!c.lead.empty()) MATES_RETURN_IF_ERROR(ValidateName("lead name", c.lead));
  // Seed configs name no lead: the member with role "lead", else "lead".
  if (c.lead.empty()) {
    auto lead = std::find_if(c.members.begin(), c.members.end(),
                             [](const Member& m) { return m.role == MemberRole::kLead; });
    c.lead = lead != c.members.end() ? lead->name : "lead";
  }
  return c;
}

namespace {

// A name as a reader tells names apart: lower case, without the
// separators a name may hold (`User`, `USER`, `merge_queue` and
// `Merge.Queue` all read as the reserved ones). Names are ASCII (the name
// rule), so no Unicode normalisation is needed on top.
std::string ReadAs(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

}  // namespace

Status ValidateMemberName(std::string_view name) {
  MATES_RETURN_IF_ERROR(ValidateName("member name", name));
  const std::string read_as = ReadAs(name);
  if (read_as == "user") {
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' is reserved (it reads as 'user', the name of people sending from the CLI or "
                                   "the dashboard); choose another member name");
  }
  if (read_as == "hooks") {
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' is reserved (it reads as 'hooks', whose blocks the message log shows); choose "
                                   "another member name");
  }
  if (read_as == "mergequeue") {
    return Status::InvalidArgument("'" + std::string(name) +
                                   "' is reserved (it reads as 'merge-queue', the team's merge queue); choose "
                                   "another member name");
  }
  return Status::Ok();
}

TeamConfig NewTeamConfig(std::string_view team, std::string_view lead, std::string_view description, double now) {
  TeamConfig c;
  c.name = std::string(team);
  c.description = std::string(description);
  c.lead = std::string(lead);
  c.created_at = now;
  Member m;
  m.name = std::string(lead);
  m.agent_id = m.name + "@" + c.name;
  m.role = MemberRole::kLead;
  m.status = MemberStatus::kActive;
  m.backend = MemberBackend::kInProcess;
  m.joined_at = now;
  c.members.push_back(std::move(m));
  return c;
}

void SetStatusesIn(TeamConfig& c,
                   const std::vector<std::pair<std::string, MemberStatus>>& changes) {
  for (const auto& [member, status] : changes) {
    if (Member* m = c.Find(member); m != nullptr) m->status = status;
  }
}

Status ValidateSenderName(std::string_view name, const TeamConfig& team) {
  const std::string read_as = ReadAs(name);
  if (read_as == "mergequeue" || read_as == "hooks") {
    return Status::InvalidArgument("'" + std::string(name) + "' is reserved (it reads as '" +
                                   (read_as == "hooks" ? "hooks" : "merge-queue") +
                                   "', which only mates itself speaks as)");
  }
  if (read_as == "user" && name != "user") {
    return Status::InvalidArgument("'" + std::string(name) + "' reads as 'user': say user");
  }
  for (const auto& m : team.members) {
    if (m.name != name && ReadAs(m.name) == read_as) {
      return Status::InvalidArgument("'" + std::string(name) + "' reads as member '" + m.name + "' of team '" +
                                     team.name + "': name it as it is spelt");
    }
  }
  return Status::Ok();
}

Result<Member> AddMemberTo(TeamConfig& c, Member member) {
  MATES_RETURN_IF_ERROR(ValidateMemberName(member.name));
  if (c.Find(member.name) != nullptr) {
    return Status::AlreadyExists("'" + member.name + "' is already a member of team '" + c.name + "'");
  }
  // One that reads as another (`Lead` beside `lead`, `w_1` beside `w1`)
  // would pass for it in every list and message.
  for (const auto& m : c.members) {
    if (ReadAs(m.name) == ReadAs(member.name)) {
      return Status::AlreadyExists("'" + member.name + "' reads as '" + m.name + "', already a member of team '" +
                                   c.name + "' (" + (m.role == MemberRole::kLead ? "its lead" : "a teammate") +
                                   "); choose another member name");
    }
  }
  member.agent_id = member.name + "@" + c.name;
  size_t teammates = std::count_if(c.members.begin(), c.members.end(),
                                   [](const Member& m) { return m.role != MemberRole::kLead; });
  if (member.role != MemberRole::kLead && member.color.empty()) {
    member.color = TeammateColors()[teammates % TeammateColors().size()];
  }
  if (member.joined_at == 0) member.joined_at = WallSeconds();
  c.members.push_back(member);
  return member;
}

Result<TeamConfig> Roster::CreateTeam(std::string_view team, std::string_view lead,
                                      std::string_view description) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateMemberName(lead));
  MATES_RETURN_IF_ERROR(EnsureDir(ws_.TeamsDir()));
  fs::path dir = ws_.TeamDir(team);
  std::error_code ec;
  bool created = fs::create_directory(dir, ec);
  if (ec) return Status::IOError("create " + dir.string() + ": " + ec.message());
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(ws_.ConfigLockPath(team)));
  // A folder without config.json is what a creator that died left: reuse it.
  if (!created && fs::exists(ws_.ConfigPath(team))) {
    return Status::AlreadyExists("team '" + std::string(team) + "' already exists");
  }
  TeamConfig c = NewTeamConfig(team, lead, description, WallSeconds());
  MATES_RETURN_IF_ERROR(EnsureDir(ws_.RequestsDir(team)));
  MATES_RETURN_IF_ERROR(EnsureDir(ws_.AgentsDir(team)));
  MATES_RETURN_IF_ERROR(EnsureDir(ws_.TasksDir(team)));
  // The lock files exist from the start (DESIGN §2 layout), so that reading
  // a board or an empty inbox never changes what is on disk.
  MATES_RETURN_IF_ERROR(TouchFile(ws_.TasksDir(team) / ".lock"));
  MATES_RETURN_IF_ERROR(TouchFile(dir / (std::string(lead) + "_inbox.lock")));
  MATES_RETURN_IF_ERROR(WriteFileAtomic(ws_.ConfigPath(team), DumpJsonPretty(TeamConfigToJson(c))));
  return c;
}

Result<TeamConfig> Roster::LoadUnlocked(std::string_view team) const {
  // Read without config.lock: the shared lock of ReadReplacedFile keeps a
  // writer from reusing this version (the spare) while it is read.
  auto data = ReadReplacedFile(ws_.ConfigPath(team), kMaxStateFileBytes + 1);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) {
      auto teams = ListTeams();
      return Status::NotFound("no team '" + std::string(team) + "' in " + ws_.root().string() +
                              (teams.ok() ? DidYouMean(*teams, std::string(team)) : ""));
    }
    return data.status();
  }
  // A roster that cannot be read is corrupt state (exit 1), not bad input.
  auto corrupt = [&](const Status& why) {
    return Status::Corrupt(ws_.ConfigPath(team).string() + " is corrupt: " + why.message() +
                           " (fix or restore the file)");
  };
  if (data->size() > kMaxStateFileBytes) return corrupt(Status::Corrupt("it is far too large"));
  auto j = ParseJson(*data);
  if (!j.ok()) return corrupt(j.status());
  auto c = TeamConfigFromJson(*j);
  if (!c.ok()) return corrupt(c.status());
  if (c->name != team) {
    return corrupt(Status::Corrupt("it names team '" + c->name + "', not '" + std::string(team) + "'"));
  }
  return c;
}

Result<TeamConfig> Roster::Load(std::string_view team) const {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  // Replaced atomically: no lock needed to read a consistent version.
  return LoadUnlocked(team);
}

Result<std::vector<std::string>> Roster::ListTeams() const {
  std::vector<std::string> teams;
  std::error_code ec;
  if (!fs::exists(ws_.TeamsDir(), ec)) return teams;
  for (const auto& e : fs::directory_iterator(ws_.TeamsDir(), ec)) {
    std::string name = e.path().filename().string();
    if (!ValidateName("team name", name).ok()) continue;
    if (fs::exists(e.path() / "config.json")) teams.push_back(name);
  }
  if (ec) return Status::IOError("list " + ws_.TeamsDir().string() + ": " + ec.message());
  std::sort(teams.begin(), teams.end());
  return teams;
}

Result<TeamConfig> Roster::Update(std::string_view team,
                                  const std::function<Status(TeamConfig&)>& mutate) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  if (!fs::exists(ws_.ConfigPath(team))) {
    return Status::NotFound("no team '" + std::string(team) + "' in " + ws_.root().string());
  }
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(ws_.ConfigLockPath(team)));
  return UpdateLocked(team, mutate);
}

Result<TeamConfig> Roster::UpdateLocked(std::string_view team,
                                        const std::function<Status(TeamConfig&)>& mutate) {
  MATES_ASSIGN_OR_RETURN(TeamConfig c, LoadUnlocked(team));
  MATES_RETURN_IF_ERROR(mutate(c));
  MATES_RETURN_IF_ERROR(WriteLocked(team, c));
  return c;
}

Status Roster::WriteLocked(std::string_view team, const TeamConfig& c) {
  // Through a spare file (covered by config.lock): statuses change at every
  // teammate transition, and a fresh inode per write is what costs most.
  MATES_RETURN_IF_ERROR(ReplaceFileViaSpare(ws_.ConfigPath(team), DumpJsonPretty(TeamConfigToJson(c)),
                                            SpareIn(ws_.TeamDir(team), "config")));
  if (local_ != nullptr) local_->NotifyLocal(ws_.TeamDir(team), "config.json");
  return Status::Ok();
}

Result<Member> Roster::AddMember(std::string_view team, Member member) {
  MATES_RETURN_IF_ERROR(ValidateMemberName(member.name));
  Member added;
  auto r = Update(team, [&](TeamConfig& c) -> Status {
    MATES_ASSIGN_OR_RETURN(added, AddMemberTo(c, member));
    return Status::Ok();
  });
  if (!r.ok()) return r.status();
  MATES_RETURN_IF_ERROR(TouchFile(ws_.TeamDir(team) / (added.name + "_inbox.lock")));
  return added;
}

Status Roster::SetStatuses(std::string_view team,
                           const std::vector<std::pair<std::string, MemberStatus>>& changes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  if (!fs::exists(ws_.ConfigPath(team))) {
    return Status::NotFound("no team '" + std::string(team) + "' in " + ws_.root().string());
  }
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(ws_.ConfigLockPath(team)));
  MATES_ASSIGN_OR_RETURN(TeamConfig c, LoadUnlocked(team));
  std::vector<MemberStatus> before;
  for (const Member& m : c.members) before.push_back(m.status);
  SetStatusesIn(c, changes);
  bool changed = false;
  for (size_t i = 0; i < before.size(); ++i) changed = changed || c.members[i].status != before[i];
  // Nothing to change writes nothing (and wakes no watcher).
  if (!changed) return Status::Ok();
  return WriteLocked(team, c);
}

Status Roster::SetStatus(std::string_view team, std::string_view member, MemberStatus status) {
  auto r = Update(team, [&](TeamConfig& c) -> Status {
    Member* m = c.Find(member);
    if (m == nullptr) {
      return Status::NotFound("no member '" + std::string(member) + "' in team '" + c.name + "'");
    }
    m->status = status;
    return Status::Ok();
  });
  return r.status();
}

Status Roster::DeleteTeam(std::string_view team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  fs::path dir = ws_.TeamDir(team);
  if (!fs::exists(dir / "config.json")) {
    return Status::NotFound("no team '" + std::string(team) + "' in " + ws_.root().string());
  }
  // Rename first so that the team vanishes at one instant, then remove.
  fs::path graveyard = ws_.TeamsDir() / (".deleted." + std::string(team) + "." +
                                         std::to_string(::getpid()));
  std::error_code ec;
  fs::rename(dir, graveyard, ec);
  if (ec) return Status::IOError("delete " + dir.string() + ": " + ec.message());
  fs::remove_all(graveyard, ec);
  fs::remove_all(ws_.TasksDir(team), ec);
  if (ec) return Status::IOError("delete " + ws_.TasksDir(team).string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace mates
