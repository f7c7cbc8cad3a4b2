// The Anthropic Messages API over libcurl, streaming (SSE) by default.
#pragma once

#include <memory>
#include <string>

#include "llm/http.h"
#include "llm/provider.h"
#include "llm/retry.h"
#include "llm/sse.h"

namespace mates::llm {

struct AnthropicOptions {
  std::string base_url = "https://api.anthropic.com";  // the client adds /v1/messages
  std::string api_key;                                 // never logged
  std::string model = "claude-sonnet-4-5";
  bool stream = true;
  RetryPolicy retry;
  double connect_timeout_s = 10;
  long stall_timeout_s = 120;  // no byte (not even a ping) for this long
};

// The request body (public for tests): model, system and tools with cache
// breakpoints, messages, metadata.user_id, stream.
Json AnthropicRequestBody(const Request& request, const std::string& model, bool stream);

// Assembles a streamed message from SSE events: text deltas (forwarded as
// they come), input_json_delta parsed at block stop, cumulative usage,
// stop_reason. An `error` event or a stream cut before message_stop is a
// retryable failure.
class AnthropicStreamAccumulator {
 public:
  explicit AnthropicStreamAccumulator(TextDeduper* text) : text_(text) {}
  void OnEvent(const SseEvent& event);
  bool complete() const { return complete_; }
  // Set once an `error` event arrived.
  const Status& error() const { return error_; }
  Response TakeResponse();

 private:
  struct Partial {
    ContentBlock block;
    std::string json;  // input_json_delta so far
    bool known = true;  // a block type we keep
  };
  TextDeduper* text_;
  Response response_;
  std::map<int, Partial> blocks_;
  bool complete_ = false;
  Status error_;
};

class AnthropicProvider : public Provider {
 public:
  AnthropicProvider(AnthropicOptions options, std::unique_ptr<HttpTransport> transport);
  Result<Response> Complete(const Request& request, const StreamCallbacks& callbacks,
                            CancelToken* cancel) override;
  std::string_view name() const override { return "anthropic"; }
  std::string default_model() const override { return options_.model; }
  int64_t ContextWindow(const std::string& model) const override;

 private:
  Result<Response> Attempt(const Request& request, const std::string& body, TextDeduper* text,
                           CancelToken* cancel, AttemptFailure* failure);

  const AnthropicOptions options_;
  const std::unique_ptr<HttpTransport> transport_;
};

}  // namespace mates::llm
