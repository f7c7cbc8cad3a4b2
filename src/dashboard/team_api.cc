// See team_api.h.
#include "dashboard/team_api.h"

#include <charconv>
#include <optional>
#include <nlohmann/json.hpp>

#include "agent/journal.h"
#include "core/names.h"
#include "git/diffs.h"
#include "dashboard/http_guard.h"
#include "llm/http_bounds.h"
#include "llm/types.h"
#include "store/merges.h"
#include "view/team_view.h"

namespace mates::dashboard {
namespace {

constexpr size_t kLogPageBytes = 8 << 20;      // per response: a 1 MiB message escaped fits
constexpr size_t kInitialMessages = 500;       // /api/messages without `after`
constexpr size_t kMaxJournalBytes = 64 << 20;  // a transcript's journal
constexpr size_t kTranscriptMessages = 300;    // the last ones shown
constexpr size_t kSeriesPoints = 400;          // the spend chart's points, at most
constexpr size_t kMaxBlockText = 16 << 10;     // each text or tool output, cut

void Cut(std::string& s, size_t max) {
  if (s.size() <= max) return;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  s = s.substr(0, end) + "\n… (" + std::to_string(s.size() - end) + " more bytes)";
}

// A decision's `approve`: true or false, and nothing else (absent, null,
// 1 or "yes" is no decision).
std::optional<bool> ApproveOf(const Json& b) {
  auto it = b.find("approve");
  if (it == b.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

}  // namespace

void TeamApi::Register(httplib::Server& server) {
  server.Get("/api/team", [this](const httplib::Request&, httplib::Response& res) { Team(res); });
  server.Get("/api/tasks", [this](const httplib::Request&, httplib::Response& res) {
    auto list = source_.Tasks();
    if (!list.ok()) return SendStatus(res, list.status());
    Json tasks = Json::array();
    for (const auto& t : *list) tasks.push_back(TaskToJson(t));
    SendJson(res, Json{{"tasks", std::move(tasks)}});
  });
  server.Get("/api/messages", [this](const httplib::Request& req, httplib::Response& res) { Messages(req, res); });
  server.Get("/api/requests", [this](const httplib::Request&, httplib::Response& res) {
    auto list = source_.Requests();
    if (!list.ok()) return SendStatus(res, list.status());
    Json out = Json::array();
    for (const auto& r : *list) out.push_back(ProtocolRequestToJson(r));
    SendJson(res, Json{{"requests", std::move(out)}});
  });
  server.Get("/api/merges", [this](const httplib::Request&, httplib::Response& res) {
    auto list = source_.Merges();
    if (!list.ok()) return SendStatus(res, list.status());
    Json out = Json::array();
    for (const auto& m : *list) out.push_back(MergeRequestToJson(m));
    SendJson(res, Json{{"merges", std::move(out)}});
  });
  // What a merge request or a task changed (DESIGN §27), as a unified diff.
  server.Get(R"(/api/merges/(\d{1,15})/diff)", [this](const httplib::Request& req, httplib::Response& res) {
    auto m = source_.store().Merges(options_.team)->Get(std::stoll(req.matches[1]));
    if (!m.ok()) return SendStatus(res, m.status());
    SendDiff(git::DiffOfMerge(options_.ws, *m), res);
  });
  server.Get(R"(/api/tasks/(\d{1,15})/diff)", [this](const httplib::Request& req, httplib::Response& res) {
    auto t = source_.store().Board(options_.team)->Get(std::stoll(req.matches[1]));
    if (!t.ok()) return SendStatus(res, t.status());
    SendDiff(git::DiffOfTask(options_.ws, source_.store(), options_.team, *t), res);
  });
  server.Get(R"(/api/agents/([^/]+)/transcript)", [this](const httplib::Request& req, httplib::Response& res) {
    Transcript(req.matches[1], res);
  });
  // Bodies read by the routes themselves, bounded whatever their framing
  // (llm/http_bounds.h).
  const auto post = [&server](const std::string& pattern, llm::BodyHandler handler) {
    llm::PostBounded(server, pattern, kMaxBodyBytes, std::move(handler), TooLarge);
  };
  post(R"(/api/merges/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    Json b;
    if (Writable(req, res, &b)) DecideMergeRequest(req.matches[1], b, res);
  });
  post("/api/messages", [this](const httplib::Request& req, httplib::Response& res) {
    Json b;
    if (Writable(req, res, &b)) PostMessage(b, res);
  });
  post("/api/tasks", [this](const httplib::Request& req, httplib::Response& res) {
    Json b;
    if (Writable(req, res, &b)) PostTask(b, res);
  });
  post(R"(/api/requests/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    Json b;
    if (Writable(req, res, &b)) AnswerRequest(req.matches[1], b, res);
  });
  post(R"(/api/agents/([^/]+)/stop)", [this](const httplib::Request& req, httplib::Response& res) {
    Json b;
    if (Writable(req, res, &b)) AskToStop(req.matches[1], b, res);
  });
  post(R"(/api/agents/([^/]+)/(restart|interrupt))", [this](const httplib::Request& req, httplib::Response& res) {
    Json b;
    if (!Writable(req, res, &b)) return;
    if (!options_.levers) {
      return SendError(res, 409, "this page is not its host's: `mates " + std::string(req.matches[2]) + "` in a shell does it");
    }
    PullLever(req.matches[2], req.matches[1], res);
  });
  // Last: a POST to no route is drained within the bound too, then 404.
  post(".*", [](const httplib::Request&, httplib::Response& res) { SendError(res, 404, "no such endpoint"); });
}

bool TeamApi::Writable(const httplib::Request& req, httplib::Response& res, Json* body) {
  if (options_.read_only) {
    SendError(res, 403,
              options_.archived.empty()
                  ? "read-only: this is `mates dashboard`; the host's dashboard (`mates up`, see `mates status`) "
                    "can act"
                  : "read-only: an archived team");
    return false;
  }
  return ReadJsonBody(req, res, body);
}

void TeamApi::Team(httplib::Response& res) {
  auto v = source_.View();
  if (!v.ok()) return SendStatus(res, v.status());
  Json j = view::TeamViewToJson(*v);
  j["read_only"] = options_.read_only;
  j["levers"] = !options_.read_only && options_.levers != nullptr;
  j["archived"] = options_.archived.empty() ? Json(nullptr) : Json(options_.archived);
  j["workspace"] = options_.ws.root().string();
  SendJson(res, j);
}

void TeamApi::PostMessage(const Json& b, httplib::Response& res) {
  auto to = JsonString(b, "to", true);
  auto content = JsonString(b, "content", true);
  if (!to.ok()) return SendStatus(res, to.status());
  if (!content.ok()) return SendStatus(res, content.status());
  SendRequest r;
  r.sender = kUserName;
  r.type = *to == "*" ? MessageType::kBroadcast : MessageType::kMessage;
  r.recipient = *to == "*" ? "" : *to;
  r.content = *content;
  auto receipt = Send(r);
  if (!receipt.ok()) return SendStatus(res, receipt.status());
  SendJson(res, Json{{"id", receipt->message.id}, {"recipients", receipt->recipients}}, 201);
}

void TeamApi::PostTask(const Json& b, httplib::Response& res) {
  TaskDraft d;
  auto subject = JsonString(b, "subject", true);
  auto description = JsonString(b, "description", false);
  auto blocked = JsonArrayField(b, "blocked_by", false);
  if (!subject.ok()) return SendStatus(res, subject.status());
  if (!description.ok()) return SendStatus(res, description.status());
  if (!blocked.ok()) return SendStatus(res, blocked.status());
  d.subject = *subject;
  d.description = *description;
  if (*blocked != nullptr) {
    for (const auto& v : **blocked) {
      auto id = JsonId(v, "blocked_by");
      if (!id.ok()) return SendStatus(res, id.status());
      d.blocked_by.push_back(*id);
    }
  }
  auto t = source_.CreateTask(d);
  if (!t.ok()) return SendStatus(res, t.status());
  SendJson(res, TaskToJson(*t), 201);
}

void TeamApi::Messages(const httplib::Request& req, httplib::Response& res) {
  Result<LogPage> page = Status::Internal("unreached");
  if (req.has_param("after")) {
    const std::string text = req.get_param_value("after");
    uint64_t after = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), after);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return SendError(res, 400, "after: a cursor (0 or more), from `next`");
    }
    page = source_.MessagesAfter(after, kLogPageBytes);
  } else {
    page = source_.LastMessages(kInitialMessages, kLogPageBytes);
  }
  if (!page.ok()) return SendStatus(res, page.status());
  Json out = Json::array();
  for (const auto& m : page->messages) out.push_back(MessageToJson(m));
  SendJson(res, Json{{"messages", std::move(out)}, {"next", page->next}, {"more", page->more}});
}

