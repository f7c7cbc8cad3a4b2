// A team hosted headless (DESIGN §11): `mates up` returns once the host
// runs; people talk to it from other processes as `user`; `mates status`
// shows what each member is doing; `mates down` leaves nothing behind; a
// killed host shows its members offline and `down` cleans up after it.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/json.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

using testing::ProcessRunning;
std::string Fixture(const std::string& name) { return testing::ScenarioFixture(name); }

// Whether the scenario's sleeper runs in workspace `ws` (tests run side by
// side: another workspace's sleeper is not this one's).
bool SleeperRunsIn(const fs::path& ws) {
  auto r = testing::Run({"pgrep", "-f", "mates_hosted_sleeper"});
  std::istringstream pids(r.out);
  std::string pid;
  while (pids >> pid) {
    std::error_code ec;
    if (fs::read_symlink("/proc/" + pid + "/cwd", ec) == fs::canonical(ws, ec)) return true;
  }
  return false;
}

// The same, but the sleeper itself (its argv[0]), not a process whose
// command line only mentions it (bwrap's, or the bash that is about to
// exec it).
bool SleeperItselfRunsIn(const fs::path& ws) {
  auto r = testing::Run({"pgrep", "-f", "^mates_hosted_sleeper"});
  std::istringstream pids(r.out);
  std::string pid;
  while (pids >> pid) {
    std::error_code ec;
    if (fs::read_symlink("/proc/" + pid + "/cwd", ec) == fs::canonical(ws, ec)) return true;
  }
  return false;
}

class HostTest : public ::testing::Test {
 protected:
  ~HostTest() override {
    testing::RunMates(ws_.path(), {"down", "--team", "hosted", "--timeout", "5"});
  }

  testing::CommandResult Mates(const std::vector<std::string>& args) { return testing::RunMates(ws_.path(), args); }

