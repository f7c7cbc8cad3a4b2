// Faults across machines (DESIGN §32) on a real PostgreSQL server, with
// real hosts (`mates up --teammates` processes in workspaces of their own):
// a host frozen past its lease (SIGSTOP, its connections still open) is
// taken over by another within the lease and 5 s, and once thawed it
// redoes nothing and overwrites nothing, each stale write refused by its
// fencing token.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/spend.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/process_tree.h"
#include "core/waker.h"
#include "llm/types.h"
#include "pg/connection.h"
#include "pg/listener.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "store/host_info.h"
#include "store/team_store.h"
#include "support/pg_suite.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::RunMates;
using testing::TempDir;

class PgFaultsTest : public testing::PgTeamsSuite {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(OpenDatabase("f")); }

  testing::CommandResult Mates(const fs::path& ws, std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--store", url_});
    return RunMates(ws, args);
  }

  std::optional<AgentLease> LeaseOf(const std::string& team, const std::string& agent) {
    auto leases = teams_->Leases(team);
    if (!leases.ok()) return std::nullopt;
    for (const auto& l : *leases) {
      if (l.agent == agent) return l;
    }
    return std::nullopt;
  }

  // Whether `agent` is held, by a live lease, by the host of `team` in
  // workspace `ws` (as its host.json says now).
  bool HeldBy(const std::string& team, const std::string& agent, const fs::path& ws) {
    auto l = LeaseOf(team, agent);
    auto host = ReadHostInfo(Workspace(ws), team);
    return l && l->live && host.ok() && l->holder.find("host " + std::to_string(host->pid) + " ") == 0;
  }

  // Two more stores on the test's database, as two hosts would have
  // (each its own sessions, leases and name), and the team `team` made.
  void TwoHosts(const std::string& team, std::unique_ptr<pg::Store>* a, std::unique_ptr<pg::Store>* b) {
    auto target = pg::ParseTarget(url_);
    ASSERT_TRUE(target.ok());
    for (auto* s : {a, b}) {
      auto opened = pg::Store::Open(*target);
      ASSERT_TRUE(opened.ok()) << opened.status().message();
      *s = std::move(*opened);
    }
    ASSERT_TRUE(teams_->CreateTeam(team, "lead", "").ok());
  }

  // A message `id` from the lead in w1's inbox, and `s` holding w1 and
  // draining that inbox, the batch read and not committed.
  struct Draining {
    pg::LivenessLock held;
    pg::MailRows::Batch batch;
  };
  void StartDrain(pg::Store& s, const std::string& team, const std::string& id, std::optional<Draining>* out) {
    Message m;
    m.id = id;
    m.sender = "lead";
    m.recipient = "w1";
    m.content = "hello";
    ASSERT_TRUE(store_->mail().Append(team, "w1", m).ok());
    auto held = s.liveness().Hold(team, "w1");
    ASSERT_TRUE(held.ok()) << held.status().message();
    auto batch = s.mail().BeginDrain(team, "w1", {});
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    ASSERT_EQ(batch->messages.size(), 1u);
    out->emplace(Draining{std::move(*held), std::move(*batch)});
  }

  TempDir dir_;
};

// A host's process, stopped or not, is gone when the test ends: continued,
// asked down, killed if it stays.
struct HostAtExit {
  fs::path ws;
  std::string url, team;
  ~HostAtExit() {
    auto info = ReadHostInfo(Workspace(ws), team);
    if (info.ok()) ::kill(static_cast<pid_t>(info->pid), SIGCONT);
    RunMates(ws, {"down", "--store", url, "--team", team, "--grace", "0", "--timeout", "5"});
    if (info.ok() && ProcessLives(static_cast<pid_t>(info->pid), info->start_time)) {
      ::kill(static_cast<pid_t>(info->pid), SIGKILL);
    }
  }
};

