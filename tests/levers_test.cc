// A person's levers on a running team (DESIGN §27), end to end on real
// hosts (`mates up`), real processes and a real model server over HTTP
// (`mates mock-llm`): teammates persist under `up`; `mates interrupt` ends
// a long tool call at once and the teammate waits for a message, told why;
// `mates stop` then `mates restart` brings a teammate back with its
// identity and its conversation; a teammate stopped by a dead model server
// comes back with `mates restart` once the server is back and finishes its
// task; a task that waits with no teammate running brings one back under
// `--respawn on-work`; and each bad input gets one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <map>
#include <signal.h>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

constexpr char kKey[] = "ANTHROPIC_API_KEY=sk-test-not-a-real-key";

class LeversTest : public ::testing::Test {
 protected:
  ~LeversTest() override { Mates({"down", "--team", "levers", "--timeout", "5"}); }
  testing::CommandResult Mates(const std::vector<std::string>& args, double timeout_s = 30) {
    return testing::RunMates(ws_.path(), args, {kKey}, "", timeout_s);
  }
  // `mates up` of team levers with the levers scenario, the worker started.
  void Up(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"up", "--team", "levers", "--no-dashboard"};
    if (std::find(extra.begin(), extra.end(), "--provider") == extra.end()) {
      args.insert(args.end(), {"--provider", "scripted", "--scenario", testing::ScenarioFixture("team_levers.yaml")});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("Start a worker");
    auto up = Mates(args);
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
    ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "idle"; }, 30)) << Status().dump(2);
  }
  Json Status() {
    auto r = Mates({"status", "--team", "levers", "--json"});
    auto j = ParseJson(r.out);
    return j.ok() ? *j : Json::object();
  }
  Json Member(const std::string& name) {
    for (const auto& m : Status().value("members", Json::array())) {
      if (m.value("name", "") == name) return m;
    }
    return Json::object();
  }
  std::string State(const std::string& name) { return Member(name).value("state", ""); }
  std::string TaskStatus(int id) {
    auto r = Mates({"tasks", "--team", "levers", "get", std::to_string(id), "--json"});
    auto j = ParseJson(r.out);
    return j.ok() ? j->value("status", "") : "";
  }
  bool SleeperRuns() { return !testing::ProcessesIn("^mates_levers_sleeper", ws_.path()).empty(); }
  std::string HostLog() { return testing::ReadAll(ws_.path() / ".teams/levers/host.log"); }

  TempDir ws_;
};

// Seed v9: idle → idle again at the timeout, ended only by a shutdown
// request. Under `run` an idle teammate stops after 60 s; under `up` it
// waits on, at no cost, and takes a task created after.
TEST_F(LeversTest, AnIdleTeammateUnderUpOutlastsSixtySecondsAndTakesALaterTask) {
  Up();
  // What is measured is time itself: a minute and a little idle.
  std::this_thread::sleep_for(std::chrono::seconds(62));
  EXPECT_EQ(State("worker"), "idle") << Status().dump(2);
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "quick job"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return TaskStatus(1) == "completed"; }, 30)) << Status().dump(2);
  EXPECT_EQ(HostLog().find("respawned"), std::string::npos) << "it was never stopped:\n" << HostLog();
}

