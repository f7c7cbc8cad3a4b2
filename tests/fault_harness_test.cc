// The fault harness (DESIGN §32): machines as network namespaces behind a
// bridge (support/netns.h), PostgreSQL in one with the lead's host (its
// merge queue), a `mates up --teammates` host in each of three others,
// and a team of six teammates working a graph of 200 tasks with
// dependencies, each a commit in its worktree merged onto the team's
// target through a shared repository, while ≥ 2,000 messages go between
// them. Each of five faults comes alone, then every pair of two kinds, on
// the machines hosting the most teammates then: a partition (the link
// down, or a packet filter between the machine and the server), kill -9,
// SIGSTOP past the lease, a server restart, a full disk.
// Then a checker reads the recorded history: every task completed once, no
// job begun before its blockers were done nor worked on after it was done,
// every message delivered once, every job merged once (no merge lost, none
// made twice); and, the faults over, a budget set on the team is spent and
// overrun by its calls in flight at most. The recovery of each fault (from
// its start until every teammate is held again by a live host and a task
// was completed since) is printed: bench/README.md's table.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent/spend.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "llm/types.h"
#include "pg/connection.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "sandbox/sandbox.h"
#include "store/host_info.h"
#include "store/team_store.h"
#include "store/workspace.h"
#include "support/netns.h"
#include "support/pg_server.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::Machine;
using testing::ReadAll;
using testing::TempDir;

constexpr int kTasks = 200;
constexpr int kWorkers = 6;
const char* const kTeam = "storm";

// Task i is blocked by i-5 and i-7 (those that exist): a graph 5 wide at
// most, every task after the first five waiting on two others.
std::vector<int64_t> BlockersOf(int64_t id) {
  std::vector<int64_t> out;
  for (int64_t back : {5, 7}) {
    if (id - back >= 1) out.push_back(id - back);
  }
  return out;
}

class FaultHarnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::Network::Unavailable();
    if (!why.empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << "the fault harness cannot run in CI: " << why;
      GTEST_SKIP() << why;
    }
    auto net = testing::Network::Make(dir_.path() / "machines");
    ASSERT_TRUE(net.ok()) << net.status().message();
    net_ = std::move(*net);
    auto db = net_->Add("db");
    ASSERT_TRUE(db.ok()) << db.status().message();
    db_ = std::move(*db);
    testing::PgServer::Options o;
    o.netns_of = db_->init_pid();
    o.listen = db_->address();
    auto server = testing::PgServer::Start(o);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    url_ = server_->Url();
    auto local = pg::ParseTarget(server_->LocalUrl());
    ASSERT_TRUE(local.ok()) << local.status().message();
    auto c = pg::Connection::Open(*local, 10);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(pg::InitSchema(*c).ok());
    conn_ = std::make_unique<pg::Connection>(std::move(*c));
    auto store = pg::Store::Open(*local);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    teams_ = pg::StoreTeams(*store_);
    for (int i = 1; i <= 3; ++i) {
      auto m = net_->Add("m" + std::to_string(i));
      ASSERT_TRUE(m.ok()) << m.status().message();
      machines_.push_back(std::move(*m));
    }
  }

  // The machine's workspace (on its own disk) and what its host writes.
  fs::path Ws(const Machine& m) const { return m.disk() / "ws"; }
  fs::path HostLog(const Machine& m) const { return m.Outside(Ws(m) / ".teams" / kTeam / "host.log"); }

  testing::CommandResult Mates(const Machine& m, std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--store", url_});
    return m.Mates(Ws(m), args);
  }
  // Its host, started (again); the pid the machine numbers it by.
  pid_t Up(const Machine& m) {
    auto r = Mates(m, {"up", "--teammates", "--team", kTeam, "--provider", "scripted", "--scenario",
                       scenario_.string(), "--sandbox", "off"});
    EXPECT_EQ(r.exit_code, 0) << m.name() << ": " << r.out << r.err;
    auto info = ReadHostInfo(Workspace(m.Outside(Ws(m))), kTeam);
    EXPECT_TRUE(info.ok()) << m.name() << ": " << info.status().message();
    return info.ok() ? static_cast<pid_t>(info->pid) : -1;
  }

  // Each worker's lease, live or not, and its holder.
  std::map<std::string, AgentLease> Leases() {
    std::map<std::string, AgentLease> out;
    auto leases = teams_->Leases(kTeam);
    if (leases.ok()) {
      for (auto& l : *leases) out[l.agent] = l;
    }
    return out;
  }
  // A query on the test's own session, opened again when a restart ended it.
  Result<pg::Rows> Query(const std::string& sql) {
    auto r = conn_->Exec(sql, {kTeam});
    if (r.ok()) return r;
    auto c = pg::Connection::Open(*pg::ParseTarget(server_->LocalUrl()), 10);
    if (!c.ok()) return c.status();
    *conn_ = std::move(*c);
    return conn_->Exec(sql, {kTeam});
  }
  size_t Completed() {
    auto r = Query("SELECT count(*) FROM mates_tasks WHERE team = $1 AND status = 'completed'");
    return r.ok() ? static_cast<size_t>(r->integer(0, 0)) : 0;
  }

  TempDir dir_;
  std::unique_ptr<testing::Network> net_;
  std::unique_ptr<Machine> db_;
  std::vector<std::unique_ptr<Machine>> machines_;
  std::unique_ptr<testing::PgServer> server_;
  std::string url_;
  std::unique_ptr<pg::Connection> conn_;
  std::unique_ptr<pg::Store> store_;
  std::unique_ptr<TeamStore> teams_;
  fs::path scenario_;
};

