// OTLP export (DESIGN §29) against a stand-in collector that decodes every
// request with the official opentelemetry-proto definitions
// (tests/otlp/receiver.mjs, opentelemetry-js's generated decoders): what
// the exporter writes, by hand, must read back field for field in both
// encodings; a team run must be one trace — the session, each agent's
// turns, their model calls and tools, the message between them, the task
// — and what goes wrong with a collector (unreachable, refusing, slow)
// costs the team nothing but the records, counted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "core/trace_context.h"
#include "support/free_port.h"
#include "support/otlp_collector.h"
#include "support/test_util.h"
#include "telemetry/otlp.h"

namespace mates {
namespace {

using testing::Attr;
using testing::Collector;
using testing::Of;
using testing::TempDir;

std::string Fixture(const std::string& name) { return std::string(MATES_SOURCE_DIR) + "/tests/scenarios/" + name; }

telemetry::OtlpConfig ConfigFor(const std::string& url, bool json) {
  std::map<std::string, std::string> vars = {{"OTEL_EXPORTER_OTLP_ENDPOINT", url},
                                             {"OTEL_EXPORTER_OTLP_PROTOCOL", json ? "http/json" : "http/protobuf"},
                                             {"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken,x-team=blue"},
                                             {"OTEL_SERVICE_NAME", "mates-test"},
                                             {"OTEL_EXPORTER_OTLP_TIMEOUT", "2000"}};
  auto c = telemetry::OtlpConfig::From(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      Json::object());
  EXPECT_TRUE(c.warnings.empty()) << ::testing::PrintToString(c.warnings);
  return c;
}

// Every span of the traces requests, each with its resource's attributes.
std::vector<Json> Spans(const std::vector<Json>& received) {
  std::vector<Json> out;
  for (const auto& r : Of(received, "traces")) {
    for (const auto& rs : r["request"]["resourceSpans"]) {
      for (const auto& ss : rs["scopeSpans"]) {
        for (auto s : ss["spans"]) {
          s["resource"] = rs["resource"]["attributes"];
          out.push_back(std::move(s));
        }
      }
    }
  }
  return out;
}

TEST(OtlpExportTest, SpansLogsAndMetricsReadBackWithTheOfficialDefinitionsInBothEncodings) {
  SKIP_WITHOUT_COLLECTOR();
  for (bool json : {false, true}) {
    SCOPED_TRACE(json ? "http/json" : "http/protobuf");
    TempDir dir;
    Collector collector(dir.path());
    auto config = ConfigFor(collector.url(), json);
    auto read = [] {
      std::vector<telemetry::MetricReading> out;
      out.push_back({"gen_ai.client.token.usage", "{token}", "tokens", telemetry::MetricReading::Kind::kHistogram,
                     {1, 4, 16}, {{{{"gen_ai.token.type", "input"}}, 25.0, 3, {1, 0, 1, 1}}}});
      out.push_back({"mates.tool.calls", "{call}", "calls", telemetry::MetricReading::Kind::kCounter, {},
                     {{{{"tool", "bash"}, {"outcome", "ok"}}, 7, 0, {}}}});
      out.push_back({"mates.tasks", "{task}", "tasks", telemetry::MetricReading::Kind::kGauge, {},
                     {{{{"status", "pending"}}, 0, 0, {}}}});
      return out;
    };
    telemetry::OtlpExporter exporter(config, read);
    telemetry::Tracer tracer(config.sampler, [&](telemetry::SpanRecord r) { exporter.Add(std::move(r)); });
    TraceContext root_ctx, chat_ctx;
    {
      telemetry::Span root = tracer.Start("session t", telemetry::SpanKind::kInternal, {});
      root_ctx = root.context();
      telemetry::Span chat = tracer.Start("chat claude", telemetry::SpanKind::kClient, root.context());
      chat_ctx = chat.context();
      chat.Set("gen_ai.usage.input_tokens", int64_t{42});
      chat.Set("gen_ai.usage.output_tokens", int64_t{0});
      chat.Set("gen_ai.request.temperature", 0.5);
      chat.Set("mates.cached", false);
      chat.Set("gen_ai.response.finish_reasons", std::vector<std::string>{"end_turn"});
      chat.Set("empty", std::string());
      chat.Link(root.context(), {{"mates.link", std::string("why")}});
      chat.Fail("timeout", "no answer in 10 s");
    }
    telemetry::LogRecord log;
    log.time_ns = telemetry::UnixNanos();
    log.severity = 13;
    log.severity_text = "WARN";
    log.body = "the store is away";
    log.context = chat_ctx;
    exporter.Add(std::move(log));
    exporter.Shutdown();
    auto stats = exporter.stats();
    EXPECT_EQ(stats.spans_sent, 2u);
    EXPECT_EQ(stats.logs_sent, 1u);
    EXPECT_EQ(stats.spans_dropped + stats.logs_dropped, 0u) << stats.last_error;

    auto got = collector.Received();
    for (const auto& r : got) {
      EXPECT_FALSE(r.contains("error")) << r.dump();
      EXPECT_EQ(r.value("encoding", ""), json ? "json" : "protobuf");
      EXPECT_EQ(r["headers"].value("authorization", ""), "Bearer t0ken");
    }
    auto spans = Spans(got);
    ASSERT_EQ(spans.size(), 2u) << ::testing::PrintToString(got);
    const Json& chat = spans[0];
    const Json& root = spans[1];
    EXPECT_EQ(Attr(chat["resource"], "service.name").value("stringValue", ""), "mates-test");
    EXPECT_EQ(chat["name"], "chat claude");
    EXPECT_EQ(chat["kind"], 3);  // SPAN_KIND_CLIENT
    EXPECT_EQ(chat["traceId"], root_ctx.trace_id);
    EXPECT_EQ(chat["spanId"], chat_ctx.span_id);
    EXPECT_EQ(chat["parentSpanId"], root_ctx.span_id);
    EXPECT_FALSE(root.contains("parentSpanId"));
    EXPECT_EQ(Attr(chat["attributes"], "gen_ai.usage.input_tokens").value("intValue", ""), "42");
    EXPECT_EQ(Attr(chat["attributes"], "gen_ai.usage.output_tokens").value("intValue", ""), "0");
    EXPECT_EQ(Attr(chat["attributes"], "gen_ai.request.temperature").value("doubleValue", 0.0), 0.5);
    EXPECT_EQ(Attr(chat["attributes"], "mates.cached").value("boolValue", true), false);
    EXPECT_EQ(Attr(chat["attributes"], "empty").value("stringValue", "unset"), "");
    EXPECT_EQ(Attr(chat["attributes"], "gen_ai.response.finish_reasons")["arrayValue"]["values"][0]["stringValue"],
              "end_turn");
    EXPECT_EQ(Attr(chat["attributes"], "error.type").value("stringValue", ""), "timeout");
    EXPECT_EQ(chat["status"].value("code", 0), 2);  // STATUS_CODE_ERROR
    EXPECT_EQ(chat["status"].value("message", ""), "no answer in 10 s");
    ASSERT_EQ(chat["links"].size(), 1u);
    EXPECT_EQ(chat["links"][0]["spanId"], root_ctx.span_id);
    EXPECT_EQ(chat.value("flags", 0), 0x101);
    EXPECT_GE(std::stoull(chat["endTimeUnixNano"].get<std::string>()),
              std::stoull(chat["startTimeUnixNano"].get<std::string>()));

    auto logs = Of(got, "logs");
    ASSERT_EQ(logs.size(), 1u);
    const Json& rec = logs[0]["request"]["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
    EXPECT_EQ(rec["severityNumber"], 13);
    EXPECT_EQ(rec["body"]["stringValue"], "the store is away");
    EXPECT_EQ(rec["traceId"], chat_ctx.trace_id);
    EXPECT_EQ(rec["spanId"], chat_ctx.span_id);

    // The metrics: one export at shutdown, the exporter's own drops in it.
    auto metrics = Of(got, "metrics");
    ASSERT_EQ(metrics.size(), 1u);
    std::map<std::string, Json> by_name;
    for (const auto& m : metrics[0]["request"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]) {
      by_name[m["name"]] = m;
    }
    const Json& h = by_name["gen_ai.client.token.usage"]["histogram"];
    EXPECT_EQ(h["aggregationTemporality"], 2);  // CUMULATIVE
    EXPECT_EQ(h["dataPoints"][0]["count"], "3");
    EXPECT_EQ(h["dataPoints"][0]["sum"], 25.0);
    EXPECT_EQ(h["dataPoints"][0]["bucketCounts"], (Json{"1", "0", "1", "1"}));
    EXPECT_EQ(h["dataPoints"][0]["explicitBounds"], (Json{1.0, 4.0, 16.0}));
    EXPECT_EQ(by_name["gen_ai.client.token.usage"]["unit"], "{token}");
    const Json& sum = by_name["mates.tool.calls"]["sum"];
    EXPECT_TRUE(sum.value("isMonotonic", false));
    EXPECT_EQ(sum["dataPoints"][0]["asDouble"], 7.0);
    EXPECT_EQ(Attr(sum["dataPoints"][0]["attributes"], "tool")["stringValue"], "bash");
    EXPECT_EQ(by_name["mates.tasks"]["gauge"]["dataPoints"][0].value("asDouble", -1.0), 0.0);
    EXPECT_TRUE(by_name.count("mates.telemetry.dropped"));
  }
}

// No collector where it is said to be: every record is dropped and counted,
// once the exporter gave up on it, and the caller never waits.
TEST(OtlpExportTest, AnUnreachableCollectorDropsAndCountsWithoutStoppingAnyone) {
  const int port = testing::FreePort();
  auto config = ConfigFor("http://127.0.0.1:" + std::to_string(port), false);
  config.metrics_url.clear();
  telemetry::OtlpExporter exporter(config, {});
  telemetry::Tracer tracer(config.sampler, [&](telemetry::SpanRecord r) { exporter.Add(std::move(r)); });
  for (int i = 0; i < 100; ++i) tracer.Start("s", telemetry::SpanKind::kInternal, {}).End();
  exporter.Flush();
  auto s = exporter.stats();
  EXPECT_EQ(s.spans_sent, 0u);
  EXPECT_EQ(s.spans_dropped, 100u);
  EXPECT_NE(s.last_error.find("cannot be reached"), std::string::npos) << s.last_error;
}

// A collector refusing (4xx: not tried again; 503: tried once more) and
// one too slow (left at the timeout, and tried once more): counted, said,
// and the exporter stops when told.
TEST(OtlpExportTest, ARefusingOrSlowCollectorIsCountedAndSaid) {
  SKIP_WITHOUT_COLLECTOR();
  struct Case {
    std::vector<std::string> args;
    size_t requests;  // how many the collector saw for one batch
    std::string said;
  };
  for (const Case& c : {Case{{"--status", "400"}, 1, "answered 400"}, Case{{"--status", "503"}, 2, "answered 503"},
                        Case{{"--delay-ms", "20000"}, 2, "cannot be reached"}}) {
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    TempDir dir;
    Collector collector(dir.path(), c.args);
    auto config = ConfigFor(collector.url(), false);
    config.metrics_url.clear();
    config.timeout_s = 1;
    telemetry::OtlpExporter exporter(config, {});
    telemetry::Tracer tracer(config.sampler, [&](telemetry::SpanRecord r) { exporter.Add(std::move(r)); });
    for (int i = 0; i < 5; ++i) tracer.Start("s", telemetry::SpanKind::kInternal, {}).End();
    exporter.Flush();     // the slow one: given up at the timeout
    exporter.Shutdown();
    auto s = exporter.stats();
    EXPECT_EQ(s.spans_sent, 0u);
    EXPECT_EQ(s.spans_dropped, 5u);
    EXPECT_NE(s.last_error.find(c.said), std::string::npos) << s.last_error;
    EXPECT_EQ(Of(collector.Received(), "traces").size(), c.requests);
  }
}

// The queue is bounded: spans beyond it while the exporter is busy are
// dropped at once, never waited for.
TEST(OtlpExportTest, SpansBeyondTheQueueAreDroppedAtOnce) {
  SKIP_WITHOUT_COLLECTOR();
  TempDir dir;
  Collector collector(dir.path(), {"--delay-ms", "1000"});
  auto config = ConfigFor(collector.url(), false);
  config.metrics_url.clear();
  config.max_queue = 10;
  config.max_batch = 10;
  telemetry::OtlpExporter exporter(config, {});
  telemetry::Tracer tracer(config.sampler, [&](telemetry::SpanRecord r) { exporter.Add(std::move(r)); });
  for (int i = 0; i < 50; ++i) tracer.Start("s", telemetry::SpanKind::kInternal, {}).End();
  exporter.Shutdown();
  auto s = exporter.stats();
  EXPECT_EQ(s.spans_sent + s.spans_dropped, 50u);
  EXPECT_GE(s.spans_dropped, 30u);  // at most one batch in flight and one queued
  EXPECT_GE(s.spans_sent, 10u);
}

// A scripted team run, exported: one trace under the session's span.
void CheckTeamTrace(const std::vector<Json>& got, const fs::path& ws) {
  auto spans = Spans(got);
  ASSERT_FALSE(spans.empty()) << ::testing::PrintToString(got);
  std::map<std::string, Json> by_id;
  std::set<std::string> traces;
  for (const auto& s : spans) {
    by_id[s["spanId"]] = s;
    traces.insert(s["traceId"].get<std::string>());
    EXPECT_EQ(Attr(s["resource"], "service.name").value("stringValue", ""), "mates");
    for (const auto& a : s.value("attributes", Json::array())) {
      if (a["value"].contains("stringValue")) {
        EXPECT_LE(a["value"]["stringValue"].get<std::string>().size(), 4096u + 3);
      }
    }
  }
  EXPECT_EQ(traces.size(), 1u) << "one trace for the whole session";
  auto named = [&](const std::string& prefix) {
    std::vector<Json> out;
    for (const auto& s : spans) {
      if (s["name"].get<std::string>().rfind(prefix, 0) == 0) out.push_back(s);
    }
    return out;
  };
  auto parent_of = [&](const Json& s) -> Json {
    auto it = by_id.find(s.value("parentSpanId", ""));
    return it == by_id.end() ? Json() : it->second;
  };
  auto sessions = named("session ");
  ASSERT_EQ(sessions.size(), 1u);
  const std::string session_id = sessions[0]["spanId"];
  EXPECT_FALSE(sessions[0].contains("parentSpanId"));

  // The lead's and the worker's turns, under the session.
  std::map<std::string, int> turns;
  for (const auto& t : named("invoke_agent ")) {
    EXPECT_EQ(t.value("parentSpanId", ""), session_id) << t.dump();
    ++turns[Attr(t["attributes"], "gen_ai.agent.name").value("stringValue", "")];
    EXPECT_EQ(Attr(t["attributes"], "gen_ai.operation.name").value("stringValue", ""), "invoke_agent");
  }
  EXPECT_GE(turns["lead"], 2);
  EXPECT_GE(turns["worker"], 1);

  // Model calls under turns, with their usage.
  auto chats = named("chat ");
  ASSERT_FALSE(chats.empty());
  for (const auto& c : chats) {
    EXPECT_EQ(parent_of(c).value("name", "").rfind("invoke_agent ", 0), 0u) << c.dump();
    EXPECT_EQ(c["kind"], 3);
    EXPECT_EQ(Attr(c["attributes"], "gen_ai.provider.name").value("stringValue", ""), "scripted");
    EXPECT_FALSE(Attr(c["attributes"], "gen_ai.usage.input_tokens").is_null()) << c.dump();
    EXPECT_FALSE(Attr(c["attributes"], "gen_ai.usage.output_tokens").is_null());
    EXPECT_TRUE(Attr(c["attributes"], "gen_ai.response.finish_reasons").contains("arrayValue"));
  }

  // Tools by name, under turns; the worker's command had its TRACEPARENT.
  std::map<std::string, Json> tools;
  for (const auto& t : named("execute_tool ")) {
    tools[Attr(t["attributes"], "gen_ai.tool.name").value("stringValue", "")] = t;
    EXPECT_EQ(parent_of(t).value("name", "").rfind("invoke_agent ", 0), 0u) << t.dump();
    EXPECT_FALSE(Attr(t["attributes"], "gen_ai.tool.call.id").is_null());
  }
  for (const char* name : {"TeamCreate", "TaskCreate", "Task", "bash", "TaskUpdate", "SendMessage"}) {
    EXPECT_TRUE(tools.count(name)) << name;
  }
  auto written = ReadFile(ws / "traceparent.txt");
  ASSERT_TRUE(written.ok()) << "the worker's command did not run";
  auto tp = ParseTraceparent(*written);
  ASSERT_TRUE(tp.has_value()) << *written;
  EXPECT_EQ(tp->span_id, tools["bash"]["spanId"]);
  EXPECT_EQ(tp->trace_id, *traces.begin());

  // The message, from the worker's SendMessage to the lead's turn that took it in.
  auto messages = named("message ");
  ASSERT_EQ(messages.size(), 1u) << "one message carried a traceparent";
  const Json& m = messages[0];
  EXPECT_EQ(m.value("parentSpanId", ""), tools["SendMessage"]["spanId"]);
  EXPECT_EQ(Attr(m["attributes"], "mates.message.recipient").value("stringValue", ""), "lead");
  ASSERT_EQ(m["links"].size(), 1u);
  const Json taking = by_id[m["links"][0]["spanId"]];
  EXPECT_EQ(Attr(taking["attributes"], "gen_ai.agent.name").value("stringValue", ""), "lead");
  bool linked_back = false;
  for (const auto& l : taking.value("links", Json::array())) linked_back |= l["spanId"] == m["spanId"];
  EXPECT_TRUE(linked_back) << "the lead's turn links to the message";

  // The task, from its claim to its completion, under the session.
  auto tasks = named("task #");
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].value("parentSpanId", ""), session_id);
  EXPECT_EQ(Attr(tasks[0]["attributes"], "mates.task.owner").value("stringValue", ""), "worker");
  EXPECT_LE(std::stoull(tasks[0]["startTimeUnixNano"].get<std::string>()),
            std::stoull(tasks[0]["endTimeUnixNano"].get<std::string>()));

