// What every provider over HTTP shares (Anthropic's Messages API, an
// OpenAI-compatible server, OpenAI's Responses API, Gemini; DESIGN §28): the request body made once a call, attempts under the retry
// policy with text shown once across them, and an attempt's shape — a
// POST to an endpoint below the base URL, a streamed reply read as SSE
// events into the provider's reader, or a whole reply parsed. A provider
// says only what differs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "llm/http.h"
#include "llm/provider.h"
#include "llm/retry.h"
#include "llm/sse.h"

namespace mates::llm {

struct HttpProviderOptions {
  std::string base_url;  // the provider adds its endpoint's path
  std::string api_key;   // never logged
  std::string model;
  bool stream = true;
  RetryPolicy retry;
  double connect_timeout_s = 10;
  double request_timeout_s = 0;  // one attempt, reply included; 0 = none
  long stall_timeout_s = 120;    // streaming: no byte (not even a ping) for this long
};

// One streamed reply being read: its events in, a response (or why not)
// out.
class StreamReader {
 public:
  virtual ~StreamReader() = default;
  virtual void OnEvent(const SseEvent& event) = 0;
  // An error event, or a reply that broke its shape: the attempt ends.
  bool failed() const { return !error().ok() || !malformed().ok(); }
  virtual const Status& error() const = 0;      // retryable
  virtual const Status& malformed() const = 0;  // not
  // Whether the stream said it was done.
  virtual bool complete() const = 0;
  virtual Result<Response> Take() = 0;
};

class HttpProvider : public Provider {
 public:
  Result<Response> Complete(const Request& request, const StreamCallbacks& callbacks,
                            CancelToken* cancel) final;
  std::string default_model() const override { return options_.model; }

 protected:
  HttpProvider(HttpProviderOptions options, std::unique_ptr<HttpTransport> transport);
  const HttpProviderOptions& options() const { return options_; }

  // The body of `request` for `model`.
  virtual std::string Body(const Request& request, const std::string& model) const = 0;
  // The endpoint below the base URL for `model` ("/v1/messages"), and the
  // headers of `request` besides the content type.
  virtual std::string Endpoint(const std::string& model) const = 0;
  virtual std::vector<std::string> Headers(const Request& request) const = 0;
  virtual std::unique_ptr<StreamReader> Reader(TextDeduper* text) const = 0;
  // A whole (not streamed) reply.
  virtual Result<Response> WholeReply(const Json& j) const = 0;
  // What a stream that ended early lacked ("message_stop").
  virtual std::string_view StreamEnd() const = 0;

 private:
  Result<Response> Attempt(const HttpRequest& http, TextDeduper* text, CancelToken* cancel,
                           AttemptFailure* failure);

  const HttpProviderOptions options_;
  const std::unique_ptr<HttpTransport> transport_;
};

}  // namespace mates::llm
