#include "store/team_store.h"

#include "core/clock.h"
#include "store/board.h"
#include "store/liveness.h"
#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/watcher.h"

namespace mates {

namespace {

class FileInbox : public Inbox {
 public:
  FileInbox(const Workspace& ws, const std::string& team, const std::string& member)
      : dir_(ws.TeamDir(team)), member_(member), box_(dir_, member) {}

  Result<std::vector<Message>> Peek() override { return box_.Peek(); }
  Result<Taken> Take(const std::function<bool(const std::vector<Message>&)>& keep) override {
    MATES_ASSIGN_OR_RETURN(Mailbox::Batch batch, box_.BeginDrain());
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
  std::unique_ptr<TaskBoard> Board(const std::string& team) override {
    return FileTaskBoard(SharedBoard(ws_.TasksDir(team)));
  }
  std::unique_ptr<TeamMail> Mail(const std::string& team) override { return FileTeamMail(ws_, team); }
  std::unique_ptr<Inbox> InboxOf(const std::string& team, const std::string& member) override {
    return std::make_unique<FileInbox>(ws_, team, member);
  }
  bool IsHosted(const std::string& team, const std::string& member) override { return HostAlive(ws_, team, member); }
  Result<std::vector<Message>> LastMessages(const std::string& team, size_t n) override {
    return MessageLog(ws_, team).Tail(n);
  }

 private:
  const Workspace ws_;
};

}  // namespace

std::unique_ptr<TeamStore> FileTeamStore(Workspace ws) { return std::make_unique<Files>(std::move(ws)); }

bool WaitOutOutage(const Status& s, Waker& waker, uint64_t seen, const Deadline& deadline) {
  if (s.code() != StatusCode::kUnavailable || Expired(deadline)) return false;
  Deadline retry = DeadlineIn(2.0);
  if (deadline && *deadline < *retry) retry = deadline;
  waker.WaitChange(seen, retry);
  return !Expired(deadline);
}

}  // namespace mates
