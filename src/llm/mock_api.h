// The APIs `mates mock-llm` serves (DESIGN §28): Anthropic Messages,
// OpenAI Chat Completions, OpenAI Responses and Gemini. The server
// (mock_server.cc) does what is the same for all — faults, the scenario,
// the record, the log; a MockApi says what differs: where a request names
// its agent and its newest user turn, how it is checked, and how a reply
// is written whole, as a stream of events, or as an error.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "llm/scenario.h"
#include "llm/types.h"

namespace mates::llm {

class PromptCache;

// One request as its route read it.
struct MockCall {
  Json body;
  std::string model;     // the body's, or the URL's (Gemini)
  bool stream = false;   // the body's flag, or the URL's method (Gemini)
  bool sse = true;       // Gemini without ?alt=sse streams one JSON array
  std::string agent_id;  // "name@team", "" when the client names none
};

class MockApi {
 public:
  virtual ~MockApi() = default;
  // The agent's id in the body ("" when none).
  virtual std::string AgentId(const Json& body) const = 0;
  // As the real API checks a request: InvalidArgument with its wording.
  virtual Status Validate(const MockCall& call) const = 0;
  // A client's side call (Gemini CLI's routing: a request for JSON): the
  // scenario answers it without using up a `once` rule.
  virtual bool SideCall(const MockCall&) const { return false; }
  // The newest user turn's text and tool results, joined by newlines: what
  // a scenario's `when` is searched in.
  virtual std::string UserText(const Json& body) const = 0;
  // The names of the tools the request offers (a Responses namespace's as
  // NAMESPACE__TOOL).
  virtual std::vector<std::string> OfferedTools(const Json& body) const = 0;
  // What the request costs, prompt caching as the API accounts it.
  virtual Usage Accounted(PromptCache& cache, const MockCall& call) const = 0;
  // An error body in the API's shape; `type` is Anthropic's word for it.
  virtual std::string Error(int status, const std::string& type, const std::string& message) const = 0;
  virtual std::string Whole(const ScenarioReply& reply, const MockCall& call, const Usage& usage) const = 0;
  // The stream, one string per event, framed as sent.
  virtual std::vector<std::string> Events(const ScenarioReply& reply, const MockCall& call, const Usage& usage,
                                          size_t text_chunk) const = 0;
  // What keeps a stalled stream open, and an error in the middle of one.
  virtual std::string Ping(const MockCall& call) const = 0;
  virtual std::string ErrorEvent(const MockCall& call, const std::string& message) const = 0;
  // A 404's body for a model the mock was not told to serve.
  virtual std::string UnknownModel(const std::string& model) const = 0;
  // The content type of a reply.
  virtual std::string ContentType(const MockCall& call) const {
    return call.stream && call.sse ? "text/event-stream" : "application/json";
  }
};

std::unique_ptr<MockApi> AnthropicMockApi();
std::unique_ptr<MockApi> ChatMockApi();
std::unique_ptr<MockApi> ResponsesMockApi();
std::unique_ptr<MockApi> GeminiMockApi();

// What the APIs share.
namespace mock {
// Pieces of at most `n` bytes that never split a UTF-8 sequence.
std::vector<std::string> SplitUtf8(const std::string& s, size_t n);
// obj[key], or null when obj is not an object or has no such member.
const Json& Field(const Json& obj, const char* key);
bool Flag(const Json& obj, const char* key);
// Anthropic's error type for an HTTP status.
std::string ErrorTypeFor(int status);
// Anthropic's error body.
std::string AnthropicError(const std::string& type, const std::string& message);
// OpenAI's error body (Chat Completions and Responses).
std::string OpenAIError(const std::string& type, const std::string& message);
// The parts of a turn gathered from its end, joined by newlines in their
// order.
std::string JoinOldestFirst(const std::vector<std::string>& newest_first);
// A scenario names a tool by its own name; a client that offers it under a
// prefix of its own (Claude Code's mcp__S__T, Gemini CLI's mcp_S_T,
// OpenCode's S_T) gets the call under that name: a tool_use whose name is
// not offered takes the one offered name that ends in _NAME.
void NameCallsAsOffered(const std::vector<std::string>& offered, ScenarioReply* reply);
// Tokens of the reply as the mock counts them (4 characters each).
int64_t OutputTokens(const ScenarioReply& reply);
}  // namespace mock

}  // namespace mates::llm
