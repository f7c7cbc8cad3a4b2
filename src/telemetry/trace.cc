#include "telemetry/trace.h"

#include <chrono>
#include <utility>

#include "core/ids.h"
#include "core/text.h"

namespace mates::telemetry {

std::string ErrorTypeOf(StatusCode code) {
  switch (code) {
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kFailedPrecondition: return "refused";
    case StatusCode::kInvalidArgument: return "invalid_request";
    case StatusCode::kCorrupt: return "malformed_reply";
    default: return "_OTHER";
  }
}

int64_t UnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Sampler::SampleRoot(std::string_view trace_id) const {
  switch (kind) {
    case Kind::kAlwaysOn: return true;
    case Kind::kAlwaysOff: return false;
    case Kind::kRatio: break;
  }
  if (ratio >= 1) return true;
  if (ratio <= 0 || trace_id.size() != 32) return false;
  // The trace id's last 14 hex digits (56 bits) against ratio · 2^56.
  const uint64_t low = std::stoull(std::string(trace_id.substr(18)), nullptr, 16);
  return static_cast<double>(low) < ratio * static_cast<double>(uint64_t{1} << 56);
}

Span::Span(Span&& o) noexcept : tracer_(std::exchange(o.tracer_, nullptr)), record_(std::move(o.record_)) {}

Span& Span::operator=(Span&& o) noexcept {
  if (this != &o) {
    End();
    tracer_ = std::exchange(o.tracer_, nullptr);
    record_ = std::move(o.record_);
  }
  return *this;
}

Span::~Span() { End(); }

void Span::Set(std::string key, AttributeValue value) {
  if (!recording()) return;
  for (auto& a : record_.attributes) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  record_.attributes.push_back({std::move(key), std::move(value)});
}

void Span::Link(const TraceContext& to, std::vector<Attribute> attributes) {
  if (!recording() || !to.valid()) return;
  constexpr size_t kMaxLinks = 128;  // OTEL_SPAN_LINK_COUNT_LIMIT's default
  if (record_.links.size() >= kMaxLinks) return;
  record_.links.push_back({to, std::move(attributes)});
}

void Span::Fail(std::string type, std::string message) {
  if (!recording()) return;
  record_.error = true;
  record_.status_message = std::move(message);
  Set("error.type", std::move(type));
}

void Span::End(int64_t end_ns) {
  Tracer* t = std::exchange(tracer_, nullptr);
  if (t == nullptr || !record_.context.sampled) return;
  record_.end_ns = end_ns != 0 ? end_ns : UnixNanos();
  t->Finish(std::move(record_));
}

Tracer::Tracer(Sampler sampler, Sink sink, size_t max_attribute_bytes, size_t max_attributes, bool gen_ai_latest)
    : sampler_(sampler), sink_(std::move(sink)), max_attribute_bytes_(max_attribute_bytes),
      max_attributes_(max_attributes), gen_ai_latest_(gen_ai_latest) {}

TraceContext Tracer::ChildOf(const TraceContext& parent) const {
  TraceContext c;
  c.span_id = RandomHex(16);
  if (parent.valid()) {
    c.trace_id = parent.trace_id;
    c.state = parent.state;
    c.sampled = sampler_.parent_based ? parent.sampled : sampler_.SampleRoot(c.trace_id);
  } else {
    c.trace_id = RandomHex(32);
    c.sampled = sampler_.SampleRoot(c.trace_id);
  }
  return c;
}

Span Tracer::Start(std::string name, SpanKind kind, const TraceContext& parent, int64_t start_ns) {
  Span s;
  s.tracer_ = this;
  s.record_.context = ChildOf(parent);
  if (parent.valid()) s.record_.parent_span_id = parent.span_id;
  s.record_.name = std::move(name);
  s.record_.kind = kind;
  s.record_.start_ns = start_ns != 0 ? start_ns : UnixNanos();
  return s;
}

TraceContext Tracer::Record(SpanRecord record, const TraceContext& parent) {
  const TraceContext c = ChildOf(parent);
  if (!c.sampled) return {};
  record.context = c;
  record.parent_span_id = parent.valid() ? parent.span_id : "";
  Finish(std::move(record));
  return c;
}

void Tracer::Finish(SpanRecord record) {
  // OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT and OTEL_ATTRIBUTE_COUNT_LIMIT: a
  // span is a record of what happened, not a copy of it.
  if (record.attributes.size() > max_attributes_) record.attributes.resize(max_attributes_);
  for (auto& a : record.attributes) {
    if (auto* s = std::get_if<std::string>(&a.value); s != nullptr && s->size() > max_attribute_bytes_) {
      *s = CutUtf8(*s, max_attribute_bytes_);
    }
    if (auto* list = std::get_if<std::vector<std::string>>(&a.value)) {
      for (auto& s : *list) {
        if (s.size() > max_attribute_bytes_) s = CutUtf8(s, max_attribute_bytes_);
      }
    }
  }
  if (record.name.size() > max_attribute_bytes_) record.name = CutUtf8(record.name, max_attribute_bytes_);
  if (record.status_message.size() > max_attribute_bytes_) {
    record.status_message = CutUtf8(record.status_message, max_attribute_bytes_);
  }
  sink_(std::move(record));
}

}  // namespace mates::telemetry