  // Metrics arrived: the agents' token usage among them.
  bool tokens = false;
  for (const auto& r : Of(got, "metrics")) {
    for (const auto& m2 : r["request"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]) {
      tokens |= m2["name"] == "gen_ai.client.token.usage";
    }
  }
  EXPECT_TRUE(tokens);
}

TEST(TeamTraceTest, ATeamRunIsOneTraceOfItsAgentsToolsMessageAndTask) {
  SKIP_WITHOUT_COLLECTOR();
  for (bool json : {false, true}) {
    SCOPED_TRACE(json ? "http/json" : "http/protobuf");
    TempDir dir, ws;
    Collector collector(dir.path());
    auto r = testing::RunMates(ws.path(),
                               {"run", "--provider", "scripted", "--scenario", Fixture("team_traced.yaml"),
                                "--shutdown-timeout", "2", "--sandbox", "off", "Go"},
                               {"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.url(),
                                std::string("OTEL_EXPORTER_OTLP_PROTOCOL=") + (json ? "http/json" : "http/protobuf")},
                               "", 120);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("LEAD HEARD THE WORKER"), std::string::npos) << r.out;
    auto got = collector.Received();
    for (const auto& g : got) EXPECT_FALSE(g.contains("error")) << g.dump();
    CheckTeamTrace(got, ws.path());
  }
}

