// mates' own runtime on the PostgreSQL store (DESIGN §13): a TeamManager
// whose team is kept in a real server's database hosts teammates that take
// their messages from its inboxes, claim from its board, write their
// statuses to its roster and hold their liveness there; only their journals
// stay in the host's workspace.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "agent/agent_loop.h"
#include "agent/journal.h"
#include "core/clock.h"
#include "core/limits.h"
#include "core/process_tree.h"
#include "core/subprocess.h"
#include "core/waker.h"
#include "llm/scripted.h"
#include "pg/connection.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "store/host_info.h"
#include "store/messenger.h"
#include "store/team_store.h"
#include "support/chaos.h"
#include "support/pg_suite.h"
#include "support/test_env.h"
#include "support/test_util.h"
#include "team/team_manager.h"
#include "tools/builtin_tools.h"

namespace mates {
namespace {

using testing::PgServer;
using testing::RunMates;
using testing::ReadAll;
using testing::TempDir;

class PgRuntimeTest : public testing::PgTeamsSuite {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenDatabase("r"));
    ASSERT_TRUE(teams_->CreateTeam("crew", "lead", "").ok());
  }

  // A host: a lead (whose loop never runs) and the TeamManager with its
  // teammates, in a workspace of its own, on the database.
  struct Host {
    Workspace ws;
    tools::ToolContext ctx;
    std::unique_ptr<tools::ToolRegistry> tools;
    std::unique_ptr<agent::AgentLoop> lead;
    std::unique_ptr<team::TeamManager> manager;
    Host(const fs::path& dir, llm::Provider* provider, TeamStore* store) : ws(dir), ctx(ws, *store) {
      ctx.team = "crew";
      ctx.agent = "lead";
      ctx.is_lead = true;
      tools = tools::MakeToolRegistry(tools::Scope::kLead);
      agent::AgentSpec spec;
      spec.name = "lead";
      spec.system = "the lead";
      lead = std::make_unique<agent::AgentLoop>(spec, provider, tools.get(), &ctx, nullptr);
      team::TeamOptions opt;
      opt.idle_timeout_s = 0;
      manager = std::make_unique<team::TeamManager>(ws, provider, nullptr, opt, lead.get(), &ctx);
      ctx.teams = manager.get();
    }
    ~Host() { Stop(); }
    void Stop() {
      if (!manager) return;
      manager->StopAll();
      manager.reset();  // its teammates, and their liveness locks, go
    }
  };

  // w1 spawned at `h` and idle once its first turn is done: a new
  // member's roster line says idle from the start, so the lead's news (told
  // after the roster is written) is what says the host has nothing more to
  // write of it.
  static void SpawnW1(Host& h) {
    auto r = h.manager->SpawnTeammate({.team = "crew", .name = "w1", .prompt = "Work from the board."});
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(testing::WaitUntil([&] { return h.manager->news().Pending(); }, 30));
  }

  // Waits (woken by `watch`'s notifications) until `done` or 60 s.
  template <typename Fn>
  bool Until(const std::shared_ptr<Waker>& waker, Fn done) {
    return testing::UntilWoken(waker, done);
  }

  // The tool calls in the journals' copies of `members`: how many times
  // each task was updated (by id), and how many bash calls there were.
  struct ToolCalls {
    std::map<std::string, int> task_updates;
    int bash = 0;
  };
  ToolCalls CallsIn(const std::string& team, const std::vector<std::string>& members) {
    ToolCalls calls;
    for (const auto& member : members) {
      auto lines = teams_->JournalOf(team, member)->Lines();
      EXPECT_TRUE(lines.ok()) << member << ": " << lines.status().message();
      if (!lines.ok()) continue;
      for (const auto& l : *lines) {
        auto j = ParseJson(l);
        if (!j.ok() || (*j)["kind"] != "message" || (*j)["message"]["role"] != "assistant") continue;
        for (const auto& block : (*j)["message"]["content"]) {
          if (block.value("type", "") != "tool_use") continue;
          if (block["name"] == "TaskUpdate") calls.task_updates[block["input"]["task_id"].get<std::string>()]++;
          if (block["name"] == "bash") ++calls.bash;
        }
      }
    }
    return calls;
  }

  TempDir dir_;
};

// `mates down --store` of `team`'s host in `ws` when the test ends;
// whatever happened to down, the host does not outlive the test.
// (The host is the one host.json named when this was made, and then: a
// down that failed may have removed the file.)
struct DownAtExit {
  fs::path ws;
  std::string url, team;
  Result<HostInfo> started = ReadHostInfo(Workspace(ws), team);
  ~DownAtExit() {
    RunMates(ws, {"down", "--store", url, "--team", team, "--grace", "0", "--timeout", "5"});
    for (const auto& info : {started, ReadHostInfo(Workspace(ws), team)}) {
      if (info.ok() && ProcessLives(static_cast<pid_t>(info->pid), info->start_time)) {
        ::kill(static_cast<pid_t>(info->pid), SIGKILL);
      }
    }
  }
};

// The first rules of a scenario: on "Go" the lead spawns `worker` into
// `team` to work through the board, and notes whatever comes after.
std::string LeadSpawnsOnGo(const std::string& team, const std::string& worker) {
  return "rules:\n"
         "  - agent: lead\n    when: \"Go\"\n"
         "    reply: [{type: tool_use, name: Task, input: {team_name: " + team + ", name: " + worker +
         ", description: worker, prompt: \"Work through the tasks on the board.\"}}]\n"
         "  - agent: lead\n    once: false\n    reply: [{type: text, text: \"Noted.\"}]\n";
}

std::shared_ptr<llm::Scenario> Scenario() {
  auto s = llm::Scenario::Parse("rules:\n" + testing::CompleteTaskRule() +
                                    "  - agent: \"w*\"\n"
                                    "    when: \"ping (\\\\w+)\"\n"
                                    "    once: false\n"
                                    "    reply: [{type: tool_use, name: SendMessage, input: "
                                    "{recipient: lead, content: \"pong $1\"}}]\n" +
                                    testing::DoneRule(),
                                "pg_runtime.yaml");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::make_shared<llm::Scenario>(std::move(*s));
}