// Sent through the team's store (its rules: Messenger's).
Result<SendReceipt> TeamApi::Send(const SendRequest& r) {
  auto mail = source_.store().Mail(options_.team);
  return Messenger(*mail).Send(r);
}

void TeamApi::Transcript(const std::string& name, httplib::Response& res) {
  if (Status s = ValidateName("agent name", name); !s.ok()) return SendStatus(res, s);
  auto journal = source_.Journal(name, kMaxJournalBytes);
  if (!journal.ok()) {
    if (journal.status().code() == StatusCode::kNotFound) {
      return SendError(res, 404, "no journal for '" + name + "' in team '" + options_.team + "'");
    }
    return SendStatus(res, journal.status());
  }
  if (journal->too_large) {
    return SendError(res, 413, "the journal of '" + name + "' is over " + std::to_string(kMaxJournalBytes >> 20) +
                                   " MiB; read it with ordinary tools: " + journal->where);
  }
  const std::string* text = &journal->text;
  const std::string path = journal->where;
  agent::JournalState st = agent::Journal::ReplayText(*text, path);
  Json msgs = Json::array();
  size_t from = st.messages.size() > kTranscriptMessages ? st.messages.size() - kTranscriptMessages : 0;
  for (size_t i = from; i < st.messages.size(); ++i) {
    llm::ChatMessage m = st.messages[i];
    for (auto& b : m.content) {
      Cut(b.text, kMaxBlockText);
      if (b.input_json.size() > kMaxBlockText) {
        std::string shown = b.input_json;
        Cut(shown, kMaxBlockText);
        b.input_json = DumpJson(Json{{"(cut)", shown}});
      }
    }
    msgs.push_back(llm::MessageToJson(m));
  }
  Json j = {{"agent", name},
            {"messages", std::move(msgs)},
            {"total", st.messages.size()},
            {"calls", st.calls},
            {"compactions", st.compactions},
            {"usage", llm::UsageToJson(st.usage)}};
  // Its spend over time, for the page's chart: [at, tokens, cost or null].
  Json series = Json::array();
  for (const auto& p : agent::Journal::UsageSeries(*text, kSeriesPoints, prices_)) {
    series.push_back(Json::array({p.at, p.tokens, p.cost_usd ? Json(*p.cost_usd) : Json(nullptr)}));
  }
  j["series"] = std::move(series);
  if (st.problem) j["problem"] = "line " + std::to_string(st.problem->line) + ": " + st.problem->what;
  SendJson(res, j);
}

