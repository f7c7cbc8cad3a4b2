// FakeProvider: a Provider for unit tests that records every request and
// answers with a function of it.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "llm/provider.h"
#include "llm/validation.h"
#include "llm/anthropic.h"

namespace mates::testing {

class FakeProvider : public llm::Provider {
 public:
  using Responder = std::function<llm::Response(const llm::Request&, int call)>;
  explicit FakeProvider(Responder r, int64_t window = 200000) : responder_(std::move(r)), window_(window) {}

  Result<llm::Response> Complete(const llm::Request& request, const llm::StreamCallbacks& cb,
                                 llm::CancelToken* cancel) override {
    // Every request must be one the real API would take.
    Status valid = llm::ValidateAnthropicRequest(llm::AnthropicRequestBody(request, "fake", false), true);
    if (!valid.ok()) return Status::FailedPrecondition("HTTP 400: " + valid.message());
    if (cancel != nullptr && cancel->cancelled()) return Status::Cancelled("cancelled");
    int n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      n = static_cast<int>(requests_.size());
    }
    llm::Response r = responder_(request, n);
    // Report input tokens as a real API would: about what was sent.
    if (r.usage.input_tokens == 0) {
      size_t chars = request.system.size();
      for (const auto& m : request.messages) {
        for (const auto& b : m.content) chars += b.text.size() + b.input_json.size() + 24;
      }
      r.usage.input_tokens = static_cast<int64_t>(chars / 4);
    }
    if (cb.on_text) cb.on_text(r.Text());
    return r;
  }
  std::string_view name() const override { return "fake"; }
  std::string default_model() const override { return "fake-model"; }
  int64_t ContextWindow(const std::string&) const override { return window_; }

  std::vector<llm::Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  Responder responder_;
  int64_t window_;
  std::mutex mu_;
  std::vector<llm::Request> requests_;
};

inline llm::Response TextReply(const std::string& text, const std::string& stop = "end_turn") {
  llm::Response r;
  r.content.push_back(llm::ContentBlock::Text(text));
  r.stop_reason = stop;
  r.usage.output_tokens = 10;
  return r;
}

inline llm::Response ToolReply(const std::string& id, const std::string& name, const std::string& input) {
  llm::Response r;
  r.content.push_back(llm::ContentBlock::ToolUse(id, name, input));
  r.stop_reason = "tool_use";
  r.usage.output_tokens = 10;
  return r;
}

}  // namespace mates::testing
