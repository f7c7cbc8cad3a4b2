// Teams end to end: the real `mates` binary hosting a lead and persistent
// teammates (scripted provider, and once over HTTP through `mates mock-llm`).
// Tests wait on file events (the store's own Watcher), never on blind sleeps.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "core/clock.h"
#include "core/json.h"
#include "core/waker.h"
#include "store/board.h"
#include "store/message_log.h"
#include "store/messenger.h"
#include "store/requests.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

std::string Fixture(const std::string& name) { return std::string(MATES_SOURCE_DIR) + "/tests/scenarios/" + name; }

std::vector<std::string> Lines(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(ReadAll(p));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// Waits until `done()` holds, re-checking whenever a file in `dir` changes.
bool WaitFor(const fs::path& dir, const std::function<bool()>& done, double timeout_s = 20) {
  auto waker = std::make_shared<Waker>();
  std::error_code ec;
  fs::create_directories(dir, ec);
  auto sub = testing::TestEnv().watcher.Subscribe(dir, "", waker);
  EXPECT_TRUE(sub.ok());
  Deadline deadline = DeadlineIn(timeout_s);
  for (;;) {
    uint64_t g = waker->generation();
    if (done()) return true;
    if (Expired(deadline)) return false;
    waker->WaitChange(g, deadline);
  }
}

std::vector<Message> TeamLog(const fs::path& ws, const std::string& team) {
  uint64_t next = 0;
  auto log = MessageLog(Workspace(ws), team).ReadFrom(0, &next);
  return log.ok() ? *log : std::vector<Message>{};
}

// The demo: the seed's whole flow, every message type, plan approval with a
// write refused before it, real files, and the summary.
TEST(TeamTest, DemoPlaysTheWholeFlow) {
  TempDir ws;
  auto r = testing::RunMates(ws.path() / "demo", {"demo"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::path d = ws.path() / "demo";
  EXPECT_NE(ReadAll(d / "docs/rest-endpoints.md").find("GET | /users/:id/orders"), std::string::npos);
  EXPECT_NE(ReadAll(d / "schema.graphql").find("type Query"), std::string::npos);
  EXPECT_NE(ReadAll(d / "server/resolvers.js").find("createUser"), std::string::npos);
  EXPECT_NE(ReadAll(d / "web/queries.js").find("orders { id total }"), std::string::npos);
  EXPECT_TRUE(fs::exists(d / "web/queries.test.js"));  // the rejected plan's feedback was acted on
  // Frontend's write before approval was refused by plan mode.
  EXPECT_NE(r.err.find("plan mode: write_file would change the workspace"), std::string::npos) << r.err;
  // Every message type of DESIGN §3 went out.
  for (const char* type : {"message", "broadcast", "shutdown_request", "shutdown_response",
                           "plan_approval_request", "plan_approval_response"}) {
    EXPECT_NE(r.out.find(std::string(type) + " "), std::string::npos) << type << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("analyst #1; backend #2, #3; frontend #4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plan_approval_request 2"), std::string::npos) << r.out;  // rejected once, resubmitted
  EXPECT_NE(r.out.find("Migration complete"), std::string::npos);
  // The team was disbanded: its files are gone, every teammate approved.
  EXPECT_FALSE(fs::exists(d / ".teams/rest-to-graphql"));
  EXPECT_NE(r.err.find("Team 'rest-to-graphql' deleted"), std::string::npos) << r.err;
  for (const char* n : {"analyst (approved", "backend (approved", "frontend (approved"}) {
    EXPECT_NE(r.out.find(n), std::string::npos) << n << "\n" << r.out;
  }
  // The run's spending names the team it deleted, as its archive has it.
  std::smatch said;
  const std::regex line(
      "usage: team rest-to-graphql, deleted \\(all runs, mates usage --team rest-to-graphql "
      "--archived\\): (\\d+) calls");
  ASSERT_TRUE(std::regex_search(r.err, said, line)) << r.err;
  auto archived =
      testing::RunMates(d, {"usage", "--team", "rest-to-graphql", "--archived", "--json"});
  ASSERT_EQ(archived.exit_code, 0) << archived.err;
  auto j = ParseJson(archived.out);
  ASSERT_TRUE(j.ok()) << archived.out;
  EXPECT_EQ((*j)["calls"].get<int64_t>(), std::stoll(said[1])) << r.err;
  EXPECT_GE((*j)["calls"].get<int64_t>(), 40)
      << archived.out;  // the teammates' calls too, not the lead's alone
  // Read without --archived, the deleted team says where it went; a team
  // never made, and a command that cannot read an archive, do not.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"usage"}, {"log"}, {"status"}, {"tasks", "list"}}) {
    args.insert(args.end(), {"--team", "rest-to-graphql"});
    auto gone = testing::RunMates(d, args);
    EXPECT_EQ(gone.exit_code, 1) << args[0];
    EXPECT_NE(gone.err.find("no team 'rest-to-graphql'"), std::string::npos) << gone.err;
    EXPECT_NE(gone.err.find("; it was deleted and archived (20"), std::string::npos) << gone.err;
    EXPECT_NE(gone.err.find("): add --archived to read it"), std::string::npos) << gone.err;
  }
  auto never = testing::RunMates(d, {"usage", "--team", "never-made"});
  EXPECT_EQ(never.exit_code, 1);
  EXPECT_EQ(never.err.find("archived"), std::string::npos) << never.err;
  auto create = testing::RunMates(d, {"tasks", "create", "more", "--team", "rest-to-graphql"});
  EXPECT_NE(create.exit_code, 0);
  EXPECT_EQ(create.err.find("--archived"), std::string::npos) << create.err;
}

TEST(TeamTest, DemoRefusesAFolderInUse) {
  TempDir ws;
  testing::WriteAll(ws.path() / "precious.txt", "keep me\n");
  auto r = testing::RunMates(ws.path(), {"demo"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the demo needs an empty folder"), std::string::npos) << r.err;
  EXPECT_EQ(ReadAll(ws.path() / "precious.txt"), "keep me\n");
}

// A team deleted twice has two archives: reading it without --archived
// names the latest and where the others are listed; --archived reads it.
TEST(TeamTest, ATeamDeletedTwiceNamesItsLatestArchive) {
  TempDir ws;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "twice"}).exit_code, 0);
    auto del = testing::RunMates(ws.path(), {"team", "delete", "twice"});
    ASSERT_EQ(del.exit_code, 0) << del.err;
  }
  auto gone = testing::RunMates(ws.path(), {"log", "--team", "twice"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("it was deleted and archived (latest 20"), std::string::npos) << gone.err;
  EXPECT_NE(
      gone.err.find(" of 2, listed by mates team list --archived): add --archived to read it"),
      std::string::npos)
      << gone.err;
  EXPECT_EQ(testing::RunMates(ws.path(), {"log", "--team", "twice", "--archived"}).exit_code, 0);
  // A team of that name made again is read as it is now.
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "twice"}).exit_code, 0);
  auto back = testing::RunMates(ws.path(), {"usage", "--team", "twice"});
  EXPECT_EQ(back.exit_code, 0) << back.err;
}

