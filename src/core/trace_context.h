// W3C trace context (DESIGN §29): the span a thread works in, so that what
// it starts — a tool's process, a hook, an MCP request, a message — carries
// `traceparent` without every layer passing it on. The context is the
// thread's own (as OpenTelemetry keeps it); a ScopedTrace sets it for a
// block and puts back what was there.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mates {

struct TraceContext {
  std::string trace_id;  // 32 lower-case hex digits, not all zero
  std::string span_id;   // 16 lower-case hex digits, not all zero
  bool sampled = false;
  std::string state;     // tracestate, passed on as it came ("" = none)

  bool valid() const { return trace_id.size() == 32 && span_id.size() == 16; }
  // "00-<trace>-<span>-<flags>"; "" when not valid.
  std::string Traceparent() const;
};

// A `traceparent` header's value, version 00 (or a later version's first
// four fields, as the recommendation says); nullopt for anything else, an
// all-zero id included. `state` is kept if it is at most 512 bytes of
// printable ASCII (tracestate's limit), dropped otherwise.
std::optional<TraceContext> ParseTraceparent(std::string_view traceparent, std::string_view state = "");

// The calling thread's current span; an invalid context when none.
const TraceContext& CurrentTrace();

// Makes `context` the thread's current span until destroyed.
class ScopedTrace {
 public:
  explicit ScopedTrace(TraceContext context);
  ~ScopedTrace();
  ScopedTrace(const ScopedTrace&) = delete;
  ScopedTrace& operator=(const ScopedTrace&) = delete;

 private:
  TraceContext saved_;
};

// TRACEPARENT (and TRACESTATE) for a process started now, from the current
// span, appended to `env` ("KEY=value"); nothing when there is none.
void AddTraceEnvironment(std::vector<std::string>* env);

}  // namespace mates
