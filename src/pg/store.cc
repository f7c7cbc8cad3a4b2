#include "pg/store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/json.h"
#include "core/names.h"
#include "pg/export.h"
#include "pg/schema.h"
#include "store/task_rules.h"

namespace mates::pg {

namespace {

constexpr size_t kMaxIdle = 8;
constexpr const char* kTaskColumns =
    "id, subject, description, active_form, status, owner, blocked_by, blocks, metadata, created_at, updated_at";

std::string Num(int64_t v) { return std::to_string(v); }

// An inbox row's line, or NULL past the bound on what is read (a row edited
// by hand to hold a gigabyte is not loaded).
const std::string kBoundedLine =
    "CASE WHEN octet_length(line) <= " + std::to_string(kMaxStateFileBytes) + " THEN line END";

std::string Seconds(double v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, p) : "0";
}

// "{1,2,3}" (PostgreSQL's text form of a bigint[]).
std::vector<int64_t> IdArray(std::string_view s) {
  std::vector<int64_t> out;
  if (s.size() < 2) return out;
  s = s.substr(1, s.size() - 2);
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    int64_t v = 0;
    if (std::from_chars(part.data(), part.data() + part.size(), v).ec == std::errc()) out.push_back(v);
    s.remove_prefix(comma == std::string_view::npos ? s.size() : comma + 1);
  }
  return out;
}

std::string ArrayText(const std::vector<int64_t>& ids) {
  std::string s = "{";
  for (size_t i = 0; i < ids.size(); ++i) s += (i > 0 ? "," : "") + Num(ids[i]);
  return s + "}";
}

// A message as its one stored line (no newline).
std::string LineOf(const Message& m) {
  std::string line = MessageToLine(m);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

Result<Task> TaskOf(const Rows& r, int row) {
  Task t;
  t.id = r.integer(row, 0);
  t.subject = std::string(r.text(row, 1));
  t.description = std::string(r.text(row, 2));
  t.active_form = std::string(r.text(row, 3));
  MATES_ASSIGN_OR_RETURN(t.status, ParseTaskStatus(r.text(row, 4)));
  t.owner = std::string(r.text(row, 5));
  t.blocked_by = IdArray(r.text(row, 6));
  t.blocks = IdArray(r.text(row, 7));
  t.metadata_json = std::string(r.text(row, 8));
  std::string_view c = r.text(row, 9), u = r.text(row, 10);
  std::from_chars(c.data(), c.data() + c.size(), t.created_at);
  std::from_chars(u.data(), u.data() + u.size(), t.updated_at);
  return t;
}

// A row that names a team that is not there is "no such team".
Status NoTeamIfForeignKey(Status s, const std::string& team) {
  if (s.code() == StatusCode::kInvalidArgument && s.message().find("foreign key") != std::string::npos) {
    return Status::NotFound("no team '" + team + "'");
  }
  return s;
}

Status CheckNames(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  return ValidateName("member name", member);
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const Target& target) {
  std::unique_ptr<Store> s(new Store(target));
  MATES_ASSIGN_OR_RETURN(Connection c, Connection::Open(target, 10));
  MATES_RETURN_IF_ERROR(CheckSchema(c));
  s->Give(std::move(c));
  return s;
}

Store::~Store() {
  {
    std::lock_guard<std::mutex> lock(keeper_mu_);
    stopping_ = true;
  }
  keeper_cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
}

void Store::Give(Connection c) {
  // One left in a transaction (a rollback that failed) would hand its
  // locks to the next user: closed instead, which ends it.
  if (!c.idle()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdle) idle_.push_back(std::move(c));
}

Store::Lease::~Lease() {
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

Result<Store::Lease> Store::Acquire(bool wait) {
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
    if (c.status().code() != StatusCode::kUnavailable || !wait || patience_s_ <= 0 || stop_waiting_ ||
        Expired(until)) {
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

Result<TeamConfig> Store::CreateTeam(const std::string& team, const std::string& lead,
                                     const std::string& description) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateMemberName(lead));
  TeamConfig c = NewTeamConfig(team, lead, description, WallSeconds());
  MATES_ASSIGN_OR_RETURN(Lease conn, Acquire());
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

Result<TeamConfig> Store::LoadTeam(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kConfigColumns + " FROM mates_teams WHERE name = $1", {team}));
  return ConfigOf(r, team);
}

Status Store::SetStatuses(const std::string& team,
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
    MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
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
  if (!r.ok() && r.status().code() == StatusCode::kUnavailable) return r.status();
  // No row changed, or a roster the server could not read as JSON: the
  // long way, which reads it as mates does.
  return UpdateTeam(team, [&](TeamConfig& c) {
           SetStatusesIn(c, changes);
           return Status::Ok();
         })
      .status();
}

Status Store::HasTeam(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT 1 FROM mates_teams WHERE name = $1", {team}));
  if (r.size() == 0) return Status::NotFound("no team '" + team + "'");
  return Status::Ok();
}

Result<TeamConfig> Store::UpdateTeam(const std::string& team, const std::function<Status(TeamConfig&)>& mutate) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
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

Result<Member> Store::AddMember(const std::string& team, Member member) {
  Member added;
  MATES_RETURN_IF_ERROR(UpdateTeam(team, [&](TeamConfig& c) -> Status {
                          MATES_ASSIGN_OR_RETURN(added, AddMemberTo(c, member));
                          return Status::Ok();
                        }).status());
  return added;
}

Status Store::SetMemberStatus(const std::string& team, const std::string& member, MemberStatus status) {
  return UpdateTeam(team, [&](TeamConfig& c) -> Status {
           Member* m = c.Find(member);
           if (m == nullptr) return Status::NotFound("no member '" + member + "' in team '" + c.name + "'");
           m->status = status;
           return Status::Ok();
         })
      .status();
}

// -------------------------------------------------------------- liveness

namespace {
std::string LivenessKey(const std::string& team, const std::string& agent) { return "a/" + team + "/" + agent; }
}  // namespace

struct Store::Liveness::Held {
  std::mutex mu;
  Connection conn;      // guarded by mu
  std::string key, who;
  bool released = false;  // guarded by mu: the Liveness went; never taken again
  bool lost = false;      // guarded by mu: another host has it (said once)
  std::function<void()> on_lost;  // guarded by mu: called under it, once
  Store* store = nullptr;         // which keeps it (outlives it)
};

bool Store::Liveness::StillHeld() {
  if (!held_) return true;
  {
    std::lock_guard<std::mutex> lock(held_->mu);
    if (held_->released || held_->lost) return false;
    if (held_->conn.ok() && !held_->conn.HungUp()) return true;
  }
  held_->store->Retake(*held_);
  std::lock_guard<std::mutex> lock(held_->mu);
  // Out of reach still: nobody else can take it either (the keeper goes on).
  return !held_->released && !held_->lost;
}

void Store::Liveness::OnLost(std::function<void()> lost) {
  if (!held_) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->on_lost = std::move(lost);
}

Result<Store::Liveness> Store::HoldLiveness(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(CheckNames(team, agent));
  // A connection of its own: the lock lives and dies with it.
  MATES_ASSIGN_OR_RETURN(Connection c, Connection::Open(target_, 10));
  MATES_ASSIGN_OR_RETURN(Rows r, c.Exec("SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                                        {LivenessKey(team, agent)}));
  if (r.text(0, 0) != "t") {
    return Status::Conflict("'" + agent + "' of team '" + team + "' is hosted by another process");
  }
  auto held = std::make_shared<Liveness::Held>();
  held->conn = std::move(c);
  held->key = LivenessKey(team, agent);
  held->who = "'" + agent + "' of team '" + team + "'";
  held->store = this;
  {
    std::lock_guard<std::mutex> lock(keeper_mu_);
    kept_.push_back(held);
    if (!keeper_.joinable()) {
      keeper_ = std::thread([this] {
        NameThisThread("mates-liveness");
        RunGuarded("the liveness keeper", [this] { KeepLiveness(); });
      });
    }
  }
  return Liveness(std::move(held));
}

void Store::KeepLiveness() {
  std::unique_lock<std::mutex> lock(keeper_mu_);
  for (;;) {
    keeper_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    if (stopping_) return;
    std::vector<std::shared_ptr<Liveness::Held>> held;
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (auto h = it->lock()) {
        held.push_back(std::move(h));
        ++it;
      } else {
        it = kept_.erase(it);
      }
    }
    lock.unlock();
    for (const auto& h : held) Retake(*h);
    held.clear();
    lock.lock();
  }
}

void Store::Retake(Liveness::Held& h) {
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.released) return;
  if (h.conn.ok() && h.conn.Exec("SELECT 1").ok()) return;
  auto c = Connection::Open(target_, 2);
  if (!c.ok()) return;  // still out of reach: the next look tries again
  auto r = c->Exec("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", {h.key});
  if (!r.ok()) return;
  if (r->text(0, 0) == "t") {
    h.conn = std::move(*c);
    LogInfo("the liveness lock of " + h.who + " is held again (its connection was lost)");
    h.lost = false;
    return;
  }
  if (!h.lost) {
    LogWarning(h.who + " is hosted by another process now: its liveness lock was taken while this one's "
               "connection was lost");
  }
  h.lost = true;
  if (h.on_lost) {
    // Its holder stops hosting it: the lock is the other host's for good.
    // Called under h.mu, so the Liveness (and what the call touches) cannot
    // go meanwhile.
    h.released = true;
    auto lost = std::move(h.on_lost);
    h.on_lost = nullptr;
    lost();
  }
}

Store::Liveness::~Liveness() {
  if (!held_) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->released = true;
  if (held_->conn.ok()) (void)held_->conn.ExecScript("SELECT pg_advisory_unlock_all()");
  held_->conn = Connection();
}

Result<bool> Store::IsHosted(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(CheckNames(team, agent));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  // Taken at once if nobody holds it; then given back in the same statement.
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT CASE WHEN pg_try_advisory_lock(k) THEN NOT pg_advisory_unlock(k) "
                                         "ELSE true END FROM (SELECT hashtextextended($1, 0) AS k) x",
                                         {LivenessKey(team, agent)}));
  return r.text(0, 0) == "t";
}

