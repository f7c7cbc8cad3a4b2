// An MCP server's sampling/createMessage served by the host's own model
// (DESIGN §23): the lead's provider and model, within the team's budget,
// its use recorded like any agent's (the lead's `<lead>.mcp` journal,
// "lead (MCP sampling)" in `mates usage`). Declined by
// `mcp.sampling: decline`, globally or per server (the client then does
// not offer it). Text only: a message of images or audio, or a request for
// tools, is refused naming what; `maxTokens` is capped at kMaxSamplingTokens,
// the text sent at kMaxSamplingInputBytes.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "agent/spend.h"
#include "core/cancel.h"
#include "core/json.h"
#include "core/status.h"
#include "llm/provider.h"

namespace mates::host {

inline constexpr int kMaxSamplingTokens = 4096;
// What a request may send the model, system prompt and messages together
// (~64k tokens): a server may not run up a bill with one call.
inline constexpr size_t kMaxSamplingInputBytes = 256 << 10;

struct Sampler {
  llm::Provider* provider = nullptr;
  std::string model;  // "" = the provider's default
  std::string agent_id;  // "lead@team": who the model call is for
  std::shared_ptr<agent::TeamSpend> spend;  // may be null: no budget
  // Records one call's use (the journal); its failure is said, not fatal.
  std::function<Status(const llm::Usage&, const std::string& model)> record;
};

// The MCP params of sampling/createMessage as a model request; InvalidArgument
// naming what is not served.
Result<llm::Request> SamplingRequest(const Json& params, const std::string& model);
// The MCP result for a model's answer: {role, content: {type: text, text},
// model, stopReason}.
Json SamplingResult(const llm::Response& r);

// Serves one request of server `server` (blocks until the model answers,
// `stop`, or the budget says no).
Result<Json> Sample(const Sampler& s, const std::string& server, const Json& params, const CancelToken& stop);

}  // namespace mates::host
