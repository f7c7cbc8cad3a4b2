// mates send --team T [--store URL] [--from NAME] (--to NAME | --broadcast)
//            [--type TYPE] [--request-id ID] [--approve | --reject]
//            [--summary S] TEXT
// On the file store (the default) or a PostgreSQL one (DESIGN §13): the
// same rules (Messenger), the same output.
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/log.h"
#include "store/messenger.h"

namespace mates::cli {
namespace {

struct SendArgs {
  std::string from;
  std::string to;
  bool broadcast = false;
  std::string type;
  std::string request_id;
  bool approve = false;
  bool reject = false;
  std::string summary;
  std::string feedback;
  std::string id;
  std::vector<std::string> text;
  bool json = false;
};

// The request the options say (its sender still to be named), or the
// usage mistake in them.
Result<SendRequest> RequestFrom(const SendArgs& a) {
  SendRequest r;
  if (!a.type.empty()) {
    auto t = ParseMessageType(a.type);
    if (!t.ok()) return t.status();
    r.type = *t;
  }
  if (a.broadcast) {
    if (!a.type.empty() && r.type != MessageType::kBroadcast) {
      return Status::InvalidArgument("--broadcast cannot be combined with --type " + a.type);
    }
    r.type = MessageType::kBroadcast;
  }
  if (r.type == MessageType::kBroadcast && !a.to.empty()) {
    return Status::InvalidArgument("a broadcast goes to everyone: drop --to");
  }
  if (r.type != MessageType::kBroadcast && a.to.empty() &&
      r.type != MessageType::kShutdownResponse && r.type != MessageType::kPlanApprovalRequest &&
      r.type != MessageType::kPlanApprovalResponse) {
    return Status::InvalidArgument("say who gets it: --to NAME or --broadcast");
  }
  if (a.approve) r.approve = true;
  if (a.reject) r.approve = false;
  if ((r.type == MessageType::kShutdownResponse || r.type == MessageType::kPlanApprovalResponse) &&
      !r.approve.has_value()) {
    return Status::InvalidArgument(std::string(MessageTypeName(r.type)) + " needs --approve or --reject");
  }
  if (a.text.size() == 1 && a.text[0] == "-") {
    r.content.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    for (const auto& w : a.text) {
      if (!r.content.empty()) r.content += ' ';
      r.content += w;
    }
  }
  r.recipient = a.to;
  r.summary = a.summary;
  r.feedback = a.feedback;
  r.request_id = a.request_id;
  r.id = a.id;
  return r;
}

int Send(Globals& g, const SendArgs& a) {
  auto asked = RequestFrom(a);
  if (!asked.ok()) return Fail(asked.status());
  SendRequest r = std::move(*asked);
  // A person at the CLI is `user` (DESIGN §11); an agent's shell has
  // MATES_AGENT_NAME.
  const char* agent = std::getenv("MATES_AGENT_NAME");
  r.sender = !a.from.empty() ? a.from : agent != nullptr && *agent != '\0' ? agent : kUserName;
  // A sandboxed tool's mates, run by its host: the sender is its agent.
  if (std::string refused = RefusedIdentity("--from", a.from); !refused.empty()) return Usage(refused);
  if (std::string as = SandboxedAgent(); !as.empty()) r.sender = as;
  auto store = OpenChosenStore(g, g.store, g.ws(), StoreUse{.one_shot = true});
  if (!store.ok()) return Fail(store.status());
  if (!a.from.empty()) {
    auto team = (*store)->LoadTeam(g.team);
    if (!team.ok()) return Fail(team.status());
    if (Status named = ValidateSenderName(a.from, *team); !named.ok()) return Usage("--from " + named.message());
  }
  std::unique_ptr<TeamMail> mail = (*store)->Mail(g.team);
  auto receipt = Messenger(*mail).Send(r);
  if (!receipt.ok()) return Fail(receipt.status());
  for (const auto& w : receipt->warnings) LogWarning(w);
  if (receipt->already_sent) {
    if (a.json) {
      Json out = MessageToJson(receipt->message);
      out["already_sent"] = true;
      std::cout << DumpJson(out) << std::endl;
    } else {
      std::cout << "already sent " << receipt->message.id << " (nothing sent again)\n";
    }
    return 0;
  }
  if (a.json) {
    Json out = MessageToJson(receipt->message);
    out["recipients"] = receipt->recipients;
    std::cout << DumpJson(out) << std::endl;
    return 0;
  }
  std::string to;
  for (const auto& name : receipt->recipients) to += (to.empty() ? "" : ", ") + name;
  std::cout << "sent " << MessageTypeName(receipt->message.type) << " "
            << receipt->message.id << " to " << (to.empty() ? "nobody" : to);
  if (!receipt->message.request_id.empty()) std::cout << " (request " << receipt->message.request_id << ")";
  std::cout << "\n";
  return 0;
}

}  // namespace

void AddSendCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<SendArgs>();
  CLI::App* send = app.add_subcommand("send", "Send a message to a team member (or everyone)");
  AddTeamOption(send, g);
  AddStoreOption(send, g);
  send->add_option("--from", a->from, "Sender (default: $MATES_AGENT_NAME, else user: a person)");
  auto* to = send->add_option("--to", a->to, "Recipient");
  auto* bc = send->add_flag("--broadcast", a->broadcast, "Send to every member but the sender");
  to->excludes(bc);
  send->add_option("--type", a->type,
                   "message, broadcast, shutdown_request, shutdown_response, "
                   "plan_approval_request, plan_approval_response");
  send->add_option("--request-id", a->request_id, "The request a response answers");
  auto* ap = send->add_flag("--approve", a->approve, "Approve (responses)");
  auto* rj = send->add_flag("--reject", a->reject, "Reject (responses)");
  ap->excludes(rj);
  send->add_option("--summary", a->summary, "A short summary shown with the message");
  send->add_option("--feedback", a->feedback, "Feedback with a plan_approval_response");
  send->add_option("--id", a->id,
                   "The message's id (letters, digits, . _ -): sending again with the same id "
                   "delivers nothing twice, so a failed send can be retried safely");
  send->add_flag("--json", a->json, "Print the sent message as JSON");
  send->add_option("TEXT", a->text, "The message ('-' reads it from stdin)")->required();
  send->callback([&g, a] { g.action = [&g, a] { return Send(g, *a); }; });
}

}  // namespace mates::cli
