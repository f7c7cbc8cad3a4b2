// What an agent reports as it works, for live output. Called from the
// agent's own thread; implementations used by several agents lock.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "llm/types.h"
#include "store/message.h"
#include "tools/tool.h"

namespace mates::agent {

class AgentEvents {
 public:
  virtual ~AgentEvents() = default;
  virtual void OnText(const std::string& /*agent*/, std::string_view /*delta*/) {}
  // The end of one streamed reply.
  virtual void OnTextEnd(const std::string& /*agent*/) {}
  virtual void OnToolCall(const std::string& /*agent*/, const llm::ContentBlock& /*call*/) {}
  virtual void OnToolResult(const std::string& /*agent*/, const llm::ContentBlock& /*call*/,
                            const tools::ToolResult& /*result*/) {}
  virtual void OnMessages(const std::string& /*agent*/, const std::vector<Message>& /*delivered*/) {}
  virtual void OnRetry(const std::string& /*agent*/, int /*attempt*/, const Status& /*why*/, double /*delay_s*/) {}
  virtual void OnCompact(const std::string& /*agent*/, int64_t /*tokens_before*/, int64_t /*tokens_after*/,
                         const std::string& /*transcript*/) {}
  // Anything else worth a line: cut replies, refusals, turn limits.
  virtual void OnNotice(const std::string& /*agent*/, const std::string& /*text*/) {}
};

}  // namespace mates::agent