// -------------------------------------------------------------- journals

namespace {

// The lines as one JSON array (a single parameter, however many lines).
std::string LinesParam(const std::vector<std::string>& lines) {
  Json arr = Json::array();
  for (const auto& l : lines) arr.push_back(l);
  return DumpJson(arr);
}

// With a NOTIFY on JournalKey(team) (one: the same notification in one
// transaction is sent once).
const char* const kPutJournal =
    "WITH put AS (INSERT INTO mates_journals (team, member, seq, line) "
    "SELECT $1, $2, $3::bigint + x.ord - 1, x.line "
    "FROM jsonb_array_elements_text($4::jsonb) WITH ORDINALITY AS x(line, ord) "
    "ON CONFLICT (team, member, seq) DO UPDATE SET line = EXCLUDED.line RETURNING 1) "
    "SELECT pg_notify($5, '') FROM put";

}  // namespace

Result<uint64_t> Store::JournalBytes(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows size, c->Exec("SELECT coalesce(sum(octet_length(line)), 0) FROM mates_journals "
                                            "WHERE team = $1 AND member = $2",
                                            {team, member}));
  return static_cast<uint64_t>(size.integer(0, 0));
}

Result<std::vector<std::string>> Store::JournalLines(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  const std::string who = "the journal of '" + member + "' in team '" + team + "'";
  MATES_ASSIGN_OR_RETURN(uint64_t size, JournalBytes(team, member));
  if (size > kMaxJournalBytes) {
    return Status::Corrupt(who + " is over " + std::to_string(kMaxJournalBytes >> 20) + " MiB");
  }
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT seq, CASE WHEN octet_length(line) <= " +
                                             std::to_string(kMaxJournalLineBytes) +
                                             " THEN line END FROM mates_journals "
                                             "WHERE team = $1 AND member = $2 ORDER BY seq",
                                         {team, member}));
  std::vector<std::string> lines;
  lines.reserve(static_cast<size_t>(r.size()));
  for (int i = 0; i < r.size(); ++i) {
    if (r.integer(i, 0) != static_cast<int64_t>(lines.size())) {
      LogWarning(who + " has no line " + std::to_string(lines.size()) + ": what follows is left out");
      break;
    }
    if (r.null(i, 1)) return Status::Corrupt(who + " has a line over " + std::to_string(kMaxJournalLineBytes >> 20) + " MiB");
    lines.emplace_back(r.text(i, 1));
  }
  return lines;
}

Status Store::PutJournal(const std::string& team, const std::string& member, int64_t first,
                         const std::vector<std::string>& lines) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (first < 0) return Status::InvalidArgument("a journal's lines are numbered from 0");
  if (lines.empty()) return Status::Ok();
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return c->Exec(kPutJournal, {team, member, Num(first), LinesParam(lines), ChannelOf(JournalKey(team))}).status();
}

Status Store::ReplaceJournal(const std::string& team, const std::string& member,
                             const std::vector<std::string>& lines) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Status {
    MATES_RETURN_IF_ERROR(
        c->Exec("DELETE FROM mates_journals WHERE team = $1 AND member = $2", {team, member}).status());
    if (lines.empty()) return Status::Ok();
    return c->Exec(kPutJournal, {team, member, "0", LinesParam(lines), ChannelOf(JournalKey(team))}).status();
  });
}

// -------------------------------------------------------------- activity

Status Store::PutActivity(const std::string& team, const std::string& member, const std::string& doc) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (doc.size() > kMaxStateFileBytes) {
    return Status::InvalidArgument("an activity document may be " + std::to_string(kMaxStateFileBytes) +
                                   " bytes at most");
  }
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire(/*wait=*/false));
  auto r = c->Exec(
      "WITH up AS (INSERT INTO mates_activity (team, member, doc) VALUES ($1, $2, $3) "
      "ON CONFLICT (team, member) DO UPDATE SET doc = EXCLUDED.doc RETURNING 1) "
      "SELECT pg_notify($4, '') FROM up",
      {team, member, doc, ChannelOf(ActivityKey(team))});
  if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
  return Status::Ok();
}

Result<std::vector<std::pair<std::string, std::string>>> Store::Activities(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT member, CASE WHEN octet_length(doc) <= " +
                                             std::to_string(kMaxStateFileBytes) +
                                             " THEN doc END FROM mates_activity WHERE team = $1 ORDER BY member",
                                         {team}));
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < r.size(); ++i) {
    if (r.null(i, 1)) {
      LogWarning("activity of " + std::string(r.text(i, 0)) + "@" + team + ": over " +
                 std::to_string(kMaxStateFileBytes) + " bytes, left out");
      continue;
    }
    out.emplace_back(std::string(r.text(i, 0)), std::string(r.text(i, 1)));
  }
  return out;
}

// ------------------------------------------------------------- mailboxes

Status Store::Append(const std::string& team, const std::string& member, const Message& m) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (m.id.empty()) return Status::InvalidArgument("a message needs an id");
  for (const std::string* field : {&m.content, &m.summary, &m.feedback}) {
    if (field->size() > kMaxMessageBytes) {
      return Status::InvalidArgument("a message may be " + std::to_string(kMaxMessageBytes) + " bytes at most");
    }
  }
  std::string line = LineOf(m);
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  // The NOTIFY goes out with the row's commit, and only for a new row.
  auto r = c->Exec(
      "WITH ins AS (INSERT INTO mates_inbox (team, member, msg_id, line) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (team, member, msg_id) DO NOTHING RETURNING seq) "
      "SELECT pg_notify($5, '') FROM ins",
      {team, member, m.id, line, ChannelOf(InboxKey(team, member))});
  if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
  return Status::Ok();
}

Result<std::vector<Message>> Store::Peek(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kBoundedLine +
                                             " FROM mates_inbox WHERE team = $1 AND member = $2 ORDER BY seq",
                                         {team, member}));
  std::vector<Message> out;
  for (int i = 0; i < r.size(); ++i) {
    auto m = ParseMessageLine(r.text(i, 0));
    if (m.ok()) out.push_back(std::move(*m));
  }
  return out;
}