TEST_F(LeversTest, InterruptEndsALongToolCallAndTheTeammateWaitsForAMessage) {
  Up();
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "slow job"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return SleeperRuns(); }, 30)) << Status().dump(2);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Mates({"interrupt", "--team", "levers", "worker"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "interrupted 'worker': its turn ends now, and it waits for a message\n");
  ASSERT_TRUE(testing::WaitUntil([&] { return !SleeperRuns(); }, 10));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 1.0 * MATES_TIME_SCALE) << "the tool ran on for " << took << " s after the interrupt";
  // Idle, said why; its task still its own and in progress (not done, not
  // dropped); it took nothing else meanwhile.
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "idle"; }, 10)) << Status().dump(2);
  EXPECT_NE(Member("worker").value("doing", "").find("interrupted: waits for a message"), std::string::npos)
      << Member("worker").dump(2);
  EXPECT_EQ(TaskStatus(1), "in_progress");
  // Nothing to interrupt now.
  r = Mates({"interrupt", "--team", "levers", "worker"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mates: error: 'worker' is idle: nothing to interrupt\n");
  // A message: it goes on, and what it is told first is why it stopped.
  ASSERT_EQ(Mates({"send", "--team", "levers", "--to", "worker", "Carry on."}).exit_code, 0);
  auto told = Mates({"inbox", "--team", "levers", "user", "--wait", "20"});
  EXPECT_NE(told.out.find("worker -> user (message): I was told of the interrupt"), std::string::npos)
      << told.out << told.err;
}

// The worker's conversation after a restart is its conversation before:
// what the model is sent then holds the word its first prompt gave it,
// and its identity (agent id, colour) is the same.
TEST_F(LeversTest, StopThenRestartKeepsItsIdentityAndItsConversation) {
  testing::ModelServer server(testing::ScenarioFixture("team_levers.yaml"), ws_.path() / "record.jsonl");
  ASSERT_FALSE(server.url().empty());
  Up({"--provider", "anthropic", "--base-url", server.url(), "--sandbox", "off"});
  const Json before = Member("worker");
  double joined = 0;
  {
    auto roster = ParseJson(testing::ReadAll(ws_.path() / ".teams/levers/config.json"));
    ASSERT_TRUE(roster.ok());
    for (const auto& m : (*roster)["members"]) {
      if (m.value("name", "") == "worker") joined = m.value("joined_at", 0.0);
    }
    ASSERT_GT(joined, 0);
  }
  auto r = Mates({"stop", "--team", "levers", "worker"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("asked 'worker' to stop"), std::string::npos) << r.out;
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "shutdown"; }, 30)) << Status().dump(2);
  // Stopped: nothing to stop, nothing to interrupt.
  r = Mates({"stop", "--team", "levers", "worker"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("'worker' is not running (shutdown); `mates restart --team levers worker` brings it back"),
            std::string::npos)
      << r.err;
  r = Mates({"interrupt", "--team", "levers", "worker"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nothing to interrupt"), std::string::npos) << r.err;

  r = Mates({"restart", "--team", "levers", "worker"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "restarted 'worker' (was shutdown), from its journal\n");
  auto back = Mates({"inbox", "--team", "levers", "user", "--wait", "20"});
  EXPECT_NE(back.out.find("worker -> user (message): back again"), std::string::npos) << back.out << back.err;
  const Json after = Member("worker");
  EXPECT_EQ(after.value("color", "a"), before.value("color", "b"));
  auto roster = ParseJson(testing::ReadAll(ws_.path() / ".teams/levers/config.json"));
  ASSERT_TRUE(roster.ok());
  int workers = 0;
  for (const auto& m : (*roster)["members"]) {
    if (m.value("name", "") != "worker") continue;
    ++workers;
    EXPECT_EQ(m.value("agent_id", ""), "worker@levers") << m.dump();
    EXPECT_EQ(m.value("joined_at", 0.0), joined) << "a new member, not the same one back";
  }
  EXPECT_EQ(workers, 1) << roster->dump(2);
  // Running: a restart is refused, with the levers that do apply.
  r = Mates({"restart", "--team", "levers", "worker"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mates: error: 'worker' is running; `mates interrupt --team levers worker` ends its turn, "
                   "`mates stop --team levers worker` stops it\n");

  // The request that told it of the restart carried its earlier turns.
  bool seen = false;
  std::istringstream record(testing::ReadAll(ws_.path() / "record.jsonl"));
  for (std::string line; std::getline(record, line);) {
    if (line.find("You were restarted by the person") == std::string::npos) continue;
    seen = true;
    EXPECT_NE(line.find("The word to remember is marmalade"), std::string::npos)
        << "the restarted worker's request lost its conversation";
    EXPECT_NE(line.find("Stopping."), std::string::npos) << "its shutdown answer is not in its conversation";
  }
  EXPECT_TRUE(seen) << "no request told the worker of its restart";
}

// The issue's report: a teammate whose model server died ended "its turns
// keep failing" and nothing brought it back. Now its attention item says
// `mates restart`, and that, once the server is back, resumes it on its
// task, which it finishes.
TEST_F(LeversTest, ATeammateStoppedByADeadModelServerIsRestartedAndFinishesItsTask) {
  testing::ModelServer server(testing::ScenarioFixture("team_levers.yaml"));
  ASSERT_FALSE(server.url().empty());
  Up({"--provider", "anthropic", "--base-url", server.url(), "--sandbox", "off", "--respawn", "off"});
  server.Stop();
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "quick job"}).exit_code, 0);
  // Three turns of five attempts each, then it stops.
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "shutdown"; }, 120)) << Status().dump(2);
  Json item;
  for (const auto& i : Status().value("attention", Json::array())) {
    if (i.value("kind", "") == "turn_failed" && i.value("link", "") == "agent/worker") item = i;
  }
  ASSERT_FALSE(item.empty()) << Status().dump(2);
  EXPECT_EQ(item.value("hint", ""), "mates restart --team levers worker") << item.dump(2);
  EXPECT_EQ(TaskStatus(1), "in_progress");

  server.Start(server.port());
  auto r = Mates({"restart", "--team", "levers", "worker"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(testing::WaitUntil([&] { return TaskStatus(1) == "completed"; }, 30)) << Status().dump(2);
}

TEST_F(LeversTest, ATaskWithNoTeammateRunningBringsAStoppedOneBack) {
  Up();
  ASSERT_EQ(Mates({"stop", "--team", "levers", "worker"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "shutdown"; }, 30)) << Status().dump(2);
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "quick job"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return TaskStatus(1) == "completed"; }, 30)) << Status().dump(2);
  EXPECT_NE(HostLog().find("respawned worker of team levers for task #1: it waited, and no teammate was running to "
                           "take it (--respawn on-work)"),
            std::string::npos)
      << HostLog();
}

