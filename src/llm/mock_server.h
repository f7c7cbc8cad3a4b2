// MockServer: `mates mock-llm` (DESIGN §6, §7, §28). Serves a Scenario on
// 127.0.0.1 as POST /v1/messages (Anthropic), /v1/chat/completions (OpenAI
// Chat), /v1/responses (OpenAI Responses) and
// /v1beta/models/M:generateContent | :streamGenerateContent (Gemini),
// streaming or not; tells agents apart by what each API's body carries
// (metadata.user_id, user, safety_identifier) or the x-mates-agent header;
// validates requests as the real APIs do (400 in the API's error shape
// otherwise), refuses models it was not told to serve (404), injects
// faults, records requests. The APIs are in mock_api*.cc; cpp-httplib
// stays in the .cc.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "llm/scenario.h"

namespace mates::llm {

struct FaultSpec {
  // kStall: after `after` events only pings follow (every 0.2 s) until the
  // client goes away: what a request timeout is for.
  enum class Kind { kStatus, kCutStream, kErrorEvent, kStall };
  Kind kind = Kind::kStatus;
  int code = 0;      // kStatus: the HTTP status
  int after = 0;     // kCutStream / kErrorEvent / kStall: SSE events sent first
  int first = 0;     // applies to requests 1..first (default 1 when every = 0)
  int every = 0;     // applies to every Nth request
  double retry_after = -1;  // kStatus: a retry-after header, seconds
  std::string text;  // as given, for logs
};

// status=CODE[:first=N|:every=N][:retry_after=S] | cut_stream_after=N[:first=K|:every=K]
// | stall_after=N[:first=K|:every=K]
// | error_event_after=N[:first=K|:every=K]. InvalidArgument saying what is wrong.
Result<FaultSpec> ParseFaultSpec(std::string_view spec);

struct MockServerOptions {
  int port = 0;  // 0 = any free port
  std::vector<FaultSpec> faults;
  std::string record_path;  // JSONL of every request ("" = none)
  bool log_requests = true;  // one line per request on stderr
  size_t text_chunk = 8;     // characters per streamed text delta
  std::vector<std::string> models;  // globs of the models served (none = any)
};

class MockServer {
 public:
  // Binds 127.0.0.1 and serves on a thread of its own.
  static Result<std::unique_ptr<MockServer>> Start(std::shared_ptr<Scenario> scenario,
                                                   MockServerOptions options);
  ~MockServer();
  MockServer(const MockServer&) = delete;
  MockServer& operator=(const MockServer&) = delete;

  int port() const;
  std::string url() const;  // http://127.0.0.1:PORT
  void Stop();
  // Requests served so far (faulted and refused ones included).
  int requests() const;

  class Impl;

 private:
  explicit MockServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mates::llm
