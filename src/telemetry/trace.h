// Spans after OpenTelemetry's model (DESIGN §29): a Tracer starts them, in
// the trace of the host's session, and hands each one that ends to its
// sink (the OTLP exporter, otlp.h). A span not sampled is never recorded,
// but its context still travels (flags 00), so that what it starts agrees.
//
// mates keeps no OpenTelemetry SDK: Debian has none for C++, and what a
// host needs — ids, a parent, attributes, links, a status, a sampler — is
// this file; the wire format is otlp.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "core/trace_context.h"

namespace mates::telemetry {

using AttributeValue = std::variant<std::string, int64_t, double, bool, std::vector<std::string>>;
struct Attribute {
  std::string key;
  AttributeValue value;
};

struct SpanLink {
  TraceContext context;
  std::vector<Attribute> attributes;
};

enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };

// A span that ended, as it is exported.
struct SpanRecord {
  TraceContext context;
  std::string parent_span_id;  // "" for a root
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  int64_t start_ns = 0;  // Unix time
  int64_t end_ns = 0;
  std::vector<Attribute> attributes;
  std::vector<SpanLink> links;
  bool error = false;
  std::string status_message;  // with error
};

// A log line, in the span it was written in (if any).
struct LogRecord {
  int64_t time_ns = 0;
  int severity = 9;  // OTLP's SeverityNumber: 9 INFO, 13 WARN, 17 ERROR
  std::string severity_text;
  std::string body;
  TraceContext context;
  std::vector<Attribute> attributes;
};

// Which traces are recorded (OTEL_TRACES_SAMPLER and its argument).
struct Sampler {
  enum class Kind { kAlwaysOn, kAlwaysOff, kRatio };
  Kind kind = Kind::kAlwaysOn;
  double ratio = 1;
  bool parent_based = true;  // a span with a parent follows its parent's decision
  // A root's decision for `trace_id`: by its low 56 bits, as the ratio
  // sampler of the specification does, so every host decides alike.
  bool SampleRoot(std::string_view trace_id) const;
};

int64_t UnixNanos();
// error.type of a failed call, as the conventions want it: a
// low-cardinality word for what went wrong ("timeout", "refused", …).
std::string ErrorTypeOf(StatusCode code);

class Tracer;

// A span being recorded; ends (and is handed on) at End() or when
// destroyed. Move-only. A default-made Span records nothing.
class Span {
 public:
  Span() = default;
  Span(Span&& o) noexcept;
  Span& operator=(Span&& o) noexcept;
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  ~Span();

  const TraceContext& context() const { return record_.context; }
  bool recording() const { return tracer_ != nullptr && record_.context.sampled; }
  void Set(std::string key, AttributeValue value);
  void Link(const TraceContext& to, std::vector<Attribute> attributes = {});
  // error.type (the conventions' low-cardinality word) and a message.
  void Fail(std::string type, std::string message);
  void End(int64_t end_ns = 0);

 private:
  friend class Tracer;
  Tracer* tracer_ = nullptr;
  SpanRecord record_;
};

class Tracer {
 public:
  using Sink = std::function<void(SpanRecord)>;
  // `sink` is called from whichever thread ends a span; it must not block.
  // `gen_ai_latest`: the GenAI conventions' latest names only
  // (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental).
  Tracer(Sampler sampler, Sink sink, size_t max_attribute_bytes = 4096, size_t max_attributes = 128,
         bool gen_ai_latest = false);

  // A span under `parent` (a new trace when `parent` is not valid).
  Span Start(std::string name, SpanKind kind, const TraceContext& parent, int64_t start_ns = 0);
  // A span that already happened (a task from its claim, a message from
  // its send), recorded at once; its context (invalid when not sampled).
  TraceContext Record(SpanRecord record, const TraceContext& parent);
  bool gen_ai_latest() const { return gen_ai_latest_; }

  // The session every agent's spans are under (DESIGN §29): its root, set
  // once by the host.
  void SetSession(const TraceContext& root) { session_ = root; }
  const TraceContext& session() const { return session_; }

 private:
  friend class Span;
  TraceContext ChildOf(const TraceContext& parent) const;
  void Finish(SpanRecord record);

  Sampler sampler_;
  Sink sink_;
  size_t max_attribute_bytes_;
  size_t max_attributes_;
  bool gen_ai_latest_;
  TraceContext session_;
};

}  // namespace mates::telemetry
