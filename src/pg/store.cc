// See store.h: the pool of connections, outages, and teams with their rosters.
#include "pg/store.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "pg/export.h"
#include "pg/schema.h"
#include "pg/store_rows.h"
#include "store/task_rules.h"
#include "store/team_store.h"

namespace mates::pg {

Result<std::unique_ptr<Store>> Store::Open(const Target& target) {
  // Its sessions' name (at most 63 bytes, PostgreSQL's bound): this store's
  // alone, whatever the machine and its PIDs.
  Target named = target;
  named.application = "mates " + RandomHex(16) + " pid " + std::to_string(::getpid());
  std::unique_ptr<Store> s(new Store(named));
  MATES_ASSIGN_OR_RETURN(Connection c, Connection::Open(named, 10));
  MATES_RETURN_IF_ERROR(CheckSchema(c));
  s->Give(std::move(c));
  return s;
}

void Store::Give(Connection c) {
  // One left in a transaction (a rollback that failed) would hand its
  // locks to the next user: closed instead, which ends it.
  if (!c.idle()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(c));
}

Lease::~Lease() {
  if (store_ != nullptr) store_->Give(std::move(conn_));
}

void Store::WaitOutOutages(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  patience_s_ = std::max(0.0, seconds);
  stop_waiting_ = false;
}

void Store::StopWaiting() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_waiting_ = true;
  }
  outage_cv_.notify_all();
}

Result<Lease> Store::Acquire(bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!idle_.empty()) {
    Connection c = std::move(idle_.back());
    idle_.pop_back();
    if (c.ok() && !c.HungUp()) return Lease(this, std::move(c));
  }
  const Deadline until = DeadlineIn(patience_s_);
  for (double backoff = 0.05;; backoff = std::min(backoff * 2, 2.0)) {
    lock.unlock();
    auto c = Connection::Open(target_, 10);
    lock.lock();
    if (c.ok()) {
      if (in_outage_) LogInfo("store: " + target_.shown + " is back");
      in_outage_ = false;
      return Lease(this, std::move(*c));
    }
    if (c.status().code() != StatusCode::kUnavailable || !wait || !WaitsOutOutagesOnThisThread() ||
        patience_s_ <= 0 || stop_waiting_ || Expired(until)) {
      return c.status();
    }
    if (!in_outage_) {
      LogWarning("store: " + c.status().message() + ": waiting up to " +
                 std::to_string(static_cast<int64_t>(patience_s_)) + " s for it to come back");
      in_outage_ = true;
    }
    Deadline retry = DeadlineIn(backoff);
    if (*until < *retry) retry = until;
    outage_cv_.wait_until(lock, *retry, [&] { return stop_waiting_; });
  }
}

Result<TeamConfig> RosterRows::CreateTeam(const std::string& team, const std::string& lead,
                                     const std::string& description) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateMemberName(lead));
  TeamConfig c = NewTeamConfig(team, lead, description, WallSeconds());
  MATES_ASSIGN_OR_RETURN(Lease conn, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, conn->Exec("INSERT INTO mates_teams (name, created_at, config) VALUES ($1, $2, $3) "
                                            "ON CONFLICT DO NOTHING",
                                            {team, Seconds(c.created_at), DumpJson(TeamConfigToJson(c))}));
  if (r.affected() == 0) return Status::AlreadyExists("team '" + team + "' already exists");
  return c;
}

namespace {

// A team's row as a config: the document, or (a team of schema version 1)
// its lead alone. NotFound without the row.
Result<TeamConfig> ConfigOf(const Rows& r, const std::string& team) {
  if (r.size() == 0) return Status::NotFound("no team '" + team + "'");
  if (r.null(0, 0)) {
    double created = 0;
    std::string_view c = r.text(0, 1);
    std::from_chars(c.data(), c.data() + c.size(), created);
    return NewTeamConfig(team, "lead", "", created);
  }
  if (r.text(0, 2) != "t") {
    return Status::Corrupt("the roster of team '" + team + "' is over " + std::to_string(kMaxStateFileBytes) + " bytes");
  }
  auto j = ParseJson(r.text(0, 0));
  if (!j.ok()) return Status::Corrupt("the roster of team '" + team + "': " + j.status().message());
  auto config = TeamConfigFromJson(*j);
  if (!config.ok()) return Status::Corrupt("the roster of team '" + team + "': " + config.status().message());
  return config;
}

const std::string kConfigColumns =
    "CASE WHEN octet_length(config) <= " + std::to_string(kMaxStateFileBytes) +
    " THEN config END, created_at, octet_length(config) IS NULL OR octet_length(config) <= " +
    std::to_string(kMaxStateFileBytes);

}  // namespace

Result<TeamConfig> RosterRows::LoadTeam(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kConfigColumns + " FROM mates_teams WHERE name = $1", {team}));
  return ConfigOf(r, team);
}

