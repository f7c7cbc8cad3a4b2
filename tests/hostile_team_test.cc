// A hosted team against signals and kills (DESIGN §10, issue "hardening",
// item 4): a teammate's command that leaves its process group must not
// survive its host's SIGTERM, and after a host's SIGKILL the next host
// kills what the dead one left before it resumes anything.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>

#include "core/clock.h"
#include "core/json.h"
#include <nlohmann/json.hpp>
#include "store/roster.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

using testing::ProcessRunning;
std::string Fixture(const std::string& name) { return testing::ScenarioFixture(name); }

pid_t PidIn(const fs::path& file) { return static_cast<pid_t>(std::stol(ReadAll(file))); }

// Starts a host whose teammate `worker` is busy in `sleep 41.5`, having
// left a `setsid sleep 41.75` behind; returns once both run.
Subprocess StartBusyHost(const fs::path& ws) {
  EXPECT_EQ(testing::RunMates(ws, {"team", "create", "h"}).exit_code, 0);
  Subprocess host = testing::StartMates(ws, {"run", "--team", "h", "--provider", "scripted", "--scenario",
                                             Fixture("team_hostile.yaml"), "Start"});
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
                                         Fixture("team_hostile.yaml"), "--idle-timeout", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("worker: stopped 1 process tree(s) its last host left running"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("resumed teammates of team h: worker"), std::string::npos) << r.err;
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessRunning(worker) && !ProcessRunning(escaped); }, 5));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/h/agents/worker.procs"));
}

}  // namespace
}  // namespace mates
