// TeamMail: what sending within a team needs from wherever the team is kept
// (DESIGN §3, §13): its roster, the recipients' inboxes, the message log and
// the protocol requests. The file store's (FileTeamMail) or the PostgreSQL
// store's (pg::TeamMail). Messenger checks and sends through it, so the
// rules of a send are one code on both stores.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/message.h"
#include "store/requests.h"
#include "store/roster.h"
#include "store/workspace.h"

namespace mates {

class TeamMail {
 public:
  virtual ~TeamMail() = default;
  virtual const std::string& team() const = 0;

  virtual Result<TeamConfig> LoadTeam() = 0;

  // One message into `member`'s inbox.
  virtual Status Deliver(const std::string& member, const Message& m) = 0;
  // What `member`'s inbox holds, undrained.
  virtual Result<std::vector<Message>> Peek(const std::string& member) = 0;

  // The message log.
  virtual Status Log(const Message& m) = 0;

  // Delivers `copies` (one per recipient) and then logs `m`, as one step
  // for the log's order: a message sent in answer to `m` needs a copy
  // read first, and it cannot be logged before `m` is (DESIGN §27, causal
  // order). A delivery's failure is the error, and `m` is not logged; the
  // log's own failure after the deliveries is `*log_failure`, as the
  // message went. The default delivers, then logs, with nothing between
  // them held: for a store that keeps no log.
  virtual Status Post(const std::vector<Message>& copies, const Message& m, Status* log_failure);
  virtual Result<std::optional<Message>> FindLogged(const std::string& id) = 0;

  // Protocol requests: AlreadyExists for an id used before; Resolve is
  // FailedPrecondition for one answered already.
  virtual Status CreateRequest(const ProtocolRequest& r) = 0;
  virtual Result<ProtocolRequest> GetRequest(const std::string& id) = 0;
  virtual Result<std::vector<ProtocolRequest>> ListRequests() = 0;
  virtual Result<ProtocolRequest> ResolveRequest(const std::string& id, bool approve, const std::string& response) = 0;
};

// The team's files under `ws`; `local`: whose subscribers a delivery or a
// line of the log wakes at once (this process's watcher), or none.
class Watcher;
std::unique_ptr<TeamMail> FileTeamMail(Workspace ws, std::string team, Watcher* local = nullptr);

}  // namespace mates
