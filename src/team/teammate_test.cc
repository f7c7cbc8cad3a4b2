// A teammate in the workspace's files, in-process: what it keeps between
// tasks.
#include "support/test_env.h"
#include "team/teammate.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/clock.h"
#include "core/waker.h"
#include "llm/scenario.h"
#include "llm/scripted.h"
#include "store/board.h"
#include "store/claim_line.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "support/test_util.h"
#include "team/team_manager.h"
#include "tools/builtin_tools.h"

namespace mates::team {
namespace {

using testing::TempDir;

std::shared_ptr<llm::Scenario> Scenario() {
  auto s = llm::Scenario::Parse("rules:\n" + testing::CompleteTaskRule() + testing::DoneRule(),
                                "teammate_test.yaml");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::make_shared<llm::Scenario>(std::move(*s));
}

// One teammate works through tasks one at a time: each task leaves nobody
// waiting in the process's claim line for the board. The line (and with it
// its watch of the board, and the teammate's watch of its inbox) lives from
// the teammate's first idle wait to its end; made at every wait, it was
// unmade at every task and made again, on the path from a completion to the
// next call.
TEST(TeammateTest, ALoneTeammateKeepsItsClaimLineFromTaskToTask) {
  TempDir dir;
  Workspace ws(dir.path());
  ASSERT_TRUE(Roster(ws).CreateTeam("t").ok());
  llm::ScriptedProvider provider(Scenario());
  std::unique_ptr<TeamStore> store = FileTeamStore(ws, testing::TestEnv());
  tools::ToolContext ctx(ws, *store);
  ctx.team = "t";
  ctx.agent = "lead";
  ctx.is_lead = true;
  auto tools = tools::MakeToolRegistry(tools::Scope::kLead);
  agent::AgentSpec spec;
  spec.name = "lead";
  spec.system = "the lead";
  agent::AgentLoop lead(spec, &provider, tools.get(), &ctx, nullptr);
  TeamOptions opt;
  opt.idle_timeout_s = 0;
  TeamManager manager(ws, &provider, nullptr, opt, &lead, &ctx);
  ctx.teams = &manager;

  auto waker = std::make_shared<Waker>();
  auto board_watch = testing::TestEnv().watcher.Subscribe(ws.TasksDir("t"), "*.json", waker);
  ASSERT_TRUE(board_watch.ok());
  ASSERT_TRUE(
      manager.SpawnTeammate({.team = "t", .name = "w1", .prompt = "Work from the board."}).ok());
  // The lead hears of it going idle once it joined the line and looked.
  ASSERT_TRUE(testing::UntilWoken(manager.news().waker(), [&] { return manager.news().Pending(); }));
  std::weak_ptr<ClaimLine> kept;
  {
    auto line = testing::TestEnv().folders.LineOf(ws.TasksDir("t"));
    ASSERT_TRUE(line.ok());
    ASSERT_EQ((*line)->waiting(), 1u);
    kept = *line;
  }  // only the teammate holds it now

  Board board(ws.TasksDir("t"));
  for (int i = 1; i <= 3; ++i) {
    TaskDraft d;
    d.subject = "t" + std::to_string(i);
    auto t = board.Create(d);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(testing::UntilWoken(waker,
                                    [&] {
                                      auto now = board.Get(t->id);
                                      return now.ok() && now->status == TaskStatus::kCompleted;
                                    }))
        << "task " << i;
    EXPECT_FALSE(kept.expired()) << "the claim line was unmade after task " << i;
  }
  manager.StopAll();
  EXPECT_TRUE(kept.expired()) << "a stopped teammate still holds the claim line";
}

}  // namespace
}  // namespace mates::team
