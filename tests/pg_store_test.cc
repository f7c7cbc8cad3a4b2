// The PostgreSQL store (DESIGN §13) against a real server: a private one
// per test program (support/pg_server.h), a fresh database per test.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/activity.h"
#include "agent/spend.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/limits.h"
#include "core/subprocess.h"
#include "core/waker.h"
#include "pg/connection.h"
#include "pg/listener.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "store/board.h"
#include "store/claim_line.h"
#include "store/forecast.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "support/pg_suite.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::PgServer;
using testing::RunMates;
using testing::TempDir;

class PgTest : public testing::PgSuite {
 protected:
  // A database of its own for the test that asks.
  std::string FreshDatabase() {
    static int n = 0;
    auto url = server_->CreateDatabase("t" + std::to_string(++n));
    EXPECT_TRUE(url.ok()) << url.status().message();
    return url.ok() ? *url : "";
  }
  static pg::Connection Connect(const std::string& url) {
    auto t = pg::ParseTarget(url);
    EXPECT_TRUE(t.ok()) << t.status().message();
    auto c = pg::Connection::Open(*t, 10);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return std::move(*c);
  }
  // A fresh database with the schema and the team "procs" (the store
  // helper's), opened.
  std::unique_ptr<pg::Store> FreshStore() {
    url_ = FreshDatabase();
    pg::Connection c = Connect(url_);
    EXPECT_TRUE(pg::InitSchema(c).ok());
    auto store = pg::Store::Open(*pg::ParseTarget(url_));
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return nullptr;
    EXPECT_TRUE((*store)->rosters().CreateTeam("procs").ok());
    return std::move(*store);
  }
  // Waits until `n` sessions of the server listen (their last statement a
  // LISTEN): waiting `mates inbox --wait`, `log --follow`, `read_inbox`.
  bool WaitForListeners(int n) {
    pg::Connection c = Connect(url_);
    return testing::WaitUntil([&] {
      auto r = c.Exec("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'");
      return r.ok() && r->integer(0, 0) >= n;
    }, 20);
  }
  static Message Msg(const std::string& id, const std::string& text) {
    Message m;
    m.id = id;
    m.sender = "lead";
    m.recipient = "ann";
    m.content = text;
    m.timestamp = WallSeconds();
    return m;
  }
  static std::vector<std::string> Ids(const std::vector<Message>& ms) {
    std::vector<std::string> ids;
    for (const auto& m : ms) ids.push_back(m.id);
    return ids;
  }

  TempDir ws_;
  std::string url_;
};
TEST(PgTargetTest, UrlsAreCheckedAndShownWithoutTheirPassword) {
  auto t = pg::ParseTarget("postgresql://ann:s3cret@db.example:6543/team?sslmode=disable");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->shown, "postgres://ann@db.example:6543/team");
  EXPECT_EQ(t->shown.find("s3cret"), std::string::npos);
  EXPECT_TRUE(pg::ParseTarget("postgres:///mates").ok());
  for (const std::string& bad : std::vector<std::string>{"", "mysql://x/y", "file:", "postgres://h/db?nosuchoption=1",
                                "postgres://h:notaport/db", std::string("postgres://h/d") + '\0' + "x",
                                "postgres://h/" + std::string(5000, 'd')}) {
    auto r = pg::ParseTarget(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad.substr(0, 40);
  }
}

TEST_F(PgTest, InitMigrateAndStatusAnswerForTheSchema) {
  std::string url = FreshDatabase();
  auto st = RunMates(ws_.path(), {"store", "status", "--store", url});
  EXPECT_EQ(st.exit_code, 1);
  EXPECT_NE(st.err.find("has no mates schema: run mates store init"), std::string::npos) << st.err;
  auto mig = RunMates(ws_.path(), {"store", "migrate", "--store", url});
  EXPECT_EQ(mig.exit_code, 1);
  EXPECT_NE(mig.err.find("run mates store init"), std::string::npos) << mig.err;

  auto init = RunMates(ws_.path(), {"store", "init", "--store", url});
  ASSERT_EQ(init.exit_code, 0) << init.err;
  EXPECT_NE(init.out.find("created the mates schema (version " + std::to_string(pg::kSchemaVersion) + ")"),
            std::string::npos)
      << init.out;
  auto again = RunMates(ws_.path(), {"store", "init"}, {"MATES_STORE=" + url});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("there already"), std::string::npos) << again.out;
  st = RunMates(ws_.path(), {"store", "status", "--store", url});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("(current)"), std::string::npos) << st.out;
  mig = RunMates(ws_.path(), {"store", "migrate", "--store", url});
  EXPECT_EQ(mig.exit_code, 0) << mig.err;
  EXPECT_NE(mig.out.find("is current"), std::string::npos) << mig.out;
  // Nothing said names the password.
  for (const auto& text : {st.out, st.err, init.out, mig.out}) EXPECT_EQ(text.find("mates-test-password"), std::string::npos);

  pg::Connection c = Connect(url);
  auto tables = c.Exec("SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_tables "
                       "WHERE tablename LIKE 'mates\\_%'");
  ASSERT_TRUE(tables.ok()) << tables.status().message();
  EXPECT_EQ(tables->text(0, 0),
            "mates_activity mates_agent_leases mates_forecasts mates_inbox mates_journals mates_merges mates_messages "
            "mates_requests "
            "mates_schema mates_spend mates_tasks mates_teams");
}

TEST_F(PgTest, TwoInitsAtOnceCreateTheSchemaOnce) {
  std::string url = FreshDatabase();
  auto a = testing::StartMates(ws_.path(), {"store", "init", "--store", url});
  auto b = testing::StartMates(ws_.path(), {"store", "init", "--store", url});
  auto ra = a.Wait();
  auto rb = b.Wait();
  EXPECT_EQ(ra.exit_code, 0) << ra.err;
  EXPECT_EQ(rb.exit_code, 0) << rb.err;
  pg::Connection c = Connect(url);
  auto v = pg::SchemaVersion(c);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, pg::kSchemaVersion);
  auto rows = c.Exec("SELECT count(*) FROM mates_schema");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->integer(0, 0), 1);
}

TEST_F(PgTest, ANewerSchemaIsRefusedByEveryCommand) {
  std::string url = FreshDatabase();
  ASSERT_EQ(RunMates(ws_.path(), {"store", "init", "--store", url}).exit_code, 0);
  pg::Connection c = Connect(url);
  ASSERT_TRUE(c.Exec("UPDATE mates_schema SET version = 99").ok());
  for (const char* cmd : {"init", "migrate", "status"}) {
    auto r = RunMates(ws_.path(), {"store", cmd, "--store", url});
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("is version 99, newer than this mates knows (" + std::to_string(pg::kSchemaVersion) +
                         "): use a newer mates"),
              std::string::npos)
        << cmd << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(pg::CheckSchema(c).code(), StatusCode::kFailedPrecondition);
}

TEST_F(PgTest, BadTargetsGetOneClearErrorEach) {
  struct Case {
    std::string url;
    int exit_code;
    std::string says;
  };
  int closed_port = server_->port() == 1 ? 2 : 1;  // nothing listens on port 1 here
  std::vector<Case> cases = {
      {"postgresql://mates:x@127.0.0.1:" + std::to_string(closed_port) + "/mates", 1, "cannot connect to"},
      {server_->UrlWithPassword("wrong-password"), 2, "password authentication failed"},
      {"postgresql://mates:mates-test-password@127.0.0.1:" + std::to_string(server_->port()) + "/nosuchdb", 2,
       "does not exist"},
      {"postgresql://nobody:x@127.0.0.1:" + std::to_string(server_->port()) + "/mates", 2, "authentication failed"},
      {"mysql://127.0.0.1/mates", 2, "starts with postgres://"},
      {"postgres://127.0.0.1:port/mates", 2, "bad store URL"},
      {"postgres://127.0.0.1/" + std::string(5000, 'x'), 2, "over 4096 bytes"},
  };
  for (const Case& k : cases) {
    auto r = RunMates(ws_.path(), {"store", "status", "--store", k.url, "--connect-timeout", "5"});
    EXPECT_EQ(r.exit_code, k.exit_code) << k.url.substr(0, 60) << ": " << r.err;
    EXPECT_NE(r.err.find(k.says), std::string::npos) << k.url.substr(0, 60) << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.find("wrong-password"), std::string::npos) << r.err;
  }
  auto timeout = RunMates(ws_.path(), {"store", "status", "--store", server_->Url(), "--connect-timeout", "-1"});
  EXPECT_EQ(timeout.exit_code, 2) << timeout.err;
  // The file store needs no schema.
  auto file = RunMates(ws_.path(), {"store", "init", "--store", "file:"});
  EXPECT_EQ(file.exit_code, 0) << file.err;
  EXPECT_NE(file.out.find("nothing to initialise"), std::string::npos) << file.out;
}

TEST_F(PgTest, AStoreWithoutTheSchemaSaysToInitIt) {
  std::string url = FreshDatabase();
  auto store = pg::Store::Open(*pg::ParseTarget(url));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("run mates store init"), std::string::npos) << store.status().message();
}

