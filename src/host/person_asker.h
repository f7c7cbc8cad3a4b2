// An MCP server's question put to a person through the team (DESIGN §23):
// an elicitation_request from the asking member to `user` — the dashboard
// shows it as a form, `mates inbox user` as text, and `mates answer` or
// the page answers it —, then the answer waited for on the request's
// record (a watch on the team's requests). Nobody answering within the
// timeout, or the call that asked abandoned, declines it: the host sends
// the decline itself, as `user` saying why, so the request is closed for
// everyone who shows it.
#pragma once

#include <string>

#include "core/cancel.h"
#include "core/json.h"
#include "core/status.h"
#include "store/team_store.h"

namespace mates::host {

// The MCP result ({action: accept, content} or {action: decline}) for
// server `server`'s elicitation/create `params`, asked by `asker` of
// `team`. An error when it could not be asked (the question is then
// declined by the caller).
Result<Json> AskPerson(TeamStore& store, const std::string& team, const std::string& asker, const std::string& server,
                       const Json& params, double timeout_s, const CancelToken& stop);

}  // namespace mates::host