void TeamApi::AnswerRequest(const std::string& id, const Json& b, httplib::Response& res) {
  if (Status s = ValidateName("request id", id); !s.ok()) return SendStatus(res, s);
  auto req = source_.store().Mail(options_.team)->GetRequest(id);
  if (!req.ok()) return SendStatus(res, req.status());
  if (req->kind == RequestKind::kPlanApproval) return AnswerPlan(*req, b, res);
  if (req->kind == RequestKind::kElicitation) return AnswerQuestion(*req, b, res);
  return SendError(res, 409, "request " + id + " is a " + std::string(RequestKindName(req->kind)) +
                                 " request; plans and questions are answered here");
}

// A person answers an MCP server's question (DESIGN §23): {action:
// "accept", content: {fields}} or {action: "decline"}; the fields are
// checked against the question by the store's rules.
void TeamApi::AnswerQuestion(const ProtocolRequest& req, const Json& b, httplib::Response& res) {
  auto action = JsonString(b, "action", true);
  if (!action.ok()) return SendStatus(res, action.status());
  if (*action != "accept" && *action != "decline") {
    return SendError(res, 400, "action: accept or decline, not '" + *action + "'");
  }
  SendRequest r;
  r.type = MessageType::kElicitationResponse;
  r.sender = kUserName;
  r.recipient = req.requester;
  r.request_id = req.id;
  r.approve = *action == "accept";
  if (*r.approve) {
    const Json content = b.contains("content") ? b["content"] : Json::object();
    if (!content.is_object()) return SendError(res, 400, "content: the fields, as a JSON object");
    r.content = DumpJson(content);
  } else {
    r.content = "declined by user on the dashboard";
  }
  auto sent = Send(r);
  if (!sent.ok()) return SendStatus(res, sent.status());
  SendJson(res, Json{{"request_id", req.id}, {"action", *action}});
}

