// TeamApi: the dashboard's JSON API over a Source (DESIGN §11) — what the
// page reads (the team, tasks, messages a page at a time, requests,
// merges, an agent's transcript) and what a person does there (send,
// create a task, decide a plan or a merge, ask an agent to stop), each
// through the store's rules (Messenger, the board, DecideMerge). A
// read-only dashboard answers every POST 403.
#pragma once

#include <httplib.h>

#include <string>

#include "agent/prices.h"
#include "core/json.h"
#include "dashboard/dashboard.h"
#include "dashboard/source.h"
#include "store/messenger.h"

namespace mates::dashboard {

class TeamApi {
 public:
  // `source`, `options` and `prices` (the spend chart's) outlive the API.
  TeamApi(Source& source, const DashboardOptions& options, const agent::PriceTable& prices)
      : source_(source), options_(options), prices_(prices) {}
  // Its routes on `server` (/api/...).
  void Register(httplib::Server& server);

 private:
  // A POST's JSON body, unless the dashboard is read-only (403) or the
  // body is not an object (415/400): false with the answer sent.
  bool Writable(const httplib::Request& req, httplib::Response& res, Json* body);
  void Team(httplib::Response& res);
  void Messages(const httplib::Request& req, httplib::Response& res);
  void PostMessage(const Json& b, httplib::Response& res);
  void PostTask(const Json& b, httplib::Response& res);
  // Sent through the team's store (its rules: Messenger's).
  Result<SendReceipt> Send(const SendRequest& r);
  void Transcript(const std::string& name, httplib::Response& res);
  // A pending request answered by a person, by its kind: a plan decided,
  // an MCP server's question answered or declined.
  void AnswerRequest(const std::string& id, const Json& b, httplib::Response& res);
  void AnswerPlan(const ProtocolRequest& req, const Json& b, httplib::Response& res);
  void AnswerQuestion(const ProtocolRequest& req, const Json& b, httplib::Response& res);
  // A person decides a merge waiting for review (DESIGN §12).
  void DecideMergeRequest(const std::string& id_text, const Json& b, httplib::Response& res);
  // {"diff": …}, or the error's status.
  void SendDiff(const Result<std::string>& diff, httplib::Response& res);
  // A lever of the host (DESIGN §27): 200 {said}, or 404/409 with why.
  void PullLever(const std::string& op, const std::string& name, httplib::Response& res);
  void AskToStop(const std::string& name, const Json& b, httplib::Response& res);

  Source& source_;
  const DashboardOptions& options_;
  const agent::PriceTable& prices_;
};

}  // namespace mates::dashboard
