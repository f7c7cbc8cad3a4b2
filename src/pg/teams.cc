// See store.h: the store as a TeamStore (StoreTeams) and its parts: board, mail, inbox, merges, journal copy.
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

class StoreBoard : public TaskBoard {
 public:
  StoreBoard(Store& store, std::string team) : store_(store), team_(std::move(team)) {}
  Result<Task> Create(const TaskDraft& draft) override { return store_.tasks().Create(team_, draft); }
  Result<Task> Get(int64_t id) override { return store_.tasks().Get(team_, id); }
  Result<std::vector<Task>> List(bool include_deleted) override { return store_.tasks().List(team_, include_deleted); }
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) override {
    return store_.tasks().Update(team_, id, patch, caller);
  }
  Result<Task> Claim(int64_t id, const std::string& owner) override { return store_.tasks().Claim(team_, id, owner); }
  Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook) override {
    return store_.tasks().ClaimNext(team_, owner, outlook);
  }

 private:
  Store& store_;
  const std::string team_;
};

class Mail : public TeamMail {
 public:
  Mail(Store& store, std::string team) : store_(store), team_(std::move(team)) {}
  const std::string& team() const override { return team_; }
  Result<TeamConfig> LoadTeam() override { return store_.rosters().LoadTeam(team_); }
  Status Deliver(const std::string& member, const Message& m) override { return store_.mail().Append(team_, member, m); }
  Result<std::vector<Message>> Peek(const std::string& member) override { return store_.mail().Peek(team_, member); }
  Status Log(const Message& m) override { return store_.log().Append(team_, m); }
  // One transaction: all or nothing, so the log cannot fail after.
  Status Post(const std::vector<Message>& copies, const Message& m, Status* log_failure) override {
    *log_failure = Status::Ok();
    return store_.log().AppendDelivered(team_, copies, m);
  }
  Result<std::optional<Message>> FindLogged(const std::string& id) override { return store_.log().Find(team_, id); }
  Status CreateRequest(const ProtocolRequest& r) override { return store_.requests().Create(team_, r); }
  Result<ProtocolRequest> GetRequest(const std::string& id) override { return store_.requests().Get(team_, id); }
  Result<std::vector<ProtocolRequest>> ListRequests() override { return store_.requests().List(team_); }
  Result<ProtocolRequest> ResolveRequest(const std::string& id, bool approve, const std::string& response) override {
    return store_.requests().Resolve(team_, id, approve, response);
  }

 private:
  Store& store_;
  const std::string team_;
};

class StoreInbox : public Inbox {
 public:
  StoreInbox(Store& store, std::string team, std::string member)
      : store_(store), team_(std::move(team)), member_(std::move(member)) {}
  Result<std::vector<Message>> Peek() override { return store_.mail().Peek(team_, member_); }
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
    MATES_ASSIGN_OR_RETURN(size_t n, store_.mail().PendingCount(team_, member_));
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
    auto n = store_.mail().PendingCount(team_, member_);
    return n.ok() && *n > 0;
  }
  Result<Taken> Take(const std::function<bool(const std::vector<Message>&)>& keep,
                     const AlreadyDelivered& already) override {
    MATES_ASSIGN_OR_RETURN(MailRows::Batch batch, store_.mail().BeginDrain(team_, member_, already));
    // Not kept: rolled back with the batch.
    return KeepOrLeave(batch, false, keep, [&](MailRows::Batch& b) { return store_.mail().Commit(b); });
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
  Result<MergeRequest> Create(MergeRequest m) override { return store_.merges().Create(team_, std::move(m)); }
  Result<MergeRequest> Get(int64_t id) const override { return store_.merges().Get(team_, id); }
  Result<std::vector<MergeRequest>> List() const override { return store_.merges().List(team_); }
  Result<MergeRequest> Update(int64_t id, const std::function<Status(MergeRequest&)>& mutate) override {
    return store_.merges().Update(team_, id, mutate);
  }

 private:
  Store& store_;
  const std::string team_;
};