// A person decides a pending plan: the answer goes out as the lead's (the
// responder the protocol knows), and the lead is told who decided.
void TeamApi::AnswerPlan(const ProtocolRequest& request, const Json& b, httplib::Response& res) {
  std::optional<bool> approve = ApproveOf(b);
  if (!approve) return SendError(res, 400, "approve: true or false is required");
  auto feedback = JsonString(b, "feedback", false);
  if (!feedback.ok()) return SendStatus(res, feedback.status());
  const ProtocolRequest* req = &request;
  const std::string& id = request.id;
  SendRequest r;
  r.type = MessageType::kPlanApprovalResponse;
  r.sender = req->responder;
  r.recipient = req->requester;
  r.request_id = id;
  r.approve = *approve;
  r.feedback = feedback->empty() ? "(decided by user on the dashboard)"
                                 : *feedback + " (decided by user on the dashboard)";
  auto sent = Send(r);
  if (!sent.ok()) return SendStatus(res, sent.status());
  SendRequest note;
  note.sender = kUserName;
  note.recipient = req->responder;
  note.content = std::string(*approve ? "I approved " : "I rejected ") + req->requester + "'s plan (" + id +
                 ") on the dashboard" + (feedback->empty() ? "." : ": " + *feedback);
  auto told = Send(note);
  Json j = {{"id", sent->message.id}, {"approved", *approve}};
  if (!told.ok()) j["warning"] = "the lead was not told: " + told.status().message();
  SendJson(res, j);
}

// A person decides a merge waiting for review (DESIGN §12).
void TeamApi::DecideMergeRequest(const std::string& id_text, const Json& b, httplib::Response& res) {
  std::optional<bool> approve = ApproveOf(b);
  if (!approve) return SendError(res, 400, "approve: true or false is required");
  auto feedback = JsonString(b, "feedback", false);
  if (!feedback.ok()) return SendStatus(res, feedback.status());
  auto id = ParseId(id_text, "merge id");
  if (!id.ok()) return SendStatus(res, id.status());
  auto m = source_.DecideMerge(*id, *approve, *feedback);
  if (!m.ok()) return SendStatus(res, m.status());
  SendJson(res, MergeRequestToJson(*m));
}

void TeamApi::SendDiff(const Result<std::string>& diff, httplib::Response& res) {
  if (!diff.ok()) return SendStatus(res, diff.status());
  SendJson(res, Json{{"diff", *diff}});
}

void TeamApi::PullLever(const std::string& op, const std::string& name, httplib::Response& res) {
  if (Status s = ValidateName("member name", name); !s.ok()) return SendStatus(res, s);
  auto said = options_.levers(op, name);
  if (!said.ok()) return SendError(res, said.status().code() == StatusCode::kNotFound ? 404 : 409, said.status().message());
  SendJson(res, Json{{"said", *said}});
}

void TeamApi::AskToStop(const std::string& name, const Json& b, httplib::Response& res) {
  auto reason = JsonString(b, "reason", false);
  if (!reason.ok()) return SendStatus(res, reason.status());
  auto team = source_.store().LoadTeam(options_.team);
  if (!team.ok()) return SendStatus(res, team.status());
  SendRequest r;
  r.type = MessageType::kShutdownRequest;
  r.sender = team->lead;
  r.recipient = name;
  r.content = (reason->empty() ? std::string("Please wrap up your work and shut down.") : *reason) +
              " (asked by user on the dashboard)";
  auto sent = Send(r);
  if (!sent.ok()) return SendStatus(res, sent.status());
  SendJson(res, Json{{"id", sent->message.id}, {"request_id", sent->message.request_id}});
}

}  // namespace mates::dashboard