  testing::CommandResult Up(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"up", "--team", "hosted", "--provider", "scripted", "--scenario",
                                     Fixture("team_hosted.yaml")};
    args.insert(args.end(), extra.begin(), extra.end());
    return Mates(args);
  }

  Json Status() {
    auto r = Mates({"status", "--team", "hosted", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = ParseJson(r.out);
    EXPECT_TRUE(j.ok()) << r.out;
    return j.ok() ? *j : Json::object();
  }

  static const Json* MemberIn(const Json& status, const std::string& name) {
    for (const auto& m : status["members"]) {
      if (m["name"] == name) return &m;
    }
    return nullptr;
  }

  int64_t HostPid() {
    Json s = Status();
    return s["host"].is_object() ? s["host"]["pid"].get<int64_t>() : 0;
  }

  TempDir ws_;
};

TEST_F(HostTest, UpHostsDownStopsAndNothingIsLeft) {
  ASSERT_FALSE(SleeperRunsIn(ws_.path())) << "a sleeper of an earlier run is still alive";
  auto up = Up({"Start a worker"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_NE(up.out.find("hosting team hosted (pid "), std::string::npos) << up.out;
  const int64_t pid = HostPid();
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(ProcessRunning(static_cast<pid_t>(pid)));
  // One host per team.
  auto again = Up();
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already hosted (pid " + std::to_string(pid) + ")"), std::string::npos) << again.err;

  // A person talks to the lead from another process, as `user`; the lead's
  // answer comes back to user's inbox.
  ASSERT_EQ(Mates({"send", "--team", "hosted", "--to", "lead", "ping", "42"}).exit_code, 0);
  auto answer = Mates({"inbox", "--team", "hosted", "user", "--wait", "20"});
  EXPECT_NE(answer.out.find("lead -> user (message): pong 42"), std::string::npos) << answer.out << answer.err;
  auto delivery = Mates({"log", "--team", "hosted", "--delivery"});
  EXPECT_NE(delivery.out.find("user -> lead (message): ping 42\n    ↳ lead delivered"), std::string::npos)
      << delivery.out;
  EXPECT_NE(delivery.out.find("lead -> user (message): pong 42\n    ↳ user read"), std::string::npos) << delivery.out;

  // A task created from the shell is claimed by the hosted worker; status
  // shows it busy in its tool, for a growing time.
  ASSERT_EQ(Mates({"tasks", "--team", "hosted", "create", "slow job"}).exit_code, 0);
  Json busy;
  ASSERT_TRUE(testing::WaitUntil([&] {
    busy = Status();
    const Json* w = MemberIn(busy, "worker");
    return w != nullptr && (*w)["activity"].is_object() && (*w)["activity"]["state"] == "tool";
  }));
  const Json* w = MemberIn(busy, "worker");
  EXPECT_EQ((*w)["status"], "active");
  EXPECT_EQ((*w)["activity"]["doing"], "bash(exec -a mates_hosted_sleeper sleep 300)");
  EXPECT_EQ((*w)["task"]["id"], 1);
  EXPECT_EQ((*w)["task"]["subject"], "slow job");
  EXPECT_GT((*w)["activity"]["calls"].get<int>(), 0);
  EXPECT_GT((*w)["activity"]["tokens"]["input"].get<int64_t>(), 0);
  EXPECT_EQ(busy["board"]["in_progress"], 1);
  EXPECT_EQ(busy["host"]["mode"], "up");
  EXPECT_EQ(busy["host"]["sandbox"], "workspace");  // the default (DESIGN §18)
  Json later = Status();
  EXPECT_GT((*MemberIn(later, "worker"))["activity"]["for_s"].get<double>(),
            (*w)["activity"]["for_s"].get<double>());
  // The human form says the same.
  auto text = Mates({"status", "--team", "hosted"});
  EXPECT_NE(text.out.find("hosted by pid " + std::to_string(pid)), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nsandbox: workspace\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("bash(exec -a mates_hosted_sleeper"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("#1 slow job"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("user -> lead (message): ping 42"), std::string::npos) << text.out;
  ASSERT_TRUE(SleeperRunsIn(ws_.path()));
  // The host's threads carry names for ps -L and top -H: the worker's is
  // its name, the host's own writers and watcher say what they are.
  std::set<std::string> threads;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    threads.insert(name);
  }
  for (const char* name : {"worker", "mates-watcher", "mates-roster", "mates-activity"}) {
    EXPECT_EQ(threads.count(name), 1u) << name;
  }

  // The worker, deep in its tool, cannot answer the shutdown request in
  // time: it is stopped with the host, and resumed by the next up.
  auto down = Mates({"down", "--team", "hosted", "--grace", "0.5"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("asked 1 teammate(s) to stop; not stopped within 0.5 s: worker"), std::string::npos)
      << down.out;
  EXPECT_NE(down.out.find("team hosted is down (host pid " + std::to_string(pid) + " stopped)"), std::string::npos)
      << down.out;
  EXPECT_FALSE(ProcessRunning(static_cast<pid_t>(pid)));
  EXPECT_FALSE(SleeperRunsIn(ws_.path()));
  Json after = Status();
  EXPECT_TRUE(after["host"].is_null());
  EXPECT_EQ((*MemberIn(after, "worker"))["status"], "offline");
  EXPECT_NE(Mates({"down", "--team", "hosted"}).out.find("not hosted"), std::string::npos);

  // The next `up` resumes the worker from its journal, in the new host.
  ASSERT_EQ(Up().exit_code, 0);
  const int64_t pid2 = HostPid();
  ASSERT_GT(pid2, 0);
  EXPECT_NE(pid2, pid);
  ASSERT_TRUE(testing::WaitUntil([&] {
    Json s = Status();
    const Json* again_w = MemberIn(s, "worker");
    return again_w != nullptr && (*again_w)["activity"].is_object() && (*again_w)["activity"]["pid"] == pid2 &&
           (*again_w)["status"] != "offline";
  }));
  EXPECT_EQ(Mates({"down", "--team", "hosted"}).exit_code, 0);
}

// `down` runs the shutdown protocol first: an idle teammate is asked, as
// the lead, and stops for good (status shutdown) before the host goes.
TEST_F(HostTest, DownAsksTheTeammatesFirst) {
  auto up = Mates({"up", "--team", "dash", "--provider", "scripted", "--scenario",
                   Fixture("team_dashboard.yaml"), "Start the team"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  ASSERT_TRUE(testing::WaitUntil([&] {
    return Mates({"log", "--team", "dash"}).out.find("plan_approval_request") != std::string::npos;
  }));
  auto down = Mates({"down", "--team", "dash"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("asked 1 teammate(s) to stop: all stopped"), std::string::npos) << down.out;
  EXPECT_NE(Mates({"log", "--team", "dash"}).out.find("lead -> planner (shutdown_request"), std::string::npos);
  EXPECT_NE(Mates({"team", "show", "dash"}).out.find("shutdown"), std::string::npos);
  EXPECT_EQ(Mates({"down", "--team", "dash", "--grace", "-1"}).exit_code, 2);
}

// Without the sandbox (whose tools die with their host: the next test),
// what a dead host's tools leave is found by its tag.
TEST_F(HostTest, AKilledHostShowsItsMembersOfflineAndDownCleansUp) {
  ASSERT_EQ(Up({"--sandbox", "off", "Start a worker"}).exit_code, 0);
  // Said where a person looks.
  EXPECT_EQ(Status()["host"]["sandbox"], "off");
  auto said = Mates({"status", "--team", "hosted"});
  EXPECT_NE(said.out.find("sandbox: off — the agents' commands run as you"), std::string::npos) << said.out;
  const int64_t pid = HostPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(Mates({"tasks", "--team", "hosted", "create", "slow job"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return SleeperRunsIn(ws_.path()); }));
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return !ProcessRunning(static_cast<pid_t>(pid)); }));
  // The leader thread is a zombie before the host's other threads have let
  // go of the descriptors they share, the member locks among them, and the
  // kernel closes a dead process's descriptors one by one: the host's lock
  // may be free a moment before a member's. Those locks, not the pid, are
  // what status reads, so wait for all of them (each must go).
  Json s;
  auto offline = [&](const char* name) {
    const Json* m = MemberIn(s, name);
    return m != nullptr && (*m)["status"] == "offline";
  };
  ASSERT_TRUE(testing::WaitUntil([&] {
    s = Status();
    return s["host"].is_null() && offline("lead") && offline("worker");
  })) << s.dump();
  EXPECT_EQ((*MemberIn(s, "worker"))["recorded_status"], "active");
  // The dead host's tool is still running; `down` finds it by the host's tag.
  ASSERT_TRUE(SleeperRunsIn(ws_.path()));
  auto down = Mates({"down", "--team", "hosted"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("not hosted"), std::string::npos) << down.out;
  EXPECT_NE(down.out.find(" leftover process(es) of its dead host killed"), std::string::npos) << down.out;
  EXPECT_FALSE(SleeperRunsIn(ws_.path()));
}

// In the sandbox (the default), a tool's whole tree is in a pid namespace
// whose first process dies with the host's thread that started it: a host
// killed by SIGKILL while its tool runs leaves nothing running.
TEST_F(HostTest, AKilledHostsSandboxedToolsDieWithIt) {
  auto up = Up({"Start a worker"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  const int64_t pid = HostPid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(Mates({"tasks", "--team", "hosted", "create", "slow job"}).exit_code, 0);
  // Killed once the tool runs: between starting bwrap and its taking
  // PR_SET_PDEATHSIG there is a moment in which a host's death goes
  // unnoticed by it, which the process journal covers (the next host or
  // `mates down` kills the tree by its tag, as without the sandbox).
  ASSERT_TRUE(testing::WaitUntil([&] { return SleeperItselfRunsIn(ws_.path()); }))
      << "the worker's sandboxed sleeper never ran:\n" << Mates({"status", "--team", "hosted"}).out;
  ASSERT_EQ(::kill(static_cast<pid_t>(pid), SIGKILL), 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return !SleeperRunsIn(ws_.path()); }, 10))
      << "a sandboxed tool outlived its host";
}

// A hosted lead that makes a team (TeamCreate) and works there: that team
// is hosted here too (one lead per team: no second host takes it on), with
// a page of its own, each team's host naming the other; the way `up` tells
// a person to talk to the lead — its home team — still works, the lead's
// answer coming back there; and when the lead deletes the team, its host
// hosts its own team alone again.
TEST_F(HostTest, ATeamTheLeadMakesIsHostedHereAndTheLeadStillHearsItsHomeTeam) {
  auto up = Mates({"up", "--team", "hosted", "--provider", "scripted", "--scenario",
                   Fixture("team_hosted_moves.yaml"), "Make a team"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  const int64_t pid = HostPid();
  ASSERT_GT(pid, 0);
  auto made_status = [&] {
    auto r = Mates({"status", "--team", "made", "--json"});
    auto j = ParseJson(r.out);
    return r.exit_code == 0 && j.ok() ? *j : Json::object();
  };
  Json made;
  ASSERT_TRUE(testing::WaitUntil([&] {
    made = made_status();
    return made["host"].is_object() && made["host"]["pid"] == pid;
  })) << made.dump();
  ASSERT_NE(MemberIn(made, "lead"), nullptr) << made.dump();
  EXPECT_NE((*MemberIn(made, "lead"))["status"], "offline") << made.dump();
  // Its own page, served by the host: the team it shows is that one.
  const std::string page = made["host"].value("dashboard", "");
  ASSERT_FALSE(page.empty()) << made.dump();
  EXPECT_NE(page, testing::PrintedDashboardUrl(up.out));
  auto team_api = testing::DashboardGet(testing::SplitDashboardUrl(page), "/api/team");
  EXPECT_EQ(team_api.code, 200) << team_api.body;
  EXPECT_EQ(team_api.json()["team"], "made") << team_api.body;
  // Each team's host names the other, with its page: either page leads to
  // the other (and status says so).
  ASSERT_EQ(made["host"]["also"].size(), 1u) << made.dump();
  EXPECT_EQ(made["host"]["also"][0]["team"], "hosted");
  EXPECT_EQ(made["host"]["also"][0]["dashboard"], testing::PrintedDashboardUrl(up.out));
  Json home_host;
  ASSERT_TRUE(testing::WaitUntil([&] {
    home_host = Status()["host"];
    return home_host.is_object() && home_host["also"].size() == 1;
  })) << home_host.dump();
  EXPECT_EQ(home_host["also"][0]["team"], "made");
  EXPECT_EQ(home_host["also"][0]["dashboard"], page);
  EXPECT_NE(
      Mates({"status", "--team", "made"}).out.find("also hosts team hosted — dashboard http://"),
      std::string::npos);
  auto again = Mates({"up", "--team", "made", "--provider", "scripted", "--scenario",
                      Fixture("team_hosted_moves.yaml")});
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.err.find("already hosted (pid " + std::to_string(pid) + ")"), std::string::npos)
      << again.err;
  // At home, the lead is shown working in the team it made.
  Json home;
  ASSERT_TRUE(testing::WaitUntil([&] {
    home = Status();
    const Json* lead = MemberIn(home, "lead");
    return lead != nullptr && (*lead)["activity"].is_object() &&
           (*lead)["activity"]["doing"] == "working in team made";
  })) << home.dump();
  EXPECT_NE(Mates({"status", "--team", "hosted"}).out.find("working in team made"),
            std::string::npos);

  // A person writes to it at home, as `up` said; the answer comes back there.
  auto ping = [&](const std::string& team, const std::string& n) {
    EXPECT_EQ(Mates({"send", "--team", team, "--to", "lead", "ping", n}).exit_code, 0);
    auto answer = Mates({"inbox", "--team", team, "user", "--wait", "20"});
    EXPECT_NE(answer.out.find("lead -> user (message): pong " + n), std::string::npos)
        << team << ": " << answer.out << answer.err;
  };
  ping("hosted", "7");
  // Taken from its inbox here (its journal is the other team's now).
  auto delivery = Mates({"log", "--team", "hosted", "--delivery"});
  EXPECT_NE(delivery.out.find("user -> lead (message): ping 7\n    ↳ lead read"), std::string::npos)
      << delivery.out;
  // The lead was told where it came from; its team's log has the answer too.
  std::string journal = testing::ReadAll(ws_.path() / ".teams/made/agents/lead.jsonl");
  EXPECT_NE(journal.find(R"(teammate_id=\"user\" team=\"hosted\")"), std::string::npos) << journal;
  EXPECT_NE(Mates({"log", "--team", "made"}).out.find("lead -> user (message): pong 7"),
            std::string::npos);
  // Written to in the team it made, it answers the same way.
  ping("made", "8");

  // Told to disband it, the lead deletes it and is back home: the host
  // hosts its own team alone again.
  ASSERT_EQ(Mates({"send", "--team", "made", "--to", "lead", "disband"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] {
    Json h = Status()["host"];
    return h.is_object() && h["also"].empty() &&
           Mates({"team", "list", "--archived"}).out.find("made") != std::string::npos;
  }));
  EXPECT_NE(Mates({"status", "--team", "made"}).err.find("deleted and archived"),
            std::string::npos);
  ping("hosted", "9");

  auto down = Mates({"down", "--team", "hosted"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_FALSE(ProcessRunning(static_cast<pid_t>(pid)));
  EXPECT_TRUE(Status()["host"].is_null());
}

// `down` of the team `up` named asks the teammates of the team the lead
// made there too: they wrap up, not stopped in the middle of their work.
TEST_F(HostTest, DownAsksTheTeammatesOfTheTeamTheLeadMadeToo) {
  auto up = Mates({"up", "--team", "hosted", "--provider", "scripted", "--scenario",
                   Fixture("team_hosted_moves.yaml"), "Make a team with a worker"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  ASSERT_TRUE(testing::WaitUntil([&] {
    Json h = Status()["host"];
    return h.is_object() && h["also"].size() == 1 &&
           Mates({"team", "show", "made"}).out.find("worker") != std::string::npos;
  }));
  auto down = Mates({"down", "--team", "hosted"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("asked 1 teammate(s) of team made to stop: all stopped"),
            std::string::npos)
      << down.out;
  EXPECT_NE(Mates({"log", "--team", "made"}).out.find("lead -> worker (shutdown_request"),
            std::string::npos);
}

// The next `up` of the team goes on where its lead was: in the team it made
// (its conversation is in that team's journal), hosting both again — unless
// another process hosts that team's lead now, or the team is gone; then the
// lead stays home and the host's log says why.
TEST_F(HostTest, TheNextUpGoesOnInTheTeamTheLeadMade) {
  const std::vector<std::string> up = {"up",
                                       "--team",
                                       "hosted",
                                       "--provider",
                                       "scripted",
                                       "--scenario",
                                       Fixture("team_hosted_moves.yaml")};
  auto with_goal = up;
  with_goal.push_back("Make a team");
  ASSERT_EQ(Mates(with_goal).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return Status()["host"]["also"].size() == 1; }));
  ASSERT_EQ(Mates({"down", "--team", "hosted"}).exit_code, 0);
  const fs::path log = ws_.path() / ".teams/hosted/host.log";

  ASSERT_EQ(Mates(up).exit_code, 0) << "no goal: it resumes";
  const int64_t pid = HostPid();
  Json made;
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto j = ParseJson(Mates({"status", "--team", "made", "--json"}).out);
    made = j.ok() ? *j : Json::object();
    return made["host"].is_object() && made["host"]["pid"] == pid;
  })) << made.dump();
  EXPECT_NE(testing::ReadAll(log).find("the lead goes on in team made"), std::string::npos)
      << testing::ReadAll(log);
  ASSERT_EQ(Mates({"send", "--team", "hosted", "--to", "lead", "ping", "1"}).exit_code, 0);
  EXPECT_NE(Mates({"inbox", "--team", "hosted", "user", "--wait", "20"}).out.find("pong 1"),
            std::string::npos);
  ASSERT_EQ(Mates({"down", "--team", "hosted"}).exit_code, 0);

  // Its lead hosted by another process: it stays home.
  auto made_up = up;
  made_up[2] = "made";
  ASSERT_EQ(Mates(made_up).exit_code, 0);
  ASSERT_EQ(Mates(up).exit_code, 0);
  EXPECT_NE(testing::ReadAll(log).find(
                "the lead last worked in team made, whose lead another process hosts now: it "
                "goes on in team hosted"),
            std::string::npos)
      << testing::ReadAll(log);
  EXPECT_TRUE(Status()["host"]["also"].empty());
  ASSERT_EQ(Mates({"down", "--team", "hosted"}).exit_code, 0);
  ASSERT_EQ(Mates({"down", "--team", "made"}).exit_code, 0);

  // The team gone: it stays home. (Made again first: the lead took a turn
  // at home in the session before, so that is where it went on.)
  ASSERT_EQ(Mates({"team", "delete", "made"}).exit_code, 0);
  ASSERT_EQ(Mates(with_goal).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return Status()["host"]["also"].size() == 1; }));
  ASSERT_EQ(Mates({"down", "--team", "hosted"}).exit_code, 0);
  ASSERT_EQ(Mates({"team", "delete", "made"}).exit_code, 0);
  ASSERT_EQ(Mates(up).exit_code, 0);
  EXPECT_NE(testing::ReadAll(log).find(
                "the lead last worked in team made, which is gone: it goes on in team hosted"),
            std::string::npos)
      << testing::ReadAll(log);
  ASSERT_EQ(Mates({"send", "--team", "hosted", "--to", "lead", "ping", "2"}).exit_code, 0);
  EXPECT_NE(Mates({"inbox", "--team", "hosted", "user", "--wait", "20"}).out.find("pong 2"),
            std::string::npos);
}

TEST_F(HostTest, BadInputIsRefusedBeforeAnythingStarts) {
  auto r = Mates({"up", "--team", "hosted", "--provider", "scripted", "--scenario", "/nonexistent.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
  r = Mates({"up", "--team", "../x", "--provider", "scripted", "--scenario", Fixture("team_hosted.yaml")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = Mates({"up", "--team", "hosted", "--provider", "scripted", "--scenario", Fixture("team_hosted.yaml"), ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the goal is empty"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(ws_.path() / ".teams/hosted/host.json"));
  EXPECT_EQ(Mates({"down", "--team", "nosuch"}).exit_code, 1);
  EXPECT_EQ(Mates({"down", "--team", "hosted", "--timeout", "nan"}).exit_code, 2);
  EXPECT_EQ(Mates({"status", "--team", "nosuch"}).exit_code, 1);
  EXPECT_EQ(Mates({"status", "--team", "hosted", "--json", "--watch"}).exit_code, 2);
}

}  // namespace
}  // namespace mates
