#include "team/status_writer.h"

#include "core/guarded.h"
#include "core/log.h"

namespace mates::team {

StatusWriter::StatusWriter(Workspace ws) : ws_(std::move(ws)) {
  thread_ = std::thread([this] { RunGuarded("the roster status writer", [this] { Main(); }); });
}

StatusWriter::~StatusWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StatusWriter::Post(const std::string& team, const std::string& member, MemberStatus status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[{team, member}] = status;
  }
  cv_.notify_all();
}

Status StatusWriter::Write(const std::string& team, const std::string& member, MemberStatus status) {
  std::unique_lock<std::mutex> lock(mu_);
  pending_.erase({team, member});
  // A batch taken before the erase may still carry an older status for
  // `member`: it goes to disk first (write_mu_), then this one.
  std::lock_guard<std::mutex> writing(write_mu_);
  lock.unlock();
  return Roster(ws_).SetStatus(team, member, status);
}

void StatusWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.notify_all();
  cv_.wait(lock, [this] { return (pending_.empty() && !busy_) || stop_; });
}

void StatusWriter::WriteBatch(const std::map<Key, MemberStatus>& batch) {
  std::map<std::string, std::vector<std::pair<std::string, MemberStatus>>> by_team;
  for (const auto& [key, status] : batch) by_team[key.first].emplace_back(key.second, status);
  for (const auto& entry : by_team) {
    const std::string& team = entry.first;
    const auto& changes = entry.second;
    auto r = Roster(ws_).Update(team, [&changes](TeamConfig& c) {
      for (const auto& [member, status] : changes) {
        if (Member* m = c.Find(member); m != nullptr) m->status = status;
      }
      return Status::Ok();
    });
    if (!r.ok()) LogDebug("statuses of team " + team + ": " + r.status().message());
  }
}

void StatusWriter::Main() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return !pending_.empty() || stop_; });
    if (pending_.empty()) return;  // stopping with nothing left
    std::map<Key, MemberStatus> batch;
    batch.swap(pending_);
    busy_ = true;
    {
      // Taken before mu_ is let go: a Write for a member of this batch waits
      // until the batch is on disk.
      std::lock_guard<std::mutex> writing(write_mu_);
      lock.unlock();
      WriteBatch(batch);
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace mates::team
