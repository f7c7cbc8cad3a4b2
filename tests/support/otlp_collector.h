// A stand-in OpenTelemetry collector for the tests (DESIGN §29):
// tests/otlp/receiver.mjs, which decodes every request with the official
// opentelemetry-proto definitions and keeps what it read, one JSON object a
// request. Skipped (SKIP_WITHOUT_COLLECTOR) without node or the definitions
// (scripts/setup-otlp).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "core/clock.h"
#include "support/test_util.h"

namespace mates::testing {

class Collector {
 public:
  static std::string Unavailable() {
    if (Run({"node", "--version"}).exit_code != 0) return "node is not installed";
    if (!fs::exists(Modules() / "node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js")) {
      return "the official OTLP definitions are not installed (scripts/setup-otlp)";
    }
    return "";
  }

  Collector(const fs::path& dir, std::vector<std::string> extra = {}) : out_(dir / "received.jsonl") {
    SubprocessOptions o;
    o.argv = {"node", (SourceDir() / "tests/otlp/receiver.mjs").string(), "--modules", Modules().string(),
              "--out", out_.string()};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.interactive = true;
    o.stderr_path = (dir / "receiver.err").string();
    auto p = Subprocess::Start(o);
    if (!p.ok()) throw std::runtime_error(p.status().message());
    process_.emplace(std::move(*p));
    auto line = process_->ReadLine(DeadlineIn(30));
    if (!line.ok() || line->rfind("listening ", 0) != 0) throw std::runtime_error("the collector did not start");
    url_ = "http://127.0.0.1:" + line->substr(10);
  }
  ~Collector() {
    process_->Signal(SIGTERM);
    process_->Wait();
  }

  const std::string& url() const { return url_; }
  // What it took: one JSON object per request, in order.
  std::vector<Json> Received() const {
    std::vector<Json> out;
    auto text = ReadFile(out_);
    if (!text.ok()) return out;
    size_t at = 0;
    while (at < text->size()) {
      size_t end = text->find('\n', at);
      if (end == std::string::npos) end = text->size();
      auto j = ParseJson(std::string_view(*text).substr(at, end - at));
      if (j.ok()) out.push_back(std::move(*j));
      at = end + 1;
    }
    return out;
  }

 private:
  static fs::path Modules() { return SourceDir() / ".cache/otlp"; }
  fs::path out_;
  std::string url_;
  std::optional<Subprocess> process_;
};


// The attribute `key` of a decoded list ({key, value: {stringValue|intValue|…}}).
inline Json Attr(const Json& attrs, const std::string& key) {
  if (attrs.is_array()) {
    for (const auto& a : attrs) {
      if (a.value("key", "") == key) return a["value"];
    }
  }
  return Json();
}

// The requests of one signal ("traces", "metrics", "logs").
inline std::vector<Json> Of(const std::vector<Json>& received, const std::string& signal) {
  std::vector<Json> out;
  for (const auto& r : received) {
    if (r.value("signal", "") == signal) out.push_back(r);
  }
  return out;
}

// The resources of every request received: what each exporter said it is.
inline std::vector<Json> Resources(const std::vector<Json>& received) {
  std::vector<Json> out;
  for (const auto& r : received) {
    if (!r.contains("request")) continue;
    for (const char* list : {"resourceSpans", "resourceMetrics", "resourceLogs"}) {
      if (!r["request"].contains(list)) continue;
      for (const auto& x : r["request"][list]) out.push_back(x["resource"]["attributes"]);
    }
  }
  return out;
}

}  // namespace mates::testing

#define SKIP_WITHOUT_COLLECTOR()                                                       \
  if (std::string why = ::mates::testing::Collector::Unavailable(); !why.empty()) {   \
    GTEST_SKIP() << "\n*** SKIPPED LOUDLY: " << why << " ***";                        \
  }
