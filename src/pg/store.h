// Team state in PostgreSQL (DESIGN §13): the same semantics as the file
// store's mailbox and board claims, built from transactions instead of
// OFD locks and renames.
//
//   mailbox  Append is one INSERT (an id seen before is dropped: appending
//            again after a lost answer is safe) and a NOTIFY in the same
//            statement. A drain is a transaction: it takes the member's
//            advisory lock (one drainer at a time), reads the rows, and the
//            reader's Commit deletes them and commits. A reader that dies
//            before it commits rolls back with its connection: the rows
//            are delivered again; `already_delivered` suppresses what its
//            durable record holds.
//   board    A claim is one UPDATE of a row picked FOR UPDATE SKIP LOCKED
//            among the pending, unblocked tasks (assigned ones first):
//            racing claimers take different rows and never wait on each
//            other (one call of a server-side function, mates_claim_next).
//            A NOTIFY on the board's key goes with every change that can
//            make a task claimable (a new task, a completion).
//
// Connections come from a small pool; one that is lost is dropped (one
// whose server hung up while it lay idle too, so a restarted server costs
// no failed statement), and the next operation connects again. A server
// that cannot be reached is Unavailable to the caller at once, unless the
// store was told to wait out outages (a host: its agents wait for the
// server and go on); a connection lost under a statement is Unavailable
// either way (whether that statement took effect is not known).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "pg/connection.h"
#include "pg/listener.h"
#include "store/claim_line.h"
#include "store/forecast.h"
#include "store/merges.h"
#include "store/message.h"
#include "store/requests.h"
#include "store/roster.h"
#include "store/task_board.h"
#include "store/team_mail.h"
#include "store/team_store.h"
#include "store/task.h"

namespace mates::pg {

class Store;

// A connection taken from the pool, given back (if still good) when
// dropped.
class Lease {
 public:
  Lease(Store* s, Connection c) : store_(s), conn_(std::move(c)) {}
  Lease(Lease&& o) noexcept : store_(o.store_), conn_(std::move(o.conn_)) { o.store_ = nullptr; }
  Lease& operator=(Lease&&) noexcept = delete;
  ~Lease();
  Connection& operator*() { return conn_; }
  Connection* operator->() { return &conn_; }

 private:
  Store* store_;
  Connection conn_;
};

// Teams and their rosters: the file store's rules (NewTeamConfig,
// AddMemberTo), the config document in a row, changed in a transaction
// that holds the row (SELECT … FOR UPDATE) and notifies TeamKey(team).
class RosterRows {
 public:
  explicit RosterRows(Store& store) : store_(store) {}
  Result<TeamConfig> CreateTeam(const std::string& team, const std::string& lead = "lead",
                                const std::string& description = "");
  Result<TeamConfig> LoadTeam(const std::string& team);
  // TeamStore::HasTeam: its row, not its roster.
  Status HasTeam(const std::string& team);
  Result<TeamConfig> UpdateTeam(const std::string& team, const std::function<Status(TeamConfig&)>& mutate);
  // TeamStore::SetStatuses in one statement: the roster's members' statuses
  // changed in place on the server (the last change of a member wins; one
  // not in the roster is passed over), and its NOTIFY. A roster the
  // statement cannot change (none yet, over its bound, not a roster) goes
  // through UpdateTeam, which says what is wrong with it.
  Status SetStatuses(const std::string& team, const std::vector<std::pair<std::string, MemberStatus>>& changes);
  Result<Member> AddMember(const std::string& team, Member member);
  Status SetMemberStatus(const std::string& team, const std::string& member, MemberStatus status);
  // Every team's name, sorted.
  Result<std::vector<std::string>> ListTeams();
  // Deletes a team and everything it holds (its inboxes, board, log and
  // requests go with it). NotFound if there is none.
  Status DeleteTeam(const std::string& team);