// A statement sent with the next (a fencing check, BEGIN) goes in that
// statement's round trip and, outside a transaction, in its transaction:
// it fails, and the next does not run; the next fails, and its effects go
// too. One with a NUL byte is refused before anything is sent.
TEST_F(PgTest, AStatementSentWithTheNextStandsOrFallsWithIt) {
  pg::Connection c = Connect(FreshDatabase());
  ASSERT_TRUE(c.ExecScript("CREATE TABLE t (x int)").ok());
  auto count = [&] {
    auto r = c.Exec("SELECT count(*) FROM t");
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? r->integer(0, 0) : -1;
  };
  // The check fails: told with its SQLSTATE, and the write does not run.
  std::string state;
  c.SendWithNext("SELECT 1 / $1::int", {"0"}, [&](std::string_view s, const Status&) { state = std::string(s); });
  auto r = c.Exec("INSERT INTO t VALUES (1)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("division by zero"), std::string::npos) << r.status().message();
  EXPECT_EQ(state, "22012");
  EXPECT_TRUE(c.idle());
  EXPECT_EQ(count(), 0);
  // The write fails: what went before it is rolled back with it.
  c.SendWithNext("INSERT INTO t VALUES (2)");
  r = c.Exec("SELECT 1 / 0");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(c.idle());
  EXPECT_EQ(count(), 0);
  // Both hold: both are done, and the rows are the last statement's.
  c.SendWithNext("INSERT INTO t VALUES (3)");
  c.SendWithNext("INSERT INTO t VALUES (4)");
  r = c.Exec("SELECT count(*) FROM t");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->integer(0, 0), 2);
  // Dropped, nothing is sent.
  c.SendWithNext("INSERT INTO t VALUES (5)");
  EXPECT_TRUE(c.DropUnsent());
  EXPECT_FALSE(c.DropUnsent());
  EXPECT_EQ(count(), 2);
  // A script (simple protocol) sends what waits first.
  c.SendWithNext("INSERT INTO t VALUES (6)");
  ASSERT_TRUE(c.ExecScript("SELECT 1; SELECT 2").ok());
  EXPECT_EQ(count(), 3);
  // A NUL byte in any of them: refused, nothing sent, the session usable.
  c.SendWithNext("INSERT INTO t VALUES ($1::int)", {std::string("7\0", 2)});
  r = c.Exec("INSERT INTO t VALUES (8)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(count(), 3);
  // In a transaction: BEGIN goes with the first statement, and a failure
  // after it rolls back; with no statement nothing is sent or left open.
  Status failed = pg::InTransaction(c, [&]() -> Status {
    MATES_RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (9)").status());
    return Status::Internal("changed my mind");
  });
  EXPECT_EQ(failed.message(), "changed my mind");
  EXPECT_TRUE(c.idle());
  EXPECT_EQ(count(), 3);
  EXPECT_TRUE(pg::InTransaction(c, [&]() -> Status { return Status::Ok(); }).ok());
  EXPECT_TRUE(c.idle());
  EXPECT_FALSE(c.DropUnsent());
  Status done = pg::InTransaction(c, [&]() -> Status {
    MATES_RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (10)").status());
    return c.Exec("INSERT INTO t VALUES (11)").status();
  });
  EXPECT_TRUE(done.ok()) << done.message();
  EXPECT_EQ(count(), 5);
}

TEST_F(PgTest, AMailboxDeliversOnceRedeliversWhatWasNotCommittedAndDropsRepeatedIds) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->rosters().CreateTeam("procs").status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(store->mail().Append("nosuchteam", "ann", Msg("m-0", "x")).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->mail().Append("procs", "bad name!", Msg("m-0", "x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->mail().Append("procs", "ann", Msg("", "x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->mail().Append("procs", "ann", Msg("m-big", std::string((1 << 20) + 1, 'x'))).code(),
            StatusCode::kInvalidArgument);
  for (const char* id : {"m-1", "m-2", "m-3", "m-2"}) ASSERT_TRUE(store->mail().Append("procs", "ann", Msg(id, id)).ok());
  EXPECT_EQ(*store->mail().PendingCount("procs", "ann"), 3u);
  EXPECT_EQ(Ids(*store->mail().Peek("procs", "ann")), (std::vector<std::string>{"m-1", "m-2", "m-3"}));
  {
    auto batch = store->mail().BeginDrain("procs", "ann");
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    EXPECT_EQ(Ids(batch->messages), (std::vector<std::string>{"m-1", "m-2", "m-3"}));
    // Dropped without a commit (a reader that died): delivered again.
  }
  EXPECT_EQ(*store->mail().PendingCount("procs", "ann"), 3u);
  auto batch = store->mail().BeginDrain("procs", "ann", [](const std::string& id) { return id == "m-1"; });
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(Ids(batch->messages), (std::vector<std::string>{"m-2", "m-3"}));
  // One drainer at a time: a second waits for the first's commit, then
  // finds only what came after it.
  auto second = std::async(std::launch::async, [&] { return store->mail().Drain("procs", "ann"); });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-4", "after")).ok());
  ASSERT_TRUE(store->mail().Commit(*batch).ok());
  EXPECT_EQ(store->mail().Commit(*batch).code(), StatusCode::kFailedPrecondition);
  auto rest = second.get();
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  EXPECT_EQ(Ids(*rest), (std::vector<std::string>{"m-4"}));
  EXPECT_EQ(*store->mail().PendingCount("procs", "ann"), 0u);
  // Only mates writes rows, but a row edited into garbage is dropped with a
  // warning and blocks nothing after it.
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-5", "x")).ok());
  ASSERT_TRUE(Connect(url_).Exec("UPDATE mates_inbox SET line = '{not json' WHERE msg_id = 'm-5'").ok());
  // A row made too big to read (17 MB) is not read.
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-huge", "x")).ok());
  ASSERT_TRUE(
      Connect(url_).Exec("UPDATE mates_inbox SET line = repeat('x', 17 * 1024 * 1024) WHERE msg_id = 'm-huge'").ok());
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-6", "y")).ok());
  EXPECT_EQ(Ids(*store->mail().Peek("procs", "ann")), (std::vector<std::string>{"m-6"}));
  EXPECT_EQ(Ids(*store->mail().Drain("procs", "ann")), (std::vector<std::string>{"m-6"}));
  EXPECT_EQ(*store->mail().PendingCount("procs", "ann"), 0u);
}

TEST_F(PgTest, ClaimsFollowDependenciesAndAssignmentsFirst) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto draft = [](const std::string& subject, std::vector<int64_t> blocked_by = {}) {
    TaskDraft d;
    d.subject = subject;
    d.blocked_by = std::move(blocked_by);
    return d;
  };
  ASSERT_EQ(store->tasks().Create("procs", draft("one"))->id, 1);
  ASSERT_EQ(store->tasks().Create("procs", draft("two", {1}))->id, 2);
  ASSERT_EQ(store->tasks().Create("procs", draft("three"))->id, 3);
  EXPECT_EQ(store->tasks().Create("procs", draft("four", {9})).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->tasks().Create("procs", draft("  ")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->tasks().Create("nosuchteam", draft("x")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->tasks().Get("procs", 1)->blocks, (std::vector<int64_t>{2}));
  EXPECT_EQ(store->tasks().Get("procs", 2)->blocked_by, (std::vector<int64_t>{1}));

  auto a = store->tasks().ClaimNext("procs", "ann");
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status().message();
  EXPECT_EQ((*a)->id, 1);
  EXPECT_EQ((*a)->status, TaskStatus::kInProgress);
  EXPECT_EQ((*a)->owner, "ann");
  EXPECT_EQ((**store->tasks().ClaimNext("procs", "bob")).id, 3);
  EXPECT_FALSE(store->tasks().ClaimNext("procs", "cy")->has_value()) << "task 2 is blocked by 1";
  EXPECT_EQ(store->tasks().Complete("procs", 1, "bob").status().code(), StatusCode::kConflict);
  auto done = store->tasks().Complete("procs", 1, "ann");
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->status, TaskStatus::kCompleted);
  EXPECT_EQ((**store->tasks().ClaimNext("procs", "cy")).id, 2);

  // A task assigned to someone is theirs before any lower unowned one, and
  // nobody else's.
  ASSERT_EQ(store->tasks().Create("procs", draft("five"))->id, 4);
  ASSERT_EQ(store->tasks().Create("procs", draft("six"))->id, 5);
  ASSERT_TRUE(Connect(url_).Exec("UPDATE mates_tasks SET owner = 'dee' WHERE id = 5").ok());
  EXPECT_EQ((**store->tasks().ClaimNext("procs", "dee")).id, 5);
  EXPECT_EQ((**store->tasks().ClaimNext("procs", "eve")).id, 4);
  EXPECT_FALSE(store->tasks().ClaimNext("procs", "eve")->has_value());
  auto all = store->tasks().List("procs");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 5u);
}

// What a claim left for others comes with it, in the same round trip, and
// a completion's NOTIFY says how many tasks it unblocked: a host wakes as
// many idle teammates as there is work for (ClaimLine), not all of them.
TEST_F(PgTest, AClaimSaysWhatItLeftAndACompletionHowManyItUnblocked) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  // What the board's channel asks for, one notification at a time.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> wanted;
  auto sub = store->listener().Subscribe(pg::BoardKey("procs"), [&](int64_t n) {
    {
      std::lock_guard<std::mutex> lock(mu);
      wanted.push_back(n);
    }
    cv.notify_all();
  });
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  auto next_wanted = [&]() -> int64_t {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return !wanted.empty(); })) return -1;
    int64_t n = wanted.front();
    wanted.erase(wanted.begin());
    return n;
  };
  auto draft = [](const std::string& subject, std::vector<int64_t> blocked_by = {}) {
    TaskDraft d;
    d.subject = subject;
    d.blocked_by = std::move(blocked_by);
    return d;
  };
  // 1; 2, 3, 4 and 5 (assigned to dee) wait for it; 6 waits for nothing.
  for (auto [subject, after] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"one", {}}, {"two", {1}}, {"three", {1}}, {"four", {1}}, {"five", {1}}, {"six", {}}}) {
    ASSERT_TRUE(store->tasks().Create("procs", draft(subject, after)).ok());
    EXPECT_EQ(next_wanted(), 1) << subject << ": a new task asks for one look";
  }
  pg::Connection sql = Connect(url_);
  ASSERT_TRUE(sql.Exec("UPDATE mates_tasks SET owner = 'dee' WHERE id = 5").ok());

  ClaimOutlook o;
  o.count_up_to = 10;
  auto a = store->tasks().ClaimNext("procs", "ann", &o);
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status().message();
  EXPECT_EQ((*a)->id, 1);
  EXPECT_EQ(o.unowned, 1) << "six";
  EXPECT_TRUE(o.assigned_to.empty()) << "five is blocked";

  ASSERT_TRUE(store->tasks().Complete("procs", 1, "ann").ok());
  EXPECT_EQ(next_wanted(), 4) << "two, three, four and five are claimable now";

  o = ClaimOutlook{};
  o.count_up_to = 10;
  auto b = store->tasks().ClaimNext("procs", "bob", &o);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->id, 2);
  EXPECT_EQ(o.unowned, 3) << "three, four, six";
  EXPECT_EQ(o.assigned_to, std::vector<std::string>{"dee"});
  // Counted only as far as asked: one more claimer to wake is all it needs.
  o = ClaimOutlook{};
  o.count_up_to = 1;
  auto c = store->tasks().ClaimNext("procs", "cy", &o);
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->id, 3);
  EXPECT_EQ(o.unowned, 1);
  o = ClaimOutlook{};
  o.count_up_to = 0;
  auto d = store->tasks().ClaimNext("procs", "dee", &o);
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_EQ((*d)->id, 5) << "its own assigned task first";
  EXPECT_EQ(o.unowned, 0);
  EXPECT_TRUE(o.assigned_to.empty());

  // A row written by hand with an owner no member can have wakes nobody.
  ASSERT_TRUE(sql.Exec("UPDATE mates_tasks SET owner = 'no one; drop' WHERE id = 4").ok());
  o = ClaimOutlook{};
  o.count_up_to = 10;
  auto e = store->tasks().ClaimNext("procs", "eve", &o);
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->id, 6);
  EXPECT_EQ(o.unowned, 0);
  EXPECT_TRUE(o.assigned_to.empty());
  o = ClaimOutlook{};
  o.count_up_to = 10;
  auto none = store->tasks().ClaimNext("procs", "eve", &o);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(o.unowned, 0);

  // A completion that unblocks nothing still asks for one look (another
  // completing at the same moment may have unblocked what it cannot see).
  ASSERT_TRUE(store->tasks().Complete("procs", 2, "bob").ok());
  EXPECT_EQ(next_wanted(), 1);

  // Payloads from anyone who can NOTIFY: a count from 1 to 1,000, anything
  // else one look.
  for (auto [payload, n] : std::vector<std::pair<std::string, int64_t>>{
           {"3", 3}, {"abc", 1}, {"-5", 1}, {"0", 1}, {"2x", 1}, {"99999999999999999999", 1}, {"5000", 1000}}) {
    ASSERT_TRUE(sql.Exec("SELECT pg_notify($1, $2)", {pg::ChannelOf(pg::BoardKey("procs")), payload}).ok());
    EXPECT_EQ(next_wanted(), n) << "payload '" << payload << "'";
  }
}

// The store's claim line: a change wakes one idle waiter of this process
// (not all), a completion as many as it unblocked, and a look that leaves
// work wakes as many more.
TEST_F(PgTest, TheClaimLineWakesAsManyIdleWaitersAsThereIsWork) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto line = store->tasks().ClaimLineOf("procs");
  ASSERT_TRUE(line.ok()) << line.status().message();
  auto again = store->tasks().ClaimLineOf("procs");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(line->get(), again->get()) << "one line per team";
  EXPECT_EQ(store->tasks().ClaimLineOf("bad name!").status().code(), StatusCode::kInvalidArgument);

  std::vector<std::shared_ptr<Waker>> wakers;
  std::vector<ClaimLine::Place> places;
  for (const char* name : {"w1", "w2", "w3", "w4"}) {
    wakers.push_back(std::make_shared<Waker>());
    places.push_back((*line)->Join(name, wakers.back()));
  }
  auto moved = [&](size_t i, uint64_t seen) { return wakers[i]->WaitChange(seen, DeadlineIn(10)) != seen; };
  auto generations = [&] {
    std::vector<uint64_t> g;
    for (auto& w : wakers) g.push_back(w->generation());
    return g;
  };
  // The first in the line looks as the teammate does: its look says what
  // it left, and the line wakes as many more.
  auto look = [&](size_t i, const std::string& name) {
    auto l = places[i].BeginLook();
    EXPECT_EQ(l.others, 3);
    ClaimOutlook o;
    o.count_up_to = l.others;
    auto claimed = store->tasks().ClaimNext("procs", name, &o);
    places[i].Looked(l.bumps, o);
    return claimed;
  };

  TaskDraft d;
  d.subject = "root";
  auto g = generations();
  ASSERT_TRUE(store->tasks().Create("procs", d).ok());
  ASSERT_TRUE(moved(0, g[0])) << "the first in the line is woken";
  auto root = look(0, "w1");
  ASSERT_TRUE(root.ok() && root->has_value());
  EXPECT_EQ(generations()[1], g[1]);
  EXPECT_EQ(generations()[2], g[2]);
  EXPECT_EQ(generations()[3], g[3]) << "one task, one waiter woken";

  // Three tasks wait for the root. Its completion wakes three at once.
  d.blocked_by = {(*root)->id};
  for (const char* s : {"a", "b", "c"}) {
    d.subject = s;
    g = generations();
    ASSERT_TRUE(store->tasks().Create("procs", d).ok());
    // Each new task wakes one to look (it finds the task blocked).
    ASSERT_TRUE(testing::WaitUntil([&] { return generations() != g; }, 10));
    for (size_t i = 0; i < wakers.size(); ++i) {
      if (generations()[i] == g[i]) continue;
      auto l = places[i].BeginLook();
      ClaimOutlook o;
      o.count_up_to = l.others;
      auto none = store->tasks().ClaimNext("procs", "w" + std::to_string(i + 1), &o);
      ASSERT_TRUE(none.ok());
      EXPECT_FALSE(none->has_value()) << "blocked by the root";
      places[i].Looked(l.bumps, o);
    }
  }
  g = generations();
  ASSERT_TRUE(store->tasks().Complete("procs", (*root)->id, "w1").ok());
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        auto now = generations();
        int woken = 0;
        for (size_t i = 0; i < now.size(); ++i) woken += now[i] != g[i];
        return woken >= 3;
      },
      10))
      << "a completion that unblocked three wakes three";
}

