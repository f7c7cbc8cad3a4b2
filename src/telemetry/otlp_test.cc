// OtlpConfig (the OTEL_* variables, malformed ones included), W3C trace
// context and the Tracer's rules: parents, sampling, bounds (DESIGN §29).
// What goes on the wire is checked against the official definitions in
// tests/telemetry_test.cc.
#include "telemetry/otlp.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <utility>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/secrets.h"
#include "core/trace_context.h"

namespace mates::telemetry {
namespace {

OtlpConfig Configured(const std::map<std::string, std::string>& vars, const Json& section = Json::object()) {
  return OtlpConfig::From(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      section);
}

TEST(OtlpConfigTest, OffUnlessAnEndpointIsNamed) {
  EXPECT_FALSE(Configured({}).enabled());
  EXPECT_TRUE(Configured({}).warnings.empty());
  EXPECT_FALSE(Configured({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SDK_DISABLED", "true"}}).enabled());
}

TEST(OtlpConfigTest, TheGenericEndpointGetsEachSignalsPathAndAnOwnOneIsUsedAsItIs) {
  auto c = Configured({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"},
                       {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "https://logs.example/ingest"},
                       {"OTEL_METRICS_EXPORTER", "none"}});
  EXPECT_EQ(c.traces_url, "http://collector:4318/v1/traces");
  EXPECT_EQ(c.metrics_url, "");
  EXPECT_EQ(c.logs_url, "https://logs.example/ingest");
  EXPECT_FALSE(c.json);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(c.resource.front(), (std::pair<std::string, std::string>{"service.name", "mates"}));
}

TEST(OtlpConfigTest, HeadersAndResourceAttributesArePercentDecodedAndTheServiceNameWins) {
  auto c = Configured({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                       {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                       {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20abc,x-team=blue"},
                       {"OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,deployment.environment=prod%2Ceu"},
                       {"OTEL_SERVICE_NAME", "mates-ci"}});
  EXPECT_TRUE(c.json);
  EXPECT_EQ(c.headers, (std::vector<std::string>{"Authorization: Bearer abc", "x-team: blue"}));
  ASSERT_EQ(c.resource.size(), 2u);
  EXPECT_EQ(c.resource[0].second, "mates-ci");
  EXPECT_EQ(c.resource[1], (std::pair<std::string, std::string>{"deployment.environment", "prod,eu"}));
  EXPECT_TRUE(c.warnings.empty());
}

TEST(OtlpConfigTest, EachMalformedValueIsOneWarningAndItsDefault) {
  auto c = Configured({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                       {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                       {"OTEL_EXPORTER_OTLP_HEADERS", "novalue,ok=1,bad%zz=2,sp ace=3"},
                       {"OTEL_TRACES_SAMPLER", "sometimes"},
                       {"OTEL_METRIC_EXPORT_INTERVAL", "soon"},
                       {"OTEL_BSP_SCHEDULE_DELAY", "-5"},
                       {"OTEL_BSP_MAX_QUEUE_SIZE", "0"},
                       {"OTEL_SDK_DISABLED", "maybe"},
                       {"OTEL_TRACES_EXPORTER", "zipkin"}});
  EXPECT_TRUE(c.enabled());
  EXPECT_FALSE(c.json);
  EXPECT_EQ(c.headers, (std::vector<std::string>{"ok: 1"}));
  EXPECT_EQ(c.metric_interval_s, 60);
  EXPECT_EQ(c.schedule_delay_s, 5);
  EXPECT_EQ(c.max_queue, 2048u);
  EXPECT_EQ(c.sampler.kind, Sampler::Kind::kAlwaysOn);
  EXPECT_EQ(c.traces_url, "http://c:4318/v1/traces");
  // protocol, 2 headers broken + 1 not a header name, sampler, interval,
  // delay, queue, disabled, exporter: one each.
  EXPECT_EQ(c.warnings.size(), 10u) << ::testing::PrintToString(c.warnings);
  for (const auto& w : c.warnings) EXPECT_EQ(w.find("Bearer"), std::string::npos);
}

TEST(OtlpConfigTest, AnEndpointThatIsNotAnHttpUrlExportsNothingAndSaysSo) {
  // No scheme; and no host (telemetry_fuzz found "https:///" made into
  // "https:/v1/traces").
  for (const char* bad : {"collector:4317", "https:///", "http://"}) {
    auto c = Configured({{"OTEL_EXPORTER_OTLP_ENDPOINT", bad}});
    EXPECT_FALSE(c.enabled()) << bad;
    ASSERT_EQ(c.warnings.size(), 1u) << bad;
    EXPECT_NE(c.warnings[0].find("not an http:// or https:// URL"), std::string::npos);
  }
}

TEST(OtlpConfigTest, ThePersonsSectionIsUsedWhereNoVariableIsSet) {
  Json section = {{"endpoint", "http://from-config:4318"},
                  {"protocol", "http/json"},
                  {"service_name", "team-a"},
                  {"headers", {{"x-key", "k"}}},
                  {"metric_export_interval_ms", 250},
                  {"sampler", "traceidratio"},
                  {"sampler_arg", "0.25"}};
  auto c = Configured({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}}, section);
  EXPECT_EQ(c.traces_url, "http://from-config:4318/v1/traces");
  EXPECT_FALSE(c.json);  // the variable wins
  EXPECT_EQ(c.resource[0].second, "team-a");
  EXPECT_EQ(c.headers, (std::vector<std::string>{"x-key: k"}));
  EXPECT_DOUBLE_EQ(c.metric_interval_s, 0.25);
  EXPECT_EQ(c.sampler.kind, Sampler::Kind::kRatio);
  EXPECT_FALSE(c.sampler.parent_based);
  EXPECT_DOUBLE_EQ(c.sampler.ratio, 0.25);
}

TEST(OtlpConfigTest, APaneCliGetsTheTeamsEndpointsHeadersAndResource) {
  auto c = Configured({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"},
                       {"OTEL_EXPORTER_OTLP_HEADERS", "x-key=a%2Cb"},
                       {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci"},
                       {"OTEL_LOGS_EXPORTER", "none"}});
  auto env = c.ChildEnvironment({{"mates.team", "blue"}, {"gen_ai.agent.name", "front end"}});
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  EXPECT_TRUE(has("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://c:4318/v1/traces"));
  EXPECT_TRUE(has("OTEL_LOGS_EXPORTER=none"));
  EXPECT_TRUE(has("OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"));
  EXPECT_TRUE(has("OTEL_EXPORTER_OTLP_HEADERS=x-key=a,b")) << ::testing::PrintToString(env);
  EXPECT_TRUE(has("OTEL_RESOURCE_ATTRIBUTES=deployment.environment=ci,mates.team=blue,gen_ai.agent.name=front%20end"))
      << ::testing::PrintToString(env);
  EXPECT_TRUE(has("OTEL_METRIC_EXPORT_INTERVAL=60000"));
  EXPECT_TRUE(has("OTEL_LOGS_EXPORT_INTERVAL=5000"));
  EXPECT_TRUE(Configured({}).ChildEnvironment({{"mates.team", "blue"}}).empty());
}

TEST(TraceContextTest, TraceparentIsParsedStrictly) {
  auto c = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id, "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_EQ(c->state, "vendor=x");
  EXPECT_EQ(c->Traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  for (const char* bad : {"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                          "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"}) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
  // A later version may add fields; tracestate beyond its limit is dropped.
  EXPECT_TRUE(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what").has_value());
  EXPECT_EQ(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", std::string(600, 'a'))->state,
            "");
}

TEST(TraceContextTest, AScopedSpanIsTheThreadsAndGoesInTheEnvironment) {
  std::vector<std::string> env;
  AddTraceEnvironment(&env);
  EXPECT_TRUE(env.empty());
  {
    ScopedTrace in(*ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "k=v"));
    AddTraceEnvironment(&env);
    EXPECT_EQ(env, (std::vector<std::string>{"TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                             "TRACESTATE=k=v"}));
  }
  EXPECT_FALSE(CurrentTrace().valid());
}

TEST(TracerTest, ChildrenShareTheTraceAndTheParentsDecision) {
  std::vector<SpanRecord> done;
  Tracer t(Sampler{}, [&](SpanRecord r) { done.push_back(std::move(r)); });
  {
    Span root = t.Start("session", SpanKind::kInternal, {});
    Span child = t.Start("invoke_agent lead", SpanKind::kInternal, root.context());
    child.Set("gen_ai.agent.name", std::string("lead"));
    child.Fail("timeout", "the provider did not answer");
    EXPECT_EQ(child.context().trace_id, root.context().trace_id);
  }
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].name, "invoke_agent lead");
  EXPECT_EQ(done[0].parent_span_id, done[1].context.span_id);
  EXPECT_TRUE(done[0].error);
  EXPECT_EQ(done[1].parent_span_id, "");

  // A parent not sampled: nothing is recorded, its context still travels.
  done.clear();
  TraceContext unsampled = *ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  Span s = t.Start("chat m", SpanKind::kClient, unsampled);
  EXPECT_TRUE(s.context().valid());
  EXPECT_FALSE(s.context().sampled);
  s.End();
  EXPECT_TRUE(done.empty());

  // always_off as the root's decision.
  Tracer off(Sampler{Sampler::Kind::kAlwaysOff, 1, true}, [&](SpanRecord r) { done.push_back(std::move(r)); });
  off.Start("x", SpanKind::kInternal, {}).End();
  EXPECT_TRUE(done.empty());
}

TEST(TracerTest, TheRatioSamplerDecidesByTheTraceIdAsEveryHostWould) {
  Sampler half{Sampler::Kind::kRatio, 0.5, true};
  EXPECT_TRUE(half.SampleRoot("4bf92f3577b34da6a30000000000000f"));
  EXPECT_FALSE(half.SampleRoot("4bf92f3577b34da6a3ffffffffffffff"));
  int sampled = 0;
  std::vector<SpanRecord> done;
  Tracer t(half, [&](SpanRecord r) { done.push_back(std::move(r)); });
  for (int i = 0; i < 2000; ++i) sampled += t.Start("s", SpanKind::kInternal, {}).context().sampled ? 1 : 0;
  EXPECT_GT(sampled, 800);
  EXPECT_LT(sampled, 1200);
}

TEST(TracerTest, AHugeAttributeIsCutAndTooManyAreDropped) {
  std::vector<SpanRecord> done;
  Tracer t(Sampler{}, [&](SpanRecord r) { done.push_back(std::move(r)); }, /*max_attribute_bytes=*/64,
           /*max_attributes=*/4);
  Span s = t.Start(std::string(1000, 'n'), SpanKind::kInternal, {});
  s.Set("big", std::string(1 << 20, 'x'));
  s.Set("list", std::vector<std::string>{std::string(500, 'y')});
  for (int i = 0; i < 10; ++i) s.Set("k" + std::to_string(i), static_cast<int64_t>(i));
  s.End();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_LE(done[0].name.size(), 64u + 3);
  ASSERT_EQ(done[0].attributes.size(), 4u);
  EXPECT_LE(std::get<std::string>(done[0].attributes[0].value).size(), 64u + 3);
  EXPECT_LE(std::get<std::vector<std::string>>(done[0].attributes[1].value)[0].size(), 64u + 3);
}

// mates' own lines go to the host's export (DESIGN §29) as stderr has them:
// redacted, in the span they were written in; info too, never debug; and a
// line the tap itself logs is not tapped again.
TEST(LogTapTest, WarningsAndInfoReachTheTapRedactedAndInTheirSpan) {
  Secrets::Add("TEST_KEY", "sk-secret-value-123");
  std::vector<std::pair<bool, std::string>> lines;
  std::vector<TraceContext> spans;
  SetLogTap([&](bool warning, const std::string& line) {
    lines.emplace_back(warning, line);
    spans.push_back(CurrentTrace());
    LogWarning("from inside the tap");  // not tapped again
  });
  {
    ScopedTrace in(*ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    LogWarning("the key sk-secret-value-123 was refused");
  }
  LogInfo("a line");
  LogDebug("not this one");
  SetLogTap({});
  LogWarning("after the tap is gone");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0].first);
  EXPECT_EQ(lines[0].second.find("sk-secret-value-123"), std::string::npos) << lines[0].second;
  EXPECT_NE(lines[0].second.find("was refused"), std::string::npos);
  EXPECT_EQ(spans[0].span_id, "00f067aa0ba902b7");
  EXPECT_FALSE(lines[1].first);
  EXPECT_FALSE(spans[1].valid());
}

}  // namespace
}  // namespace mates::telemetry