class StoreJournal : public JournalCopy {
 public:
  StoreJournal(Store& store, std::string team, std::string member)
      : store_(store), team_(std::move(team)), member_(std::move(member)) {}
  Result<std::vector<std::string>> Lines() override { return store_.journals().Lines(team_, member_); }
  Status Put(int64_t first, const std::vector<std::string>& lines) override {
    return store_.journals().Put(team_, member_, first, lines);
  }
  Status Replace(const std::vector<std::string>& lines) override {
    return store_.journals().Replace(team_, member_, lines);
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
    if (r.ok() && r->empty()) MATES_RETURN_IF_ERROR(store_.rosters().HasTeam(team_));
    return Checked(std::move(r));
  }
  Result<Task> Update(int64_t id, const TaskPatch& patch, const Caller& caller) override {
    return Checked(board_->Update(id, patch, caller));
  }
  Result<Task> Claim(int64_t id, const std::string& owner) override { return Checked(board_->Claim(id, owner)); }
  Result<std::optional<Task>> ClaimNext(const std::string& owner, ClaimOutlook* outlook) override {
    auto r = board_->ClaimNext(owner, outlook);
    if (r.ok() && !r->has_value()) MATES_RETURN_IF_ERROR(store_.rosters().HasTeam(team_));
    return Checked(std::move(r));
  }
  Result<std::optional<int64_t>> NextClaimable(const std::string& owner) override {
    return Checked(board_->NextClaimable(owner));
  }