// One fault, or two at once: what is done to start it, what ends it (when
// its agents are held elsewhere), and the hosts it leaves to restart.
struct Fault {
  std::string name;
  int machine;  // the machine whose host is to lose its agents to others (-1: none)
  std::function<void()> start;
  std::function<void()> end;
};

TEST_F(FaultHarnessTest, EachFaultAloneAndTwoAtOnceLosesNothingAndRepeatsNothing) {
  const fs::path work = dir_.path() / "work.log";  // shared by the machines: one file system
  // A job: says it begins (to everyone), leaves its line and its file and
  // works a second (so that 200 of them outlast the faults); in its next
  // turn, the file written, tells the lead, says it is done (to everyone),
  // completes its task. Every message a teammate gets while idle is a
  // turn of its own.
  scenario_ = dir_.path() / "storm.yaml";
  // Its line, then its file, which says whether it was written.
  const std::string write = "{type: tool_use, name: bash, input: {command: \"echo $1 $(date +%s.%N) >> " + work.string() +
                            "; if echo $1 > job-$1.txt; then echo job $1 written; else echo job $1 not written; fi; "
                            "sleep 1\"}}";
  const std::string yaml =
      "rules:\n"
      // A merge the queue could not make (its work not fetched, say) is
      // submitted again, as an agent told so would.
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): check failed\"\n    once: false\n    reply:\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      // A completion its disk refused (the full-disk fault): again, a
      // moment later, as an agent told so would.
      "  - agent: \"w*\"\n    when: \"task #(\\\\d+) could not be committed\"\n    once: false\n"
      "    delay_ms: 500\n    reply:\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      // Taken up on another machine, where its work did not come: done
      // again there, as an agent told so would.
      "  - agent: \"w*\"\n    when: \"task #(\\\\d+) was not completed: you were taken up here\"\n    once: false\n"
      "    reply:\n"
      "      - " + write + "\n"
      // Its file written: the job is told done and completed.
      "  - agent: \"w*\"\n    when: \"job (\\\\d+) written\"\n    once: false\n    reply:\n"
      "      - {type: tool_use, name: SendMessage, input: {recipient: lead, content: \"done $1\"}}\n"
      "      - {type: tool_use, name: SendMessage, input: {type: broadcast, content: \"job $1 is done\"}}\n"
      "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
      // Not written (a full disk): written again a moment later. An agent
      // that completed it anyway would have completed nothing.
      "  - agent: \"w*\"\n    when: \"job (\\\\d+) not written\"\n    once: false\n    delay_ms: 500\n    reply:\n"
      "      - " + write + "\n"
      "  - agent: \"w*\"\n    when: \"Task #(\\\\d+): job\"\n    once: false\n    reply:\n"
      "      - {type: tool_use, name: SendMessage, input: {type: broadcast, content: \"job $1 begins\"}}\n"
      "      - " + write + "\n"
      "  - agent: \"*\"\n    once: false\n    reply: [{type: text, text: \"Noted.\"}]\n";
  ASSERT_TRUE(WriteFileAtomic(scenario_, yaml).ok());

  // The code the jobs write: a repository every machine's workspace is a
  // clone of. Each job is merged onto the team's target there, by the
  // lead's merge queue on the server's machine (which no fault but the
  // restart strikes, and which takes over no teammate: --no-adopt).
  const fs::path origin = dir_.path() / "origin.git";
  {
    const fs::path seed = dir_.path() / "seed";
    for (const std::vector<std::string>& git :
         {std::vector<std::string>{"git", "init", "-q", "--bare", "-b", "main", origin.string()},
          {"git", "clone", "-q", origin.string(), seed.string()},
          {"git", "-C", seed.string(), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m",
           "the project"},
          {"git", "-C", seed.string(), "push", "-q", "origin", "HEAD:main"}}) {
      auto r = testing::Run(git);
      ASSERT_EQ(r.exit_code, 0) << git[1] << ": " << r.err;
    }
  }
  for (Machine* m : {machines_[0].get(), machines_[1].get(), machines_[2].get(), db_.get()}) {
    auto r = m->Run({"git", "clone", "-q", origin.string(), Ws(*m).string()});
    ASSERT_EQ(r.exit_code, 0) << m->name() << ": " << r.err;
  }
  ASSERT_TRUE(teams_->CreateTeam(kTeam, "lead", "").ok());
  {
    auto lead = Mates(*db_, {"up", "--team", kTeam, "--no-adopt", "--isolation", "worktree", "--git-remote", "origin",
                             "--provider", "scripted", "--scenario", scenario_.string(), "--sandbox", "off"});
    ASSERT_EQ(lead.exit_code, 0) << lead.out << lead.err;
  }
  std::unique_ptr<TaskBoard> board = teams_->Board(kTeam);
  // The graph: kTasks jobs, and more of the same chain when the faults
  // need them (below). A job's id is its number.
  size_t total = 0;
  const auto extend = [&](size_t n) {
    for (size_t i = total + 1; i <= total + n; ++i) {
      TaskDraft d;
      d.subject = "job " + std::to_string(i);
      d.blocked_by = BlockersOf(static_cast<int64_t>(i));
      auto made = board->Create(d);
      ASSERT_TRUE(made.ok() && made->id == static_cast<int64_t>(i)) << "job " << i;
    }
    total += n;
  };
  ASSERT_NO_FATAL_FAILURE(extend(kTasks));
  std::vector<std::string> workers;
  for (int i = 1; i <= kWorkers; ++i) {
    workers.push_back("w" + std::to_string(i));
    const Machine& m = *machines_[(i - 1) / 2];
    auto r = Mates(m, {"team", "join", kTeam, workers.back(), "--backend", "in-process", "--isolation", "worktree"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  std::vector<pid_t> hosts;
  for (const auto& m : machines_) hosts.push_back(Up(*m));

  // A fault begins once the team has completed `step` more tasks.
  constexpr size_t kStep = 5;
  const auto wait_progress = [&](size_t more) {
    const size_t want = std::min<size_t>(Completed() + more, total);
    return testing::WaitUntil([&] { return Completed() >= want; }, 120);
  };
  // Recovered: every worker held by a live lease of a host that is not
  // faulted, and a task completed since the fault began.
  const auto recovered = [&](const std::set<std::string>& faulted_holders, size_t done_at_start) {
    if (Completed() <= done_at_start) return false;
    auto leases = Leases();
    for (const auto& w : workers) {
      auto it = leases.find(w);
      if (it == leases.end() || !it->second.live || faulted_holders.count(it->second.holder)) return false;
    }
    return true;
  };
  const auto holders_on = [&](const Machine& m) {
    std::set<std::string> out;
    for (const auto& [agent, l] : Leases()) {
      if (l.live && l.holder.find(" on " + m.name()) != std::string::npos) out.insert(l.holder);
    }
    return out;
  };
  auto host_of = [&](int i) -> Machine& { return *machines_[i]; };

  // The faults on machine i, each with what starts it and what ends it.
  auto partition = [&](int i) {
    return Fault{"partition " + host_of(i).name(), i, [&, i] { ASSERT_TRUE(host_of(i).Cut().ok()); },
                 [&, i] { ASSERT_TRUE(host_of(i).Mend().ok()); }};
  };
  auto kill9 = [&](int i) {
    return Fault{"kill -9 " + host_of(i).name(), i, [&, i] { ASSERT_TRUE(host_of(i).Signal(hosts[i], SIGKILL).ok()); },
                 [&, i] { hosts[i] = Up(host_of(i)); }};
  };
  auto freeze = [&](int i) {
    return Fault{"SIGSTOP " + host_of(i).name(), i, [&, i] { ASSERT_TRUE(host_of(i).Signal(hosts[i], SIGSTOP).ok()); },
                 [&, i] { ASSERT_TRUE(host_of(i).Signal(hosts[i], SIGCONT).ok()); }};
  };
  auto filter = [&](int i) {
    return Fault{"packet filter " + host_of(i).name(), i,
                 [&, i] { ASSERT_TRUE(host_of(i).Filter(db_->address()).ok()); },
                 [&, i] { ASSERT_TRUE(host_of(i).Unfilter().ok()); }};
  };
  auto restart = [&] {
    return Fault{"server restart", -1, [&] { ASSERT_TRUE(server_->Restart().ok()); }, [] {}};
  };
  auto full_disk = [&](int i) {
    return Fault{"full disk " + host_of(i).name(), i, [&, i] { ASSERT_TRUE(host_of(i).Fill().ok()); },
                 [&, i] {
                   // What its agents were doing (its log is on that disk).
                   auto r = Query("SELECT member, doc FROM mates_activity WHERE team = $1 ORDER BY member");
                   for (int row = 0; r.ok() && row < r->size(); ++row) {
                     auto doc = ParseJson(std::string(r->text(row, 1)));
                     if (!doc.ok()) continue;
                     std::string said = doc->value("state", "");
                     if (auto e = doc->find("error"); e != doc->end() && e->is_object()) {
                       said += ": " + e->value("reason", "");
                     }
                     std::cout << "  during full disk " << host_of(i).name() << ": " << r->text(row, 0) << " "
                               << said.substr(0, 200) << "\n";
                   }
                   ASSERT_TRUE(host_of(i).Free().ok());
                 }};
  };
  // Each fault alone, then every pair of two kinds. A fault on a machine
  // strikes the one hosting the most teammates at that moment (a second,
  // the next: the third then hosts all six).
  // A partition is a link down, or a packet filter dropping what goes
  // between the machine and the server (its link up).
  enum Kind { kPartition, kFilter, kKill, kFreeze, kRestart, kDisk };
  const std::vector<std::vector<Kind>> plan = {
      {kPartition}, {kFilter}, {kKill}, {kFreeze}, {kRestart}, {kDisk}, {kFilter, kKill},
      {kPartition, kKill}, {kPartition, kFreeze}, {kPartition, kRestart}, {kPartition, kDisk},
      {kKill, kFreeze}, {kKill, kRestart}, {kKill, kDisk},
      {kFreeze, kRestart}, {kFreeze, kDisk}, {kRestart, kDisk},
  };
  const auto busiest_first = [&] {
    std::vector<std::pair<int, int>> held;  // (teammates held, machine)
    for (int i = 0; i < static_cast<int>(machines_.size()); ++i) {
      int n = 0;
      for (const auto& [agent, l] : Leases()) n += l.live && l.holder.find(" on " + host_of(i).name()) != std::string::npos;
      held.push_back({-n, i});
    }
    std::sort(held.begin(), held.end());
    std::vector<int> order;
    for (const auto& [n, i] : held) order.push_back(i);
    return order;
  };
  const auto faults_of = [&](const std::vector<Kind>& kinds) {
    const std::vector<int> order = busiest_first();
    size_t next = 0;
    std::vector<Fault> out;
    for (Kind k : kinds) {
      if (k == kRestart) {
        out.push_back(restart());
        continue;
      }
      const int i = order[next++];
      out.push_back(k == kPartition ? partition(i)
                    : k == kFilter ? filter(i)
                    : k == kKill   ? kill9(i)
                    : k == kFreeze ? freeze(i)
                                   : full_disk(i));
    }
    return out;
  };
  struct Recovery {
    std::string what;
    size_t displaced;
    double seconds;
  };
  std::vector<Recovery> recoveries;
  for (const auto& kinds : plan) {
    ASSERT_TRUE(wait_progress(kStep)) << "the team made no progress: " << Completed() << " done";
    std::vector<Fault> faults = faults_of(kinds);
    std::string what;
    std::set<std::string> faulted;
    for (const auto& f : faults) {
      what += (what.empty() ? "" : " + ") + f.name;
      if (f.machine < 0) continue;
      auto h = holders_on(*machines_[f.machine]);
      faulted.insert(h.begin(), h.end());
    }
    size_t displaced = 0;  // teammates the fault is to move to other hosts
    for (const auto& [agent, l] : Leases()) displaced += l.live && faulted.count(l.holder) ? 1 : 0;
    // Work left for every teammate through the fault: a host whose agents
    // have nothing to do writes nothing, and keeps them on a full disk
    // (rightly). A loaded machine completes more during each recovery: the
    // graph grows when less than 40 jobs are left.
    if (const size_t done = Completed(); done + 40 > total) {
      ASSERT_NO_FATAL_FAILURE(extend(done + 60 - total));
    }
    const size_t done_at_start = Completed();
    ASSERT_LE(done_at_start + 30, total) << what << ": the work ran out before the fault";
    const auto began = SteadyClock::now();
    for (auto& f : faults) f.start();
    SCOPED_TRACE(what);
    // Who held each teammate, as it changed: what a failure shows.
    std::map<std::string, std::string> holder;
    std::string moves;
    const bool ok = testing::WaitUntil([&] {
      for (const auto& [agent, l] : Leases()) {
        std::string h = l.holder + (l.live ? "" : " (ended)");
        if (holder[agent] == h) continue;
        holder[agent] = h;
        moves += "  +" + std::to_string(std::chrono::duration<double>(SteadyClock::now() - began).count()) +
                 " s: " + agent + " " + h + ", " + std::to_string(Completed()) + " done\n";
      }
      return recovered(faulted, done_at_start);
    }, 90);
    const double took = std::chrono::duration<double>(SteadyClock::now() - began).count();
    for (auto& f : faults) f.end();
    if (!ok) {
      auto t = Query("SELECT id, owner FROM mates_tasks WHERE team = $1 AND status = 'in_progress' ORDER BY id");
      for (int row = 0; t.ok() && row < t->size(); ++row) {
        moves += "  in progress: #" + std::string(t->text(row, 0)) + " " + std::string(t->text(row, 1)) + "\n";
      }
    }
    ASSERT_TRUE(ok) << what << ": not recovered in 90 s; " << Completed() << " done; the holders:\n" << moves
                    << ReadAll(HostLog(*machines_[0])) << ReadAll(HostLog(*machines_[1]))
                    << ReadAll(HostLog(*machines_[2]));
    recoveries.push_back({what, displaced, took});
  }
  if (!testing::WaitUntil([&] { return Completed() == total; }, 300)) {
    // Stalled: what is in progress, which requests are open, what the
    // hosts said.
    std::string state;
    auto t = Query("SELECT id, owner, metadata FROM mates_tasks WHERE team = $1 AND status = 'in_progress' ORDER BY id");
    for (int row = 0; t.ok() && row < t->size(); ++row) {
      state += "  in progress: #" + std::string(t->text(row, 0)) + " " + std::string(t->text(row, 1)) + " " +
               std::string(t->text(row, 2)) + "\n";
    }
    auto m = Query("SELECT id, substr(doc, 1, 600) FROM mates_merges WHERE team = $1 AND doc NOT LIKE "
                   "'%\"status\":\"merged\"%' ORDER BY id");
    for (int row = 0; m.ok() && row < m->size(); ++row) {
      state += "  request " + std::string(m->text(row, 0)) + ": " + std::string(m->text(row, 1)) + "\n";
    }
    const std::string lead_log = ReadAll(HostLog(*db_));
    FAIL() << Completed() << " of " << total << " done\n" << state << "the lead's host:\n"
           << lead_log.substr(lead_log.size() > 20000 ? lead_log.size() - 20000 : 0) << "\nthe others:\n"
           << ReadAll(HostLog(*machines_[0])) << ReadAll(HostLog(*machines_[1])) << ReadAll(HostLog(*machines_[2]));
  }
  // Quiet: no worker has a message waiting.
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto r = Query("SELECT count(*) FROM mates_inbox WHERE team = $1 AND member <> 'lead'");
    return r.ok() && r->integer(0, 0) == 0;
  }, 60));

  // The checker. Every task completed once, in its history.
  std::map<int64_t, double> done_at;
  for (int64_t id = 1; id <= static_cast<int64_t>(total); ++id) {
    auto t = board->Get(id);
    ASSERT_TRUE(t.ok());
    int completions = 0;
    for (const auto& e : t->history) {
      if (e.status == TaskStatus::kCompleted) {
        ++completions;
        done_at[id] = e.at;
      }
    }
    EXPECT_EQ(completions, 1) << "task " << id << " completed " << completions << " times";
  }
  // Every job's work began after its blockers were done, and none was
  // worked on after it was done.
  std::map<int64_t, std::vector<double>> worked;
  {
    std::istringstream in(ReadAll(work));
    int64_t id = 0;
    double at = 0;
    while (in >> id >> at) worked[id].push_back(at);
  }
  EXPECT_EQ(worked.size(), total);
  for (const auto& [id, times] : worked) {
    for (double at : times) {
      EXPECT_LT(at, done_at[id]) << "job " << id << " was worked on after it was done";
      for (int64_t b : BlockersOf(id)) EXPECT_GT(at, done_at[b]) << "job " << id << " began before " << b;
    }
  }
  // Every message logged reached each of its recipients once: in its
  // conversation (the journal's copy names what it took in) or still in
  // its inbox.
  std::map<std::string, std::multiset<std::string>> got;  // member → ids
  {
    auto r = Query("SELECT member, msg_id FROM mates_inbox WHERE team = $1");
    ASSERT_TRUE(r.ok());
    for (int i = 0; i < r->size(); ++i) got[std::string(r->text(i, 0))].insert(std::string(r->text(i, 1)));
  }
  {
    auto r = Query("SELECT member, line FROM mates_journals WHERE team = $1 ORDER BY member, seq");
    ASSERT_TRUE(r.ok());
    for (int i = 0; i < r->size(); ++i) {
      auto j = ParseJson(std::string(r->text(i, 1)));
      ASSERT_TRUE(j.ok());
      for (const char* key : {"delivered", "ids"}) {
        auto ids = j->find(key);
        if (ids == j->end() || !ids->is_array()) continue;
        for (const auto& id : *ids) got[std::string(r->text(i, 0))].insert(id.get<std::string>());
      }
    }
  }
  std::vector<std::string> members = workers;
  members.push_back("lead");
  size_t deliveries = 0;
  auto r = Query("SELECT line FROM mates_messages WHERE team = $1 ORDER BY seq");
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < r->size(); ++i) {
    auto m = ParseJson(std::string(r->text(i, 0)));
    ASSERT_TRUE(m.ok());
    const std::string id = m->value("id", ""), sender = m->value("sender", "");
    const std::string to = m->value("recipient", "");
    for (const auto& member : members) {
      if (to.empty() ? member == sender : member != to) continue;
      ++deliveries;
      EXPECT_EQ(got[member].count(id), 1u) << id << " from " << sender << " to " << member;
    }
  }
  EXPECT_GE(deliveries, 2000u);

  // No merge lost, none made twice: every job has one merged request and
  // none is left open; the target on origin lists each job's merge once in
  // its first-parent history, and holds each job's file.
  size_t merges_checked = 0;
  {
    auto list = teams_->Merges(kTeam)->List();
    ASSERT_TRUE(list.ok()) << list.status().message();
    std::map<int64_t, int> merged;
    for (const auto& m : *list) {
      EXPECT_FALSE(MergeOpen(m.status)) << "request " << m.id << " for job " << m.task << " is left "
                                        << MergeStateName(m.status);
      merged[m.task] += m.status == MergeState::kMerged ? 1 : 0;
    }
    merges_checked = list->size();
    const std::string target = std::string("mates/") + kTeam;
    auto log = testing::Run({"git", "-C", origin.string(), "log", "--first-parent", "--merges", "--format=%s", target});
    ASSERT_EQ(log.exit_code, 0) << log.err;
    std::map<int64_t, int> landed;
    std::istringstream subjects(log.out);
    const std::string head = "Merge task #";
    for (std::string line; std::getline(subjects, line);) {
      if (line.rfind(head, 0) == 0) ++landed[std::stoll(line.substr(head.size()))];
    }
    auto tree = testing::Run({"git", "-C", origin.string(), "ls-tree", "--name-only", target});
    ASSERT_EQ(tree.exit_code, 0) << tree.err;
    std::set<std::string> files;
    std::istringstream names(tree.out);
    for (std::string name; std::getline(names, name);) files.insert(name);
    for (int64_t id = 1; id <= static_cast<int64_t>(total); ++id) {
      EXPECT_EQ(merged[id], 1) << "job " << id << " has " << merged[id] << " merged requests";
      EXPECT_EQ(landed[id], 1) << "job " << id << " landed " << landed[id] << " times on the target";
      EXPECT_EQ(files.count("job-" + std::to_string(id) + ".txt"), 1u) << "job " << id << "'s file is not on the target";
    }
  }

  // The team's budget holds across its hosts: set at what it spent so far
  // and as much again as the teammates' largest calls, 20 times over, it
  // is spent, and overrun by the calls in flight at most (one a teammate).
  const auto largest_calls = [&] {
    int64_t sum = 0;
    for (const auto& w : workers) {
      auto lines = teams_->JournalOf(kTeam, w)->Lines();
      EXPECT_TRUE(lines.ok()) << lines.status().message();
      int64_t largest = 0;
      for (const auto& l : lines.ok() ? *lines : std::vector<std::string>{}) {
        auto j = ParseJson(l);
        if (j.ok() && j->value("kind", "") == "usage") {
          largest = std::max(largest, agent::TotalTokens(llm::UsageFromJson((*j)["usage"])));
        }
      }
      sum += largest;
    }
    return sum;
  };
  const auto spent = [&] {
    auto s = teams_->Spent(kTeam);
    EXPECT_TRUE(s.ok() && *s);
    return s.ok() && *s ? agent::PriceSpent(**s, agent::PriceTable::Builtin()).first : 0;
  };
  const int64_t budget = spent() + 20 * largest_calls();
  {
    auto set = Mates(*machines_[0], {"budget", "set", "--team", kTeam, "--tokens", std::to_string(budget)});
    ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
  }
  ASSERT_NO_FATAL_FAILURE(extend(400));
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto t = teams_->LoadTeam(kTeam);
    return t.ok() && std::all_of(workers.begin(), workers.end(), [&](const std::string& w) {
      return t->Find(w) && t->Find(w)->status == MemberStatus::kShutdown;
    });
  }, 120)) << "the teammates did not stop at the budget: " << spent() << " of " << budget << " spent";
  const int64_t spent_at_end = spent(), in_flight = largest_calls();
  EXPECT_GE(spent_at_end, budget);
  EXPECT_LE(spent_at_end, budget + in_flight) << "the budget was overrun beyond the calls in flight";

  std::vector<double> all;
  std::string table;
  for (const auto& rec : recoveries) {
    all.push_back(rec.seconds);
    table += "  " + rec.what + " (" + std::to_string(rec.displaced) + " teammates moved): " +
             std::to_string(rec.seconds) + " s\n";
  }
  std::sort(all.begin(), all.end());
  std::cout << "budget " << budget << " tokens, spent " << spent_at_end << " (calls in flight allowed: " << in_flight
            << ")\n";
  std::cout << "faults survived: " << recoveries.size() << "; jobs: " << total << "; merge requests: " << merges_checked
            << "; deliveries checked: " << deliveries
            << "\nrecovery p50 " << all[all.size() / 2] << " s, max " << all.back() << " s\n" << table;
}