// Host A hosts w1, which claims #1 and waits in a tool at a gate; A is
// frozen (SIGSTOP: its sessions stay open, so only its lease's end tells).
// Host B takes w1 over within the lease and 5 s, resumes it from its
// journal's copy, and w1 completes #1 there. Thawed, A's tool ends and A
// goes on as if nothing happened: what it writes for w1 (the tool's result
// into the journal's copy, a status, a claim) carries the old fencing
// token and is refused, A stops w1 and says why, and `status` on any
// machine names the host that took w1 over and the one whose lease ended.
TEST_F(PgFaultsTest, AFrozenHostIsTakenOverAndOnceThawedOverwritesNothing) {
  TempDir lead_ws, a_ws, b_ws, third;
  const fs::path gate = dir_.path() / "gate";
  ASSERT_EQ(::mkfifo(gate.c_str(), 0600), 0);
  const std::string yaml =
      "rules:\n"
      "  - agent: w1\n    when: \"interrupted: the agent was restarted\"\n    once: false\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"1\", status: completed}}]\n"
      "  - agent: w1\n    when: \"Task #1: held\"\n"
      "    reply: [{type: tool_use, name: bash, input: {command: \"read -r line < " + gate.string() +
      " && echo gate said $line\"}}]\n"
      "  - agent: w1\n    when: \"gate said\"\n"
      "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"1\", status: completed}}]\n"
      "  - agent: \"*\"\n    once: false\n    reply: [{type: text, text: \"Done.\"}]\n";
  const fs::path scenario = dir_.path() / "frozen.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, yaml).ok());
  const std::vector<std::string> up = {"up",         "--teammates", "--team",    "ice",
                                       "--provider", "scripted",    "--scenario", scenario.string(),
                                       "--sandbox",  "off"};
  ASSERT_EQ(Mates(lead_ws.path(), {"team", "create", "ice"}).exit_code, 0);
  ASSERT_EQ(Mates(a_ws.path(), {"team", "join", "ice", "w1", "--backend", "in-process"}).exit_code, 0);
  ASSERT_EQ(Mates(lead_ws.path(), {"tasks", "create", "--team", "ice", "held"}).exit_code, 0);
  ASSERT_EQ(Mates(lead_ws.path(), {"tasks", "update", "--team", "ice", "1", "--owner", "w1"}).exit_code, 0);
  HostAtExit a_at_exit{a_ws.path(), url_, "ice"}, b_at_exit{b_ws.path(), url_, "ice"};
  struct GateAtExit {
    fs::path gate;
    ~GateAtExit() {
      int fd = ::open(gate.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  } gate_at_exit{gate};

  // A adopts w1, which claims #1 and waits at the gate; B hosts whatever
  // no host has (nothing, yet).
  auto up_a = Mates(a_ws.path(), up);
  ASSERT_EQ(up_a.exit_code, 0) << up_a.out << up_a.err;
  auto waker = std::make_shared<Waker>();
  auto board_watch = teams_->WatchBoard("ice", waker);
  auto journal_watch = teams_->Watch("ice", TeamPart::kJournals, waker);
  ASSERT_TRUE(board_watch.ok() && journal_watch.ok());
  auto board = teams_->Board("ice");
  auto copy_has = [&](const std::string& text) {
    auto lines = teams_->JournalOf("ice", "w1")->Lines();
    return lines.ok() && std::any_of(lines->begin(), lines->end(),
                                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  const fs::path a_log = a_ws.path() / ".teams/ice/host.log";
  const fs::path b_log = b_ws.path() / ".teams/ice/host.log";
  ASSERT_TRUE(testing::UntilWoken(waker, [&] {
    auto t = board->Get(1);
    return t.ok() && t->status == TaskStatus::kInProgress && copy_has("read -r line");
  })) << ReadAll(a_log);
  auto a_lease = LeaseOf("ice", "w1");
  ASSERT_TRUE(a_lease && a_lease->live);
  EXPECT_EQ(a_lease->taken_from, "");
  auto up_b = Mates(b_ws.path(), up);
  ASSERT_EQ(up_b.exit_code, 0) << up_b.out << up_b.err;
  EXPECT_EQ(LeaseOf("ice", "w1")->holder, a_lease->holder) << "B took a live lease";

  // A freezes. B holds w1 within the lease and 5 s, with the next token.
  auto a = ReadHostInfo(Workspace(a_ws.path()), "ice");
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(::kill(static_cast<pid_t>(a->pid), SIGSTOP), 0);
  const auto frozen_at = SteadyClock::now();
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto l = LeaseOf("ice", "w1");
    return l && l->live && l->holder != a_lease->holder;
  }, 60)) << ReadAll(b_log);
  const double took = std::chrono::duration<double>(SteadyClock::now() - frozen_at).count();
  EXPECT_LE(took, pg::LivenessLocks::kLeaseS + 5) << "taken over after " << took << " s";
  auto b_lease = LeaseOf("ice", "w1");
  EXPECT_EQ(b_lease->token, a_lease->token + 1);
  EXPECT_EQ(b_lease->taken_from, a_lease->holder);
  EXPECT_NE(b_lease->holder.find("host " + std::to_string(ReadHostInfo(Workspace(b_ws.path()), "ice")->pid)),
            std::string::npos)
      << b_lease->holder;
  // Resumed at B from its journal's copy, w1 completes #1 there.
  ASSERT_TRUE(testing::UntilWoken(waker, [&] { return board->Get(1)->status == TaskStatus::kCompleted; }))
      << ReadAll(b_log);
  auto copy_before = teams_->JournalOf("ice", "w1")->Lines();
  ASSERT_TRUE(copy_before.ok());

  // `status` from a machine that hosts nothing: who holds w1, whose lease ended.
  auto shown = Mates(third.path(), {"status", "--team", "ice", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto j = ParseJson(shown.out);
  ASSERT_TRUE(j.ok()) << shown.out;
  bool seen = false;
  for (const auto& m : (*j)["members"]) {
    if (m["name"] != "w1") continue;
    seen = true;
    EXPECT_EQ(m["lease"]["holder"], b_lease->holder) << m.dump();
    EXPECT_EQ(m["lease"]["taken_from"], a_lease->holder) << m.dump();
    EXPECT_EQ(m["lease"]["token"], b_lease->token) << m.dump();
  }
  EXPECT_TRUE(seen) << shown.out;
  auto text = Mates(third.path(), {"status", "--team", "ice"});
  EXPECT_NE(text.out.find("taken over: w1 by " + b_lease->holder), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the lease of " + a_lease->holder + " ended unrenewed"), std::string::npos) << text.out;

  // A's tool ends while A is frozen (its reader at the gate is a process
  // of its own, not stopped), then A thaws: A's w1 goes on as it was, and
  // whatever it writes for w1 is refused. A stops it and says why.
  {
    int fd = ::open(gate.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(fd, 0) << "nobody reads at the gate: " << std::strerror(errno);
    ASSERT_EQ(::write(fd, "thawed\n", 7), 7);
    ::close(fd);
  }
  ASSERT_EQ(::kill(static_cast<pid_t>(a->pid), SIGCONT), 0);
  ASSERT_TRUE(testing::WaitUntil([&] {
    const std::string log = ReadAll(a_log);
    return log.find("is hosted by another process now") != std::string::npos &&
           log.find("w1 stopped") != std::string::npos;
  }, 30)) << ReadAll(a_log);
  EXPECT_NE(ReadAll(a_log).find("this host acts for it no more"), std::string::npos) << ReadAll(a_log);
  // The copy, B's, has nothing of A's after the freeze.
  EXPECT_FALSE(copy_has("gate said thawed")) << "A's stale journal lines reached the store";
  auto copy_after = teams_->JournalOf("ice", "w1")->Lines();
  ASSERT_TRUE(copy_after.ok());
  ASSERT_GE(copy_after->size(), copy_before->size());
  EXPECT_TRUE(std::equal(copy_before->begin(), copy_before->end(), copy_after->begin()))
      << "a line of B's copy was overwritten";
  // #1 was completed once, at B; w1's status is B's; B still holds it.
  EXPECT_EQ(board->Get(1)->status, TaskStatus::kCompleted);
  auto history = board->Get(1)->history;
  EXPECT_EQ(std::count_if(history.begin(), history.end(),
                          [](const TaskEvent& e) { return e.status == TaskStatus::kCompleted; }),
            1);
  auto l = LeaseOf("ice", "w1");
  ASSERT_TRUE(l && l->live);
  EXPECT_EQ(l->holder, b_lease->holder);
  EXPECT_EQ(l->token, b_lease->token);
}

// Every kind of write a host makes for an agent carries the token of the
// lease it holds the agent by. Store A holds w1; its lease's session ends
// (as a dropped network would end it) and store B takes w1 over before A's
// keeper looks: each write A then makes as w1 is refused, naming B, and
// changes nothing, and A is told it lost w1; B's same writes go through.
TEST_F(PgFaultsTest, EveryWriteWithAStaleFencingTokenIsRefused) {
  std::unique_ptr<pg::Store> a, b;
  ASSERT_NO_FATAL_FAILURE(TwoHosts("fence", &a, &b));
  auto target = pg::ParseTarget(url_);
  Member w1;
  w1.name = "w1";
  ASSERT_TRUE(teams_->AddMember("fence", w1).ok());
  for (const char* subject : {"one", "two", "three"}) ASSERT_TRUE(a->tasks().Create("fence", {subject}).ok());
  auto held_a = a->liveness().Hold("fence", "w1");
  ASSERT_TRUE(held_a.ok()) << held_a.status().message();
  std::atomic<bool> told{false};
  held_a->OnLost([&] { told.store(true); });
  EXPECT_EQ(held_a->token(), 1);
  // Another store of this process may not take a live lease.
  EXPECT_EQ(b->liveness().Hold("fence", "w1").status().code(), StatusCode::kConflict);
  auto admin = pg::Connection::Open(*target, 10);
  ASSERT_TRUE(admin.ok());
  Result<pg::LivenessLock> held_b = Status::Unavailable("not yet");
  ASSERT_TRUE(testing::WaitUntil([&] {
    (void)admin->Exec("SELECT pg_terminate_backend(pid) FROM mates_agent_leases WHERE team = 'fence' AND agent = 'w1'");
    held_b = b->liveness().Hold("fence", "w1");
    return held_b.ok();
  }, 20));
  EXPECT_EQ(held_b->token(), 2);

  Message m;
  m.id = "m-stale";
  m.sender = "w1";
  m.recipient = "lead";
  m.content = "from a stale host";
  MergeRequest mr;
  mr.owner = "w1";
  mr.task = 1;
  mr.branch = "mates/fence/w1";
  mr.commit = std::string(40, 'a');
  mr.target = "main";
  TaskPatch start;
  start.status = TaskStatus::kInProgress;
  start.owner = "w1";
  auto stale = [&](const Status& s, const std::string& what) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << what << ": " << s.message();
    EXPECT_NE(s.message().find("with fencing token 1 was refused as stale"), std::string::npos) << what << ": " << s.message();
    EXPECT_NE(s.message().find("holds it with token 2"), std::string::npos) << what << ": " << s.message();
  };
  pg::Store& sa = *a;
  stale(sa.tasks().ClaimNext("fence", "w1", nullptr).status(), "a claim of the next task");
  stale(sa.tasks().Claim("fence", 1, "w1").status(), "a claim of #1");
  stale(sa.tasks().Update("fence", 2, start, {"w1", false}).status(), "an update");
  stale(sa.mail().Append("fence", "lead", m), "a message into an inbox");
  stale(sa.log().AppendDelivered("fence", {m}, m), "a message sent");
  // A drain is fenced at its commit (it waits on its reader between): what
  // it took stays in the inbox, for the new holder.
  Message for_w1 = m;
  for_w1.id = "m-for-w1";
  for_w1.sender = "lead";
  for_w1.recipient = "w1";
  ASSERT_TRUE(sa.mail().Append("fence", "w1", for_w1).ok());
  {
    auto drain = sa.mail().BeginDrain("fence", "w1", nullptr);
    ASSERT_TRUE(drain.ok()) << drain.status().message();
    EXPECT_EQ(drain->messages.size(), 1u);
    stale(sa.mail().Commit(*drain), "a drain of its inbox");
  }
  EXPECT_EQ(*sa.mail().PendingCount("fence", "w1"), 1u) << "a stale drain took what it read";
  stale(sa.merges().Create("fence", mr).status(), "a merge submitted");
  stale(sa.rosters().SetStatuses("fence", {{"w1", MemberStatus::kActive}}), "its status");
  stale(sa.journals().Put("fence", "w1", 0, {"{\"kind\":\"stale\"}"}), "a journal line");
  stale(sa.journals().Replace("fence", "w1", {"{\"kind\":\"stale\"}"}), "its journal rewritten");
  EXPECT_TRUE(told.load()) << "A was not told it lost w1";
  EXPECT_FALSE(held_a->StillHeld());
  // Nothing changed: the board, the inbox and log, the merges, the roster, the journal.
  auto tasks = teams_->Board("fence")->List(false);
  ASSERT_TRUE(tasks.ok());
  for (const auto& t : *tasks) {
    EXPECT_EQ(t.status, TaskStatus::kPending) << "#" << t.id;
    EXPECT_EQ(t.owner, "") << "#" << t.id;
  }
  EXPECT_EQ(*sa.mail().PendingCount("fence", "lead"), 0u);
  EXPECT_FALSE(sa.log().Find("fence", "m-stale")->has_value());
  EXPECT_TRUE(sa.merges().List("fence")->empty());
  EXPECT_EQ(teams_->LoadTeam("fence")->Find("w1")->status, w1.status);
  EXPECT_TRUE(teams_->JournalOf("fence", "w1")->Lines()->empty());

  // B holds the newest token: the same writes go through.
  pg::Store& sb = *b;
  auto claimed = sb.tasks().ClaimNext("fence", "w1", nullptr);
  ASSERT_TRUE(claimed.ok() && claimed->has_value()) << claimed.status().message();
  EXPECT_TRUE(sb.tasks().Update("fence", 2, start, {"w1", false}).ok());
  EXPECT_TRUE(sb.mail().Append("fence", "lead", m).ok());
  EXPECT_TRUE(sb.journals().Put("fence", "w1", 0, {"{\"kind\":\"fresh\"}"}).ok());
  EXPECT_TRUE(sb.rosters().SetStatuses("fence", {{"w1", MemberStatus::kActive}}).ok());
  EXPECT_TRUE(sb.tasks().Complete("fence", (*claimed)->id, "w1").ok());
  EXPECT_EQ(*sb.mail().PendingCount("fence", "lead"), 1u);
  auto taken = sb.mail().Drain("fence", "w1", nullptr);
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].id, "m-for-w1");
  // A person's command (no lease held for its name) is not fenced.
  Message from_user = m;
  from_user.id = "m-user";
  from_user.sender = "user";
  EXPECT_TRUE(sa.mail().Append("fence", "lead", from_user).ok());

  // A lease row written by another hand: a holder with control characters
  // and 10,000 bytes is shown as one bounded line; a name no member can
  // have is not shown.
  ASSERT_TRUE(admin->Exec("UPDATE mates_agent_leases SET taken_from = $1 WHERE team = 'fence' AND agent = 'w1'",
                          {"\x1b[2J\nforged line" + std::string(10000, 'x')}).ok());
  ASSERT_TRUE(admin->Exec("INSERT INTO mates_agent_leases (team, agent, token, holder, pid, expires_at) VALUES "
                          "('fence', '../x', 1, 'h', 0, now())").ok());
  auto leases = teams_->Leases("fence");
  ASSERT_TRUE(leases.ok()) << leases.status().message();
  ASSERT_EQ(leases->size(), 1u);
  const std::string& shown = (*leases)[0].taken_from;
  EXPECT_LE(shown.size(), 210u);
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\n'), std::string::npos) << shown;
  // The same holder in a stale write's refusal (a sentence that reaches
  // logs, `status` and a model's tool result): one bounded line too.
  ASSERT_TRUE(admin->Exec("UPDATE mates_agent_leases SET holder = $1 WHERE team = 'fence' AND agent = 'w1'",
                          {"\x1b[2J\nforged line" + std::string(10000, 'x')}).ok());
  Status refused = sa.journals().Put("fence", "w1", 5, {"{\"kind\":\"stale\"}"});
  ASSERT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.message();
  EXPECT_LE(refused.message().size(), 600u);
  EXPECT_EQ(refused.message().find('\x1b'), std::string::npos) << refused.message();
  EXPECT_EQ(refused.message().find('\n'), std::string::npos) << refused.message();
}

// A host frozen in the middle of a transaction (here: a session that
// sends nothing more after taking a board's lock) would block every claim
// of the team until it thawed: the server ends such a session after 5 s
// idle in its transaction, and its locks go with it. Another session
// waiting on the lock gets it then; the frozen one finds itself cut off.
TEST_F(PgFaultsTest, ASessionIdleInATransactionIsEndedAndItsLocksGo) {
  auto target = pg::ParseTarget(url_);
  ASSERT_TRUE(target.ok());
  auto frozen = pg::Connection::Open(*target, 10);
  auto other = pg::Connection::Open(*target, 10);
  ASSERT_TRUE(frozen.ok() && other.ok());
  ASSERT_TRUE(frozen->ExecScript("BEGIN").ok());
  ASSERT_TRUE(frozen->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {pg::BoardKey("crew")}).ok());
  ASSERT_TRUE(other->ExecScript("SET statement_timeout = 20000").ok());  // a wait that never ends fails
  const auto asked = SteadyClock::now();
  ASSERT_TRUE(other->ExecScript("BEGIN").ok());
  auto got = other->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {pg::BoardKey("crew")});
  const double waited = std::chrono::duration<double>(SteadyClock::now() - asked).count();
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_GE(waited, 3.0) << "the lock was not held";
  EXPECT_LE(waited, 15.0) << "the idle session kept its lock for " << waited << " s";
  (void)other->ExecScript("COMMIT");
  auto after = frozen->Exec("SELECT 1");
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable) << after.status().message();
}

