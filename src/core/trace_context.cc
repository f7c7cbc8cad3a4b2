#include "core/trace_context.h"

#include <utility>

namespace mates {
namespace {

thread_local TraceContext current;

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool AllZero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

int HexDigit(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

}  // namespace

std::string TraceContext::Traceparent() const {
  if (!valid()) return "";
  return "00-" + trace_id + "-" + span_id + (sampled ? "-01" : "-00");
}

std::optional<TraceContext> ParseTraceparent(std::string_view tp, std::string_view state) {
  // version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2 = 55.
  if (tp.size() < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-') return std::nullopt;
  std::string_view version = tp.substr(0, 2), trace = tp.substr(3, 32), span = tp.substr(36, 16),
                   flags = tp.substr(53, 2);
  if (!IsLowerHex(version) || version == "ff" || !IsLowerHex(trace) || !IsLowerHex(span) || !IsLowerHex(flags)) {
    return std::nullopt;
  }
  // Version 00 is exactly 55 characters; a later one may add "-…" fields.
  if (tp.size() > 55 && (version == "00" || tp[55] != '-')) return std::nullopt;
  if (AllZero(trace) || AllZero(span)) return std::nullopt;
  TraceContext c;
  c.trace_id = std::string(trace);
  c.span_id = std::string(span);
  c.sampled = (HexDigit(flags[1]) & 1) != 0;
  bool printable = state.size() <= 512;
  for (char ch : state) printable = printable && ch >= 0x20 && ch <= 0x7e;
  if (printable) c.state = std::string(state);
  return c;
}

const TraceContext& CurrentTrace() { return current; }

ScopedTrace::ScopedTrace(TraceContext context) : saved_(std::exchange(current, std::move(context))) {}

ScopedTrace::~ScopedTrace() { current = std::move(saved_); }

void AddTraceEnvironment(std::vector<std::string>* env) {
  if (!current.valid()) return;
  env->push_back("TRACEPARENT=" + current.Traceparent());
  if (!current.state.empty()) env->push_back("TRACESTATE=" + current.state);
}

}  // namespace mates