 private:
  Store& store_;
};

// Mailboxes.
class MailRows {
 public:
  using AlreadyDelivered = std::function<bool(const std::string& id)>;
  explicit MailRows(Store& store) : store_(store) {}
  Status Append(const std::string& team, const std::string& member, const Message& m);
  // The same on `c`, in whatever transaction it is in.
  static Status AppendOn(Connection& c, const std::string& team, const std::string& member, const Message& m);
  Result<std::vector<Message>> Peek(const std::string& team, const std::string& member);
  Result<size_t> PendingCount(const std::string& team, const std::string& member);
  // Every undelivered message of the team, by recipient, in order.
  Result<std::vector<std::pair<std::string, std::vector<Message>>>> PendingByMember(const std::string& team);
  // An uncommitted drain: its transaction stays open on its connection
  // until Commit; dropped without it, its messages are delivered again.
  struct Batch {
    std::vector<Message> messages;
    std::vector<int64_t> rows;  // what Commit deletes (unreadable ones too)
    std::string team, member;   // whose inbox (its lease fences the commit)
    std::optional<Lease> lease;
    ~Batch();
    Batch() = default;
    Batch(Batch&&) noexcept = default;
  };
  Result<Batch> BeginDrain(const std::string& team, const std::string& member,
                           const AlreadyDelivered& already_delivered = {});
  Status Commit(Batch& batch);
  Result<std::vector<Message>> Drain(const std::string& team, const std::string& member,
                                     const AlreadyDelivered& already_delivered = {});

 private:
  Store& store_;
};

// The message log: every message sent, once (an id logged before is not
// logged again), in order; a NOTIFY on LogKey(team) with each. A team's
// messages are logged one at a time (a lock of the team's log held to the
// commit), so their numbers are in the order they became visible: a
// reader that moved past one never finds an earlier one later.
class LogRows {
 public:
  explicit LogRows(Store& store) : store_(store) {}
  Status Append(const std::string& team, const Message& m);
  // `copies` into their recipients' inboxes and `m` into the log, in one
  // transaction (TeamMail::Post): nobody reads a copy before `m` has its
  // number, so an answer to it is numbered after it.
  Status AppendDelivered(const std::string& team, const std::vector<Message>& copies, const Message& m);
  Result<std::optional<Message>> Find(const std::string& team, const std::string& id);
  // At most `max` messages logged after `*cursor` (0: from the start), and
  // no more than about `max_bytes` of them (one at least; 0: no bound);
  // `*cursor` moves past them.
  Result<std::vector<Message>> Read(const std::string& team, int64_t* cursor, size_t max = 1000,
                                    size_t max_bytes = 0);
  // The last `n` messages, oldest first, no more than about `max_bytes` of
  // them (the last one at least; 0: no bound); `*cursor` (if given) is
  // where what follows them starts, for Read.
  Result<std::vector<Message>> Tail(const std::string& team, size_t n, int64_t* cursor = nullptr,
                                    size_t max_bytes = 0);

 private:
  Store& store_;
};

// Protocol requests (store/requests.h), one row each.
class RequestRows {
 public:
  explicit RequestRows(Store& store) : store_(store) {}
  Status Create(const std::string& team, const ProtocolRequest& r);
  Result<ProtocolRequest> Get(const std::string& team, const std::string& id);
  // FailedPrecondition if it was answered already (the row is held while
  // it is checked: two answers at once resolve it once).
  Result<ProtocolRequest> Resolve(const std::string& team, const std::string& id, bool approve,
                                  const std::string& response);
  Result<std::vector<ProtocolRequest>> List(const std::string& team);

 private:
  Store& store_;
};

// Merge requests (store/merges.h), a row each, numbered from 1 within the
// team; every change sends a NOTIFY on MergeKey(team). Update holds the row
// while `mutate` decides (two decisions at once apply in turn).
class MergeRows {
 public:
  explicit MergeRows(Store& store) : store_(store) {}
  Result<MergeRequest> Create(const std::string& team, MergeRequest m);
  Result<MergeRequest> Get(const std::string& team, int64_t id);
  Result<std::vector<MergeRequest>> List(const std::string& team);
  Result<MergeRequest> Update(const std::string& team, int64_t id,
                              const std::function<Status(MergeRequest&)>& mutate);

