// Google's Gemini API (`--provider gemini`, DESIGN §28) over libcurl:
// POST {base}/v1beta/models/M:streamGenerateContent?alt=sse (or
// :generateContent), the key in x-goog-api-key, the agent's id in
// x-mates-agent (Gemini's body has no place for it; mock-llm tells agents
// apart by it). Function calls keep their thoughtSignature and send it
// back, as Gemini 3 requires.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/http.h"
#include "llm/http_provider.h"
#include "llm/provider.h"
#include "llm/sse.h"
#include "llm/tool_calls.h"

namespace mates::llm {

struct GeminiOptions : HttpProviderOptions {
  GeminiOptions() {
    base_url = "https://generativelanguage.googleapis.com";  // the client adds /v1beta/models/…
    model = "gemini-2.5-flash";
  }
  int64_t context_window = 1048576;
};

// The request body (public for tests): the system prompt as
// systemInstruction, a user turn's tool results as functionResponse parts
// (named after their calls) before its text, an assistant turn as a model
// turn of text and functionCall parts, tools as function declarations with
// their JSON Schemas.
Json GeminiRequestBody(const Request& request);

// Assembles streamed GenerateContentResponses (one per SSE event): text
// forwarded as it comes (thoughts are not), function calls whole, the end
// at a finishReason (or a blocked prompt). An `error` object is a retryable
// failure (error()), and so is a MALFORMED_FUNCTION_CALL; a chunk that is
// not JSON or whose fields have the wrong type makes the reply malformed.
class GeminiStreamAccumulator : public StreamReader {
 public:
  explicit GeminiStreamAccumulator(TextDeduper* text) : text_(text) {}
  void OnEvent(const SseEvent& event) override;
  bool complete() const override { return !finish_.empty(); }
  const Status& error() const override { return error_; }
  const Status& malformed() const override { return malformed_; }
  Result<Response> Take() override;
  // One response (a chunk, or a whole reply).
  Status Apply(const Json& chunk);

 private:
  // One part of a candidate's content (`at` names it): text, or a call.
  Status ApplyPart(const Json& part, const std::string& at);
  TextDeduper* text_;
  std::string text_so_far_;
  std::vector<RawToolCall> calls_;
  std::vector<std::string> signatures_;  // per call
  std::string finish_;
  Usage usage_;
  std::string model_, id_;
  int chunks_ = 0;
  Status error_;
  Status malformed_;
};

// A whole (not streamed) GenerateContentResponse.
Result<Response> GeminiResponseFromJson(const Json& j);

class GeminiProvider : public HttpProvider {
 public:
  GeminiProvider(GeminiOptions options, std::unique_ptr<HttpTransport> transport);
  std::string_view name() const override { return "gemini"; }
  int64_t ContextWindow(const std::string&) const override { return context_window_; }

 private:
  std::string Body(const Request& request, const std::string& model) const override;
  std::string Endpoint(const std::string& model) const override;
  std::vector<std::string> Headers(const Request& request) const override;
  std::unique_ptr<StreamReader> Reader(TextDeduper* text) const override;
  Result<Response> WholeReply(const Json& j) const override { return GeminiResponseFromJson(j); }
  std::string_view StreamEnd() const override { return "a finishReason"; }

  const int64_t context_window_;
};

}  // namespace mates::llm