Result<size_t> Store::PendingCount(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT count(*) FROM mates_inbox WHERE team = $1 AND member = $2",
                                         {team, member}));
  return static_cast<size_t>(r.integer(0, 0));
}

Result<std::vector<std::pair<std::string, std::vector<Message>>>> Store::PendingByMember(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT member, ") + kBoundedLine +
                                             " FROM mates_inbox WHERE team = $1 ORDER BY member, seq",
                                         {team}));
  std::vector<std::pair<std::string, std::vector<Message>>> out;
  for (int i = 0; i < r.size(); ++i) {
    std::string member(r.text(i, 0));
    if (out.empty() || out.back().first != member) out.emplace_back(member, std::vector<Message>());
    auto m = ParseMessageLine(r.text(i, 1));
    if (m.ok()) out.back().second.push_back(std::move(*m));
  }
  return out;
}

Store::Batch::~Batch() {
  // Not committed: the rows stay, for the next drain.
  if (lease && (*lease)->ok()) (void)(*lease)->ExecScript("ROLLBACK");
}

Result<Store::Batch> Store::BeginDrain(const std::string& team, const std::string& member,
                                       const AlreadyDelivered& already_delivered) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  Batch b;
  MATES_RETURN_IF_ERROR(c->ExecScript("BEGIN"));
  b.lease.emplace(std::move(c));
  Connection& conn = **b.lease;
  // One drainer per inbox at a time; the lock goes with the transaction.
  MATES_RETURN_IF_ERROR(
      conn.Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {InboxKey(team, member)}).status());
  MATES_ASSIGN_OR_RETURN(Rows r, conn.Exec(std::string("SELECT seq, ") + kBoundedLine +
                                               " FROM mates_inbox WHERE team = $1 AND member = $2 ORDER BY seq",
                                           {team, member}));
  for (int i = 0; i < r.size(); ++i) {
    b.rows.push_back(r.integer(i, 0));
    auto m = r.null(i, 1) ? Result<Message>(Status::InvalidArgument("over " + std::to_string(kMaxStateFileBytes) +
                                                                     " bytes"))
                          : ParseMessageLine(r.text(i, 1));
    if (!m.ok()) {
      LogWarning("inbox of " + member + "@" + team + ": dropped an unreadable row: " + m.status().message());
      continue;
    }
    if (already_delivered && already_delivered(m->id)) continue;
    b.messages.push_back(std::move(*m));
  }
  return b;
}

Status Store::Commit(Batch& batch) {
  if (!batch.lease) return Status::FailedPrecondition("this drain was committed already");
  Connection& conn = **batch.lease;
  Status s = Status::Ok();
  if (!batch.rows.empty()) {
    s = conn.Exec("DELETE FROM mates_inbox WHERE seq = ANY($1::bigint[])", {ArrayText(batch.rows)}).status();
  }
  if (s.ok()) s = conn.ExecScript("COMMIT");
  if (!s.ok()) (void)conn.ExecScript("ROLLBACK");
  batch.lease.reset();
  return s;
}

Result<std::vector<Message>> Store::Drain(const std::string& team, const std::string& member,
                                          const AlreadyDelivered& already_delivered) {
  MATES_ASSIGN_OR_RETURN(Batch b, BeginDrain(team, member, already_delivered));
  MATES_RETURN_IF_ERROR(Commit(b));
  return std::move(b.messages);
}

// ----------------------------------------------------------- message log

namespace {

// Messages from rows of (seq, bounded line): unreadable ones are skipped
// with a warning, as the file log skips a bad line.
std::vector<Message> LoggedMessages(const Rows& r, const std::string& team, int64_t* last_seq) {
  std::vector<Message> out;
  for (int i = 0; i < r.size(); ++i) {
    if (last_seq != nullptr) *last_seq = std::max(*last_seq, r.integer(i, 0));
    auto m = r.null(i, 1) ? Result<Message>(Status::InvalidArgument("over " + std::to_string(kMaxStateFileBytes) +
                                                                     " bytes"))
                          : ParseMessageLine(r.text(i, 1));
    if (!m.ok()) {
      LogWarning("message log of " + team + ": skipped an unreadable row: " + m.status().message());
      continue;
    }
    out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace

Status Store::LogMessage(const std::string& team, const Message& m) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("message id", m.id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  // One at a time per team, the lock held to the commit: a number taken
  // becomes visible before the next is taken, so a reader that moved past
  // it (ReadLog's cursor) cannot miss one that commits late.
  Status s = InTransaction(*c, [&]() -> Status {
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {LogKey(team)}).status());
    return c->Exec("WITH ins AS (INSERT INTO mates_messages (team, msg_id, line) VALUES ($1, $2, $3) "
                   "ON CONFLICT (team, msg_id) DO NOTHING RETURNING seq) "
                   "SELECT pg_notify($4, '') FROM ins",
                   {team, m.id, LineOf(m), ChannelOf(LogKey(team))})
        .status();
  });
  return NoTeamIfForeignKey(s, team);
}

Result<std::optional<Message>> Store::FindLogged(const std::string& team, const std::string& id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("message id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT seq, " + kBoundedLine +
                                             " FROM mates_messages WHERE team = $1 AND msg_id = $2",
                                         {team, id}));
  std::vector<Message> found = LoggedMessages(r, team, nullptr);
  if (found.empty()) return std::optional<Message>();
  return std::optional<Message>(std::move(found[0]));
}

namespace {

// The rows of the log that `where` picks, `order`ed ("" or " DESC"): at
// most $2 of them, and of those the first always, then as many as fit in
// $3 bytes together; oldest first.
std::string SizedLogPage(const std::string& where, const std::string& order) {
  return "SELECT seq, line FROM (SELECT seq, line, row_number() OVER (ORDER BY seq" + order +
         ") AS n, sum(coalesce(octet_length(line), 0)) OVER (ORDER BY seq" + order +
         ") AS upto FROM (SELECT seq, " + kBoundedLine + " AS line FROM mates_messages WHERE " + where +
         " ORDER BY seq" + order + " LIMIT $2) page) sized WHERE n = 1 OR upto <= $3 ORDER BY seq";
}

std::string ByteBound(size_t max_bytes) {
  return Num(max_bytes == 0 || max_bytes > static_cast<size_t>(INT64_MAX) ? INT64_MAX
                                                                          : static_cast<int64_t>(max_bytes));
}

}  // namespace

Result<std::vector<Message>> Store::ReadLog(const std::string& team, int64_t* cursor, size_t max, size_t max_bytes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(SizedLogPage("team = $1 AND seq > $4", ""),
                                         {team, Num(static_cast<int64_t>(max)), ByteBound(max_bytes), Num(*cursor)}));
  return LoggedMessages(r, team, cursor);
}

Result<std::vector<Message>> Store::TailLog(const std::string& team, size_t n, int64_t* cursor, size_t max_bytes) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(SizedLogPage("team = $1", " DESC"),
                                         {team, Num(static_cast<int64_t>(n)), ByteBound(max_bytes)}));
  if (cursor != nullptr) *cursor = 0;
  return LoggedMessages(r, team, cursor);
}

// -------------------------------------------------------------- requests

namespace {

const std::string kBoundedDoc =
    "CASE WHEN octet_length(doc) <= " + std::to_string(kMaxStateFileBytes) + " THEN doc END";

Result<ProtocolRequest> RequestOf(const Rows& r, int row, const std::string& team) {
  if (r.null(row, 0)) return Status::Corrupt("a request of team '" + team + "' is too large to read");
  MATES_ASSIGN_OR_RETURN(Json j, ParseJson(r.text(row, 0)));
  auto req = ProtocolRequestFromJson(j);
  if (!req.ok()) return Status::Corrupt("a request of team '" + team + "': " + req.status().message());
  return req;
}

}  // namespace

