// See store.h: liveness, a lease per hosted agent renewed by its keeper,
// and the fencing of what a host writes for the agents it holds.
#include "pg/store.h"

#include <unistd.h>

#include <atomic>
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

// The steady clock in ns.
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

// A lease renewed by a statement sent at `sent` (NowNs) cannot end before
// this.
int64_t ValidFrom(int64_t sent) {
  return sent + static_cast<int64_t>((LivenessLocks::kLeaseS - kMarginS) * 1e9);
}

}  // namespace

struct LivenessLock::Held {
  std::mutex mu;
  std::string team, agent, who;  // set before it is kept, never changed
  int64_t token = 0;
  // Written under mu; read without it by a renewal, which names only the
  // leases still to renew.
  std::atomic<bool> released{false};  // let go; never renewed again
  std::atomic<bool> lost{false};      // another host has it (said once)
  // The lease cannot have ended before this (steady clock, in ns): set at
  // each renewal, under the session's lock.
  std::atomic<int64_t> valid_until{0};
  std::function<void()> on_lost;      // guarded by mu: called under it, once
  LivenessLocks* locks = nullptr;     // which keeps it (outlives it)
};

bool LivenessLock::StillHeld() {
  if (!held_) return true;
  std::lock_guard<std::mutex> lock(held_->mu);
  if (held_->released || held_->lost) return false;
  return held_->locks->Fresh(*held_);
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
  const bool was_lost = held_->lost;
  held_->released = true;
  // The next holder takes it over from a release, not from a host lost.
  if (!was_lost) held_->locks->Release(*held_);
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

Result<bool> LivenessLocks::SessionLocked(double timeout_s) {
  if (session_.ok() && !session_.HungUp()) return false;
  MATES_ASSIGN_OR_RETURN(session_, Connection::Open(store_.target(), timeout_s));
  return true;
}

Result<LivenessLock> LivenessLocks::Hold(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(CheckNames(team, agent));
  auto held = std::make_shared<LivenessLock::Held>();
  held->team = team;
  held->agent = agent;
  held->who = "'" + agent + "' of team '" + team + "'";
  held->locks = this;
  Taken taken;
  {
    std::lock_guard<std::mutex> session(session_mu_);
    MATES_ASSIGN_OR_RETURN(const bool opened, SessionLocked(10));
    bool others = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& w : kept_) {
        auto h = w.lock();
        others = others || (h && !h->released && !h->lost);
      }
    }
    // A lease that ended unrenewed while its session is still there: its
    // host is frozen or cut off. Its sessions are ended (what it would do
    // on waking is refused anyway), so that none of its transactions holds
    // what the new holder needs: an inbox drain waits on its reader up to
    // 60 s, holding the inbox. Best effort: a role that may not end them
    // leaves them to the server's bounds (connection.cc).
    (void)session_.Exec(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(a.pid)) FROM mates_agent_leases l "
        "JOIN pg_stat_activity o ON o.pid = l.pid AND o.backend_start = l.backend_start "
        "JOIN pg_stat_activity a ON a.application_name = o.application_name "
        "WHERE l.team = $1 AND l.agent = $2 AND NOT l.released AND l.expires_at <= clock_timestamp() "
        "AND o.application_name LIKE 'mates %' AND o.application_name <> current_setting('application_name') "
        "AND a.pid <> pg_backend_pid()",
        {team, agent});
    const int64_t sent = NowNs();
    // Taken if there is none, or the last one is released, past its end,
    // or its holder's session is gone; its token one more than the last.
    auto r = session_.Exec(
        std::string("INSERT INTO mates_agent_leases AS l (team, agent, token, holder, pid, backend_start, "
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
    held->token = r->integer(0, 0);
    held->valid_until = ValidFrom(sent);
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
    if (opened && others) {
      // A session opened now (the last one gone): the leases held already
      // name the old one, and are renewed onto it before anything else.
      auto renewed = RenewLocked();
      if (renewed.ok()) taken = std::move(*renewed);
    }
  }
  LoseAll(taken);
  return LivenessLock(std::move(held));
}

void LivenessLocks::Keep() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    Taken taken;
    {
      std::lock_guard<std::mutex> session(session_mu_);
      auto renewed = RenewLocked();
      if (renewed.ok()) taken = std::move(*renewed);
    }
    LoseAll(taken);
    taken.clear();
    lock.lock();
  }
}

