#include "team/status_writer.h"

#include "core/guarded.h"
#include "core/log.h"

namespace mates::team {

StatusWriter::StatusWriter(TeamStore& store) : store_(store) { Start(); }

StatusWriter::StatusWriter(std::unique_ptr<TeamStore> owned) : owned_(std::move(owned)), store_(*owned_) { Start(); }

void StatusWriter::Start() {
  thread_ = std::thread([this] {
    NameThisThread("mates-roster");
    RunGuarded("the roster status writer", [this] { Main(); });
    // Whoever still waits (or comes later) writes for itself.
    std::lock_guard<std::mutex> lock(mu_);
    exited_ = true;
    written_cv_.notify_all();
  });
}

StatusWriter::~StatusWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  written_cv_.notify_all();
  thread_.join();
}

void StatusWriter::Post(const std::string& team, const std::string& member, MemberStatus status) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[{team, member}] = status;
    wake = waiting_for_work_;
  }
  if (wake) work_cv_.notify_one();
}

Status StatusWriter::Write(const std::string& team, const std::string& member, MemberStatus status) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!exited_) {
    pending_[{team, member}] = status;
    // The batch that will carry it: the next one taken. One in flight now
    // may carry an older status for `member`; it is written before.
    const uint64_t mine = taken_ + 1;
    if (waiting_for_work_) work_cv_.notify_one();
    written_cv_.wait(lock, [&] { return written_ >= mine || exited_; });
    if (written_ < mine) pending_.erase({team, member});  // the thread is gone: written below
  }
  if (exited_) {
    lock.unlock();
    return store_.UpdateTeam(team, [&](TeamConfig& c) {
      Member* m = c.Find(member);
      if (m == nullptr) return Status::NotFound("no member '" + member + "' in team '" + team + "'");
      m->status = status;
      return Status::Ok();
    }).status();
  }
  auto it = results_.find(team);
  return it == results_.end() ? Status::Ok() : it->second;
}

void StatusWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (waiting_for_work_) work_cv_.notify_one();
  written_cv_.wait(lock, [this] { return (pending_.empty() && !busy_) || stop_ || exited_; });
}

std::map<std::string, Status> StatusWriter::WriteBatch(const std::map<Key, MemberStatus>& batch) {
  std::map<std::string, std::vector<std::pair<std::string, MemberStatus>>> by_team;
  for (const auto& [key, status] : batch) by_team[key.first].emplace_back(key.second, status);
  std::map<std::string, Status> results;
  for (const auto& entry : by_team) {
    const std::string& team = entry.first;
    const auto& changes = entry.second;
    Status r = store_.SetStatuses(team, changes);
    if (!r.ok()) LogDebug("statuses of team " + team + ": " + r.message());
    results[team] = r;
  }
  return results;
}

void StatusWriter::Main() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (pending_.empty()) {
      if (stop_) return;  // stopping with nothing left
      waiting_for_work_ = true;
      work_cv_.wait(lock, [this] { return !pending_.empty() || stop_; });
      waiting_for_work_ = false;
      continue;
    }
    // Paced: what comes while the writer rests joins the next batch (and
    // does not wake it: waiting_for_work_ is false).
    work_cv_.wait_until(lock, rest_until_, [this] { return stop_; });
    std::map<Key, MemberStatus> batch;
    batch.swap(pending_);
    const uint64_t seq = ++taken_;
    busy_ = true;
    lock.unlock();
    const auto start = SteadyClock::now();
    auto results = WriteBatch(batch);
    const auto end = SteadyClock::now();
    lock.lock();
    rest_until_ = end + kRestPerWrite * (end - start);
    for (auto& [team, status] : results) results_[team] = std::move(status);
    written_ = seq;
    busy_ = false;
    written_cv_.notify_all();
  }
}

}  // namespace mates::team