Status Store::CreateRequest(const std::string& team, const ProtocolRequest& r) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", r.id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  auto ins = c->Exec("INSERT INTO mates_requests (team, id, doc, created_at) VALUES ($1, $2, $3, $4) "
                     "ON CONFLICT DO NOTHING",
                     {team, r.id, DumpJson(ProtocolRequestToJson(r)), Seconds(r.created_at)});
  if (!ins.ok()) return NoTeamIfForeignKey(ins.status(), team);
  if (ins->affected() == 0) return Status::AlreadyExists("request " + r.id + " exists already");
  return Status::Ok();
}

Result<ProtocolRequest> Store::GetRequest(const std::string& team, const std::string& id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc + " FROM mates_requests WHERE team = $1 AND id = $2",
                                         {team, id}));
  if (r.size() == 0) return Status::NotFound("no request '" + id + "'");
  return RequestOf(r, 0, team);
}

Result<ProtocolRequest> Store::ResolveRequest(const std::string& team, const std::string& id, bool approve,
                                              const std::string& response) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateName("request id", id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Result<ProtocolRequest> {
    MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc +
                                               " FROM mates_requests WHERE team = $1 AND id = $2 FOR UPDATE",
                                           {team, id}));
    if (r.size() == 0) return Status::NotFound("no request '" + id + "'");
    MATES_ASSIGN_OR_RETURN(ProtocolRequest req, RequestOf(r, 0, team));
    if (req.status != RequestState::kPending) {
      return Status::FailedPrecondition("request " + req.id + " was already answered (" +
                                        std::string(RequestStateName(req.status)) + ")");
    }
    req.status = approve ? RequestState::kApproved : RequestState::kRejected;
    req.response = response;
    req.resolved_at = WallSeconds();
    MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_requests SET doc = $3 WHERE team = $1 AND id = $2",
                                  {team, id, DumpJson(ProtocolRequestToJson(req))})
                              .status());
    return req;
  });
}

Result<std::vector<ProtocolRequest>> Store::ListRequests(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT " + kBoundedDoc +
                                             " FROM mates_requests WHERE team = $1 ORDER BY created_at, id",
                                         {team}));
  std::vector<ProtocolRequest> out;
  for (int i = 0; i < r.size(); ++i) {
    auto req = RequestOf(r, i, team);
    if (req.ok()) out.push_back(std::move(*req));
  }
  return out;
}

// ---------------------------------------------------------------- merges

namespace {

const std::string kBoundedMerge =
    "CASE WHEN octet_length(doc) <= " + std::to_string(kMaxMergeBytes) + " THEN doc END";

Result<MergeRequest> MergeOf(const Rows& r, int row, const std::string& team) {
  const std::string which = "merge request " + std::string(r.text(row, 0)) + " of team '" + team + "'";
  if (r.null(row, 1)) return Status::Corrupt(which + " is too large to read");
  auto j = ParseJson(r.text(row, 1));
  if (!j.ok()) return Status::Corrupt(which + ": " + j.status().message());
  auto m = MergeRequestFromJson(*j);
  if (!m.ok()) return Status::Corrupt(which + ": " + m.status().message());
  if (m->id != r.integer(row, 0)) return Status::Corrupt(which + " holds merge " + std::to_string(m->id));
  return m;
}

Result<std::string> MergeDoc(const MergeRequest& m) {
  std::string doc = DumpJson(MergeRequestToJson(m));
  if (doc.size() > kMaxMergeBytes) {
    return Status::InvalidArgument("a merge request may be " + std::to_string(kMaxMergeBytes) + " bytes at most");
  }
  return doc;
}

Status CheckMergeId(int64_t id) {
  if (id < 1 || id > kMaxTaskId) return Status::InvalidArgument("merge ids are numbers from 1");
  return Status::Ok();
}

Status NoMerge(int64_t id, const std::string& team) {
  return Status::NotFound("no merge request " + std::to_string(id) + " in team '" + team + "'");
}

}  // namespace

Result<MergeRequest> Store::CreateMerge(const std::string& team, MergeRequest m) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Result<MergeRequest> {
    // One creator at a time per team: ids are dense and never reused.
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {MergeKey(team)}).status());
    MATES_ASSIGN_OR_RETURN(Rows last, c->Exec("SELECT coalesce(max(id), 0) FROM mates_merges WHERE team = $1", {team}));
    const int64_t id = last.integer(0, 0) + 1;
    if (id > kMaxTaskId) return Status::FailedPrecondition("team '" + team + "' has no merge id left");
    m.id = id;
    m.created_at = m.updated_at = WallSeconds();
    MATES_ASSIGN_OR_RETURN(std::string doc, MergeDoc(m));
    auto ins = c->Exec("INSERT INTO mates_merges (team, id, doc) VALUES ($1, $2, $3)", {team, Num(id), doc});
    if (!ins.ok()) return NoTeamIfForeignKey(ins.status(), team);
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(MergeKey(team))}).status());
    return m;
  });
}

Result<MergeRequest> Store::GetMerge(const std::string& team, int64_t id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(CheckMergeId(id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT id, " + kBoundedMerge + " FROM mates_merges WHERE team = $1 AND id = $2",
                                         {team, Num(id)}));
  if (r.size() == 0) return NoMerge(id, team);
  return MergeOf(r, 0, team);
}

Result<std::vector<MergeRequest>> Store::ListMerges(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT id, " + kBoundedMerge + " FROM mates_merges WHERE team = $1 ORDER BY id",
                                         {team}));
  std::vector<MergeRequest> out;
  for (int i = 0; i < r.size(); ++i) {
    auto m = MergeOf(r, i, team);
    if (m.ok()) {
      out.push_back(std::move(*m));
    } else {
      LogDebug("merges: skipping " + m.status().message());
    }
  }
  return out;
}

Result<MergeRequest> Store::UpdateMerge(const std::string& team, int64_t id,
                                        const std::function<Status(MergeRequest&)>& mutate) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(CheckMergeId(id));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Result<MergeRequest> {
    MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT id, " + kBoundedMerge +
                                               " FROM mates_merges WHERE team = $1 AND id = $2 FOR UPDATE",
                                           {team, Num(id)}));
    if (r.size() == 0) return NoMerge(id, team);
    MATES_ASSIGN_OR_RETURN(MergeRequest m, MergeOf(r, 0, team));
    MATES_RETURN_IF_ERROR(mutate(m));
    m.id = id;
    m.updated_at = WallSeconds();
    MATES_ASSIGN_OR_RETURN(std::string doc, MergeDoc(m));
    MATES_RETURN_IF_ERROR(
        c->Exec("UPDATE mates_merges SET doc = $3 WHERE team = $1 AND id = $2", {team, Num(id), doc}).status());
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(MergeKey(team))}).status());
    return m;
  });
}

// ----------------------------------------------------------------- teams

Result<std::vector<std::string>> Store::ListTeams() {
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT name FROM mates_teams ORDER BY name"));
  std::vector<std::string> out;
  for (int i = 0; i < r.size(); ++i) out.emplace_back(r.text(i, 0));
  return out;
}

Status Store::DeleteTeam(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("DELETE FROM mates_teams WHERE name = $1", {team}));
  if (r.affected() == 0) return Status::NotFound("no team '" + team + "'");
  // Whoever waits on it looks again, and finds it gone.
  for (const std::string& key : {TeamKey(team), LogKey(team), BoardKey(team)}) {
    (void)c->Exec("SELECT pg_notify($1, '')", {ChannelOf(key)});
  }
  return Status::Ok();
}

// ----------------------------------------------------------------- board

