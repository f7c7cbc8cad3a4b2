// mates' own runtime on the PostgreSQL store (DESIGN §13): a TeamManager
// whose team is kept in a real server's database hosts teammates that take
// their messages from its inboxes, claim from its board, write their
// statuses to its roster and hold their liveness there; only their journals
// stay in the host's workspace.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <map>

#include "agent/agent_loop.h"
#include "agent/journal.h"
#include "core/clock.h"
#include "core/waker.h"
#include "llm/scripted.h"
#include "pg/connection.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "core/process_tree.h"
#include "store/host_info.h"
#include "store/team_store.h"
#include "support/pg_suite.h"
#include "support/test_util.h"
#include "team/team_manager.h"
#include "tools/builtin_tools.h"

namespace mates {
namespace {

using testing::PgServer;
using testing::RunMates;
using testing::ReadAll;
using testing::TempDir;

class PgRuntimeTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    static int n = 0;
    auto url = server_->CreateDatabase("r" + std::to_string(++n));
    ASSERT_TRUE(url.ok()) << url.status().message();
    url_ = *url;
    auto target = pg::ParseTarget(url_);
    ASSERT_TRUE(target.ok());
    auto c = pg::Connection::Open(*target, 10);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(pg::InitSchema(*c).ok());
    auto store = pg::Store::Open(*target);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    teams_ = pg::StoreTeams(*store_);
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
    Host(const fs::path& dir, llm::Provider* provider, TeamStore* store) : ws(dir) {
      ctx.ws = ws;
      ctx.team = "crew";
      ctx.agent = "lead";
      ctx.is_lead = true;
      ctx.store = store;
      tools = tools::MakeToolRegistry(tools::Scope::kLead);
      agent::AgentSpec spec;
      spec.name = "lead";
      spec.system = "the lead";
      lead = std::make_unique<agent::AgentLoop>(spec, provider, tools.get(), &ctx, nullptr);
      team::TeamOptions opt;
      opt.idle_timeout_s = 0;
      opt.store = store;
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

  // Waits (woken by `watch`'s notifications) until `done` or 60 s.
  template <typename Fn>
  bool Until(const std::shared_ptr<Waker>& waker, Fn done) {
    Deadline until = DeadlineIn(60);
    for (;;) {
      uint64_t g = waker->generation();
      if (done()) return true;
      if (Expired(until)) return false;
      waker->WaitChange(g, DeadlineIn(1));
    }
  }

  std::string url_;
  std::unique_ptr<pg::Store> store_;
  std::unique_ptr<TeamStore> teams_;
  TempDir dir_;
};

std::shared_ptr<llm::Scenario> Scenario() {
  auto s = llm::Scenario::Parse(
      "rules:\n"
      "  - agent: \"w*\"\n"
      "    when: \"Task #(\\\\d+):\"\n"
      "    once: false\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
      "  - agent: \"w*\"\n"
      "    when: \"ping (\\\\w+)\"\n"
      "    once: false\n"
      "    reply: [{type: tool_use, name: SendMessage, input: {recipient: lead, content: \"pong $1\"}}]\n"
      "  - agent: \"*\"\n"
      "    once: false\n"
      "    reply: [{type: text, text: \"Done.\"}]\n",
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

  // Bad input: one clear error each, no password shown.
  auto iso = RunMates(ws.path(), {"run", "--store", url_, "--provider", "scripted", "--scenario",
                                  testing::ScenarioFixture("team_protocols.yaml"), "--isolation", "worktree", "Start"});
  EXPECT_EQ(iso.exit_code, 2) << iso.err;
  EXPECT_NE(iso.err.find("worktree isolation works on the file store only yet"), std::string::npos) << iso.err;
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
  struct Down {
    fs::path ws;
    std::string url;
    ~Down() {
      RunMates(ws, {"down", "--store", url, "--team", "hosted", "--grace", "0", "--timeout", "5"});
      // Whatever happened to down, the host does not outlive the test.
      auto info = ReadHostInfo(Workspace(ws), "hosted");
      if (info.ok() && ProcessStartTime(static_cast<pid_t>(info->pid)) == info->start_time) {
        ::kill(static_cast<pid_t>(info->pid), SIGKILL);
      }
    }
  } down_at_exit{host_ws.path(), url_};
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
  // The host's log says why it shows no dashboard.
  EXPECT_NE(ReadAll(host_ws.path() / ".teams/hosted/host.log").find("no dashboard"), std::string::npos);
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

// A host's liveness lock goes with its connection when the server
// restarts; the store's keeper takes it again, so the agent is seen as
// hosted (and a second host refused) once the server is back.
// The journal's copy in the database (DESIGN §13): lines numbered as the
// file holds them, an append retried is not doubled, a gap ends what is
// read (and what lay past it is overwritten), and a file and its copy are
// reconciled in each direction.
TEST_F(PgRuntimeTest, AJournalsCopyFollowsItsFileAndWinsOverAStaleOne) {
  std::unique_ptr<JournalCopy> copy = teams_->JournalOf("crew", "w1");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(FileTeamStore(Workspace(dir_.path()))->JournalOf("crew", "w1"), nullptr) << "files are their own copy";
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

TEST_F(PgRuntimeTest, ALivenessLockLostWithARestartIsTakenAgain) {
  auto held = teams_->HoldLiveness("crew", "w1");
  ASSERT_TRUE(held.ok()) << held.status().message();
  ASSERT_TRUE(teams_->IsHosted("crew", "w1"));
  ASSERT_TRUE(server_->Restart().ok());
  EXPECT_TRUE(testing::WaitUntil([&] { return teams_->IsHosted("crew", "w1"); }, 20))
      << "the lock was not taken again after the restart";
  auto other = pg::Store::Open(*pg::ParseTarget(url_));
  ASSERT_TRUE(other.ok()) << other.status().message();
  auto second = (*other)->HoldLiveness("crew", "w1");
  EXPECT_EQ(second.status().code(), StatusCode::kConflict) << second.status().message();
  held->reset();
  EXPECT_FALSE(teams_->IsHosted("crew", "w1"));
  EXPECT_TRUE((*other)->HoldLiveness("crew", "w1").ok()) << "let go, it is anyone's";
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

}  // namespace
}  // namespace mates