// An inbox drain waits for its reader to journal what it took before it
// commits: past the 5 s bound above on a loaded machine (ThreadSanitizer's
// store tests lost their drains so). A drain may idle 60 s.
TEST_F(PgFaultsTest, ADrainOutlastsTheIdleBoundWhileItsReaderJournals) {
  ASSERT_TRUE(teams_->CreateTeam("crew", "lead", "").ok());
  // Its host holds w1: the drain is fenced (at its commit), and the lease
  // is renewed meanwhile (a drain that held the lease's row from its
  // start kept the renewal waiting, and the lease ended after 5 s).
  std::optional<Draining> d;
  ASSERT_NO_FATAL_FAILURE(StartDrain(*store_, "crew", "m-slow-reader", &d));
  // The reader journals for 7 s (the time itself is what is tested).
  auto clock = std::make_shared<Waker>();
  clock->WaitChange(clock->generation(), DeadlineIn(7));
  auto admin = pg::Connection::Open(*pg::ParseTarget(url_), 10);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  auto live = admin->Exec("SELECT expires_at > clock_timestamp() FROM mates_agent_leases WHERE team = 'crew' AND "
                          "agent = 'w1'");
  ASSERT_TRUE(live.ok() && live->size() == 1) << live.status().message();
  EXPECT_EQ(live->text(0, 0), "t") << "the lease was not renewed during the drain";
  Status committed = store_->mail().Commit(d->batch);
  EXPECT_TRUE(committed.ok()) << committed.message();
  auto left = teams_->InboxOf("crew", "w1")->Peek();
  ASSERT_TRUE(left.ok()) << left.status().message();
  EXPECT_TRUE(left->empty()) << "the drain was rolled back";
}

