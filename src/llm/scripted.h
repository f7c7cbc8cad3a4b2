// The scripted provider: replays a Scenario with no network (DESIGN §6), the
// offline default of `mates demo` and of the tests. Every request is checked
// as the real API would check it (strictly: roles alternate), so a
// conversation that would be refused online fails here too.
#pragma once

#include <memory>

#include "llm/provider.h"
#include "llm/scenario.h"

namespace mates::llm {

class ScriptedProvider : public Provider {
 public:
  explicit ScriptedProvider(std::shared_ptr<Scenario> scenario, std::string model = "scripted")
      : scenario_(std::move(scenario)), model_(std::move(model)) {}

  Result<Response> Complete(const Request& request, const StreamCallbacks& callbacks,
                            CancelToken* cancel) override;
  std::string_view name() const override { return "scripted"; }
  std::string default_model() const override { return model_; }
  int64_t ContextWindow(const std::string&) const override { return kClaudeContextWindow; }

 private:
  std::shared_ptr<Scenario> scenario_;
  std::string model_;
};

// A rough token count (4 characters a token), for usage figures offline.
int64_t EstimateTokens(const std::string& text);

}  // namespace mates::llm