// Statuses change in one statement on the server, in place, keeping the
// rest of the roster; a roster the statement cannot read goes the long way
// and its one clear error.
TEST_F(PgTest, StatusesAreSetInOneStatementKeepingTheRestOfTheRoster) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  for (const char* name : {"w1", "w2"}) {
    Member m;
    m.name = name;
    m.status = MemberStatus::kActive;
    m.prompt = "a prompt with \"quotes\", a tab\t and \u00e9";
    ASSERT_TRUE(store->rosters().AddMember("procs", m).ok());
  }
  auto before = store->rosters().LoadTeam("procs");
  ASSERT_TRUE(before.ok());
  auto waker = std::make_shared<Waker>();
  auto sub = store->listener().Subscribe(pg::TeamKey("procs"), waker);
  ASSERT_TRUE(sub.ok());
  uint64_t seen = waker->generation();
  ASSERT_TRUE(store
                  ->rosters().SetStatuses("procs", {{"w1", MemberStatus::kActive},
                                          {"ghost", MemberStatus::kIdle},
                                          {"w2", MemberStatus::kShutdown},
                                          {"bad name!", MemberStatus::kIdle},
                                          {"w1", MemberStatus::kIdle}})
                  .ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "the roster's watchers were not told";
  auto after = store->rosters().LoadTeam("procs");
  ASSERT_TRUE(after.ok()) << after.status().message();
  TeamConfig want = *before;
  want.Find("w1")->status = MemberStatus::kIdle;
  want.Find("w2")->status = MemberStatus::kShutdown;
  EXPECT_EQ(TeamConfigToJson(*after), TeamConfigToJson(want));
  // Changed by the server (jsonb's spacing), not read and written back.
  pg::Connection sql = Connect(url_);
  auto text = sql.Exec("SELECT config FROM mates_teams WHERE name = 'procs'");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(std::string(text->text(0, 0)).find("\"status\": \"shutdown\""), std::string::npos);

  // A roster that is not JSON: the long way says so.
  ASSERT_TRUE(sql.Exec("UPDATE mates_teams SET config = 'not json' WHERE name = 'procs'").ok());
  Status bad = store->rosters().SetStatuses("procs", {{"w1", MemberStatus::kActive}});
  EXPECT_EQ(bad.code(), StatusCode::kCorrupt) << bad.message();
  // A team made before rosters were kept (its roster is its lead alone).
  ASSERT_TRUE(sql.Exec("UPDATE mates_teams SET config = NULL WHERE name = 'procs'").ok());
  EXPECT_TRUE(store->rosters().SetStatuses("procs", {{"w1", MemberStatus::kActive}}).ok());
  EXPECT_EQ(store->rosters().SetStatuses("nosuchteam", {{"w1", MemberStatus::kActive}}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->rosters().SetStatuses("bad team!", {{"w1", MemberStatus::kActive}}).code(), StatusCode::kInvalidArgument);
}

// An inbox found empty answers from its wake-ups: asked again only after
// a NOTIFY on its key (every message appended sends one), while a look
// before a model call (MayHavePending) always asks.
TEST_F(PgTest, AnInboxFoundEmptyIsAskedAgainOnlyAfterAWakeUp) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto teams = pg::StoreTeams(*store);
  auto inbox = teams->InboxOf("procs", "ann");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*inbox->PendingCount(), 0u);
  // A row put there without its NOTIFY (by hand): the count does not see
  // it, the look before a call does.
  pg::Connection sql = Connect(url_);
  ASSERT_TRUE(sql.Exec("INSERT INTO mates_inbox (team, member, msg_id, line) VALUES ('procs', 'ann', 'm1', "
                       "$1)",
                       {DumpJson(MessageToJson(Msg("m1", "by hand")))})
                  .ok());
  EXPECT_EQ(*inbox->PendingCount(), 0u) << "answered from the wake-ups";
  EXPECT_TRUE(inbox->MayHavePending());
  // Its notification comes: counted again.
  auto waker = std::make_shared<Waker>();
  auto sub = store->listener().Subscribe(pg::InboxKey("procs", "ann"), waker);
  ASSERT_TRUE(sub.ok());
  uint64_t seen = waker->generation();
  ASSERT_TRUE(sql.Exec("SELECT pg_notify($1, '')", {pg::ChannelOf(pg::InboxKey("procs", "ann"))}).ok());
  ASSERT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen);
  EXPECT_EQ(*inbox->PendingCount(), 1u);
  // A message sent the usual way from another process is counted once
  // its wake-up is in.
  ASSERT_EQ(inbox->Take([](const std::vector<Message>&) { return true; }, nullptr).status().code(), StatusCode::kOk);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*inbox->PendingCount(), 0u);
  seen = waker->generation();
  auto w = testing::Run({testing::StoreHelperBinary(), "write", url_, "ann", "1", "x"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  ASSERT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen);
  EXPECT_EQ(*inbox->PendingCount(), 1u);
}

// A waiter woken by an inbox's notification finds it counted, whichever
// subscriber the listener tells first: here one subscribed before the
// inbox's own (an idle teammate's watch, kept from wait to wait, is), and
// it holds the listener until this thread has counted — or for 2 s, which
// is what the count waits when it must wait for the listener to be done.
// Counted from the inbox's own wake-up, the count said 0 and the
// teammate slept with a message in its inbox.
TEST_F(PgTest, AWaiterWokenByAnInboxsNotificationFindsItCounted) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto teams = pg::StoreTeams(*store);
  auto inbox = teams->InboxOf("procs", "ann");
  std::mutex mu;
  std::condition_variable cv;
  bool told = false, counted = false;
  auto first = store->listener().Subscribe(pg::InboxKey("procs", "ann"), [&](int64_t) {
    std::unique_lock<std::mutex> lock(mu);
    told = true;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(2), [&] { return counted; });
  });
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*inbox->PendingCount(), 0u);  // its own subscription now
  auto w = testing::Run({testing::StoreHelperBinary(), "write", url_, "ann", "1", "x"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return told; }));
  }
  auto n = inbox->PendingCount();
  {
    std::lock_guard<std::mutex> lock(mu);
    counted = true;
    cv.notify_all();
  }
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 1u) << "the count was answered from a wake-up not yet told";
}

// The board's tasks without their clock readings, to compare stores.
std::vector<Json> TimelessTasks(const std::vector<Task>& tasks) {
  std::vector<Json> out;
  for (Task t : tasks) {
    t.created_at = t.updated_at = 0;
    // The same history on both (each change of status or owner), at times
    // of their own.
    for (auto& e : t.history) e.at = 0;
    out.push_back(TaskToJson(t));
  }
  return out;
}

// Every update rule of DESIGN §4, step by step on a PostgreSQL board and a
// file board: the same answer at each step, the same error word for word,
// and the same boards at the end.
TEST_F(PgTest, TaskUpdatesFollowTheFileBoardsRules) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  Board files(ws_.path() / "tasks");
  auto both = [&](const std::string& step, auto&& on_pg, auto&& on_files) {
    auto a = on_pg();
    auto b = on_files();
    ASSERT_EQ(a.ok(), b.ok()) << step << ": " << (a.ok() ? b.status().message() : a.status().message());
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), b.status().code()) << step;
      EXPECT_EQ(a.status().message(), b.status().message()) << step;
    }
  };
  auto create = [&](const std::string& subject, std::vector<int64_t> blocked_by, std::string metadata = "") {
    TaskDraft d;
    d.subject = subject;
    d.blocked_by = std::move(blocked_by);
    d.metadata_json = std::move(metadata);
    both("create " + subject, [&] { return store->tasks().Create("procs", d); }, [&] { return files.Create(d); });
  };
  auto update = [&](const std::string& step, int64_t id, const TaskPatch& p, const Caller& who) {
    both(step, [&] { return store->tasks().Update("procs", id, p, who); }, [&] { return files.Update(id, p, who); });
  };
  auto claim = [&](const std::string& step, int64_t id, const std::string& owner) {
    both(step, [&] { return store->tasks().Claim("procs", id, owner); }, [&] { return files.Claim(id, owner); });
  };
  auto status = [](TaskStatus s) {
    TaskPatch p;
    p.status = s;
    return p;
  };
  const Caller lead{"lead", true}, ann{"ann", false}, bob{"bob", false};
  create("a", {});
  create("b", {1});
  create("c", {});
  create("d", {2, 3});
  create("e", {}, "[1]");
  create("f", {}, R"({"k": ")" + std::string(70000, 'x') + R"("})");
  update("start a blocked task", 2, status(TaskStatus::kInProgress), ann);
  update("start a free one: ann takes it", 1, status(TaskStatus::kInProgress), ann);
  update("complete another's", 1, status(TaskStatus::kCompleted), bob);
  TaskPatch grab;
  grab.owner = "bob";
  update("take another's", 1, grab, bob);
  update("complete one's own", 1, status(TaskStatus::kCompleted), ann);
  // Starting a task reads only its blockers (the rest of the board is not
  // read for a status change): one done, then one in progress and one not.
  update("start one whose blocker is done", 2, status(TaskStatus::kInProgress), ann);
  update("start one blocked by a task in progress and a pending one", 4,
         status(TaskStatus::kInProgress), lead);
  update("start one's own again", 2, status(TaskStatus::kInProgress), ann);
  auto links = [](std::vector<int64_t> blocked_by, std::vector<int64_t> blocks) {
    TaskPatch p;
    p.add_blocked_by = std::move(blocked_by);
    p.add_blocks = std::move(blocks);
    return p;
  };
  update("a cycle", 3, links({4}, {}), lead);
  update("a link there already", 3, links({}, {4}), lead);
  update("a link to nothing", 1, links({9}, {}), lead);
  update("a link to itself", 3, links({3}, {}), lead);
  update("a new link, twice", 3, links({}, {1, 1}), lead);
  TaskPatch p;
  p.metadata_json = R"({"k": 1, "j": "x"})";
  update("metadata", 3, p, lead);
  p.metadata_json = R"({"k": null})";
  update("metadata merged", 3, p, lead);
  p.metadata_json = "[1]";
  update("metadata not an object", 3, p, lead);
  p.metadata_json = R"({"k": ")" + std::string(70000, 'x') + R"("})";
  update("metadata too large", 3, p, lead);
  p = {};
  p.subject = "  ";
  update("an empty subject", 3, p, lead);
  p = {};
  p.owner = "bad name";
  update("a bad owner", 3, p, lead);
  p = status(TaskStatus::kDeleted);
  p.add_blocks = {4};
  update("deleted with a new link", 2, p, lead);
  update("deleted", 2, status(TaskStatus::kDeleted), lead);
  update("deleted is final", 2, status(TaskStatus::kPending), lead);
  update("no such task", 99, status(TaskStatus::kCompleted), lead);
  claim("claim a blocked task", 4, "cy");
  claim("claim", 3, "cy");
  claim("claim what is claimed", 3, "dee");
  claim("claim one's own again", 3, "cy");
  claim("claim a deleted task", 2, "cy");
  claim("claim nothing", 42, "cy");
  auto pg_tasks = store->tasks().List("procs", /*include_deleted=*/true);
  auto file_tasks = files.List(/*include_deleted=*/true);
  ASSERT_TRUE(pg_tasks.ok() && file_tasks.ok());
  EXPECT_EQ(TimelessTasks(*pg_tasks), TimelessTasks(*file_tasks));
  ASSERT_EQ(pg_tasks->size(), 4u);  // the two with bad metadata were refused
  EXPECT_TRUE((*pg_tasks)[3].blocked_by == std::vector<int64_t>{3}) << "the deleted task left #4's blockers";
}

// A teammate completing its own task in progress, the handoff's write, is
// one statement that takes no board lock: it goes through while another
// session holds the lock (a task being created, the graph changed), and
// wakes the board's watchers. What it does not match takes the rules'
// long way: another's task is refused as before, and a pending task of
// one's own (assigned by the lead) is completed, waiting for the lock.
TEST_F(PgTest, ATeammateCompletingItsOwnTaskNeedsNoBoardLock) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  TaskDraft d;
  d.subject = "work";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->tasks().Create("procs", d).ok());
  ASSERT_TRUE(store->tasks().Claim("procs", 1, "ann").ok());
  ASSERT_TRUE(store->tasks().Claim("procs", 2, "bob").ok());
  TaskPatch to_ann;
  to_ann.owner = "ann";
  ASSERT_TRUE(store->tasks().Update("procs", 3, to_ann, Caller{"lead", true}).ok());
  auto board_changed = std::make_shared<Waker>();
  auto watch = store->listener().Subscribe(pg::BoardKey("procs"), board_changed);
  ASSERT_TRUE(watch.ok()) << watch.status().message();

  pg::Connection holder = Connect(url_);
  ASSERT_TRUE(holder.Exec("BEGIN").ok());
  ASSERT_TRUE(
      holder.Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {pg::BoardKey("procs")})
          .ok());
  TaskPatch done;
  done.status = TaskStatus::kCompleted;
  const uint64_t seen = board_changed->generation();
  auto own = std::async(std::launch::async, [&] {
    return store->tasks().Update("procs", 1, done, Caller{"ann", false});
  });
  const std::future_status quick = own.wait_for(std::chrono::seconds(10));
  if (quick != std::future_status::ready) (void)holder.Exec("COMMIT");  // (else it waits forever)
  ASSERT_EQ(quick, std::future_status::ready)
      << "completing one's own task waited for the board lock";
  auto completed = own.get();
  ASSERT_TRUE(completed.ok()) << completed.status().message();
  EXPECT_EQ(completed->status, TaskStatus::kCompleted);
  EXPECT_EQ(completed->owner, "ann");
  EXPECT_NE(board_changed->WaitChange(seen, DeadlineIn(10)), seen)
      << "the board's watchers were not woken";

  auto assigned = std::async(std::launch::async, [&] {
    return store->tasks().Update("procs", 3, done, Caller{"ann", false});
  });
  EXPECT_EQ(assigned.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "a pending task of one's own is the long way, under the board lock";
  ASSERT_TRUE(holder.Exec("COMMIT").ok());
  auto later = assigned.get();
  ASSERT_TRUE(later.ok()) << later.status().message();
  EXPECT_EQ(later->status, TaskStatus::kCompleted);
  auto others = store->tasks().Update("procs", 2, done, Caller{"ann", false});
  EXPECT_EQ(others.status().code(), StatusCode::kFailedPrecondition) << others.status().message();
  EXPECT_NE(others.status().message().find("owned by 'bob'"), std::string::npos)
      << others.status().message();
  EXPECT_EQ(store->tasks().Get("procs", 2)->status, TaskStatus::kInProgress)
      << "bob's task was left as it was";
}