// A host frozen (or cut off) in the middle of an inbox drain, which may
// wait on its reader 60 s, held that inbox: the host taking the agent over
// waited as long to read it. Taking over a lease that ended unrenewed
// ends the old host's sessions, and with them its transactions.
TEST_F(PgFaultsTest, ATakeoverEndsTheSessionsOfTheHostItTakesFrom) {
  std::unique_ptr<pg::Store> a, b;
  ASSERT_NO_FATAL_FAILURE(TwoHosts("frozen", &a, &b));
  auto target = pg::ParseTarget(url_);
  std::optional<Draining> d;
  ASSERT_NO_FATAL_FAILURE(StartDrain(*a, "frozen", "m-frozen", &d));
  // A stops renewing (as a frozen host): its lease is made to have ended
  // (its keeper may renew it once more in between: then again).
  auto admin = pg::Connection::Open(*target, 10);
  ASSERT_TRUE(admin.ok());
  Result<pg::LivenessLock> held_b = Status::Unavailable("not yet");
  const auto t0 = SteadyClock::now();
  ASSERT_TRUE(testing::WaitUntil([&] {
    (void)admin->Exec("UPDATE mates_agent_leases SET expires_at = clock_timestamp() - interval '1 second' "
                      "WHERE team = 'frozen' AND agent = 'w1' AND token = 1");
    held_b = b->liveness().Hold("frozen", "w1");
    return held_b.ok();
  }, 20)) << held_b.status().message();
  EXPECT_EQ(held_b->token(), 2);
  // B holds w1 and reads its inbox at once, not when A's drain would
  // have ended.
  auto taken = b->mail().Drain("frozen", "w1", {});
  const double waited = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].id, "m-frozen");
  EXPECT_LT(waited, 10) << "B took " << waited << " s to hold w1 and read its inbox";
  // A's drain is gone with its session: its commit takes nothing.
  EXPECT_FALSE(a->mail().Commit(d->batch).ok());
  auto left = teams_->InboxOf("frozen", "w1")->Peek();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

