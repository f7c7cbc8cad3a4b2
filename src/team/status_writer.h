// StatusWriter: teammates' statuses into the roster, off the handoff path.
//
// A teammate that claimed a task must not wait for the roster before its
// model call: `active` is posted and written by this writer's thread a
// moment later (the in-memory status, which the lead's waiting reads, is
// set first). Going to rest (idle, shutdown) is written before Write
// returns, after any `active` still pending or in flight for that member,
// so the roster never ends on a stale `active`. Changes that come faster
// than the writer are coalesced, the waited-for ones too (a group commit):
// the thirty teammates of a level going idle together are one roster
// update, not thirty reads and writes of a roster of a hundred. The writer
// takes at most a third of a core whatever the rate of changes: after a
// batch that took d, it rests for 2d and writes what came meanwhile as one
// batch. With nothing pending it sleeps until a post wakes it: idle teams
// cost nothing.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/clock.h"
#include "store/roster.h"
#include "store/team_store.h"

namespace mates::team {

class StatusWriter {
 public:
  // The roster in `store` (which outlives this), or in `owned`.
  explicit StatusWriter(TeamStore& store);
  explicit StatusWriter(std::unique_ptr<TeamStore> owned);
  // Writes what is pending, then joins the thread.
  ~StatusWriter();
  StatusWriter(const StatusWriter&) = delete;
  StatusWriter& operator=(const StatusWriter&) = delete;

  // Written soon (any thread).
  void Post(const std::string& team, const std::string& member, MemberStatus status);
  // On disk when it returns, superseding anything posted for `member`
  // before; written with whatever else is pending then.
  Status Write(const std::string& team, const std::string& member, MemberStatus status);
  // Returns once everything posted so far is on disk.
  void Flush();

 private:
  void Start();
  using Key = std::pair<std::string, std::string>;  // team, member
  void Main();
  // One roster update per team for `batch`; how each team's went.
  std::map<std::string, Status> WriteBatch(const std::map<Key, MemberStatus>& batch);

  // Where the rosters are.
  const std::unique_ptr<TeamStore> owned_;
  TeamStore& store_;
  std::mutex mu_;
  // The writer waits on work_cv_ (woken only when it waits for work, not
  // while it rests); Write and Flush wait on written_cv_. One variable for
  // both woke every teammate blocked in Write at every Post.
  std::condition_variable work_cv_;
  std::condition_variable written_cv_;
  bool waiting_for_work_ = false;  // guarded by mu_: a post wakes it
  static constexpr int kRestPerWrite = 2;
  std::map<Key, MemberStatus> pending_;  // guarded by mu_
  SteadyClock::time_point rest_until_;   // guarded by mu_: no batch taken before
  bool busy_ = false;                    // guarded by mu_: a batch is being written
  bool stop_ = false;                    // guarded by mu_
  bool exited_ = false;                  // guarded by mu_: the thread is done
  // Batches taken (the next one gets taken_ + 1) and written so far; a
  // Write waits for the batch after the one in flight when it came.
  uint64_t taken_ = 0;    // guarded by mu_
  uint64_t written_ = 0;  // guarded by mu_
  // How the last write of each team's statuses went, for the Writes waiting.
  std::map<std::string, Status> results_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace mates::team