// A session cut off in the middle of a transaction (an inbox drain may
// wait on its client for 60 s) lets its locks go once the server's
// keepalive probes go unanswered, in seconds: it held the lease row a
// host taking its agent over must write, and a partition cost 60 s.
TEST_F(FaultHarnessTest, ASessionCutOffInATransactionLetsItsLocksGoInSeconds) {
  ASSERT_TRUE(conn_->ExecScript("CREATE TABLE cut (id int PRIMARY KEY); INSERT INTO cut VALUES (1)").ok());
  // A session from m1, over its link: the connection is opened on a thread
  // in m1's network namespace (a socket stays in the namespace it was made in).
  Result<pg::Connection> far = Status::Unavailable("not opened");
  std::thread opener([&] {
    const std::string ns = "/proc/" + std::to_string(machines_[0]->init_pid()) + "/ns/net";
    const int fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      far = Status::FromErrno("setns " + ns, errno);
    } else {
      far = pg::Connection::Open(*pg::ParseTarget(url_), 10);
    }
    if (fd >= 0) ::close(fd);
  });
  opener.join();
  ASSERT_TRUE(far.ok()) << far.status().message();
  ASSERT_TRUE(far->ExecScript("BEGIN; SET LOCAL idle_in_transaction_session_timeout = 60000").ok());
  ASSERT_TRUE(far->Exec("SELECT id FROM cut WHERE id = 1 FOR SHARE").ok());
  ASSERT_TRUE(machines_[0]->Cut().ok());
  // The row is written from here as soon as the server lets it go.
  ASSERT_TRUE(conn_->ExecScript("SET lock_timeout = '40s'").ok());
  const auto t0 = SteadyClock::now();
  auto w = conn_->Exec("UPDATE cut SET id = 1 WHERE id = 1");
  const double waited = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  ASSERT_TRUE(w.ok()) << w.status().message() << " after " << waited << " s";
  EXPECT_LT(waited, 25) << "the cut-off session held its lock " << waited << " s";
  std::cout << "a cut-off session's lock went after " << waited << " s\n";
}

