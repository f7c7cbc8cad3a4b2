// TeamStore: a store of teams (DESIGN §13, §17) as what works on one team
// sees it — its roster, board, mail, members' inboxes and liveness, its
// log, activity and journals — wherever it is kept: the files under a
// workspace (FileTeamStore) or a PostgreSQL database (stores/open_store.h
// opens either from a URL). Every caller — the commands, a host, the
// dashboard, `mates mcp`, the tools of an agent, the merge queue — works on
// this interface and never asks which backend it has: a store operation is
// added to the interface and its backends, nowhere else. There is always a
// store: no caller passes null to mean "the files".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/waker.h"
#include "store/archive.h"
#include "store/forecast.h"
#include "store/host_info.h"
#include "store/merges.h"
#include "store/message.h"
#include "store/roster.h"
#include "store/task_board.h"
#include "store/team_mail.h"
#include "store/workspace.h"

namespace mates {

class ClaimLine;

// Who holds an agent's lease (TeamStore::Leases), as status shows it.
struct AgentLease {
  std::string agent;
  std::string holder;      // "host PID on MACHINE"
  int64_t token = 0;       // its fencing token: one more at each new holder
  bool live = false;       // not released, not ended
  std::string taken_from;  // the holder before, whose lease ended without a release ("" if none)
  double taken_at = 0;     // when it was taken over (wall seconds), 0 if not
};

// Something held while this lives: a watch, a liveness lock.
class Hold {
 public:
  virtual ~Hold() = default;
  // `lost` is called once, from another thread, if another process takes
  // what is held (a PostgreSQL liveness lock lost with its connection and
  // taken by another host before it could be taken again); it must not
  // block, and is not called once the Hold is gone. The file store's locks
  // are the kernel's and never lost.
  virtual void OnLost(std::function<void()> lost) { (void)lost; }
  // Whether it is still held, looked at now, before doing what only its
  // holder may: false once another process has taken it. A PostgreSQL
  // liveness lock whose connection is seen hung up (one poll, no round
  // trip) is taken again first, on the caller's thread (`lost` is called
  // if another process has it), so a holder that asks does not act in the
  // second before the keeper would have looked.
  virtual bool StillHeld() { return true; }
};

// A member's inbox.
class Inbox {
 public:
  virtual ~Inbox() = default;
  virtual Result<std::vector<Message>> Peek() = 0;
  // How many messages wait (a reader's in-flight ones too). Where a count
  // is a round trip (PostgreSQL), an inbox object that found itself empty
  // twice answers 0 until its next wake-up: a message committed a moment
  // ago counts once its notification is in, which also wakes a waiter on
  // WatchWith.
  virtual Result<size_t> PendingCount() = 0;
  // A cheap look: false if the inbox is empty. A store out of reach says
  // false too: whoever looks would only spin (a model call with nothing
  // new, say); the look after it is back sees the messages, and its
  // listener wakes every waiter when it is.
  virtual bool MayHavePending() = 0;
  // Ids the taker has had already (a reader that died after its journal
  // took them but before the inbox let go): they are not handed over again.
  using AlreadyDelivered = std::function<bool(const std::string& id)>;
  struct Taken {
    std::vector<Message> messages;
    // The inbox may hold more (these were left by a reader that died):
    // look again.
    bool more = false;
  };
  // Takes what the inbox holds: `keep(messages)` is called first; true
  // commits (they are gone), false leaves them for the next reader (a
  // reader that dies in between leaves them too).
  virtual Result<Taken> Take(const std::function<bool(const std::vector<Message>&)>& keep,
                             const AlreadyDelivered& already = {}) = 0;
  // A wake-up for every change of the inbox while the watch lives.
  using Watch = Hold;
  virtual Result<std::unique_ptr<Watch>> WatchWith(std::shared_ptr<Waker> waker) = 0;
};

// What an Inbox's Take does with a drain it began: `keep` decides;
// committed (with `commit(batch)`) if kept, else left to roll back.
template <typename Batch, typename CommitFn>
Result<Inbox::Taken> KeepOrLeave(Batch& batch, bool more,
                                 const std::function<bool(const std::vector<Message>&)>& keep, CommitFn commit) {
  Inbox::Taken taken;
  if (!keep(batch.messages)) return taken;
  MATES_RETURN_IF_ERROR(commit(batch));
  taken.more = more;
  taken.messages = std::move(batch.messages);
  return taken;
}

// A Hold of `sub` (a subscription or a lock of either store).
template <typename Subscription>
std::unique_ptr<Hold> Holding(Subscription sub) {
  struct Held : Hold {
    explicit Held(Subscription s) : sub(std::move(s)) {}
    Subscription sub;
  };
  return std::make_unique<Held>(std::move(sub));
}

// A member's journal (agent/journal.h) as the store keeps a copy of it,
// for a host on another machine to resume the member from (DESIGN §13):
// the journal's lines in order, numbered from 0 as its file holds them.
class JournalCopy {
 public:
  virtual ~JournalCopy() = default;
  // Every line, in order (Corrupt past the bounds of limits.h).
  virtual Result<std::vector<std::string>> Lines() = 0;
  // Lines numbered from `first` on; a number held already takes the new
  // line (an append retried after a lost answer is not doubled, and what
  // lay past a gap is overwritten).
  virtual Status Put(int64_t first, const std::vector<std::string>& lines) = 0;
  // The copy starts over with `lines` (a journal rewritten or moved).
  virtual Status Replace(const std::vector<std::string>& lines) = 0;
};

// The parts of a team a watch can follow (TeamStore::Watch).
enum class TeamPart {
  kRoster,     // the roster (statuses included)
  kHost,       // who hosts the team (host.json; a database's hosts are seen by liveness)
  kBoard,      // the task board
  kLog,        // the message log
  kRequests,   // protocol requests (made and answered by logged messages)
  kActivity,   // what each member is doing (agent/activity.h)
  kJournals,   // the members' journals
  kMerges,     // merge requests
  kForecasts,  // the conflicts forecast (store/forecast.h)
};

// A page of a team's message log and the cursor (opaque to the reader)
// that what follows it starts from.
struct LogPage {
  std::vector<Message> messages;
  uint64_t next = 0;
  bool more = false;  // cut short: ask again at once
};

// A member's journal as text, for a person.
struct JournalText {
  std::string text;
  bool too_large = false;  // over the bound asked for: `text` is empty
  std::string where;       // where it is, for a person
};

class TeamStore {
 public:
  virtual ~TeamStore() = default;
  // Where the teams are, as said to a person (no password).
  virtual std::string where() const = 0;
  // The system whose teams these are when they are not mates' own ("Claude
  // Code", DESIGN §24: read, steered a little); "" for mates' stores.
  virtual std::string foreign() const { return ""; }
  // Whether machines other than this one share these teams (a database):
  // a teammate's worktree is then made by whichever host runs it, git
  // works through a remote, and a journal has a copy in the store.
  virtual bool spans_machines() const = 0;
  // What callers do differently with these teams, each asked by what it is
  // for rather than by which backend this is (DESIGN §33); by default from
  // spans_machines().
  // Said after "is already running in another process".
  virtual std::string ElsewhereWords() const { return spans_machines() ? " (on this machine or another)" : ""; }
  // The remote a worktree team's work travels through when none is named
  // ("" = none: one machine holds it all).
  virtual std::string DefaultGitRemote() const { return spans_machines() ? kDefaultGitRemote : ""; }
  // Whether this workspace makes and cleans up its members' worktrees (a
  // shared store's are each made by the host that runs the member).
  virtual bool WorktreesHere() const { return !spans_machines(); }
  // Whether the teams' own files (journals, activity, inboxes) are under
  // this workspace, to be watched and read there.
  virtual bool FilesHere() const { return !spans_machines() && foreign().empty(); }
  // Whether a team's teammates may be hosted apart from its lead, and
  // taken over from a host that died (DESIGN §13).
  virtual bool HostsApart() const { return spans_machines(); }
  // Every team's name, sorted.
  virtual Result<std::vector<std::string>> ListTeams() = 0;
  // Deletes a team and everything it holds, for good (NotFound if none),
  // and what this workspace kept of it.
  virtual Status DeleteTeam(const std::string& team) = 0;
  virtual Result<TeamConfig> LoadTeam(const std::string& team) = 0;
  // NotFound ("no team 'T'") unless the team is there; its roster need not
  // be read (a board tool's check before each change: on PostgreSQL, a
  // roster of a hundred members read and parsed at every task update).
  virtual Status HasTeam(const std::string& team) { return LoadTeam(team).status(); }
  // The roster's changes (the file store's rules, AddMemberTo and
  // NewTeamConfig, on both): AlreadyExists for a team or member there.
  virtual Result<TeamConfig> CreateTeam(const std::string& team, const std::string& lead,
                                        const std::string& description) = 0;
  virtual Result<Member> AddMember(const std::string& team, Member member) = 0;
  // Read-modify-write of the roster as one change; `mutate` may refuse.
  virtual Result<TeamConfig> UpdateTeam(const std::string& team,
                                        const std::function<Status(TeamConfig&)>& mutate) = 0;
  // Several members' statuses as one change (members not in the roster
  // passed over); through UpdateTeam unless the store has a shorter way.
  virtual Status SetStatuses(const std::string& team,
                             const std::vector<std::pair<std::string, MemberStatus>>& changes);
  // Hosts `member` while the Hold lives (its liveness lock: a host that
  // dies lets go); Conflict if some process hosts it already.
  virtual Result<std::unique_ptr<Hold>> HoldLiveness(const std::string& team, const std::string& member) = 0;
  // A wake-up for every change of the team's task board, or its roster
  // (statuses), while the Hold lives.
  // A wake-up for every change of `part` of `team` while the Hold lives.
  // The file store cannot watch a folder that is not there yet (no board,
  // no request so far): NotFound then, and a watcher asks again later.
  virtual Result<std::unique_ptr<Hold>> Watch(const std::string& team, TeamPart part,
                                              std::shared_ptr<Waker> waker) = 0;
  Result<std::unique_ptr<Hold>> WatchBoard(const std::string& team, std::shared_ptr<Waker> waker) {
    return Watch(team, TeamPart::kBoard, std::move(waker));
  }
  Result<std::unique_ptr<Hold>> WatchRoster(const std::string& team, std::shared_ptr<Waker> waker) {
    return Watch(team, TeamPart::kRoster, std::move(waker));
  }
  // The line this process's idle teammates of `team` wait in, woken by the
  // board's changes as many at a time as there is work (store/claim_line.h);
  // null where the store has none (they each watch the board then): the
  // file store's is the process's line for the board's folder, a
  // database's one per team, told by the board's notifications.
  virtual Result<std::shared_ptr<ClaimLine>> ClaimLineOf(const std::string& /*team*/) {
    return std::shared_ptr<ClaimLine>();
  }
  virtual std::unique_ptr<TaskBoard> Board(const std::string& team) = 0;
  // The board of a team that must be there, for a tool: an operation on a
  // team that is not (deleted meanwhile, say) fails NotFound naming it
  // rather than making its board again. Each backend checks the cheap way
  // (the file store: its config file; a database: after an empty answer).
  virtual Result<std::unique_ptr<TaskBoard>> CheckedBoard(const std::string& team) = 0;
  // The team's merge requests (DESIGN §12), and a wake-up for every change
  // of them while the Hold lives.
  virtual std::unique_ptr<MergeBook> Merges(const std::string& team) = 0;
  Result<std::unique_ptr<Hold>> WatchMerges(const std::string& team, std::shared_ptr<Waker> waker) {
    return Watch(team, TeamPart::kMerges, std::move(waker));
  }
  virtual std::unique_ptr<TeamMail> Mail(const std::string& team) = 0;
  virtual std::unique_ptr<Inbox> InboxOf(const std::string& team, const std::string& member) = 0;
  // Whether some process hosts `member` now (its liveness lock is held).
  virtual bool IsHosted(const std::string& team, const std::string& member) = 0;
  // Who holds each agent's lease, where hosts hold agents by leases that
  // another host takes over once they end (PostgreSQL, DESIGN §32); none
  // where liveness is a lock on this machine.
  virtual Result<std::vector<AgentLease>> Leases(const std::string& team) {
    (void)team;
    return std::vector<AgentLease>{};
  }
  // The last `n` messages of the team's log, oldest first.
  virtual Result<std::vector<Message>> LastMessages(const std::string& team, size_t n) = 0;
  // Every message of the team's log, in order, a page at a time.
  virtual Status ReadLog(const std::string& team, const std::function<void(const Message&)>& each) = 0;
  // The last `n` messages (about `max_bytes` of them at most, the last one
  // at least; 0: the store's own bound); `next` is taken before them, so
  // what is logged meanwhile comes again after it.
  virtual Result<LogPage> TailLog(const std::string& team, size_t n, size_t max_bytes) = 0;
  // What follows the cursor `after` (0: the start), about `max_bytes` of it
  // (one message at least; 0: the store's own bound).
  virtual Result<LogPage> LogAfter(const std::string& team, uint64_t after, size_t max_bytes) = 0;
  // Takes the team out of the store, keeping what it did readable (DESIGN
  // §11) in an archive of the workspace.
  virtual Result<ArchivedTeam> Archive(const std::string& team) = 0;
  // Each member's latest activity document (agent/activity.h), as
  // (member, document); one that cannot be read whole is left out.
  virtual Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& team) = 0;
  // `member`'s journal as text, unless it is over `max_bytes` (NotFound if
  // it has none): the file, or the store's copy, which has every
  // machine's agents.
  virtual Result<JournalText> ReadJournal(const std::string& team, const std::string& member,
                                          size_t max_bytes) = 0;
  // The host of `team` seen from this workspace if one is alive (its
  // lead's liveness is held, DESIGN §11): what its host.json says.
  virtual std::optional<HostInfo> LiveHost(const std::string& team) = 0;
  // The conflicts forecast for `team` (DESIGN §30), put by its forecaster
  // where every machine that shares the team reads them; read back only
  // while their writer lives (the files: the process that wrote them; a
  // database: the lead's host), a dead one's are none.
  virtual Status PutForecasts(const std::string& team, const std::vector<ConflictForecast>& forecasts) = 0;
  virtual std::vector<ConflictForecast> Forecasts(const std::string& team) = 0;
  // A host's store waits out an outage of its server for up to `seconds`
  // (DESIGN §13) instead of failing at once; StopWaiting gives up every
  // wait (a host told to stop). Nothing to wait for in the files. A thread
  // marked by NeverWaitOutOutagesOnThisThread fails at once all the same.
  virtual void WaitOutOutages(double /*seconds*/) {}
  virtual void StopWaiting() {}
  // The store's copy of `member`'s journal; null where the journal file
  // under the workspace is the only one (the file store: one machine).
  virtual std::unique_ptr<JournalCopy> JournalOf(const std::string& /*team*/, const std::string& /*member*/) {
    return nullptr;
  }
  // What `team`'s agents spent, by model, on every machine: the sums of
  // the usage lines of the store's journal copies, as of now. nullopt where
  // the store keeps no copies (the file store: the team's one host counts).
  virtual Result<std::optional<std::vector<ModelSpend>>> Spent(const std::string& /*team*/) {
    return std::optional<std::vector<ModelSpend>>();
  }
  // Where `member`'s activity document (agent/activity.h) goes besides its
  // file, for people on other machines to see; null where the file is all
  // (the file store). Called on the activity writer's thread: it must not
  // wait out an outage (the next change writes it again).
  using ActivitySink = std::function<void(const std::string& document)>;
  virtual ActivitySink ActivityOf(const std::string& /*team*/, const std::string& /*member*/) { return {}; }
};

