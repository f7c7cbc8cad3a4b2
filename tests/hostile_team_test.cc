// A hosted team against signals and kills (DESIGN §10, issue "hardening",
// item 4): a teammate's command that leaves its process group must not
// survive its host's SIGTERM, and after a host's SIGKILL the next host
// kills what the dead one left before it resumes anything; a host killed
// again and again, anywhere in its work, loses nothing and redoes nothing
// done.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "agent/journal.h"
#include "core/clock.h"
#include "core/json.h"
#include "llm/types.h"
#include "store/board.h"
#include "store/roster.h"
#include "store/team_store.h"
#include "support/chaos.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

using testing::ProcessRunning;
std::string Fixture(const std::string& name) { return testing::ScenarioFixture(name); }

pid_t PidIn(const fs::path& file) { return static_cast<pid_t>(std::stol(ReadAll(file))); }

// Starts a host whose teammate `worker` is busy in `sleep 41.5`, having
// left a `setsid sleep 41.75` behind; returns once both run. Without the
// sandbox: what is tested is the process journal that cleans up after
// tools when no pid namespace does (a sandboxed tree dies whole with its
// first process; sandbox_test proves that).
Subprocess StartBusyHost(const fs::path& ws) {
  EXPECT_EQ(testing::RunMates(ws, {"team", "create", "h"}).exit_code, 0);
  Subprocess host = testing::StartMates(ws, {"run", "--team", "h", "--provider", "scripted", "--scenario",
                                             Fixture("team_hostile.yaml"), "--sandbox", "off", "Start"});
  EXPECT_TRUE(testing::WaitUntil([&] {
    return fs::exists(ws / "escaped.pid") && fs::exists(ws / "worker.pid") && fs::file_size(ws / "escaped.pid") > 0 &&
           fs::file_size(ws / "worker.pid") > 0;
  }));
  return host;
}

TEST(HostileTeamTest, SigtermLeavesNoProcessOfTheTeamBehind) {
  TempDir ws;
  Subprocess host = StartBusyHost(ws.path());
  pid_t worker = PidIn(ws.path() / "worker.pid"), escaped = PidIn(ws.path() / "escaped.pid");
  // While its host lives, a member shows what its host says.
  auto shown = testing::RunMates(ws.path(), {"team", "show", "h"});
  EXPECT_NE(shown.out.find("active"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("offline"), std::string::npos) << shown.out;
  ASSERT_TRUE(ProcessRunning(worker));
  ASSERT_TRUE(ProcessRunning(escaped));
  host.Signal(SIGTERM);
  auto r = host.Wait();
  EXPECT_EQ(r.exit_code, 143) << r.err;
  EXPECT_NE(r.err.find("stopping (SIGTERM)"), std::string::npos) << r.err;
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessRunning(worker) && !ProcessRunning(escaped); }, 5))
      << "a teammate's command outlived its host's SIGTERM";
  // Stopped by its host: resumable, not shut down.
  auto c = Roster(Workspace(ws.path())).Load("h");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Find("worker")->status, MemberStatus::kIdle);
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/h/agents/worker.procs")) << "a clean stop leaves no leftovers list";
}