// A host cut off from the server (its sessions ended, no new one let in)
// cannot renew its leases: an idle teammate woken meanwhile (here by the
// loss of the host's listening session) waits, doing nothing, until it can
// — not end. It was ended for good (shut down, no reason given) and its
// lease let go to be taken again: the fault harness found a teammate shut
// down that way after a server restart, and no host took it again.
TEST_F(PgFaultsTest, AnIdleTeammateWhoseLeaseCannotBeRenewedWaitsForIt) {
  TempDir ws;
  const fs::path scenario = dir_.path() / "noted.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, "rules:\n  - agent: \"*\"\n    once: false\n"
                                        "    reply: [{type: text, text: \"Noted.\"}]\n").ok());
  ASSERT_TRUE(teams_->CreateTeam("calm", "lead", "").ok());
  ASSERT_EQ(Mates(ws.path(), {"team", "join", "calm", "w1", "--backend", "in-process"}).exit_code, 0);
  HostAtExit at_exit{ws.path(), url_, "calm"};
  auto up = Mates(ws.path(), {"up", "--teammates", "--team", "calm", "--provider", "scripted", "--scenario",
                              scenario.string(), "--sandbox", "off"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  // Held, and waiting for work.
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto docs = teams_->Activities("calm");
    return HeldBy("calm", "w1", ws.path()) && docs.ok() && docs->size() == 1 &&
           docs->front().second.find("\"state\":\"idle\"") != std::string::npos;
  }, 20));
  const auto lease = LeaseOf("calm", "w1");
  const fs::path log = ws.path() / ".teams/calm/host.log";
  auto host = ReadHostInfo(Workspace(ws.path()), "calm");
  ASSERT_TRUE(host.ok());
  auto super = pg::Connection::Open(*pg::ParseTarget(server_->SuperUrl()), 10);
  ASSERT_TRUE(super.ok()) << super.status().message();
  auto db = store_->Acquire();
  ASSERT_TRUE(db.ok());
  auto name = (*db)->Exec("SELECT current_database()");
  ASSERT_TRUE(name.ok());
  const std::string database(name->text(0, 0));
  struct LetIn {
    pg::Connection* super;
    std::string database;
    ~LetIn() { (void)super->ExecScript("ALTER DATABASE \"" + database + "\" ALLOW_CONNECTIONS true"); }
  } let_in{&*super, database};
  ASSERT_TRUE(super->ExecScript("ALTER DATABASE \"" + database + "\" ALLOW_CONNECTIONS false").ok());
  auto ended = super->Exec("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name LIKE $1",
                           {"mates % pid " + std::to_string(host->pid)});
  ASSERT_TRUE(ended.ok()) << ended.status().message();
  ASSERT_GT(ended->integer(0, 0), 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return ReadAll(log).find("waiting up to") != std::string::npos; }, 20))
      << ReadAll(log);
  ASSERT_TRUE(super->ExecScript("ALTER DATABASE \"" + database + "\" ALLOW_CONNECTIONS true").ok());
  // Back: it answers, held as before (the same token: not let go and
  // taken again).
  ASSERT_TRUE(testing::WaitUntil([&] { return ReadAll(log).find("is back") != std::string::npos; }, 30))
      << ReadAll(log);
  ASSERT_EQ(Mates(ws.path(), {"send", "--team", "calm", "--to", "w1", "still there?"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return ReadAll(log).find("[w1] Noted.") != std::string::npos; }, 20))
      << ReadAll(log);
  auto team = teams_->LoadTeam("calm");
  ASSERT_TRUE(team.ok());
  EXPECT_NE(team->Find("w1")->status, MemberStatus::kShutdown) << ReadAll(log);
  // Its lease names the session it renews on: until the first renewal on
  // the new one (within a second) it reads as not live, as after any loss
  // of that session; then live, with the same token.
  std::optional<AgentLease> now;
  EXPECT_TRUE(testing::WaitUntil([&] {
    now = LeaseOf("calm", "w1");
    return now && now->live;
  }, 10)) << ReadAll(log);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->token, lease->token) << "let go and taken again:\n" << ReadAll(log);
}

