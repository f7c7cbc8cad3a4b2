// See store.h: liveness, a lease per hosted agent renewed by its keeper,
// and the fencing of what a host writes for the agents it holds.
#include "pg/store.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/names.h"
#include "core/text.h"
#include "pg/store_rows.h"

namespace mates::pg {

namespace {

// A lease is taken as ended this much before the server would end it: the
// two clocks run at nearly the same rate, and a holder stops acting first.
constexpr double kMarginS = 1;

// Whether the lease row `l` is live: not released, not past its end, and
// its holder's session still there (a host killed with -9 ends it at once;
// another user's session shows no start time, and its pid is enough).
constexpr const char* kLive =
    "(NOT l.released AND l.expires_at > clock_timestamp() AND EXISTS (SELECT 1 FROM pg_stat_activity a "
    "WHERE a.pid = l.pid AND (a.backend_start IS NULL OR a.backend_start = l.backend_start)))";

std::string ThisHost() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, sizeof name, "%s", "?");
  return "host " + std::to_string(::getpid()) + " on " + std::string(name);
}

// A holder's name as a row says it, for people to read: any other writer
// of the database may have put it there, so one line, no control
// character, bounded.
std::string HolderShown(std::string_view text) {
  std::string s = ForTerminal(text, 200);
  for (char& ch : s) {
    if (ch == '\n') ch = '?';
  }
  return s;
}

std::string LeaseSeconds() { return std::to_string(LivenessLocks::kLeaseS); }

SteadyClock::time_point ValidFrom(SteadyClock::time_point sent) {
  return sent + std::chrono::duration_cast<SteadyClock::duration>(
                    std::chrono::duration<double>(LivenessLocks::kLeaseS - kMarginS));
}

}  // namespace

struct LivenessLock::Held {
  std::mutex mu;
  Connection conn;  // guarded by mu: the session the lease names
  std::string team, agent, who;
  int64_t token = 0;
  SteadyClock::time_point valid_until;  // guarded by mu: the lease cannot have ended before
  bool released = false;                // guarded by mu: let go; never renewed again
  bool lost = false;                    // guarded by mu: another host has it (said once)
  std::function<void()> on_lost;        // guarded by mu: called under it, once
  LivenessLocks* locks = nullptr;       // which keeps it (outlives it)
};

bool LivenessLock::StillHeld() {
  if (!held_) return true;
  std::lock_guard<std::mutex> lock(held_->mu);
  if (held_->released || held_->lost) return false;
  // Its session seen hung up (one poll, no round trip) ended the lease at
  // once: another host may have it already.
  if (SteadyClock::now() < held_->valid_until && held_->conn.ok() && !held_->conn.HungUp()) return true;
  // Not renewed in time (this process was stopped, or the server is out
  // of reach), or its session gone: renewed now, or this host does not act.
  return held_->locks->Renew(*held_);
}

void LivenessLock::OnLost(std::function<void()> lost) {
  if (!held_) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->on_lost = std::move(lost);
}

int64_t LivenessLock::token() const { return held_ ? held_->token : 0; }

LivenessLock::~LivenessLock() {
  if (!held_) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->released = true;
  if (held_->conn.ok() && !held_->lost) {
    // The next holder takes it over from a release, not from a host lost.
    (void)held_->conn.Exec("UPDATE mates_agent_leases SET released = true, expires_at = clock_timestamp() "
                           "WHERE team = $1 AND agent = $2 AND token = $3",
                           {held_->team, held_->agent, std::to_string(held_->token)});
  }
  held_->conn = Connection();
}

LivenessLocks::LivenessLocks(Store& store) : store_(store), holder_(ThisHost()) {}

LivenessLocks::~LivenessLocks() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
}

Result<LivenessLock> LivenessLocks::Hold(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(CheckNames(team, agent));
  // A session of its own: the lease names it, and ends with it.
  MATES_ASSIGN_OR_RETURN(Connection c, Connection::Open(store_.target(), 10));
  const auto sent = SteadyClock::now();
  // Taken if there is none, or the last one is released, past its end, or
  // its holder's session is gone; its token one more than the last.
  auto r = c.Exec(std::string("INSERT INTO mates_agent_leases AS l (team, agent, token, holder, pid, backend_start, "
                              "expires_at) SELECT $1, $2, 1, $3, a.pid, a.backend_start, clock_timestamp() + "
                              "make_interval(secs => $4::double precision) FROM pg_stat_activity a WHERE a.pid = "
                              "pg_backend_pid() ON CONFLICT (team, agent) DO UPDATE SET token = l.token + 1, "
                              "holder = EXCLUDED.holder, pid = EXCLUDED.pid, backend_start = EXCLUDED.backend_start, "
                              "expires_at = EXCLUDED.expires_at, released = false, "
                              "taken_from = CASE WHEN l.released THEN '' ELSE l.holder END, "
                              "taken_at = CASE WHEN l.released THEN 0 ELSE extract(epoch FROM clock_timestamp()) END "
                              "WHERE NOT ") +
                      kLive + " RETURNING token",
                  {team, agent, holder_, LeaseSeconds()});
  if (!r.ok() && r.status().code() == StatusCode::kInvalidArgument) {
    return Status::NotFound("no team '" + team + "'");  // the row's team is gone (a foreign key)
  }
  if (!r.ok()) return r.status();
  if (r->size() != 1) return Status::Conflict("'" + agent + "' of team '" + team + "' is hosted by another process");
  auto held = std::make_shared<LivenessLock::Held>();
  held->conn = std::move(c);
  held->team = team;
  held->agent = agent;
  held->token = r->integer(0, 0);
  held->valid_until = ValidFrom(sent);
  held->who = "'" + agent + "' of team '" + team + "'";
  held->locks = this;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kept_.push_back(held);
    if (!keeper_.joinable()) {
      keeper_ = std::thread([this] {
        NameThisThread("mates-liveness");
        RunGuarded("the liveness keeper", [this] { Keep(); });
      });
    }
  }
  return LivenessLock(std::move(held));
}