 private:
  Store& store_;
};

// The board: a task a row.
class TaskRows {
 public:
  explicit TaskRows(Store& store) : store_(store) {}
  Result<Task> Create(const std::string& team, const TaskDraft& draft);
  Result<Task> Get(const std::string& team, int64_t id);
  Result<std::vector<Task>> List(const std::string& team, bool include_deleted = false);
  // The next pending task whose blockers are all completed (or deleted):
  // one assigned to `owner` first, then an unowned one by id; nullopt if
  // there is none. `outlook`, if given, says what the claim left for
  // others (up to its count_up_to unowned tasks), in the same round trip.
  Result<std::optional<Task>> ClaimNext(const std::string& team, const std::string& owner,
                                        ClaimOutlook* outlook = nullptr);
  // `owner` finishes its task: in_progress -> completed.
  Result<Task> Complete(const std::string& team, int64_t id, const std::string& owner);
  // DESIGN §4's update, with the file board's rules (store/task_rules.h):
  // validated whole, then written in one transaction under the board's
  // lock, the other sides of new links and of a deletion with it.
  Result<Task> Update(const std::string& team, int64_t id, const TaskPatch& patch, const Caller& caller);
  // Compare-and-set, as Board::Claim: pending, unowned (or already
  // `owner`'s) and unblocked -> in_progress owned by `owner`.
  Result<Task> Claim(const std::string& team, int64_t id, const std::string& owner);

  // The line this process's idle teammates of `team` wait in
  // (TeamStore::ClaimLineOf): one per team, kept while the store lives,
  // told of every NOTIFY on BoardKey(team) (and every reconnect) by the
  // listener. Unavailable if the channel cannot be listened to.
  Result<std::shared_ptr<ClaimLine>> ClaimLineOf(const std::string& team);

 private:
  // Complete's statement: the task completed if it is in progress for
  // `owner`, else nullopt (nothing written).
  Result<std::optional<Task>> CompleteIfInProgress(const std::string& team, int64_t id, const std::string& owner);

  Store& store_;
  struct Line {
    std::shared_ptr<ClaimLine> line;
    Listener::Subscription changes;  // destroyed first: no call to the line after
  };
  std::mutex lines_mu_;
  std::map<std::string, Line> lines_;  // by team; guarded by lines_mu_
};

// A member's journal copy (TeamStore::JournalOf), and the documents its
// host keeps current for every machine: what each member is doing
// (agent/activity.h), and the conflicts forecast (DESIGN §30).
class JournalRows {
 public:
  explicit JournalRows(Store& store) : store_(store) {}
  // Every line in order (a gap ends it: what follows was never whole).
  Result<std::vector<std::string>> Lines(const std::string& team, const std::string& member);
  // The bytes of its lines, together (0 for none).
  Result<uint64_t> Bytes(const std::string& team, const std::string& member);
  // The lines from `first` on (a number held already takes the new line).
  Status Put(const std::string& team, const std::string& member, int64_t first,
             const std::vector<std::string>& lines);
  // All of it anew.
  Status Replace(const std::string& team, const std::string& member, const std::vector<std::string>& lines);

  // What the team's agents spent, by model (schema step 13 keeps the
  // sums as journal lines are written).
  Result<std::vector<ModelSpend>> Spent(const std::string& team);

  // A member's latest activity document, put with a NOTIFY on
  // ActivityKey(team) and without waiting out an outage; read back as
  // (member, document), a document over kMaxStateFileBytes left out.
  Status PutActivity(const std::string& team, const std::string& member, const std::string& doc);
  Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& team);
  // The team's conflict forecasts (store/forecast.h) as its host last put
  // them, with a NOTIFY on ForecastKey(team); read back as put (a document
  // over kMaxForecastBytes as none).
  Status PutForecasts(const std::string& team, const std::vector<ConflictForecast>& forecasts);
  Result<std::vector<ConflictForecast>> Forecasts(const std::string& team);

 private:
  Store& store_;
};

