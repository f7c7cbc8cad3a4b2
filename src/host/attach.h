// Attaching (DESIGN §27): `mates attach` joins a person's terminal to a
// hosted lead's conversation over the host's control socket (levers.h).
//
// The host's agents report to an AttachHub, which passes every event on to
// the host's own output and, as one JSON line each, to every terminal
// attached:
//   {"ev":"text","agent":A,"text":…}        a streamed piece of a reply
//   {"ev":"text_end","agent":A}
//   {"ev":"tool_call","agent":A,"call":"Bash(ls)"}
//   {"ev":"tool_result","agent":A,"call":…,"result":…,"error":bool}
//   {"ev":"message","agent":A,"from":…,"type":…,"about":…}
//   {"ev":"line","agent":A,"text":…}        retries, notices, the host's lines
// A terminal sends lines of its own: {"say": TEXT} (to the lead, as the
// person) or {"interrupt": true} (the lead's turn ends); it detaches by
// closing. What a terminal cannot take as fast as the team writes is
// dropped past 1 MiB waiting, and it is told how much; the team never
// waits for a terminal.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "agent/events.h"
#include "core/files.h"
#include "core/json.h"
#include "core/status.h"

namespace mates::host {

// What an attached terminal's lines do.
struct AttachActions {
  std::function<Status(const std::string& text)> say;  // a line typed, to the lead
  std::function<Result<std::string>()> interrupt;      // Ctrl-C
};

class AttachHub : public agent::AgentEvents {
 public:
  static constexpr size_t kMaxAttached = 4;
  static constexpr size_t kMaxLineBytes = (1 << 20) + 4096;  // a message's 1 MiB, quoted
  static constexpr size_t kMaxQueuedBytes = 1 << 20;

  // Events go on to `inner` (may be null) and lines to `say` as well.
  AttachHub(agent::AgentEvents* inner, std::function<void(const std::string&)> say);
  // Every terminal is let go.
  ~AttachHub() override;
  AttachHub(const AttachHub&) = delete;
  AttachHub& operator=(const AttachHub&) = delete;

  // A line of the host's, to its output and every terminal.
  void Say(const std::string& text);
  // Serves the terminal at `conn` (its request read already): `hello`
  // first, then the team's events, until it detaches. FailedPrecondition
  // when kMaxAttached terminals are attached already (`conn` is left).
  Status Attach(ScopedFd& conn, const std::string& hello, AttachActions actions);
  size_t attached();
  // Lets every terminal go (the host stops: what their lines would do is
  // going).
  void DetachAll();

  void OnText(const std::string& agent, std::string_view delta) override;
  void OnTextEnd(const std::string& agent) override;
  void OnToolCall(const std::string& agent, const llm::ContentBlock& call) override;
  void OnToolResult(const std::string& agent, const llm::ContentBlock& call,
                    const tools::ToolResult& result) override;
  void OnMessages(const std::string& agent, const std::vector<Message>& delivered) override;
  void OnRetry(const std::string& agent, int attempt, const Status& why, double delay_s) override;
  void OnCompact(const std::string& agent, int64_t before, int64_t after, const std::string& transcript) override;
  void OnNotice(const std::string& agent, const std::string& text) override;

 private:
  struct Session;
  void Send(const Json& event);
  // Joins the sessions whose terminals went; mu_ held.
  void ReapLocked();

  agent::AgentEvents* const inner_;
  const std::function<void(const std::string&)> say_;
  std::mutex mu_;
  std::list<std::unique_ptr<Session>> sessions_;  // guarded by mu_
  std::map<std::string, std::string> partial_;    // an agent's text cut inside a character, guarded by mu_
};

}  // namespace mates::host