TEST(TeamTest, BadTeamOptionsAreUsageErrors) {
  TempDir ws;
  for (auto args : std::vector<std::vector<std::string>>{
           {"run", "--provider", "scripted", "--scenario", Fixture("team_dag.yaml"), "--idle-timeout", "-1", "Go"},
           {"run", "--provider", "scripted", "--scenario", Fixture("team_dag.yaml"), "--shutdown-timeout", "0", "Go"}}) {
    auto r = testing::RunMates(ws.path(), args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
  }
  auto r = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("team_dag.yaml"),
                                         "--team", "../x", "Go"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("team name"), std::string::npos) << r.err;
}

// 8 teammates, 100 tasks in a dependency graph: each task done once, never
// before its blockers, by teammates that organised themselves.
TEST(TeamTest, EightTeammatesWorkThroughAHundredTaskGraph) {
  TempDir ws;
  Workspace w(ws.path());
  ASSERT_TRUE(Roster(w).CreateTeam("dag").ok());
  Board board(w.TasksDir("dag"));
  std::map<int64_t, std::vector<int64_t>> blockers;
  for (int64_t i = 1; i <= 100; ++i) {
    std::vector<int64_t> b;
    if (i > 1) b.push_back(i / 2);          // a tree…
    if (i > 12 && i % 3 == 0) b.push_back(i - 11);  // …with cross links
    std::string after;
    for (int64_t x : b) after += " " + std::to_string(x);
    auto t = board.Create({"t" + std::to_string(i) + " after" + after, "part " + std::to_string(i), "", b, ""});
    ASSERT_TRUE(t.ok()) << t.status().message();
    blockers[i] = b;
  }
  auto r = testing::RunMates(ws.path(), {"run", "--team", "dag", "--provider", "scripted", "--scenario",
                                         Fixture("team_dag.yaml"), "--log", (ws.path() / "trace.log").string(), "Go"});
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0);
  // --log: the whole trace, no colours; every line names its agent (the
  // lead's first ones too), and a tool's result sits under its call even
  // with nine agents writing at once.
  auto trace = Lines(ws.path() / "trace.log");
  ASSERT_GT(trace.size(), 300u);
  EXPECT_EQ(trace[0].rfind("[lead] ", 0), 0u) << trace[0];
  size_t results = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(trace[i].find('\033'), std::string::npos) << trace[i];
    size_t at = trace[i].find("  ⎿ ");
    if (at == std::string::npos || trace[i][0] != '[') continue;
    ++results;
    std::string prefix = trace[i].substr(0, trace[i].find(']') + 1);
    ASSERT_GT(i, 0u);
    EXPECT_EQ(trace[i - 1].rfind(prefix + " ⏺", 0), 0u) << "line " << i << ": " << trace[i - 1] << " / " << trace[i];
  }
  EXPECT_GT(results, 200u);
  // Each task started once.
  auto work = Lines(ws.path() / "work.log");
  std::map<int64_t, int> starts;
  for (const auto& l : work) starts[std::stoll(l)]++;
  EXPECT_EQ(starts.size(), 100u);
  for (const auto& [id, n] : starts) EXPECT_EQ(n, 1) << "task " << id;
  // No task started before a blocker was completed (checked in the task files
  // by the teammate as it began).
  EXPECT_FALSE(fs::exists(ws.path() / "early.log")) << ReadAll(ws.path() / "early.log");
  // Work order agrees with the graph too.
  std::map<int64_t, size_t> pos;
  for (size_t i = 0; i < work.size(); ++i) pos[std::stoll(work[i])] = i;
  for (const auto& [id, bs] : blockers) {
    for (int64_t b : bs) EXPECT_LT(pos[b], pos[id]) << b << " before " << id;
  }
  // All completed, and spread over the eight.
  auto tasks = board.List(false);
  ASSERT_TRUE(tasks.ok());
  std::map<std::string, int> by_owner;
  for (const auto& t : *tasks) {
    EXPECT_EQ(t.status, TaskStatus::kCompleted) << t.id;
    by_owner[t.owner]++;
  }
  EXPECT_EQ(by_owner.size(), 8u);
  for (const auto& [owner, n] : by_owner) {
    EXPECT_TRUE(owner.size() == 2 && owner[0] == 'w') << owner;
    EXPECT_LE(n, 40) << owner << " did most of the work alone";
  }
}