TEST_F(PgRuntimeTest, TeammatesWorkFromTheDatabaseAndOnlyTheirJournalsAreLocal) {
  llm::ScriptedProvider provider(Scenario());
  auto board = teams_->Board("crew");
  // Two levels: 4 tasks, then 2 blocked by all of them.
  for (int i = 1; i <= 6; ++i) {
    TaskDraft d;
    d.subject = "t" + std::to_string(i);
    if (i > 4) d.blocked_by = {1, 2, 3, 4};
    ASSERT_TRUE(board->Create(d).ok());
  }
  auto waker = std::make_shared<Waker>();
  auto board_watch = teams_->WatchBoard("crew", waker);
  ASSERT_TRUE(board_watch.ok()) << board_watch.status().message();
  Host host(dir_.path() / "a", &provider, teams_.get());
  for (const char* name : {"w1", "w2"}) {
    auto r = host.manager->SpawnTeammate({.team = "crew", .name = name, .prompt = "Work from the board."});
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  // Every task completed, each by one of them, once.
  ASSERT_TRUE(Until(waker, [&] {
    auto tasks = board->List(false);
    return tasks.ok() && std::all_of(tasks->begin(), tasks->end(),
                                     [](const Task& t) { return t.status == TaskStatus::kCompleted; });
  })) << "the tasks were not all completed";
  auto done = board->List(false);
  ASSERT_TRUE(done.ok());
  std::map<std::string, int> by;
  for (const auto& t : *done) by[t.owner]++;
  EXPECT_EQ(by["w1"] + by["w2"], 6);
  EXPECT_EQ(by.size(), 2u) << "a task without one of the teammates as its owner";

  // The roster is the database's: both members, hosted (their liveness
  // locks are held by this host).
  auto team = teams_->LoadTeam("crew");
  ASSERT_TRUE(team.ok());
  ASSERT_NE(team->Find("w1"), nullptr);
  ASSERT_NE(team->Find("w2"), nullptr);
  EXPECT_TRUE(teams_->IsHosted("crew", "w1"));
  EXPECT_TRUE(teams_->IsHosted("crew", "w2"));

  // A send from another process (the person's CLI, another workspace)
  // wakes w1, whose answer reaches the lead's inbox in the database.
  auto lead_waker = std::make_shared<Waker>();
  auto lead_inbox = teams_->InboxOf("crew", "lead");
  auto lead_watch = lead_inbox->WatchWith(lead_waker);
  ASSERT_TRUE(lead_watch.ok());
  TempDir elsewhere;
  auto sent = RunMates(elsewhere.path(), {"send", "--store", url_, "--team", "crew", "--to", "w1", "ping db"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  ASSERT_TRUE(Until(lead_waker, [&] {
    auto msgs = lead_inbox->Peek();
    return msgs.ok() && std::any_of(msgs->begin(), msgs->end(), [](const Message& m) {
             return m.sender == "w1" && m.content.find("pong db") != std::string::npos;
           });
  })) << "w1 did not answer through the database";

  // A second host cannot host w1 too: its liveness is held here.
  Host other(dir_.path() / "b", &provider, teams_.get());
  auto twice = other.manager->SpawnTeammate({.team = "crew", .name = "w1", .prompt = "again"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("already running in another process"), std::string::npos)
      << twice.status().message();

  // The team's state is not in the host's workspace: no roster, no board,
  // no inboxes; the journals are.
  const Workspace& ws = host.ws;
  EXPECT_FALSE(fs::exists(ws.TeamDir("crew") / "config.json"));
  EXPECT_FALSE(fs::exists(ws.TasksDir("crew")));
  EXPECT_FALSE(fs::exists(ws.TeamDir("crew") / Workspace::InboxFileName("w1")));
  EXPECT_TRUE(fs::exists(ws.AgentsDir("crew") / "w1.jsonl"));

  // Stopped by its host, a teammate is left resumable (idle) and no longer
  // hosted.
  host.Stop();
  EXPECT_FALSE(teams_->IsHosted("crew", "w1"));
  auto after = teams_->LoadTeam("crew");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->Find("w1")->status, MemberStatus::kIdle);
}

// `mates run --store`: the lead, its teammates and the shutdown protocol
// (three teammates: one approves, one refuses, one never answers) with the
// team in the database; the host's workspace keeps only journals.
// Idle teammates wait in the store's claim line: a completion that
// unblocks a level wakes as many of them as it unblocked, at once, not one
// by one as each finishes (a task here takes 3 s: the level is claimed
// long before any of it is done).
TEST_F(PgRuntimeTest, ACompletionSetsTheIdleTeammatesToItsWholeLevelAtOnce) {
  auto scenario = llm::Scenario::Parse("rules:\n"
                                       "  - agent: \"w*\"\n"
                                       "    when: \"Task #1:\"\n"
                                       "    once: false\n"
                                       "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"1\", "
                                       "status: completed}}]\n"
                                       "  - agent: \"w*\"\n"
                                       "    when: \"Task #(\\\\d+):\"\n"
                                       "    once: false\n"
                                       "    delay_ms: 3000\n"
                                       "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", "
                                       "status: completed}}]\n" +
                                           testing::DoneRule(),
                                       "level.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  llm::ScriptedProvider provider(std::make_shared<llm::Scenario>(std::move(*scenario)));
  auto board = teams_->Board("crew");
  auto waker = std::make_shared<Waker>();
  auto roster_watch = teams_->WatchRoster("crew", waker);
  auto board_watch = teams_->WatchBoard("crew", waker);
  ASSERT_TRUE(roster_watch.ok() && board_watch.ok());
  Host host(dir_.path() / "a", &provider, teams_.get());
  for (const char* name : {"w1", "w2", "w3", "w4"}) {
    auto r = host.manager->SpawnTeammate({.team = "crew", .name = name, .prompt = "Work from the board."});
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  auto all_idle = [&] {
    auto team = teams_->LoadTeam("crew");
    if (!team.ok()) return false;
    for (const char* name : {"w1", "w2", "w3", "w4"}) {
      const Member* m = team->Find(name);
      if (m == nullptr || m->status != MemberStatus::kIdle) return false;
    }
    return true;
  };
  ASSERT_TRUE(Until(waker, all_idle)) << "the teammates did not all go idle";
  // The gate, and a level of three behind it.
  TaskDraft d;
  d.subject = "gate";
  ASSERT_TRUE(board->Create(d).ok());
  d.blocked_by = {1};
  for (const char* s : {"a", "b", "c"}) {
    d.subject = s;
    ASSERT_TRUE(board->Create(d).ok());
  }
  std::set<std::string> owners;
  ASSERT_TRUE(Until(waker, [&] {
    auto tasks = board->List(false);
    if (!tasks.ok() || tasks->size() != 4) return false;
    owners.clear();
    for (const auto& t : *tasks) {
      if (t.id == 1) continue;
      if (t.status != TaskStatus::kInProgress) return false;
      owners.insert(t.owner);
    }
    return true;
  })) << "the level was not in progress all at once";
  EXPECT_EQ(owners.size(), 3u) << "one teammate each";
  auto tasks = board->List(false);
  ASSERT_TRUE(tasks.ok());
  for (const auto& t : *tasks) {
    const TaskStatus want = t.id == 1 ? TaskStatus::kCompleted : TaskStatus::kInProgress;
    EXPECT_EQ(t.status, want) << "task #" << t.id;
  }
}

TEST_F(PgRuntimeTest, RunKeepsItsTeamInTheDatabase) {
  TempDir ws;
  auto r = RunMates(ws.path(), {"run", "--store", url_, "--provider", "scripted", "--scenario",
                                testing::ScenarioFixture("team_protocols.yaml"), "--shutdown-timeout", "2", "Start"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("LEAD SAW REJECTION: I am in the middle of the migration."), std::string::npos) << r.out;
  // The roster: created by TeamCreate in the database, with how each ended.
  auto team = teams_->LoadTeam("proto");
  ASSERT_TRUE(team.ok()) << team.status().message();
  ASSERT_NE(team->Find("stubborn"), nullptr);
  EXPECT_EQ(team->Find("agreeable")->status, MemberStatus::kShutdown);
  EXPECT_EQ(team->Find("silent")->status, MemberStatus::kShutdown);
  EXPECT_EQ(team->Find("stubborn")->status, MemberStatus::kIdle);  // it refused; resumable
  EXPECT_TRUE(teams_->LoadTeam("default").ok()) << "the team the run started in";
  // The requests and the log are the database's.
  auto requests = teams_->Mail("proto")->ListRequests();
  ASSERT_TRUE(requests.ok());
  std::map<std::string, std::string> outcome;
  for (const auto& q : *requests) {
    if (q.kind == RequestKind::kShutdown) outcome[q.responder] = std::string(RequestStateName(q.status));
  }
  EXPECT_EQ(outcome["agreeable"], "approved");
  EXPECT_EQ(outcome["stubborn"], "rejected");
  EXPECT_EQ(outcome["silent"], "pending");
  bool saw_error = false;
  ASSERT_TRUE(teams_->ReadLog("proto", [&](const Message& m) {
    saw_error |= m.sender == "stubborn" && m.content.find("unknown recipient 'nobody'") != std::string::npos;
  }).ok());
  EXPECT_TRUE(saw_error) << "the model did not see the unknown-recipient error";
  // Nobody hosts them now.
  EXPECT_FALSE(teams_->IsHosted("proto", "lead"));
  EXPECT_FALSE(teams_->IsHosted("proto", "stubborn"));
  // The workspace has the journals, and none of the team's state.
  EXPECT_TRUE(fs::exists(ws.path() / ".teams/proto/agents/lead.jsonl"));
  EXPECT_TRUE(fs::exists(ws.path() / ".teams/proto/agents/stubborn.jsonl"));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/proto/config.json"));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/default/config.json"));
  EXPECT_FALSE(fs::exists(ws.path() / ".tasks"));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/proto/lead_inbox.jsonl"));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/proto/messages.jsonl"));
  // Its post-mortem from another machine (DESIGN §31): the journals'
  // copies, the log and the requests are the database's.
  TempDir elsewhere;
  auto report = RunMates(elsewhere.path(), {"report", "--team", "proto", "--store", url_, "--json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  auto post = ParseJson(report.out);
  ASSERT_TRUE(post.ok()) << report.out;
  std::map<std::string, int> calls;
  for (const auto& a : (*post)["agents"]) calls[a.value("name", "")] = a.value("calls", 0);
  EXPECT_GT(calls["lead"], 0) << report.out;
  EXPECT_GT(calls["stubborn"], 0) << report.out;
  EXPECT_GT((*post)["messages"].value("total", 0), 0);
  EXPECT_NE((*post)["failures"].dump().find("stubborn declined to shut down when lead asked"), std::string::npos)
      << (*post)["failures"].dump(2);
  // Its bundle, made from the database, imported on a third machine.
  const std::string bundle = (elsewhere.path() / "proto.tgz").string();
  auto exported = RunMates(elsewhere.path(), {"export", "--team", "proto", "--store", url_, "--bundle", bundle});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  TempDir third;
  ASSERT_EQ(RunMates(third.path(), {"import", bundle}).exit_code, 0);
  auto read_there = ParseJson(RunMates(third.path(), {"report", "--team", "proto", "--archived", "--json"}).out);
  ASSERT_TRUE(read_there.ok());
  EXPECT_EQ((*read_there)["agents"], (*post)["agents"]);
  EXPECT_EQ((*read_there)["failures"], (*post)["failures"]);
  EXPECT_EQ((*read_there)["messages"]["total"], (*post)["messages"]["total"]);

  // Bad input: one clear error each, no password shown.
  auto iso = RunMates(ws.path(), {"run", "--store", url_, "--provider", "scripted", "--scenario",
                                  testing::ScenarioFixture("team_protocols.yaml"), "--isolation", "worktree", "Start"});
  EXPECT_EQ(iso.exit_code, 1) << iso.err;
  EXPECT_NE(iso.err.find("is not a git repository"), std::string::npos) << iso.err;
  TempDir repo;  // a repository with no remote: its work could reach no other machine
  ASSERT_EQ(testing::Run({"git", "-C", repo.str(), "init", "-q"}).exit_code, 0);
  ASSERT_EQ(testing::Run({"git", "-C", repo.str(), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                          "--allow-empty", "-m", "first"})
                .exit_code,
            0);
  auto lone = RunMates(repo.path(), {"run", "--store", url_, "--provider", "scripted", "--scenario",
                                     testing::ScenarioFixture("team_protocols.yaml"), "--isolation", "worktree", "Start"});
  EXPECT_EQ(lone.exit_code, 1) << lone.err;
  EXPECT_NE(lone.err.find("has no git remote 'origin'"), std::string::npos) << lone.err;
  auto gone = RunMates(ws.path(), {"run", "--store", "postgres://u:hunter2@127.0.0.1:1/x", "--provider", "scripted",
                                   "--scenario", testing::ScenarioFixture("team_protocols.yaml"), "Start"});
  EXPECT_EQ(gone.exit_code, 1) << gone.err;
  EXPECT_EQ(gone.err.find("hunter2"), std::string::npos) << gone.err;
  auto scheme = RunMates(ws.path(), {"run", "--store", "mysql://x", "--provider", "scripted", "--scenario",
                                     testing::ScenarioFixture("team_protocols.yaml"), "Start"});
  EXPECT_EQ(scheme.exit_code, 2) << scheme.err;
}

// `mates up --store` hosts a team whose state is in the database: a person
// on another machine (another workspace) talks to its lead and gives its
// worker a task with nothing but the database between them; `down --store`
// asks the worker to stop and stops the host.
TEST_F(PgRuntimeTest, UpHostsATeamThatAnotherMachineTalksTo) {
  TempDir host_ws, elsewhere;
  auto up = RunMates(host_ws.path(), {"up", "--store", url_, "--team", "hosted", "--provider", "scripted",
                                      "--scenario", testing::ScenarioFixture("team_hosted.yaml"), "Start a worker"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  DownAtExit down_at_exit{host_ws.path(), url_, "hosted"};
  EXPECT_TRUE(teams_->IsHosted("hosted", "lead"));
  auto other = [&](std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--store", url_});
    return RunMates(elsewhere.path(), args);
  };
  // Another machine cannot host the same team's lead.
  auto twice = other({"up", "--team", "hosted", "--provider", "scripted", "--scenario",
                      testing::ScenarioFixture("team_hosted.yaml")});
  EXPECT_EQ(twice.exit_code, 1) << twice.out << twice.err;
  EXPECT_NE(twice.err.find("already running in another process (on this machine or another)"), std::string::npos)
      << twice.err;
  // The worker is spawned by the lead's goal, into the database's roster.
  auto waker = std::make_shared<Waker>();
  auto roster_watch = teams_->WatchRoster("hosted", waker);
  ASSERT_TRUE(roster_watch.ok());
  ASSERT_TRUE(Until(waker, [&] {
    auto t = teams_->LoadTeam("hosted");
    return t.ok() && t->Find("worker") != nullptr && teams_->IsHosted("hosted", "worker");
  })) << ReadAll(host_ws.path() / ".teams/hosted/host.log");
  // A message from another machine reaches the lead, whose answer comes back.
  auto sent = other({"send", "--team", "hosted", "--to", "lead", "ping db"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  auto answer = other({"inbox", "--team", "hosted", "user", "--wait", "30"});
  EXPECT_EQ(answer.exit_code, 0) << answer.err;
  EXPECT_NE(answer.out.find("pong db"), std::string::npos) << answer.out << answer.err;
  // A task from another machine is claimed by the hosted worker.
  auto made = other({"tasks", "create", "--team", "hosted", "Sort the imports"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto board_watch = teams_->WatchBoard("hosted", waker);
  ASSERT_TRUE(board_watch.ok());
  auto board = teams_->Board("hosted");
  ASSERT_TRUE(Until(waker, [&] {
    auto t = board->Get(1);
    return t.ok() && t->owner == "worker";
  })) << ReadAll(host_ws.path() / ".teams/hosted/host.log");
  // It serves the team's dashboard, as on the file store.
  EXPECT_FALSE(testing::PrintedDashboardUrl(up.out).empty()) << up.out;
  // Down, with the store: the worker is asked, the host stops, nobody is hosted.
  auto down = RunMates(host_ws.path(), {"down", "--store", url_, "--team", "hosted", "--grace", "1"});
  EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  EXPECT_NE(down.out.find("asked 1 teammate(s) to stop"), std::string::npos) << down.out << down.err;
  EXPECT_NE(down.out.find("is down"), std::string::npos) << down.out;
  EXPECT_FALSE(teams_->IsHosted("hosted", "lead"));
  EXPECT_FALSE(teams_->IsHosted("hosted", "worker"));
  auto requests = teams_->Mail("hosted")->ListRequests();
  ASSERT_TRUE(requests.ok());
  EXPECT_TRUE(std::any_of(requests->begin(), requests->end(), [](const ProtocolRequest& q) {
    return q.kind == RequestKind::kShutdown && q.responder == "worker";
  })) << "down did not ask the worker through the database";
}

// The journal's copy in the database (DESIGN §13): lines numbered as the
// file holds them, an append retried is not doubled, a gap ends what is
// read (and what lay past it is overwritten), and a file and its copy are
// reconciled in each direction.
TEST_F(PgRuntimeTest, AJournalsCopyFollowsItsFileAndWinsOverAStaleOne) {
  std::unique_ptr<JournalCopy> copy = teams_->JournalOf("crew", "w1");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(FileTeamStore(Workspace(dir_.path()), testing::TestEnv())->JournalOf("crew", "w1"), nullptr) << "files are their own copy";
  ASSERT_TRUE(copy->Put(0, {"a", "b"}).ok());
  ASSERT_TRUE(copy->Put(1, {"b", "c"}).ok());  // the answer to the first lost: sent again
  EXPECT_EQ(*copy->Lines(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(copy->Put(4, {"after a gap"}).ok());
  EXPECT_EQ(*copy->Lines(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(copy->Put(3, {"d", "e"}).ok());
  EXPECT_EQ(*copy->Lines(), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(copy->Put(-1, {"x"}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(copy->Replace({"new"}).ok());
  EXPECT_EQ(*copy->Lines(), (std::vector<std::string>{"new"}));
  EXPECT_EQ(teams_->JournalOf("crew", "../x")->Lines().status().code(), StatusCode::kInvalidArgument);

  // A file ahead of its copy (written while the server was away) sends
  // its later lines; the journal then writes both.
  const fs::path path = dir_.path() / "w1.jsonl";
  ASSERT_TRUE(WriteFileAtomic(path, "new\nlater\ntorn").ok());
  auto held = agent::Journal::Reconcile(path, *copy);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(*held, 2);
  EXPECT_EQ(*copy->Lines(), (std::vector<std::string>{"new", "later"}));
  {
    auto j = agent::Journal::Open(path);
    ASSERT_TRUE(j.ok());
    j->CopyTo(teams_->JournalOf("crew", "w1"), *held);
    ASSERT_TRUE(j->AppendDelivered({"m-1"}).ok());
  }
  auto lines = copy->Lines();
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ(lines->back() + "\n", ReadAll(path).substr(ReadAll(path).size() - lines->back().size() - 1));

  // A copy ahead of the file (another host went on): the file is written
  // from it.
  ASSERT_TRUE(copy->Put(3, {"elsewhere"}).ok());
  held = agent::Journal::Reconcile(path, *copy);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(*held, 4);
  EXPECT_EQ(ReadAll(path), "new\nlater\n" + (*lines)[2] + "\nelsewhere\n");
  // No file at all (a machine that never hosted it): the same.
  const fs::path fresh = dir_.path() / "other" / "w1.jsonl";
  ASSERT_EQ(*agent::Journal::Reconcile(fresh, *copy), 4);
  EXPECT_EQ(ReadAll(fresh), ReadAll(path));
  // Both changed since they parted: the copy wins, the file is kept aside.
  ASSERT_TRUE(WriteFileAtomic(path, "new\nstale\n").ok());
  ASSERT_EQ(*agent::Journal::Reconcile(path, *copy), 4);
  EXPECT_EQ(ReadAll(path), ReadAll(fresh));
  int aside = 0;
  for (const auto& e : fs::directory_iterator(dir_.path())) {
    if (e.path().filename().string().rfind("w1.jsonl.superseded-", 0) == 0) {
      ++aside;
      EXPECT_EQ(ReadAll(e.path()), "new\nstale\n");
    }
  }
  EXPECT_EQ(aside, 1);
}

// Two hosts with workspaces of their own (two machines) on one team: a
// teammates-only host (`up --teammates`) adopts a teammate joined to the
// roster, the lead's host (`up`) spawns another, and both claim from the
// one board. The teammates host is killed with -9 while its teammate runs a
// tool for its task; the lead's host adopts that teammate, resumes it from
// its journal's copy in the database (the tool call answered as
// interrupted), and it finishes the task: every task completed once.
TEST_F(PgRuntimeTest, TwoHostsShareATeamAndOneResumesTheOthersTeammateAfterKillNine) {
  TempDir lead_ws, mate_ws;
  const fs::path gate = dir_.path() / "gate";
  ASSERT_EQ(::mkfifo(gate.c_str(), 0600), 0);
  const std::string yaml =
      LeadSpawnsOnGo("duo", "w2") +
      "  - agent: \"w*\"\n    when: \"interrupted: the agent was restarted\"\n    once: false\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"1\", status: completed}}]\n"
      "  - agent: \"w*\"\n    when: \"Task #1: held\"\n"
      "    reply: [{type: tool_use, name: bash, input: {command: \"read -r line < " + gate.string() + "\"}}]\n"
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+):\"\n    once: false\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
      "  - agent: \"*\"\n    once: false\n    reply: [{type: text, text: \"Done.\"}]\n";
  const fs::path scenario = dir_.path() / "duo.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, yaml).ok());
  auto mates = [&](const fs::path& ws, std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--store", url_});
    return RunMates(ws, args);
  };
  struct Cleanup {
    std::vector<fs::path> ws;
    std::string url;
    fs::path gate;
    ~Cleanup() {
      for (const auto& w : ws) {
        RunMates(w, {"down", "--store", url, "--team", "duo", "--grace", "0", "--timeout", "5"});
        auto info = ReadHostInfo(Workspace(w), "duo");
        if (info.ok() && ProcessStartTime(static_cast<pid_t>(info->pid)) == info->start_time) {
          ::kill(static_cast<pid_t>(info->pid), SIGKILL);
        }
      }
      // A reader still waiting at the gate is let go.
      int fd = ::open(gate.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  } cleanup{{lead_ws.path(), mate_ws.path()}, url_, gate};

  // The team, a teammate anyone may host, and the board: #1 is w1's.
  ASSERT_EQ(mates(lead_ws.path(), {"team", "create", "duo"}).exit_code, 0);
  auto joined = mates(mate_ws.path(), {"team", "join", "duo", "w1", "--backend", "in-process"});
  ASSERT_EQ(joined.exit_code, 0) << joined.err;
  ASSERT_EQ(mates(lead_ws.path(), {"tasks", "create", "--team", "duo", "held"}).exit_code, 0);
  ASSERT_EQ(mates(lead_ws.path(), {"tasks", "update", "--team", "duo", "1", "--owner", "w1"}).exit_code, 0);
  for (int i = 2; i <= 7; ++i) {
    ASSERT_EQ(mates(lead_ws.path(), {"tasks", "create", "--team", "duo", "plain " + std::to_string(i)}).exit_code, 0);
  }
  // `head`, then the team and the scripted provider, then `tail`. Without
  // the sandbox: the gate is a FIFO beside the workspaces, where a
  // sandboxed tool sees nothing (its /tmp is its own).
  auto command = [&](std::vector<std::string> head, const std::string& team, std::vector<std::string> tail = {}) {
    for (const auto& a : {std::string("--team"), team, std::string("--provider"), std::string("scripted"),
                          std::string("--scenario"), scenario.string(), std::string("--sandbox"), std::string("off")}) {
      head.push_back(a);
    }
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };

  // Bad input first: teammates only on the file store, or with a goal.
  auto on_files = RunMates(mate_ws.path(), command({"up", "--teammates"}, "duo"));
  EXPECT_EQ(on_files.exit_code, 2) << on_files.err;
  EXPECT_NE(on_files.err.find("--store postgres://"), std::string::npos) << on_files.err;
  auto goal = mates(mate_ws.path(), command({"up", "--teammates"}, "duo", {"Go"}));
  EXPECT_EQ(goal.exit_code, 2) << goal.err;
  auto no_team = mates(mate_ws.path(), command({"up", "--teammates"}, "nope"));
  EXPECT_EQ(no_team.exit_code, 1) << no_team.err;
  EXPECT_NE(no_team.err.find("nope"), std::string::npos) << no_team.err;

  // The teammates host adopts w1, which claims #1 and waits at the gate.
  const std::vector<std::string> up_mates = command({"up", "--teammates"}, "duo");
  auto up_b = mates(mate_ws.path(), up_mates);
  ASSERT_EQ(up_b.exit_code, 0) << up_b.out << up_b.err;
  EXPECT_NE(up_b.out.find("hosting the teammates of team duo"), std::string::npos) << up_b.out;
  EXPECT_FALSE(teams_->IsHosted("duo", "lead"));
  auto twice = mates(mate_ws.path(), up_mates);
  EXPECT_EQ(twice.exit_code, 1) << twice.err;
  EXPECT_NE(twice.err.find("already hosted"), std::string::npos) << twice.err;
  auto waker = std::make_shared<Waker>();
  auto board_watch = teams_->WatchBoard("duo", waker);
  ASSERT_TRUE(board_watch.ok());
  auto board = teams_->Board("duo");
  const fs::path mate_log = mate_ws.path() / ".teams/duo/host.log";
  const fs::path lead_log = lead_ws.path() / ".teams/duo/host.log";
  auto copy_has = [&](const std::string& member, const std::string& text) {
    auto lines = teams_->JournalOf("duo", member)->Lines();
    return lines.ok() && std::any_of(lines->begin(), lines->end(),
                                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  ASSERT_TRUE(Until(waker, [&] {
    auto t = board->Get(1);
    return t.ok() && t->status == TaskStatus::kInProgress && t->owner == "w1" && copy_has("w1", "read -r line");
  })) << ReadAll(mate_log);

  // The lead's host spawns w2, which claims the rest.
  auto up_a = mates(lead_ws.path(), command({"up"}, "duo", {"Go"}));
  ASSERT_EQ(up_a.exit_code, 0) << up_a.out << up_a.err;
  auto done_but_held = [&] {
    auto all = board->List(false);
    if (!all.ok()) return false;
    return std::all_of(all->begin(), all->end(), [](const Task& t) {
      return t.id == 1 ? t.status == TaskStatus::kInProgress : t.status == TaskStatus::kCompleted;
    });
  };
  ASSERT_TRUE(Until(waker, done_but_held)) << ReadAll(lead_log) << ReadAll(mate_log);
  EXPECT_EQ(board->Get(2)->owner, "w2");

  // The teammates host dies at once; its teammate comes back at the other.
  auto mate_host = ReadHostInfo(Workspace(mate_ws.path()), "duo");
  ASSERT_TRUE(mate_host.ok());
  EXPECT_EQ(HostModeName(mate_host->mode), "teammates");
  ASSERT_EQ(::kill(static_cast<pid_t>(mate_host->pid), SIGKILL), 0);
  ASSERT_TRUE(Until(waker, [&] { return board->Get(1)->status == TaskStatus::kCompleted; }))
      << ReadAll(lead_log) << ReadAll(mate_log);
  EXPECT_EQ(board->Get(1)->owner, "w1");
  // Said once the adoption is done, which the resumed teammate's first
  // turn (the task's completion) may come before: waited for.
  EXPECT_TRUE(testing::WaitUntil([&] { return ReadAll(lead_log).find("that no host had: w1") != std::string::npos; },
                                 10))
      << ReadAll(lead_log);
  EXPECT_TRUE(teams_->IsHosted("duo", "w1"));
  // The lead's machine has w1's journal now: what the other wrote, and on
  // (looked at once w1 is idle: no line is on its way).
  auto roster_watch = teams_->WatchRoster("duo", waker);
  ASSERT_TRUE(roster_watch.ok());
  ASSERT_TRUE(Until(waker, [&] {
    auto t = teams_->LoadTeam("duo");
    return t.ok() && t->Find("w1") != nullptr && t->Find("w1")->status == MemberStatus::kIdle;
  }));
  auto copied = teams_->JournalOf("duo", "w1")->Lines();
  ASSERT_TRUE(copied.ok());
  std::string text;
  for (const auto& l : *copied) text += l + "\n";
  EXPECT_EQ(ReadAll(lead_ws.path() / ".teams/duo/agents/w1.jsonl"), text);
  EXPECT_NE(text.find("interrupted: the agent was restarted"), std::string::npos);

  // Every task was completed once, by one teammate, and the held tool ran
  // once (the resumed conversation did not run it again).
  ToolCalls calls = CallsIn("duo", {"w1", "w2"});
  EXPECT_EQ(calls.task_updates.size(), 7u);
  for (const auto& [id, n] : calls.task_updates) EXPECT_EQ(n, 1) << "task #" << id;
  EXPECT_EQ(calls.bash, 1);

  // What both machines' agents spent, from a third that ran none: each
  // agent's calls are the usage lines of its journal's copy.
  // (The lead may still be answering its news: counted before and after.)
  auto usage_lines = [&](const std::string& member) {
    auto lines = teams_->JournalOf("duo", member)->Lines();
    EXPECT_TRUE(lines.ok());
    return lines.ok() ? static_cast<int>(std::count_if(lines->begin(), lines->end(), [](const std::string& l) {
      return l.find("\"kind\":\"usage\"") != std::string::npos;
    })) : -1;
  };
  const std::vector<std::string> members = {"lead", "w1", "w2"};
  std::map<std::string, int> before;
  for (const auto& m : members) before[m] = usage_lines(m);
  TempDir third;
  auto usage = mates(third.path(), {"usage", "--team", "duo", "--json"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  auto spent = ParseJson(usage.out);
  ASSERT_TRUE(spent.ok()) << usage.out;
  int total = 0;
  for (const auto& agent : (*spent)["agents"]) {
    const std::string name = agent["agent"];
    const int calls = agent["calls"];
    ASSERT_TRUE(before.count(name)) << name;
    EXPECT_GT(before[name], 0) << name;
    EXPECT_GE(calls, before[name]) << name << ": " << usage.out;
    EXPECT_LE(calls, usage_lines(name)) << name << ": " << usage.out;
    total += calls;
  }
  EXPECT_EQ((*spent)["agents"].size(), members.size()) << usage.out;
  EXPECT_EQ((*spent)["calls"], total) << usage.out;
  auto archived = mates(third.path(), {"usage", "--team", "duo", "--archived"});
  EXPECT_EQ(archived.exit_code, 1) << archived.err;  // that workspace archived none
  EXPECT_NE(archived.err.find("no archive"), std::string::npos) << archived.err;

  // The dead host's `down` kills what its tool left (the reader at the
  // gate); the lead's `down` asks both teammates, now its own.
  auto down_b = mates(mate_ws.path(), {"down", "--team", "duo"});
  EXPECT_EQ(down_b.exit_code, 0) << down_b.err;
  EXPECT_NE(down_b.out.find("(1 leftover process(es) of its dead host killed)"), std::string::npos) << down_b.out;
  EXPECT_TRUE(testing::WaitUntil([&] {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      if (ReadAll(e.path() / "cmdline").find(gate.string()) != std::string::npos) return false;
    }
    return true;
  }, 10)) << "a reader at the gate outlived its host";
  auto down_a = mates(lead_ws.path(), {"down", "--team", "duo", "--grace", "5"});
  EXPECT_EQ(down_a.exit_code, 0) << down_a.err;
  EXPECT_NE(down_a.out.find("asked 2 teammate(s) to stop"), std::string::npos) << down_a.out;
  for (const char* who : {"lead", "w1", "w2"}) EXPECT_FALSE(teams_->IsHosted("duo", who)) << who;

  // A budget counts what every machine spent: from the third workspace,
  // which holds no journal, the team is over 10 tokens already.
  auto refused = mates(third.path(), command({"run", "--budget-tokens", "10"}, "duo", {"Go"}));
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("is spent"), std::string::npos) << refused.err;
}

// A host that cannot write a teammate's journal when it resumes it (a full
// disk; here a folder where the file goes) lets it go for another host:
// idle, its lease released, not taken again here for 10 s. It shut the
// teammate down for good, and kept its lease, so no host could take it.
TEST_F(PgRuntimeTest, AHostThatCannotWriteAJournalAtResumeLetsTheTeammateGo) {
  llm::ScriptedProvider provider(Scenario());
  {
    Host a(dir_.path() / "a", &provider, teams_.get());
    ASSERT_NO_FATAL_FAILURE(SpawnW1(a));
  }
  ASSERT_FALSE(teams_->IsHosted("crew", "w1"));
  Host b(dir_.path() / "b", &provider, teams_.get());
  const fs::path journal = b.ws.JournalPath("crew", "w1");
  ASSERT_TRUE(EnsureDir(journal / "in-the-way").ok());
  auto resumed = b.manager->ResumeTeam();
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  ASSERT_TRUE(testing::WaitUntil([&] { return !b.manager->Running("w1") && !teams_->IsHosted("crew", "w1"); }, 20))
      << "w1 is still held by the host that cannot write for it";
  EXPECT_EQ(teams_->LoadTeam("crew")->Find("w1")->status, MemberStatus::kIdle) << "it was ended, not let go";
  // Not taken back here at once (another host's to take).
  auto again = b.manager->ResumeTeam();
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(std::find(again->begin(), again->end(), "w1") == again->end());
  EXPECT_FALSE(teams_->IsHosted("crew", "w1"));
  // Another host takes it, and it works there.
  Host c(dir_.path() / "c", &provider, teams_.get());
  auto taken = c.manager->ResumeTeam();
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  EXPECT_TRUE(std::find(taken->begin(), taken->end(), "w1") != taken->end());
  ASSERT_TRUE(testing::WaitUntil([&] { return c.manager->Running("w1") && teams_->IsHosted("crew", "w1"); }, 20));
  auto board = teams_->Board("crew");
  auto made = board->Create({"for w1"});
  ASSERT_TRUE(made.ok()) << made.status().message();
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto t = board->Get(made->id);
    return t.ok() && t->status == TaskStatus::kCompleted;
  }, 30)) << "w1 did not work at its new host";
}

// A teammate whose lease's session ends (its lease with it), and is taken
// by another host before its keeper can renew it, is that host's now:
// it stops at once and writes nothing more of its status to the roster
// (two hosts never run one teammate).
TEST_F(PgRuntimeTest, ATeammateTakenOverByAnotherHostStopsHere) {
  llm::ScriptedProvider provider(Scenario());
  Host host(dir_.path() / "a", &provider, teams_.get());
  ASSERT_NO_FATAL_FAILURE(SpawnW1(host));
  ASSERT_EQ(teams_->LoadTeam("crew")->Find("w1")->status, MemberStatus::kIdle);
  // Its lock's session ends (as when a network drops), and another host is
  // quicker than the keeper (which looks every second: if it took the lock
  // back first, its new session is ended too, and the other host tries again).
  auto target = pg::ParseTarget(url_);
  auto admin = pg::Connection::Open(*target, 10);
  ASSERT_TRUE(admin.ok());
  int sessions_ended = 0;
  std::unique_ptr<Hold> other;
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto ended = admin->Exec("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM mates_agent_leases "
                             "WHERE NOT released AND pid <> pg_backend_pid()");
    if (ended.ok()) sessions_ended += static_cast<int>(ended->integer(0, 0));
    auto h = teams_->HoldLiveness("crew", "w1");
    if (h.ok()) other = std::move(*h);
    return other != nullptr;
  }, 20));
  EXPECT_GE(sessions_ended, 1);
  ASSERT_TRUE(teams_->UpdateTeam("crew", [](TeamConfig& c) {
    c.Find("w1")->status = MemberStatus::kActive;  // the other host's word
    return Status::Ok();
  }).ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return !host.manager->Running("w1"); }, 10))
      << "w1 still runs here while another host hosts it";
  EXPECT_EQ(teams_->LoadTeam("crew")->Find("w1")->status, MemberStatus::kActive) << "it wrote the roster";
  EXPECT_TRUE(teams_->IsHosted("crew", "w1"));
}

// The same, with work for it on the board the moment the other host has
// its lock: woken by the board, it looks at its lock before it claims
// (its connection hung up: taken again now, found taken), not in the
// keeper's next second, so it claims nothing of the other host's.
TEST_F(PgRuntimeTest, ATeammateTakenOverClaimsNothingBeforeItsKeeperLooks) {
  llm::ScriptedProvider provider(Scenario());
  Host host(dir_.path() / "a", &provider, teams_.get());
  ASSERT_NO_FATAL_FAILURE(SpawnW1(host));
  auto target = pg::ParseTarget(url_);
  auto admin = pg::Connection::Open(*target, 10);
  ASSERT_TRUE(admin.ok());
  std::unique_ptr<Hold> other;
  ASSERT_TRUE(testing::WaitUntil([&] {
    (void)admin->Exec("SELECT pg_terminate_backend(pid) FROM mates_agent_leases WHERE NOT released AND "
                      "pid <> pg_backend_pid()");
    auto h = teams_->HoldLiveness("crew", "w1");
    if (h.ok()) other = std::move(*h);
    return other != nullptr;
  }, 20));
  auto board = teams_->Board("crew");
  auto made = board->Create({"the other host's", "", "", {}, ""});
  ASSERT_TRUE(made.ok()) << made.status().message();
  ASSERT_TRUE(testing::WaitUntil([&] { return !host.manager->Running("w1"); }, 10))
      << "w1 still runs here while another host hosts it";
  auto t = board->Get(made->id);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->status, TaskStatus::kPending) << "claimed by " << t->owner;
  EXPECT_EQ(t->owner, "");
}

// The lead's subagents' usage goes to the store too (one journal for all
// of them, and its copy): every machine's `usage` and a team budget count
// it, and an export writes it out.
TEST_F(PgRuntimeTest, TheLeadsSubagentsUsageIsCountedOnEveryMachine) {
  TempDir ws, elsewhere;
  fs::create_directories(ws.path() / "data");
  for (const char* f : {"a", "b", "c"}) testing::WriteAll(ws.path() / "data" / f, "x");
  fs::create_directories(ws.path() / "skills/counting");
  testing::WriteAll(ws.path() / "skills/counting/SKILL.md",
                    "---\nname: counting\ndescription: How to count things\n---\nDelegate counting to a subagent.\n");
  auto r = RunMates(ws.path(), {"run", "--store", url_, "--team", "crew", "--provider", "scripted", "--scenario",
                                testing::ScenarioFixture("lead_delegates.yaml"), "delegate the counting"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto copy = teams_->JournalOf("crew", "lead.subagents")->Lines();
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  std::string text;
  for (const auto& l : *copy) text += l + "\n";
  EXPECT_EQ(ReadAll(ws.path() / ".teams/crew/agents/lead.subagents.jsonl"), text);
  EXPECT_EQ(copy->size(), 3u) << text;  // the counting subagent's two calls and the background one's one

  auto u = RunMates(elsewhere.path(), {"usage", "--team", "crew", "--json", "--store", url_});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  auto j = ParseJson(u.out);
  ASSERT_TRUE(j.ok()) << u.out;
  int64_t subagent_calls = -1;
  for (const auto& a : (*j)["agents"]) {
    if (a["agent"] == "lead (subagents)") subagent_calls = a["calls"];
  }
  EXPECT_EQ(subagent_calls, 3) << u.out;
  // `usage --all` on the store counts the team alike, from any machine.
  auto all = RunMates(elsewhere.path(), {"usage", "--all", "--json", "--store", url_});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto a = ParseJson(all.out);
  ASSERT_TRUE(a.ok()) << all.out;
  bool crew_seen = false;
  for (const auto& t : (*a)["teams"]) {
    if (t["team"] != "crew") continue;
    crew_seen = true;
    EXPECT_EQ(t["calls"], (*j)["calls"]) << all.out;
    EXPECT_EQ(t["usage"], (*j)["usage"]) << all.out;
  }
  EXPECT_TRUE(crew_seen) << all.out;
  // A budget set there counts them: the lead's calls alone are under it.
  const int64_t lead_tokens = [&] {
    for (const auto& a : (*j)["agents"]) {
      if (a["agent"] == "lead") {
        const Json& t = a["usage"];
        return t["input_tokens"].get<int64_t>() + t["output_tokens"].get<int64_t>() +
               t.value("cache_creation_input_tokens", int64_t{0}) + t.value("cache_read_input_tokens", int64_t{0});
      }
    }
    return int64_t{0};
  }();
  ASSERT_GT(lead_tokens, 0) << u.out;
  auto over = RunMates(elsewhere.path(), {"run", "--store", url_, "--team", "crew", "--provider", "scripted",
                                          "--scenario", testing::ScenarioFixture("lead_delegates.yaml"),
                                          "--budget-tokens", std::to_string(lead_tokens + 1), "delegate again"});
  EXPECT_EQ(over.exit_code, 1) << over.out << over.err;
  EXPECT_NE(over.err.find("budget"), std::string::npos) << over.err;

  auto out = elsewhere.path() / "exported";
  auto e = RunMates(elsewhere.path(), {"store", "export", "--team", "crew", out.string(), "--store", url_});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(ReadAll(out / ".teams/crew/agents/lead.subagents.jsonl"), text);
}

// The same for a lead: a host whose lead's lock was taken by another
// host (after its connection dropped) stops, and says why in its log.
TEST_F(PgRuntimeTest, AHostWhoseLeadWasTakenOverStops) {
  TempDir ws;
  const fs::path scenario = dir_.path() / "noted.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, "rules:\n  - agent: \"*\"\n    once: false\n"
                                        "    reply: [{type: text, text: \"Noted.\"}]\n").ok());
  auto up = RunMates(ws.path(), {"up", "--store", url_, "--team", "crew", "--provider", "scripted", "--scenario",
                                 scenario.string(), "Hello"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto info = ReadHostInfo(Workspace(ws.path()), "crew");
  ASSERT_TRUE(info.ok()) << info.status().message();
  const pid_t pid = static_cast<pid_t>(info->pid);
  const uint64_t started = info->start_time;
  struct Kill {
    pid_t pid;
    uint64_t started;
    ~Kill() {
      if (ProcessStartTime(pid) == started) ::kill(pid, SIGKILL);
    }
  } kill_at_exit{pid, started};
  ASSERT_TRUE(teams_->IsHosted("crew", "lead"));
  auto admin = pg::Connection::Open(*pg::ParseTarget(url_), 10);
  ASSERT_TRUE(admin.ok());
  std::unique_ptr<Hold> other;
  ASSERT_TRUE(testing::WaitUntil([&] {
    (void)admin->Exec("SELECT pg_terminate_backend(pid) FROM mates_agent_leases WHERE NOT released AND "
                      "pid <> pg_backend_pid()");
    auto h = teams_->HoldLiveness("crew", "lead");
    if (h.ok()) other = std::move(*h);
    return other != nullptr;
  }, 20));
  const fs::path log = ws.path() / ".teams/crew/host.log";
  EXPECT_TRUE(testing::WaitUntil([&] { return !ProcessLives(pid, started); }, 30))
      << "the host still runs the lead another host hosts\n" << ReadAll(log);
  EXPECT_NE(ReadAll(log).find("another host took over the lead of team crew"), std::string::npos) << ReadAll(log);
  EXPECT_TRUE(teams_->IsHosted("crew", "lead"));
}

// A copy edited into nonsense by hand (DESIGN §10): lines that are no
// JSON, nested past the depth limit or cut short carry nothing when the
// journal is replayed (the conversation before them stands), and a line
// over the bound is one clear error, never loaded.
TEST_F(PgRuntimeTest, AHostileJournalCopyIsReplayedAsFarAsItMakesSense) {
  const std::string hello = R"({"kind":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}})";
  ASSERT_TRUE(store_->journals().Put("crew", "w1", 0,
                                 {hello, "not json", std::string(10000, '[') + std::string(10000, ']'),
                                  R"({"kind":"message","message":{"role":)", std::string(1000, '\x01')})
                  .ok());
  auto copy = teams_->JournalOf("crew", "w1");
  const fs::path path = dir_.path() / "w1.jsonl";
  auto held = agent::Journal::Reconcile(path, *copy);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(*held, 5);
  auto st = agent::Journal::Load(path);
  ASSERT_TRUE(st.ok()) << st.status().message();
  ASSERT_EQ(st->messages.size(), 1u);
  EXPECT_EQ(st->messages[0].content[0].text, "hi");

  // Over the bound: refused whole, with what and whose.
  auto c = pg::Connection::Open(*pg::ParseTarget(url_), 10);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->Exec("INSERT INTO mates_journals (team, member, seq, line) VALUES ('crew', 'w2', 0, repeat('x', $1::int))",
                      {std::to_string(kMaxJournalLineBytes + 1)})
                  .ok());
  auto big = teams_->JournalOf("crew", "w2")->Lines();
  EXPECT_EQ(big.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(big.status().message().find("'w2'"), std::string::npos) << big.status().message();
  EXPECT_EQ(agent::Journal::Reconcile(dir_.path() / "w2.jsonl", *teams_->JournalOf("crew", "w2")).status().code(),
            StatusCode::kCorrupt);
  EXPECT_FALSE(fs::exists(dir_.path() / "w2.jsonl")) << "nothing is written from a copy that was refused";
}

// The server restarts while a run's teammate is in the middle of a tool:
// the teammate's next steps wait for the server instead of failing, the
// host says it waits and that the server is back, and the team goes on:
// every task completed once, every journal's copy whole again.
TEST_F(PgRuntimeTest, AServerRestartedUnderARunIsWaitedForAndTheTeamGoesOn) {
  TempDir ws;
  const fs::path gate = dir_.path() / "gate";
  ASSERT_EQ(::mkfifo(gate.c_str(), 0600), 0);
  const std::string yaml =
      LeadSpawnsOnGo("crew", "w1") +
      "  - agent: w1\n    when: \"Task #1: held\"\n"
      "    reply: [{type: tool_use, name: bash, input: {command: \"read -r line < " + gate.string() +
      " && echo released-$line\"}}]\n"
      "  - agent: w1\n    when: \"released-(\\\\d+)\"\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
      "  - agent: w1\n    when: \"Task #(\\\\d+): plain\"\n    once: false\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
      "  - agent: \"*\"\n    once: false\n    reply: [{type: text, text: \"Done.\"}]\n";
  const fs::path scenario = dir_.path() / "restart.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, yaml).ok());
  auto board = teams_->Board("crew");
  ASSERT_TRUE(board->Create(TaskDraft{"held"}).ok());
  for (int i = 2; i <= 4; ++i) ASSERT_TRUE(board->Create(TaskDraft{"plain " + std::to_string(i)}).ok());

  SubprocessOptions o;
  o.argv = {testing::MatesBinary(), "--workspace", ws.str(), "run", "--store", url_, "--team", "crew",
            "--provider", "scripted", "--scenario", scenario.string(), "--shutdown-timeout", "2",
            "--sandbox", "off",  // the gate beside W is out of a sandbox's sight
            "Go"};
  o.interactive = true;  // stderr to a file, to read while it runs
  o.stderr_path = (dir_.path() / "run.err").string();
  o.timeout_s = 120;
  auto run = Subprocess::Start(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  auto err = [&] { return ReadAll(dir_.path() / "run.err"); };
  struct LetGo {
    fs::path gate;
    ~LetGo() {  // a reader still waiting at the gate is let go
      int fd = ::open(gate.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  } let_go{gate};

  // w1 claims #1 and waits at the gate; then the server goes away.
  auto waker = std::make_shared<Waker>();
  auto watch = teams_->WatchBoard("crew", waker);
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(Until(waker, [&] {
    auto t = board->Get(1);
    return t.ok() && t->status == TaskStatus::kInProgress && t->owner == "w1";
  })) << err();
  int writer = -1;
  ASSERT_TRUE(testing::WaitUntil([&] {
    writer = ::open(gate.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    return writer >= 0;
  }, 60)) << "w1 never read from the gate" << err();
  watch->reset();
  ASSERT_TRUE(server_->Stop().ok());

  // The tool ends while the server is away: w1's journal and task update
  // wait for it, and the host says so.
  ASSERT_EQ(::write(writer, "1\n", 2), 2);
  ::close(writer);
  ASSERT_TRUE(testing::WaitUntil([&] { return err().find("for it to come back") != std::string::npos; }, 60))
      << err();
  ASSERT_TRUE(server_->Restart().ok());

  auto done = run->Wait();
  EXPECT_EQ(done.exit_code, 0) << done.out << err();
  EXPECT_NE(err().find("is back"), std::string::npos) << err();
  auto all = board->List(false);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->size(), 4u);
  for (const auto& t : *all) EXPECT_EQ(t.status, TaskStatus::kCompleted) << "#" << t.id << done.out << err();

  // Each task was completed once, the gate's tool ran once, and each
  // journal's copy is its file again (the lines written while the server
  // was away went after it came back).
  for (const std::string member : {"lead", "w1"}) {
    auto lines = teams_->JournalOf("crew", member)->Lines();
    ASSERT_TRUE(lines.ok()) << lines.status().message();
    std::string text;
    for (const auto& l : *lines) text += l + "\n";
    EXPECT_EQ(ReadAll(ws.path() / (".teams/crew/agents/" + member + ".jsonl")), text) << member;
  }
  ToolCalls calls = CallsIn("crew", {"w1"});
  EXPECT_EQ(calls.task_updates.size(), 4u);
  for (const auto& [id, n] : calls.task_updates) EXPECT_EQ(n, 1) << "task #" << id;
  EXPECT_EQ(calls.bash, 1);

  // Another machine sees how each agent ended and what it spent: its
  // activity, from the store.
  TempDir elsewhere;
  auto st = RunMates(elsewhere.path(), {"status", "--team", "crew", "--json", "--store", url_});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto view = ParseJson(st.out);
  ASSERT_TRUE(view.ok()) << st.out;
  for (const auto& m : (*view)["members"]) {
    const Json& a = m["activity"];
    ASSERT_TRUE(a.is_object()) << m["name"] << ": " << st.out;
    EXPECT_EQ(a["state"], "stopped") << st.out;
    auto lines = teams_->JournalOf("crew", m["name"].get<std::string>())->Lines();
    ASSERT_TRUE(lines.ok());
    EXPECT_EQ(a["calls"], std::count_if(lines->begin(), lines->end(), [](const std::string& l) {
      return l.find("\"kind\":\"usage\"") != std::string::npos;
    })) << m["name"] << ": " << st.out;
  }

  // Deleted there, the team is archived in that workspace with what the
  // database held and that machine's files (its host's log), and what it
  // spent reads from the archive as from the database before.
  auto spent = RunMates(ws.path(), {"usage", "--team", "crew", "--json", "--store", url_});
  ASSERT_EQ(spent.exit_code, 0) << spent.err;
  auto del = RunMates(ws.path(), {"team", "delete", "crew", "--store", url_, "--json"});
  ASSERT_EQ(del.exit_code, 0) << del.err;
  auto where = ParseJson(del.out);
  ASSERT_TRUE(where.ok()) << del.out;
  const fs::path archive = (*where)["archive"].get<std::string>();
  EXPECT_TRUE(fs::exists(archive / ".teams/crew/agents/w1.jsonl"));
  EXPECT_TRUE(fs::exists(archive / ".tasks/crew"));
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/crew")) << "this machine's files stayed behind";
  EXPECT_FALSE(teams_->LoadTeam("crew").ok());
  auto spent_then = RunMates(ws.path(), {"usage", "--team", "crew", "--json", "--archived", "--store", url_});
  ASSERT_EQ(spent_then.exit_code, 0) << spent_then.err;
  auto before = ParseJson(spent.out), after = ParseJson(spent_then.out);
  ASSERT_TRUE(before.ok() && after.ok()) << spent.out << spent_then.out;
  EXPECT_EQ((*after)["calls"], (*before)["calls"]) << spent.out << spent_then.out;
  EXPECT_EQ((*after)["agents"].size(), (*before)["agents"].size()) << spent.out << spent_then.out;
}

// A host's liveness lock goes with its connection when the server
// restarts; the store's keeper takes it again, so the agent is seen as
// hosted (and a second host refused) once the server is back.
// The host of a team kept in the database, at work on a graph of jobs, is
// killed with SIGKILL eight times anywhere in its work and resumed by the
// next `mates run --store` each time: nothing is lost, nothing done is done
// again (support/chaos.h says what is checked). The dead host's liveness
// locks are the server's, freed when it sees the connections close.
TEST_F(PgRuntimeTest, AHostKilledAgainAndAgainLosesNothingAndRedoesNothingDone) {
  TempDir ws;
  ASSERT_TRUE(teams_->CreateTeam("chaos", "lead", "").ok());
  testing::KillAHostAgainAndAgain(
      ws.path(), *teams_, "chaos",
      {"run", "--store", url_, "--team", "chaos", "--provider", "scripted", "--scenario",
       testing::ScenarioFixture("team_chaos.yaml")});
}

TEST_F(PgRuntimeTest, ALivenessLockLostWithARestartIsTakenAgain) {
  auto held = teams_->HoldLiveness("crew", "w1");
  ASSERT_TRUE(held.ok()) << held.status().message();
  ASSERT_TRUE(teams_->IsHosted("crew", "w1"));
  ASSERT_TRUE(server_->Restart().ok());
  EXPECT_TRUE(testing::WaitUntil([&] { return teams_->IsHosted("crew", "w1"); }, 20))
      << "the lock was not taken again after the restart";
  auto other = pg::Store::Open(*pg::ParseTarget(url_));
  ASSERT_TRUE(other.ok()) << other.status().message();
  auto second = (*other)->liveness().Hold("crew", "w1");
  EXPECT_EQ(second.status().code(), StatusCode::kConflict) << second.status().message();
  held->reset();
  EXPECT_FALSE(teams_->IsHosted("crew", "w1"));
  EXPECT_TRUE((*other)->liveness().Hold("crew", "w1").ok()) << "let go, it is anyone's";
}

// A listener whose server is away retries with a backoff (50 ms doubling
// to 2 s), even when subscriptions keep signalling it: a host left running
// through an outage used to spin on connection attempts at full CPU.
TEST_F(PgRuntimeTest, AListenerWithoutItsServerBacksOff) {
  auto waker = std::make_shared<Waker>();
  auto sub = store_->listener().Subscribe(pg::InboxKey("crew", "w1"), waker);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  ASSERT_TRUE(server_->Stop().ok());
  // A subscription made while it is away signals the listening thread.
  auto during = store_->listener().Subscribe(pg::BoardKey("crew"), waker);
  EXPECT_EQ(during.status().code(), StatusCode::kUnavailable) << during.status().message();
  const uint64_t before = store_->listener().failures();
  // Three seconds of outage (a measured window, not a synchronisation).
  auto clock = std::make_shared<Waker>();
  clock->WaitChange(clock->generation(), DeadlineIn(3));
  const uint64_t tries = store_->listener().failures() - before;
  EXPECT_GE(tries, 1u) << "the listener did not try at all";
  EXPECT_LE(tries, 12u) << tries << " connection attempts in 3 s";
  ASSERT_TRUE(server_->Restart().ok());
}

// The dashboard of a team in PostgreSQL (DESIGN §11, §13): the host's
// (`mates up --store`) acts as user, and `mates dashboard --store` on
// another machine shows the same team read-only — the roster with
// liveness, the board, the log paged by its numbers, the plans, a
// transcript from a journal's copy — told of each change by the database.
TEST_F(PgRuntimeTest, TheDashboardShowsAndSteersATeamFromAnyMachine) {
  TempDir host_ws, elsewhere;
  auto up = RunMates(host_ws.path(), {"up", "--store", url_, "--team", "dash", "--provider", "scripted",
                                      "--scenario", testing::ScenarioFixture("team_dashboard.yaml"), "Start the team"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  DownAtExit down_at_exit{host_ws.path(), url_, "dash"};
  const std::string host_url = testing::PrintedDashboardUrl(up.out);
  const testing::DashboardUrl host = testing::SplitDashboardUrl(host_url);
  ASSERT_FALSE(host.token.empty()) << up.out;
  const auto get = testing::DashboardGet;
  const auto post = testing::DashboardPost;

  // Another machine's dashboard, and its event stream.
  Subprocess page = testing::StartMates(elsewhere.path(), {"dashboard", "--store", url_, "--team", "dash"});
  auto line = page.ReadLine(DeadlineIn(20));
  ASSERT_TRUE(line.ok()) << line.status().message();
  ASSERT_NE(line->find("read-only: http://127.0.0.1:"), std::string::npos) << *line;
  const testing::DashboardUrl ro = testing::SplitDashboardUrl(line->substr(line->find("http://")));
  Subprocess events = testing::Start({"curl", "-s", "-N", "-m", "90", "-H", "Authorization: Bearer " + ro.token,
                                      ro.base + "/events"});
  auto next_change = [&events](const std::string& kind) {
    for (;;) {
      auto l = events.ReadLine(DeadlineIn(20));
      if (!l.ok()) return l.status().message();
      if (*l == "event: " + kind) return std::string("ok");
      if (l->rfind("data: ", 0) == 0 && l->find("\"" + kind + "\"") != std::string::npos) return std::string("ok");
    }
  };
  ASSERT_EQ(next_change("hello").substr(0, 2), "ok");

  // The planner's plan waits for a decision: seen from there.
  std::string plan_id;
  ASSERT_TRUE(testing::WaitUntil([&] {
    const Json requests = get(ro, "/api/requests").json();
    for (const auto& r : requests["requests"]) {
      if (r["kind"] == "plan_approval" && r["status"] == "pending") plan_id = r["request_id"];
    }
    return !plan_id.empty();
  }, 30)) << get(ro, "/api/requests").body;
  auto team = get(ro, "/api/team");
  ASSERT_EQ(team.code, 200) << team.body;
  auto tj = team.json();
  EXPECT_EQ(tj["store"], pg::ParseTarget(url_)->shown);
  EXPECT_TRUE(tj["host"].is_null()) << "this machine hosts nothing: " << tj;
  EXPECT_EQ(tj["read_only"], true);
  std::map<std::string, std::string> shown;
  for (const auto& m : tj["members"]) shown[m["name"]] = m["status"];
  EXPECT_NE(shown["lead"], "offline") << tj;
  EXPECT_NE(shown["planner"], "offline") << tj;
  EXPECT_EQ(post(ro, "/api/messages", R"({"to":"lead","content":"hi"})").code, 403);
  // The host's own says who hosts it.
  auto hj = get(host, "/api/team").json();
  ASSERT_TRUE(hj["host"].is_object()) << hj;
  EXPECT_EQ(hj["host"]["mode"], "up");
  EXPECT_EQ(hj["host"]["dashboard"], host_url);

  // The planner's transcript there is its journal's copy.
  auto transcript = get(ro, "/api/agents/planner/transcript");
  ASSERT_EQ(transcript.code, 200) << transcript.body;
  EXPECT_NE(transcript.body.find("Make a plan and ask for approval."), std::string::npos) << transcript.body;
  EXPECT_GE(transcript.json()["calls"].get<int>(), 1);
  EXPECT_EQ(get(ro, "/api/agents/nobody/transcript").code, 404);
  EXPECT_EQ(get(ro, "/api/agents/a%20b/transcript").code, 400);

  // The log, paged by its numbers: what the host's page sends (as user)
  // comes after the cursor there, with the lead's answer.
  auto first = get(ro, "/api/messages").json();
  ASSERT_TRUE(first["next"].is_number()) << first;
  const uint64_t cursor = first["next"];
  EXPECT_EQ(first["more"], false) << first;
  auto sent = post(host, "/api/messages", R"({"to":"lead","content":"ping dash"})");
  ASSERT_EQ(sent.code, 201) << sent.body;
  EXPECT_EQ(next_change("messages").substr(0, 2), "ok");
  // (The lead answers at once, and a send is delivered before it is
  // logged: the answer may come first in the log, design §5.)
  std::set<std::string> before;
  for (const auto& m : first["messages"]) before.insert(m["id"].get<std::string>());
  std::vector<std::string> said;
  uint64_t next = cursor;
  auto has = [&](const char* line) { return std::find(said.begin(), said.end(), line) != said.end(); };
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto page_j = get(ro, "/api/messages?after=" + std::to_string(next)).json();
    for (const auto& m : page_j["messages"]) {
      said.push_back(m["sender"].get<std::string>() + ": " + m["content"].get<std::string>());
      EXPECT_EQ(before.count(m["id"].get<std::string>()), 0u) << "came again, from before the cursor: " << m;
    }
    next = page_j["next"];
    return has("lead: pong dash") && has("user: ping dash");
  }, 30));
  EXPECT_EQ(get(ro, "/api/messages?after=" + std::to_string(next)).json()["messages"].size(), 0u);
  for (const char* bad : {"abc", "-1", "99999999999999999999999", "18446744073709551615"}) {
    auto r = get(ro, std::string("/api/messages?after=") + bad);
    EXPECT_EQ(r.code, 400) << bad << ": " << r.body;
  }

  // A task made on the host's page is on the board every machine shares.
  auto made = post(host, "/api/tasks", R"({"subject":"Test the parser","blocked_by":[]})");
  ASSERT_EQ(made.code, 201) << made.body;
  EXPECT_EQ(next_change("tasks").substr(0, 2), "ok");
  const Json tasks = get(ro, "/api/tasks").json()["tasks"];
  ASSERT_EQ(tasks.size(), 1u) << tasks;
  EXPECT_EQ(tasks[0]["subject"], "Test the parser");
  EXPECT_EQ(post(host, "/api/tasks", R"({"subject":"x","blocked_by":[99]})").code, 404);

  // The plan, approved on the host's page, is approved for everyone.
  auto decided = post(host, "/api/requests/" + plan_id, R"({"approve":true,"feedback":"looks right"})");
  ASSERT_EQ(decided.code, 200) << decided.body;
  ASSERT_TRUE(testing::WaitUntil([&] {
    const Json requests = get(ro, "/api/requests").json();
    for (const auto& r : requests["requests"]) {
      if (r["request_id"] == plan_id) return r["status"] == "approved";
    }
    return false;
  }, 10));
  // No merge request yet: nothing listed, nothing to decide.
  EXPECT_EQ(get(host, "/api/merges").json()["merges"].size(), 0u);
  EXPECT_EQ(post(host, "/api/merges/1", R"({"approve":true})").code, 404);

  // Asked to stop from the page: the planner goes, and the other machine's
  // page shows it shut down.
  auto stop = post(host, "/api/agents/planner/stop", R"({"reason":"done for today"})");
  ASSERT_EQ(stop.code, 200) << stop.body;
  EXPECT_TRUE(testing::WaitUntil([&] {
    const Json team_now = get(ro, "/api/team").json();
    for (const auto& m : team_now["members"]) {
      if (m["name"] == "planner") return m["status"] == "shutdown";
    }
    return false;
  }, 30)) << get(ro, "/api/team").body;

  // A page of the log is about 8 MiB at most; `more` says to ask again.
  // (Sent once the planner is gone: a teammate reading ten mebibytes of
  // mail as its context is slow under TSan, and would hold the stop up.)
  for (Json rest = get(ro, "/api/messages?after=" + std::to_string(next)).json();; ) {
    next = rest["next"];
    if (rest["more"] != true) break;
    rest = get(ro, "/api/messages?after=" + std::to_string(next)).json();
  }
  auto mail = teams_->Mail("dash");
  for (int i = 0; i < 10; ++i) {
    SendRequest big;
    big.sender = "user";
    big.recipient = "planner";
    big.content = std::string(1000000, static_cast<char>('a' + i));
    ASSERT_TRUE(Messenger(*mail).Send(big).ok());
  }
  auto big1_reply = get(ro, "/api/messages?after=" + std::to_string(next));
  auto big1 = big1_reply.json();
  ASSERT_EQ(big1_reply.code, 200) << big1_reply.body.substr(0, 300);
  ASSERT_EQ(big1["more"], true) << big1["messages"].size();
  // (Counted by their size: the lead may still be saying something.)
  auto bigs = [](const Json& page_j) {
    return std::count_if(page_j["messages"].begin(), page_j["messages"].end(),
                         [](const Json& m) { return m["content"].get<std::string>().size() == 1000000; });
  };
  const auto got = bigs(big1);
  EXPECT_GE(got, 1);
  EXPECT_LT(got, 10);
  auto big2 = get(ro, "/api/messages?after=" + std::to_string(big1["next"].get<uint64_t>())).json();
  EXPECT_EQ(got + bigs(big2), 10);
  EXPECT_EQ(big2["more"], false);

  page.Signal(SIGTERM);
  EXPECT_EQ(page.Wait().exit_code, 0);
  events.Signal(SIGTERM);
  events.Wait();
}

// The host's dashboard goes through the host's own store: one pool of
// connections and one listener in the host's process, not a second of each
// for its page (DESIGN §33; each store names its sessions apart, "mates
// <random> pid <pid>"). Its database out of reach, it answers at once (503,
// saying why) though the host itself waits the outage out, and shows the
// team again once the server is back.
TEST_F(PgRuntimeTest, ADashboardAnswers503WhileItsDatabaseIsDownAndComesBack) {
  TempDir ws;
  auto up = RunMates(ws.path(), {"up", "--store", url_, "--team", "crew", "--provider", "scripted", "--scenario",
                                 testing::ScenarioFixture("team_hosted.yaml"), "Start a worker"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  DownAtExit down_at_exit{ws.path(), url_, "crew"};
  const testing::DashboardUrl ro = testing::SplitDashboardUrl(testing::PrintedDashboardUrl(up.out));
  ASSERT_FALSE(ro.token.empty()) << up.out;
  auto get = [&ro](const std::string& path) { return testing::DashboardGet(ro, path); };
  for (const char* path : {"/api/team", "/api/tasks", "/api/messages", "/api/agents/lead/transcript"}) {
    ASSERT_EQ(get(path).code, 200) << path;
  }
  {
    ASSERT_TRUE(down_at_exit.started.ok()) << down_at_exit.started.status().message();
    auto admin = pg::Connection::Open(*pg::ParseTarget(url_), 10);
    ASSERT_TRUE(admin.ok()) << admin.status().message();
    auto stores = admin->Exec("SELECT count(DISTINCT application_name) FROM pg_stat_activity "
                              "WHERE application_name LIKE $1",
                              {"mates % pid " + std::to_string(down_at_exit.started->pid)});
    ASSERT_TRUE(stores.ok()) << stores.status().message();
    EXPECT_EQ(stores->integer(0, 0), 1) << "the host's process opened a store of its own for its page";
  }
  ASSERT_TRUE(server_->Stop().ok());
  const double t0 = WallSeconds();
  for (const char* path : {"/api/team", "/api/tasks", "/api/messages", "/api/requests", "/api/agents/lead/transcript"}) {
    auto r = get(path);
    EXPECT_EQ(r.code, 503) << path << ": " << r.body;
    EXPECT_TRUE(r.json()["error"].is_string()) << path << ": " << r.body;
  }
  EXPECT_LT(WallSeconds() - t0, 8.0) << "it waited for the server";
  // status says so too, as the thing that needs attention (DESIGN §20).
  auto st = RunMates(ws.path(), {"status", "--store", url_, "--team", "crew", "--json"});
  EXPECT_EQ(st.exit_code, 1) << st.out << st.err;
  auto doc = ParseJson(st.out);
  ASSERT_TRUE(doc.ok()) << st.out << st.err;
  ASSERT_EQ((*doc)["attention"].size(), 1u) << st.out;
  EXPECT_EQ((*doc)["attention"][0]["kind"], "store_unreachable") << st.out;
  // As printed, it works from any folder (DESIGN §21).
  EXPECT_EQ((*doc)["attention"][0]["hint"],
            "mates -w " + ws.path().string() + " --store " + url_ + " status --team crew --watch")
      << st.out;
  ASSERT_TRUE(server_->Restart().ok());
  EXPECT_TRUE(testing::WaitUntil([&] { return get("/api/team").code == 200; }, 20));
  auto sent = RunMates(ws.path(), {"send", "--store", url_, "--team", "crew", "--to", "lead", "after the restart"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_TRUE(testing::WaitUntil([&] {
    return get("/api/messages").body.find("after the restart") != std::string::npos;
  }, 10));
  // The host waited the outage out: its keeper takes the lead's liveness
  // lock again within a second, and the page shows it hosted.
  EXPECT_TRUE(testing::WaitUntil([&] {
    const Json team = get("/api/team").json();
    return team["host"].is_object() && team["host"]["mode"] == "up";
  }, 10)) << get("/api/team").body;
}

// `down` stops a host whose lead's liveness lock is not held this moment
// (its connection lost, and the keeper cannot take it again yet): the
// process host.json names lives, so it is stopped — not taken for dead,
// its host.json removed and the process left running.
TEST_F(PgRuntimeTest, DownStopsAHostWhoseLockIsMomentarilyNotHeld) {
  TempDir ws;
  auto up = RunMates(ws.path(), {"up", "--store", url_, "--team", "crew", "--provider", "scripted", "--scenario",
                                 testing::ScenarioFixture("team_hosted.yaml"), "Start a worker", "--no-dashboard"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  DownAtExit down_at_exit{ws.path(), url_, "crew"};
  auto info = ReadHostInfo(Workspace(ws.path()), "crew");
  ASSERT_TRUE(info.ok()) << info.status().message();
  const pid_t pid = static_cast<pid_t>(info->pid);
  // New sessions of the role are refused, then the held locks' sessions
  // end: the keeper cannot take the lead's lock again.
  const std::string db = url_.substr(url_.rfind('/') + 1);
  auto admin = pg::Connection::Open(*pg::ParseTarget(server_->SuperUrl(db)), 10);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  ASSERT_TRUE(admin->ExecScript("ALTER ROLE mates NOLOGIN").ok());
  struct Login {
    pg::Connection& c;
    ~Login() { (void)c.ExecScript("ALTER ROLE mates LOGIN"); }
  } login_again{*admin};
  ASSERT_TRUE(admin->Exec("SELECT pg_terminate_backend(pid) FROM mates_agent_leases WHERE NOT released AND "
                          "pid <> pg_backend_pid()").ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return !teams_->IsHosted("crew", "lead"); }, 20));
  auto down = RunMates(ws.path(), {"down", "--store", server_->SuperUrl(db), "--team", "crew", "--grace", "0",
                                   "--timeout", "10"});
  EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  EXPECT_NE(down.out.find("is down"), std::string::npos) << down.out << down.err;
  EXPECT_FALSE(ProcessLives(pid, info->start_time)) << "the host was left running";
}

// `mates merges --store`: a team's merge requests are the database's, read
// and decided from a machine with none of its files (not this workspace's
// files read instead); a team not there is one clear error.
TEST_F(PgRuntimeTest, MergesOfATeamInTheDatabaseAreReadFromAnyMachine) {
  TempDir ws;  // a workspace with no git and no files of the team
  auto list = RunMates(ws.path(), {"merges", "--team", "crew", "list", "--store", url_});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, "(no merge requests)\n");
  auto json = RunMates(ws.path(), {"merges", "--team", "crew", "--store", url_, "list", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out, "[]\n");
  for (const char* verb : {"show", "approve", "reject"}) {
    auto r = RunMates(ws.path(), {"merges", "--team", "crew", verb, "1", "--store", url_});
    EXPECT_EQ(r.exit_code, 1) << verb << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("no merge request 1 in team 'crew'"), std::string::npos) << verb << ": " << r.err;
  }
  // One waiting for review, decided from here; its owner hears of it.
  Member w9;
  w9.name = "w9";
  ASSERT_TRUE(teams_->AddMember("crew", w9).ok());
  MergeRequest m;
  m.task = 4;
  m.subject = "the thing";
  m.owner = "w9";
  m.branch = "mates/w9@crew";
  m.commit = std::string(40, 'b');
  m.target = "mates/crew";
  m.status = MergeState::kReview;
  auto made = teams_->Merges("crew")->Create(m);
  ASSERT_TRUE(made.ok()) << made.status().message();
  auto shown = RunMates(ws.path(), {"merges", "--team", "crew", "--store", url_, "show", "1"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("merge request 1: review"), std::string::npos) << shown.out;
  auto rejected = RunMates(ws.path(), {"merges", "--team", "crew", "--store", url_, "reject", "1", "--feedback",
                                       "smaller, please"});
  EXPECT_EQ(rejected.exit_code, 0) << rejected.err;
  EXPECT_EQ(teams_->Merges("crew")->Get(1)->status, MergeState::kRejected);
  auto told = store_->mail().Peek("crew", "w9");
  ASSERT_TRUE(told.ok());
  ASSERT_EQ(told->size(), 1u);
  EXPECT_EQ(told->front().sender, "merge-queue");
  EXPECT_NE(told->front().content.find("smaller, please"), std::string::npos) << told->front().content;
  auto again = RunMates(ws.path(), {"merges", "--team", "crew", "--store", url_, "approve", "1"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.err.find("not waiting for review"), std::string::npos) << again.err;
  auto none = RunMates(ws.path(), {"merges", "--team", "nosuch", "list", "--store", url_});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("nosuch"), std::string::npos) << none.err;
}

// `git -C dir args…` (the test fails on a non-zero exit); stdout trimmed.
std::string Git(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", dir.string(), "-c", "user.name=test", "-c", "user.email=t@t"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = testing::Run(argv);
  EXPECT_EQ(r.exit_code, 0) << "git " << args.front() << ": " << r.err;
  while (!r.out.empty() && (r.out.back() == '\n' || r.out.back() == ' ')) r.out.pop_back();
  return r.out;
}

// Worktree isolation across machines (DESIGN §12, §13): two workspaces,
// each a clone of one bare repository (their "origin"), host one team in
// the database — the lead and its merge queue on A, teammate w1 on B. w1's
// work is pushed from B and merged by A's queue onto origin's target; w2,
// spawned on A, starts from what B did; w1's next task on B starts from
// what A did; a failed check bounces to w1 on B, which fixes it; and a
// conflict with w2's work bounces to w1 on B, which fetches, merges and
// resolves it there. The target only ever holds checked merges, and every
// task is merged once.
TEST_F(PgRuntimeTest, IsolatedTeammatesOnTwoMachinesMergeThroughTheirSharedRemote) {
  TempDir machines;
  const fs::path origin = machines.path() / "origin.git";
  const fs::path seed = machines.path() / "seed";
  const fs::path a = machines.path() / "a";
  const fs::path b = machines.path() / "b";
  Git(machines.path(), {"init", "-q", "--bare", "-b", "main", origin.string()});
  Git(machines.path(), {"clone", "-q", origin.string(), seed.string()});
  ASSERT_TRUE(WriteFileAtomic(seed / "README", "the project\n").ok());
  Git(seed, {"add", "README"});
  Git(seed, {"commit", "-q", "-m", "initial"});
  Git(seed, {"push", "-q", "origin", "HEAD:refs/heads/main"});
  for (const auto& w : {a, b}) Git(machines.path(), {"clone", "-q", "-b", "main", origin.string(), w.string()});

  const std::string yaml =
      LeadSpawnsOnGo("iso", "w2") +
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): conflict in (\\\\S+)\"\n    once: false\n"
      "    reply:\n"
      "      - {type: tool_use, name: bash, input: {command: \"git fetch -q origin && git merge -q origin/mates/iso; "
      "grep -q '^<<<<<<<' $2 && printf 'resolved\\\\n' > $2\"}}\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      // w1 finishes its clash only once w2's (from the same base) is merged.
      "  - agent: w1\n    when: \"Task #(\\\\d+): clash (\\\\S+) with (.*)\"\n    once: false\n"
      "    reply:\n"
      "      - {type: tool_use, name: bash, input: {command: \"tip() { git ls-remote origin refs/heads/mates/iso | "
      "cut -f1; }; t=$(tip); printf '%s\\\\n' '$3' > $2; until [ \\\"$(tip)\\\" != \\\"$t\\\" ]; do sleep 0.05; done\"}}\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): check failed\"\n    once: false\n"
      "    reply:\n"
      "      - {type: tool_use, name: bash, input: {command: \"rm BROKEN && printf 'fixed\\\\n' > fixed.txt\"}}\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): write (\\\\S+) with (.*)\"\n    once: false\n"
      "    reply:\n"
      "      - {type: tool_use, name: bash, input: {command: \"printf '%s\\\\n' '$3' > $2\"}}\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): copy (\\\\S+) to (\\\\S+)\"\n    once: false\n"
      "    reply:\n"
      "      - {type: tool_use, name: bash, input: {command: \"cp $2 $3\"}}\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      "  - agent: \"*\"\n    once: false\n    reply: [{type: text, text: \"Done.\"}]\n";
  const fs::path scenario = dir_.path() / "iso.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, yaml).ok());
  auto mates = [&](const fs::path& ws, std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--store", url_});
    return RunMates(ws, args);
  };
  // Without the sandbox: a teammate watches the shared remote, a bare
  // repository beside the workspaces, where a sandboxed tool sees nothing.
  auto host = [&](std::vector<std::string> head, std::vector<std::string> tail = {}) {
    for (const auto& x : {std::string("--team"), std::string("iso"), std::string("--provider"),
                          std::string("scripted"), std::string("--scenario"), scenario.string(),
                          std::string("--idle-timeout"), std::string("0"), std::string("--sandbox"),
                          std::string("off")}) {
      head.push_back(x);
    }
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };

  // Bad input: no such remote; a remote on the file store.
  ASSERT_EQ(mates(a, {"team", "create", "iso"}).exit_code, 0);
  auto no_remote = mates(a, host({"up", "--isolation", "worktree", "--git-remote", "upstream"}));
  EXPECT_EQ(no_remote.exit_code, 1) << no_remote.out << no_remote.err;
  EXPECT_NE(no_remote.err.find("has no git remote 'upstream'"), std::string::npos) << no_remote.err;
  auto on_files = RunMates(a, {"run", "--team", "iso", "--provider", "scripted", "--scenario", scenario.string(),
                               "--isolation", "worktree", "--git-remote", "origin", "Go"});
  EXPECT_EQ(on_files.exit_code, 2) << on_files.err;
  EXPECT_NE(on_files.err.find("--git-remote is for a team on a shared store"), std::string::npos) << on_files.err;
  auto pane = mates(b, {"team", "join", "iso", "p1", "--backend", "tmux", "--isolation", "worktree"});
  EXPECT_EQ(pane.exit_code, 2) << pane.err;

  // w1 works on B; the board: #1 w1's, #2 (after #1) w2's, #3 (after #2)
  // and #4 (after #3) w1's again, then #5 (w1's) and #6 (w2's) after #4,
  // writing one file.
  auto joined = mates(b, {"team", "join", "iso", "w1", "--backend", "in-process", "--isolation", "worktree"});
  ASSERT_EQ(joined.exit_code, 0) << joined.err;
  ASSERT_TRUE(teams_->LoadTeam("iso")->Find("w1")->worktree);
  struct Made {
    std::string subject, after, owner;
  };
  for (const Made& t : {Made{"write b.txt with from B", "", "w1"}, Made{"write a.txt with from A", "1", "w2"},
                        Made{"copy a.txt to c.txt", "2", "w1"}, Made{"write BROKEN with oops", "3", "w1"},
                        Made{"clash x.txt with from B", "4", "w1"}, Made{"write x.txt with from A", "4", "w2"}}) {
    std::vector<std::string> args = {"tasks", "create", "--team", "iso", t.subject};
    if (!t.after.empty()) args.insert(args.end(), {"--blocked-by", t.after});
    auto made = mates(a, args);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  for (const auto& [id, owner] : std::vector<std::pair<std::string, std::string>>{
           {"1", "w1"}, {"2", "w2"}, {"3", "w1"}, {"4", "w1"}, {"5", "w1"}, {"6", "w2"}}) {
    auto set = mates(a, {"tasks", "update", "--team", "iso", id, "--owner", owner});
    ASSERT_EQ(set.exit_code, 0) << set.err;
  }
  struct Cleanup {
    std::vector<fs::path> ws;
    std::string url;
    ~Cleanup() {
      for (const auto& w : ws) {
        DownAtExit down{w, url, "iso"};  // its destructor: down, then kill what is left
      }
    }
  } cleanup{{a, b}, url_};

  auto waker = std::make_shared<Waker>();
  auto board_watch = teams_->WatchBoard("iso", waker);
  auto merge_watch = teams_->WatchMerges("iso", waker);
  ASSERT_TRUE(board_watch.ok() && merge_watch.ok());
  auto board = teams_->Board("iso");
  auto merges = teams_->Merges("iso");
  const fs::path a_log = a / ".teams/iso/host.log";
  const fs::path b_log = b / ".teams/iso/host.log";
  auto logs = [&] { return ReadAll(a_log) + "\n---- B ----\n" + ReadAll(b_log); };

  // B first: w1 makes the team's target on origin, does #1 and submits it;
  // with no lead's host anywhere, it waits in the queue.
  auto up_b = mates(b, host({"up", "--teammates"}));
  ASSERT_EQ(up_b.exit_code, 0) << up_b.out << up_b.err;
  ASSERT_TRUE(Until(waker, [&] {
    auto l = merges->List();
    return l.ok() && l->size() == 1 && l->front().status == MergeState::kQueued;
  })) << logs();
  EXPECT_EQ(board->Get(1)->status, TaskStatus::kInProgress);
  EXPECT_EQ(Git(b, {"ls-remote", "origin", "refs/heads/mates/w1@iso"}).substr(0, 40), merges->Get(1)->commit);

  // A: the lead's host with the merge queue and a check; "Go" spawns w2.
  auto up_a = mates(a, host({"up", "--isolation", "worktree", "--merge-check", "test -s b.txt && test ! -e BROKEN"},
                            {"Go"}));
  ASSERT_EQ(up_a.exit_code, 0) << up_a.out << up_a.err;
  auto all_completed = [&] {
    auto l = board->List(false);
    return l.ok() && l->size() == 6 &&
           std::all_of(l->begin(), l->end(), [](const Task& t) { return t.status == TaskStatus::kCompleted; });
  };
  ASSERT_TRUE(Until(waker, all_completed)) << logs();

  // Every task merged once (#4 and #5 after one bounce each), each by its
  // owner's machine: w1's from B, w2's from A.
  auto list = merges->List();
  ASSERT_TRUE(list.ok());
  std::map<int64_t, std::vector<MergeState>> by_task;
  for (const auto& m : *list) by_task[m.task].push_back(m.status);
  EXPECT_EQ(by_task[1], std::vector<MergeState>{MergeState::kMerged});
  EXPECT_EQ(by_task[2], std::vector<MergeState>{MergeState::kMerged});
  EXPECT_EQ(by_task[3], std::vector<MergeState>{MergeState::kMerged});
  EXPECT_EQ(by_task[4], (std::vector<MergeState>{MergeState::kFailed, MergeState::kMerged}));
  EXPECT_EQ(by_task[5], (std::vector<MergeState>{MergeState::kConflict, MergeState::kMerged}));
  EXPECT_EQ(by_task[6], std::vector<MergeState>{MergeState::kMerged});

  // The target on origin, seen from a third clone: B's file, A's file,
  // the copy B made of A's (its worktree had fetched it), the fix.
  const fs::path c = machines.path() / "c";
  Git(machines.path(), {"clone", "-q", "-b", "mates/iso", origin.string(), c.string()});
  EXPECT_EQ(ReadAll(c / "b.txt"), "from B\n");
  EXPECT_EQ(ReadAll(c / "a.txt"), "from A\n");
  EXPECT_EQ(ReadAll(c / "c.txt"), "from A\n");
  EXPECT_EQ(ReadAll(c / "fixed.txt"), "fixed\n");
  EXPECT_EQ(ReadAll(c / "x.txt"), "resolved\n");
  EXPECT_FALSE(fs::exists(c / "BROKEN"));
  const std::string authors = Git(c, {"log", "--format=%an: %s", "--no-merges"});
  for (const char* line : {"w1: Task #1: write b.txt with from B", "w2: Task #2: write a.txt with from A",
                           "w1: Task #3: copy a.txt to c.txt", "w1: Task #4: write BROKEN with oops",
                           "w1: Task #5: clash x.txt with from B", "w2: Task #6: write x.txt with from A"}) {
    EXPECT_NE(authors.find(line), std::string::npos) << line << "\n" << authors;
  }
  // Each landed merge's provenance travelled with the target (DESIGN §30):
  // the notes on origin, written by A's queue, with w1's cost read from the
  // store's copy of its journal on B.
  Git(c, {"fetch", "-q", "origin", "refs/notes/mates:refs/notes/mates"});
  for (const auto& m : *list) {
    if (m.status != MergeState::kMerged) continue;
    Json note = Json::parse(Git(c, {"notes", "--ref=mates", "show", m.merged_commit}));
    EXPECT_EQ(note["task"]["id"], m.task) << note.dump();
    EXPECT_EQ(note["agent"], m.owner) << note.dump();
    EXPECT_EQ(note["checks"][0]["command"], "test -s b.txt && test ! -e BROKEN") << note.dump();
    EXPECT_GE(note["calls"].get<int>(), 2) << note.dump();
  }
  // B, whose queue landed nothing, shows them too (fetched from origin).
  auto shown = mates(b, {"merges", "--team", "iso", "show", std::to_string(list->back().id)});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("decided: by merge-queue (queue)"), std::string::npos) << shown.out;
  // Every commit the target moved to passed the check: none held BROKEN
  // (the failed submission's commit is in the history, merged over by
  // its fix, but the target was never at it). The last is the tip.
  std::set<std::string> moved_to;
  for (const auto& m : *list) {
    if (m.status != MergeState::kMerged) continue;
    moved_to.insert(m.merged_commit);
    auto has = testing::Run({"git", "-C", c.string(), "cat-file", "-e", m.merged_commit + ":BROKEN"});
    EXPECT_NE(has.exit_code, 0) << "the target held BROKEN at " << m.merged_commit;
  }
  EXPECT_EQ(moved_to.size(), 6u);
  EXPECT_EQ(list->back().merged_commit, Git(c, {"rev-parse", "HEAD"}));
  // The bounces reached w1 on B, from merge-queue on A; the conflict's
  // says how to bring the target in (its worktree is not A's to touch).
  auto told = teams_->JournalOf("iso", "w1")->Lines();
  ASSERT_TRUE(told.ok());
  auto heard = [&](const std::string& text) {
    return std::any_of(told->begin(), told->end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(heard("Task #4: check failed"));
  EXPECT_TRUE(heard("Task #5: conflict in x.txt"));
  EXPECT_TRUE(heard("Run `git fetch origin && git merge origin/mates/iso` in your worktree"));
  // A's own branch of the target followed the remote's.
  EXPECT_EQ(Git(a, {"rev-parse", "refs/heads/mates/iso"}), Git(c, {"rev-parse", "HEAD"}));
  // Who worked where: w1's worktree is B's, w2's A's.
  EXPECT_TRUE(fs::exists(b / ".mates/worktrees/iso/w1/.git"));
  EXPECT_FALSE(fs::exists(a / ".mates/worktrees/iso/w1"));
  EXPECT_TRUE(fs::exists(a / ".mates/worktrees/iso/w2/.git")) << logs();
  EXPECT_FALSE(fs::exists(b / ".mates/worktrees/iso/w2")) << logs();

  // The requests, from a machine with no clone: `merges list`.
  TempDir third;
  auto listed = mates(third.path(), {"merges", "--team", "iso", "list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto j = ParseJson(listed.out);
  ASSERT_TRUE(j.ok() && j->is_array()) << listed.out;
  EXPECT_EQ(j->size(), 8u);

  auto down_a = mates(a, {"down", "--team", "iso", "--grace", "5"});
  EXPECT_EQ(down_a.exit_code, 0) << down_a.err;
  auto down_b = mates(b, {"down", "--team", "iso", "--grace", "5"});
  EXPECT_EQ(down_b.exit_code, 0) << down_b.err;
}

// `mates dashboard --store`: one clear error for a team or a store that is
// not there.
TEST_F(PgRuntimeTest, TheDashboardCommandOnAStoreRefusesWhatIsNotThere) {
  TempDir ws;
  auto none = RunMates(ws.path(), {"dashboard", "--store", url_, "--team", "nosuch"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("nosuch"), std::string::npos) << none.err;
  auto gone = RunMates(ws.path(), {"dashboard", "--store", "postgres://u:hunter2@127.0.0.1:1/x", "--team", "crew"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_EQ(gone.err.find("hunter2"), std::string::npos) << gone.err;
  EXPECT_EQ(gone.err.find('\n'), gone.err.size() - 1) << "one line: " << gone.err;
}

}  // namespace
}  // namespace mates