Status RosterRows::SetStatuses(const std::string& team,
                          const std::vector<std::pair<std::string, MemberStatus>>& changes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  std::map<std::string, MemberStatus> last;
  for (const auto& [member, status] : changes) {
    if (ValidateName("member name", member).ok()) last[member] = status;  // no other name is in a roster
  }
  if (last.empty()) return Status::Ok();
  // Names are letters, digits, '.', '_', '-': quoted, they need no escape.
  std::string names = "{", statuses = "{";
  for (const auto& [member, status] : last) {
    names += (names.size() > 1 ? ",\"" : "\"") + member + "\"";
    statuses += (statuses.size() > 1 ? ",\"" : "\"") + std::string(MemberStatusName(status)) + "\"";
  }
  names += "}";
  statuses += "}";
  // A concurrent roster change (UpdateTeam holds the row) is waited for and
  // this applies to its result: the SET reads the row's newest version.
  // The roster comes back as jsonb prints it (keys in its order, its
  // spacing): any reader parses it the same.
  const std::string members =
      "coalesce((SELECT jsonb_agg(CASE WHEN ch.status IS NULL THEN e.m ELSE jsonb_set(e.m, '{status}', "
      "to_jsonb(ch.status)) END ORDER BY e.ord) FROM jsonb_array_elements(t.config::jsonb -> 'members') "
      "WITH ORDINALITY AS e(m, ord) LEFT JOIN ch ON ch.name = e.m ->> 'name'), '[]'::jsonb)";
  Result<Rows> r = Status::Ok();
  {
    MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
    // Each status of an agent this host holds is fenced by its lease: the
    // checks and the write are one transaction and one round trip.
    for (const auto& [member, status] : last) store_.Fence(*c, team, member);
    r = c->Exec("WITH ch AS (SELECT * FROM unnest($2::text[], $3::text[]) AS x(name, status)), "
                "upd AS (UPDATE mates_teams t SET config = jsonb_set(t.config::jsonb, '{members}', " +
                    members +
                    ")::text WHERE t.name = $1 AND t.config IS NOT NULL AND octet_length(t.config) <= " +
                    std::to_string(kMaxStateFileBytes) +
                    " AND jsonb_typeof(t.config::jsonb -> 'members') = 'array' RETURNING 1) "
                    "SELECT (SELECT count(*) FROM (SELECT pg_notify($4, '') FROM upd) n)",
                {team, names, statuses, ChannelOf(TeamKey(team))});
  }
  if (r.ok() && r->integer(0, 0) == 1) return Status::Ok();
  // Out of reach, or refused (a stale fencing token): no other way.
  if (!r.ok() && (r.status().code() == StatusCode::kUnavailable ||
                  r.status().code() == StatusCode::kFailedPrecondition)) {
    return r.status();
  }
  // No row changed, or a roster the server could not read as JSON: the
  // long way, which reads it as mates does.
  return UpdateTeam(team, [&](TeamConfig& c) {
           SetStatusesIn(c, changes);
           return Status::Ok();
         })
      .status();
}

Status RosterRows::HasTeam(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT 1 FROM mates_teams WHERE name = $1", {team}));
  if (r.size() == 0) return Status::NotFound("no team '" + team + "'");
  return Status::Ok();
}

Result<TeamConfig> RosterRows::UpdateTeam(const std::string& team, const std::function<Status(TeamConfig&)>& mutate) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<TeamConfig> {
    // NO KEY UPDATE: roster changes still go one at a time, but the rows
    // that name the team (an inbox message, a journal line, a task) are
    // not held up behind one.
    MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kConfigColumns +
                                               " FROM mates_teams WHERE name = $1 FOR NO KEY UPDATE",
                                           {team}));
    MATES_ASSIGN_OR_RETURN(TeamConfig config, ConfigOf(r, team));
    MATES_RETURN_IF_ERROR(mutate(config));
    MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_teams SET config = $2 WHERE name = $1",
                                  {team, DumpJson(TeamConfigToJson(config))})
                              .status());
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(TeamKey(team))}).status());
    return config;
  });
}

Result<Member> RosterRows::AddMember(const std::string& team, Member member) {
  Member added;
  MATES_RETURN_IF_ERROR(UpdateTeam(team, [&](TeamConfig& c) -> Status {
                          MATES_ASSIGN_OR_RETURN(added, AddMemberTo(c, member));
                          return Status::Ok();
                        }).status());
  return added;
}

Status RosterRows::SetMemberStatus(const std::string& team, const std::string& member, MemberStatus status) {
  return UpdateTeam(team, [&](TeamConfig& c) -> Status {
           Member* m = c.Find(member);
           if (m == nullptr) return Status::NotFound("no member '" + member + "' in team '" + c.name + "'");
           m->status = status;
           return Status::Ok();
         })
      .status();
}

// -------------------------------------------------------------- liveness

Result<std::vector<std::string>> RosterRows::ListTeams() {
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT name FROM mates_teams ORDER BY name"));
  std::vector<std::string> out;
  for (int i = 0; i < r.size(); ++i) out.emplace_back(r.text(i, 0));
  return out;
}

Status RosterRows::DeleteTeam(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("DELETE FROM mates_teams WHERE name = $1", {team}));
  if (r.affected() == 0) return Status::NotFound("no team '" + team + "'");
  // Whoever waits on it looks again, and finds it gone.
  for (const std::string& key : {TeamKey(team), LogKey(team), BoardKey(team)}) {
    (void)c->Exec("SELECT pg_notify($1, '')", {ChannelOf(key)});
  }
  return Status::Ok();
}

// ----------------------------------------------------------------- board

}  // namespace mates::pg