Result<Task> Store::CreateTask(const std::string& team, const TaskDraft& draft) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  if (draft.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task's subject cannot be empty");
  }
  std::string metadata = "{}";
  if (!draft.metadata_json.empty()) {
    MATES_ASSIGN_OR_RETURN(Json md, ParseTaskMetadata(draft.metadata_json));
    metadata = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckTaskMetadataSize(metadata));
  }
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Result<Task> {
    // Ids are allocated, and the dependency graph changed, one writer at a
    // time per board (UpdateTask takes the same lock).
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {BoardKey(team)}).status());
    std::vector<int64_t> blockers;
    for (int64_t b : draft.blocked_by) {
      if (std::find(blockers.begin(), blockers.end(), b) == blockers.end()) blockers.push_back(b);
    }
    if (!blockers.empty()) {
      MATES_ASSIGN_OR_RETURN(Rows have, c->Exec("SELECT count(*) FROM mates_tasks WHERE team = $1 AND "
                                                "id = ANY($2::bigint[]) AND status <> 'deleted'",
                                                {team, ArrayText(blockers)}));
      if (have.integer(0, 0) != static_cast<int64_t>(blockers.size())) {
        return Status::NotFound("a task it is blocked by does not exist");
      }
    }
    std::string now = Seconds(WallSeconds());
    auto r = c->Exec(std::string("INSERT INTO mates_tasks (team, id, subject, description, active_form, status, "
                                 "blocked_by, metadata, created_at, updated_at) "
                                 "SELECT $1, COALESCE(max(id), 0) + 1, $2, $3, $4, 'pending', $5::bigint[], $6, "
                                 "$7, $7 FROM mates_tasks WHERE team = $1 RETURNING ") +
                         kTaskColumns,
                     {team, draft.subject, draft.description, draft.active_form, ArrayText(blockers), metadata, now});
    if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(*r, 0));
    if (!blockers.empty()) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocks = array_append(blocks, $3) "
                                    "WHERE team = $1 AND id = ANY($2::bigint[])",
                                    {team, ArrayText(blockers), Num(t.id)})
                                .status());
    }
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(BoardKey(team))}).status());
    return t;
  });
}

Result<Task> Store::GetTask(const std::string& team, int64_t id) {
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kTaskColumns +
                                             " FROM mates_tasks WHERE team = $1 AND id = $2",
                                         {team, Num(id)}));
  if (r.size() == 0) return NoTask(id);
  return TaskOf(r, 0);
}

Result<std::vector<Task>> Store::ListTasks(const std::string& team, bool include_deleted) {
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kTaskColumns +
                                             " FROM mates_tasks WHERE team = $1 AND (status <> 'deleted' OR $2) "
                                             "ORDER BY id",
                                         {team, include_deleted ? "t" : "f"}));
  std::vector<Task> out;
  for (int i = 0; i < r.size(); ++i) {
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, i));
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::optional<Task>> Store::ClaimNext(const std::string& team, const std::string& owner,
                                             ClaimOutlook* outlook) {
  MATES_RETURN_IF_ERROR(CheckNames(team, owner));
  const int64_t count_up_to = outlook != nullptr ? std::max<int64_t>(outlook->count_up_to, 0) : 0;
  if (outlook != nullptr) *outlook = ClaimOutlook{};
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  if (outlook != nullptr) {
    // mates_claim_look (schema.cc): the same claim, then what it left.
    MATES_ASSIGN_OR_RETURN(
        Rows r, c->Exec("SELECT (c.claimed).id, (c.claimed).subject, (c.claimed).description, "
                        "(c.claimed).active_form, (c.claimed).status, (c.claimed).owner, (c.claimed).blocked_by, "
                        "(c.claimed).blocks, (c.claimed).metadata, (c.claimed).created_at, (c.claimed).updated_at, "
                        "c.unowned_left, c.assigned_to FROM mates_claim_look($1, $2, $3, $4) c",
                        {team, owner, Seconds(WallSeconds()), Num(count_up_to)}));
    if (r.size() != 1) return Status::Internal("mates_claim_look returned " + Num(r.size()) + " rows");
    outlook->unowned = r.integer(0, 11);
    std::string_view names = r.text(0, 12);
    for (size_t at = 0; at < names.size();) {
      size_t end = std::min(names.find(' ', at), names.size());
      std::string name(names.substr(at, end - at));
      // A row written by hand with a name no claimer can have wakes nobody.
      if (ValidateName("member name", name).ok()) outlook->assigned_to.push_back(std::move(name));
      at = end + 1;
    }
    if (r.null(0, 0)) return std::optional<Task>();
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, 0));
    return std::optional<Task>(std::move(t));
  }
  // mates_claim_next (schema.cc): assigned first, then unowned, by id,
  // skipping rows other claimers hold. A claim notifies no one: it makes
  // nothing claimable.
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kTaskColumns +
                                             " FROM mates_claim_next($1, $2, $3)",
                                         {team, owner, Seconds(WallSeconds())}));
  if (r.size() == 0) return std::optional<Task>();
  MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, 0));
  return std::optional<Task>(std::move(t));
}

Result<std::shared_ptr<ClaimLine>> Store::ClaimLineOf(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  std::lock_guard<std::mutex> lock(lines_mu_);
  auto it = lines_.find(team);
  if (it != lines_.end()) return it->second.line;
  Line l;
  l.line = ClaimLine::Told([this, team](int64_t id, const TaskPatch& patch, const Caller& caller) {
    return UpdateTask(team, id, patch, caller);
  });
  ClaimLine* line = l.line.get();
  MATES_ASSIGN_OR_RETURN(l.changes, listener_.Subscribe(BoardKey(team), [line](int64_t wanted) { line->Changed(wanted); }));
  return lines_.emplace(team, std::move(l)).first->second.line;
}

Result<std::optional<Task>> Store::CompleteIfInProgress(const std::string& team, int64_t id,
                                                        const std::string& owner) {
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  // The NOTIFY says how many tasks it left claimable, as far as this
  // statement sees (a blocker completed at the same moment by another is
  // not seen: a host's line wakes one at least, and the look's outlook
  // wakes the rest), so that a host wakes that many idle teammates at once.
  MATES_ASSIGN_OR_RETURN(
      Rows r, c->Exec(std::string("WITH upd AS (UPDATE mates_tasks SET status = 'completed', updated_at = $4 "
                                  "WHERE team = $1 AND id = $2 AND owner = $3 AND status = 'in_progress' "
                                  "RETURNING *) SELECT ") +
                          kTaskColumns +
                          ", (SELECT count(*) FROM (SELECT pg_notify($5, (SELECT count(*) FROM mates_tasks d "
                          "WHERE d.team = $1 AND d.id = ANY(u.blocks) AND d.status = 'pending' AND "
                          "NOT EXISTS (SELECT 1 FROM unnest(d.blocked_by) AS bid WHERE bid <> $2 AND (SELECT b.status FROM "
                          "mates_tasks b WHERE b.team = d.team AND b.id = bid) NOT IN ('completed', 'deleted')))::text) "
                          "FROM upd u) n) FROM upd",
                      {team, Num(id), owner, Seconds(WallSeconds()), ChannelOf(BoardKey(team))}));
  if (r.size() != 1) return std::optional<Task>();
  MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, 0));
  return std::optional<Task>(std::move(t));
}

Result<Task> Store::Complete(const std::string& team, int64_t id, const std::string& owner) {
  MATES_RETURN_IF_ERROR(CheckNames(team, owner));
  MATES_ASSIGN_OR_RETURN(std::optional<Task> done, CompleteIfInProgress(team, id, owner));
  if (done) return std::move(*done);
  MATES_ASSIGN_OR_RETURN(Task t, GetTask(team, id));
  return Status::Conflict("task #" + Num(id) + " is " + std::string(TaskStatusName(t.status)) +
                          (t.owner.empty() ? "" : ", owned by '" + t.owner + "'") + ", not in progress for '" +
                          owner + "'");
}