// Liveness (DESIGN §13, §32): a host holds each agent it hosts by a lease,
// a row of mates_agent_leases that it renews every second for kLeaseS more
// (the server's clock). Every lease of a process names one session of its
// own (its pid): holding an agent costs a statement, and one statement a
// second renews them all. A lease ends when it is not renewed in time (a
// host frozen or cut off), or at once when that session is gone (a host
// killed with -9 closes its sockets); then another host may take it, and
// its fencing token grows by one. Every claim, completion, send, inbox
// drain, merge submission, status and journal write this process makes for
// an agent it holds carries the token (Store::Fence), and the server
// refuses a stale one: a host thawed or healed after its lease was taken
// redoes nothing and overwrites nothing.
class LivenessLock {
 public:
  LivenessLock() = default;
  LivenessLock(LivenessLock&&) noexcept = default;
  LivenessLock& operator=(LivenessLock&&) noexcept = default;
  // Released (the row says so, and the next holder took nothing over).
  ~LivenessLock();
  // Hold::OnLost: once it is seen taken by another host, `lost` is called
  // (from the keeper's thread, or the thread that found it) and the lease
  // is not renewed again.
  void OnLost(std::function<void()> lost);
  // Hold::StillHeld: true while the last renewal is recent enough that the
  // lease cannot have ended (kLeaseS less a margin, on this machine's
  // clock) and its session is up; past that, the leases are renewed now:
  // false if that fails (this host stops acting for the agent until it
  // renews) or finds this one taken (`lost` is called).
  bool StillHeld();
  int64_t token() const;

 private:
  friend class LivenessLocks;
  struct Held;
  explicit LivenessLock(std::shared_ptr<Held> held) : held_(std::move(held)) {}
  std::shared_ptr<Held> held_;
};

// The leases this process holds, their session, and their keeper, which
// renews them every second (a session lost, say with a server restart, is
// opened again and the leases renewed on it if nobody took them meanwhile)
// and reports each lease found taken.
class LivenessLocks {
 public:
  static constexpr double kLeaseS = 5;  // a lease lasts this long past its last renewal
  explicit LivenessLocks(Store& store);
  ~LivenessLocks();
  // Conflict if another live lease holds it: the agent is hosted elsewhere.
  Result<LivenessLock> Hold(const std::string& team, const std::string& agent);
  // Whether a live lease holds `agent` now.
  Result<bool> IsHosted(const std::string& team, const std::string& agent);
  // The team's leases, live or not.
  Result<std::vector<AgentLease>> Leases(const std::string& team);
  // The token this process holds `agent` by, if it holds it.
  std::optional<int64_t> TokenOf(const std::string& team, const std::string& agent);
  // A write for `agent` was refused as stale: its lease is lost (reported
  // once, `lost` called).
  void Refused(const std::string& team, const std::string& agent, const std::string& why);

 private:
  friend class LivenessLock;
  using Taken = std::vector<std::pair<std::shared_ptr<LivenessLock::Held>, std::string>>;
  // The keeper's thread: every second, the leases held are renewed.
  void Keep();
  // Under session_mu_: the session, opened again if it is gone (true
  // then: the leases held name the old one until they are renewed).
  Result<bool> SessionLocked(double timeout_s);
  // Under session_mu_: renews every lease held, on the session, in one
  // statement; those found taken by another host are returned with why
  // (not yet marked lost: the caller does that under each one's mu). One
  // a write of this host holds is passed over, for the next renewal.
  Result<Taken> RenewLocked();
  // StillHeld's look (under h.mu).
  bool Fresh(LivenessLock::Held& h);
  void Release(LivenessLock::Held& h);
  // Marks each taken lease lost, under its mu (none held by the caller).
  void LoseAll(const Taken& taken);
  void Lose(LivenessLock::Held& h, const std::string& why);

  Store& store_;
  std::string holder_;  // this process: "host PID on MACHINE"
  // Lock order: a lease's mu, then session_mu_, then mu_.
  std::mutex session_mu_;
  Connection session_;  // guarded by session_mu_: the session every lease here names
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::weak_ptr<LivenessLock::Held>> kept_;  // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::thread keeper_;                                   // started with the first lease held
};