TEST_F(LeversTest, WithRespawnOffATaskWaitsUntilTheWorkerIsRestarted) {
  Up({"--respawn", "off"});
  ASSERT_EQ(Mates({"stop", "--team", "levers", "worker"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "shutdown"; }, 30)) << Status().dump(2);
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "quick job"}).exit_code, 0);
  // The host brings nobody back (with on-work the same task brought the
  // worker back within a second, the test above); after 30 s the task is
  // news, and the hint, as printed, restarts the worker.
  Json item;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        for (const auto& i : Status().value("attention", Json::array())) {
          if (i.value("kind", "") == "task_waiting") item = i;
        }
        return !item.empty();
      },
      45))
      << Status().dump(2);
  EXPECT_EQ(TaskStatus(1), "pending");
  EXPECT_EQ(State("worker"), "shutdown");
  EXPECT_EQ(item.value("subject", ""), "task #1 \"quick job\" waits, and no teammate is running to take it");
  EXPECT_EQ(item.value("hint", ""), "mates restart --team levers worker");
  EXPECT_EQ(item.value("link", ""), "task/1");
  ASSERT_EQ(Mates({"restart", "--team", "levers", "worker"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return TaskStatus(1) == "completed"; }, 30)) << Status().dump(2);
  EXPECT_EQ(HostLog().find("respawned"), std::string::npos) << HostLog();
}

