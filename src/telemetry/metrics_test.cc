#include "telemetry/metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace mates::telemetry {
namespace {

TEST(ExpositionTest, FamiliesAndSamplesAreWrittenInTheTextFormat) {
  Exposition out;
  out.Family("mates_tasks", "gauge", "Tasks by status\nand more \\ here");
  out.Sample("mates_tasks", {{"team", "t"}, {"status", "pending"}}, 3);
  out.Sample("mates_tasks", {}, 0.25);
  out.Sample("mates_tasks", {{"team", "a\"b\\c\nd"}}, 1e20);
  EXPECT_EQ(out.text(),
            "# HELP mates_tasks Tasks by status\\nand more \\\\ here\n"
            "# TYPE mates_tasks gauge\n"
            "mates_tasks{status=\"pending\",team=\"t\"} 3\n"
            "mates_tasks 0.25\n"
            "mates_tasks{team=\"a\\\"b\\\\c\\nd\"} 1e+20\n");
}

TEST(ExpositionTest, NamesAreMadeValidAndHugeValuesCut) {
  EXPECT_EQ(MetricName("gen_ai.client.token.usage"), "gen_ai_client_token_usage");
  EXPECT_EQ(MetricName("9lives:x"), "_lives:x");
  EXPECT_EQ(LabelName("gen_ai.agent.name"), "gen_ai_agent_name");
  EXPECT_EQ(LabelName("a:b"), "a_b");
  EXPECT_EQ(LabelName(""), "_");
  Exposition out;
  out.Sample("m", {{"model", std::string(10000, 'x')}}, 1);
  EXPECT_LT(out.text().size(), 300u);
}

TEST(MetricsTest, HistogramsAreCumulativeWithInfSumAndCount) {
  Metrics m;
  const Labels l = {{"gen_ai_request_model", "m1"}};
  m.Observe(kOperationDuration, l, 0.0078125);  // first bucket (binary fractions: an exact sum)
  m.Observe(kOperationDuration, l, 0.0625);     // 0.08
  m.Observe(kOperationDuration, l, 1000);       // over every bound
  Exposition out;
  m.WriteTo(out);
  const std::string& t = out.text();
  auto has = [&](const std::string& line) { return t.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("# TYPE gen_ai_client_operation_duration_seconds histogram")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"m1\",le=\"0.01\"} 1")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"m1\",le=\"0.04\"} 1")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"m1\",le=\"0.08\"} 2")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"m1\",le=\"81.92\"} 2")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_bucket{gen_ai_request_model=\"m1\",le=\"+Inf\"} 3")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_sum{gen_ai_request_model=\"m1\"} 1000.0703125")) << t;
  EXPECT_TRUE(has("gen_ai_client_operation_duration_seconds_count{gen_ai_request_model=\"m1\"} 3")) << t;
  // Every family is declared, even before anything was counted in it.
  EXPECT_TRUE(has("# TYPE mates_sandbox_refusals_total counter")) << t;
}

TEST(MetricsTest, CountersAddUpAcrossThreadsAndRefuseWhatIsNoCount) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&m] {
      for (int k = 0; k < 1000; ++k) m.Add(kToolCalls, {{"tool", "bash"}});
    });
  }
  for (auto& t : threads) t.join();
  m.Add(kToolCalls, {{"tool", "bash"}}, -5);            // a counter never goes down
  m.Add(kOperationDuration, {{"tool", "bash"}}, 1);      // not a counter
  m.Add("no_such_family", {}, 1);                                    // not declared
  m.Observe(kToolCalls, {{"tool", "bash"}}, 1);          // not a histogram
  Exposition out;
  m.WriteTo(out);
  EXPECT_NE(out.text().find("mates_tool_calls_total{tool=\"bash\"} 4000\n"), std::string::npos)
      << out.text();
  EXPECT_EQ(out.text().find("no_such_family"), std::string::npos);
  EXPECT_EQ(out.text().find("gen_ai_client_operation_duration_seconds_count"), std::string::npos);
}

TEST(MetricsTest, AFamilysSeriesAreBounded) {
  Metrics m;
  for (int i = 0; i < 5000; ++i) m.Add(kToolCalls, {{"tool", "t" + std::to_string(i)}});
  Exposition out;
  m.WriteTo(out);
  size_t lines = 0;
  for (size_t at = out.text().find("mates_tool_calls_total{"); at != std::string::npos;
       at = out.text().find("mates_tool_calls_total{", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2000u);
}

}  // namespace
}  // namespace mates::telemetry