namespace {

// The board's tasks by id, as the update rules see them.
struct BoardRows {
  std::map<int64_t, Task> tasks;
  TaskLookup lookup() const {
    return [this](int64_t id) -> const Task* {
      auto it = tasks.find(id);
      return it == tasks.end() ? nullptr : &it->second;
    };
  }
};

BoardRows BoardOf(const Rows& r) {
  BoardRows board;
  for (int i = 0; i < r.size(); ++i) {
    auto t = TaskOf(r, i);
    if (t.ok()) board.tasks[t->id] = std::move(*t);  // (a status edited into garbage: not a task)
  }
  return board;
}

Result<BoardRows> ReadBoard(Connection& c, const std::string& team) {
  MATES_ASSIGN_OR_RETURN(
      Rows r,
      c.Exec(std::string("SELECT ") + kTaskColumns + " FROM mates_tasks WHERE team = $1", {team}));
  return BoardOf(r);
}

// Only the tasks `ids` of the board.
Result<BoardRows> ReadTasks(Connection& c, const std::string& team,
                            const std::vector<int64_t>& ids) {
  MATES_ASSIGN_OR_RETURN(Rows r,
                         c.Exec(std::string("SELECT ") + kTaskColumns +
                                    " FROM mates_tasks WHERE team = $1 AND id = ANY($2::bigint[])",
                                {team, ArrayText(ids)}));
  return BoardOf(r);
}

// Task `id`, its row held until the transaction ends.
Result<Task> HoldTask(Connection& c, const std::string& team, int64_t id) {
  MATES_ASSIGN_OR_RETURN(Rows r, c.Exec(std::string("SELECT ") + kTaskColumns +
                                            " FROM mates_tasks WHERE team = $1 AND id = $2 FOR UPDATE",
                                        {team, Num(id)}));
  if (r.size() == 0) return NoTask(id);
  return TaskOf(r, 0);
}

Status WriteTask(Connection& c, const std::string& team, const Task& t) {
  return c.Exec("UPDATE mates_tasks SET subject = $3, description = $4, active_form = $5, status = $6, owner = $7, "
                "blocked_by = $8::bigint[], blocks = $9::bigint[], metadata = $10, updated_at = $11 "
                "WHERE team = $1 AND id = $2",
                {team, Num(t.id), t.subject, t.description, t.active_form, std::string(TaskStatusName(t.status)),
                 t.owner, ArrayText(t.blocked_by), ArrayText(t.blocks), t.metadata_json, Seconds(t.updated_at)})
      .status();
}

}  // namespace

Result<Task> Store::UpdateTask(const std::string& team, int64_t id, const TaskPatch& patch, const Caller& caller) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Json metadata_patch, CheckPatch(patch));
  // A teammate completing its own task in progress, the write every
  // handoff waits on: Complete's one statement, which the rules below
  // allow as they stand (it changes no link, so it needs no board lock),
  // instead of a transaction of six. Whatever it does not match (a task
  // not in progress, another's, the lead's call) goes the long way, which
  // says why it is refused or does it.
  const bool completes_own = patch.status == TaskStatus::kCompleted && !caller.is_lead &&
                             !patch.owner && !patch.subject && !patch.description &&
                             !patch.active_form && !patch.metadata_json &&
                             patch.add_blocked_by.empty() && patch.add_blocks.empty() &&
                             CheckNames(team, caller.name).ok();
  if (completes_own) {
    MATES_ASSIGN_OR_RETURN(std::optional<Task> done, CompleteIfInProgress(team, id, caller.name));
    if (done) return std::move(*done);
  }
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Result<Task> {
    // The graph changes one update at a time per board (task creation
    // takes the same lock); claims hold rows, not this lock.
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {BoardKey(team)}).status());
    MATES_ASSIGN_OR_RETURN(Task t, HoldTask(*c, team, id));
    // The rules look at other tasks only for new links (the graph, for
    // cycles) and for a task being started (its blockers): the board is
    // read only then. A completion, the handoff's write, reads its own
    // row, not every task on the board.
    BoardRows board;
    if (!patch.add_blocked_by.empty() || !patch.add_blocks.empty()) {
      MATES_ASSIGN_OR_RETURN(board, ReadBoard(*c, team));
    } else if (patch.status == TaskStatus::kInProgress && t.status != TaskStatus::kInProgress &&
               !t.blocked_by.empty()) {
      MATES_ASSIGN_OR_RETURN(board, ReadTasks(*c, team, t.blocked_by));
    }
    board.tasks[id] = t;  // the version held
    const TaskLookup lookup = board.lookup();
    // The file board's rules, in the same order (store/task_rules.h).
    MATES_RETURN_IF_ERROR(CheckUpdateAllowed(t, patch, caller));
    MATES_ASSIGN_OR_RETURN(NewLinks links, CheckNewLinks(t, patch, lookup));
    std::vector<int64_t> dropped;
    MATES_RETURN_IF_ERROR(ApplyPatch(t, patch, metadata_patch, links, caller, lookup, &dropped));
    const std::string now = Seconds(WallSeconds());
    t.updated_at = WallSeconds();
    MATES_RETURN_IF_ERROR(WriteTask(*c, team, t));
    // The other side of each link, and a deleted task out of everyone's
    // lists: changed in place, field by field, so that a claim of one of
    // those rows meanwhile is kept.
    for (int64_t b : links.blocked_by) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocks = array_append(blocks, $3), updated_at = $4 "
                                    "WHERE team = $1 AND id = $2",
                                    {team, Num(b), Num(id), now})
                                .status());
    }
    for (int64_t b : links.blocks) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocked_by = array_append(blocked_by, $3), "
                                    "updated_at = $4 WHERE team = $1 AND id = $2",
                                    {team, Num(b), Num(id), now})
                                .status());
    }
    if (t.status == TaskStatus::kDeleted) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocked_by = array_remove(blocked_by, $2), "
                                    "blocks = array_remove(blocks, $2), updated_at = $3 "
                                    "WHERE team = $1 AND id <> $2 AND ($2 = ANY(blocked_by) OR $2 = ANY(blocks))",
                                    {team, Num(id), now})
                                .status());
    }
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(BoardKey(team))}).status());
    return t;
  });
}

Result<Task> Store::Claim(const std::string& team, int64_t id, const std::string& owner) {
  MATES_RETURN_IF_ERROR(CheckNames(team, owner));
  MATES_ASSIGN_OR_RETURN(Lease c, Acquire());
  return InTransaction(*c, [&]() -> Result<Task> {
    MATES_ASSIGN_OR_RETURN(Task t, HoldTask(*c, team, id));
    const std::string ref = "task #" + Num(id);
    if (t.status == TaskStatus::kDeleted) return NoTask(id);
    if (t.owner == owner && t.status == TaskStatus::kInProgress) return t;  // already ours
    if (!t.owner.empty() && t.owner != owner) return Status::Conflict(ref + " is already claimed by '" + t.owner + "'");
    if (t.status != TaskStatus::kPending) return Status::Conflict(ref + " is " + std::string(TaskStatusName(t.status)));
    MATES_ASSIGN_OR_RETURN(BoardRows board, ReadBoard(*c, team));
    std::string why = BlockedReason(t, board.lookup());
    if (!why.empty()) return Status::FailedPrecondition(ref + " is blocked by " + why);
    t.owner = owner;
    t.status = TaskStatus::kInProgress;
    t.updated_at = WallSeconds();
    MATES_RETURN_IF_ERROR(WriteTask(*c, team, t));
    return t;
  });
}

namespace {

class StoreBoard : public TaskBoard {
 public:
  StoreBoard(Store& store, std::string team) : store_(store), team_(std::move(team)) {}
  Result<Task> Create(const TaskDraft& draft) override { return store_.CreateTask(team_, draft); }
  Result<Task> Get(int64_t id) override { return store_.GetTask(team_, id); }
  Result<std::vector<Task>> List(bool include_deleted) override { return store_.ListTasks(team_, include_deleted); }
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) override {
    return store_.UpdateTask(team_, id, patch, caller);
  }
  Result<Task> Claim(int64_t id, const std::string& owner) override { return store_.Claim(team_, id, owner); }
  Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook) override {
    return store_.ClaimNext(team_, owner, outlook);
  }

 private:
  Store& store_;
  const std::string team_;
};

