#include "store/team_store.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "store/archive.h"
#include "store/board.h"
#include "store/liveness.h"
#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/watcher.h"

namespace mates {

namespace {

constexpr size_t kLogPageBytes = 4 << 20;

class FileInbox : public Inbox {
 public:
  FileInbox(const Workspace& ws, const std::string& team, const std::string& member)
      : dir_(ws.TeamDir(team)), member_(member), box_(dir_, member) {}

  Result<std::vector<Message>> Peek() override { return box_.Peek(); }
  Result<size_t> PendingCount() override { return box_.PendingCount(); }
  bool MayHavePending() override { return box_.MayHavePending(); }
  Result<Taken> Take(const std::function<bool(const std::vector<Message>&)>& keep,
                     const AlreadyDelivered& already) override {
    MATES_ASSIGN_OR_RETURN(Mailbox::Batch batch, box_.BeginDrain(already));
    // Not kept: the drain lock goes with the batch, the messages stay.
    return KeepOrLeave(batch, batch.redelivery, keep, [&](Mailbox::Batch& b) { return box_.Commit(b); });
  }
  Result<std::unique_ptr<Watch>> WatchWith(std::shared_ptr<Waker> waker) override {
    MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub,
                           Watcher::Default().Subscribe(dir_, Workspace::InboxFileName(member_), std::move(waker)));
    return Holding(std::move(sub));
  }

 private:
  fs::path dir_;
  std::string member_;
  Mailbox box_;
};

class Files : public TeamStore {
 public:
  explicit Files(Workspace ws) : ws_(std::move(ws)) {}
  std::string where() const override { return ws_.root().string(); }
  Result<TeamConfig> LoadTeam(const std::string& team) override { return Roster(ws_).Load(team); }
  Result<TeamConfig> CreateTeam(const std::string& team, const std::string& lead,
                                const std::string& description) override {
    return Roster(ws_).CreateTeam(team, lead, description);
  }
  Result<Member> AddMember(const std::string& team, Member member) override {
    return Roster(ws_).AddMember(team, std::move(member));
  }
  Result<TeamConfig> UpdateTeam(const std::string& team,
                                const std::function<Status(TeamConfig&)>& mutate) override {
    return Roster(ws_).Update(team, mutate);
  }
  Status SetStatuses(const std::string& team,
                     const std::vector<std::pair<std::string, MemberStatus>>& changes) override {
    return Roster(ws_).SetStatuses(team, changes);
  }
  Result<std::unique_ptr<Hold>> HoldLiveness(const std::string& team, const std::string& member) override {
    MATES_RETURN_IF_ERROR(EnsureDir(ws_.AgentsDir(team)));
    auto lock = FileLock::TryAcquire(ws_.AgentsDir(team) / (member + ".lock"));
    // Only a holder is "hosted elsewhere": a lock file that cannot be
    // opened says so as itself.
    if (!lock.ok() && lock.status().code() == StatusCode::kConflict) {
      return Status::Conflict("'" + member + "' of team '" + team + "' is hosted by another process");
    }
    if (!lock.ok()) return lock.status();
    return Holding(std::move(*lock));
  }
  Result<std::unique_ptr<Hold>> WatchBoard(const std::string& team, std::shared_ptr<Waker> waker) override {
    MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub,
                           Watcher::Default().Subscribe(ws_.TasksDir(team), "", std::move(waker)));
    return Holding(std::move(sub));
  }
  Result<std::unique_ptr<Hold>> WatchRoster(const std::string& team, std::shared_ptr<Waker> waker) override {
    MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub,
                           Watcher::Default().Subscribe(ws_.TeamDir(team), "config.json", std::move(waker)));
    return Holding(std::move(sub));
  }
  std::unique_ptr<TaskBoard> Board(const std::string& team) override {
    return FileTaskBoard(SharedBoard(ws_.TasksDir(team)));
  }
  std::unique_ptr<MergeBook> Merges(const std::string& team) override {
    return std::make_unique<MergeStore>(ws_, team);
  }
  Result<std::unique_ptr<Hold>> WatchMerges(const std::string& team, std::shared_ptr<Waker> waker) override {
    fs::path dir = ws_.MergesDir(team);
    MATES_RETURN_IF_ERROR(EnsureDir(dir));
    MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub, Watcher::Default().Subscribe(dir, "*.json", std::move(waker)));
    return Holding(std::move(sub));
  }
  std::unique_ptr<TeamMail> Mail(const std::string& team) override { return FileTeamMail(ws_, team); }
  std::unique_ptr<Inbox> InboxOf(const std::string& team, const std::string& member) override {
    return std::make_unique<FileInbox>(ws_, team, member);
  }
  bool IsHosted(const std::string& team, const std::string& member) override { return HostAlive(ws_, team, member); }
  Result<std::vector<Message>> LastMessages(const std::string& team, size_t n) override {
    return MessageLog(ws_, team).Tail(n);
  }
  Status ReadLog(const std::string& team, const std::function<void(const Message&)>& each) override {
    MessageLog log(ws_, team);
    uint64_t offset = 0;
    for (;;) {
      uint64_t next = offset;
      MATES_ASSIGN_OR_RETURN(std::vector<Message> page, log.ReadFrom(offset, &next, kLogPageBytes));
      for (const auto& m : page) each(m);
      if (next == offset) return Status::Ok();
      offset = next;
    }
  }
  Result<fs::path> Archive(const std::string& team) override {
    MATES_ASSIGN_OR_RETURN(ArchivedTeam archived, ArchiveTeam(ws_, team));
    return archived.root;
  }

 private:
  const Workspace ws_;
};

}  // namespace

