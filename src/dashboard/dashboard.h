// Dashboard: a team's live page (DESIGN §11), served on 127.0.0.1 by the
// host (`mates up`, read-write) and by `mates dashboard` (read-only; also on
// an archived team), of a team in the workspace's files or in a PostgreSQL
// store (source.h says what differs).
//
//   GET  /                            the page (its CSS and script inline)
//   GET  /events                      Server-Sent Events: `hello` once, then
//                                     `change` {"kinds":[…]} whenever files
//                                     of the team change (team, activity,
//                                     tasks, messages, requests, transcripts)
//   GET  /api/team                    the `mates status --json` document
//   GET  /api/tasks                   the board
//   GET  /api/messages[?after=CURSOR] the log: its last 500 messages, or
//                                     what follows a cursor; `next` (and
//                                     `more`: ask again at once)
//   GET  /api/requests                protocol requests (pending plans …)
//   GET  /api/agents/NAME/transcript  an agent's conversation (its journal)
//   POST /api/messages                {to, content}: sent as `user`
//   POST /api/tasks                   {subject, description, blocked_by}
//   POST /api/requests/ID             {approve, feedback}: a pending plan
//                                     answered (as the lead, on user's word)
//   POST /api/agents/NAME/stop        {reason}: a shutdown request
//
// Every request must carry the token (`?token=` or `Authorization: Bearer`;
// else 401) and a Host of 127.0.0.1 or localhost (else 403: DNS
// rebinding). Errors are {"error": "…"}. cpp-httplib stays in the .cc.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "telemetry/metrics.h"
#include "git/merge_hooks.h"
#include "store/workspace.h"

namespace mates {
struct Env;
class TeamStore;
}  // namespace mates

namespace mates::dashboard {

struct DashboardOptions {
  // The team is in the store `store_url` names (stores/open_store.h; ""
  // for the files under `ws`), hosted from `ws` if at all.
  Workspace ws{"."};
  std::string store_url;
  // The store the page reads and writes through: its host's, which
  // outlives the dashboard (one pool of connections, one listener); null:
  // the dashboard opens the one `store_url` names. Either way its threads
  // never wait out an outage (NeverWaitOutOutagesOnThisThread): a request
  // answers 503 while the host's agents wait.
  TeamStore* store = nullptr;
  std::string team;
  int port = 0;            // 0 = any free port
  bool read_only = false;  // no controls (POST is 403)
  std::string archived;    // the archive's stamp, shown on the page ("" = live)
  // Raised when a person rejects a merge here (DESIGN §22): its host's.
  git::MergeHooks merge_hooks;
  // The host's levers on its agents (DESIGN §27: stop, restart,
  // interrupt), pulled by the page's buttons; null where the dashboard is
  // not its host's (the page shows only `stop`, a shutdown request).
  std::function<Result<std::string>(const std::string& op, const std::string& agent)> levers;
  // What the host counts as its agents work, served with the store's
  // figures at /metrics (DESIGN §29); null: the store's only.
  std::shared_ptr<const telemetry::Metrics> metrics;
};

class Dashboard {
 public:
  // Binds 127.0.0.1 and serves on threads of its own; its store is opened
  // in `env`, the process's parts (which outlive the dashboard).
  static Result<std::unique_ptr<Dashboard>> Start(DashboardOptions options, const Env& env);
  ~Dashboard();
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  int port() const;
  // http://127.0.0.1:PORT/?token=TOKEN
  std::string url() const;
  // Ends the event streams and the server; idempotent.
  void Stop();

  class Impl;

 private:
  explicit Dashboard(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mates::dashboard
