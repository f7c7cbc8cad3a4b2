// See store.h: liveness, a session advisory lock per hosted agent, and its keeper.
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
#include "pg/store_rows.h"
#include "store/task_rules.h"

namespace mates::pg {

namespace {
std::string LivenessKey(const std::string& team, const std::string& agent) { return "a/" + team + "/" + agent; }
}  // namespace

struct LivenessLock::Held {
  std::mutex mu;
  Connection conn;      // guarded by mu
  std::string key, who;
  bool released = false;  // guarded by mu: the lock went; never taken again
  bool lost = false;      // guarded by mu: another host has it (said once)
  std::function<void()> on_lost;  // guarded by mu: called under it, once
  LivenessLocks* locks = nullptr;  // which keeps it (outlives it)
};

bool LivenessLock::StillHeld() {
  if (!held_) return true;
  {
    std::lock_guard<std::mutex> lock(held_->mu);
    if (held_->released || held_->lost) return false;
    if (held_->conn.ok() && !held_->conn.HungUp()) return true;
  }
  held_->locks->Retake(*held_);
  std::lock_guard<std::mutex> lock(held_->mu);
  // Out of reach still: nobody else can take it either (the keeper goes on).
  return !held_->released && !held_->lost;
}

void LivenessLock::OnLost(std::function<void()> lost) {
  if (!held_) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->on_lost = std::move(lost);
}

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
  // A connection of its own: the lock lives and dies with it.
  MATES_ASSIGN_OR_RETURN(Connection c, Connection::Open(store_.target(), 10));
  MATES_ASSIGN_OR_RETURN(Rows r, c.Exec("SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                                        {LivenessKey(team, agent)}));
  if (r.text(0, 0) != "t") {
    return Status::Conflict("'" + agent + "' of team '" + team + "' is hosted by another process");
  }
  auto held = std::make_shared<LivenessLock::Held>();
  held->conn = std::move(c);
  held->key = LivenessKey(team, agent);
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
    for (const auto& h : held) Retake(*h);
    held.clear();
    lock.lock();
  }
}

void LivenessLocks::Retake(LivenessLock::Held& h) {
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.released) return;
  if (h.conn.ok() && h.conn.Exec("SELECT 1").ok()) return;
  auto c = Connection::Open(store_.target(), 2);
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
    // Called under h.mu, so the lock (and what the call touches) cannot
    // go meanwhile.
    h.released = true;
    auto lost = std::move(h.on_lost);
    h.on_lost = nullptr;
    lost();
  }
}

LivenessLock::~LivenessLock() {
  if (!held_) return;
  std::lock_guard<std::mutex> lock(held_->mu);
  held_->released = true;
  if (held_->conn.ok()) (void)held_->conn.ExecScript("SELECT pg_advisory_unlock_all()");
  held_->conn = Connection();
}

Result<bool> LivenessLocks::IsHosted(const std::string& team, const std::string& agent) {
  MATES_RETURN_IF_ERROR(CheckNames(team, agent));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  // Taken at once if nobody holds it; then given back in the same statement.
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT CASE WHEN pg_try_advisory_lock(k) THEN NOT pg_advisory_unlock(k) "
                                         "ELSE true END FROM (SELECT hashtextextended($1, 0) AS k) x",
                                         {LivenessKey(team, agent)}));
  return r.text(0, 0) == "t";
}

}  // namespace mates::pg
