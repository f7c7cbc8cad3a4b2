// The token economy end to end (DESIGN §15): budgets per teammate and per
// team, `mates usage` from the journals with the price table, compact
// requests. The real binary with the scripted provider, and `mates mock-llm`
// over HTTP where the provider's reported usage is compared.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/clock.h"
#include "core/json.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

testing::CommandResult Mates(const fs::path& ws, std::vector<std::string> args) {
  return testing::RunMates(ws, args, {}, "");
}

std::vector<std::string> RunArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "--provider", "scripted", "--scenario",
                                   testing::ScenarioFixture("team_budget.yaml"), "--idle-timeout", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("Go");
  return args;
}

// A command's JSON output (an empty object, and a failure, if it is not).
Json Parsed(const std::string& out) {
  auto j = ParseJson(out);
  EXPECT_TRUE(j.ok()) << out;
  return j.ok() ? *j : Json::object();
}

Json UsageJson(const fs::path& ws, const std::string& team) {
  auto r = Mates(ws, {"usage", "--team", team, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Parsed(r.out);
}

const Json* AgentIn(const Json& usage, const std::string& name) {
  for (const auto& a : usage["agents"]) {
    if (a["agent"] == name) return &a;
  }
  return nullptr;
}

TEST(TokenTest, ATeammateOverItsBudgetFinishesItsToolStopsAndTheLeadIsTold) {
  TempDir ws;
  auto r = Mates(ws.path(), RunArgs({}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Her one call's tool ran to its end; no second call was made.
  EXPECT_EQ(ReadAll(ws.path() / "alice.log"), "alice\n");
  EXPECT_EQ(ReadAll(ws.path() / "bob.log"), "bob\n");
  // She stopped for good, saying why, and the lead heard it.
  auto status = Mates(ws.path(), {"status", "--team", "budget", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto st = ParseJson(status.out);
  ASSERT_TRUE(st.ok());
  bool alice_seen = false;
  for (const auto& m : (*st)["members"]) {
    if (m["name"] != "alice") continue;
    alice_seen = true;
    EXPECT_EQ(m["status"], "shutdown") << m.dump();
    EXPECT_NE(m.dump().find("its budget of 1 tokens is spent"), std::string::npos) << m.dump();
    EXPECT_NE(m["doing"].get<std::string>().find("stopped: budget: "), std::string::npos) << m.dump();
  }
  EXPECT_TRUE(alice_seen) << status.out;
  std::string lead_journal = ReadAll(ws.path() / ".teams/budget/agents/lead.jsonl");
  EXPECT_NE(lead_journal.find("alice stopped (its budget of 1 tokens is spent"), std::string::npos);
  // The usage says the same: one call for alice.
  Json u = UsageJson(ws.path(), "budget");
  const Json* alice = AgentIn(u, "alice");
  ASSERT_NE(alice, nullptr) << u.dump();
  EXPECT_EQ((*alice)["calls"], 1);
  EXPECT_GT((*alice)["tokens"].get<int64_t>(), 1);
}

TEST(TokenTest, OverTheTeamsBudgetNoAgentCallsTheModelAndRunExits1) {
  TempDir ws;
  // The first call of the lead spends more than 100 tokens (its system
  // prompt alone): its second call is refused.
  auto r = Mates(ws.path(), RunArgs({"--budget-tokens", "100"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the team's budget of 100 tokens is spent"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(ws.path() / "alice.log"));  // nobody got that far
  // The budget is the team's now: the next run is refused before any call.
  auto again = Mates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                                 testing::ScenarioFixture("team_budget.yaml"), "Go"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("the team's budget of 100 tokens is spent"), std::string::npos) << again.err;
  Json before = UsageJson(ws.path(), "default");
  EXPECT_EQ(before["calls"], 1) << before.dump();
  EXPECT_EQ(before["budget"]["tokens"], 100);
  auto all_calls = [&] {
    return Parsed(Mates(ws.path(), {"usage", "--all", "--json"}).out)["calls"].get<int>();
  };
  const int calls_before = all_calls();
  // 0 lifts it: the lead works again (where it was: in the team it made).
  auto lifted = Mates(ws.path(), RunArgs({"--budget-tokens", "0"}));
  EXPECT_EQ(lifted.exit_code, 0) << lifted.err;
  EXPECT_GT(all_calls(), calls_before);
  EXPECT_TRUE(UsageJson(ws.path(), "default")["budget"].is_null());
}

// A hosted team (`mates up`) that spends its budget stays up to be looked
// at, says in its log that no agent calls the model any more, and makes no
// further call; a new host over the spent budget is refused before any.
TEST(TokenTest, AHostedTeamOverItsBudgetStaysUpAndCallsTheModelNoMore) {
  TempDir ws;
  // The lead's first call (its system prompt alone is over 100 tokens)
  // spawns a worker; nobody's next call is made.
  std::vector<std::string> up = {"up", "--team", "hosted", "--provider", "scripted", "--scenario",
                                 testing::ScenarioFixture("team_hosted.yaml"), "--budget-tokens", "100",
                                 "Start a worker"};
  auto r = Mates(ws.path(), up);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  struct Down {
    fs::path ws;
    ~Down() { testing::RunMates(ws, {"down", "--team", "hosted", "--timeout", "5"}); }
  } down_at_exit{ws.path()};
  const fs::path log = ws.path() / ".teams/hosted/host.log";
  ASSERT_TRUE(testing::WaitUntil([&] { return ReadAll(log).find("no agent calls the model any more") != std::string::npos; }))
      << ReadAll(log);
  EXPECT_NE(ReadAll(log).find("the team's budget of 100 tokens is spent"), std::string::npos) << ReadAll(log);
  // Still hosted; a message to the lead waits unread, and costs nothing.
  auto status = Mates(ws.path(), {"status", "--team", "hosted", "--json"});
  auto st = ParseJson(status.out);
  ASSERT_TRUE(st.ok()) << status.out << status.err;
  EXPECT_TRUE((*st)["host"].is_object()) << status.out;
  // (Were the lead to call the model, the scenario would answer "pong 7".)
  ASSERT_EQ(Mates(ws.path(), {"send", "--team", "hosted", "--to", "lead", "ping 7"}).exit_code, 0);
  Json usage = UsageJson(ws.path(), "hosted");
  EXPECT_EQ(usage["calls"], 1) << usage.dump();
  auto down = Mates(ws.path(), {"down", "--team", "hosted"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  // No call answered the message, even while the host was going down.
  auto answer = Mates(ws.path(), {"inbox", "--team", "hosted", "user", "--peek"});
  EXPECT_EQ(answer.out.find("pong 7"), std::string::npos) << answer.out;
  EXPECT_EQ(UsageJson(ws.path(), "hosted")["calls"], 1);
  // A new host over the spent budget starts nothing.
  auto again = Mates(ws.path(), up);
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE((again.out + again.err).find("the team's budget of 100 tokens is spent"), std::string::npos)
      << again.out << again.err;
}

// `mates budget set` reaches a running host (DESIGN §15): from its agents'
// next call the team is over it, and `budget clear` lets it go on.
TEST(TokenTest, ABudgetSetWhileTheHostRunsBindsFromTheNextCall) {
  TempDir ws;
  auto r = Mates(ws.path(), {"up", "--team", "hosted", "--provider", "scripted", "--scenario",
                             testing::ScenarioFixture("team_hosted.yaml"), "--sandbox", "off", "Start a worker"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  struct Down {
    fs::path ws;
    ~Down() { testing::RunMates(ws, {"down", "--team", "hosted", "--timeout", "5"}); }
  } down_at_exit{ws.path()};
  auto pong = [&](const std::string& n) {
    ASSERT_EQ(Mates(ws.path(), {"send", "--team", "hosted", "--to", "lead", "ping " + n}).exit_code, 0);
    auto answer = testing::RunMates(ws.path(), {"inbox", "--team", "hosted", "user", "--wait", "30"}, {}, "", 40);
    EXPECT_NE(answer.out.find("pong"), std::string::npos) << "ping " << n << ": " << answer.out << answer.err;
  };
  pong("1");  // no budget: the lead answers
  auto set = Mates(ws.path(), {"budget", "set", "--team", "hosted", "--tokens", "100"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(set.out.find("applies it from its agents' next model call"), std::string::npos) << set.out;
  const int64_t calls = UsageJson(ws.path(), "hosted")["calls"].get<int64_t>();
  ASSERT_EQ(Mates(ws.path(), {"send", "--team", "hosted", "--to", "lead", "ping 2"}).exit_code, 0);
  const fs::path log = ws.path() / ".teams/hosted/host.log";
  ASSERT_TRUE(testing::WaitUntil([&] { return ReadAll(log).find("no agent calls the model any more") != std::string::npos; }))
      << ReadAll(log);
  EXPECT_NE(ReadAll(log).find("the team's budget of 100 tokens is spent"), std::string::npos) << ReadAll(log);
  EXPECT_EQ(UsageJson(ws.path(), "hosted")["calls"].get<int64_t>(), calls);
  EXPECT_EQ(Mates(ws.path(), {"inbox", "--team", "hosted", "user", "--peek"}).out.find("pong"), std::string::npos);
  // Cleared: the next message goes on, and what waited is answered.
  auto cleared = Mates(ws.path(), {"budget", "clear", "--team", "hosted"});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  pong("3");
}

TEST(TokenTest, AGenerousTeamBudgetStopsTeammatesMidRun) {
  TempDir ws;
  // Enough for the lead's first calls, not for the whole team: whoever
  // comes after the line is crossed stops with reason budget.
  // (The whole run takes about 3k tokens, the lead's first call 350.)
  auto r = Mates(ws.path(), RunArgs({"--budget-tokens", "1200"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the team's budget of 1.2k tokens is spent"), std::string::npos) << r.err;
  Json u = UsageJson(ws.path(), "default");
  Json v = UsageJson(ws.path(), "budget");
  int64_t spent = u["tokens"].get<int64_t>() + v["tokens"].get<int64_t>();
  // Over by at most the calls in flight when it was crossed (one per agent).
  EXPECT_GE(spent, 1200);
  EXPECT_LT(spent, 1200 + 3 * 800) << u.dump() << v.dump();
  // The session spent in two teams, and says so: the lead's first call in
  // default, the rest in the team it made.
  EXPECT_NE(r.err.find(" in team default, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" in team budget)"), std::string::npos) << r.err;
  EXPECT_NE((r.out + r.err).find("usage: team default (all runs"), std::string::npos)
      << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("usage: team budget (all runs"), std::string::npos)
      << r.out << r.err;
  // The team it made shares the budget, counting what the session spent
  // before it: its usage says the same as the run did.
  EXPECT_EQ(v["budget"]["tokens"], 1200) << v.dump();
  EXPECT_EQ(v["budget"]["from"], "default") << v.dump();
  EXPECT_EQ(v["budget"]["spent_before"]["tokens"], u["tokens"]) << u.dump() << v.dump();
  EXPECT_EQ(v["budget"]["used"]["tokens"].get<int64_t>(), spent) << v.dump();
  EXPECT_TRUE(u["budget"]["from"].is_null()) << u.dump();
  // What the lead spent in that team is what its status there shows (not
  // its calls in default too), and the budget with it.
  auto status = Mates(ws.path(), {"status", "--team", "budget", "--json"});
  auto st = ParseJson(status.out);
  ASSERT_TRUE(st.ok()) << status.out << status.err;
  EXPECT_EQ((*st)["budget"]["from"], "default") << status.out;
  for (const auto& m : (*st)["members"]) {
    if (m["name"] != "lead") continue;
    ASSERT_NE(AgentIn(v, "lead"), nullptr) << v.dump();
    EXPECT_EQ(m["activity"]["calls"], (*AgentIn(v, "lead"))["calls"]) << m.dump() << v.dump();
  }
  auto status_text = Mates(ws.path(), {"status", "--team", "budget"});
  EXPECT_NE(status_text.out.find("budget: 1.2k tokens ("), std::string::npos) << status_text.out;
  EXPECT_NE(status_text.out.find("of it by team default's session before this team was made"),
            std::string::npos)
      << status_text.out;
  auto text = Mates(ws.path(), {"usage", "--team", "budget"});
  EXPECT_NE(text.out.find("of it by team default's session before this team was made"),
            std::string::npos)
      << text.out;
  // Resumed, that team is over the budget before any call.
  auto resumed =
      Mates(ws.path(), {"run", "--team", "budget", "--provider", "scripted", "--scenario",
                        testing::ScenarioFixture("team_budget.yaml"), "Go"});
  EXPECT_EQ(resumed.exit_code, 1) << resumed.err;
  EXPECT_NE(resumed.err.find("from team default, "), std::string::npos) << resumed.err;
  EXPECT_EQ(UsageJson(ws.path(), "budget")["calls"], v["calls"]);
  // A budget given to it is its own, counting its own journals alone.
  auto own =
      Mates(ws.path(), {"run", "--team", "budget", "--budget-tokens", "1000000", "--provider",
                        "scripted", "--scenario", testing::ScenarioFixture("team_budget.yaml"),
                        "--idle-timeout", "1", "Go"});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  Json mine = UsageJson(ws.path(), "budget");
  EXPECT_TRUE(mine["budget"]["from"].is_null()) << mine.dump();
  EXPECT_EQ(mine["budget"]["used"]["tokens"], mine["tokens"]) << mine.dump();
  // And the team the first session began in counts what that session spent
  // in the team it made: its next session is over the budget before any call.
  Json home = UsageJson(ws.path(), "default");
  EXPECT_EQ(home["budget"]["spent_in_teams_made"]["tokens"], v["tokens"])
      << home.dump() << v.dump();
  EXPECT_EQ(home["budget"]["used"]["tokens"].get<int64_t>(), spent) << home.dump();
  auto next = Mates(ws.path(), RunArgs({}));
  EXPECT_EQ(next.exit_code, 1) << next.err;
  EXPECT_NE(next.err.find(" in teams it made before"), std::string::npos) << next.err;
  EXPECT_EQ(UsageJson(ws.path(), "default")["calls"], u["calls"]);
}

// What a session spends in a team it made is recorded in its own team's
// budget when that team is deleted, not only when the session ends: a host
// killed later still leaves it counted.
TEST(TokenTest, ADeletedTeamsSpendingIsRecordedInTheBudgetOfTheTeamThatMadeIt) {
  TempDir ws;
  auto r = Mates(ws.path(), {"up", "--provider", "scripted", "--scenario",
                             testing::ScenarioFixture("team_budget_delete.yaml"), "--budget-tokens",
                             "1000000", "Make and drop a team"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  struct Down {
    fs::path ws;
    ~Down() { testing::RunMates(ws, {"down", "--timeout", "5"}); }
  } down_at_exit{ws.path()};
  const fs::path log = ws.path() / ".teams/default/host.log";
  ASSERT_TRUE(testing::WaitUntil([&] {
    return ReadAll(log).find("Dropped.") != std::string::npos;
  })) << ReadAll(log);
  // Still hosted: the record was made at the deletion.
  auto made = Mates(ws.path(), {"usage", "--team", "side", "--archived", "--json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto side = ParseJson(made.out);
  ASSERT_TRUE(side.ok()) << made.out;
  EXPECT_GT((*side)["tokens"].get<int64_t>(), 0) << made.out;
  EXPECT_EQ((*side)["budget"]["from"], "default") << made.out;
  Json home = UsageJson(ws.path(), "default");
  EXPECT_EQ(home["budget"]["spent_in_teams_made"]["tokens"], (*side)["tokens"])
      << home.dump() << made.out;
  auto down = Mates(ws.path(), {"down"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  // The session's end adds nothing more: it spent nothing in it since.
  EXPECT_EQ(UsageJson(ws.path(), "default")["budget"]["spent_in_teams_made"]["tokens"],
            (*side)["tokens"]);
}

TEST(TokenTest, BudgetsAndPricesRefuseBadInput) {
  TempDir ws;
  auto neg = Mates(ws.path(), RunArgs({"--budget-tokens", "-5"}));
  EXPECT_EQ(neg.exit_code, 2) << neg.err;
  EXPECT_NE(neg.err.find("--budget-tokens must be"), std::string::npos) << neg.err;
  auto nan = Mates(ws.path(), RunArgs({"--budget-usd", "nan"}));
  EXPECT_EQ(nan.exit_code, 2) << nan.err;
  // Past 1e12 is a typo (CLI11 reads the first as 2^63 - 1): refused, as a
  // lead's Task call would be.
  for (const char* big : {"99999999999999999999", "1000000000001"}) {
    auto huge = Mates(ws.path(), RunArgs({"--budget-tokens", big}));
    EXPECT_EQ(huge.exit_code, 2) << big << huge.err;
    EXPECT_NE(huge.err.find("--budget-tokens must be a number of tokens from 0 to 1e12"),
              std::string::npos)
        << huge.err;
  }
  // A context budget compacts at it: under 1,000 tokens that is every call.
  for (const char* bad : {"-5", "10", "999", "1000000001", "99999999999999999999"}) {
    auto ctx = Mates(ws.path(), RunArgs({"--context-budget", bad}));
    EXPECT_EQ(ctx.exit_code, 2) << bad << ctx.err;
    EXPECT_NE(ctx.err.find("--context-budget must be from 1000 to 1e9 tokens"), std::string::npos)
        << ctx.err;
  }
  EXPECT_FALSE(fs::exists(ws.path() / ".teams/default/config.json"))
      << "a refused run made its team";
  // Dollars cannot be counted for a model without a price.
  auto unpriced = Mates(ws.path(), RunArgs({"--budget-usd", "1"}));
  EXPECT_EQ(unpriced.exit_code, 2) << unpriced.err;
  EXPECT_NE(unpriced.err.find("model 'scripted' has no price"), std::string::npos) << unpriced.err;
  // Priced by the person's table, the same budget binds: the host prices at
  // what --prices said (its Env's table), and so do its status files.
  testing::WriteAll(ws.path() / "scripted.yaml", "models:\n  scripted: {input: 1, output: 2}\n");
  std::vector<std::string> priced_run = {"--prices", (ws.path() / "scripted.yaml").string()};
  for (auto& a : RunArgs({"--budget-usd", "1"})) priced_run.push_back(a);
  auto priced = Mates(ws.path(), priced_run);
  EXPECT_EQ(priced.exit_code, 0) << priced.err;
  auto lead = ParseJson(testing::ReadAll(ws.path() / ".teams/budget/agents/lead.status.json"));
  ASSERT_TRUE(lead.ok()) << priced.out << priced.err;
  EXPECT_TRUE((*lead)["cost_usd"].is_number()) << lead->dump();
  // Bad price tables: one clear error each, before anything runs.
  testing::WriteAll(ws.path() / "p1.yaml", "models: [1, 2]\n");
  testing::WriteAll(ws.path() / "p2.yaml", "models:\n  scripted: {input: -1, output: 2}\n");
  testing::WriteAll(ws.path() / "p3.yaml", "models:\n  scripted: {input: 1}\n");
  testing::WriteAll(ws.path() / "p4.yaml", "models:\n  scripted: {input: 1, output: 1, bogus: 3}\n");
  testing::WriteAll(ws.path() / "p5.yaml", "models: {scripted: {input: 1, output: [}\n");
  for (const char* f : {"p1.yaml", "p2.yaml", "p3.yaml", "p4.yaml", "p5.yaml", "missing.yaml"}) {
    auto r = Mates(ws.path(), {"--prices", (ws.path() / f).string(), "usage"});
    EXPECT_EQ(r.exit_code, 2) << f << ": " << r.err;
    EXPECT_NE(r.err.find("prices"), std::string::npos) << f << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
  auto no_team = Mates(ws.path(), {"usage", "--team", "nosuch"});
  EXPECT_EQ(no_team.exit_code, 1) << no_team.err;
  auto bad_name = Mates(ws.path(), {"usage", "--team", "../x"});
  EXPECT_EQ(bad_name.exit_code, 2) << bad_name.err;
}

TEST(TokenTest, UsageIsPricedByTheTableAndAPricesFileOverridesIt) {
  TempDir ws;
  ASSERT_EQ(Mates(ws.path(), RunArgs({})).exit_code, 0);
  // The scripted model has no price: tokens, and the cost said unknown.
  auto plain = Mates(ws.path(), {"usage", "--team", "budget"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("cost unknown"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("alice"), std::string::npos);
  Json u = UsageJson(ws.path(), "budget");
  EXPECT_TRUE(u["cost_usd"].is_null());
  // Priced at $1 per million input and $2 per million output tokens.
  testing::WriteAll(ws.path() / "prices.yaml", "models:\n  scripted: {input: 1, output: 2}\n");
  auto priced = Mates(ws.path(), {"--prices", (ws.path() / "prices.yaml").string(), "usage", "--team", "budget",
                                  "--json"});
  ASSERT_EQ(priced.exit_code, 0) << priced.err;
  auto p = ParseJson(priced.out);
  ASSERT_TRUE(p.ok());
  const Json& t = (*p)["usage"];
  double want = (t["input_tokens"].get<double>() + t["cache_creation_input_tokens"].get<double>() +
                 t["cache_read_input_tokens"].get<double>()) * 1e-6 +
                t["output_tokens"].get<double>() * 2e-6;
  ASSERT_TRUE((*p)["cost_usd"].is_number()) << priced.out;
  EXPECT_NEAR((*p)["cost_usd"].get<double>(), want, 1e-12);
  // The sum over agents is the team's.
  int64_t calls = 0;
  for (const auto& a : (*p)["agents"]) calls += a["calls"].get<int64_t>();
  EXPECT_EQ((*p)["calls"], calls);
  // The same through the environment.
  auto env = testing::RunMates(ws.path(), {"usage", "--team", "budget", "--json"},
                               {"MATES_PRICES=" + (ws.path() / "prices.yaml").string()}, "");
  auto e = ParseJson(env.out);
  ASSERT_TRUE(e.ok()) << env.err;
  EXPECT_EQ((*e)["cost_usd"], (*p)["cost_usd"]);
}

// `usage --all`: every team and every archive of the workspace, each line
// what `usage --team` says of it, and their sum; a team whose journals
// cannot be read is said on its line and fails the command, the rest shown.
TEST(TokenTest, UsageAllSumsEveryTeamAndArchiveAndSaysWhichItCannotRead) {
  TempDir ws;
  ASSERT_EQ(Mates(ws.path(), RunArgs({})).exit_code, 0);
  auto deleted = Mates(ws.path(), {"team", "delete", "budget"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  ASSERT_EQ(Mates(ws.path(), RunArgs({})).exit_code, 0);
  Json home = UsageJson(ws.path(), "default"), live = UsageJson(ws.path(), "budget");
  auto old = Mates(ws.path(), {"usage", "--team", "budget", "--archived", "--json"});
  ASSERT_EQ(old.exit_code, 0) << old.err;
  Json archived = Parsed(old.out);

  auto all = Mates(ws.path(), {"usage", "--all", "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  auto j = ParseJson(all.out);
  ASSERT_TRUE(j.ok()) << all.out;
  ASSERT_EQ((*j)["teams"].size(), 3u) << all.out;
  int64_t calls = 0, tokens = 0;
  for (const auto& t : (*j)["teams"]) {
    const Json& alone = t["team"] == "default" ? home : t["archived"].is_null() ? live : archived;
    EXPECT_EQ(t["calls"], alone["calls"]) << t.dump();
    EXPECT_EQ(t["usage"], alone["usage"]) << t.dump();
    EXPECT_GT(t["calls"].get<int64_t>(), 0) << t.dump();
    calls += t["calls"].get<int64_t>();
    tokens += t["tokens"].get<int64_t>();
  }
  EXPECT_EQ((*j)["calls"], calls);
  EXPECT_EQ((*j)["tokens"], tokens);
  EXPECT_TRUE((*j)["cost_usd"].is_null()) << "the scripted model has no price";
  auto text = Mates(ws.path(), {"usage", "--all"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2 teams, 1 deleted"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("budget (deleted 2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\ntotal "), std::string::npos) << text.out;

  // --all names no team and no archive; MATES_TEAM in the environment is
  // no conflict.
  auto with_team = Mates(ws.path(), {"usage", "--all", "--team", "budget"});
  EXPECT_EQ(with_team.exit_code, 2);
  EXPECT_NE(with_team.err.find("leave out --team"), std::string::npos) << with_team.err;
  auto with_archived = Mates(ws.path(), {"usage", "--all", "--archived"});
  EXPECT_EQ(with_archived.exit_code, 2);
  EXPECT_NE(with_archived.err.find("leave out --archived"), std::string::npos) << with_archived.err;
  auto env = testing::RunMates(ws.path(), {"usage", "--all", "--json"}, {"MATES_TEAM=budget"}, "");
  EXPECT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(Parsed(env.out)["calls"], calls);

  // A team whose journals cannot be read: their folder closed to the
  // reader (root reads anything, so the reader is then `nobody`).
  ASSERT_EQ(Mates(ws.path(), {"team", "create", "broken"}).exit_code, 0);
  const fs::path closed = ws.path() / ".teams/broken/agents";
  fs::create_directories(closed);
  for (const auto& e : fs::recursive_directory_iterator(ws.path())) {
    fs::permissions(
        e.path(), e.is_directory() ? fs::perms::all : fs::perms::owner_all | fs::perms::others_read,
        fs::perm_options::add);
  }
  fs::permissions(ws.path(), fs::perms::all, fs::perm_options::add);
  fs::permissions(closed, fs::perms::none);
  auto as_reader = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv;
    if (::geteuid() == 0) argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    argv.insert(argv.end(), {testing::MatesBinary(), "--workspace", ws.path().string()});
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::Run(argv);
  };
  auto broken = as_reader({"usage", "--all"});
  EXPECT_EQ(broken.exit_code, 1) << broken.out << broken.err;
  EXPECT_NE(broken.out.find("broken"), std::string::npos) << broken.out;
  EXPECT_NE(broken.out.find("cannot be read: read " + closed.string() + ": Permission denied"),
            std::string::npos)
      << broken.out;
  EXPECT_NE(broken.out.find("budget (deleted 2"), std::string::npos) << broken.out;
  EXPECT_NE(broken.err.find("the journals of 1 team could not be read"), std::string::npos)
      << broken.err;
  auto broken_json = as_reader({"usage", "--all", "--json"});
  EXPECT_EQ(broken_json.exit_code, 1);
  auto b = ParseJson(broken_json.out);
  ASSERT_TRUE(b.ok()) << broken_json.out;
  EXPECT_EQ((*b)["calls"], calls) << "the total leaves the unreadable team out";
  bool said = false;
  for (const auto& t : (*b)["teams"]) said |= t["team"] == "broken" && t.contains("error");
  EXPECT_TRUE(said) << broken_json.out;
}

TEST(TokenTest, ACompactRequestMakesTheTeammateCompactBeforeItsNextCall) {
  TempDir ws;
  auto r = Mates(ws.path(), {"run", "--provider", "scripted", "--scenario",
                             testing::ScenarioFixture("team_compact_request.yaml"), "--idle-timeout", "1", "Go"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path agents = ws.path() / ".teams/squeeze/agents";
  std::string journal = ReadAll(agents / "alice.jsonl");
  // One compaction, after the request came (its line follows the message
  // that carried it), and the whole conversation kept as a transcript.
  size_t request = journal.find("compact_request");
  size_t compact = journal.find(R"({"kind":"compact")");
  ASSERT_NE(request, std::string::npos) << journal;
  ASSERT_NE(compact, std::string::npos) << journal;
  EXPECT_LT(request, compact);
  EXPECT_EQ(journal.find(R"({"kind":"compact")", compact + 1), std::string::npos);
  bool transcript = false;
  for (const auto& e : fs::directory_iterator(agents)) {
    transcript |= e.path().filename().string().rfind("alice.transcript-", 0) == 0;
  }
  EXPECT_TRUE(transcript);
  EXPECT_NE(journal.find("SUMMARY: alice read a file of 300 lines."), std::string::npos);
  // Only the lead asks for it, and not of itself.
  auto from_user = Mates(ws.path(), {"send", "--team", "squeeze", "--type", "compact_request", "--to", "alice", "x"});
  EXPECT_NE(from_user.exit_code, 0);
  EXPECT_NE(from_user.err.find("not compact_request"), std::string::npos) << from_user.err;
  auto from_alice = Mates(ws.path(), {"send", "--team", "squeeze", "--from", "alice", "--type", "compact_request",
                                      "--to", "lead", "x"});
  EXPECT_NE(from_alice.exit_code, 0);
  EXPECT_NE(from_alice.err.find("only the lead"), std::string::npos) << from_alice.err;
  auto to_lead = Mates(ws.path(), {"send", "--team", "squeeze", "--from", "lead", "--type", "compact_request",
                                   "--to", "lead", "x"});
  EXPECT_NE(to_lead.exit_code, 0);
  EXPECT_NE(to_lead.err.find("the lead compacts with /compact"), std::string::npos) << to_lead.err;
}

// What the journals say was spent is what the provider reported, call by
// call, prompt caching included (mock-llm accounts it as the APIs do).
class UsageOverHttp : public ::testing::TestWithParam<std::string> {};

TEST_P(UsageOverHttp, TheJournalsAddUpToWhatTheProviderReported) {
  TempDir ws, tmp;
  testing::MockLlm mock(testing::ScenarioFixture("team_budget.yaml"), tmp.path() / "rec.jsonl");
  ASSERT_FALSE(mock.url().empty());
  const bool openai = GetParam() == "openai";
  auto r = Mates(ws.path(), {"run", "--provider", GetParam(), "--base-url", openai ? mock.url() + "/v1" : mock.url(),
                             "--idle-timeout", "1", "Go"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadAll(ws.path() / "alice.log"), "alice\n");  // her budget held over HTTP too
  struct {
    int64_t input_tokens = 0, output_tokens = 0, cache_creation_input_tokens = 0, cache_read_input_tokens = 0;
  } reported;
  int calls = 0;
  std::istringstream in(ReadAll(tmp.path() / "rec.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    auto j = ParseJson(line);
    ASSERT_TRUE(j.ok());
    ASSERT_EQ((*j)["status"], 200);
    const Json& u = (*j)["usage"];
    reported.input_tokens += u["input_tokens"].get<int64_t>();
    reported.output_tokens += u["output_tokens"].get<int64_t>();
    reported.cache_creation_input_tokens += u["cache_creation_input_tokens"].get<int64_t>();
    reported.cache_read_input_tokens += u["cache_read_input_tokens"].get<int64_t>();
    ++calls;
  }
  // The lead's first call is in the default team's journal, the rest in budget's.
  Json a = UsageJson(ws.path(), "default"), b = UsageJson(ws.path(), "budget");
  auto sum = [&](const char* k) { return a["usage"][k].get<int64_t>() + b["usage"][k].get<int64_t>(); };
  EXPECT_EQ(a["calls"].get<int>() + b["calls"].get<int>(), calls);
  EXPECT_EQ(sum("output_tokens"), reported.output_tokens);
  EXPECT_EQ(sum("cache_read_input_tokens"), reported.cache_read_input_tokens);
  if (openai) {
    // prompt_tokens counts the cached ones; mates keeps them apart.
    EXPECT_EQ(sum("input_tokens") + sum("cache_read_input_tokens"), reported.input_tokens);
  } else {
    EXPECT_EQ(sum("input_tokens"), reported.input_tokens);
    EXPECT_EQ(sum("cache_creation_input_tokens"), reported.cache_creation_input_tokens);
    // The breakpoints pay: most of what the lead sends again is read.
    EXPECT_GT(reported.cache_read_input_tokens, reported.input_tokens);
  }
  EXPECT_GT(reported.cache_read_input_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(Protocols, UsageOverHttp, ::testing::Values("anthropic", "openai"));

}  // namespace
}  // namespace mates