// A hundred teammates in one process on 1,000 tasks in levels, each task
// blocked by the whole level before: the idle ones queue in the claim line
// (store/claim_line.h) and are woken as many as there is work. Every task
// is worked once and completed; none is claimed and left (a wake-up lost
// would end the run with tasks pending, or hang it).
TEST(TeamTest, AHundredTeammatesLoseNoTask) {
  TempDir ws;
  Workspace w(ws.path());
  ASSERT_TRUE(Roster(w).CreateTeam("many").ok());
  Board board(w.TasksDir("many"));
  const int kTeammates = 100, kLevels = 50, kWidth = 20;
  for (int level = 0; level < kLevels; ++level) {
    for (int k = 0; k < kWidth; ++k) {
      TaskDraft d;
      d.subject = "t";
      for (int j = (level - 1) * kWidth; level > 0 && j < level * kWidth; ++j) d.blocked_by.push_back(j + 1);
      ASSERT_TRUE(board.Create(d).ok());
    }
  }
  std::string yaml = "rules:\n  - agent: lead\n    when: \"Go\"\n    reply:\n";
  for (int i = 1; i <= kTeammates; ++i) {
    yaml += "      - {type: tool_use, name: Task, input: {team_name: many, name: w" + std::to_string(i) +
            ", description: \"worker\", prompt: \"Work through the tasks on the board.\"}}\n";
  }
  yaml +=
      "  - agent: lead\n    once: false\n    reply: [{type: text, text: \"Noted.\"}]\n"
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+):\"\n    once: false\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}]\n"
      "  - agent: \"w*\"\n    once: false\n    reply: [{type: text, text: \"Done.\"}]\n";
  ASSERT_TRUE(WriteFileAtomic(ws.path() / "many.yaml", yaml).ok());
  // 16 s under ThreadSanitizer alone here, 43 s with CI's other test beside
  // it: the cap is for a hang, not a measure of speed.
  auto r = testing::RunMates(ws.path(),
                             {"run", "--team", "many", "--provider", "scripted", "--scenario",
                              (ws.path() / "many.yaml").string(), "Go"},
                             {}, "", 180);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0);
  auto tasks = board.List(false);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), static_cast<size_t>(kLevels * kWidth));
  std::map<std::string, int> by_owner;
  for (const auto& t : *tasks) {
    EXPECT_EQ(t.status, TaskStatus::kCompleted) << "task #" << t.id << " owned by " << t.owner;
    by_owner[t.owner]++;
  }
  EXPECT_GT(by_owner.size(), static_cast<size_t>(kWidth)) << "more teammates than a level took work";
  // Each task reached exactly one teammate's conversation, once.
  std::map<std::string, int> given;
  for (const auto& e : fs::directory_iterator(w.AgentsDir("many"))) {
    std::string name = e.path().filename().string();
    if (name.size() < 7 || name[0] != 'w' || name.substr(name.size() - 6) != ".jsonl") continue;
    for (const auto& line : Lines(e.path())) {
      auto j = ParseJson(line);
      if (!j.ok() || (*j)["kind"] != "message") continue;
      std::string text = (*j)["message"].dump();
      for (size_t at = text.find("Task #"); at != std::string::npos; at = text.find("Task #", at + 1)) {
        size_t end = text.find(':', at);
        if (end != std::string::npos) given[text.substr(at, end - at)]++;
      }
    }
  }
  EXPECT_EQ(given.size(), static_cast<size_t>(kLevels * kWidth));
  for (const auto& [task, n] : given) EXPECT_EQ(n, 1) << task << " was given " << n << " times";
}