void LivenessLocks::Keep() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    if (stopping_) return;
    std::vector<std::shared_ptr<LivenessLock::Held>> held;
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (auto h = it->lock()) {
        held.push_back(std::move(h));
        ++it;
      } else {
        it = kept_.erase(it);
      }
    }
    lock.unlock();
    for (const auto& h : held) {
      std::lock_guard<std::mutex> one(h->mu);
      if (!h->released && !h->lost) (void)Renew(*h);
    }
    held.clear();
    lock.lock();
  }
}

bool LivenessLocks::Renew(LivenessLock::Held& h) {
  const auto sent = SteadyClock::now();
  if (!h.conn.ok() || h.conn.HungUp()) {
    auto c = Connection::Open(store_.target(), 2);
    if (!c.ok()) return false;  // still out of reach: the next look tries again
    h.conn = std::move(*c);
  }
  // On this session (a new one after a lost connection): renewed only if
  // its token is still the newest, and not let go.
  auto r = h.conn.Exec("UPDATE mates_agent_leases l SET expires_at = clock_timestamp() + make_interval(secs => "
                       "$4::double precision), pid = a.pid, backend_start = a.backend_start FROM pg_stat_activity a "
                       "WHERE a.pid = pg_backend_pid() AND l.team = $1 AND l.agent = $2 AND l.token = $3 AND "
                       "NOT l.released RETURNING l.token",
                       {h.team, h.agent, std::to_string(h.token), LeaseSeconds()});
  if (!r.ok()) {
    if (r.status().code() != StatusCode::kUnavailable) {
      LogWarning("renewing the lease of " + h.who + ": " + r.status().message());
    }
    return false;
  }
  if (r->size() == 1) {
    h.valid_until = ValidFrom(sent);
    return true;
  }
  std::string now = "another host";
  if (auto w = h.conn.Exec("SELECT holder, token FROM mates_agent_leases WHERE team = $1 AND agent = $2",
                           {h.team, h.agent});
      w.ok() && w->size() == 1) {
    now = std::string(w->text(0, 0)) + " (token " + std::string(w->text(0, 1)) + ")";
  }
  Lose(h, "its lease (token " + std::to_string(h.token) + ") ended before this host renewed it, and " + now +
              " holds it now");
  return false;
}

void LivenessLocks::Lose(LivenessLock::Held& h, const std::string& why) {
  if (h.lost) return;
  h.lost = true;
  LogWarning(h.who + " is hosted by another process now: " + why + "; this host acts for it no more");
  if (h.on_lost) {
    // Called under h.mu, so the lease (and what the call touches) cannot
    // go meanwhile.
    auto lost = std::move(h.on_lost);
    h.on_lost = nullptr;
    lost();
  }
}

std::optional<int64_t> LivenessLocks::TokenOf(const std::string& team, const std::string& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<int64_t> newest;
  for (const auto& w : kept_) {
    auto h = w.lock();
    // (team, agent, token) are set before the lease is kept, and never
    // change; one lost and held again by this host has two, the newer larger.
    if (h && h->team == team && h->agent == agent && (!newest || h->token > *newest)) newest = h->token;
  }
  return newest;
}

void LivenessLocks::Refused(const std::string& team, const std::string& agent, const std::string& why) {
  std::vector<std::shared_ptr<LivenessLock::Held>> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& w : kept_) {
      if (auto h = w.lock(); h && h->team == team && h->agent == agent) found.push_back(std::move(h));
    }
  }
  for (const auto& h : found) {
    std::lock_guard<std::mutex> lock(h->mu);
    if (!h->released) Lose(*h, why);
  }
}

Result<bool> LivenessLocks::IsHosted(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(CheckNames(team, agent));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT EXISTS (SELECT 1 FROM mates_agent_leases l WHERE "
                                                     "l.team = $1 AND l.agent = $2 AND ") +
                                             kLive + ")",
                                         {team, agent}));
  return r.text(0, 0) == "t";
}

Result<std::vector<AgentLease>> LivenessLocks::Leases(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT l.agent, l.holder, l.token, ") + kLive +
                                             ", l.taken_from, l.taken_at FROM mates_agent_leases l WHERE l.team = $1 "
                                             "ORDER BY l.agent",
                                         {team}));
  std::vector<AgentLease> out;
  for (int i = 0; i < r.size(); ++i) {
    AgentLease l;
    l.agent = std::string(r.text(i, 0));
    if (!ValidateName("member name", l.agent).ok()) continue;  // a row no host writes
    l.holder = HolderShown(r.text(i, 1));
    l.token = r.integer(i, 2);
    l.live = r.text(i, 3) == "t";
    l.taken_from = HolderShown(r.text(i, 4));
    const double at = std::strtod(std::string(r.text(i, 5)).c_str(), nullptr);
    l.taken_at = std::isfinite(at) ? at : 0;
    out.push_back(std::move(l));
  }
  return out;
}

void Store::Fence(Connection& c, const std::string& team, const std::string& agent) {
  auto token = liveness_.TokenOf(team, agent);
  if (!token) return;
  c.SendWithNext("SELECT mates_fence($1, $2, $3)", {team, agent, std::to_string(*token)},
                 [this, team, agent](std::string_view sqlstate, const Status& error) {
                   if (sqlstate == kStaleFencingToken) liveness_.Refused(team, agent, error.message());
                 });
}

}  // namespace mates::pg
