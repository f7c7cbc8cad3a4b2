// The Anthropic Messages API over libcurl, streaming (SSE) by default.
#pragma once

#include <memory>
#include <string>

#include "llm/http.h"
#include "llm/http_provider.h"
#include "llm/provider.h"
#include "llm/retry.h"
#include "llm/sse.h"

namespace mates::llm {

struct AnthropicOptions : HttpProviderOptions {
  AnthropicOptions() {
    base_url = "https://api.anthropic.com";  // the client adds /v1/messages
    model = "claude-sonnet-4-5";
  }
};

// The request body (public for tests): model, system and tools with cache
// breakpoints, messages, metadata.user_id, stream.
Json AnthropicRequestBody(const Request& request, const std::string& model, bool stream);
// A body done with (sent, checked, not changed): its tools and messages
// arrays go back to this thread. The next body made here for the same
// tools takes the tools instead of building twelve schemas again (and
// freeing them after), and takes the messages as far as its conversation
// begins with the same ones (each compared whole), making only the rest.
// `request` is the one `body` was made from, the last body made here.
void RecycleAnthropicBody(const Request& request, Json body);

// Assembles a streamed message from SSE events: text deltas (forwarded as
// they come), input_json_delta parsed at block stop, cumulative usage,
// stop_reason. An `error` event or a stream cut before message_stop is a
// retryable failure (error()). An event whose fields are missing, null or
// of the wrong type, content before message_start, or a message_stop with
// no message before it makes the reply malformed (malformed(), naming the
// event and the field; not retried: the server said what it meant).
class AnthropicStreamAccumulator {
 public:
  explicit AnthropicStreamAccumulator(TextDeduper* text) : text_(text) {}
  void OnEvent(const SseEvent& event);
  bool complete() const { return complete_; }
  const Status& error() const { return error_; }
  const Status& malformed() const { return malformed_; }
  // Either of the two, or OK.
  bool failed() const { return !error_.ok() || !malformed_.ok(); }
  Response TakeResponse();

 private:
  struct Partial {
    ContentBlock block;
    std::string json;  // input_json_delta so far
    bool known = true;  // a block type we keep
  };
  Status Apply(const std::string& type, const Json& j);
  Status OnBlockStart(const Json& j);
  Status OnBlockDelta(const Json& j);
  Status OnMessageDelta(const Json& j);

  TextDeduper* text_;
  Response response_;
  std::map<int64_t, Partial> blocks_;
  bool started_ = false;
  bool complete_ = false;
  Status error_;
  Status malformed_;
};

// A complete (non-streamed) Messages API reply, validated the same way;
// block types mates does not keep (thinking, server tools) are skipped.
Result<Response> AnthropicResponseFromJson(const Json& j);

class AnthropicProvider : public HttpProvider {
 public:
  AnthropicProvider(AnthropicOptions options, std::unique_ptr<HttpTransport> transport);
  std::string_view name() const override { return "anthropic"; }
  int64_t ContextWindow(const std::string& model) const override;

 private:
  std::string Body(const Request& request, const std::string& model) const override;
  std::string Endpoint(const std::string&) const override { return "/v1/messages"; }
  std::vector<std::string> Headers(const Request& request) const override;
  std::unique_ptr<StreamReader> Reader(TextDeduper* text) const override;
  Result<Response> WholeReply(const Json& j) const override { return AnthropicResponseFromJson(j); }
  std::string_view StreamEnd() const override { return "message_stop"; }
};

}  // namespace mates::llm
