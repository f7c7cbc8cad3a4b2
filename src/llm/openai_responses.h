// OpenAI's Responses API (POST /v1/responses; `--provider
// openai-responses`, DESIGN §28) over libcurl, streaming by default. Nothing
// is stored on the server (store: false): each call sends the whole
// conversation, as the Messages and Chat APIs do; the agent's id goes as
// prompt_cache_key (the API's caching keeps to it) and safety_identifier.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llm/http.h"
#include "llm/http_provider.h"
#include "llm/provider.h"
#include "llm/sse.h"
#include "llm/tool_calls.h"

namespace mates::llm {

struct ResponsesOptions : HttpProviderOptions {
  ResponsesOptions() {
    base_url = "https://api.openai.com/v1";  // the client adds /responses
    model = "gpt-5-mini";
    stall_timeout_s = 300;  // reasoning models think long before a byte
  }
  int64_t context_window = 400000;
};

// The request body (public for tests): the system prompt as instructions,
// a user turn's tool results as function_call_output items before its text,
// an assistant turn's text as a message and its calls as function_call
// items, tools as functions.
Json ResponsesRequestBody(const Request& request, const std::string& model, bool stream);

// Assembles a streamed response from its typed events: output_text deltas
// forwarded as they come, items taken when done, the end from
// response.completed or response.incomplete (whose response is the
// authority, its items and its usage). response.failed or an error event
// is a retryable failure (error()); an event that is not JSON or whose
// fields have the wrong type makes the reply malformed (malformed()).
class ResponsesStreamAccumulator : public StreamReader {
 public:
  explicit ResponsesStreamAccumulator(TextDeduper* text) : text_(text) {}
  void OnEvent(const SseEvent& event) override;
  bool complete() const override { return complete_; }
  const Status& error() const override { return error_; }
  const Status& malformed() const override { return malformed_; }
  Result<Response> Take() override;

 private:
  Status Apply(const Json& j);

  TextDeduper* text_;
  size_t text_bytes_ = 0;
  std::map<int64_t, Json> items_;  // by output_index, as done
  Json final_;                     // the response at its end
  bool complete_ = false;
  int events_ = 0;
  Status error_;
  Status malformed_;
};

// A whole response object (not streamed, or a stream's last): its message
// items' text, function_call items as tool_use blocks, refusals, status and
// usage (input_tokens count the cached ones too).
Result<Response> ResponsesResponseFromJson(const Json& j);

class ResponsesProvider : public HttpProvider {
 public:
  ResponsesProvider(ResponsesOptions options, std::unique_ptr<HttpTransport> transport);
  std::string_view name() const override { return "openai-responses"; }
  int64_t ContextWindow(const std::string&) const override { return context_window_; }

 private:
  std::string Body(const Request& request, const std::string& model) const override;
  std::string Endpoint(const std::string&) const override { return "/responses"; }
  std::vector<std::string> Headers(const Request& request) const override;
  std::unique_ptr<StreamReader> Reader(TextDeduper* text) const override;
  Result<Response> WholeReply(const Json& j) const override { return ResponsesResponseFromJson(j); }
  std::string_view StreamEnd() const override { return "response.completed"; }

  const int64_t context_window_;
};

}  // namespace mates::llm
