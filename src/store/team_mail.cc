#include "store/team_mail.h"

#include "store/mailbox.h"
#include "store/message_log.h"

namespace mates {

namespace {

class FileMail : public TeamMail {
 public:
  FileMail(Workspace ws, std::string team)
      : ws_(std::move(ws)), team_(std::move(team)), log_(ws_, team_), requests_(ws_, team_) {}

  const std::string& team() const override { return team_; }
  Result<TeamConfig> LoadTeam() override { return Roster(ws_).Load(team_); }
  Status Deliver(const std::string& member, const Message& m) override {
    return Mailbox(ws_.TeamDir(team_), member).Append(m);
  }
  Result<std::vector<Message>> Peek(const std::string& member) override {
    return Mailbox(ws_.TeamDir(team_), member).Peek();
  }
  Status Log(const Message& m) override { return log_.Append(m); }
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
  MessageLog log_;
  RequestStore requests_;
};

}  // namespace

std::unique_ptr<TeamMail> FileTeamMail(Workspace ws, std::string team) {
  return std::make_unique<FileMail>(std::move(ws), std::move(team));
}

}  // namespace mates