class Mail : public TeamMail {
 public:
  Mail(Store& store, std::string team) : store_(store), team_(std::move(team)) {}
  const std::string& team() const override { return team_; }
  Result<TeamConfig> LoadTeam() override { return store_.LoadTeam(team_); }
  Status Deliver(const std::string& member, const Message& m) override { return store_.Append(team_, member, m); }
  Result<std::vector<Message>> Peek(const std::string& member) override { return store_.Peek(team_, member); }
  Status Log(const Message& m) override { return store_.LogMessage(team_, m); }
  Result<std::optional<Message>> FindLogged(const std::string& id) override { return store_.FindLogged(team_, id); }
  Status CreateRequest(const ProtocolRequest& r) override { return store_.CreateRequest(team_, r); }
  Result<ProtocolRequest> GetRequest(const std::string& id) override { return store_.GetRequest(team_, id); }
  Result<std::vector<ProtocolRequest>> ListRequests() override { return store_.ListRequests(team_); }
  Result<ProtocolRequest> ResolveRequest(const std::string& id, bool approve, const std::string& response) override {
    return store_.ResolveRequest(team_, id, approve, response);
  }

 private:
  Store& store_;
  const std::string team_;
};

class StoreInbox : public Inbox {
 public:
  StoreInbox(Store& store, std::string team, std::string member)
      : store_(store), team_(std::move(team)), member_(std::move(member)) {}
  Result<std::vector<Message>> Peek() override { return store_.Peek(team_, member_); }
  // An inbox found empty stays empty until a NOTIFY on its key (every
  // message appended sends one with its commit) or the listener's
  // reconnect: an idle teammate's looks ask the server once, not at every
  // wake-up (~900 statements in three runs of team_bench's 50 tasks, on
  // every claimer's path to its call). The listener's count of what it
  // told of the inbox's channel is read before the count, so a message
  // committed during it moves it on; and it moves before the listener
  // wakes anyone (Listener::Told), so a waiter woken by the inbox's NOTIFY
  // never finds it unmoved.
  Result<size_t> PendingCount() override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string key = InboxKey(team_, member_);
    if (empty_at_ && subscribed_ && store_.listener().Told(key) == *empty_at_) return size_t{0};
    std::optional<uint64_t> at;
    if (subscribed_) at = store_.listener().Told(key);
    MATES_ASSIGN_OR_RETURN(size_t n, store_.PendingCount(team_, member_));
    empty_at_ = n == 0 ? at : std::nullopt;
    if (n == 0 && !subscribed_ && ++empties_ == 2) {
      // Found empty a second time: worth listening to its channel, from
      // the next count on (a one-off look, `mates inbox`, does not pay for
      // one).
      auto sub = store_.listener().Subscribe(key, [](int64_t) {});
      if (sub.ok()) {
        subscribed_ = true;
        sub_ = std::move(*sub);
      }
    }
    return n;
  }
  // Asks the server: a loop about to deliver its inbox before a model call
  // must not make that call without a message just committed.
  bool MayHavePending() override {
    auto n = store_.PendingCount(team_, member_);
    return n.ok() && *n > 0;
  }
  Result<Taken> Take(const std::function<bool(const std::vector<Message>&)>& keep,
                     const AlreadyDelivered& already) override {
    MATES_ASSIGN_OR_RETURN(Store::Batch batch, store_.BeginDrain(team_, member_, already));
    // Not kept: rolled back with the batch.
    return KeepOrLeave(batch, false, keep, [&](Store::Batch& b) { return store_.Commit(b); });
  }
  Result<std::unique_ptr<Watch>> WatchWith(std::shared_ptr<Waker> waker) override {
    MATES_ASSIGN_OR_RETURN(Listener::Subscription sub,
                           store_.listener().Subscribe(InboxKey(team_, member_), std::move(waker)));
    return Holding(std::move(sub));
  }

 private:
  Store& store_;
  const std::string team_, member_;
  std::mutex mu_;
  bool subscribed_ = false;             // its channel is listened to; guarded by mu_
  Listener::Subscription sub_;          // guarded by mu_
  std::optional<uint64_t> empty_at_;    // found empty at that generation; guarded by mu_
  int empties_ = 0;                     // counts of 0 before the subscription; guarded by mu_
};

class StoreMerges : public MergeBook {
 public:
  StoreMerges(Store& store, std::string team) : store_(store), team_(std::move(team)) {}
  Result<MergeRequest> Create(MergeRequest m) override { return store_.CreateMerge(team_, std::move(m)); }
  Result<MergeRequest> Get(int64_t id) const override { return store_.GetMerge(team_, id); }
  Result<std::vector<MergeRequest>> List() const override { return store_.ListMerges(team_); }
  Result<MergeRequest> Update(int64_t id, const std::function<Status(MergeRequest&)>& mutate) override {
    return store_.UpdateMerge(team_, id, mutate);
  }

 private:
  Store& store_;
  const std::string team_;
};

class StoreJournal : public JournalCopy {
 public:
  StoreJournal(Store& store, std::string team, std::string member)
      : store_(store), team_(std::move(team)), member_(std::move(member)) {}
  Result<std::vector<std::string>> Lines() override { return store_.JournalLines(team_, member_); }
  Status Put(int64_t first, const std::vector<std::string>& lines) override {
    return store_.PutJournal(team_, member_, first, lines);
  }
  Status Replace(const std::vector<std::string>& lines) override {
    return store_.ReplaceJournal(team_, member_, lines);
  }

 private:
  Store& store_;
  const std::string team_, member_;
};

// A board whose answers that could mean "no such team" (NotFound, an
// empty list, no task to claim) are checked against the team's row: a team
// gone is said so (TeamStore::CheckedBoard). Asking first cost every task
// update a round trip, on the way from a completion to the claims it allows.
class TeamCheckedBoard : public TaskBoard {
 public:
  TeamCheckedBoard(Store& store, std::string team)
      : store_(store), team_(std::move(team)), board_(TeamBoard(store, team_)) {}
  Result<Task> Create(const TaskDraft& draft) override { return Checked(board_->Create(draft)); }
  Result<Task> Get(int64_t id) override { return Checked(board_->Get(id)); }
  Result<std::vector<Task>> List(bool include_deleted) override {
    auto r = board_->List(include_deleted);
    if (r.ok() && r->empty()) MATES_RETURN_IF_ERROR(store_.HasTeam(team_));
    return Checked(std::move(r));
  }
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) override {
    return Checked(board_->Update(id, patch, caller));
  }
  Result<Task> Claim(int64_t id, const std::string& owner) override { return Checked(board_->Claim(id, owner)); }
  Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook) override {
    auto r = board_->ClaimNext(owner, outlook);
    if (r.ok() && !r->has_value()) MATES_RETURN_IF_ERROR(store_.HasTeam(team_));
    return Checked(std::move(r));
  }
  Result<std::optional<int64_t>> NextClaimable(const std::string& owner) override {
    return Checked(board_->NextClaimable(owner));
  }

 private:
  template <typename T>
  Result<T> Checked(Result<T> r) {
    if (!r.ok() && r.status().code() == StatusCode::kNotFound) MATES_RETURN_IF_ERROR(store_.HasTeam(team_));
    return r;
  }
  Store& store_;
  const std::string team_;
  std::unique_ptr<TaskBoard> board_;
};