// `mates logs`: each agent's turns, tool calls with their arguments and
// results, by time; one agent, JSON, a span; and, following, a tool call
// shown within 100 ms of the moment it was journaled, just before it ran.
TEST_F(LeversTest, LogsShowWhatTheAgentsDidAndFollowingShowsAToolCallAtOnce) {
  Up();
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "quick job"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return TaskStatus(1) == "completed"; }, 30));
  auto all = Mates({"logs", "--team", "levers"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("worker | ← Task #1: quick job"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("worker | ⏺ TaskUpdate{\"task_id\":\"1\",\"status\":\"completed\"}"), std::string::npos)
      << all.out;
  EXPECT_NE(all.out.find("worker |   ⎿ Updated #1 [completed] quick job"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("lead   | ⏺ Task{"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("lead   | ← Start a worker"), std::string::npos) << all.out;
  EXPECT_LT(all.out.find("lead   | ← Start a worker"), all.out.find("worker | ← Task #1: quick job"));
  auto one = Mates({"logs", "--team", "levers", "worker", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::istringstream lines(one.out);
  double last = 0;
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto j = ParseJson(line);
    ASSERT_TRUE(j.ok()) << line;
    EXPECT_EQ(j->value("agent", ""), "worker");
    EXPECT_GE(j->value("ts", 0.0), last);
    last = j->value("ts", 0.0);
  }
  EXPECT_GE(n, 4);
  EXPECT_EQ(Mates({"logs", "--team", "levers", "--since", "1h"}).out, all.out);
  auto none = Mates({"logs", "--team", "levers", "--since", "0s"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.out, "");
  auto bad = Mates({"logs", "--team", "levers", "--since", "5 minutes"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "mates: error: --since must be a number and a unit: 30s, 10m, 2h or 1d, not '5 minutes'\n");
  bad = Mates({"logs", "--team", "levers", "ghost"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "mates: error: team 'levers' has no member 'ghost' (its members: lead, worker)\n");

  // Following from the start: once it has shown the end of what the
  // journal held (the quick task's last answer), what comes is followed.
  Subprocess follow = testing::Start({testing::MatesBinary(), "--workspace", ws_.path().string(), "logs", "-f",
                                      "--team", "levers", "worker"});
  for (bool updated = false;;) {
    auto line = follow.ReadLine(DeadlineIn(20));
    ASSERT_TRUE(line.ok()) << "the history was not shown";
    updated = updated || line->find("⎿ Updated #1 [completed] quick job") != std::string::npos;
    if (updated && line->find("worker | Noted.") != std::string::npos) break;
  }
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "slow job"}).exit_code, 0);
  double seen = 0;
  for (;;) {
    auto line = follow.ReadLine(DeadlineIn(20));
    ASSERT_TRUE(line.ok()) << "no tool call followed";
    if (line->find("⏺ bash{") != std::string::npos) {
      seen = WallSeconds();
      EXPECT_NE(line->find("mates_levers_sleeper"), std::string::npos) << *line;
      break;
    }
  }
  follow.Signal(SIGTERM);
  double journaled = 0;
  std::istringstream journal(testing::ReadAll(ws_.path() / ".teams/levers/agents/worker.jsonl"));
  for (std::string line; std::getline(journal, line);) {
    if (line.find("\"tool_use\"") != std::string::npos && line.find("mates_levers_sleeper") != std::string::npos) {
      journaled = ParseJson(line)->value("ts", 0.0);
    }
  }
  ASSERT_GT(journaled, 0);
  EXPECT_LT(seen - journaled, 0.1 * MATES_TIME_SCALE)
      << "the tool call was shown " << seen - journaled << " s after it was journaled";
}

// A journal a crash, a disk or a hand left odd: lines of the wrong types,
// missing keys, nulls, a truncated line, a 1 MiB text, deep nesting — each
// shown as far as it makes sense, none thrown on, the good lines kept.
TEST_F(LeversTest, LogsReadAnOddJournalAsFarAsItMakesSense) {
  ASSERT_EQ(Mates({"team", "create", "levers", "--members", "worker"}).exit_code, 0);
  std::string deep = "1";
  for (int i = 0; i < 5000; ++i) deep = "[" + deep + "]";
  const std::vector<std::string> lines = {
      R"({"kind":"message","ts":1,"message":{"role":"user","content":"first, whole"}})",
      R"({"kind":5,"ts":"x","message":null})",
      R"({"kind":"message","ts":2,"message":{"role":7,"content":[{"type":"text","text":9},null,3,{"type":"tool_use","name":5,"input":null},{"type":"tool_result","is_error":"yes","content":{"a":1}}]}})",
      R"({"kind":"usage","ts":3,"usage":{"input_tokens":"many","output_tokens":null},"model":4})",
      R"({"kind":"usage","ts":3,"usage":[1,2]})",
      R"({"kind":"message","ts":4,"message":{"role":"assistant"}})",
      "{\"kind\":\"message\",\"ts\":5,\"message\":{\"role\":\"assistant\",\"content\":\"" + std::string(1 << 20, 'y') + "\"}}",
      deep,
      "\x00\x00\x00",
      R"({"kind":"message","ts":6,"message":{"role":"assistant","content":[{"type":"text","text":"last, whole"}]}})",
      R"({"kind":"message","ts":7,"message":{"role":"assist)",
  };
  std::string journal;
  for (const auto& l : lines) journal += l + "\n";
  testing::WriteAll(ws_.path() / ".teams/levers/agents/worker.jsonl", journal);
  auto r = Mates({"logs", "--team", "levers", "worker"});
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  EXPECT_NE(r.out.find("worker | ← first, whole\n"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("worker | ⏺ ?{}\n"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("worker | · model : 0 in, 0 out\n"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("worker | last, whole\n"), std::string::npos) << r.out.substr(0, 2000);
  EXPECT_EQ(r.out.find("assist"), std::string::npos) << "a truncated line was shown";
  // The 1 MiB text is cut to a line.
  for (std::istringstream in(r.out); std::getline(in, journal);) EXPECT_LT(journal.size(), 400u);
}

// `mates ps`: the teams hosted on this machine, whatever the folder it is
// asked from: two teams in two folders, each with its pid, workspace and
// agents; one gone once it is down.
TEST_F(LeversTest, PsListsTheTeamsHostedInTwoFolders) {
  Up();
  TempDir other;
  auto second = testing::RunMates(other.path(), {"up", "--team", "second", "--no-dashboard", "--provider", "scripted",
                                                 "--scenario", testing::ScenarioFixture("team_levers.yaml")});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  TempDir elsewhere;
  auto listed = [&](const std::string& flag) {
    std::map<std::string, Json> rows;
    std::vector<std::string> args = {"ps", "--json"};
    if (!flag.empty()) args.push_back(flag);
    auto r = testing::RunMates(elsewhere.path(), args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = ParseJson(r.out);
    EXPECT_TRUE(j.ok()) << r.out;
    for (const auto& t : j.ok() ? (*j)["teams"] : Json::array()) {
      const std::string ws = t.value("workspace", "");
      if (ws == fs::canonical(ws_.path()).string() || ws == fs::canonical(other.path()).string()) {
        rows[t.value("team", "")] = t;
      }
    }
    return rows;
  };
  auto rows = listed("");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows["levers"].value("workspace", ""), fs::canonical(ws_.path()).string());
  EXPECT_EQ(rows["second"].value("workspace", ""), fs::canonical(other.path()).string());
  EXPECT_EQ(rows["levers"]["agents"].value("idle", 0), 2) << rows["levers"].dump(2);
  EXPECT_GT(rows["levers"].value("pid", 0), 0);
  EXPECT_GT(rows["levers"].value("tokens", 0), 0);
  EXPECT_TRUE(rows["levers"]["dashboard"].is_null());
  EXPECT_GE(rows["levers"].value("uptime_s", -1.0), 0.0);
  // A cost the table cannot give is explained where it shows.
  auto status = Mates({"status", "--team", "levers"});
  EXPECT_NE(status.out.find("\ncost ?: no price for model scripted (`mates "), std::string::npos) << status.out;
  EXPECT_NE(status.out.find(" --prices FILE` gives one)\n"), std::string::npos) << status.out;
  auto text = testing::RunMates(elsewhere.path(), {"ps"});
  EXPECT_EQ(text.out.rfind("TEAM", 0), 0u) << text.out;
  EXPECT_NE(text.out.find(fs::canonical(other.path()).string()), std::string::npos) << text.out;

  ASSERT_EQ(testing::RunMates(other.path(), {"down", "--team", "second"}).exit_code, 0);
  rows = listed("");
  EXPECT_EQ(rows.count("second"), 0u);
  EXPECT_EQ(rows.count("levers"), 1u);
  // --all: the teams of the asking folder's store that nobody hosts too.
  auto all = testing::RunMates(other.path(), {"ps", "--all", "--json"});
  auto j = ParseJson(all.out);
  ASSERT_TRUE(j.ok()) << all.out << all.err;
  bool unhosted = false;
  for (const auto& t : (*j)["teams"]) {
    if (t.value("team", "") == "second") unhosted = t.value("hosted", true) == false && t["pid"].is_null();
  }
  EXPECT_TRUE(unhosted) << all.out;
}

// The levers are the person's: a sandboxed agent neither reaches the
// host's control socket (its runtime folder is out of the sandbox's sight)
// nor pulls a lever through its gate.
TEST_F(LeversTest, ASandboxedAgentCannotPullTheLevers) {
  Up();
  auto host = ParseJson(testing::ReadAll(ws_.path() / ".teams/levers/host.json"));
  ASSERT_TRUE(host.ok());
  const std::string control = host->value("control", "");
  ASSERT_FALSE(control.empty());
  // Outside, the socket answers (the same probe connects).
  auto outside = testing::Run({testing::SandboxProbe(), "connect", control});
  ASSERT_EQ(outside.exit_code, 0) << outside.out;
  const std::string command = testing::SandboxProbe() + " connect " + control + " > probe.txt 2>&1; " +
                              testing::MatesBinary() + " restart lead >> probe.txt 2>&1; " + testing::MatesBinary() +
                              " attach >> probe.txt 2>&1 < /dev/null; " + testing::MatesBinary() +
                              " report >> probe.txt 2>&1; " + testing::MatesBinary() +
                              " export --bundle b.tgz >> probe.txt 2>&1; echo done >> probe.txt";
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "run " + command}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return testing::ReadAll(ws_.path() / "probe.txt").find("done") != std::string::npos; }, 30));
  const std::string said = testing::ReadAll(ws_.path() / "probe.txt");
  EXPECT_NE(said.find("connect: No such file or directory"), std::string::npos) << said;
  EXPECT_NE(said.find("mates: error: 'mates restart' is the person's: it cannot be run from an agent's sandbox"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("mates: error: 'mates attach' is the person's: it cannot be run from an agent's sandbox"),
            std::string::npos)
      << said;
  // Nor reads every agent's journal through a report or a bundle.
  EXPECT_NE(said.find("mates: error: 'mates report' is the person's: it cannot be run from an agent's sandbox"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("mates: error: 'mates export' is the person's: it cannot be run from an agent's sandbox"),
            std::string::npos)
      << said;
  EXPECT_EQ(State("lead"), "idle");
}

// Fail fast: `up` against a model server that is not there says so and
// exits 1 at once, hosting nothing; --no-preflight hosts anyway; `doctor`
// passes offline on a scenario.
TEST_F(LeversTest, UpAgainstAClosedPortFailsAtOnceAndHostsNothing) {
  const auto t0 = std::chrono::steady_clock::now();
  auto up = Mates({"up", "--team", "levers", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
                   "--no-dashboard", "Start a worker"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(up.exit_code, 1);
  EXPECT_LT(took, 10.0);
  EXPECT_EQ(up.err.rfind("mates: error: the model provider did not answer a first call (openai, model ", 0), 0u)
      << up.err;
  EXPECT_NE(up.err.find("nothing is hosted. Check that the server runs and the base URL (--base-url), or "
                        "--no-preflight to host without this check\n"),
            std::string::npos)
      << up.err;
  EXPECT_EQ(std::count(up.err.begin(), up.err.end(), '\n'), 1) << up.err;
  EXPECT_FALSE(fs::exists(ws_.path() / ".teams/levers/host.json"));
  EXPECT_TRUE(Status()["host"].is_null()) << Status().dump(2);
  // Skipped, the host starts (and its lead's turns fail, said in status).
  auto unchecked = Mates({"up", "--team", "levers", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
                          "--no-dashboard", "--no-preflight"});
  EXPECT_EQ(unchecked.exit_code, 0) << unchecked.err;
  auto doctor = Mates({"doctor", "--provider", "scripted", "--scenario", testing::ScenarioFixture("team_levers.yaml")});
  EXPECT_NE(doctor.out.find("  ok    provider: scripted, model scripted: a minimal call answered"), std::string::npos)
      << doctor.out;
}

// `down` of a worktree team says where its merged work is: on the team's
// target, which the person's checkout does not have until merged.
TEST_F(LeversTest, DownOfAWorktreeTeamSaysWhereItsWorkIs) {
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", ws_.path().string(), "-c", "user.name=t", "-c", "user.email=t@t"});
    return testing::Run(args).exit_code;
  };
  ASSERT_EQ(git({"init", "-q", "-b", "main"}), 0);
  testing::WriteAll(ws_.path() / "README", "the project\n");
  ASSERT_EQ(git({"add", "README"}), 0);
  ASSERT_EQ(git({"commit", "-q", "-m", "initial"}), 0);
  Up({"--isolation", "worktree"});
  auto down = Mates({"down", "--team", "levers"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("the team's merged work is on mates/levers (`git merge mates/levers` brings it into your "
                          "branch)\n"),
            std::string::npos)
      << down.out;
}

// The levers are the lead's too (TeammateControl): a stopped worker is
// brought back by the lead, and is told who did it.
TEST_F(LeversTest, TheLeadRestartsAStoppedTeammateWithItsTool) {
  Up();
  ASSERT_EQ(Mates({"stop", "--team", "levers", "worker"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "shutdown"; }, 30)) << Status().dump(2);
  ASSERT_EQ(Mates({"send", "--team", "levers", "--to", "lead", "Restart the worker"}).exit_code, 0);
  auto told = Mates({"inbox", "--team", "levers", "user", "--wait", "20"});
  EXPECT_NE(told.out.find("worker -> user (message): back again, restarted by the lead"), std::string::npos)
      << told.out << told.err;
  auto logs = Mates({"logs", "--team", "levers", "lead"});
  EXPECT_NE(logs.out.find("restarted 'worker' (was shutdown), from its journal"), std::string::npos) << logs.out;
}

// A circuit breaker (DESIGN §27): a teammate running the same failing
// command again and again is paused after the fifth, with an attention
// item that offers `mates restart`; restarted, it goes on.
TEST_F(LeversTest, ATeammateRepeatingAFailingCallIsPausedAndRestartable) {
  Up();
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "fail forever"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return State("worker") == "shutdown"; }, 30)) << Status().dump(2);
  Json paused;
  for (const auto& item : Status().value("attention", Json::array())) {
    if (item.value("kind", "") == "paused") paused = item;
  }
  ASSERT_FALSE(paused.is_null()) << Status().dump(2);
  EXPECT_EQ(paused.value("subject", ""),
            "worker was paused: the same bash call failed 5 times in a row (last: mates_breaker_fail)");
  EXPECT_EQ(paused.value("hint", ""), "mates restart --team levers worker");
  // Five runs of the command, no sixth.
  auto logs = Mates({"logs", "--team", "levers", "worker", "--json"});
  size_t runs = 0;
  for (size_t at = 0; (at = logs.out.find("echo mates_breaker_fail", at)) != std::string::npos; ++at) ++runs;
  EXPECT_EQ(runs, 5u) << logs.out;
  // Paused is paused: work that waits does not bring it back (the host's
  // respawn looks at every board change within milliseconds; two seconds
  // is its window many times over).
  ASSERT_EQ(Mates({"tasks", "--team", "levers", "create", "quick job"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(State("worker"), "shutdown") << HostLog();
  EXPECT_EQ(HostLog().find("respawned"), std::string::npos) << HostLog();
  // Restarted, it is back and says so; the item is gone.
  auto r = Mates({"restart", "--team", "levers", "worker"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto told = Mates({"inbox", "--team", "levers", "user", "--wait", "20"});
  EXPECT_NE(told.out.find("worker -> user (message): back again"), std::string::npos) << told.out << told.err;
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (const auto& item : Status().value("attention", Json::array())) {
      if (item.value("kind", "") == "paused") return false;
    }
    return true;
  }, 30)) << Status().dump(2);
}

// `mates attach` from a real terminal (a pty of script(1)): a line goes to
// the lead and its answer streams back; Ctrl-C ends its long command at
// once; Ctrl-D detaches and the host goes on.
TEST_F(LeversTest, AttachDrivesTheHostedLeadFromATerminalAndDetachingLeavesItRunning) {
  Up();
  SubprocessOptions o;
  const std::string attach =
      "exec env NO_COLOR=1 '" + testing::MatesBinary() + "' --workspace '" + ws_.str() + "' attach --team levers";
  o.argv = {"script", "-qfec", attach, "/dev/null"};
  o.interactive = true;
  auto started = Subprocess::Start(o);
  ASSERT_TRUE(started.ok()) << started.status().message();
  Subprocess& term = *started;
  std::string seen;
  // Reads the terminal until `text` shows.
  auto until_seen = [&](const std::string& text, double seconds = 30) {
    Deadline d = DeadlineIn(seconds * MATES_TIME_SCALE);
    while (seen.find(text) == std::string::npos) {
      auto line = term.ReadLine(d);
      if (!line.ok()) return false;
      seen += *line + "\n";
    }
    return true;
  };
  auto type = [&](const std::string& keys) { return term.WriteStdin(keys, DeadlineIn(5)).ok(); };
  ASSERT_TRUE(until_seen("attached to 'lead', the lead of team levers")) << seen;

  ASSERT_TRUE(type("Say hello back\n"));
  ASSERT_TRUE(until_seen("Hello, person; the worker is ready.")) << seen;
  EXPECT_NE(seen.find("from user: Say hello back"), std::string::npos) << "the lead took it as the person's:\n" << seen;

  ASSERT_TRUE(type("Sleep a while\n"));
  ASSERT_TRUE(testing::WaitUntil([&] { return !testing::ProcessesIn("^mates_levers_lead_sleeper", ws_.path()).empty(); }, 30))
      << seen;
  ASSERT_TRUE(until_seen("⏺ bash")) << seen;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(type("\x03"));  // Ctrl-C, as the terminal sends it: SIGINT to attach
  ASSERT_TRUE(testing::WaitUntil([&] { return testing::ProcessesIn("^mates_levers_lead_sleeper", ws_.path()).empty(); }, 10));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 1.0 * MATES_TIME_SCALE) << "the lead's command ran on for " << took << " s after Ctrl-C";
  ASSERT_TRUE(until_seen("interrupted the lead 'lead'")) << seen;

  // Ctrl-D (after the 1.5 s a second Ctrl-C would detach in): detached,
  // and the host goes on.
  ASSERT_TRUE(type("\x04"));
  ASSERT_TRUE(until_seen("detached: team levers goes on")) << seen;
  SubprocessResult ended = term.Wait();
  EXPECT_EQ(ended.exit_code, 0) << seen;
  EXPECT_EQ(Member("lead").value("state", ""), "idle") << Status().dump(2);
  EXPECT_EQ(State("worker"), "idle") << Status().dump(2);
  // `run` of a hosted team points to attach.
  auto run = Mates({"run", "--team", "levers", "--provider", "scripted", "--scenario",
                    testing::ScenarioFixture("team_levers.yaml"), "Say hello back"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("is already running in another process (`mates up`, pid "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("`mates attach --team levers` joins its conversation"), std::string::npos) << run.err;
  // Attached again, it is the same host and the same lead.
  auto again = Mates({"attach", "--team", "levers"}, 30);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("attached to 'lead'"), std::string::npos) << again.err;
}

TEST_F(LeversTest, BadInputsGetOneClearErrorEach) {
  // A team nobody hosts has no levers.
  ASSERT_EQ(Mates({"team", "create", "levers"}).exit_code, 0);
  auto r = Mates({"restart", "--team", "levers", "lead"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("mates: error: team 'levers' is not hosted here, so nothing runs its agents; `mates ", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find(" up --team levers` hosts it\n"), std::string::npos) << r.err;
  r = Mates({"attach", "--team", "levers"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("mates: error: team 'levers' is not hosted here", 0), 0u) << r.err;
  ASSERT_EQ(Mates({"team", "delete", "levers"}).exit_code, 0);
  Up();
  // Four terminals attached: a fifth is refused, and says why.
  std::vector<Subprocess> terminals;
  for (int i = 0; i < 4; ++i) {
    SubprocessOptions o;
    o.argv = {testing::MatesBinary(), "--workspace", ws_.str(), "attach", "--team", "levers"};
    o.interactive = true;  // stdin stays open: it stays attached
    o.merge_stderr = true;
    auto t = Subprocess::Start(o);
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto hello = t->ReadLine(DeadlineIn(30));
    ASSERT_TRUE(hello.ok() && hello->find("attached to 'lead'") != std::string::npos) << (hello.ok() ? *hello : "");
    terminals.push_back(std::move(*t));
  }
  r = Mates({"attach", "--team", "levers"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "mates: error: 4 terminals are attached to this host already: detach one first\n");
  for (auto& t : terminals) {
    t.CloseStdin();  // Ctrl-D
    EXPECT_EQ(t.Wait().exit_code, 0);
  }
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"stop", "--team", "levers", "nobody"}, 1,
       "mates: error: team 'levers' has no member 'nobody' (its members: lead, worker)\n"},
      {{"restart", "--team", "levers", "lead"}, 1,
       "mates: error: 'lead' is the team's lead: it runs as long as its host (`mates down` stops it, `mates up` "
       "brings it back)\n"},
      {{"stop", "--team", "levers", "lead"}, 1,
       "mates: error: 'lead' is the team's lead: it runs as long as its host (`mates down` stops it, `mates up` "
       "brings it back)\n"},
      {{"interrupt", "--team", "levers", "lead"}, 1, "mates: error: the lead 'lead' is idle: nothing to interrupt\n"},
      {{"restart", "--team", "levers", "worker"}, 1,
       "mates: error: 'worker' is running; `mates interrupt --team levers worker` ends its turn, `mates stop --team "
       "levers worker` stops it\n"},
      {{"interrupt", "--team", "nosuch", "worker"}, 1, "mates: error: no team 'nosuch' in " + ws_.path().string() + "\n"},
      {{"attach", "--team", "nosuch"}, 1, "mates: error: no team 'nosuch' in " + ws_.path().string() + "\n"},
      {{"attach", "--team", "../x"}, 2, ""},
      {{"interrupt", "--team", "levers", "../w"}, 2, ""},
      {{"interrupt", "--team", "levers"}, 2, ""},
      {{"stop", "--team", "levers", "worker", "--reason", std::string(5000, 'x')}, 1,
       "mates: error: the reason is longer than 4 KiB\n"},
  };
  for (const auto& c : cases) {
    r = Mates(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args[0] << " " << c.args.back() << ": " << r.out << r.err;
    if (!c.err.empty()) {
      EXPECT_EQ(r.err, c.err) << c.args[0] << " " << c.args.back();
    } else {
      // One error, on one line.
      EXPECT_EQ(r.err.rfind("mates: error: ", 0), 0u) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  // The worker was left alone by all of them.
  EXPECT_EQ(State("worker"), "idle");
}

}  // namespace
}  // namespace mates
