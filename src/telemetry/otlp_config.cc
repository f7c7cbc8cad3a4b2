// OtlpConfig: the OTEL_* variables (the SDK configuration specification's
// names and defaults) over the person's `telemetry:` section. A value that
// cannot be used is one warning and its default, never a failure: a team
// does not stop because its telemetry is misconfigured.
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/secrets.h"
#include "telemetry/otlp.h"

namespace mates::telemetry {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// %XX decoded (W3C baggage's octets, which OTEL_RESOURCE_ATTRIBUTES and
// OTEL_EXPORTER_OTLP_HEADERS use); nullopt for a broken escape.
std::optional<std::string> PercentDecoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      return std::nullopt;
    }
    out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
    i += 2;
  }
  return out;
}

// "k=v,k2=v2" → pairs; a broken entry is a warning and left out.
std::vector<std::pair<std::string, std::string>> Pairs(std::string_view list, const char* what,
                                                       std::vector<std::string>* warnings) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view entry = list.substr(at, comma - at);
    at = comma + 1;
    if (Trim(entry).empty()) continue;
    const size_t eq = entry.find('=');
    auto key = PercentDecoded(Trim(entry.substr(0, eq == std::string_view::npos ? 0 : eq)));
    auto value = eq == std::string_view::npos ? std::nullopt : PercentDecoded(Trim(entry.substr(eq + 1)));
    if (!key || key->empty() || !value) {
      // The entry itself is not repeated: a header's may hold a key.
      warnings->push_back(std::string(what) + ": an entry is not key=value (percent-encoded); it is left out");
      continue;
    }
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

// http:// or https:// and a host (a URL that is all slashes after its
// scheme would lose them to the trailing slash's trimming).
bool IsHttpUrl(const std::string& url) {
  const size_t after = url.rfind("http://", 0) == 0 ? 7 : url.rfind("https://", 0) == 0 ? 8 : 0;
  return after > 0 && url.size() > after && url[after] != '/';
}

bool IsToken(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr)) return false;
  }
  return true;
}

}  // namespace