// How a process uses a store.
struct StoreUse {
  // A process that does one operation and ends (a CLI command): the file
  // store's boards keep no inotify watch to refresh between operations.
  bool one_shot = false;
};

// The teams of the workspace `ws`, in the process whose parts `env` are
// (it must outlive the store).
struct Env;
std::unique_ptr<TeamStore> FileTeamStore(Workspace ws, const Env& env, StoreUse use = {});

// What a wait does with a failed look (DESIGN §13: a lost connection is an
// error that waiters survive): a store it cannot reach now (Unavailable) is
// waited out — returns true once `waker` moves past `seen` (a PostgreSQL
// store's listener wakes its waiters when it is back) or after 2 s, to look
// again; false for any other error, or when `deadline` has passed (the
// caller reports `s`).
bool WaitOutOutage(const Status& s, Waker& waker, uint64_t seen, const Deadline& deadline);

// From now on the calling thread's store calls fail at once in an outage,
// whatever their store was told (TeamStore::WaitOutOutages): a page served
// from its host's store answers 503 on its threads while the host's agents
// wait the outage out. For the thread's life; a backend that waits asks
// WaitsOutOutagesOnThisThread.
void NeverWaitOutOutagesOnThisThread();
bool WaitsOutOutagesOnThisThread();

// How long a host that is starting allows for a predecessor killed a
// moment before: the kernel frees a dead process's locks (and PostgreSQL a
// closed connection's) a little after the process is gone — here tens of
// microseconds after `wait` had reaped it — so a host restarted at once
// found its team "already running in another process" and its teammates
// hosted (the chaos test in hostile_team_test.cc: one restart in ten).
inline constexpr double kDeadHostGraceS = 0.2;

// `member`'s liveness (TeamStore::HoldLiveness), taken again while it is
// held (Conflict) until `until`, backing off from 1 ms.
Result<std::unique_ptr<Hold>> HoldLivenessAllowingForTheDead(TeamStore& store, const std::string& team,
                                                             const std::string& member, const Deadline& until);
// Whether `member` is hosted (TeamStore::IsHosted) and stays so until
// `until`: false as soon as it is not.
bool StillHostedAt(TeamStore& store, const std::string& team, const std::string& member, const Deadline& until);

}  // namespace mates