 private:
  template <typename T>
  Result<T> Checked(Result<T> r) {
    if (!r.ok() && r.status().code() == StatusCode::kNotFound) MATES_RETURN_IF_ERROR(store_.rosters().HasTeam(team_));
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
  Result<std::vector<std::string>> ListTeams() override { return store_.rosters().ListTeams(); }
  // And this machine's own files of it (journals, host.log).
  Status DeleteTeam(const std::string& team) override {
    MATES_RETURN_IF_ERROR(store_.rosters().DeleteTeam(team));
    if (ws_) {
      std::error_code ec;
      fs::remove_all(ws_->TeamDir(team), ec);
    }
    return Status::Ok();
  }
  Result<TeamConfig> LoadTeam(const std::string& team) override { return store_.rosters().LoadTeam(team); }
  Result<TeamConfig> CreateTeam(const std::string& team, const std::string& lead,
                                const std::string& description) override {
    return store_.rosters().CreateTeam(team, lead, description);
  }
  Result<Member> AddMember(const std::string& team, Member member) override {
    return store_.rosters().AddMember(team, std::move(member));
  }
  Result<TeamConfig> UpdateTeam(const std::string& team,
                                const std::function<Status(TeamConfig&)>& mutate) override {
    return store_.rosters().UpdateTeam(team, mutate);
  }
  Result<std::unique_ptr<Hold>> HoldLiveness(const std::string& team, const std::string& member) override {
    auto held = store_.liveness().Hold(team, member);
    if (!held.ok() && held.status().code() == StatusCode::kConflict) {
      return Status::Conflict("'" + member + "' of team '" + team + "' is hosted by another process (on this machine or another)");
    }
    if (!held.ok()) return held.status();
    struct Held : Hold {
      explicit Held(LivenessLock l) : liveness(std::move(l)) {}
      void OnLost(std::function<void()> lost) override { liveness.OnLost(std::move(lost)); }
      bool StillHeld() override { return liveness.StillHeld(); }
      LivenessLock liveness;
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
      case TeamPart::kForecasts: key = ForecastKey(team); break;
    }
    MATES_ASSIGN_OR_RETURN(Listener::Subscription sub, store_.listener().Subscribe(key, std::move(waker)));
    return Holding(std::move(sub));
  }
  Status HasTeam(const std::string& team) override { return store_.rosters().HasTeam(team); }
  Status SetStatuses(const std::string& team,
                     const std::vector<std::pair<std::string, MemberStatus>>& changes) override {
    return store_.rosters().SetStatuses(team, changes);
  }
  Result<std::shared_ptr<ClaimLine>> ClaimLineOf(const std::string& team) override {
    return store_.tasks().ClaimLineOf(team);
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
    auto hosted = store_.liveness().IsHosted(team, member);
    return hosted.ok() && *hosted;
  }
  Result<std::vector<AgentLease>> Leases(const std::string& team) override {
    return store_.liveness().Leases(team);
  }
  Result<std::vector<Message>> LastMessages(const std::string& team, size_t n) override {
    return store_.log().Tail(team, n);
  }
  Status ReadLog(const std::string& team, const std::function<void(const Message&)>& each) override {
    for (int64_t cursor = 0;;) {
      MATES_ASSIGN_OR_RETURN(std::vector<Message> page, store_.log().Read(team, &cursor));
      if (page.empty()) return Status::Ok();
      for (const auto& m : page) each(m);
    }
  }
  // The cursor is the log's sequence number: a team's messages become
  // visible in its order (LogRows::Append).
  Result<LogPage> TailLog(const std::string& team, size_t n, size_t max_bytes) override {
    LogPage page;
    int64_t cursor = 0;
    MATES_ASSIGN_OR_RETURN(page.messages, store_.log().Tail(team, n, &cursor, max_bytes));
    page.next = static_cast<uint64_t>(cursor);
    return page;
  }
  Result<LogPage> LogAfter(const std::string& team, uint64_t after, size_t max_bytes) override {
    if (after > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("after: past the end of the log");
    LogPage page;
    int64_t cursor = static_cast<int64_t>(after);
    MATES_ASSIGN_OR_RETURN(page.messages, store_.log().Read(team, &cursor, kLogPageRows, max_bytes));
    page.next = static_cast<uint64_t>(cursor);
    // Cut short, by rows or bytes: the reader asks again at once.
    if (page.next > after) {
      int64_t probe = cursor;
      auto beyond = store_.log().Read(team, &probe, 1);
      page.more = beyond.ok() && probe > cursor;
    }
    return page;
  }
  Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& team) override {
    return store_.journals().Activities(team);
  }
  // The store's copy: every machine's agents, whichever hosts them.
  Result<JournalText> ReadJournal(const std::string& team, const std::string& member, size_t max_bytes) override {
    JournalText j;
    j.where = "the journal copy of '" + member + "' in " + store_.target().shown + " (mates store export writes it out)";
    MATES_ASSIGN_OR_RETURN(uint64_t size, store_.journals().Bytes(team, member));
    if (size > max_bytes) {
      j.too_large = true;
      return j;
    }
    MATES_ASSIGN_OR_RETURN(std::vector<std::string> lines, store_.journals().Lines(team, member));
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
  Status PutForecasts(const std::string& team, const std::vector<ConflictForecast>& forecasts) override {
    return store_.journals().PutForecasts(team, forecasts);
  }
  // Those of a host that lives, wherever it is: its lead is hosted.
  std::vector<ConflictForecast> Forecasts(const std::string& team) override {
    auto c = LoadTeam(team);
    if (!c.ok() || !IsHosted(team, c->lead)) return {};
    auto f = store_.journals().Forecasts(team);
    return f.ok() ? std::move(*f) : std::vector<ConflictForecast>{};
  }
  void WaitOutOutages(double seconds) override { store_.WaitOutOutages(seconds); }
  void StopWaiting() override { store_.StopWaiting(); }
  std::unique_ptr<JournalCopy> JournalOf(const std::string& team, const std::string& member) override {
    return std::make_unique<StoreJournal>(store_, team, member);
  }
  Result<std::optional<std::vector<ModelSpend>>> Spent(const std::string& team) override {
    MATES_ASSIGN_OR_RETURN(std::vector<ModelSpend> spent, store_.journals().Spent(team));
    return std::optional<std::vector<ModelSpend>>(std::move(spent));
  }
  ActivitySink ActivityOf(const std::string& team, const std::string& member) override {
    // The store outlives its agents, whose activity is flushed before they go.
    Store* store = &store_;
    auto said = std::make_shared<bool>(false);  // the writer's thread only
    return [store, team, member, said](const std::string& doc) {
      Status s = store->journals().PutActivity(team, member, doc);
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