class Teams : public TeamStore {
 public:
  Teams(Store& store, std::optional<Workspace> ws) : store_(store), ws_(std::move(ws)) {}
  Teams(std::unique_ptr<Store> store, Workspace ws) : owned_(std::move(store)), store_(*owned_), ws_(std::move(ws)) {}
  std::string where() const override { return store_.target().shown; }
  bool spans_machines() const override { return true; }
  Result<std::vector<std::string>> ListTeams() override { return store_.ListTeams(); }
  Status DeleteTeam(const std::string& team) override { return store_.DeleteTeam(team); }
  Result<TeamConfig> LoadTeam(const std::string& team) override { return store_.LoadTeam(team); }
  Result<TeamConfig> CreateTeam(const std::string& team, const std::string& lead,
                                const std::string& description) override {
    return store_.CreateTeam(team, lead, description);
  }
  Result<Member> AddMember(const std::string& team, Member member) override {
    return store_.AddMember(team, std::move(member));
  }
  Result<TeamConfig> UpdateTeam(const std::string& team,
                                const std::function<Status(TeamConfig&)>& mutate) override {
    return store_.UpdateTeam(team, mutate);
  }
  Result<std::unique_ptr<Hold>> HoldLiveness(const std::string& team, const std::string& member) override {
    auto held = store_.HoldLiveness(team, member);
    if (!held.ok() && held.status().code() == StatusCode::kConflict) {
      return Status::Conflict("'" + member + "' of team '" + team + "' is hosted by another process (on this machine or another)");
    }
    if (!held.ok()) return held.status();
    struct Held : Hold {
      explicit Held(Store::Liveness l) : liveness(std::move(l)) {}
      void OnLost(std::function<void()> lost) override { liveness.OnLost(std::move(lost)); }
      bool StillHeld() override { return liveness.StillHeld(); }
      Store::Liveness liveness;
    };
    return std::unique_ptr<Hold>(std::make_unique<Held>(std::move(*held)));
  }
  // Each part's notifications; who hosts a team is seen by its liveness.
  Result<std::unique_ptr<Hold>> Watch(const std::string& team, TeamPart part,
                                      std::shared_ptr<Waker> waker) override {
    std::string key;
    switch (part) {
      case TeamPart::kRoster: key = TeamKey(team); break;
      case TeamPart::kHost: return std::unique_ptr<Hold>(std::make_unique<Hold>());
      case TeamPart::kBoard: key = BoardKey(team); break;
      case TeamPart::kLog: key = LogKey(team); break;
      case TeamPart::kRequests: key = LogKey(team); break;  // made and answered by logged messages
      case TeamPart::kActivity: key = ActivityKey(team); break;
      case TeamPart::kJournals: key = JournalKey(team); break;
      case TeamPart::kMerges: key = MergeKey(team); break;
    }
    MATES_ASSIGN_OR_RETURN(Listener::Subscription sub, store_.listener().Subscribe(key, std::move(waker)));
    return Holding(std::move(sub));
  }
  Status HasTeam(const std::string& team) override { return store_.HasTeam(team); }
  Status SetStatuses(const std::string& team,
                     const std::vector<std::pair<std::string, MemberStatus>>& changes) override {
    return store_.SetStatuses(team, changes);
  }
  Result<std::shared_ptr<ClaimLine>> ClaimLineOf(const std::string& team) override {
    return store_.ClaimLineOf(team);
  }
  std::unique_ptr<TaskBoard> Board(const std::string& team) override { return TeamBoard(store_, team); }
  Result<std::unique_ptr<TaskBoard>> CheckedBoard(const std::string& team) override {
    MATES_RETURN_IF_ERROR(ValidateName("team name", team));
    return std::unique_ptr<TaskBoard>(std::make_unique<TeamCheckedBoard>(store_, team));
  }
  std::unique_ptr<MergeBook> Merges(const std::string& team) override {
    return std::make_unique<StoreMerges>(store_, team);
  }
  std::unique_ptr<TeamMail> Mail(const std::string& team) override { return StoreMail(store_, team); }
  std::unique_ptr<Inbox> InboxOf(const std::string& team, const std::string& member) override {
    return std::make_unique<StoreInbox>(store_, team, member);
  }
  bool IsHosted(const std::string& team, const std::string& member) override {
    auto hosted = store_.IsHosted(team, member);
    return hosted.ok() && *hosted;
  }
  Result<std::vector<Message>> LastMessages(const std::string& team, size_t n) override {
    return store_.TailLog(team, n);
  }
  Status ReadLog(const std::string& team, const std::function<void(const Message&)>& each) override {
    for (int64_t cursor = 0;;) {
      MATES_ASSIGN_OR_RETURN(std::vector<Message> page, store_.ReadLog(team, &cursor));
      if (page.empty()) return Status::Ok();
      for (const auto& m : page) each(m);
    }
  }
  // The cursor is the log's sequence number: a team's messages become
  // visible in its order (Store::LogMessage).
  Result<LogPage> TailLog(const std::string& team, size_t n, size_t max_bytes) override {
    LogPage page;
    int64_t cursor = 0;
    MATES_ASSIGN_OR_RETURN(page.messages, store_.TailLog(team, n, &cursor, max_bytes));
    page.next = static_cast<uint64_t>(cursor);
    return page;
  }
  Result<LogPage> LogAfter(const std::string& team, uint64_t after, size_t max_bytes) override {
    if (after > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("after: past the end of the log");
    LogPage page;
    int64_t cursor = static_cast<int64_t>(after);
    MATES_ASSIGN_OR_RETURN(page.messages, store_.ReadLog(team, &cursor, kLogPageRows, max_bytes));
    page.next = static_cast<uint64_t>(cursor);
    // Cut short, by rows or bytes: the reader asks again at once.
    if (page.next > after) {
      int64_t probe = cursor;
      auto beyond = store_.ReadLog(team, &probe, 1);
      page.more = beyond.ok() && probe > cursor;
    }
    return page;
  }
  Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& team) override {
    return store_.Activities(team);
  }
  // The store's copy: every machine's agents, whichever hosts them.
  Result<JournalText> ReadJournal(const std::string& team, const std::string& member, size_t max_bytes) override {
    JournalText j;
    j.where = "the journal copy of '" + member + "' in " + store_.target().shown + " (mates store export writes it out)";
    MATES_ASSIGN_OR_RETURN(uint64_t size, store_.JournalBytes(team, member));
    if (size > max_bytes) {
      j.too_large = true;
      return j;
    }
    MATES_ASSIGN_OR_RETURN(std::vector<std::string> lines, store_.JournalLines(team, member));
    if (lines.empty()) return Status::NotFound("no journal for '" + member + "'");
    for (const auto& l : lines) {
      j.text += l;
      j.text += '\n';
    }
    return j;
  }
  // The host this workspace has, if it hosts the team's lead.
  std::optional<HostInfo> LiveHost(const std::string& team) override {
    if (!ws_) return std::nullopt;
    return ReadLiveHost(*ws_, team, *this);
  }
  void WaitOutOutages(double seconds) override { store_.WaitOutOutages(seconds); }
  void StopWaiting() override { store_.StopWaiting(); }
  std::unique_ptr<JournalCopy> JournalOf(const std::string& team, const std::string& member) override {
    return std::make_unique<StoreJournal>(store_, team, member);
  }
  ActivitySink ActivityOf(const std::string& team, const std::string& member) override {
    // The store outlives its agents, whose activity is flushed before they go.
    Store* store = &store_;
    auto said = std::make_shared<bool>(false);  // the writer's thread only
    return [store, team, member, said](const std::string& doc) {
      Status s = store->PutActivity(team, member, doc);
      if (!s.ok() && !*said) LogDebug("activity of " + member + "@" + team + " not in the store: " + s.message());
      *said = !s.ok();
    };
  }
  Result<ArchivedTeam> Archive(const std::string& team) override {
    if (!ws_) {
      return Status::FailedPrecondition("team '" + team + "' is kept in " + store_.target().shown +
                                        " and this process has no workspace to archive it in");
    }
    return ArchiveTeam(store_, *ws_, team);
  }

 private:
  static constexpr size_t kLogPageRows = 1000;
  const std::unique_ptr<Store> owned_;  // the store, when this opened it
  Store& store_;
  // The workspace of this machine: where a team is archived, and where its
  // host, if it is this machine's, says so (host.json).
  const std::optional<Workspace> ws_;
};

}  // namespace

std::unique_ptr<TeamStore> StoreTeams(Store& store, std::optional<Workspace> ws) {
  return std::make_unique<Teams>(store, std::move(ws));
}

std::unique_ptr<TeamStore> StoreTeams(std::unique_ptr<Store> store, Workspace ws) {
  return std::make_unique<Teams>(std::move(store), std::move(ws));
}

std::unique_ptr<TaskBoard> TeamBoard(Store& store, const std::string& team) {
  return std::make_unique<StoreBoard>(store, team);
}

std::unique_ptr<TeamMail> StoreMail(Store& store, const std::string& team) {
  return std::make_unique<Mail>(store, team);
}

}  // namespace mates::pg