// A lead's host started with --no-adopt takes over no teammate: one
// whose host is gone waits for an `up --teammates` host (here started
// after it), not at the lead's start nor later. Bad uses are one clear
// error each.
TEST_F(PgFaultsTest, ALeadsHostWithNoAdoptLeavesTeammatesToOtherHosts) {
  TempDir lead_ws, b_ws, files_ws;
  const fs::path scenario = dir_.path() / "noted.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, "rules:\n  - agent: \"*\"\n    once: false\n"
                                        "    reply: [{type: text, text: \"Noted.\"}]\n").ok());
  const std::vector<std::string> host = {"--team", "left", "--provider", "scripted", "--scenario", scenario.string(),
                                         "--sandbox", "off"};
  const auto up = [&](std::vector<std::string> head) {
    head.insert(head.end(), host.begin(), host.end());
    return head;
  };
  auto both = Mates(lead_ws.path(), up({"up", "--no-adopt", "--teammates"}));
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("--teammates excludes --no-adopt"), std::string::npos) << both.err;
  std::vector<std::string> on_files = up({"up", "--no-adopt"});
  auto files = RunMates(files_ws.path(), on_files);
  EXPECT_EQ(files.exit_code, 2) << files.err;
  EXPECT_NE(files.err.find("--no-adopt leaves teammates to the other hosts"), std::string::npos) << files.err;

  ASSERT_EQ(Mates(lead_ws.path(), {"team", "create", "left"}).exit_code, 0);
  ASSERT_EQ(Mates(b_ws.path(), {"team", "join", "left", "w1", "--backend", "in-process"}).exit_code, 0);
  HostAtExit lead_at_exit{lead_ws.path(), url_, "left"}, b_at_exit{b_ws.path(), url_, "left"};
  auto lead = Mates(lead_ws.path(), up({"up", "--no-adopt"}));
  ASSERT_EQ(lead.exit_code, 0) << lead.out << lead.err;
  ASSERT_TRUE(testing::WaitUntil([&] { return LeaseOf("left", "lead") && LeaseOf("left", "lead")->live; }, 20));
  auto b = Mates(b_ws.path(), up({"up", "--teammates"}));
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  auto b_host = ReadHostInfo(Workspace(b_ws.path()), "left");
  ASSERT_TRUE(b_host.ok());
  ASSERT_TRUE(testing::WaitUntil([&] { return HeldBy("left", "w1", b_ws.path()); }, 20))
      << ReadAll(lead_ws.path() / ".teams/left/host.log") << ReadAll(b_ws.path() / ".teams/left/host.log");
  // B gone (kill -9): w1 waits for a host of teammates.
  ASSERT_EQ(::kill(static_cast<pid_t>(b_host->pid), SIGKILL), 0);
  auto lease = LeaseOf("left", "w1");
  const int64_t token = lease ? lease->token : 0;
  ASSERT_TRUE(testing::WaitUntil([&] { return LeaseOf("left", "w1") && !LeaseOf("left", "w1")->live; }, 20));
  auto c = Mates(b_ws.path(), up({"up", "--teammates"}));
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  ASSERT_TRUE(testing::WaitUntil([&] { return LeaseOf("left", "w1")->token > token; }, 20));
  EXPECT_TRUE(HeldBy("left", "w1", b_ws.path())) << "w1 went to " << LeaseOf("left", "w1")->holder;
  const std::string lead_log = ReadAll(lead_ws.path() / ".teams/left/host.log");
  EXPECT_EQ(lead_log.find("resumed teammates"), std::string::npos) << lead_log;
}