Result<LivenessLocks::Taken> LivenessLocks::RenewLocked() {
  std::vector<std::shared_ptr<LivenessLock::Held>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (auto h = it->lock()) {
        if (!h->released && !h->lost) held.push_back(std::move(h));
        ++it;
      } else {
        it = kept_.erase(it);
      }
    }
  }
  if (held.empty()) return Taken();
  const int64_t sent = NowNs();
  // Still out of reach: the next look tries again.
  if (auto opened = SessionLocked(2); !opened.ok()) return opened.status();
  std::string teams = "{", agents = "{", tokens = "{";
  for (size_t i = 0; i < held.size(); ++i) {
    const char* sep = i > 0 ? "," : "";
    // Names are checked (letters, digits, '.', '_', '-'): quoted, they
    // are array elements as they are.
    teams += sep + ("\"" + held[i]->team + "\"");
    agents += sep + ("\"" + held[i]->agent + "\"");
    tokens += sep + std::to_string(held[i]->token);
  }
  // On the session (a new one after a lost connection): each renewed only
  // if its token is still the newest, and not let go. A row a write's
  // fencing check holds (FOR SHARE, to its commit: an inbox drain's while
  // its reader journals) is passed over, not waited for: nobody can take
  // it meanwhile, and the next renewal gets it; the others are not held
  // up behind it.
  auto r = session_.Exec(
      "WITH h AS (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]) AS h(team, agent, token)), "
      "k AS (SELECT l.team, l.agent FROM mates_agent_leases l JOIN h ON h.team = l.team AND h.agent = l.agent "
      "AND h.token = l.token WHERE NOT l.released FOR UPDATE OF l SKIP LOCKED) "
      "UPDATE mates_agent_leases l SET expires_at = clock_timestamp() + make_interval(secs => $4::double "
      "precision), pid = a.pid, backend_start = a.backend_start FROM pg_stat_activity a, k "
      "WHERE a.pid = pg_backend_pid() AND l.team = k.team AND l.agent = k.agent RETURNING l.team, l.agent, l.token",
      {teams + "}", agents + "}", tokens + "}", LeaseSeconds()});
  if (!r.ok()) {
    if (r.status().code() != StatusCode::kUnavailable) LogWarning("renewing this host's leases: " + r.status().message());
    return r.status();
  }
  const int64_t valid = ValidFrom(sent);
  Taken taken;
  for (auto& h : held) {
    bool renewed = false;
    // (This process may hold an agent twice: by a lease taken over from
    // itself, and by the one before, which it lost.)
    for (int i = 0; i < r->size() && !renewed; ++i) {
      renewed = r->text(i, 0) == h->team && r->text(i, 1) == h->agent && r->integer(i, 2) == h->token;
    }
    if (renewed) {
      h->valid_until = valid;
      continue;
    }
    // Passed over (held by a write of its own), or taken.
    auto w = session_.Exec("SELECT holder, token, released FROM mates_agent_leases WHERE team = $1 AND agent = $2",
                           {h->team, h->agent});
    if (!w.ok()) continue;  // the next renewal looks again
    if (w->size() == 1 && w->integer(0, 1) == h->token && w->text(0, 2) == "f") continue;
    std::string now = "nobody";
    if (w->size() == 1) now = HolderShown(w->text(0, 0)) + " (token " + std::string(w->text(0, 1)) + ")";
    std::string why = "its lease (token " + std::to_string(h->token) + ") ended before this host renewed it, and " +
                      now + " holds it now";
    taken.emplace_back(std::move(h), std::move(why));
  }
  return taken;
}

bool LivenessLocks::Fresh(LivenessLock::Held& h) {
  Taken taken;
  {
    std::lock_guard<std::mutex> session(session_mu_);
    // Its session seen hung up (one poll, no round trip) ended the lease
    // at once: another host may have it already.
    if (NowNs() < h.valid_until && session_.ok() && !session_.HungUp()) return true;
    // Not renewed in time (this process was stopped, or the server is out
    // of reach), or its session gone: renewed now, or this host does not act.
    auto renewed = RenewLocked();
    if (!renewed.ok()) return false;
    taken = std::move(*renewed);
  }
  // Only this one is marked here (its mu is held); the keeper marks the
  // others within a second.
  for (const auto& [t, why] : taken) {
    if (t.get() == &h) {
      Lose(h, why);
      return false;
    }
  }
  return NowNs() < h.valid_until;  // false if it was passed over
}

void LivenessLocks::Release(LivenessLock::Held& h) {
  std::lock_guard<std::mutex> session(session_mu_);
  if (!session_.ok()) return;
  (void)session_.Exec("UPDATE mates_agent_leases SET released = true, expires_at = clock_timestamp() "
                      "WHERE team = $1 AND agent = $2 AND token = $3",
                      {h.team, h.agent, std::to_string(h.token)});
}

void LivenessLocks::LoseAll(const Taken& taken) {
  for (const auto& [h, why] : taken) {
    std::lock_guard<std::mutex> one(h->mu);
    if (!h->released) Lose(*h, why);
  }
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
