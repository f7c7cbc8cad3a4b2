// mates answer [--team T] [--store URL] [--json]
//   the questions MCP servers are waiting on a person to answer;
// mates answer [--team T] ID [NAME=VALUE...] [--fields JSON] | ID --decline
//   answers one (DESIGN §23, store/elicitation.h): the fields are checked
//   against the question's schema, the schema's defaults fill what is not
//   given, and the host whose server asked passes the answer on.
// A person's command: from an agent's shell or sandbox it is refused (the
// answer would speak as the person).
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/names.h"
#include "core/text.h"
#include "store/elicitation.h"
#include "store/messenger.h"

namespace mates::cli {
namespace {

struct AnswerArgs {
  std::string id;
  std::vector<std::string> fields;  // NAME=VALUE
  std::string json_fields;
  bool decline = false;
  bool json = false;
};

std::string Ago(double at) {
  const long s = static_cast<long>(WallSeconds() - at);
  if (s < 120) return std::to_string(std::max(0L, s)) + " s ago";
  if (s < 7200) return std::to_string(s / 60) + " min ago";
  return std::to_string(s / 3600) + " h ago";
}

int List(TeamStore& store, const Globals& g, bool json) {
  auto all = store.Mail(g.team)->ListRequests();
  if (!all.ok()) return Fail(all.status());
  Json out = Json::array();
  size_t shown = 0;
  for (const auto& r : *all) {
    if (r.kind != RequestKind::kElicitation || r.status != RequestState::kPending) continue;
    auto q = elicitation::ParseQuestion(r.content);
    if (!q.ok()) continue;  // the store checked it when it was asked
    if (json) {
      out.push_back(Json{{"request_id", r.id},
                         {"asked_by", r.requester},
                         {"server", q->server},
                         {"message", q->message},
                         {"requestedSchema", q->schema},
                         {"created_at", r.created_at}});
      continue;
    }
    std::cout << (shown++ > 0 ? "\n" : "") << r.id << "  MCP server " << ForTerminal(q->server, 200) << " asks ("
              << r.requester << "'s, " << Ago(r.created_at) << "):\n  " << ForTerminal(q->message, 4000) << "\n";
    for (const auto& line : elicitation::DescribeFields(q->schema)) std::cout << "    " << ForTerminal(line, 1000) << "\n";
    std::cout << "  answer: mates answer " << r.id << " NAME=VALUE...   or: mates answer " << r.id << " --decline\n";
  }
  if (json) {
    std::cout << DumpJson(out) << std::endl;
  } else if (shown == 0) {
    std::cout << "no question waits for an answer in team " << g.team << "\n";
  }
  return 0;
}

int Answer(Globals& g, const AnswerArgs& a) {
  // An agent answering would speak as the person.
  const char* agent = std::getenv("MATES_AGENT_NAME");
  if (!SandboxedAgent().empty() || (agent != nullptr && *agent != '\0')) {
    return Usage("mates answer is a person's: an agent cannot answer as user");
  }
  if (a.id.empty() && (!a.fields.empty() || a.decline || !a.json_fields.empty())) {
    return Usage("which question? give its ID (mates answer lists them)");
  }
  if (a.decline && (!a.fields.empty() || !a.json_fields.empty())) {
    return Usage("--decline answers nothing: drop the fields");
  }
  auto opened = OpenChosenStore(g, g.store, g.ws(), StoreUse{.one_shot = true});
  if (!opened.ok()) return Fail(opened.status());
  TeamStore& store = **opened;
  if (a.id.empty()) return List(store, g, a.json);
  if (Status s = ValidateName("request id", a.id); !s.ok()) return Fail(s);
  std::unique_ptr<TeamMail> mail = store.Mail(g.team);
  auto req = mail->GetRequest(a.id);
  if (!req.ok()) return Fail(req.status());
  if (req->kind != RequestKind::kElicitation) {
    return Fail(Status::FailedPrecondition("request " + a.id + " is a " + std::string(RequestKindName(req->kind)) +
                                           " request, not a question (mates send answers those)"));
  }
  if (req->status != RequestState::kPending) {
    return Fail(Status::FailedPrecondition("question " + a.id + " was answered already (" +
                                           std::string(req->status == RequestState::kApproved ? "accepted" : "declined") +
                                           (req->response.empty() ? "" : ": " + req->response) + ")"));
  }
  auto q = elicitation::ParseQuestion(req->content);
  if (!q.ok()) return Fail(q.status());
  SendRequest r;
  r.type = MessageType::kElicitationResponse;
  r.sender = kUserName;
  r.recipient = req->requester;
  r.request_id = a.id;
  Json fields = Json::object();
  if (a.decline) {
    r.approve = false;
    r.content = "declined by user (mates answer)";
  } else {
    if (!a.json_fields.empty()) {
      auto parsed = ParseJson(a.json_fields);
      if (!parsed.ok() || !parsed->is_object()) return Usage("--fields takes a JSON object, not '" + a.json_fields + "'");
      fields = *parsed;
    }
    for (const auto& f : a.fields) {
      const size_t eq = f.find('=');
      if (eq == std::string::npos || eq == 0) return Usage("a field is NAME=VALUE, not '" + f + "'");
      const std::string name = f.substr(0, eq);
      auto v = elicitation::ParseField(q->schema, name, std::string_view(f).substr(eq + 1));
      if (!v.ok()) return Fail(v.status());
      fields[name] = *v;
    }
    r.approve = true;
    r.content = DumpJson(fields);
  }
  auto sent = Messenger(*mail).Send(r);
  if (!sent.ok()) return Fail(sent.status());
  if (a.json) {
    std::cout << DumpJson(Json{{"request_id", a.id},
                               {"action", a.decline ? "decline" : "accept"},
                               {"content", a.decline ? Json(nullptr) : elicitation::WithDefaults(q->schema, fields)}})
              << std::endl;
  } else if (a.decline) {
    std::cout << "declined " << a.id << " (MCP server " << ForTerminal(q->server, 200) << ")\n";
  } else {
    std::cout << "answered " << a.id << " (MCP server " << ForTerminal(q->server, 200)
              << "): " << ForTerminal(DumpJson(elicitation::WithDefaults(q->schema, fields)), 2000) << "\n";
  }
  return 0;
}

}  // namespace

void AddAnswerCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<AnswerArgs>();
  CLI::App* cmd = app.add_subcommand("answer", "Answer an MCP server's question (without ID: list those waiting)");
  AddTeamOption(cmd, g);
  AddStoreOption(cmd, g);
  cmd->add_option("ID", a->id, "The question's request id (r-...), as listed");
  cmd->add_option("FIELDS", a->fields, "NAME=VALUE for each field to give (a list: values separated by commas)");
  cmd->add_option("--fields", a->json_fields, "The fields as one JSON object (NAME=VALUE ones go over it)");
  cmd->add_flag("--decline", a->decline, "Decline to answer");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([&g, a] { g.action = [&g, a] { return Answer(g, *a); }; });
}

}  // namespace mates::cli
