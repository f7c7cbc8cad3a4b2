// The circuit breakers' rules (agent/breaker.h), each with what must not
// trip it.
#include "agent/breaker.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace mates::agent {
namespace {

TEST(BreakerTest, TheSameFailingCallFiveTimesInARowTrips) {
  Breaker b({5, 0, 0}, nullptr);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b.AfterTool("bash", "{\"command\":\"make\"}", true, false, "boom\nmore"), "");
  EXPECT_EQ(b.AfterTool("bash", "{\"command\":\"make\"}", true, false, "boom\nmore"),
            "the same bash call failed 5 times in a row (last: boom)");
}

TEST(BreakerTest, ADifferentCallOrASuccessStartsTheCountAgain) {
  Breaker b({5, 0, 0}, nullptr);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.AfterTool("bash", "{\"command\":\"make\"}", true, false, "boom"), "");
    // Another input of the same tool, then a success: neither is the loop.
    EXPECT_EQ(round == 0 ? b.AfterTool("bash", "{\"command\":\"make -k\"}", true, false, "boom")
                         : b.AfterTool("read_file", "{}", false, false, ""),
              "");
  }
  Breaker off({0, 0, 0}, nullptr);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(off.AfterTool("bash", "{}", true, false, "boom"), "");
}

TEST(BreakerTest, CallsWithoutProgressTripOnlyPastTheLimit) {
  Breaker b({5, 10, 0}, nullptr);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(b.AfterCall(1), "") << i;
  EXPECT_EQ(b.AfterTool("write_file", "{}", false, true, ""), "") << "progress";
  for (int i = 0; i < 9; ++i) EXPECT_EQ(b.AfterCall(1), "") << i;
  EXPECT_EQ(b.AfterCall(1), "10 model calls in a row changed neither the board nor a file");
  b.Reset();
  EXPECT_EQ(b.AfterCall(1), "") << "a person let it go on";
}

TEST(BreakerTest, ATurnCostingTenTimesTheTeamsMedianTrips) {
  auto team = std::make_shared<TurnCosts>();
  Breaker b({5, 0, 10, 0}, team);
  // Too few turns for a median: nothing is compared.
  EXPECT_EQ(b.AfterCall(1e9), "");
  for (size_t i = 0; i < TurnCosts::kMinTurns; ++i) b.EndTurn(i % 2 == 0 ? 900 : 1100);
  EXPECT_EQ(team->Median(), 1100);
  EXPECT_EQ(b.AfterCall(10000), "") << "ten times is allowed";
  EXPECT_EQ(b.AfterCall(11001), "this turn has cost 10 times the team's median turn (over 10 times pauses it)");
  EXPECT_EQ(b.AfterCall(50000), "this turn has cost 45 times the team's median turn (over 10 times pauses it)");
}

// Ten turns of idle news make a tiny median, which an ordinary turn of a
// few calls is ten times: under the floor, that is no spike (the demo's
// frontend was paused so, now and then).
TEST(BreakerTest, ASpikeUnderTheFloorIsNoSpike) {
  auto team = std::make_shared<TurnCosts>();
  Breaker b({5, 0, 10, 50000}, team);
  for (size_t i = 0; i < TurnCosts::kMinTurns; ++i) b.EndTurn(500);
  EXPECT_EQ(b.AfterCall(8000), "") << "16 times a tiny median, a few calls' worth";
  EXPECT_EQ(b.AfterCall(50000), "") << "the floor itself";
  EXPECT_EQ(b.AfterCall(60000), "this turn has cost 120 times the team's median turn (over 10 times pauses it)");
}

TEST(BreakerTest, CostWeighsTokensAsProvidersPriceThem) {
  llm::Usage u;
  u.input_tokens = 100;
  u.output_tokens = 10;
  u.cache_creation_input_tokens = 8;
  u.cache_read_input_tokens = 1000;
  EXPECT_DOUBLE_EQ(CostUnits(u), 100 + 50 + 10 + 100);
}

TEST(BreakerTest, TheTeamsTurnsAreAddedFromManyThreads) {
  auto team = std::make_shared<TurnCosts>();
  std::vector<std::thread> agents;
  for (int a = 0; a < 4; ++a) {
    agents.emplace_back([&] {
      Breaker b({5, 0, 10}, team);
      for (int i = 0; i < 200; ++i) {
        b.EndTurn(100);
        (void)b.AfterCall(100);
      }
    });
  }
  for (auto& t : agents) t.join();
  EXPECT_EQ(team->Median(), 100);
}

}  // namespace
}  // namespace mates::agent
