// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp
// server, …) over libcurl, streaming by default.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "llm/http.h"
#include "llm/http_provider.h"
#include "llm/provider.h"
#include "llm/retry.h"
#include "llm/sse.h"

namespace mates::llm {

struct OpenAIOptions : HttpProviderOptions {
  OpenAIOptions() {
    base_url = "https://api.openai.com/v1";  // the client adds /chat/completions; the key is optional
    model = "gpt-4o-mini";
    stall_timeout_s = 300;  // local servers may think long before a byte
  }
  int64_t context_window = 128000;
};

// The request body (public for tests): the system prompt as the first
// message, tool results as "tool" messages right after their assistant
// turn, tools as functions, usage requested in the stream, `user`.
Json OpenAIRequestBody(const Request& request, const std::string& model, bool stream);
// A body done with (sent, not changed): its tools and messages arrays go
// back to this thread, for the next body made here to take as far as it
// has the same tools, system prompt and first messages (llm/recycled.h).
// `request` is the one `body` was made from, the last body made here.
void RecycleOpenAIBody(const Request& request, Json body);

// Assembles chat-completion chunks: content deltas (forwarded), tool_calls
// accumulated by index (arguments as string fragments or one object), the
// finish reason mapped to Anthropic's names, usage. A chunk with an `error`
// is a retryable failure (error()); a chunk whose fields have the wrong
// type, a chunk that is not JSON, or a stream with no chunk at all makes
// the reply malformed (malformed(), naming the field; not retried).
class OpenAIStreamAccumulator {
 public:
  explicit OpenAIStreamAccumulator(TextDeduper* text) : text_(text) {}
  // One `data:` payload ("[DONE]" included).
  void OnData(const std::string& data);
  void OnChunk(const Json& chunk);
  // [DONE] seen, or a finish_reason (some servers end without [DONE]).
  bool done() const { return done_ || !finish_reason_.empty(); }
  void MarkDone();
  const Status& error() const { return error_; }
  const Status& malformed() const { return malformed_; }
  bool failed() const { return !error_.ok() || !malformed_.ok(); }
  // Malformed when a tool call names no function.
  Result<Response> TakeResponse();

 private:
  struct Call {
    std::string id, name, arguments;
    bool arguments_object = false;
  };
  Status Apply(const Json& chunk);
  Status ApplyToolCall(const Json& tc);

  TextDeduper* text_;
  std::string text_so_far_;
  std::map<int64_t, Call> calls_;
  std::string finish_reason_;
  Usage usage_;
  std::string model_, id_;
  bool done_ = false;
  int chunks_ = 0;
  Status error_;
  Status malformed_;
};

// A complete (non-streamed) chat completion.
Result<Response> OpenAIResponseFromJson(const Json& j);

class OpenAIProvider : public HttpProvider {
 public:
  OpenAIProvider(OpenAIOptions options, std::unique_ptr<HttpTransport> transport);
  std::string_view name() const override { return "openai"; }
  int64_t ContextWindow(const std::string&) const override { return context_window_; }

 private:
  std::string Body(const Request& request, const std::string& model) const override;
  std::string Endpoint(const std::string&) const override { return "/chat/completions"; }
  std::vector<std::string> Headers(const Request& request) const override;
  std::unique_ptr<StreamReader> Reader(TextDeduper* text) const override;
  Result<Response> WholeReply(const Json& j) const override { return OpenAIResponseFromJson(j); }
  std::string_view StreamEnd() const override { return "[DONE]"; }

  const int64_t context_window_;
};

}  // namespace mates::llm