// The harness leaves nothing behind on any exit path: a test process
// killed with -9 while its machine runs a command takes the machine, its
// namespaces and the command with it.
TEST(NetnsTest, AMachineAndWhatRunsInItGoWithTheTestKilled) {
  const std::string why = testing::Network::Unavailable();
  if (!why.empty()) {
    if (std::getenv("CI") != nullptr) FAIL() << "the fault harness cannot run in CI: " << why;
    GTEST_SKIP() << why;
  }
  Subprocess holder = testing::Start({"/proc/self/exe", "--gtest_also_run_disabled_tests",
                                      "--gtest_filter=NetnsTest.DISABLED_HoldAMachine"});
  Result<std::string> line = holder.ReadLine(DeadlineIn(30));
  while (line.ok() && line->rfind("machine ", 0) != 0) line = holder.ReadLine(DeadlineIn(30));
  ASSERT_TRUE(line.ok()) << line.status().message();
  const pid_t init = static_cast<pid_t>(std::stol(line->substr(8)));
  std::error_code ec;
  ASSERT_NE(fs::read_symlink("/proc/" + std::to_string(init) + "/ns/net", ec),
            fs::read_symlink("/proc/self/ns/net", ec)) << "not a namespace of its own";
  ASSERT_FALSE(testing::ProcessesIn("sleep 1000.25", "/").empty());
  // That process alone, not its group (Wait, below, would kill the group).
  ASSERT_EQ(::kill(holder.pid(), SIGKILL), 0);
  EXPECT_TRUE(testing::WaitUntil([&] {
    return !fs::exists("/proc/" + std::to_string(init)) && testing::ProcessesIn("sleep 1000.25", "/").empty();
  }, 10)) << "the machine or its command outlived the test";
  (void)holder.Wait();
}

