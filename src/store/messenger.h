// Messenger: sending within a team (DESIGN §3). Checks the sender, the
// recipient and the type against the roster and the role rules, delivers to
// the recipients' inboxes, and records the message in the message log
// (messages.jsonl; a table on PostgreSQL, through TeamMail).
// A recipient not on the roster is an error; no inbox is created for it.
//
// `user` (kUserName) is a person, from the CLI or the dashboard (DESIGN
// §11): not a roster member, it may send a message to any member or a
// broadcast, and members may write back to it (its inbox is
// inboxes/user.jsonl, read with `mates inbox --as user`). Models see it as
// teammate_id="user". No member may be named `user`.
//
// `merge-queue` (kMergeQueueName) is the team's merge queue (DESIGN §12):
// it sends plain messages to members (a bounced merge) and receives none.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/message.h"
#include "store/roster.h"
#include "store/team_mail.h"
#include "store/workspace.h"

namespace mates {

inline constexpr const char* kUserName = "user";
inline constexpr const char* kMergeQueueName = "merge-queue";
// `hooks` (kHooksName) is the person's hooks (DESIGN §22): what one blocked
// is logged from it, to the agent it stopped; it sends and reads nothing.
inline constexpr const char* kHooksName = "hooks";

struct SendRequest {
  MessageType type = MessageType::kMessage;
  std::string sender;
  std::string recipient;  // empty for broadcast; defaults to the lead for
                          // shutdown_response and plan_approval_request
  std::string content;
  std::string summary;
  std::string request_id;  // required by responses; generated for requests
  std::optional<bool> approve;
  std::string feedback;
  // "" = a new id. A given id makes the send idempotent (`mates send --id`):
  // a message already logged under it is not sent again, an inbox that
  // still holds it does not get it twice, and agents drop ids they have
  // taken in already.
  std::string id;
};

struct SendReceipt {
  Message message;                      // as logged (no recipient for broadcast)
  std::vector<std::string> recipients;  // whose inboxes got it
  bool already_sent = false;            // a given id was in the log already
  // Delivered, but something after it failed (the log could not be
  // written): a success, since sending again would deliver it twice.
  std::vector<std::string> warnings;
};

class Messenger {
 public:
  // The team's files under `ws`.
  Messenger(Workspace ws, std::string team);
  // The team in `mail`'s store (which must outlive the messenger).
  explicit Messenger(TeamMail& mail) : mail_(&mail) {}

  // InvalidArgument for malformed requests (bad type, missing field),
  // NotFound for unknown names, FailedPrecondition for role-rule and
  // protocol violations.
  Result<SendReceipt> Send(SendRequest request);

 private:
  // The request as the protocol completes it: an elicitation_request to
  // user, a plan_approval_request to the lead, a shutdown or compact
  // request's usual words, an answer to whoever asked and worded when it
  // says nothing (an accepted elicitation's fields as JSON written once).
  // Nothing is checked here.
  SendRequest Completed(const TeamConfig& team, SendRequest r) const;
  // Why the role rules refuse a completed request, if they do.
  Status CheckRoles(const TeamConfig& team, const SendRequest& r) const;
  // An answer to a request (shutdown, plan, elicitation), checked against it.
  Status CheckAnswer(const TeamConfig& team, const SendRequest& r) const;
  // The request's bookkeeping: a new request recorded (an older plan of
  // its requester's superseded), an answered one resolved.
  Status Record(const SendRequest& r, Message& msg, SendReceipt& receipt);

  std::unique_ptr<TeamMail> owned_;
  TeamMail* mail_;
};

}  // namespace mates