// Hosts on two machines share their team's budget (DESIGN §15, §32):
// each checks every machine's calls before one of its own, so the team
// spends its budget and at most the calls in flight when it ran out, one
// per teammate, not a budget per host.
TEST_F(PgFaultsTest, HostsOnTwoMachinesShareTheirTeamsBudget) {
  TempDir a_ws, b_ws;
  const fs::path scenario = dir_.path() / "pot.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario,
                              "rules:\n"
                              "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): job\"\n    once: false\n    reply:\n"
                              "      - {type: tool_use, name: bash, input: {command: \"sleep 0.05; echo $1\"}}\n"
                              "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
                              "  - agent: \"*\"\n    once: false\n    reply: [{type: text, text: \"Noted.\"}]\n")
                  .ok());
  constexpr int64_t kBudget = 200000;
  ASSERT_TRUE(teams_->CreateTeam("pot", "lead", "").ok());
  ASSERT_EQ(Mates(a_ws.path(), {"team", "join", "pot", "w1", "--backend", "in-process"}).exit_code, 0);
  ASSERT_EQ(Mates(b_ws.path(), {"team", "join", "pot", "w2", "--backend", "in-process"}).exit_code, 0);
  auto set = Mates(a_ws.path(), {"budget", "set", "--team", "pot", "--tokens", std::to_string(kBudget)});
  ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  // Each host can host one of them only: where the other's journal would
  // go is a folder (as a full disk, it lets that teammate go to a host
  // that can).
  ASSERT_TRUE(EnsureDir(Workspace(a_ws.path()).JournalPath("pot", "w2") / "in-the-way").ok());
  ASSERT_TRUE(EnsureDir(Workspace(b_ws.path()).JournalPath("pot", "w1") / "in-the-way").ok());
  HostAtExit a_at_exit{a_ws.path(), url_, "pot"}, b_at_exit{b_ws.path(), url_, "pot"};
  const std::vector<std::string> up = {"up", "--teammates", "--team", "pot", "--provider", "scripted",
                                       "--scenario", scenario.string(), "--sandbox", "off"};
  for (const fs::path& ws : {a_ws.path(), b_ws.path()}) {
    auto r = Mates(ws, up);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  ASSERT_TRUE(testing::WaitUntil([&] { return HeldBy("pot", "w1", a_ws.path()) && HeldBy("pot", "w2", b_ws.path()); }, 30))
      << ReadAll(a_ws.path() / ".teams/pot/host.log") << ReadAll(b_ws.path() / ".teams/pot/host.log");
  // The work comes once both hosts hold their teammate: both spend at once.
  auto board = teams_->Board("pot");
  for (int i = 1; i <= 400; ++i) {
    TaskDraft d;
    d.subject = "job " + std::to_string(i);
    ASSERT_TRUE(board->Create(d).ok());
  }
  const auto stopped = [&](const std::string& who) {
    auto t = teams_->LoadTeam("pot");
    return t.ok() && t->Find(who) && t->Find(who)->status == MemberStatus::kShutdown;
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return stopped("w1") && stopped("w2"); }, 120))
      << ReadAll(a_ws.path() / ".teams/pot/host.log") << ReadAll(b_ws.path() / ".teams/pot/host.log");
  // What each teammate's calls cost: all of them, and its largest.
  int64_t total = 0, in_flight = 0;
  for (const char* who : {"w1", "w2"}) {
    auto lines = teams_->JournalOf("pot", who)->Lines();
    ASSERT_TRUE(lines.ok()) << lines.status().message();
    int64_t calls = 0, largest = 0;
    for (const auto& l : *lines) {
      auto j = ParseJson(l);
      if (!j.ok() || j->value("kind", "") != "usage") continue;
      const int64_t tokens = agent::TotalTokens(llm::UsageFromJson((*j)["usage"]));
      ++calls;
      total += tokens;
      largest = std::max(largest, tokens);
    }
    EXPECT_GE(calls, 3) << who << " hardly worked: the test shows nothing";
    in_flight += largest;
    std::cout << who << ": " << calls << " calls, the largest " << largest << " tokens\n";
  }
  auto spent = teams_->Spent("pot");
  ASSERT_TRUE(spent.ok() && *spent);
  EXPECT_EQ(agent::PriceSpent(**spent, agent::PriceTable::Builtin()).first, total);
  std::cout << "spent " << total << " of a budget of " << kBudget << "\n";
  EXPECT_GE(total, kBudget) << "the budget was not reached";
  EXPECT_LE(total, kBudget + in_flight) << "the hosts spent a budget each";
  // Each says why it stopped (its activity document follows its status
  // into the store on a writer's thread of its own).
  std::string docs;
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto activities = teams_->Activities("pot");
    if (!activities.ok()) return false;
    docs.clear();
    int said = 0;
    for (const auto& [who, doc] : *activities) {
      docs += who + ": " + doc + "\n";
      said += doc.find("the team's budget of 200.0k tokens is spent") != std::string::npos ? 1 : 0;
    }
    return said == 2;
  }, 20)) << docs;
}

}  // namespace
}  // namespace mates
