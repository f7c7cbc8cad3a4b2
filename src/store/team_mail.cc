#include "store/team_mail.h"

#include "store/mailbox.h"
#include "store/message_log.h"

namespace mates {

Status TeamMail::Post(const std::vector<Message>& copies, const Message& m, Status* log_failure) {
  for (const Message& copy : copies) MATES_RETURN_IF_ERROR(Deliver(copy.recipient, copy));
  *log_failure = Log(m);
  return Status::Ok();
}

namespace {

class FileMail : public TeamMail {
 public:
  FileMail(Workspace ws, std::string team, Watcher* local)
      : ws_(std::move(ws)), team_(std::move(team)), local_(local), log_(ws_, team_, local), requests_(ws_, team_) {}

  const std::string& team() const override { return team_; }
  Result<TeamConfig> LoadTeam() override { return Roster(ws_).Load(team_); }
  Status Deliver(const std::string& member, const Message& m) override {
    return Mailbox(ws_.TeamDir(team_), member, local_).Append(m);
  }
  Result<std::vector<Message>> Peek(const std::string& member) override {
    return Mailbox(ws_.TeamDir(team_), member).Peek();
  }
  Status Log(const Message& m) override { return log_.Append(m); }
  // The log's lock is held across the deliveries: a reader may take a
  // copy at once, but its answer's line waits for this one.
  Status Post(const std::vector<Message>& copies, const Message& m, Status* log_failure) override {
    return log_.AppendAfter(m, log_failure, [&]() -> Status {
      for (const Message& copy : copies) {
        MATES_RETURN_IF_ERROR(Mailbox(ws_.TeamDir(team_), copy.recipient, local_).Append(copy));
      }
      return Status::Ok();
    });
  }
  Result<std::optional<Message>> FindLogged(const std::string& id) override { return log_.Find(id); }
  Status CreateRequest(const ProtocolRequest& r) override { return requests_.Create(r); }
  Result<ProtocolRequest> GetRequest(const std::string& id) override { return requests_.Get(id); }
  Result<std::vector<ProtocolRequest>> ListRequests() override { return requests_.List(); }
  Result<ProtocolRequest> ResolveRequest(const std::string& id, bool approve, const std::string& response) override {
    return requests_.Resolve(id, approve, response);
  }

 private:
  const Workspace ws_;
  const std::string team_;
  Watcher* const local_;
  MessageLog log_;
  RequestStore requests_;
};

}  // namespace

std::unique_ptr<TeamMail> FileTeamMail(Workspace ws, std::string team, Watcher* local) {
  return std::make_unique<FileMail>(std::move(ws), std::move(team), local);
}

}  // namespace mates