// The store: a pool of connections to one server, its listener, and the
// rows of each part of a team's state.
class Store {
 public:
  // Connects and checks the schema (FailedPrecondition naming what to run
  // otherwise).
  static Result<std::unique_ptr<Store>> Open(const Target& target);

  const Target& target() const { return target_; }

  // From now on an operation that finds the server out of reach tries
  // again (backing off from 50 ms to 2 s) for up to `seconds`, saying so in
  // the log once per outage; 0 (the default) fails at once.
  void WaitOutOutages(double seconds);
  // Waits under way and to come give up at once (a host told to stop).
  void StopWaiting();

  // `wait`: an outage is waited out if the store was told to
  // (WaitOutOutages); false fails at once.
  Result<Lease> Acquire(bool wait = true);

  // Wake-ups: subscribe a waker to InboxKey(team, member) or
  // BoardKey(team); it is notified when that may have changed, and after
  // the listener reconnects.
  Listener& listener() { return listener_; }

  RosterRows& rosters() { return rosters_; }
  MailRows& mail() { return mail_; }
  LogRows& log() { return log_; }
  RequestRows& requests() { return requests_; }
  MergeRows& merges() { return merges_; }
  TaskRows& tasks() { return tasks_; }
  JournalRows& journals() { return journals_; }
  LivenessLocks& liveness() { return liveness_; }

  // Fencing (DESIGN §32): the next statement on `c` does not run
  // (FailedPrecondition naming the lease's holder now, and the lease is
  // lost) unless the lease this process holds `agent` by is still the
  // agent's newest. The check (mates_fence, schema.cc) goes with that
  // statement, in its round trip, and holds the lease's row FOR SHARE to
  // the end of its transaction (an explicit one, or the statement's own),
  // so no host takes the lease over in between. Nothing to check for an
  // agent this process does not hold (a person's `mates` command, another
  // host's agent).
  void Fence(Connection& c, const std::string& team, const std::string& agent);
  // `write`, one statement on `c`, fenced for `agent`: the check and the
  // statement are one transaction and one round trip.
  template <typename Fn>
  auto Fenced(Connection& c, const std::string& team, const std::string& agent, Fn&& write) -> decltype(write()) {
    Fence(c, team, agent);
    auto r = write();
    c.DropUnsent();  // it ran no statement: nothing was written
    return r;
  }

 private:
  friend class Lease;
  explicit Store(const Target& t) : target_(t), listener_(t) {}
  void Give(Connection c);

  Target target_;
  Listener listener_;
  std::mutex mu_;
  std::condition_variable outage_cv_;  // StopWaiting
  std::vector<Connection> idle_;       // guarded by mu_
  double patience_s_ = 0;              // guarded by mu_
  bool stop_waiting_ = false;          // guarded by mu_
  bool in_outage_ = false;             // said so in the log; guarded by mu_

  // Declared after the pool and the listener: gone (the keeper stopped,
  // the claim lines unsubscribed) before them.
  RosterRows rosters_{*this};
  MailRows mail_{*this};
  LogRows log_{*this};
  RequestRows requests_{*this};
  MergeRows merges_{*this};
  TaskRows tasks_{*this};
  JournalRows journals_{*this};
  LivenessLocks liveness_{*this};
};

// A team's board in `store` (which must outlive it) as a TaskBoard.
std::unique_ptr<TaskBoard> TeamBoard(Store& store, const std::string& team);
// A team's roster, inboxes, log and requests in `store` (which must outlive
// it), for a Messenger.
std::unique_ptr<TeamMail> StoreMail(Store& store, const std::string& team);
// The teams of `store` (which must outlive it) as a TeamStore, seen from
// the workspace `ws` of this machine: a deleted team is archived there
// (pg/export.h), and a host of it there is seen in its host.json; without
// one, Archive says it cannot and no host is seen.
std::unique_ptr<TeamStore> StoreTeams(Store& store, std::optional<Workspace> ws = std::nullopt);
// The same, owning the store.
std::unique_ptr<TeamStore> StoreTeams(std::unique_ptr<Store> store, Workspace ws);

}  // namespace mates::pg
