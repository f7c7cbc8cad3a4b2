#include "store/team_store.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <sys/stat.h>

#include "core/clock.h"
#include "core/env.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/limits.h"
#include "store/archive.h"
#include "store/board.h"
#include "store/claim_line.h"
#include "store/liveness.h"
#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/requests.h"
#include "store/task_folders.h"
#include "store/watcher.h"

namespace mates {

namespace {

constexpr size_t kLogPageBytes = 4 << 20;
// An activity document is a few hundred bytes; one bigger than this is
// not one.
constexpr size_t kMaxActivityFileBytes = 64 << 10;

class FileInbox : public Inbox {
 public:
  FileInbox(const Workspace& ws, Watcher& watcher, const std::string& team, const std::string& member)
      : dir_(ws.TeamDir(team)), member_(member), watcher_(watcher), box_(dir_, member, &watcher) {}

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
                           watcher_.Subscribe(dir_, Workspace::InboxFileName(member_), std::move(waker)));
    return Holding(std::move(sub));
  }

 private:
  fs::path dir_;
  std::string member_;
  Watcher& watcher_;
  Mailbox box_;
};

// The size of the file at `path` (0 if it is not there).
uint64_t FileSize(const fs::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

class Files : public TeamStore {
 public:
  Files(Workspace ws, const Env& env, StoreUse use) : ws_(std::move(ws)), env_(env), use_(use) {}
  std::string where() const override { return ws_.root().string(); }
  bool spans_machines() const override { return false; }
  Result<std::vector<std::string>> ListTeams() override { return Roster(ws_).ListTeams(); }
  Status DeleteTeam(const std::string& team) override { return Roster(ws_, &env_.watcher).DeleteTeam(team); }
  Result<TeamConfig> LoadTeam(const std::string& team) override { return Roster(ws_).Load(team); }
  // Its config file, not its roster (a hundred members parsed at every
  // task update was a tenth of a teammate's time).
  Status HasTeam(const std::string& team) override {
    std::error_code ec;
    if (!fs::exists(ws_.ConfigPath(team), ec)) {
      return Status::NotFound("no team '" + team + "' in " + ws_.root().string());
    }
    return Status::Ok();
  }
  Result<TeamConfig> CreateTeam(const std::string& team, const std::string& lead,
                                const std::string& description) override {
    return Roster(ws_, &env_.watcher).CreateTeam(team, lead, description);
  }
  Result<Member> AddMember(const std::string& team, Member member) override {
    return Roster(ws_, &env_.watcher).AddMember(team, std::move(member));
  }
  Result<TeamConfig> UpdateTeam(const std::string& team,
                                const std::function<Status(TeamConfig&)>& mutate) override {
    return Roster(ws_, &env_.watcher).Update(team, mutate);
  }
  Status SetStatuses(const std::string& team,
                     const std::vector<std::pair<std::string, MemberStatus>>& changes) override {
    return Roster(ws_, &env_.watcher).SetStatuses(team, changes);
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
  // Which files are which part.
  Result<std::unique_ptr<Hold>> Watch(const std::string& team, TeamPart part,
                                      std::shared_ptr<Waker> waker) override {
    fs::path dir;
    std::string pattern;
    switch (part) {
      case TeamPart::kRoster: dir = ws_.TeamDir(team), pattern = "config.json"; break;
      case TeamPart::kHost: dir = ws_.TeamDir(team), pattern = "host.json"; break;
      case TeamPart::kForecasts: dir = ws_.TeamDir(team), pattern = "forecast.json"; break;
      case TeamPart::kBoard: dir = ws_.TasksDir(team); break;
      case TeamPart::kLog: dir = ws_.TeamDir(team), pattern = MessageLog(ws_, team).path().filename().string(); break;
      case TeamPart::kRequests: dir = ws_.RequestsDir(team); break;
      case TeamPart::kActivity: dir = ws_.AgentsDir(team), pattern = "*.status.json"; break;
      case TeamPart::kJournals: dir = ws_.AgentsDir(team), pattern = "*.jsonl"; break;
      case TeamPart::kMerges:
        dir = ws_.MergesDir(team), pattern = "*.json";
        MATES_RETURN_IF_ERROR(EnsureDir(dir));
        break;
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return Status::NotFound(dir.string() + " is not there yet");
    MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub, env_.watcher.Subscribe(dir, pattern, std::move(waker)));
    return Holding(std::move(sub));
  }
  // The process's line for the board's folder, which the board hands its
  // claimable tasks to (store/claim_line.h).
  Result<std::shared_ptr<ClaimLine>> ClaimLineOf(const std::string& team) override {
    return env_.folders.LineOf(ws_.TasksDir(team));
  }
  // The process's board of the folder, which its agents share; a one-shot
  // process's own, with no watch to keep.
  std::unique_ptr<TaskBoard> Board(const std::string& team) override {
    if (use_.one_shot) {
      return FileTaskBoard(std::make_shared<mates::Board>(
          ws_.TasksDir(team), mates::Board::Options{.watch = false, .local = &env_.watcher}));
    }
    return FileTaskBoard(env_.folders.BoardOf(ws_.TasksDir(team)));
  }
  Result<std::unique_ptr<TaskBoard>> CheckedBoard(const std::string& team) override {
    MATES_RETURN_IF_ERROR(HasTeam(team));
    return Board(team);
  }
  std::unique_ptr<MergeBook> Merges(const std::string& team) override {
    return std::make_unique<MergeStore>(ws_, team);
  }
  std::unique_ptr<TeamMail> Mail(const std::string& team) override { return FileTeamMail(ws_, team, &env_.watcher); }
  std::unique_ptr<Inbox> InboxOf(const std::string& team, const std::string& member) override {
    return std::make_unique<FileInbox>(ws_, env_.watcher, team, member);
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
  // The cursor is a byte offset into the log file. (Tail reads a bounded
  // stretch of the file's end already.)
  Result<LogPage> TailLog(const std::string& team, size_t n, size_t /*max_bytes*/) override {
    MessageLog log(ws_, team);
    LogPage page;
    // The size first: what is appended meanwhile comes again after it.
    page.next = FileSize(log.path());
    MATES_ASSIGN_OR_RETURN(page.messages, log.Tail(n));
    return page;
  }
  Result<LogPage> LogAfter(const std::string& team, uint64_t after, size_t max_bytes) override {
    MessageLog log(ws_, team);
    LogPage page;
    MATES_ASSIGN_OR_RETURN(page.messages, log.ReadFrom(after, &page.next, max_bytes));
    page.more = FileSize(log.path()) > page.next && page.next > after;
    return page;
  }
  Result<ArchivedTeam> Archive(const std::string& team) override { return ArchiveTeam(ws_, team); }
  Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& team) override {
    std::vector<std::pair<std::string, std::string>> out;
    std::error_code ec;
    const std::string suffix = ".status.json";
    for (fs::directory_iterator it(ws_.AgentsDir(team), ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      // Replaced through a spare by its writer (agent/activity.h).
      auto doc = ReadReplacedFile(it->path(), kMaxActivityFileBytes);
      if (!doc.ok()) continue;
      out.emplace_back(name.substr(0, name.size() - suffix.size()), std::move(*doc));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  Result<JournalText> ReadJournal(const std::string& team, const std::string& member, size_t max_bytes) override {
    const fs::path path = ws_.JournalPath(team, member);
    JournalText j;
    j.where = path.string();
    // Over the bound by its size: not read at all (a gigabyte would be
    // read up to the bound only to be dropped).
    std::error_code ec;
    if (const auto size = fs::file_size(path, ec); !ec && size > max_bytes) {
      j.too_large = true;
      return j;
    }
    MATES_ASSIGN_OR_RETURN(j.text, ReadFilePrefix(path, max_bytes + 1));
    if (j.text.size() > max_bytes) {
      j.too_large = true;
      j.text.clear();
    }
    return j;
  }
  std::optional<HostInfo> LiveHost(const std::string& team) override { return ReadLiveHost(ws_, team); }
  Status PutForecasts(const std::string& team, const std::vector<ConflictForecast>& forecasts) override {
    return WriteForecasts(ws_, team, forecasts);
  }
  std::vector<ConflictForecast> Forecasts(const std::string& team) override { return ReadLiveForecasts(ws_, team); }

 private:
  const Workspace ws_;
  const Env env_;  // references: the parts outlive the store
  const StoreUse use_;
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

std::unique_ptr<TeamStore> FileTeamStore(Workspace ws, const Env& env, StoreUse use) {
  return std::make_unique<Files>(std::move(ws), env, use);
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

namespace {
thread_local bool never_wait_out_outages = false;
}  // namespace

void NeverWaitOutOutagesOnThisThread() { never_wait_out_outages = true; }
bool WaitsOutOutagesOnThisThread() { return !never_wait_out_outages; }

bool WaitOutOutage(const Status& s, Waker& waker, uint64_t seen, const Deadline& deadline) {
  if (s.code() != StatusCode::kUnavailable || Expired(deadline)) return false;
  Deadline retry = DeadlineIn(2.0);
  if (deadline && *deadline < *retry) retry = deadline;
  waker.WaitChange(seen, retry);
  return !Expired(deadline);
}

}  // namespace mates
