// LiveOutput: how agents' work looks in a terminal. The models' text goes to
// stdout as it streams; tool calls (one line each, with the first line of
// the result), messages, retries and notices go to stderr. Each agent has
// its colour (seed v8: cyan, yellow, magenta, green, blue) when the output
// is a terminal, and plain text otherwise. With several agents at once,
// every line carries the agent's name and text is written a line at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "agent/activity.h"
#include "agent/events.h"

namespace mates::cli {

class LiveOutput : public agent::AgentEvents {
 public:
  // `color`: ANSI colours; `multi`: prefix lines with agent names.
  LiveOutput(bool color, bool multi) : color_(color), multi_(multi) {}
  ~LiveOutput() override;
  LiveOutput(const LiveOutput&) = delete;
  LiveOutput& operator=(const LiveOutput&) = delete;

  // Everything shown is also appended to `file`, without colours
  // (`--log FILE`).
  Status TeeTo(const fs::path& file);

  void SetColor(const std::string& agent, const std::string& color_name);
  void SetMulti(bool multi);
  // A line on stderr about `agent` (or the system, if empty).
  void Line(const std::string& agent, const std::string& text);

  void OnText(const std::string& agent, std::string_view delta) override;
  void OnTextEnd(const std::string& agent) override;
  void OnToolCall(const std::string& agent, const llm::ContentBlock& call) override;
  void OnToolResult(const std::string& agent, const llm::ContentBlock& call,
                    const tools::ToolResult& result) override;
  void OnMessages(const std::string& agent, const std::vector<Message>& delivered) override;
  void OnRetry(const std::string& agent, int attempt, const Status& why, double delay_s) override;
  void OnCompact(const std::string& agent, int64_t before, int64_t after,
                 const std::string& transcript) override;
  void OnNotice(const std::string& agent, const std::string& text) override;

  // A tool call, and its result, as DescribeCall put the call: what an
  // attached terminal is sent (host/attach.h).
  void ShowCall(const std::string& agent, const std::string& described);
  void ShowResult(const std::string& agent, const std::string& described, const std::string& result, bool error);

 private:
  std::string Paint(const std::string& agent, const std::string& text) const;
  std::string Prefix(const std::string& agent) const;
  void FlushLocked(const std::string& agent);
  // Writes `s` to `f` (and the --log file); counts what was written.
  void PutLocked(FILE* f, const std::string& s);

  std::mutex mu_;
  bool color_;
  bool multi_;                                  // guarded by mu_
  std::map<std::string, std::string> colors_;   // guarded by mu_
  std::map<std::string, std::string> pending_;  // partial text lines, guarded by mu_
  std::map<std::string, bool> mid_line_;        // stdout not at a line start
  FILE* tee_ = nullptr;                         // the --log file, guarded by mu_
  uint64_t written_ = 0;                        // writes so far, guarded by mu_
  std::map<std::string, uint64_t> call_at_;     // written_ after an agent's tool call, guarded by mu_
};

using agent::DescribeCall;
// Whether stdout is a terminal that wants colours (NO_COLOR unset).
bool WantColor();

}  // namespace mates::cli