// `mates tasks` on a PostgreSQL store, through --store or $MATES_STORE: the
// board's commands and rules as on the file store, nothing written under
// the workspace, and bad input one clear error each.
TEST_F(PgTest, TheTasksCommandsWorkOnAPostgresStore) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  Member ann;
  ann.name = "ann";
  ASSERT_TRUE(store->rosters().AddMember("procs", ann).ok());
  auto tasks = [&](std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), {"tasks", "--team", "procs"});
    return RunMates(ws_.path(), args, env);
  };
  const std::vector<std::string> on_pg = {"MATES_STORE=" + url_};
  auto first = tasks({"--store", url_, "create", "design the API"});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("#1"), std::string::npos) << first.out;
  auto second = tasks({"create", "build it", "--blocked-by", "1"}, on_pg);
  EXPECT_EQ(second.exit_code, 0) << second.err;
  auto blocked = tasks({"claim", "2", "--owner", "ann"}, on_pg);
  EXPECT_EQ(blocked.exit_code, 1);
  EXPECT_NE(blocked.err.find("task #2 is blocked by #1 (pending)"), std::string::npos) << blocked.err;
  auto claimed = tasks({"claim", "--owner", "ann"}, on_pg);
  EXPECT_EQ(claimed.exit_code, 0) << claimed.err;
  EXPECT_EQ(claimed.out, "1\n");
  auto not_hers = tasks({"update", "1", "--status", "completed", "--as", "bob"}, on_pg);
  EXPECT_EQ(not_hers.exit_code, 1);
  EXPECT_NE(not_hers.err.find("owned by 'ann'"), std::string::npos) << not_hers.err;
  auto done = tasks({"update", "1", "--status", "completed", "--as", "ann"}, on_pg);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(tasks({"claim", "--owner", "ann"}, on_pg).out, "2\n");
  auto list = tasks({"list", "--json"}, on_pg);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto listed = ParseJson(list.out);
  ASSERT_TRUE(listed.ok() && listed->is_array() && listed->size() == 2) << list.out;
  EXPECT_EQ((*listed)[0]["status"], "completed");
  EXPECT_EQ((*listed)[1]["owner"], "ann");
  EXPECT_EQ((*listed)[1]["status"], "in_progress");
  auto got = tasks({"get", "2"}, on_pg);
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_NE(got.out.find("build it"), std::string::npos) << got.out;
  // The workspace's own (file) store knows nothing of it.
  EXPECT_FALSE(fs::exists(ws_.path() / ".tasks"));
  EXPECT_EQ(tasks({"list"}).exit_code, 1);
  // Bad input.
  auto no_team = RunMates(ws_.path(), {"tasks", "--team", "nosuch", "list"}, on_pg);
  EXPECT_EQ(no_team.exit_code, 1);
  EXPECT_NE(no_team.err.find("no team 'nosuch'"), std::string::npos) << no_team.err;
  auto stranger = tasks({"claim", "--owner", "zed"}, on_pg);
  EXPECT_EQ(stranger.exit_code, 1);
  EXPECT_NE(stranger.err.find("not a member"), std::string::npos) << stranger.err;
  auto scheme = tasks({"--store", "mysql://x/y", "list"});
  EXPECT_EQ(scheme.exit_code, 2) << scheme.err;
  auto archived = tasks({"list", "--archived"}, on_pg);  // the archives are this workspace's: none
  EXPECT_EQ(archived.exit_code, 1) << archived.err;
  EXPECT_NE(archived.err.find("team 'procs' has no archive in"), std::string::npos) << archived.err;
  for (const auto* r : {&blocked, &not_hers, &no_team, &stranger, &scheme}) {
    EXPECT_EQ(r->err.find("mates-test-password"), std::string::npos) << r->err;
  }
}

// Splits `mates ... --json` output of one object per line.
std::vector<Json> JsonLines(const std::string& out) {
  std::vector<Json> lines;
  size_t at = 0;
  while (at < out.size()) {
    size_t nl = out.find('\n', at);
    std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? out.size() : nl + 1;
    if (line.empty()) continue;
    auto j = ParseJson(line);
    EXPECT_TRUE(j.ok()) << line;
    if (j.ok()) lines.push_back(std::move(*j));
  }
  return lines;
}