// A host in another PID namespace (a container sharing this /tmp) takes
// this machine's living hosts' runtime folders for their own: their PIDs
// are no process there. It must not remove them (it removed the folder,
// and the levers' socket in it, of every host here).
TEST(NetnsTest, AHostInAnotherPidNamespaceLeavesTheRuntimeFoldersOfHostsHere) {
  const std::string why = testing::Network::Unavailable();
  if (!why.empty()) {
    if (std::getenv("CI") != nullptr) FAIL() << "the fault harness cannot run in CI: " << why;
    GTEST_SKIP() << why;
  }
  TempDir dir;
  auto net = testing::Network::Make(dir.path() / "machines");
  ASSERT_TRUE(net.ok()) << net.status().message();
  auto m = (*net)->Add("elsewhere");
  ASSERT_TRUE(m.ok()) << m.status().message();
  // This process's folder, as a host's here.
  auto mine = sandbox::RuntimeDirFor("probe-" + std::to_string(::getpid()));
  ASSERT_TRUE(mine.ok()) << mine.status().message();
  ASSERT_TRUE(fs::is_directory(*mine));
  // A host up and down in the machine: it cleans the folders it takes
  // for a dead process's on its way.
  const fs::path ws = (*m)->disk() / "ws";
  const fs::path scenario = dir.path() / "s.yaml";
  ASSERT_TRUE(WriteFileAtomic(scenario, "rules:\n" + testing::DoneRule()).ok());
  auto up = (*m)->Mates(ws, {"up", "--team", "t", "--provider", "scripted", "--scenario", scenario.string(),
                            "--sandbox", "off", "Go"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto down = (*m)->Mates(ws, {"down", "--team", "t", "--grace", "0", "--timeout", "10"});
  EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  EXPECT_TRUE(fs::is_directory(*mine)) << "the living host's folder was taken for a dead one's";
  EXPECT_TRUE(sandbox::RuntimeDirInUse(*mine));
}

TEST(NetnsTest, DISABLED_HoldAMachine) {
  TempDir dir;
  auto net = testing::Network::Make(dir.path());
  ASSERT_TRUE(net.ok()) << net.status().message();
  auto m = (*net)->Add("held");
  ASSERT_TRUE(m.ok()) << m.status().message();
  Subprocess sleeper = (*m)->Start({"sleep", "1000.25"});
  ASSERT_TRUE(testing::WaitUntil([] { return !testing::ProcessesIn("sleep 1000.25", "/").empty(); }, 10));
  std::cout << "machine " << (*m)->init_pid() << std::endl;
  (void)sleeper.Wait();  // until killed
}

}  // namespace
}  // namespace mates