OtlpConfig OtlpConfig::From(const std::function<const char*(const char*)>& get, const Json& section) {
  OtlpConfig c;
  auto& warn = c.warnings;
  const Json sec = section.is_object() ? section : Json::object();
  // A variable (set and not empty), else the section's key, else "".
  auto setting = [&](const char* var, const char* key) -> std::string {
    if (const char* v = get(var); v != nullptr && *v != '\0') return v;
    if (key != nullptr && sec.contains(key)) {
      const Json& v = sec[key];
      if (v.is_string()) return v.get<std::string>();
      if (v.is_number() || v.is_boolean()) return v.dump();
      warn.push_back(std::string("telemetry.") + key + " is not a string or a number; it is ignored");
    }
    return "";
  };
  // A positive number of milliseconds as seconds; `fallback` otherwise.
  auto millis = [&](const char* var, const char* key, double fallback) {
    const std::string v = setting(var, key);
    if (v.empty()) return fallback;
    char* end = nullptr;
    const double ms = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(ms > 0) || ms > 86'400'000) {
      warn.push_back(std::string(var) + "=" + v + " is not a number of milliseconds; " +
                     std::to_string(static_cast<int64_t>(fallback * 1000)) + " is used");
      return fallback;
    }
    return ms / 1000;
  };
  auto count = [&](const char* var, size_t fallback, size_t most) {
    const std::string v = setting(var, nullptr);
    if (v.empty()) return fallback;
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n <= 0 || static_cast<unsigned long long>(n) > most) {
      warn.push_back(std::string(var) + "=" + v + " is not a whole number from 1 to " + std::to_string(most) + "; " +
                     std::to_string(fallback) + " is used");
      return fallback;
    }
    return static_cast<size_t>(n);
  };

  const std::string disabled = Lower(setting("OTEL_SDK_DISABLED", "disabled"));
  if (!disabled.empty() && disabled != "true" && disabled != "false") {
    warn.push_back("OTEL_SDK_DISABLED=" + disabled + " is neither true nor false; telemetry stays on");
  }
  if (disabled == "true") return c;

  // Where: the generic endpoint with /v1/<signal>, or a signal's own.
  std::string base = setting("OTEL_EXPORTER_OTLP_ENDPOINT", "endpoint");
  if (!base.empty() && !IsHttpUrl(base)) {
    warn.push_back("OTEL_EXPORTER_OTLP_ENDPOINT=" + base + " is not an http:// or https:// URL; nothing is exported");
    base.clear();
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  struct Signal {
    const char* endpoint_var;
    const char* exporter_var;
    const char* path;
    std::string* url;
  };
  for (const Signal& s : {Signal{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "/v1/traces", &c.traces_url},
                          Signal{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_METRICS_EXPORTER", "/v1/metrics", &c.metrics_url},
                          Signal{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_LOGS_EXPORTER", "/v1/logs", &c.logs_url}}) {
    std::string own = setting(s.endpoint_var, nullptr);
    if (!own.empty() && !IsHttpUrl(own)) {
      warn.push_back(std::string(s.endpoint_var) + "=" + own + " is not an http:// or https:// URL; it is ignored");
      own.clear();
    }
    *s.url = !own.empty() ? own : base.empty() ? "" : base + s.path;
    const std::string exporter = Lower(setting(s.exporter_var, nullptr));
    if (exporter == "none") {
      s.url->clear();
    } else if (!exporter.empty() && exporter != "otlp") {
      warn.push_back(std::string(s.exporter_var) + "=" + exporter + ": mates exports by OTLP only (otlp, none); otlp is used");
    }
  }

  const std::string protocol = setting("OTEL_EXPORTER_OTLP_PROTOCOL", "protocol");
  if (protocol == "http/json") {
    c.json = true;
  } else if (!protocol.empty() && protocol != "http/protobuf") {
    warn.push_back("OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol + ": mates speaks http/protobuf and http/json; http/protobuf is used");
  }

  // A list: the variable's "k=v,…", else the section's map of strings.
  auto pairs = [&](const char* var, const char* key) {
    std::vector<std::pair<std::string, std::string>> out;
    if (const char* v = get(var); v != nullptr && *v != '\0') return Pairs(v, var, &warn);
    if (sec.contains(key) && sec[key].is_object()) {
      for (const auto& [k, val] : sec[key].items()) {
        if (val.is_string()) out.emplace_back(k, val.get<std::string>());
      }
    }
    return out;
  };
  for (auto& [k, v] : pairs("OTEL_EXPORTER_OTLP_HEADERS", "headers")) {
    if (!IsToken(k) || v.find_first_of("\r\n") != std::string::npos) {
      warn.push_back("OTEL_EXPORTER_OTLP_HEADERS: '" + k.substr(0, 64) + "' is not a header one may send; it is left out");
      continue;
    }
    Secrets::Add("OTEL_EXPORTER_OTLP_HEADERS", v);  // a key, often: never in a log
    c.headers.push_back(k + ": " + v);
  }

  // Resource: service.name first (OTEL_SERVICE_NAME wins over the list's).
  auto resource = pairs("OTEL_RESOURCE_ATTRIBUTES", "resource_attributes");
  std::string service = setting("OTEL_SERVICE_NAME", "service_name");
  for (const auto& [k, v] : resource) {
    if (k == "service.name" && service.empty()) service = v;
  }
  c.resource.emplace_back("service.name", service.empty() ? "mates" : service);
  for (auto& [k, v] : resource) {
    if (k != "service.name") c.resource.emplace_back(std::move(k), std::move(v));
  }

  const std::string sampler = Lower(setting("OTEL_TRACES_SAMPLER", "sampler"));
  const std::string arg = setting("OTEL_TRACES_SAMPLER_ARG", "sampler_arg");
  if (sampler.empty() || sampler == "parentbased_always_on" || sampler == "always_on") {
    c.sampler.kind = Sampler::Kind::kAlwaysOn;
    c.sampler.parent_based = sampler != "always_on";
  } else if (sampler == "always_off" || sampler == "parentbased_always_off") {
    c.sampler.kind = Sampler::Kind::kAlwaysOff;
    c.sampler.parent_based = sampler != "always_off";
  } else if (sampler == "traceidratio" || sampler == "parentbased_traceidratio") {
    c.sampler.kind = Sampler::Kind::kRatio;
    c.sampler.parent_based = sampler != "traceidratio";
    c.sampler.ratio = 1;
    if (!arg.empty()) {
      char* end = nullptr;
      const double r = std::strtod(arg.c_str(), &end);
      if (end == arg.c_str() || *end != '\0' || !(r >= 0 && r <= 1)) {
        warn.push_back("OTEL_TRACES_SAMPLER_ARG=" + arg + " is not a ratio from 0 to 1; 1 is used");
      } else {
        c.sampler.ratio = r;
      }
    }
  } else {
    warn.push_back("OTEL_TRACES_SAMPLER=" + sampler +
                   " is not one mates knows (always_on, always_off, traceidratio and their parentbased_ forms); "
                   "parentbased_always_on is used");
  }

  c.metric_interval_s = millis("OTEL_METRIC_EXPORT_INTERVAL", "metric_export_interval_ms", 60);
  c.schedule_delay_s = millis("OTEL_BSP_SCHEDULE_DELAY", "schedule_delay_ms", 5);
  c.timeout_s = millis("OTEL_EXPORTER_OTLP_TIMEOUT", nullptr, 10);
  c.max_queue = count("OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1 << 20);
  c.max_batch = std::min(count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1 << 16), c.max_queue);
  c.max_attribute_bytes = count("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", 4096, 1 << 20);
  c.max_attributes = count("OTEL_ATTRIBUTE_COUNT_LIMIT", 128, 1 << 12);

  const std::string opt_in = setting("OTEL_SEMCONV_STABILITY_OPT_IN", nullptr);
  c.gen_ai_latest = ("," + opt_in + ",").find(",gen_ai_latest_experimental,") != std::string::npos;
  return c;
}

OtlpConfig OtlpConfig::FromEnvironment(const Json& section) {
  return From([](const char* name) { return std::getenv(name); }, section);
}

std::vector<std::string> OtlpConfig::ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& extra) const {
  std::vector<std::string> env;
  if (!enabled()) return env;
  // Each signal's own endpoint: the team's decision of where each goes.
  if (!traces_url.empty()) env.push_back("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + traces_url);
  if (!metrics_url.empty()) env.push_back("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + metrics_url);
  if (!logs_url.empty()) env.push_back("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=" + logs_url);
  env.push_back(std::string("OTEL_EXPORTER_OTLP_PROTOCOL=") + (json ? "http/json" : "http/protobuf"));
  env.push_back(std::string("OTEL_TRACES_EXPORTER=") + (traces_url.empty() ? "none" : "otlp"));
  env.push_back(std::string("OTEL_METRICS_EXPORTER=") + (metrics_url.empty() ? "none" : "otlp"));
  env.push_back(std::string("OTEL_LOGS_EXPORTER=") + (logs_url.empty() ? "none" : "otlp"));
  if (!headers.empty()) {
    std::string h;
    for (const auto& line : headers) {
      const size_t colon = line.find(':');
      if (!h.empty()) h += ',';
      h += line.substr(0, colon) + "=" + Trim(line.substr(colon + 1));
    }
    env.push_back("OTEL_EXPORTER_OTLP_HEADERS=" + h);
  }
  // The resource, with the CLI's own service name (its SDK's default) kept.
  std::string attrs;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!attrs.empty()) attrs += ',';
    for (const std::string* part : {&k, &v}) {
      for (char ch : *part) {
        if (ch == ',' || ch == '=' || ch == '%' || ch == ' ' || static_cast<unsigned char>(ch) < 0x20) {
          char buf[4];
          std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(ch));
          attrs += buf;
        } else {
          attrs += ch;
        }
      }
      if (part == &k) attrs += '=';
    }
  };
  for (const auto& [k, v] : resource) {
    if (k != "service.name") add(k, v);
  }
  for (const auto& [k, v] : extra) add(k, v);
  if (!attrs.empty()) env.push_back("OTEL_RESOURCE_ATTRIBUTES=" + attrs);
  if (gen_ai_latest) env.push_back("OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental");
  // The team's cadence: metrics, and spans and log records in batches
  // (OTEL_LOGS_EXPORT_INTERVAL is Claude Code's name for the latter).
  const auto ms = [](double s) { return std::to_string(static_cast<int64_t>(s * 1000)); };
  env.push_back("OTEL_METRIC_EXPORT_INTERVAL=" + ms(metric_interval_s));
  env.push_back("OTEL_BSP_SCHEDULE_DELAY=" + ms(schedule_delay_s));
  env.push_back("OTEL_BLRP_SCHEDULE_DELAY=" + ms(schedule_delay_s));
  env.push_back("OTEL_LOGS_EXPORT_INTERVAL=" + ms(schedule_delay_s));
  return env;
}

}  // namespace mates::telemetry