// Settings that cannot be used are one warning each, and the team works;
// a collector nobody runs costs it nothing.
TEST(TeamTraceTest, BadSettingsAndAMissingCollectorDoNotStopTheTeam) {
  TempDir ws;
  auto r = testing::RunMates(ws.path(),
                             {"run", "--provider", "scripted", "--scenario", Fixture("team_traced.yaml"),
                              "--shutdown-timeout", "2", "--sandbox", "off", "Go"},
                             {"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4317", "OTEL_METRIC_EXPORT_INTERVAL=soon"}, "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("OTEL_EXPORTER_OTLP_ENDPOINT=collector:4317 is not an http:// or https:// URL"), std::string::npos)
      << all;
  EXPECT_NE(all.find("OTEL_METRIC_EXPORT_INTERVAL=soon is not a number of milliseconds"), std::string::npos);
  EXPECT_NE(r.out.find("LEAD HEARD THE WORKER"), std::string::npos);

  TempDir ws2;
  const int port = testing::FreePort();
  r = testing::RunMates(ws2.path(),
                        {"run", "--provider", "scripted", "--scenario", Fixture("team_traced.yaml"),
                         "--shutdown-timeout", "2", "--sandbox", "off", "Go"},
                        {"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:" + std::to_string(port),
                         "OTEL_EXPORTER_OTLP_TIMEOUT=500"},
                        "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("LEAD HEARD THE WORKER"), std::string::npos);
  EXPECT_NE((r.out + r.err).find("telemetry: the collector at http://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << r.out << r.err;
}

// A merge (DESIGN §29): from the queue taking it to its decision, under the
// session, with how long its check ran.
TEST(TeamTraceTest, AMergeIsASpanWithItsChecksDuration) {
  SKIP_WITHOUT_COLLECTOR();
  TempDir dir, ws;
  Collector collector(dir.path());
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", ws.path().string(), "-c", "user.name=t", "-c", "user.email=t@t"});
    ASSERT_EQ(testing::Run(args).exit_code, 0) << args[7];
  };
  git({"init", "-q", "-b", "main"});
  testing::WriteAll(ws.path() / "README", "the project\n");
  git({"add", "README"});
  git({"commit", "-q", "-m", "initial"});
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "wt"}).exit_code, 0);
  ASSERT_EQ(testing::RunMates(ws.path(), {"tasks", "--team", "wt", "create", "write a.txt with alpha"}).exit_code, 0);
  auto r = testing::RunMates(ws.path(),
                             {"run", "--team", "wt", "--provider", "scripted", "--scenario",
                              testing::ScenarioFixture("team_worktree.yaml"), "--idle-timeout", "0", "--isolation",
                              "worktree", "--sandbox", "off", "--merge-check", "test -f a.txt", "Go one"},
                             {"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.url()}, "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<Json> merges;
  std::string session;
  for (const auto& s : Spans(collector.Received())) {
    if (s["name"].get<std::string>().rfind("merge #", 0) == 0) merges.push_back(s);
    if (s["name"].get<std::string>().rfind("session ", 0) == 0) session = s["spanId"];
  }
  ASSERT_EQ(merges.size(), 1u);
  EXPECT_EQ(merges[0]["name"], "merge #1");
  EXPECT_EQ(merges[0].value("parentSpanId", ""), session);
  EXPECT_EQ(Attr(merges[0]["attributes"], "mates.merge.state").value("stringValue", ""), "merged");
  EXPECT_EQ(Attr(merges[0]["attributes"], "mates.merge.owner").value("stringValue", ""), "w1");
  EXPECT_GT(Attr(merges[0]["attributes"], "mates.merge.check.duration").value("doubleValue", 0.0), 0.0);
}

// A hosted team's export as status and doctor show it: what was sent, and
// what a collector gone away costs (its exports counted as failed).
TEST(TeamTraceTest, StatusAndDoctorShowWhatTheExportSentAndDropped) {
  SKIP_WITHOUT_COLLECTOR();
  TempDir dir, ws;
  std::optional<Collector> collector(std::in_place, dir.path());
  const std::string url = collector->url();
  const std::vector<std::string> env = {"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "OTEL_BSP_SCHEDULE_DELAY=100",
                                        "OTEL_METRIC_EXPORT_INTERVAL=200", "OTEL_EXPORTER_OTLP_TIMEOUT=1000"};
  auto mates = [&](const std::vector<std::string>& args) { return testing::RunMates(ws.path(), args, env); };
  auto up = mates({"up", "--team", "tel", "--provider", "scripted", "--scenario", Fixture("team_traced.yaml"),
                   "--no-dashboard", "--sandbox", "off", "Go"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  std::string status;
  ASSERT_TRUE(testing::WaitUntil([&] {
    status = mates({"status", "--team", "tel"}).out;
    return status.find("telemetry: exported to " + url + "/v1/traces: ") != std::string::npos &&
           status.find(" 0 spans") == std::string::npos;
  })) << status;
  EXPECT_EQ(status.find("DROPPED"), std::string::npos) << status;
  auto doctor = mates({"doctor", "--no-call", "--team", "tel"});
  EXPECT_NE(doctor.out.find("  ok    telemetry: exports to " + url + "/v1/traces (http/protobuf)"), std::string::npos)
      << doctor.out;

  collector.reset();  // gone: the next exports fail
  ASSERT_TRUE(testing::WaitUntil([&] {
    status = mates({"status", "--team", "tel"}).out;
    return status.find("DROPPED") != std::string::npos;
  })) << status;
  EXPECT_NE(status.find("cannot be reached"), std::string::npos) << status;
  doctor = mates({"doctor", "--no-call", "--team", "tel"});
  EXPECT_NE(doctor.out.find("  warn  telemetry: the collector at " + url + "/v1/traces cannot be reached"),
            std::string::npos)
      << doctor.out;
  EXPECT_EQ(mates({"down", "--team", "tel"}).exit_code, 0);
}

// The person's own config's telemetry: section is read (the variables win);
// a workspace's is not — a repository must not send a team's work where it
// likes; a section that is not a map is one clear error.
TEST(TeamTraceTest, ThePersonsTelemetrySectionIsReadAndAWorkspacesIsNot) {
  SKIP_WITHOUT_COLLECTOR();
  TempDir dir, ws, config;
  Collector collector(dir.path());
  const std::string xdg = "XDG_CONFIG_HOME=" + config.path().string();
  testing::WriteAll(config.path() / "mates/config.yaml",
                    "telemetry:\n  endpoint: " + collector.url() + "\n  protocol: http/json\n");
  testing::WriteAll(ws.path() / ".mates/config.yaml", "telemetry:\n  endpoint: http://attacker.example:4318\n");
  auto doctor = testing::RunMates(ws.path(), {"doctor", "--no-call"}, {xdg});
  EXPECT_NE(doctor.out.find("  ok    telemetry: exports to " + collector.url() + "/v1/traces (http/json)"),
            std::string::npos)
      << doctor.out;
  EXPECT_EQ(doctor.out.find("attacker"), std::string::npos) << doctor.out;
  // The variable wins over the section.
  doctor = testing::RunMates(ws.path(), {"doctor", "--no-call"}, {xdg, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"});
  EXPECT_NE(doctor.out.find("/v1/traces (http/protobuf)"), std::string::npos) << doctor.out;
  // What the doctor sent the collector was an export of nothing, and it decoded.
  auto got = collector.Received();
  ASSERT_EQ(got.size(), 2u);
  for (const auto& g : got) EXPECT_FALSE(g.contains("error")) << g.dump();

  testing::WriteAll(config.path() / "mates/config.yaml", "telemetry: [1, 2]\n");
  doctor = testing::RunMates(ws.path(), {"doctor", "--no-call"}, {xdg});
  EXPECT_NE(doctor.out.find("  FAIL  telemetry: " + (config.path() / "mates/config.yaml").string() +
                            ": telemetry must be a map"),
            std::string::npos)
      << doctor.out;
  auto run = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("team_traced.yaml"),
                                           "--sandbox", "off", "Go"},
                               {xdg});
  EXPECT_EQ(run.exit_code, 2);  // a setting that cannot be read, before anything starts
  EXPECT_NE(run.err.find("telemetry must be a map"), std::string::npos) << run.err;
}

// MCP (DESIGN §29): a request carries the tool call's span in
// _meta.traceparent, and a stdio server starts with the span it was started
// in, in the session's trace.
TEST(TeamTraceTest, AnMcpServerAndItsRequestsCarryTheContext) {
  SKIP_WITHOUT_COLLECTOR();
  const fs::path modules = fs::path(MATES_SOURCE_DIR) / ".cache/mcp/node_modules";
  if (!fs::exists(modules / "@modelcontextprotocol/sdk")) GTEST_SKIP() << "the MCP SDK is not in .cache/mcp";
  TempDir dir, ws, config;
  Collector collector(dir.path());
  Json servers = {{"ctx",
                   {{"command", "node"},
                    {"args", {std::string(MATES_SOURCE_DIR) + "/tests/mcp/context_server.mjs", modules.string()}}}}};
  testing::WriteAll(ws.path() / ".mcp.json", DumpJson(Json{{"mcpServers", servers}}));
  const std::string own_trust = "XDG_CONFIG_HOME=" + config.path().string();
  ASSERT_EQ(testing::RunMates(ws.path(), {"trust"}, {own_trust}).exit_code, 0);
  auto r = testing::RunMates(ws.path(),
                             {"run", "--provider", "scripted", "--scenario", Fixture("lead_traced_mcp.yaml"),
                              "--sandbox", "off", "Go"},
                             {own_trust, "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.url()}, "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const size_t at = r.out.find("CONTEXT meta=");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::string meta = r.out.substr(at + 13, 55), env = r.out.substr(r.out.find(" env=", at) + 5, 55);
  auto m = ParseTraceparent(meta), e = ParseTraceparent(env);
  ASSERT_TRUE(m.has_value()) << meta;
  ASSERT_TRUE(e.has_value()) << env;
  std::map<std::string, Json> by_id;
  for (const auto& s : Spans(collector.Received())) by_id[s["spanId"]] = s;
  ASSERT_TRUE(by_id.count(m->span_id)) << "the request's span was exported";
  EXPECT_EQ(by_id[m->span_id]["name"], "execute_tool mcp__ctx__context");
  ASSERT_TRUE(by_id.count(e->span_id));
  EXPECT_EQ(by_id[e->span_id]["traceId"], m->trace_id);
}

}  // namespace
}  // namespace mates