// `mates team`, `send`, `inbox` and `log` on a PostgreSQL store: a team
// made, joined, messaged (plain, broadcast, a protocol request answered
// once, an id sent twice delivered once), its log in order, deleted; the
// rules and output of the file store, nothing under the workspace, and
// bad input one clear error each.
TEST_F(PgTest, TheMessagingCommandsWorkOnAPostgresStore) {
  ASSERT_TRUE(FreshStore());
  const std::vector<std::string> on_pg = {"MATES_STORE=" + url_};
  auto mates = [&](std::vector<std::string> args) { return RunMates(ws_.path(), args, on_pg); };
  auto made = RunMates(ws_.path(), {"team", "--store", url_, "create", "crew", "--members", "alice,bob"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("created team crew in "), std::string::npos) << made.out;
  EXPECT_EQ(made.out.find("mates-test-password"), std::string::npos) << made.out;
  auto joined = mates({"team", "join", "crew", "carol"});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  auto shown = mates({"team", "show", "crew", "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto roster = ParseJson(shown.out);
  ASSERT_TRUE(roster.ok()) << shown.out;
  ASSERT_EQ((*roster)["members"].size(), 4u) << shown.out;
  for (const auto& m : (*roster)["members"]) EXPECT_EQ(m["status"], "offline") << "nobody hosts " << m["name"];
  auto listed = mates({"team", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("crew  4 members, 0 active"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("procs"), std::string::npos) << listed.out;

  // A plain message, taken once.
  auto sent = mates({"send", "--team", "crew", "--to", "alice", "hello alice"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_NE(sent.out.find("sent message m-"), std::string::npos) << sent.out;
  EXPECT_NE(sent.out.find(" to alice"), std::string::npos) << sent.out;
  auto peeked = mates({"inbox", "--team", "crew", "alice", "--peek", "--json"});
  ASSERT_EQ(peeked.exit_code, 0) << peeked.err;
  auto held = JsonLines(peeked.out);
  ASSERT_EQ(held.size(), 1u) << peeked.out;
  EXPECT_EQ(held[0]["content"], "hello alice");
  EXPECT_EQ(held[0]["sender"], "user");
  auto drained = mates({"inbox", "--team", "crew", "alice"});
  EXPECT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_NE(drained.out.find("hello alice"), std::string::npos) << drained.out;
  EXPECT_EQ(mates({"inbox", "--team", "crew", "alice"}).out, "") << "a drained message came again";

  // A broadcast reaches every member but its sender.
  auto all = mates({"send", "--team", "crew", "--from", "lead", "--broadcast", "stand-up at ten"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("to alice, bob, carol"), std::string::npos) << all.out;
  for (const char* who : {"alice", "bob", "carol"}) {
    auto got = mates({"inbox", "--team", "crew", who, "--json"});
    ASSERT_EQ(JsonLines(got.out).size(), 1u) << who << ": " << got.out << got.err;
  }
  EXPECT_EQ(mates({"inbox", "--team", "crew", "lead"}).out, "") << "the sender got its own broadcast";

  // A shutdown request, answered once; a second answer is refused.
  auto asked = mates({"send", "--team", "crew", "--from", "lead", "--to", "bob", "--type", "shutdown_request",
                      "--json", "wrap up"});
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  auto request = ParseJson(asked.out);
  ASSERT_TRUE(request.ok()) << asked.out;
  std::string rid = (*request)["request_id"];
  ASSERT_FALSE(rid.empty()) << asked.out;
  auto wrong = mates({"send", "--team", "crew", "--from", "alice", "--type", "shutdown_response", "--request-id", rid,
                      "--approve", "ok"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("is for 'bob' to answer, not 'alice'"), std::string::npos) << wrong.err;
  auto answered = mates({"send", "--team", "crew", "--from", "bob", "--type", "shutdown_response", "--request-id",
                         rid, "--approve", "done"});
  EXPECT_EQ(answered.exit_code, 0) << answered.err;
  EXPECT_NE(answered.out.find("to lead (request " + rid + ")"), std::string::npos) << answered.out;
  auto twice = mates({"send", "--team", "crew", "--from", "bob", "--type", "shutdown_response", "--request-id", rid,
                      "--reject", "no"});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("was already answered (approved)"), std::string::npos) << twice.err;
  auto no_request = mates({"send", "--team", "crew", "--from", "bob", "--type", "shutdown_response",
                           "--request-id", "r-nosuch", "--approve", "x"});
  EXPECT_EQ(no_request.exit_code, 1);
  EXPECT_NE(no_request.err.find("no request 'r-nosuch'"), std::string::npos) << no_request.err;

  // A send retried under one id is delivered and logged once.
  auto first = mates({"send", "--team", "crew", "--to", "carol", "--id", "retry-1", "once"});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  auto again = mates({"send", "--team", "crew", "--to", "carol", "--id", "retry-1", "once"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("already sent retry-1 (nothing sent again)"), std::string::npos) << again.out;
  EXPECT_EQ(JsonLines(mates({"inbox", "--team", "crew", "carol", "--json"}).out).size(), 1u);

  // The log: every message once, in the order sent (a broadcast is one).
  auto log = mates({"log", "--team", "crew", "--json"});
  ASSERT_EQ(log.exit_code, 0) << log.err;
  auto logged = JsonLines(log.out);
  ASSERT_EQ(logged.size(), 5u) << log.out;
  EXPECT_EQ(logged[0]["content"], "hello alice");
  EXPECT_EQ(logged[1]["type"], "broadcast");
  EXPECT_EQ(logged[2]["type"], "shutdown_request");
  EXPECT_EQ(logged[3]["type"], "shutdown_response");
  EXPECT_EQ(logged[4]["id"], "retry-1");
  auto plain = mates({"log", "--team", "crew"});
  EXPECT_NE(plain.out.find("stand-up at ten"), std::string::npos) << plain.out;

  // Status: the roster with liveness (alice's host holds her lock here),
  // the board with her task, the last messages.
  ASSERT_EQ(mates({"tasks", "--team", "crew", "create", "write the docs"}).exit_code, 0);
  ASSERT_EQ(mates({"tasks", "--team", "crew", "claim", "--owner", "alice"}).exit_code, 0);
  auto host = pg::Store::Open(*pg::ParseTarget(url_));
  ASSERT_TRUE(host.ok()) << host.status().message();
  auto alive = (*host)->liveness().Hold("crew", "alice");
  ASSERT_TRUE(alive.ok()) << alive.status().message();
  auto status = mates({"status", "--team", "crew", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto view = ParseJson(status.out);
  ASSERT_TRUE(view.ok()) << status.out;
  EXPECT_EQ((*view)["board"]["in_progress"], 1) << status.out;
  EXPECT_EQ((*view)["board"]["pending"], 0) << status.out;
  ASSERT_EQ((*view)["members"].size(), 4u) << status.out;
  for (const auto& m : (*view)["members"]) {
    EXPECT_EQ(m["status"] == "offline", m["name"] != "alice") << m.dump();
    if (m["name"] == "alice") {
      EXPECT_EQ(m["task"]["subject"], "write the docs") << m.dump();
    }
  }
  ASSERT_EQ((*view)["messages"].size(), 5u) << status.out;
  EXPECT_EQ((*view)["messages"][4]["id"], "retry-1") << status.out;
  auto screen = mates({"status", "--team", "crew"});
  EXPECT_EQ(screen.exit_code, 0) << screen.err;
  EXPECT_NE(screen.out.find("board: 0 pending · 1 in progress · 0 completed"), std::string::npos) << screen.out;
  EXPECT_NE(screen.out.find("#1 write the docs"), std::string::npos) << screen.out;
  auto shown_now = ParseJson(mates({"team", "show", "crew", "--json"}).out);
  ASSERT_TRUE(shown_now.ok());
  EXPECT_NE((*shown_now)["members"][1]["status"], "offline") << shown_now->dump();

  // The workspace's own (file) store knows nothing of it.
  EXPECT_FALSE(fs::exists(ws_.path() / ".teams" / "crew"));
  EXPECT_EQ(RunMates(ws_.path(), {"team", "show", "crew"}).exit_code, 1);

  // Bad input: one clear error each.
  auto stranger = mates({"send", "--team", "crew", "--to", "zed", "hi"});
  EXPECT_EQ(stranger.exit_code, 1);
  EXPECT_NE(stranger.err.find("unknown recipient 'zed': team 'crew' has lead, alice, bob, carol"), std::string::npos)
      << stranger.err;
  auto no_team = mates({"send", "--team", "nosuch", "--to", "alice", "hi"});
  EXPECT_EQ(no_team.exit_code, 1);
  EXPECT_NE(no_team.err.find("no team 'nosuch'"), std::string::npos) << no_team.err;
  auto user_protocol = mates({"send", "--team", "crew", "--to", "bob", "--type", "shutdown_request", "go"});
  EXPECT_EQ(user_protocol.exit_code, 1);
  EXPECT_NE(user_protocol.err.find("user sends message or broadcast"), std::string::npos) << user_protocol.err;
  auto not_member = mates({"inbox", "--team", "crew", "zed"});
  EXPECT_EQ(not_member.exit_code, 1);
  EXPECT_NE(not_member.err.find("'zed' is not a member of team 'crew'"), std::string::npos) << not_member.err;
  auto twice_made = mates({"team", "create", "crew"});
  EXPECT_EQ(twice_made.exit_code, 1);
  EXPECT_NE(twice_made.err.find("already exists"), std::string::npos) << twice_made.err;
  auto delivery = mates({"log", "--team", "crew", "--delivery"});
  EXPECT_EQ(delivery.exit_code, 2) << delivery.err;
  auto scheme = RunMates(ws_.path(), {"send", "--store", "mysql://x/y", "--team", "crew", "--to", "bob", "hi"});
  EXPECT_EQ(scheme.exit_code, 2) << scheme.err;
  for (const auto* r : {&stranger, &no_team, &user_protocol, &not_member, &twice_made, &delivery, &scheme}) {
    EXPECT_EQ(r->err.find("mates-test-password"), std::string::npos) << r->err;
  }
  pg::Connection c = Connect(url_);
  auto rows_of = [&](const std::string& team) {
    int n = 0;
    for (const char* table : {"mates_teams", "mates_inbox", "mates_messages", "mates_requests", "mates_tasks"}) {
      auto rows = c.Exec(std::string("SELECT count(*) FROM ") + table + " WHERE " +
                         (std::string(table) == "mates_teams" ? "name" : "team") + " = $1", {team});
      EXPECT_TRUE(rows.ok()) << rows.status().message();
      n += rows.ok() ? static_cast<int>(rows->integer(0, 0)) : 0;
    }
    return n;
  };

  // Deleted, the team is archived here as the file layout: every
  // --archived reader reads it, and the database holds none of it.
  auto none_yet = mates({"team", "list", "--archived"});
  EXPECT_EQ(none_yet.exit_code, 0) << none_yet.err;
  EXPECT_NE(none_yet.out.find("no archived teams"), std::string::npos) << none_yet.out;
  // Where no archive can be written, nothing is deleted.
  TempDir blocked;
  ASSERT_TRUE(WriteFileAtomic(blocked.path() / ".teams", "not a folder").ok());
  auto refused = RunMates(blocked.path(), {"team", "delete", "crew", "--store", url_});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_GT(rows_of("crew"), 0) << "deleted without an archive";
  auto archived = mates({"team", "delete", "crew"});
  ASSERT_EQ(archived.exit_code, 0) << archived.err;
  EXPECT_NE(archived.out.find("deleted team crew; archived in .teams/.archive/crew-"), std::string::npos)
      << archived.out;
  EXPECT_EQ(rows_of("crew"), 0);
  EXPECT_EQ(mates({"log", "--team", "crew"}).exit_code, 1);
  auto old_log = mates({"log", "--team", "crew", "--archived", "--json"});
  ASSERT_EQ(old_log.exit_code, 0) << old_log.err;
  EXPECT_NE(old_log.out.find("\"retry-1\""), std::string::npos) << old_log.out;
  auto old_tasks = mates({"tasks", "--team", "crew", "list", "--archived"});
  ASSERT_EQ(old_tasks.exit_code, 0) << old_tasks.err;
  EXPECT_NE(old_tasks.out.find("write the docs"), std::string::npos) << old_tasks.out;
  auto old_status = mates({"status", "--team", "crew", "--archived", "--json"});
  ASSERT_EQ(old_status.exit_code, 0) << old_status.err;
  auto old_view = ParseJson(old_status.out);
  ASSERT_TRUE(old_view.ok()) << old_status.out;
  EXPECT_EQ((*old_view)["members"].size(), 4u) << old_status.out;
  auto listed_now = mates({"team", "list", "--archived"});
  EXPECT_NE(listed_now.out.find("crew"), std::string::npos) << listed_now.out;
  // A team of that name starts afresh.
  ASSERT_EQ(mates({"team", "create", "crew"}).exit_code, 0);
  auto fresh = mates({"log", "--team", "crew", "--json"});
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_EQ(fresh.out, "") << fresh.out;

  // Deleted for good: its inboxes, log and requests with it, and this
  // machine's files of it (a journal left here would bring it back).
  ASSERT_EQ(mates({"send", "--team", "crew", "--to", "lead", "hello"}).exit_code, 0);
  ASSERT_TRUE(EnsureDir(Workspace(ws_.path()).AgentsDir("crew")).ok());
  ASSERT_TRUE(WriteFileAtomic(Workspace(ws_.path()).AgentsDir("crew") / "lead.jsonl", "{}\n").ok());
  auto gone = mates({"team", "delete", "crew", "--purge"});
  EXPECT_EQ(gone.exit_code, 0) << gone.err;
  EXPECT_EQ(gone.out, "deleted team crew for good\n");
  auto after = mates({"log", "--team", "crew"});
  EXPECT_EQ(after.exit_code, 1);
  EXPECT_NE(after.err.find("no team 'crew'"), std::string::npos) << after.err;
  EXPECT_EQ(rows_of("crew"), 0);
  EXPECT_FALSE(fs::exists(Workspace(ws_.path()).TeamDir("crew")));
}

// `mates inbox --wait` and `mates log --follow` on a PostgreSQL store are
// woken by a `mates send` from another process (LISTEN/NOTIFY), not by
// polling.
TEST_F(PgTest, AWaitingInboxAndAFollowedLogWakeOnASendFromAnotherProcess) {
  ASSERT_TRUE(FreshStore());
  ASSERT_EQ(RunMates(ws_.path(), {"team", "--store", url_, "create", "crew", "--members", "alice"}).exit_code, 0);
  const std::vector<std::string> on_pg = {"MATES_STORE=" + url_};
  ASSERT_EQ(RunMates(ws_.path(), {"send", "--team", "crew", "--to", "alice", "before"}, on_pg).exit_code, 0);
  auto follow = testing::StartMates(ws_.path(), {"log", "--team", "crew", "--follow", "--store", url_});
  auto first = follow.ReadLine(DeadlineIn(20));
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_NE(first->find("before"), std::string::npos) << *first;
  // Drained: the waiting inbox below finds it empty and waits.
  ASSERT_EQ(RunMates(ws_.path(), {"inbox", "--team", "crew", "alice"}, on_pg).exit_code, 0);
  auto inbox = testing::StartMates(ws_.path(), {"inbox", "--team", "crew", "alice", "--wait", "30", "--store", url_});
  ASSERT_TRUE(WaitForListeners(2)) << "the inbox never listened";
  const double start = WallSeconds();
  auto sent = RunMates(ws_.path(), {"send", "--team", "crew", "--to", "alice", "after"}, on_pg);
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  auto got = inbox.Wait();
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_NE(got.out.find("after"), std::string::npos) << got.out;
  EXPECT_LT(WallSeconds() - start, 10) << "the waiting inbox was not woken";
  auto next = follow.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_NE(next->find("after"), std::string::npos) << *next;
  // `status --watch` redraws with what is sent.
  auto watch = testing::StartMates(ws_.path(), {"status", "--team", "crew", "--watch", "--store", url_});
  auto screen_with = [&](const std::string& text) {
    Deadline deadline = DeadlineIn(20);
    for (;;) {
      auto line = watch.ReadLine(deadline);
      if (!line.ok()) return false;
      if (line->find(text) != std::string::npos) return true;
    }
  };
  ASSERT_TRUE(screen_with("after")) << "status --watch never drew the team";
  ASSERT_EQ(RunMates(ws_.path(), {"send", "--team", "crew", "--to", "alice", "third one"}, on_pg).exit_code, 0);
  EXPECT_TRUE(screen_with("third one")) << "status --watch did not redraw with the new message";
  watch.Signal(SIGTERM);
  (void)watch.Wait();
  ASSERT_TRUE(follow.ReadLine(DeadlineIn(10)).ok());  // the follow saw it too
  // Deleting the team ends the follow (its output ends; a follow that
  // went on is stopped by the test's deadline, not waited for).
  ASSERT_EQ(RunMates(ws_.path(), {"team", "delete", "crew", "--purge"}, on_pg).exit_code, 0);
  auto end = follow.ReadLine(DeadlineIn(10));
  EXPECT_EQ(end.status().code(), StatusCode::kNotFound) << "the follow went on after the team was deleted";
  if (end.status().code() != StatusCode::kNotFound) follow.Signal(SIGKILL);
  auto ended = follow.Wait();
  EXPECT_EQ(ended.exit_code, 0) << ended.err;
}

// `mates mcp` as an MCP client drives it: JSON-RPC over its stdin/stdout.
class McpSession {
 public:
  McpSession(const fs::path& ws, const std::string& url, const std::string& team, const std::string& as) {
    SubprocessOptions o;
    o.argv = {testing::MatesBinary(), "--workspace", ws.string(), "mcp", "--team", team, "--as", as, "--store", url};
    o.interactive = true;
    o.stderr_path = (ws / ("mcp-" + as + ".err")).string();
    auto p = Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().message();
    if (p.ok()) proc_.emplace(std::move(*p));
    Json init = Call("initialize", {{"protocolVersion", "2025-06-18"},
                                    {"capabilities", Json::object()},
                                    {"clientInfo", {{"name", "pg-test"}, {"version", "1"}}}});
    EXPECT_TRUE(init.contains("result")) << init.dump();
    Send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }
  ~McpSession() {
    if (!proc_) return;
    proc_->CloseStdin();
    (void)proc_->Wait();
  }
  // Sends a request; Answer(id) reads its response.
  int Ask(const std::string& method, const Json& params) {
    int id = ++next_id_;
    Send(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    return id;
  }
  Json Answer(int id, double timeout_s = 20) {
    Deadline deadline = DeadlineIn(timeout_s);
    for (;;) {
      if (!proc_) return Json{{"error", "no server"}};
      auto line = proc_->ReadLine(deadline);
      if (!line.ok()) return Json{{"error", line.status().message()}};
      auto j = ParseJson(*line);
      if (j.ok() && j->contains("id") && (*j)["id"] == id) return *j;
    }
  }
  Json Call(const std::string& method, const Json& params) { return Answer(Ask(method, params)); }
  // A tool's text; `*is_error` says whether it failed.
  std::string Tool(const std::string& name, const Json& args, bool* is_error = nullptr) {
    return TextOf(Call("tools/call", {{"name", name}, {"arguments", args}}), is_error);
  }
  static std::string TextOf(const Json& answer, bool* is_error = nullptr) {
    if (!answer.contains("result")) {
      if (is_error != nullptr) *is_error = true;
      return answer.dump();
    }
    if (is_error != nullptr) *is_error = answer["result"].value("isError", false);
    return answer["result"]["content"][0]["text"].get<std::string>();
  }

 private:
  void Send(const Json& frame) {
    if (!proc_) return;
    EXPECT_TRUE(proc_->WriteStdin(DumpJson(frame) + "\n", DeadlineIn(10)).ok());
  }
  std::optional<Subprocess> proc_;
  int next_id_ = 0;
};

// Two agents on two machines (two workspaces that share nothing but the
// database), each through its own `mates mcp --store`: a message from one
// wakes the other's waiting read_inbox; both claim from one board, no task
// twice; the board and the roster are the database's.
TEST_F(PgTest, ExternalAgentsOnTwoMachinesShareOneTeamThroughMcp) {
  ASSERT_TRUE(FreshStore());
  TempDir machine_a, machine_b;
  const std::vector<std::string> on_pg = {"MATES_STORE=" + url_};
  ASSERT_EQ(RunMates(machine_a.path(), {"team", "create", "crew", "--members", "alice,bob"}, on_pg).exit_code, 0);
  for (int i = 1; i <= 6; ++i) {
    auto made = RunMates(machine_a.path(), {"tasks", "--team", "crew", "create", "step " + std::to_string(i)}, on_pg);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  McpSession alice(machine_a.path(), url_, "crew", "alice");
  McpSession bob(machine_b.path(), url_, "crew", "bob");

  // bob waits for a message; alice's wakes him.
  int waiting = bob.Ask("tools/call", {{"name", "read_inbox"}, {"arguments", {{"wait_seconds", 30}}}});
  ASSERT_TRUE(WaitForListeners(1)) << "bob's read_inbox never listened";
  const double start = WallSeconds();
  bool failed = true;
  std::string sent = alice.Tool("send_message", {{"type", "message"}, {"recipient", "bob"}, {"content", "take the odd steps"}},
                                &failed);
  EXPECT_FALSE(failed) << sent;
  std::string got = McpSession::TextOf(bob.Answer(waiting), &failed);
  EXPECT_FALSE(failed) << got;
  EXPECT_NE(got.find("take the odd steps"), std::string::npos) << got;
  EXPECT_LT(WallSeconds() - start, 10) << "bob's read_inbox was not woken";

  // Both claim until the board is empty: every task once.
  std::map<int64_t, std::string> claimed;
  bool alice_done = false, bob_done = false;
  while (!alice_done || !bob_done) {
    for (auto* who : {&alice, &bob}) {
      bool& done = who == &alice ? alice_done : bob_done;
      if (done) continue;
      std::string text = who->Tool("claim_task", Json::object(), &failed);
      ASSERT_FALSE(failed) << text;
      if (text.rfind("Nothing to claim", 0) == 0) {
        done = true;
        continue;
      }
      int64_t id = std::stoll(text.substr(text.find('#') + 1));
      EXPECT_EQ(claimed.count(id), 0u) << "task #" << id << " claimed twice";
      claimed[id] = who == &alice ? "alice" : "bob";
    }
  }
  EXPECT_EQ(claimed.size(), 6u);
  for (const auto& [id, who] : claimed) {
    EXPECT_EQ(who == "alice", id % 2 == 1) << "task #" << id << " went to " << who << ": they take turns";
  }
  // Completing and reading happen on the one board.
  std::string done = alice.Tool("update_task", {{"task_id", 1}, {"status", "completed"}}, &failed);
  EXPECT_FALSE(failed) << done;
  std::string not_hers = alice.Tool("update_task", {{"task_id", 2}, {"status", "completed"}}, &failed);
  EXPECT_TRUE(failed) << not_hers;
  EXPECT_NE(not_hers.find("owned by 'bob'"), std::string::npos) << not_hers;
  std::string status = bob.Tool("team_status", Json::object(), &failed);
  EXPECT_FALSE(failed) << status;
  EXPECT_NE(status.find("board: 0 pending, 5 in progress, 1 completed"), std::string::npos) << status;
  std::string listed = bob.Tool("list_tasks", Json::object(), &failed);
  EXPECT_NE(listed.find("#1 [completed] step 1 (owner: alice)"), std::string::npos) << listed;
  // A request answered across machines: the lead (a person at machine b's
  // CLI) asks alice to shut down; alice approves through her server.
  auto asked = RunMates(machine_b.path(), {"send", "--team", "crew", "--from", "lead", "--to", "alice", "--type",
                                           "shutdown_request", "--json", "wrap up"},
                        on_pg);
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  std::string rid = ParseJson(asked.out).value()["request_id"];
  std::string request = alice.Tool("read_inbox", Json::object(), &failed);
  EXPECT_NE(request.find(rid), std::string::npos) << request;
  std::string approved = alice.Tool(
      "send_message", {{"type", "shutdown_response"}, {"request_id", rid}, {"approve", true}, {"content", "done"}},
      &failed);
  EXPECT_FALSE(failed) << approved;
  auto lead_inbox = RunMates(machine_b.path(), {"inbox", "--team", "crew", "lead", "--json"}, on_pg);
  EXPECT_NE(lead_inbox.out.find("\"shutdown_response\""), std::string::npos) << lead_inbox.out;
  // Each server hosts its member: alice and bob are there (not offline),
  // the lead (no server) is not, and alice cannot be served twice.
  auto roster = RunMates(machine_b.path(), {"team", "show", "crew", "--json"}, on_pg);
  ASSERT_EQ(roster.exit_code, 0) << roster.err;
  Json members = ParseJson(roster.out).value()["members"];
  ASSERT_EQ(members.size(), 3u) << roster.out;
  for (const auto& m : members) EXPECT_EQ(m["status"] == "offline", m["name"] == "lead") << m.dump();
  auto twice = RunMates(machine_b.path(), {"mcp", "--team", "crew", "--as", "alice", "--store", url_});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.err.find("'alice' of team 'crew' is served already"), std::string::npos) << twice.err;
  auto stranger = RunMates(machine_b.path(), {"mcp", "--team", "crew", "--as", "zed", "--store", url_});
  EXPECT_EQ(stranger.exit_code, 1);
  EXPECT_NE(stranger.err.find("'zed' is not a member of team 'crew'"), std::string::npos) << stranger.err;
  auto ghost = RunMates(machine_a.path(), {"mcp", "--team", "ghost", "--as", "alice", "--store", url_});
  EXPECT_EQ(ghost.exit_code, 1);
  EXPECT_NE(ghost.err.find("no team 'ghost'"), std::string::npos) << ghost.err;
  // Neither machine holds any team state.
  EXPECT_FALSE(fs::exists(machine_a.path() / ".teams"));
  EXPECT_FALSE(fs::exists(machine_b.path() / ".teams"));
  EXPECT_FALSE(fs::exists(machine_a.path() / ".tasks"));
  // A team deleted under the servers: one clear error per call.
  ASSERT_EQ(RunMates(machine_a.path(), {"team", "delete", "crew", "--purge"}, on_pg).exit_code, 0);
  std::string none = alice.Tool("list_tasks", Json::object(), &failed);
  EXPECT_TRUE(failed);
  EXPECT_NE(none.find("no team 'crew'"), std::string::npos) << none;
  std::string nothing = bob.Tool("read_inbox", Json::object(), &failed);
  EXPECT_TRUE(failed) << nothing;
}

// The roster's document without its clock readings, to compare stores.
Json Timeless(const TeamConfig& c) {
  Json j = TeamConfigToJson(c);
  for (auto& [key, value] : j.items()) {
    if (value.is_number_float()) value = 0;
  }
  if (j.contains("members")) {
    for (auto& m : j["members"]) {
      for (auto& [key, value] : m.items()) {
        if (value.is_number_float() || (value.is_number() && key.find("join") != std::string::npos)) value = 0;
      }
    }
  }
  return j;
}

TEST_F(PgTest, ARosterFollowsTheFileStoresRules) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  Roster files(Workspace(ws_.path()));
  auto both = [&](auto&& on_pg, auto&& on_files) {
    auto a = on_pg();
    auto b = on_files();
    EXPECT_EQ(a.ok(), b.ok());
    if (!a.ok() && !b.ok()) {
      EXPECT_EQ(a.status().code(), b.status().code()) << a.status().message();
    }
  };
  both([&] { return store->rosters().CreateTeam("crew", "boss", "the crew"); }, [&] { return files.CreateTeam("crew", "boss", "the crew"); });
  both([&] { return store->rosters().CreateTeam("crew"); }, [&] { return files.CreateTeam("crew"); });
  for (const char* name : {"alice", "bob", "alice", "bad name", "boss"}) {
    Member m;
    m.name = name;
    m.model = "claude-sonnet-4-5";
    both([&] { return store->rosters().AddMember("crew", m); }, [&] { return files.AddMember("crew", m); });
  }
  EXPECT_TRUE(store->rosters().SetMemberStatus("crew", "bob", MemberStatus::kActive).ok());
  EXPECT_TRUE(files.SetStatus("crew", "bob", MemberStatus::kActive).ok());
  EXPECT_EQ(store->rosters().SetMemberStatus("crew", "nobody", MemberStatus::kActive).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->rosters().LoadTeam("nosuchteam").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->rosters().LoadTeam("bad name").status().code(), StatusCode::kInvalidArgument);
  auto pg_config = store->rosters().LoadTeam("crew");
  auto file_config = files.Load("crew");
  ASSERT_TRUE(pg_config.ok() && file_config.ok());
  EXPECT_EQ(Timeless(*pg_config), Timeless(*file_config));
  EXPECT_EQ(pg_config->Find("bob")->color, "yellow");

  // Members added at once from many threads: each is in, once.
  std::vector<std::thread> adders;
  for (int i = 0; i < 8; ++i) {
    adders.emplace_back([&, i] {
      Member m;
      m.name = "t" + std::to_string(i);
      EXPECT_TRUE(store->rosters().AddMember("crew", m).ok());
    });
  }
  for (auto& t : adders) t.join();
  EXPECT_EQ(store->rosters().LoadTeam("crew")->members.size(), 3u + 8u);
}

TEST_F(PgTest, ADatabaseAtSchemaVersion1IsMigratedWithItsState) {
  std::string url = FreshDatabase();
  pg::Connection c = Connect(url);
  // As a mates of version 1 left it: a team (no roster column yet), a
  // message, a task.
  ASSERT_TRUE(pg::ApplySchemaUpTo(c, 1).ok());
  ASSERT_TRUE(c.ExecScript("INSERT INTO mates_teams (name, created_at) VALUES ('old', 1700000000);"
                           "INSERT INTO mates_inbox (team, member, msg_id, line) VALUES ('old', 'lead', 'm-1', "
                           "'{\"id\":\"m-1\",\"type\":\"message\",\"from\":\"user\",\"to\":\"lead\","
                           "\"content\":\"kept\",\"timestamp\":1}');"
                           "INSERT INTO mates_tasks (team, id, subject, status, created_at, updated_at) "
                           "VALUES ('old', 1, 'kept too', 'pending', 1, 1);")
                  .ok());
  EXPECT_EQ(pg::Store::Open(*pg::ParseTarget(url)).status().code(), StatusCode::kFailedPrecondition);
  auto st = RunMates(ws_.path(), {"store", "status", "--store", url});
  EXPECT_EQ(st.exit_code, 1);
  EXPECT_NE(st.err.find("is version 1: run mates store migrate"), std::string::npos) << st.err;
  auto init = RunMates(ws_.path(), {"store", "init", "--store", url});
  EXPECT_EQ(init.exit_code, 1);
  EXPECT_NE(init.err.find("older than this mates' " + std::to_string(pg::kSchemaVersion) + ": run mates store migrate"),
            std::string::npos)
      << init.err;
  auto mig = RunMates(ws_.path(), {"store", "migrate", "--store", url});
  ASSERT_EQ(mig.exit_code, 0) << mig.err;
  EXPECT_NE(mig.out.find("migrated the mates schema from version 1 to " + std::to_string(pg::kSchemaVersion)),
            std::string::npos)
      << mig.out;
  auto store = pg::Store::Open(*pg::ParseTarget(url));
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto team = (*store)->rosters().LoadTeam("old");
  ASSERT_TRUE(team.ok()) << team.status().message();
  EXPECT_EQ(team->lead, "lead");
  ASSERT_EQ(team->members.size(), 1u);
  EXPECT_EQ(Ids(*(*store)->mail().Peek("old", "lead")), (std::vector<std::string>{"m-1"}));
  EXPECT_EQ((*store)->tasks().Get("old", 1)->subject, "kept too");
  Member m;
  m.name = "newcomer";
  ASSERT_TRUE((*store)->rosters().AddMember("old", m).ok());
  EXPECT_EQ((*store)->rosters().LoadTeam("old")->members.size(), 2u);
}

// A usage line as a journal holds it (agent/journal.h).
std::string UsageLine(const std::string& model, const std::string& input, const std::string& output = "5") {
  return R"({"kind":"usage","model":")" + model + R"(","ts":1,"usage":{"cache_creation_input_tokens":1,)"
         R"("cache_read_input_tokens":2,"input_tokens":)" + input + R"(,"output_tokens":)" + output + "}}";
}

// What a team spent (DESIGN §15) is kept by the database as journal lines
// are written, overwritten, replaced and deleted, from any number of
// writers at once, and counts what a host would count from the same lines.
TEST_F(PgTest, WhatATeamSpentIsSummedAsItsJournalLinesAreWritten) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto teams = pg::StoreTeams(*store);
  for (const char* name : {"ann", "bob"}) {
    Member m;
    m.name = name;
    ASSERT_TRUE(store->rosters().AddMember("procs", m).ok());
  }
  ASSERT_TRUE(teams->CreateTeam("other", "lead", "").ok());
  const auto spent = [&](const std::string& team) {
    auto s = teams->Spent(team);
    EXPECT_TRUE(s.ok() && *s) << s.status().message();
    std::map<std::string, std::vector<int64_t>> out;
    if (s.ok() && *s) {
      for (const ModelSpend& m : **s) out[m.model] = {m.calls, m.input, m.output, m.cache_write, m.cache_read};
    }
    return out;
  };
  using Sums = std::map<std::string, std::vector<int64_t>>;
  std::unique_ptr<JournalCopy> ann = teams->JournalOf("procs", "ann");
  ASSERT_TRUE(ann->Put(0, {UsageLine("m-a", "10"), R"({"kind":"message","role":"user"})", UsageLine("m-b", "7")}).ok());
  EXPECT_EQ(spent("procs"), (Sums{{"m-a", {1, 10, 5, 1, 2}}, {"m-b", {1, 7, 5, 1, 2}}}));
  // An append retried after a lost answer counts once; a line overwritten
  // counts as it is now.
  ASSERT_TRUE(ann->Put(0, {UsageLine("m-a", "10"), R"({"kind":"message","role":"user"})"}).ok());
  ASSERT_TRUE(ann->Put(1, {UsageLine("m-a", "100")}).ok());
  EXPECT_EQ(spent("procs"), (Sums{{"m-a", {2, 110, 10, 2, 4}}, {"m-b", {1, 7, 5, 1, 2}}}));
  // Lines that are not whole usage lines, and counts that are not whole
  // numbers or are too large, count as a host reads them; the lines stand.
  std::unique_ptr<JournalCopy> bob = teams->JournalOf("procs", "bob");
  const std::vector<std::string> odd = {
      R"({"kind":"usage","model":"m-a",)",  // torn: not JSON
      UsageLine("m-a", "-4"), UsageLine("m-a", "1.5"), UsageLine("m-a", "\"9\""),
      UsageLine("m-a", "1000000000000000"), R"({"kind":"usage","model":"m-a","usage":[1,2]})",
      R"({"kind":"usage","usage":{"input_tokens":3}})"};
  ASSERT_TRUE(bob->Put(0, odd).ok());
  EXPECT_EQ(bob->Lines()->size(), odd.size());
  const Sums with_odd = {{"", {1, 3, 0, 0, 0}}, {"m-a", {7, 1000000000110, 30, 6, 12}}, {"m-b", {1, 7, 5, 1, 2}}};
  EXPECT_EQ(spent("procs"), with_odd);
  auto host_reads = agent::ReadTeamUsage(*teams, "procs", testing::TestEnv().prices);
  ASSERT_TRUE(host_reads.ok() && *host_reads) << host_reads.status().message();
  ModelSpend all;
  for (const auto& [model, sums] : with_odd) {
    all.input += sums[1];
    all.output += sums[2];
    all.cache_write += sums[3];
    all.cache_read += sums[4];
  }
  EXPECT_EQ(agent::TotalTokens((*host_reads)->total), agent::PriceSpent({all}, testing::TestEnv().prices).first);
  // Another team's lines are its own.
  ASSERT_TRUE(teams->JournalOf("other", "ann")->Put(0, {UsageLine("m-a", "1")}).ok());
  EXPECT_EQ(spent("other"), (Sums{{"m-a", {1, 1, 5, 1, 2}}}));
  EXPECT_EQ(spent("procs"), with_odd);
  // A journal replaced counts as it is now.
  ASSERT_TRUE(bob->Replace({UsageLine("m-b", "1")}).ok());
  EXPECT_EQ(spent("procs"), (Sums{{"m-a", {2, 110, 10, 2, 4}}, {"m-b", {2, 8, 10, 2, 4}}}));
  // Writers at once, each on its own connection: no count lost.
  constexpr int kWriters = 4, kLines = 50;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto own = pg::Store::Open(*pg::ParseTarget(url_));
      ASSERT_TRUE(own.ok()) << own.status().message();
      auto copy = pg::StoreTeams(**own)->JournalOf("procs", "w" + std::to_string(w));
      for (int i = 0; i < kLines; ++i) {
        ASSERT_TRUE(copy->Put(i, {UsageLine(i % 2 ? "m-a" : "m-b", "1")}).ok());
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(spent("procs"), (Sums{{"m-a", {2 + kWriters * kLines / 2, 110 + kWriters * kLines / 2, 10 + 5 * kWriters * kLines / 2,
                                           2 + kWriters * kLines / 2, 4 + 2 * kWriters * kLines / 2}},
                                  {"m-b", {2 + kWriters * kLines / 2, 8 + kWriters * kLines / 2, 10 + 5 * kWriters * kLines / 2,
                                           2 + kWriters * kLines / 2, 4 + 2 * kWriters * kLines / 2}}}));
  // A journal naming countless models, or nested past any parser's depth:
  // read back as 256 rows at most, the total kept; the deep line counts
  // nothing (the host reads it so too).
  std::vector<std::string> many;
  for (int i = 0; i < 300; ++i) many.push_back(UsageLine("x-" + std::to_string(i), "1"));
  many.push_back(R"({"kind":"usage","model":"m-a","usage":)" + std::string(100000, '[') + std::string(100000, ']') +
                 "}");
  const int64_t before_many = agent::PriceSpent(**teams->Spent("procs"), testing::TestEnv().prices).first;
  ASSERT_TRUE(teams->JournalOf("procs", "many")->Put(0, many).ok());
  auto capped = teams->Spent("procs");
  ASSERT_TRUE(capped.ok() && *capped) << capped.status().message();
  EXPECT_LE((*capped)->size(), 256u);
  EXPECT_EQ(agent::PriceSpent(**capped, testing::TestEnv().prices).first, before_many + 300 * (1 + 5 + 1 + 2));
  // A team deleted takes its sums (and its journals) with it.
  ASSERT_TRUE(store->rosters().DeleteTeam("other").ok());
  EXPECT_EQ(spent("other"), Sums{});
  // The file store keeps no copies: its one host counts.
  EXPECT_FALSE(*FileTeamStore(Workspace(ws_.path()), testing::TestEnv())->Spent("procs"));
}

// A database a mates of schema 12 left gets the sums of the journal lines
// it holds.
TEST_F(PgTest, ADatabaseMigratedToSumsWhatItsTeamsSpentCountsTheirJournals) {
  std::string url = FreshDatabase();
  pg::Connection c = Connect(url);
  ASSERT_TRUE(pg::ApplySchemaUpTo(c, 12).ok());
  ASSERT_TRUE(c.ExecScript("INSERT INTO mates_teams (name, created_at) VALUES ('old', 1700000000)").ok());
  ASSERT_TRUE(c.Exec("INSERT INTO mates_journals (team, member, seq, line) VALUES ('old', 'ann', 0, $1), "
                     "('old', 'ann', 1, '{}'), ('old', 'bob', 0, $2)",
                     {UsageLine("m-a", "10"), UsageLine("m-a", "20")})
                  .ok());
  ASSERT_TRUE(pg::MigrateSchema(c).ok());
  auto store = pg::Store::Open(*pg::ParseTarget(url));
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto spent = (*store)->journals().Spent("old");
  ASSERT_TRUE(spent.ok()) << spent.status().message();
  ASSERT_EQ(spent->size(), 1u);
  EXPECT_EQ((*spent)[0].model, "m-a");
  EXPECT_EQ((*spent)[0].calls, 2);
  EXPECT_EQ((*spent)[0].input, 30);
}

TEST_F(PgTest, ATeamIsExportedAsTheFileLayout) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->rosters().CreateTeam("crew", "boss", "the crew").ok());
  Member alice;
  alice.name = "alice";
  ASSERT_TRUE(store->rosters().AddMember("crew", alice).ok());
  ASSERT_TRUE(store->mail().Append("crew", "alice", Msg("m-1", "for alice")).ok());
  ASSERT_TRUE(store->mail().Append("crew", "boss", Msg("m-2", "for the boss")).ok());
  TaskDraft d;
  d.subject = "first";
  ASSERT_TRUE(store->tasks().Create("crew", d).ok());
  d.subject = "second";
  d.blocked_by = {1};
  ASSERT_TRUE(store->tasks().Create("crew", d).ok());
  d.subject = "third";
  d.blocked_by = {};
  ASSERT_TRUE(store->tasks().Create("crew", d).ok());
  ASSERT_TRUE(store->tasks().ClaimNext("crew", "alice").ok());
  ASSERT_TRUE(store->tasks().Complete("crew", 1, "alice").ok());
  ASSERT_TRUE(store->tasks().ClaimNext("crew", "alice").ok());  // #2, unblocked now
  // A plan waiting for the lead: in boss's inbox, the log and the requests.
  auto mail = pg::StoreMail(*store, "crew");
  SendRequest plan;
  plan.type = MessageType::kPlanApprovalRequest;
  plan.sender = "alice";
  plan.content = "the plan";
  auto asked = Messenger(*mail).Send(plan);
  ASSERT_TRUE(asked.ok()) << asked.status().message();

  // Alice's work on #2, submitted to the merge queue.
  MergeRequest mr;
  mr.task = 2;
  mr.subject = "second";
  mr.owner = "alice";
  mr.branch = "mates/alice@crew";
  mr.commit = std::string(40, 'a');
  mr.target = "mates/crew";
  auto queued = store->merges().Create("crew", mr);
  ASSERT_TRUE(queued.ok()) << queued.status().message();

  // Alice's journal, as her host copied it.
  const std::vector<std::string> journal = {
      R"({"kind":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}})",
      R"({"kind":"usage","usage":{"input_tokens":10,"output_tokens":5},"model":"m"})"};
  ASSERT_TRUE(store->journals().Put("crew", "alice", 0, journal).ok());

  fs::path out = ws_.path() / "exported";
  auto r = RunMates(ws_.path(), {"store", "export", "--team", "crew", out.string()}, {"MATES_STORE=" + url_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exported team 'crew' (2 members, 3 undelivered messages, 1 logged, 1 requests, "
                       "1 merge requests, 3 tasks, 1 journals)"),
            std::string::npos)
      << r.out;
  auto exported_merges = MergeStore(Workspace(out), "crew").List();
  ASSERT_TRUE(exported_merges.ok());
  ASSERT_EQ(exported_merges->size(), 1u);
  EXPECT_EQ(DumpJson(MergeRequestToJson(exported_merges->front())), DumpJson(MergeRequestToJson(*queued)));
  EXPECT_EQ(testing::ReadAll(Workspace(out).AgentsDir("crew") / "alice.jsonl"), journal[0] + "\n" + journal[1] + "\n");
  EXPECT_FALSE(fs::exists(Workspace(out).AgentsDir("crew") / "boss.jsonl"));
  auto log = RunMates(out, {"log", "--team", "crew", "--json"});
  ASSERT_EQ(log.exit_code, 0) << log.err;
  EXPECT_NE(log.out.find("\"the plan\""), std::string::npos) << log.out;
  // The request came along: the lead answers it on the files.
  auto answer = RunMates(out, {"send", "--team", "crew", "--from", "boss", "--type", "plan_approval_response",
                               "--request-id", asked->message.request_id, "--approve", "go"});
  EXPECT_EQ(answer.exit_code, 0) << answer.err;

  auto team = RunMates(out, {"team", "show", "crew", "--json"});
  ASSERT_EQ(team.exit_code, 0) << team.err;
  auto team_json = Json::parse(team.out);
  EXPECT_EQ(team_json["lead"], "boss") << team.out;
  EXPECT_EQ(team_json["description"], "the crew") << team.out;
  EXPECT_NE(team.out.find("\"alice@crew\""), std::string::npos) << team.out;
  auto tasks = RunMates(out, {"tasks", "--team", "crew", "list", "--all", "--json"});
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  auto list = Json::parse(tasks.out);
  ASSERT_EQ(list.size(), 3u) << tasks.out;
  EXPECT_EQ(list[0]["status"], "completed");
  EXPECT_EQ(list[1]["status"], "in_progress");
  EXPECT_EQ(list[1]["owner"], "alice");
  EXPECT_EQ(list[1]["blockedBy"], Json::array({1})) << tasks.out;
  EXPECT_EQ(list[2]["status"], "pending");
  auto inbox = RunMates(out, {"inbox", "--team", "crew", "alice", "--peek", "--json"});
  ASSERT_EQ(inbox.exit_code, 0) << inbox.err;
  EXPECT_NE(inbox.out.find("for alice"), std::string::npos) << inbox.out;
  // The files go on from there: the next task is #4.
  auto next = RunMates(out, {"tasks", "--team", "crew", "create", "fourth"});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_NE(next.out.find("4"), std::string::npos) << next.out;

  auto again = RunMates(ws_.path(), {"store", "export", "--team", "crew", out.string(), "--store", url_});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("holds a team 'crew' already"), std::string::npos) << again.err;
  auto unknown = RunMates(ws_.path(), {"store", "export", "--team", "nope", (ws_.path() / "x").string(), "--store", url_});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no team 'nope'"), std::string::npos) << unknown.err;
  auto no_store = RunMates(ws_.path(), {"store", "export", "--team", "crew", (ws_.path() / "y").string()});
  EXPECT_EQ(no_store.exit_code, 2) << no_store.err;
  auto bad_team = RunMates(ws_.path(), {"store", "export", "--team", "../x", (ws_.path() / "z").string(), "--store", url_});
  EXPECT_EQ(bad_team.exit_code, 2) << bad_team.err;
}

// What each agent does is in the store for `mates status` on any machine
// and for `store export`; a document that is not one is left out.
TEST_F(PgTest, ActivityIsSharedThroughTheStoreAndBadDocumentsAreLeftOut) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->rosters().CreateTeam("crew", "boss", "").ok());
  for (const std::string name : {"alice", "bob", "carol", "dave"}) {
    Member m;
    m.name = name;
    ASSERT_TRUE(store->rosters().AddMember("crew", m).ok());
  }
  auto teams = pg::StoreTeams(*store);
  TempDir host;
  {
    // Alice's host writes her activity file, and the store gets it too.
    ASSERT_TRUE(EnsureDir(Workspace(host.path()).AgentsDir("crew")).ok());
    agent::ActivityFile alice(Workspace(host.path()).AgentsDir("crew") / "alice.status.json", "alice", "m",
                              testing::TestEnv().files, testing::TestEnv().prices, teams->ActivityOf("crew", "alice"));
    llm::ContentBlock call;
    call.name = "bash";
    call.input_json = R"({"command":"make test"})";
    alice.Tool(call);
    testing::TestEnv().files.Flush();
  }
  // Bob's is no JSON, carol's names someone else, the boss's is too big to read.
  ASSERT_TRUE(store->journals().PutActivity("crew", "bob", "{not json").ok());
  ASSERT_TRUE(store->journals().PutActivity("crew", "carol", R"({"agent":"mallory","state":"idle"})").ok());
  // Dave's is nested past any depth a reader follows.
  ASSERT_TRUE(store->journals().PutActivity("crew", "dave", std::string(100000, '[') + std::string(100000, ']')).ok());
  pg::Connection c = Connect(url_);
  ASSERT_TRUE(c.Exec("INSERT INTO mates_activity (team, member, doc) VALUES ('crew', 'boss', repeat('x', $1::int))",
                     {std::to_string(kMaxStateFileBytes + 1)})
                  .ok());
  EXPECT_EQ(store->journals().PutActivity("crew", "bob", std::string(kMaxStateFileBytes + 1, 'x')).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->journals().PutActivity("nope", "bob", "{}").code(), StatusCode::kNotFound);
  EXPECT_EQ(store->journals().PutActivity("crew", "bob", std::string(R"({"agent":"bob"})") + '\0' + "rest").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->journals().PutActivity("crew", "../x", "{}").code(), StatusCode::kInvalidArgument);

  // Another machine (a workspace with nothing in it) sees what alice does
  // while her host lives.
  auto hosted = teams->HoldLiveness("crew", "alice");
  ASSERT_TRUE(hosted.ok()) << hosted.status().message();
  TempDir elsewhere;
  auto st = RunMates(elsewhere.path(), {"status", "--team", "crew", "--json", "--store", url_});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto view = Json::parse(st.out);
  std::map<std::string, Json> activity;
  for (const auto& m : view["members"]) activity[m["name"]] = m["activity"];
  ASSERT_TRUE(activity["alice"].is_object()) << st.out;
  EXPECT_EQ(activity["alice"]["state"], "tool");
  EXPECT_EQ(activity["alice"]["doing"], "bash(make test)");
  for (const char* left_out : {"bob", "carol", "dave", "boss"}) {
    EXPECT_TRUE(activity[left_out].is_null()) << left_out;
  }
  auto text = RunMates(elsewhere.path(), {"status", "--team", "crew", "--store", url_});
  EXPECT_NE(text.out.find("bash(make test)"), std::string::npos) << text.out;
  hosted->reset();
  text = RunMates(elsewhere.path(), {"status", "--team", "crew", "--store", url_});
  EXPECT_NE(text.out.find("(host gone)"), std::string::npos) << text.out;

  // The export writes alice's as her activity file, and no other.
  fs::path out = elsewhere.path() / "exported";
  auto r = RunMates(elsewhere.path(), {"store", "export", "--team", "crew", out.string(), "--store", url_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto exported = agent::ReadActivity(Workspace(out).AgentsDir("crew") / "alice.status.json");
  ASSERT_TRUE(exported.ok()) << exported.status().message();
  EXPECT_EQ(exported->doing, "bash(make test)");
  for (const char* left_out : {"bob", "carol", "dave", "boss"}) {
    EXPECT_FALSE(fs::exists(Workspace(out).AgentsDir("crew") / (std::string(left_out) + ".status.json"))) << left_out;
  }
}

// The conflicts a host forecasts (DESIGN §30) are the team's: another
// machine's `mates status` shows them while the lead's host lives, and a
// watch of them wakes when they change; a document that is not one, or is
// too big, is none.
TEST_F(PgTest, ForecastsAreSeenFromAnyMachineWhileTheHostLives) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->rosters().CreateTeam("crew", "boss", "").ok());
  for (const std::string name : {"w1", "w2"}) {
    Member m;
    m.name = name;
    ASSERT_TRUE(store->rosters().AddMember("crew", m).ok());
  }
  auto teams = pg::StoreTeams(*store);
  auto waker = std::make_shared<Waker>();
  auto watch = teams->Watch("crew", TeamPart::kForecasts, waker);
  ASSERT_TRUE(watch.ok()) << watch.status().message();
  ConflictForecast f;
  f.members = {"w1", "w2"};
  f.tasks = {3, 4};
  f.files = {"shared.txt"};
  f.since = 1763884800.5;
  const uint64_t seen = waker->generation();
  ASSERT_TRUE(teams->PutForecasts("crew", {f}).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "no wake-up for a forecast";

  TempDir elsewhere;
  auto status = [&] {
    auto st = RunMates(elsewhere.path(), {"status", "--team", "crew", "--json", "--store", url_});
    EXPECT_EQ(st.exit_code, 0) << st.err;
    return Json::parse(st.out, nullptr, false);
  };
  // No host: a forecast left behind is not shown.
  EXPECT_TRUE(teams->Forecasts("crew").empty());
  EXPECT_EQ(status()["forecasts"], Json::array());

  auto hosted = teams->HoldLiveness("crew", "boss");
  ASSERT_TRUE(hosted.ok()) << hosted.status().message();
  Json v = status();
  ASSERT_EQ(v["forecasts"].size(), 1u) << v.dump();
  EXPECT_EQ(v["forecasts"][0]["members"], (Json{"w1", "w2"}));
  EXPECT_EQ(v["forecasts"][0]["tasks"], (Json{3, 4}));
  EXPECT_EQ(v["forecasts"][0]["files"], Json{"shared.txt"});
  bool attention = false;
  for (const auto& a : v["attention"]) attention = attention || a["kind"] == "conflict_forecast";
  EXPECT_TRUE(attention) << v.dump();
  auto text = RunMates(elsewhere.path(), {"status", "--team", "crew", "--store", url_});
  EXPECT_NE(text.out.find("w1 (task #3) and w2 (task #4) both change shared.txt"), std::string::npos) << text.out;

  // Resolved: none.
  ASSERT_TRUE(teams->PutForecasts("crew", {}).ok());
  EXPECT_EQ(status()["forecasts"], Json::array());

  // What was not put by mates: no JSON, too big — none, and no error.
  pg::Connection c = Connect(url_);
  ASSERT_TRUE(c.Exec("UPDATE mates_forecasts SET doc = '{not json' WHERE team = 'crew'").ok());
  EXPECT_TRUE(teams->Forecasts("crew").empty());
  ASSERT_TRUE(c.Exec("UPDATE mates_forecasts SET doc = '{\"forecasts\": [' || repeat('{}, ', $1::int) || '{}]}' "
                     "WHERE team = 'crew'",
                     {std::to_string(kMaxForecastBytes / 4)})
                  .ok());
  EXPECT_TRUE(teams->Forecasts("crew").empty());
  EXPECT_EQ(status()["forecasts"], Json::array());
  // Bad input: no such team, a name that is not one.
  EXPECT_EQ(teams->PutForecasts("nope", {f}).code(), StatusCode::kNotFound);
  EXPECT_EQ(teams->PutForecasts("../x", {f}).code(), StatusCode::kInvalidArgument);
}

TEST_F(PgTest, LivenessFollowsTheHostProcessEvenThroughKillNine) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  EXPECT_FALSE(*store->liveness().IsHosted("procs", "ann"));
  auto host = testing::Start({testing::StoreHelperBinary(), "host", url_, "ann"});
  auto said = host.ReadLine(DeadlineIn(30));
  ASSERT_TRUE(said.ok() && *said == "hosting") << (said.ok() ? *said : said.status().message());
  EXPECT_TRUE(*store->liveness().IsHosted("procs", "ann"));
  EXPECT_FALSE(*store->liveness().IsHosted("procs", "bob"));
  auto second = store->liveness().Hold("procs", "ann");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kConflict);
  EXPECT_NE(second.status().message().find("hosted by another process"), std::string::npos);
  // Asking does not take it: it is still held after many looks.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(*store->liveness().IsHosted("procs", "ann"));
  host.Signal(SIGKILL);
  host.Wait();
  // The server frees a dead session's locks once it sees the socket closed.
  EXPECT_TRUE(testing::WaitUntil([&] { return !*store->liveness().IsHosted("procs", "ann"); }, 10));
  {
    auto mine = store->liveness().Hold("procs", "ann");
    ASSERT_TRUE(mine.ok()) << mine.status().message();
    EXPECT_TRUE(*store->liveness().IsHosted("procs", "ann"));
  }
  EXPECT_TRUE(testing::WaitUntil([&] { return !*store->liveness().IsHosted("procs", "ann"); }, 10));
}

TEST_F(PgTest, AnAppendFromAnotherProcessWakesAWaiter) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto waker = std::make_shared<Waker>();
  auto sub = store->listener().Subscribe(pg::InboxKey("procs", "lead"), waker);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  auto other = std::make_shared<Waker>();
  auto other_sub = store->listener().Subscribe(pg::InboxKey("procs", "someone-else"), other);
  ASSERT_TRUE(other_sub.ok());
  uint64_t seen = waker->generation();
  auto w = testing::Run({testing::StoreHelperBinary(), "write", url_, "lead", "1", "x"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "no wake-up";
  EXPECT_EQ(other->generation(), 0u) << "a waiter on another inbox was woken";
  EXPECT_EQ(store->mail().Drain("procs", "lead")->size(), 1u);
}

// A notification that reaches the listening connection while it is busy
// listening to another channel (libpq queues it as it reads that
// statement's answer, and nothing more arrives on the socket) still wakes
// its waiter. Each round a thread subscribes to twenty new channels while
// a send lands in the middle of them; before the fix 7 rounds of 40 lost
// their wake-up for good (a teammate slept through a shutdown request).
TEST_F(PgTest, ASendThatArrivesWhileTheListenerListensElsewhereStillWakes) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto waker = std::make_shared<Waker>();
  auto sub = store->listener().Subscribe(pg::InboxKey("procs", "lead"), waker);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  int lost = 0;
  for (int round = 0; round < 40; ++round) {
    std::atomic<int> subscribed{0};
    std::vector<pg::Listener::Subscription> others;
    std::thread churn([&] {
      for (int i = 0; i < 20; ++i) {
        auto s = store->listener().Subscribe(pg::InboxKey("procs", "x" + std::to_string(round * 20 + i)),
                                             std::make_shared<Waker>());
        if (s.ok()) others.push_back(std::move(*s));
        subscribed.fetch_add(1);
      }
    });
    ASSERT_TRUE(testing::WaitUntil([&] { return subscribed.load() >= 5; }, 20));
    uint64_t seen = waker->generation();
    ASSERT_TRUE(store->mail().Append("procs", "lead", Msg("m-" + std::to_string(round), "wake")).ok());
    churn.join();
    EXPECT_EQ(others.size(), 20u);
    if (waker->WaitChange(seen, DeadlineIn(5)) == seen) ++lost;
    others.clear();  // UNLISTENs, racing the next round's LISTENs
  }
  EXPECT_EQ(lost, 0) << "rounds whose send woke nobody";
  EXPECT_EQ(store->mail().Drain("procs", "lead")->size(), 40u);
}

// A team's messages are logged one at a time, each to its commit: a
// message numbered after one still being logged waits for it, so a
// follower whose cursor moved past a number never finds an earlier one
// later (what `log --follow` and the dashboard's `after` rely on).
TEST_F(PgTest, AFollowedLogNeverSkipsAMessageThatCommitsLate) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  // Another writer, mid-way: it holds the log and has its row in, not
  // yet committed.
  pg::Connection early = Connect(url_);
  ASSERT_TRUE(early.ExecScript("BEGIN").ok());
  ASSERT_TRUE(early.Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {pg::LogKey("procs")}).ok());
  std::string line = MessageToLine(Msg("early", "first"));
  line.pop_back();  // its newline
  ASSERT_TRUE(early.Exec("INSERT INTO mates_messages (team, msg_id, line) VALUES ('procs', 'early', $1)", {line}).ok());
  std::thread late([&] { EXPECT_TRUE(store->log().Append("procs", Msg("late", "second")).ok()); });
  pg::Connection look = Connect(url_);
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto r = look.Exec("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
    return r.ok() && r->integer(0, 0) == 1;
  }, 20)) << "the second message did not wait for the first";
  int64_t cursor = 0;
  auto none = store->log().Read("procs", &cursor);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty()) << "seen before the first committed: " << none->front().id;
  ASSERT_TRUE(early.ExecScript("COMMIT").ok());
  late.join();
  auto both = store->log().Read("procs", &cursor);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(Ids(*both), (std::vector<std::string>{"early", "late"}));
  // A page is bounded by bytes too: one message at least.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(store->log().Append("procs", Msg("big" + std::to_string(i), std::string(100000, 'x'))).ok());
  }
  auto page = store->log().Read("procs", &cursor, 1000, 250000);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Ids(*page), (std::vector<std::string>{"big0", "big1"}));
  auto one = store->log().Read("procs", &cursor, 1000, 10);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Ids(*one), (std::vector<std::string>{"big2"}));
  auto rest = store->log().Read("procs", &cursor, 1000, 10);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(Ids(*rest), (std::vector<std::string>{"big3"}));
  int64_t tail_cursor = -1;
  auto tail = store->log().Tail("procs", 2, &tail_cursor);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(Ids(*tail), (std::vector<std::string>{"big2", "big3"}));
  EXPECT_EQ(tail_cursor, cursor) << "what follows the tail starts where the log's end is";
  auto bounded = store->log().Tail("procs", 4, nullptr, 250000);
  ASSERT_TRUE(bounded.ok());
  EXPECT_EQ(Ids(*bounded), (std::vector<std::string>{"big2", "big3"}));
  auto last = store->log().Tail("procs", 4, nullptr, 10);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(Ids(*last), (std::vector<std::string>{"big3"}));
}