Status TeamStore::SetStatuses(const std::string& team,
                              const std::vector<std::pair<std::string, MemberStatus>>& changes) {
  return UpdateTeam(team,
                    [&changes](TeamConfig& c) {
                      SetStatusesIn(c, changes);
                      return Status::Ok();
                    })
      .status();
}

std::unique_ptr<TeamStore> FileTeamStore(Workspace ws) { return std::make_unique<Files>(std::move(ws)); }

std::unique_ptr<Inbox> InboxIn(TeamStore* store, const Workspace& ws, const std::string& team,
                               const std::string& member) {
  if (store != nullptr) return store->InboxOf(team, member);
  return std::make_unique<FileInbox>(ws, team, member);
}

std::unique_ptr<TeamMail> MailIn(TeamStore* store, const Workspace& ws, const std::string& team) {
  if (store != nullptr) return store->Mail(team);
  return FileTeamMail(ws, team);
}

namespace {

// Looks at `held()` until it says no or `until` passes, backing off from
// 1 ms to 20 ms; whether it still says yes.
bool HeldUntil(const std::function<bool()>& held, const Deadline& until) {
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (!held()) return false;
    if (Expired(until)) return true;
    auto wake = SteadyClock::now() + pause;
    if (until && *until < wake) wake = *until;
    std::this_thread::sleep_until(wake);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace

Result<std::unique_ptr<Hold>> HoldLivenessAllowingForTheDead(TeamStore& store, const std::string& team,
                                                             const std::string& member, const Deadline& until) {
  Result<std::unique_ptr<Hold>> held = Status::Conflict("");
  (void)HeldUntil(
      [&] {
        held = store.HoldLiveness(team, member);
        return !held.ok() && held.status().code() == StatusCode::kConflict;
      },
      until);
  return held;
}

bool StillHostedAt(TeamStore& store, const std::string& team, const std::string& member, const Deadline& until) {
  return HeldUntil([&] { return store.IsHosted(team, member); }, until);
}

bool WaitOutOutage(const Status& s, Waker& waker, uint64_t seen, const Deadline& deadline) {
  if (s.code() != StatusCode::kUnavailable || Expired(deadline)) return false;
  Deadline retry = DeadlineIn(2.0);
  if (deadline && *deadline < *retry) retry = deadline;
  waker.WaitChange(seen, retry);
  return !Expired(deadline);
}

}  // namespace mates
