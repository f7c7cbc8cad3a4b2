// What telemetry reads from outside (DESIGN §29), for any bytes: a
// traceparent (a message's field, a process's TRACEPARENT) parses only to
// a valid context that prints back as it came; the OTEL_* variables give a
// configuration whose URLs are http(s), whose headers carry no line break
// and whose numbers are in range, with a warning for what was dropped; and
// what is encoded from any attribute text is bounded and well-formed.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/trace_context.h"
#include "telemetry/otlp.h"

namespace {

// The input cut at NUL bytes: the fields.
std::vector<std::string> Fields(const uint8_t* data, size_t size) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      out.emplace_back();
    } else {
      out.back() += static_cast<char>(data[i]);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mates;
  const std::vector<std::string> f = Fields(data, size);
  auto field = [&](size_t i) -> const std::string& {
    static const std::string empty;
    return i < f.size() ? f[i] : empty;
  };

  if (auto c = ParseTraceparent(field(0), field(1))) {
    if (!c->valid() || c->state.size() > 512) std::abort();
    // A version 00 value prints back as it came, but for the flags, of
    // which only `sampled` is kept (and the others are sent as 0).
    if (field(0).size() == 55 && field(0).rfind("00-", 0) == 0 &&
        c->Traceparent().substr(0, 53) != field(0).substr(0, 53)) {
      std::abort();
    }
  }

  static const char* const kVars[] = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                                      "OTEL_RESOURCE_ATTRIBUTES",    "OTEL_TRACES_SAMPLER",
                                      "OTEL_TRACES_SAMPLER_ARG",     "OTEL_METRIC_EXPORT_INTERVAL",
                                      "OTEL_BSP_MAX_QUEUE_SIZE",     "OTEL_EXPORTER_OTLP_PROTOCOL"};
  std::map<std::string, std::string> vars;
  for (size_t i = 0; i < std::size(kVars); ++i) vars[kVars[i]] = field(2 + i);
  auto c = telemetry::OtlpConfig::From(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() || it->second.empty() ? nullptr : it->second.c_str();
      },
      Json::object());
  for (const std::string* url : {&c.traces_url, &c.metrics_url, &c.logs_url}) {
    if (!url->empty() && url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) std::abort();
  }
  for (const auto& h : c.headers) {
    if (h.find_first_of("\r\n") != std::string::npos) std::abort();
  }
  if (c.max_queue == 0 || c.max_batch == 0 || c.max_batch > c.max_queue || !(c.metric_interval_s > 0)) std::abort();
  if (c.sampler.ratio < 0 || c.sampler.ratio > 1) std::abort();
  if (c.resource.empty() || c.resource.front().first != "service.name") std::abort();

  // Any text as a span's name and attribute, cut to its bound, encoded.
  std::vector<telemetry::SpanRecord> spans;
  telemetry::Tracer tracer(c.sampler, [&](telemetry::SpanRecord r) { spans.push_back(std::move(r)); }, 256, 8);
  {
    telemetry::Span s = tracer.Start(field(10), telemetry::SpanKind::kInternal, {});
    s.Set(field(11), field(12));
    s.Set("list", std::vector<std::string>{field(12), field(13)});
  }
  for (const auto& s : spans) {
    for (const auto& a : s.attributes) {
      if (const auto* v = std::get_if<std::string>(&a.value); v != nullptr && v->size() > 256 + 3) std::abort();
    }
  }
  for (bool json : {false, true}) {
    const std::string body = telemetry::EncodeSpans(spans, c, json);
    if (json && !nlohmann::json::accept(body)) std::abort();
  }
  return 0;
}