// The lead's REPL with a team: mail waiting at start reaches the lead
// first; a goal line; the roster with statuses; the board; messages to a
// teammate and to a name not in the team.
TEST(TeamTest, ReplShowsTheTeamAndSendsToTeammates) {
  TempDir ws;
  Workspace w(ws.path());
  ASSERT_TRUE(Roster(w).CreateTeam("dag").ok());
  Board board(w.TasksDir("dag"));
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(board.Create({"t" + std::to_string(i) + " after", "", "", {}, ""}).ok());
  Member scout;
  scout.name = "scout";
  scout.backend = MemberBackend::kExternal;  // a member this run does not host
  ASSERT_TRUE(Roster(w).AddMember("dag", scout).ok());
  ASSERT_TRUE(Messenger(w, "dag").Send({MessageType::kMessage, "scout", "lead", "an old note", "note", "", {}, ""}).ok());
  auto r = testing::RunMates(ws.path(), {"run", "--team", "dag", "--provider", "scripted", "--scenario",
                                         Fixture("team_dag.yaml")},
                             {}, "/inbox\nGo\n/team\n/tasks\n/send w3 hello from the REPL\n/send nobody hi\n/quit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("✉ from scout: note"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(no new messages)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("team dag"), std::string::npos) << r.out;
  for (int i = 1; i <= 8; ++i) {
    // The run waited for them: all idle when /team looks.
    EXPECT_NE(r.out.find("  w" + std::to_string(i) + "  teammate  idle"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("#4 [completed] t4 after"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sent to w3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unknown recipient 'nobody'"), std::string::npos) << r.out;
  bool delivered = false;
  for (const auto& m : TeamLog(ws.path(), "dag")) delivered |= m.recipient == "w3" && m.content == "hello from the REPL";
  EXPECT_TRUE(delivered);
}

// Shutdown requests approved, rejected (the lead sees why) and not answered
// (the teammate is stopped, the lead told); a message to a name not in the
// team is an error the model sees.
TEST(TeamTest, ShutdownApprovedRejectedUnansweredAndUnknownRecipient) {
  TempDir ws;
  auto r = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                                         Fixture("team_protocols.yaml"), "--shutdown-timeout", "2", "Start"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("LEAD SAW REJECTION: I am in the middle of the migration."), std::string::npos)
      << r.out << r.err;
  // The lead was told that silent was stopped (in its conversation).
  EXPECT_NE(ReadAll(ws.path() / ".teams/proto/agents/lead.jsonl")
                .find("silent stopped (did not answer the shutdown request)"),
            std::string::npos);
  auto log = TeamLog(ws.path(), "proto");
  bool saw_error = false;
  for (const auto& m : log) {
    if (m.sender == "stubborn" && m.recipient == "lead" && m.content.find("could not reach nobody") != std::string::npos) {
      saw_error = m.content.find("unknown recipient 'nobody'") != std::string::npos;
    }
  }
  EXPECT_TRUE(saw_error) << "the model did not see the unknown-recipient error";
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/proto/nobody_inbox.jsonl"));
  auto c = Roster(Workspace(ws.path())).Load("proto");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Find("agreeable")->status, MemberStatus::kShutdown);
  EXPECT_EQ(c->Find("silent")->status, MemberStatus::kShutdown);
  EXPECT_EQ(c->Find("stubborn")->status, MemberStatus::kIdle);  // it refused; it stays, resumable
  // The requests are on disk with their outcome.
  std::map<std::string, std::string> outcome;
  auto requests = RequestStore(Workspace(ws.path()), "proto").List();
  ASSERT_TRUE(requests.ok());
  for (const auto& q : *requests) {
    if (q.kind == RequestKind::kShutdown) outcome[q.responder] = std::string(RequestStateName(q.status));
  }
  EXPECT_EQ(outcome["agreeable"], "approved");
  EXPECT_EQ(outcome["stubborn"], "rejected");
  EXPECT_EQ(outcome["silent"], "pending");
}

// TeamDelete while a teammate is busy in a long command: bounded wait, the
// teammate is stopped with its command's processes, and the lead is told.
TEST(TeamTest, TeamDeleteWithABusyTeammateOrphansNothing) {
  TempDir ws;
  auto start = std::chrono::steady_clock::now();
  // Without the sandbox: the pid the command writes is the host's view of
  // it (in a sandbox it is its pid namespace's, and the tree dies whole).
  auto r = testing::RunMates(ws.path(), {"run", "--provider", "scripted", "--scenario", Fixture("team_busy.yaml"),
                                         "--shutdown-timeout", "1", "--sandbox", "off", "Start"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("LEAD SAW: Team 'busy' deleted; its files are archived in .teams/.archive/busy-"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("sleeper (stopped: no answer in time)"), std::string::npos) << r.out;
  EXPECT_LT(took, 15.0);
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/busy"));
  // Archived, not destroyed: its messages and roster stay readable.
  auto log = testing::RunMates(ws.path(), {"log", "--team", "busy", "--archived"});
  EXPECT_EQ(log.exit_code, 0) << log.err;
  EXPECT_NE(log.out.find("lead -> sleeper (shutdown_request"), std::string::npos) << log.out;
  auto archived = testing::RunMates(ws.path(), {"team", "list", "--archived"});
  EXPECT_NE(archived.out.find("busy  "), std::string::npos) << archived.out;
  EXPECT_NE(archived.out.find("2 members"), std::string::npos) << archived.out;
  pid_t pid = std::stoi(ReadAll(ws.path() / "sleeper.pid"));
  EXPECT_NE(::kill(pid, 0), 0) << "the teammate's command outlived it";
  EXPECT_NE(testing::Run({"pgrep", "-f", "sleep 37.25"}).exit_code, 0);
}

// The host killed with SIGKILL mid-run; `mates run --team` brings the
// teammates back from their journals and finishes, redoing nothing done.
TEST(TeamTest, KilledHostIsResumedWithNoTaskDoneTwice) {
  TempDir ws;
  Workspace w(ws.path());
  ASSERT_TRUE(Roster(w).CreateTeam("res").ok());
  Board board(w.TasksDir("res"));
  for (int i = 1; i <= 12; ++i) ASSERT_TRUE(board.Create({"job " + std::to_string(i), "", "", {}, ""}).ok());
  std::vector<std::string> args = {"run", "--team", "res", "--provider", "scripted", "--scenario",
                                   Fixture("team_resume.yaml")};
  auto first_args = args;
  first_args.push_back("Go");
  Subprocess host = testing::StartMates(ws.path(), first_args);
  ASSERT_TRUE(WaitFor(ws.path(), [&] { return Lines(ws.path() / "work.log").size() >= 4; }));
  host.Signal(SIGKILL);
  auto killed = host.Wait();
  EXPECT_EQ(killed.term_signal, SIGKILL);
  size_t lines_at_kill = Lines(ws.path() / "work.log").size();
  std::set<int64_t> done_at_kill;
  auto before = board.List(false);
  ASSERT_TRUE(before.ok());
  for (const auto& t : *before) {
    if (t.status == TaskStatus::kCompleted) done_at_kill.insert(t.id);
  }
  ASSERT_LT(done_at_kill.size(), 12u) << "the run finished before it was killed";

  // Resume: no goal, no input — the resumed work is finished, then the REPL
  // sees end of input.
  auto r = testing::RunMates(ws.path(), args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resumed teammates of team res: r1, r2"), std::string::npos) << r.err;
  auto after = board.List(false);
  ASSERT_TRUE(after.ok());
  for (const auto& t : *after) EXPECT_EQ(t.status, TaskStatus::kCompleted) << "task " << t.id;
  auto work = Lines(ws.path() / "work.log");
  for (size_t i = lines_at_kill; i < work.size(); ++i) {
    EXPECT_EQ(done_at_kill.count(std::stoll(work[i])), 0u) << "task " << work[i] << " was done twice";
  }
  std::set<int64_t> started(done_at_kill);
  for (const auto& l : work) started.insert(std::stoll(l));
  EXPECT_EQ(started.size(), 12u);
}

// While the team runs, another process writes to a teammate and adds a
// task: the idle teammate wakes and answers, and claims the task.
TEST(TeamTest, AnotherProcessMessagesATeammateAndAddsATask) {
  TempDir ws;
  Workspace w(ws.path());
  ASSERT_EQ(::mkfifo((ws.path() / "gate.fifo").c_str(), 0600), 0);
  Subprocess host = testing::StartMates(ws.path(), {"run", "--team", "io", "--provider", "scripted", "--scenario",
                                                    Fixture("team_interop.yaml"), "Go"});
  auto status_of = [&](const std::string& name) {
    auto c = Roster(w).Load("io");
    const Member* m = c.ok() ? c->Find(name) : nullptr;
    return m ? std::optional<MemberStatus>(m->status) : std::nullopt;
  };
  fs::path team_dir = w.TeamDir("io");
  ASSERT_TRUE(WaitFor(team_dir, [&] {
    return status_of("helper") == MemberStatus::kIdle && status_of("gate") == MemberStatus::kActive;
  }));

  // Five round trips, one after the other. Event-driven, each takes a few
  // milliseconds; an idle teammate that looked once a second (the seeds'
  // loop) would need ~2.5 s for five, and under 1 s in fewer than 1 % of
  // runs.
  double total_ms = 0;
  for (int i = 1; i <= 5; ++i) {
    std::string n = std::to_string(i);
    auto s = testing::RunMates(ws.path(), {"send", "--team", "io", "--to", "helper", "ping " + n + " from another shell"});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    auto sent_at = std::chrono::steady_clock::now();
    auto pong = [&] {
      for (const auto& m : TeamLog(ws.path(), "io")) {
        if (m.sender == "helper" && m.content == "pong " + n) return true;
      }
      return false;
    };
    ASSERT_TRUE(WaitFor(team_dir, pong));
    total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent_at).count();
  }
  EXPECT_LT(total_ms, 1000) << "five message round trips took " << total_ms << " ms: polled, not woken";

  auto t = testing::RunMates(ws.path(), {"tasks", "--team", "io", "create", "External job", "--description",
                                         "write external.txt"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  Board board(w.TasksDir("io"));
  ASSERT_TRUE(WaitFor(w.TasksDir("io"), [&] {
    auto task = board.Get(1);
    return task.ok() && task->status == TaskStatus::kCompleted;
  }));
  EXPECT_EQ(board.Get(1)->owner, "helper");
  EXPECT_EQ(ReadAll(ws.path() / "external.txt"), "done by helper\n");

  // Open the gate: the busy teammate finishes, and the run ends by itself.
  int fd = ::open((ws.path() / "gate.fifo").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "now\n", 4), 4);
  ::close(fd);
  auto r = host.Wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  bool gate_reported = false;
  for (const auto& m : TeamLog(ws.path(), "io")) gate_reported |= m.sender == "gate" && m.content == "gate opened: now";
  EXPECT_TRUE(gate_reported);
}

// The demo's flow over real HTTP through `mates mock-llm`: no request refused.
TEST(TeamTest, DemoFlowOverHttpThroughMockLlm) {
  TempDir ws, tmp;
  auto mock = testing::Start({testing::MatesBinary(), "mock-llm", "--scenario",
                              std::string(MATES_SOURCE_DIR) + "/examples/demo/rest-to-graphql.yaml", "--record",
                              (tmp.path() / "rec.jsonl").string(), "--quiet"});
  auto line = mock.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  std::string url = line->substr(std::string("listening on ").size());
  testing::WriteAll(ws.path() / "api/routes.txt", "GET /users\nGET /users/:id\nPOST /users\nGET /users/:id/orders\n");
  auto r = testing::RunMates(ws.path(), {"run", "--provider", "anthropic", "--base-url", url, "--shutdown-timeout",
                                         "10", "Migrate the app from REST to GraphQL."});
  mock.Signal(SIGTERM);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Migration complete"), std::string::npos) << r.out;
  EXPECT_NE(ReadAll(ws.path() / "web/queries.js").find("orders { id total }"), std::string::npos);
  std::istringstream in(ReadAll(tmp.path() / "rec.jsonl"));
  std::string rec;
  std::set<std::string> agents;
  int n = 0;
  while (std::getline(in, rec)) {
    auto j = ParseJson(rec);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ((*j)["status"], 200) << rec.substr(0, 2000);
    agents.insert((*j)["body"]["metadata"]["user_id"].get<std::string>());
    ++n;
  }
  EXPECT_GT(n, 20);
  // Agents told apart by metadata.user_id: the lead (in its home team, then
  // in the new one) and three teammates.
  EXPECT_EQ(agents, (std::set<std::string>{"lead@default", "lead@rest-to-graphql", "analyst@rest-to-graphql",
                                           "backend@rest-to-graphql", "frontend@rest-to-graphql"}));
}

}  // namespace
}  // namespace mates
