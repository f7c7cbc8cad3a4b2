#include "llm/scripted.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/clock.h"
#include "core/ids.h"
#include "llm/anthropic.h"
#include "llm/validation.h"

namespace mates::llm {

int64_t EstimateTokens(const std::string& text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

namespace {

// Until `until` (to within tens of microseconds if `on_time`); true if
// `cancel` (may be null) fired first.
bool Wait(SteadyClock::time_point until, CancelToken* cancel, bool on_time) {
  if (cancel != nullptr) {
    if (on_time) return cancel->WaitUntilOnTime(until);
    return cancel->WaitFor(std::chrono::duration<double>(until - SteadyClock::now()).count());
  }
  if (on_time) {
    SleepUntilOnTime(until);
  } else {
    std::this_thread::sleep_until(until);
  }
  return false;
}

}  // namespace

Result<Response> ScriptedProvider::Complete(const Request& request,
                                            const StreamCallbacks& callbacks,
                                            CancelToken* cancel) {
  // delay_ms is the model's time from the request to the reply: the
  // checks below are part of it, not added to it.
  const auto start = SteadyClock::now();
  const std::string agent = AgentName(request.agent_id);
  const std::string newest = NewestUserText(request.messages);
  // The body is made as a client makes it, now. The API checks it on its
  // servers, while the client waits: here, halfway through the delay, not
  // on the cores the team shares at the moment its calls start together
  // (a level of 30 teammates' calls checked at once was ~1 point of
  // team_bench's large makespan). A refused request is refused then.
  std::string model = request.model.empty() ? model_ : request.model;
  Json body = AnthropicRequestBody(request, model, /*stream=*/false);
  const int delay_ms = scenario_->DelayOf(agent, newest);
  if (delay_ms > 0 &&
      Wait(start + std::chrono::microseconds(delay_ms * 500), cancel, /*on_time=*/false)) {
    RecycleAnthropicBody(request, std::move(body));
    return Status::Cancelled("request cancelled");
  }
  Status valid = ValidateAnthropicRequest(body, /*strict_alternation=*/true);
  RecycleAnthropicBody(request, std::move(body));
  if (!valid.ok()) {
    return Status::FailedPrecondition("HTTP 400 invalid_request_error: " + valid.message());
  }
  ScenarioReply reply = scenario_->Reply(agent, newest, /*consume=*/true, TeamOfAgent(request.agent_id));
  // On time: a model told to take 50 ms takes 50 ms, not the 50.2 of a
  // plain wait on a virtual machine (core/clock.h).
  if (reply.delay_ms > 0 &&
      Wait(start + std::chrono::milliseconds(reply.delay_ms), cancel, /*on_time=*/true)) {
    return Status::Cancelled("request cancelled");
  }
  if (cancel != nullptr && cancel->cancelled()) return Status::Cancelled("request cancelled");
  Response r;
  r.id = NewId("msg");
  r.model = model;
  r.content = std::move(reply.content);
  r.stop_reason = reply.stop_reason;
  size_t chars = request.system.size();
  for (const auto& m : request.messages) {
    for (const auto& b : m.content) chars += b.text.size() + b.input_json.size() + 24;
  }
  r.usage.input_tokens = static_cast<int64_t>(chars / 4);
  std::string output;
  for (const auto& b : r.content) {
    output += b.type == BlockType::kText ? b.text : b.input_json;
    if (b.type == BlockType::kText && callbacks.on_text) callbacks.on_text(b.text);
  }
  r.usage.output_tokens = EstimateTokens(output);
  return r;
}

}  // namespace mates::llm