// `mates inbox --wait` and `mates log --follow` ride out a restart of the
// server: they say they wait for it, and go on when it is back.
TEST_F(PgTest, AWaitingInboxAndAFollowedLogRideOutAServerRestart) {
  ASSERT_TRUE(FreshStore());
  const std::vector<std::string> on_pg = {"MATES_STORE=" + url_};
  ASSERT_EQ(RunMates(ws_.path(), {"team", "create", "crew", "--members", "alice"}, on_pg).exit_code, 0);
  auto start = [&](const std::vector<std::string>& args, const std::string& err) {
    SubprocessOptions o;
    o.argv = {testing::MatesBinary(), "--workspace", ws_.str()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.interactive = true;  // stderr to a file, to read while it runs
    o.stderr_path = (ws_.path() / err).string();
    return Subprocess::Start(o).value();
  };
  Subprocess inbox = start({"inbox", "--team", "crew", "alice", "--wait", "60", "--store", url_}, "inbox.err");
  Subprocess follow = start({"log", "--team", "crew", "--follow", "--store", url_}, "log.err");
  ASSERT_TRUE(WaitForListeners(2)) << "they never listened";
  ASSERT_TRUE(server_->Stop().ok());
  auto says_waiting = [&](const char* err) {
    return testing::ReadAll(ws_.path() / err).find("waiting for the store to come back") != std::string::npos;
  };
  EXPECT_TRUE(testing::WaitUntil([&] { return says_waiting("inbox.err") && says_waiting("log.err"); }, 20))
      << testing::ReadAll(ws_.path() / "inbox.err") << testing::ReadAll(ws_.path() / "log.err");
  EXPECT_TRUE(testing::ProcessRunning(inbox.pid())) << "the waiting inbox gave up";
  ASSERT_TRUE(server_->Restart().ok());
  testing::CommandResult sent;
  ASSERT_TRUE(testing::WaitUntil([&] {
    sent = RunMates(ws_.path(), {"send", "--team", "crew", "--to", "alice", "--id", "after-1", "after the restart"},
                    on_pg);
    return sent.exit_code == 0;
  }, 20)) << sent.err;
  auto got = inbox.Wait();
  EXPECT_EQ(got.exit_code, 0) << testing::ReadAll(ws_.path() / "inbox.err");
  EXPECT_NE(got.out.find("after the restart"), std::string::npos) << got.out;
  auto line = follow.ReadLine(DeadlineIn(20));
  ASSERT_TRUE(line.ok()) << line.status().message() << testing::ReadAll(ws_.path() / "log.err");
  EXPECT_NE(line->find("after the restart"), std::string::npos) << *line;
  ASSERT_EQ(RunMates(ws_.path(), {"team", "delete", "crew", "--purge"}, on_pg).exit_code, 0);
  auto end = follow.ReadLine(DeadlineIn(20));
  EXPECT_EQ(end.status().code(), StatusCode::kNotFound) << "the follow went on after the team was deleted";
  if (end.status().code() != StatusCode::kNotFound) follow.Signal(SIGKILL);
  EXPECT_EQ(follow.Wait().exit_code, 0);
}

TEST_F(PgTest, AServerRestartedMidRunIsWaitedOutAndNothingIsLost) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  auto waker = std::make_shared<Waker>();
  auto sub = store->listener().Subscribe(pg::InboxKey("procs", "ann"), waker);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-1", "before")).ok());
  uint64_t seen = waker->generation();
  ASSERT_TRUE(server_->Stop().ok());
  // Down: the listener wakes its waiters (they look, and learn it), and
  // the store says Unavailable; nothing waits forever.
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen);
  auto down = store->mail().Append("procs", "ann", Msg("m-2", "while down"));
  EXPECT_EQ(down.code(), StatusCode::kUnavailable) << down.message();
  seen = waker->generation();
  ASSERT_TRUE(server_->Restart().ok());
  // Back: the listener reconnects, listens again and wakes everyone to look.
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(15)), seen);
  EXPECT_TRUE(testing::WaitUntil([&] { return store->listener().reconnects() >= 1; }, 15));
  // The sender retries what failed (the same id: appended once).
  Status again = Status::Unavailable("");
  ASSERT_TRUE(testing::WaitUntil([&] { return (again = store->mail().Append("procs", "ann", Msg("m-2", "retried"))).ok(); }, 15))
      << again.message();
  seen = waker->generation();
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-3", "after")).ok());
  EXPECT_NE(waker->WaitChange(seen, DeadlineIn(10)), seen) << "no wake-up after the restart";
  EXPECT_EQ(Ids(*store->mail().Drain("procs", "ann")), (std::vector<std::string>{"m-1", "m-2", "m-3"}));
}

