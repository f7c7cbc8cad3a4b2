#include "llm/scripted.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/ids.h"
#include "llm/anthropic.h"
#include "llm/validation.h"

namespace mates::llm {

int64_t EstimateTokens(const std::string& text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

Result<Response> ScriptedProvider::Complete(const Request& request,
                                            const StreamCallbacks& callbacks,
                                            CancelToken* cancel) {
  // delay_ms is the model's time from the request to the reply: the
  // checks below are part of it, not added to it.
  const auto start = std::chrono::steady_clock::now();
  std::string model = request.model.empty() ? model_ : request.model;
  Json body = AnthropicRequestBody(request, model, /*stream=*/false);
  Status valid = ValidateAnthropicRequest(body, /*strict_alternation=*/true);
  RecycleAnthropicBody(request, std::move(body));
  if (!valid.ok()) {
    return Status::FailedPrecondition("HTTP 400 invalid_request_error: " + valid.message());
  }
  ScenarioReply reply =
      scenario_->Reply(AgentName(request.agent_id), NewestUserText(request.messages));
  if (reply.delay_ms > 0) {
    // On time: a model told to take 50 ms takes 50 ms, not the 50.2 of a
    // plain wait on a virtual machine (core/clock.h).
    const auto until = start + std::chrono::milliseconds(reply.delay_ms);
    if (cancel != nullptr) {
      if (cancel->WaitUntilOnTime(until)) return Status::Cancelled("request cancelled");
    } else {
      SleepUntilOnTime(until);
    }
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