TEST(HostileTeamTest, AHostAfterASigkillKillsWhatTheDeadOneLeftBeforeResuming) {
  TempDir ws;
  Subprocess host = StartBusyHost(ws.path());
  pid_t worker = PidIn(ws.path() / "worker.pid"), escaped = PidIn(ws.path() / "escaped.pid");
  host.Signal(SIGKILL);
  host.Wait();
  // Nothing could stop them: they run on under init, the old bug.
  ASSERT_TRUE(ProcessRunning(worker));
  ASSERT_TRUE(ProcessRunning(escaped));
  ASSERT_TRUE(fs::exists(ws.path() / ".teams/h/agents/worker.procs"));
  // Item 12: `team show` said the dead host's members were active.
  auto shown = testing::RunMates(ws.path(), {"team", "show", "h", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto j = ParseJson(shown.out);
  ASSERT_TRUE(j.ok()) << shown.out;
  for (const auto& m : (*j)["members"]) {
    EXPECT_EQ(m["status"], "offline") << m;
    if (m["name"] == "worker") {
      EXPECT_EQ(m["recorded_status"], "active") << m;
    }
  }
  shown = testing::RunMates(ws.path(), {"team", "show", "h"});
  EXPECT_NE(shown.out.find("offline"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("active"), std::string::npos) << shown.out;
  auto r = testing::RunMates(ws.path(), {"run", "--team", "h", "--provider", "scripted", "--scenario",
                                         Fixture("team_hostile.yaml"), "--idle-timeout", "1", "--sandbox", "off"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("worker: stopped 1 process tree(s) its last host left running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("resumed teammates of team h: worker"), std::string::npos) << r.err;
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessRunning(worker) && !ProcessRunning(escaped); }, 5));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/h/agents/worker.procs"));
}

// A teammate resumed from a long journal is at work from the moment it is
// resumed, not from the moment its journal is replayed: a run with no goal
// waits for it. Its task in progress blocks the only other task, so the
// board alone shows no work; the lead once took that for a team with
// nothing to do and ended the run before the teammate began (the test
// above found it, a run in ten).
TEST(HostileTeamTest, ARunWaitsForATeammateStillReplayingItsJournal) {
  TempDir ws;
  Workspace w(ws.path());
  ASSERT_TRUE(Roster(w).CreateTeam("slow").ok());
  Member r1;
  r1.name = "r1";
  r1.status = MemberStatus::kActive;  // as its killed host left it
  r1.prompt = "Work through the board.";
  ASSERT_TRUE(Roster(w).AddMember("slow", r1).ok());
  {
    // Some 20,000 lines, long enough to replay that the lead looks first,
    // then a compaction: what it resumes with is short.
    auto journal = agent::Journal::Open(w.AgentsDir("slow") / "r1.jsonl");
    ASSERT_TRUE(journal.ok());
    llm::ChatMessage answer{llm::Role::kAssistant, {llm::ContentBlock::Text("Noted.")}};
    for (int i = 0; i < 10000; ++i) {
      llm::ChatMessage ask{llm::Role::kUser,
                           {llm::ContentBlock::Text("Note " + std::to_string(i) + ".")}};
      ASSERT_TRUE(journal->AppendMessage(ask).ok());
      ASSERT_TRUE(journal->AppendMessage(answer).ok());
    }
    llm::ChatMessage summary{llm::Role::kUser,
                             {llm::ContentBlock::Text("Summary: 10,000 notes taken.")}};
    ASSERT_TRUE(journal->AppendCompaction({summary, answer}, "").ok());
  }
  Board board(w.TasksDir("slow"));
  ASSERT_TRUE(board.Create({"job 1", "", "", {}, ""}).ok());
  ASSERT_TRUE(board.Create({"job 2", "", "", {1}, ""}).ok());
  ASSERT_TRUE(board.Claim(1, "r1").ok());  // in progress when its host died
  auto r = testing::RunMates(ws.path(), {"run", "--team", "slow", "--provider", "scripted",
                                         "--scenario", Fixture("team_resume.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resumed teammates of team slow: r1"), std::string::npos) << r.err;
  for (int64_t id : {1, 2}) {
    auto t = board.Get(id);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->status, TaskStatus::kCompleted) << "task " << id << "; the run said:\n" << r.err;
  }
}

// The host of a team at work on a graph of jobs is killed with SIGKILL
// eight times, each time somewhere else in its work (inside a command, a
// message, a task's write, a journal line, a spawn), and resumed by the
// next `mates run --team` each time: nothing is lost, nothing done is done
// again (support/chaos.h says what is checked).
TEST(HostileTeamTest, AHostKilledAgainAndAgainLosesNothingAndRedoesNothingDone) {
  TempDir ws;
  ASSERT_TRUE(Roster(Workspace(ws.path())).CreateTeam("chaos").ok());
  std::unique_ptr<TeamStore> store = FileTeamStore(Workspace(ws.path()), testing::TestEnv());
  testing::KillAHostAgainAndAgain(ws.path(), *store, "chaos",
                                  {"run", "--team", "chaos", "--provider", "scripted", "--scenario",
                                   Fixture("team_chaos.yaml")});
}

}  // namespace
}  // namespace mates