// A store told to wait out outages (a host's) waits for a stopped server
// instead of failing, and its pooled connections, which the server ended,
// cost no failed statement; a stop ends a wait at once.
TEST_F(PgTest, AStoreToldToWaitOutOutagesWaitsForTheServerAndAStopEndsTheWait) {
  auto store = FreshStore();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->mail().Append("procs", "ann", Msg("m-1", "before")).ok());  // a connection in the pool
  store->WaitOutOutages(300);
  ASSERT_TRUE(server_->Stop().ok());
  auto sent = std::async(std::launch::async, [&] { return store->mail().Append("procs", "ann", Msg("m-2", "waited")); });
  EXPECT_EQ(sent.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "it did not wait";
  ASSERT_TRUE(server_->Restart().ok());
  ASSERT_EQ(sent.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(sent.get().ok());
  EXPECT_EQ(Ids(*store->mail().Drain("procs", "ann")), (std::vector<std::string>{"m-1", "m-2"}));

  // Down again: a stop ends the wait under way and any to come.
  ASSERT_TRUE(server_->Stop().ok());
  auto stopped = std::async(std::launch::async, [&] { return store->mail().Append("procs", "ann", Msg("m-3", "stopped")); });
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "it did not wait";
  store->StopWaiting();
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "the stop did not end the wait";
  EXPECT_EQ(stopped.get().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->mail().Append("procs", "ann", Msg("m-4", "after the stop")).code(), StatusCode::kUnavailable);
  ASSERT_TRUE(server_->Restart().ok());
}

}  // namespace
}  // namespace mates
