// The first hour (DESIGN §21): one rule for --team and --store in every
// command, list options, `team use`, `budget`, `init`, `doctor`, and usage
// that keeps a conversation set aside.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "agent/activity.h"
#include "core/clock.h"
#include "core/subprocess.h"
#include "store/merges.h"
#include "stores/open_store.h"
#include "support/pg_suite.h"
#include "support/readme.h"
#include "support/test_env.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::CommandResult;
using testing::ReadmeBlock;
using testing::ScriptOf;
using testing::SourceRoot;
using testing::TempDir;

class FirstHourTest : public ::testing::Test {
 protected:
  // mates in the workspace, with the person's config folder a scratch one
  // (the machine's own ~/.config never counts here).
  CommandResult Mates(const std::vector<std::string>& args, std::vector<std::string> env = {},
                      double timeout_s = 30) {
    env.push_back("XDG_CONFIG_HOME=" + config_.path().string());
    bool store_set = false;
    for (const auto& e : env) store_set |= e.rfind("MATES_STORE=", 0) == 0;
    if (!store_set) env.push_back("MATES_STORE=");
    return testing::RunMates(ws_.path(), args, env, "", timeout_s);
  }
  // `line` run by sh from /, with only `env`: as a person pastes it.
  static CommandResult Sh(const std::string& line, const std::vector<std::string>& env) {
    SubprocessOptions o;
    o.argv = {"sh", "-c", line};
    o.env = env;
    o.cwd = "/";
    o.timeout_s = 60;
    auto r = RunSubprocess(o);
    if (!r.ok()) return CommandResult{-1, "", r.status().message()};
    return CommandResult{r->exit_code, r->out, r->err};
  }
  TempDir ws_;
  TempDir config_;
};

// Every command that works on a team, with the arguments it needs besides.
const std::vector<std::vector<std::string>>& TeamCommands() {
  static const std::vector<std::vector<std::string>> kCommands = {
      {"team", "show"},   {"send", "--to", "lead", "hi"}, {"inbox", "lead", "--peek"},
      {"tasks", "list"},  {"log"},                        {"status"},
      {"usage"},          {"budget", "show"},             {"merges", "list"},
      {"down"},           {"dashboard", "--port", "0"},   {"mcp"},
  };
  return kCommands;
}

std::string Words(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Which team a command worked on, each source in turn: every team named is
// one that does not exist, so the command's "no team 'X'" says which it
// chose, and the sources below the one that wins name others.
TEST_F(FirstHourTest, EveryCommandTakesItsTeamFromTheFlagThenTheEnvironmentThenTheCurrentTeamThenTheDefault) {
  struct Case {
    std::string source;
    bool flag_before, flag_after, env, current;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"--team before the command", true, false, true, true, "from-flag"},
      {"--team after the command", false, true, true, true, "from-flag"},
      {"$MATES_TEAM", false, false, true, true, "from-env"},
      {"mates team use", false, false, false, true, "from-current"},
      {"the default", false, false, false, false, "default"},
  };
  for (const auto& c : cases) {
    if (c.current) {
      ASSERT_EQ(Mates({"team", "use", "from-current"}).exit_code, 0);
    } else {
      ASSERT_EQ(Mates({"team", "use", "--clear"}).exit_code, 0);
    }
    for (const auto& command : TeamCommands()) {
      std::vector<std::string> args;
      if (c.flag_before) args = {"--team", "from-flag"};
      args.insert(args.end(), command.begin(), command.end());
      if (c.flag_after) args.insert(args.end(), {"--team", "from-flag"});
      std::vector<std::string> env;
      if (c.env) env.push_back("MATES_TEAM=from-env");
      auto r = Mates(args, env, 10);
      EXPECT_EQ(r.exit_code, 1) << c.source << ": mates " << Words(args) << "\n" << r.out << r.err;
      EXPECT_NE(r.err.find("no team '" + c.expected + "'"), std::string::npos)
          << c.source << ": mates " << Words(args) << "\n" << r.err;
    }
  }
}

// The store likewise: --store before or after the command, then
// $MATES_STORE, for every command (a URL of an unknown kind names which one
// was taken); then store: in the workspace's config — once it is trusted —
// then in the person's own.
TEST_F(FirstHourTest, EveryCommandTakesItsStoreFromTheFlagThenTheEnvironmentThenTheConfigFiles) {
  auto commands = TeamCommands();
  commands.push_back({"team", "list"});
  commands.push_back({"store", "status"});
  for (const auto& command : commands) {
    std::vector<std::string> before = {"--store", "flagkind://x"};
    before.insert(before.end(), command.begin(), command.end());
    std::vector<std::string> after = command;
    after.insert(after.end(), {"--store", "flagkind://x"});
    for (const auto& args : {before, after}) {
      auto r = Mates(args, {"MATES_STORE=envkind://x", "MATES_TEAM=t"}, 10);
      EXPECT_EQ(r.exit_code, 2) << "mates " << Words(args) << "\n" << r.err;
      EXPECT_NE(r.err.find("the store 'flagkind:…'"), std::string::npos) << "mates " << Words(args) << "\n" << r.err;
    }
    auto r = Mates(command, {"MATES_STORE=envkind://x", "MATES_TEAM=t"}, 10);
    EXPECT_NE(r.err.find("the store 'envkind:…'"), std::string::npos) << "mates " << Words(command) << "\n" << r.err;
  }

  // The config files. The person's own counts as it is.
  testing::WriteAll(config_.path() / "mates/config.yaml", "store: userkind://x\n");
  auto r = Mates({"team", "list"});
  EXPECT_NE(r.err.find("the store 'userkind:…'"), std::string::npos) << r.err;
  // The workspace's would send the team's messages elsewhere: not used
  // before the person trusts it, and said.
  testing::WriteAll(ws_.path() / ".mates/config.yaml", "store: wskind://x\n");
  r = Mates({"team", "list"});
  EXPECT_NE(r.err.find(".mates/config.yaml: its store: is not used: the file is untrusted (mates trust uses it)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the store 'userkind:…'"), std::string::npos) << r.err;
  ASSERT_EQ(Mates({"trust"}).exit_code, 0);
  r = Mates({"team", "list"});
  EXPECT_NE(r.err.find("the store 'wskind:…'"), std::string::npos) << r.err;
  // The environment comes first, and a file: there is the files.
  r = Mates({"team", "list"}, {"MATES_STORE=file:"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no teams in"), std::string::npos) << r.out;
  // A config that is not YAML is one clear error.
  testing::WriteAll(config_.path() / "mates/config.yaml", "store: [unclosed\n");
  ASSERT_EQ(Mates({"trust", "--revoke"}).exit_code, 0);
  r = Mates({"team", "list"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(config_.path().string() + "/mates/config.yaml"), std::string::npos) << r.err;
}

// After `mates run` in a team chosen with `team use`, the other commands
// work on it with no --team (the issue a first user met: "--team is
// required" after run).
TEST_F(FirstHourTest, TheCurrentTeamIsTheOneRunMadeAndTheOthersSee) {
  auto use = Mates({"team", "use", "crew"});
  ASSERT_EQ(use.exit_code, 0) << use.err;
  EXPECT_NE(use.out.find("current team: crew"), std::string::npos) << use.out;
  EXPECT_NE(use.out.find("it does not exist yet"), std::string::npos) << use.out;
  auto run = Mates({"run", "--provider", "scripted", "--scenario", testing::ScenarioFixture("lead_basic.yaml"),
                    "--sandbox", "off", "build a greeting"},
                   {}, 60);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto tasks = Mates({"tasks", "list"});
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  EXPECT_NE(tasks.out.find("#1 [pending] Add a test for hello.sh"), std::string::npos) << tasks.out;
  auto list = Mates({"team", "list"});
  EXPECT_NE(list.out.find("* crew"), std::string::npos) << list.out;
  auto which = Mates({"team", "use"});
  EXPECT_EQ(which.out, "crew (from mates team use)\n");
  EXPECT_EQ(Mates({"team", "use"}, {"MATES_TEAM=other"}).out, "other (from $MATES_TEAM)\n");
  EXPECT_EQ(Mates({"team", "use", "--team", "x"}).out, "x (from --team)\n");
  // Bad input: one error, nothing written.
  auto bad = Mates({"team", "use", "../up"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("invalid team name"), std::string::npos) << bad.err;
  EXPECT_EQ(Mates({"team", "use", "crew", "--clear"}).exit_code, 2);
  // A current-team file gone bad is said, with how to mend it.
  testing::WriteAll(ws_.path() / ".mates/team", "no/such\n");
  bad = Mates({"tasks", "list"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("(mates team use TEAM sets it)"), std::string::npos) << bad.err;
  ASSERT_EQ(Mates({"team", "use", "--clear"}).exit_code, 0);
  EXPECT_EQ(Mates({"team", "use"}).out, "default (from the default)\n");
}

TEST_F(FirstHourTest, ListOptionsTakeRepeatsAndCommas) {
  auto made = Mates({"team", "create", "t", "--members", "a", "--members", "b,c"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("4 members"), std::string::npos) << made.out;
  for (const char* s : {"one", "two", "three"}) ASSERT_EQ(Mates({"tasks", "--team", "t", "create", s}).exit_code, 0);
  auto four = Mates({"tasks", "--team", "t", "create", "four", "--blocked-by", "1", "--blocked-by", "2,3"});
  ASSERT_EQ(four.exit_code, 0) << four.err;
  EXPECT_NE(four.out.find("depends on #1, #2, #3"), std::string::npos) << four.out;
  auto five = Mates({"tasks", "--team", "t", "create", "five"});
  auto upd = Mates({"tasks", "--team", "t", "update", "5", "--add-blocked-by", "1", "--add-blocked-by", "2"});
  ASSERT_EQ(upd.exit_code, 0) << upd.err;
  EXPECT_NE(Mates({"tasks", "--team", "t", "get", "5"}).out.find("depends on:  #1, #2"), std::string::npos);
  // Bad items in either form are one error.
  auto bad = Mates({"tasks", "--team", "t", "create", "x", "--blocked-by", "1", "--blocked-by", "two"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--blocked-by id"), std::string::npos) << bad.err;
  // `inbox NAME --wait` with no seconds waits until a message comes.
  auto waiting = testing::StartMates(ws_.path(), {"inbox", "--team", "t", "a", "--wait"},
                                     {"XDG_CONFIG_HOME=" + config_.path().string()});
  ASSERT_EQ(Mates({"send", "--team", "t", "--to", "a", "wake up"}).exit_code, 0);
  auto line = waiting.ReadLine(DeadlineIn(20));
  ASSERT_TRUE(line.ok()) << line.status().message();
  EXPECT_NE(line->find("wake up"), std::string::npos) << *line;
  auto end = waiting.Wait();
  EXPECT_EQ(end.exit_code, 0) << end.err;
}

TEST_F(FirstHourTest, BudgetIsShownSetAndCleared) {
  ASSERT_EQ(Mates({"team", "create", "t"}).exit_code, 0);
  auto none = Mates({"budget", "show", "--team", "t"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("team t has no budget; to give it one: mates -w " + ws_.path().string() +
                          " budget set --team t --tokens 1000000"),
            std::string::npos)
      << none.out;
  auto set = Mates({"budget", "set", "--team", "t", "--tokens", "5000"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(set.out.find("team t: budget 5.0k tokens (0% used)"), std::string::npos) << set.out;
  ASSERT_EQ(Mates({"budget", "set", "--team", "t", "--usd", "2"}).exit_code, 0);
  auto json = Mates({"budget", "show", "--team", "t", "--json"});
  auto j = ParseJson(json.out);
  ASSERT_TRUE(j.ok()) << json.out;
  EXPECT_EQ((*j)["budget"]["tokens"], 5000);
  EXPECT_EQ((*j)["budget"]["usd"], 2.0);
  EXPECT_EQ((*j)["budget"]["used"]["tokens"], 0);
  // What run refused with an old budget, a person can see and clear.
  auto cleared = Mates({"budget", "clear", "--team", "t"});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_NE(cleared.out.find("team t has no budget"), std::string::npos) << cleared.out;
  j = ParseJson(Mates({"budget", "show", "--team", "t", "--json"}).out);
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE((*j)["budget"].is_null()) << j->dump();
  // Bad input.
  for (const auto& args : std::vector<std::vector<std::string>>{{"budget", "set", "--team", "t"},
                                                                 {"budget", "set", "--team", "t", "--tokens", "-1"},
                                                                 {"budget", "set", "--team", "t", "--usd", "1e10"},
                                                                 {"budget", "set", "--team", "t", "--usd", "nan"}}) {
    auto r = Mates(args);
    EXPECT_EQ(r.exit_code, 2) << Words(args) << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("mates: error: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(Mates({"budget", "show", "--team", "nope"}).exit_code, 1);
}

// A conversation set aside by --fresh still counts in usage, and in the
// budget (which a fresh start would otherwise give back).
TEST_F(FirstHourTest, UsageKeepsTheConversationsFreshSetAside) {
  const std::string scenario = testing::ScenarioFixture("lead_basic.yaml");
  const std::vector<std::string> run = {"run", "--team", "t", "--provider", "scripted", "--scenario",
                                        scenario,  "--sandbox", "off", "build a greeting"};
  ASSERT_EQ(Mates(run, {}, 60).exit_code, 0);
  auto one = ParseJson(Mates({"usage", "--team", "t", "--json"}).out);
  ASSERT_TRUE(one.ok());
  const int64_t calls = (*one)["calls"].get<int64_t>();
  ASSERT_GT(calls, 0);
  std::vector<std::string> fresh = run;
  fresh.insert(fresh.begin() + 1, "--fresh");
  auto again = Mates(fresh, {}, 60);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto two = ParseJson(Mates({"usage", "--team", "t", "--json"}).out);
  ASSERT_TRUE(two.ok());
  // The first conversation, as it was, beside the new one.
  int64_t earlier = -1, now = -1;
  for (const auto& a : (*two)["agents"]) {
    if (a["agent"] == "lead (earlier)") earlier = a["calls"].get<int64_t>();
    if (a["agent"] == "lead") now = a["calls"].get<int64_t>();
  }
  EXPECT_EQ(earlier, calls) << two->dump();
  EXPECT_GT(now, 0) << two->dump();
  EXPECT_EQ((*two)["calls"].get<int64_t>(), calls + now) << two->dump();
  auto all = ParseJson(Mates({"usage", "--all", "--json"}).out);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["calls"], (*two)["calls"]) << all->dump();
}

TEST_F(FirstHourTest, InitMakesTheWorkspaceReadyOnceAndChangesNothingTheSecondTime) {
  testing::WriteAll(ws_.path() / ".gitignore", "build/");  // no newline at its end
  auto r = Mates({"init"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::ReadAll(ws_.path() / ".gitignore"),
            "build/\n\n# mates' state (mates init)\n.teams/\n.tasks/\n.mates/*\n!.mates/config.yaml\n");
  const std::string config = testing::ReadAll(ws_.path() / ".mates/config.yaml");
  // Every line a comment: it changes nothing until someone sets something.
  for (size_t at = 0; at < config.size();) {
    size_t nl = config.find('\n', at);
    std::string line = config.substr(at, nl - at);
    EXPECT_TRUE(line.empty() || line[0] == '#') << line;
    at = nl + 1;
  }
  EXPECT_NE(config.find("# store: postgres://"), std::string::npos);
  EXPECT_NE(config.find("# sandbox:"), std::string::npos);
  EXPECT_NE(config.find("# hooks:"), std::string::npos);
  // Its next steps work as printed.
  EXPECT_NE(r.out.find("mates -w " + ws_.path().string() + " doctor"), std::string::npos) << r.out;
  auto files = testing::ListFiles(ws_.path());
  auto again = Mates({"init"});
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_EQ(testing::ListFiles(ws_.path()), files);
  EXPECT_NE(again.out.find(".gitignore: has mates' lines already"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("there already, left as it is"), std::string::npos) << again.out;
  // The commented file is a valid config: hooks and sandbox read it.
  EXPECT_EQ(Mates({"hooks", "list"}).exit_code, 0);
  // git leaves mates' state out and keeps the config.
  if (testing::Run({"git", "-C", ws_.path().string(), "init", "-q"}).exit_code == 0) {
    testing::WriteAll(ws_.path() / ".teams/t/config.json", "{}");
    testing::WriteAll(ws_.path() / ".mates/team", "t\n");
    auto st = testing::Run({"git", "-C", ws_.path().string(), "status", "--porcelain", "--untracked-files=all"});
    EXPECT_EQ(st.out, "?? .gitignore\n?? .mates/config.yaml\n") << st.out;
  }
}

// doctor: each check with its result and fix; a provider that answers and
// one that does not.
TEST_F(FirstHourTest, DoctorChecksEachPartAndSaysTheFix) {
  testing::MockLlm mock(testing::ScenarioFixture("lead_basic.yaml"), ws_.path() / "record.jsonl");
  auto r = Mates({"doctor", "--json", "--provider", "openai", "--base-url", mock.url() + "/v1"},
                 {"OPENAI_API_KEY=sk-test-doctor"}, 60);
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.ok()) << r.out << r.err;
  std::vector<std::string> names;
  for (const auto& c : (*j)["checks"]) {
    names.push_back(c["check"]);
    EXPECT_TRUE(c["result"] == "ok" || c["result"] == "warn" || c["result"] == "fail") << c.dump();
    if (c["result"] != "ok") {
      EXPECT_TRUE(c["fix"].is_string()) << c.dump();
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"provider", "git", "tmux", "chromium", "agent CLIs", "store", "sandbox",
                                             "telemetry"}));
  // Telemetry off (no OTEL_* set): said, with how to turn it on.
  EXPECT_EQ((*j)["checks"][7]["result"], "ok") << r.out;
  EXPECT_NE((*j)["checks"][7]["detail"].get<std::string>().find("off (set OTEL_EXPORTER_OTLP_ENDPOINT"),
            std::string::npos);
  EXPECT_EQ((*j)["checks"][0]["result"], "ok") << r.out;
  EXPECT_NE((*j)["checks"][0]["detail"].get<std::string>().find("a minimal call answered"), std::string::npos);
  EXPECT_EQ((*j)["checks"][5]["result"], "ok") << r.out;
  EXPECT_EQ(r.exit_code, (*j)["ok"] == true ? 0 : 1);
  EXPECT_NE(testing::ReadAll(ws_.path() / "record.jsonl").find("Reply with the word: ok"), std::string::npos);

  // No key and no provider: fail, with what to do; the other checks still run.
  r = Mates({"doctor"}, {"ANTHROPIC_API_KEY=", "OPENAI_API_KEY="});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("  FAIL  provider: no model provider chosen"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("        fix: set what it names"), std::string::npos) << r.out;
  // The advice once, not again in the fix.
  EXPECT_EQ(r.out.find("ANTHROPIC_API_KEY"), r.out.rfind("ANTHROPIC_API_KEY")) << r.out;
  EXPECT_NE(r.out.find("store: files in " + ws_.path().string()), std::string::npos) << r.out;
  // A server that is not there: the call fails at once, not after retries.
  auto t0 = std::chrono::steady_clock::now();
  r = Mates({"doctor", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"}, {"OPENAI_API_KEY=sk-x"}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("a minimal call failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: check the network and the base URL"), std::string::npos) << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  // A store that is not there, named by --store.
  r = Mates({"doctor", "--no-call", "--provider", "openai", "--store", "postgres://nobody@127.0.0.1:9/x", "--timeout",
             "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("  FAIL  store:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: check that the server runs"), std::string::npos) << r.out;
  EXPECT_EQ(Mates({"doctor", "--timeout", "0"}).exit_code, 2);
}

// The agent CLIs a team may hold (DESIGN §28): each found with its
// version, each missing with the line that installs it.
TEST_F(FirstHourTest, DoctorSaysWhichAgentClisAreHereAndHowToInstallTheOthers) {
  const fs::path bin = ws_.path() / "bin";
  testing::WriteAll(bin / "codex", "#!/bin/sh\necho codex-cli 0.171.0\n");
  fs::permissions(bin / "codex", fs::perms::owner_all);
  auto r = Mates({"doctor", "--json", "--no-call", "--provider", "scripted", "--scenario",
                  testing::ScenarioFixture("lead_basic.yaml")},
                 {"PATH=" + bin.string() + ":" + testing::PathOf({"git", "tmux", "bwrap", "sh"}).substr(5)});
  auto j = ParseJson(r.out);
  ASSERT_TRUE(j.ok()) << r.out << r.err;
  const Json* clis = nullptr;
  for (const auto& c : (*j)["checks"]) {
    if (c["check"] == "agent CLIs") clis = &c;
  }
  ASSERT_NE(clis, nullptr) << r.out;
  EXPECT_EQ((*clis)["result"], "warn");
  const std::string detail = (*clis)["detail"];
  EXPECT_EQ(detail.rfind("Codex codex-cli 0.171.0; not on PATH: Claude Code (claude), Gemini CLI (gemini)", 0), 0u)
      << detail;
  const std::string fix = (*clis)["fix"];
  EXPECT_NE(fix.find("npm install -g @google/gemini-cli"), std::string::npos) << fix;
  EXPECT_EQ(fix.find("@openai/codex"), std::string::npos) << "Codex is here: " << fix;
}

// The completions and mates(1) are made from the commands themselves: a
// command added anywhere is in them (the package's install is checked in
// CI: scripts/package --check).
TEST_F(FirstHourTest, CompletionsAndTheManPageKnowEveryCommand) {
  auto bash = Mates({"completion", "bash"});
  ASSERT_EQ(bash.exit_code, 0) << bash.err;
  testing::WriteAll(ws_.path() / "mates.bash", bash.out);
  auto complete = [&](const std::string& words, int cword) {
    return testing::Run({"bash", "-c",
                         "source " + (ws_.path() / "mates.bash").string() + "; COMP_WORDS=(" + words +
                             "); COMP_CWORD=" + std::to_string(cword) + "; _mates; echo \"${COMPREPLY[*]}\""})
        .out;
  };
  EXPECT_EQ(complete("mates team u", 2), "use\n");
  EXPECT_EQ(complete("mates --team x tasks cr", 4), "create\n");
  EXPECT_EQ(complete("mates -w /x budget s", 4), "show set\n");
  EXPECT_EQ(complete("mates tasks create --bl", 3), "--blocked-by\n");
  EXPECT_EQ(complete("mates run --sandbox ''", 3), "off workspace strict\n");
  testing::WriteAll(ws_.path() / ".teams/crew/config.json", "{}");
  EXPECT_EQ(complete("mates -w " + ws_.path().string() + " status --team ''", 5), "crew\n");
  if (testing::Run({"fish", "--version"}).exit_code == 0) {
    testing::WriteAll(ws_.path() / "mates.fish", Mates({"completion", "fish"}).out);
    auto fish = testing::Run(
        {"fish", "-c", "source " + (ws_.path() / "mates.fish").string() + "; complete -C 'mates team u'"});
    EXPECT_EQ(fish.out.substr(0, fish.out.find('\t')), "use") << fish.out << fish.err;
  }
  auto bad = Mates({"completion", "tcsh"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("completion is for bash, zsh or fish, not 'tcsh'"), std::string::npos) << bad.err;

  auto page = Mates({"manpage"});
  ASSERT_EQ(page.exit_code, 0);
  EXPECT_EQ(page.out.rfind(".TH MATES 1", 0), 0u);
  for (const char* cmd : {"team use", "budget set", "doctor", "init", "completion", "tasks create", "cluster up"}) {
    EXPECT_NE(page.out.find(".SS \"mates " + std::string(cmd)), std::string::npos) << cmd;
  }
  // Hidden from the lists a person reads: the page's own command.
  EXPECT_EQ(page.out.find("mates manpage"), std::string::npos);
  // What a person reads names no section of the design (the page holds
  // every command's help, init writes the settings' template).
  EXPECT_EQ(page.out.find("§"), std::string::npos) << "a section number in mates(1)";
  ASSERT_EQ(Mates({"init"}).exit_code, 0);
  EXPECT_EQ(testing::ReadAll(ws_.path() / ".mates/config.yaml").find("§"), std::string::npos);
  EXPECT_EQ(Mates({"--help"}).out.find("manpage"), std::string::npos);
  if (testing::Run({"man", "--version"}).exit_code == 0) {
    testing::WriteAll(ws_.path() / "mates.1", page.out);
    auto shown = testing::Run({"man", "-l", (ws_.path() / "mates.1").string()});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_NE(shown.out.find("mates - teams of LLM agents"), std::string::npos) << shown.out.substr(0, 400);
    EXPECT_EQ(shown.err, "") << "troff warnings";
  }
}

// Every command line mates prints as a hint works when pasted as printed
// (DESIGN §21): from another folder, with the workspace given by -w. Each
// is taken from what a command printed, run with `sh -c`, from /, and must
// do its work.
TEST_F(FirstHourTest, EveryHintWorksAsPrinted) {
  const std::string ws = ws_.path().string();
  // A model for `run`'s hints (and init's `run` line): the mock, through
  // the environment, as a person's key and base URL would be.
  testing::MockLlm mock(testing::ScenarioFixture("lead_basic.yaml"), ws_.path() / "record.jsonl");
  const std::vector<std::string> env = {
      "XDG_CONFIG_HOME=" + config_.path().string(), "MATES_STORE=", "ANTHROPIC_API_KEY=sk-test-hints",
      "ANTHROPIC_BASE_URL=" + mock.url(),
      "PATH=" + fs::path(testing::MatesBinary()).parent_path().string() + ":/usr/bin:/bin"};
  auto sh = [&](const std::string& line) { return Sh(line, env); };
  // The hints in `text`: each match of `re`'s first group.
  auto hints = [](const std::string& text, const std::string& re) {
    std::vector<std::string> out;
    std::regex r(re);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), r); it != std::sregex_iterator(); ++it) {
      out.push_back((*it)[1]);
    }
    return out;
  };
  int ran = 0;
  auto works = [&](const std::string& hint, const std::string& says = "") {
    SCOPED_TRACE(hint);
    ASSERT_EQ(hint.rfind("mates -w " + ws + " ", 0), 0u) << "a hint without its workspace";
    auto r = sh(hint);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    if (!says.empty()) {
      EXPECT_NE((r.out + r.err).find(says), std::string::npos) << r.out << r.err;
    }
    ++ran;
  };
  auto mates = [&](const std::string& args) { return sh("mates -w " + ws + " " + args); };

  // init: its next steps.
  auto init = mates("init");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  auto next = hints(init.out, "(mates -w \\S+ (?:doctor|run \"[^\"]*\"))");
  ASSERT_EQ(next.size(), 2u) << init.out;
  works(next[1], "usage: team default");  // run, on the mock (doctor needs the machine's parts: below)
  EXPECT_NE(sh(next[0]).exit_code, 2) << next[0];

  // run: where its usage is.
  auto run = mates("run --team h --sandbox off \"build a greeting\"");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto usage = hints(run.out + run.err, "\\((?:all runs, )?(mates -w \\S+ usage --team h)\\)");
  ASSERT_FALSE(usage.empty()) << run.out << run.err;
  works(usage[0], "lead");

  // up: status, send and down; a second up: its refusal's down.
  auto up = mates("up --team h --provider scripted --scenario " + testing::ScenarioFixture("team_hosted.yaml") +
                  " --sandbox off \"Start a worker\"");
  ASSERT_EQ(up.exit_code, 0) << up.err;
  auto up_hints = hints(up.out, "(mates -w [^;]*?) (?:shows it|talks to it|stops it)");
  ASSERT_EQ(up_hints.size(), 3u) << up.out;
  works(up_hints[0], "team h");
  works(up_hints[1], "sent message");
  auto again = mates("up --team h --provider scripted --scenario " + testing::ScenarioFixture("team_hosted.yaml"));
  EXPECT_EQ(again.exit_code, 1);
  auto refused = hints(again.err, "`(mates -w [^`]*)` stops it");
  ASSERT_EQ(refused.size(), 1u) << again.err;
  EXPECT_EQ(refused[0], up_hints[2]);
  works(up_hints[2], "is down");

  // status: what needs a person, each with its command.
  ASSERT_EQ(mates("team create t --members a,b").exit_code, 0);
  ASSERT_EQ(mates("tasks --team t create job").exit_code, 0);
  ASSERT_EQ(mates("tasks --team t claim 1 --owner a").exit_code, 0);  // a is hosted by nobody
  ASSERT_EQ(mates("send --team t --from b --to lead --type plan_approval_request \"my plan\"").exit_code, 0);
  auto status = mates("status --team t");
  auto attention = hints(status.out, "\\$ (mates -w [^\n]*)");
  ASSERT_EQ(attention.size(), 2u) << status.out;
  for (const auto& h : attention) works(h);
  status = mates("status --team t");
  EXPECT_EQ(status.out.find("NEEDS ATTENTION"), std::string::npos) << "the hints did what they say\n" << status.out;

  // budget and an archived team.
  auto budget = mates("budget show --team t");
  auto give = hints(budget.out, "to give it one: (mates -w [^\n]*)");
  ASSERT_EQ(give.size(), 1u) << budget.out;
  works(give[0], "budget 1.0M tokens");
  auto del = mates("team delete t");
  auto archived = hints(del.out, "\\((mates -w \\S+ log --team t --archived) shows");
  ASSERT_EQ(archived.size(), 1u) << del.out;
  works(archived[0], "plan_approval_request");
  // The REPL's greeting: how others reach the lead, while it waits for a goal.
  SubprocessOptions o;
  o.argv = {testing::MatesBinary(), "-w", ws, "run", "--team", "r", "--provider", "scripted", "--scenario",
            testing::ScenarioFixture("lead_basic.yaml"), "--sandbox", "off"};
  o.env = env;
  o.interactive = true;
  auto repl = Subprocess::Start(o);
  ASSERT_TRUE(repl.ok()) << repl.status().message();
  const Deadline deadline = DeadlineIn(30);
  std::string greeting;
  while (greeting.find("reach the lead with:") == std::string::npos) {
    auto line = repl->ReadLine(deadline);
    ASSERT_TRUE(line.ok()) << line.status().message() << " after " << greeting;
    greeting = *line;
  }
  auto reach = hints(greeting, "reach the lead with: (mates -w \\S+ send --team r --to lead) TEXT$");
  ASSERT_EQ(reach.size(), 1u) << greeting;
  works(reach[0] + " \"are you there\"", "sent message");
  ASSERT_TRUE(repl->WriteStdin("/inbox\n", deadline).ok());
  std::string shown;
  while (shown.find("are you there") == std::string::npos) {
    auto line = repl->ReadLine(deadline);
    ASSERT_TRUE(line.ok()) << line.status().message() << " after " << shown;
    shown += *line + "\n";
  }
  EXPECT_NE(shown.find("user -> lead"), std::string::npos) << shown;
  repl->CloseStdin();
  EXPECT_EQ(repl->Wait().exit_code, 0);
  EXPECT_EQ(ran, 10);
}

// Every kind of attention `mates status` can print with a command, each
// made real in a workspace (what an agent's host records, written with the
// host's own parts), and each command run as printed, from /, must do what
// the item says: a failed turn is asked to go on, a conflicting merge is
// shown, one waiting for review is approved (and another rejected: its
// MergeDecided hook runs), a held queue resumes, a hook's block leads to
// the hooks. A watch (`status --watch`) works if it still runs after 3 s.
TEST_F(FirstHourTest, EveryAttentionHintWorksAsPrinted) {
  const std::string ws = ws_.path().string();
  const std::vector<std::string> env = {
      "XDG_CONFIG_HOME=" + config_.path().string(), "MATES_STORE=",
      "PATH=" + fs::path(testing::MatesBinary()).parent_path().string() + ":/usr/bin:/bin"};
  auto sh = [&](const std::string& line) { return Sh(line, env); };
  auto mates = [&](const std::string& args) { return sh("mates -w " + ws + " " + args); };
  // A git repository whose merge target, mates/t, was moved outside the queue.
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"git", "-C", ws, "init", "-q", "-b", "main"},
           {"git", "-C", ws, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "one"},
           {"git", "-C", ws, "branch", "mates/t"}}) {
    ASSERT_EQ(testing::Run(argv).exit_code, 0) << Words(argv);
  }
  ASSERT_EQ(mates("team create t --members a,b").exit_code, 0);
  for (const char* subject : {"first", "second", "third"}) {
    ASSERT_EQ(mates(std::string("tasks --team t create ") + subject).exit_code, 0);
  }
  ASSERT_EQ(mates("tasks --team t claim 1 --owner a").exit_code, 0);
  const Workspace w(ws_.path());
  auto store = OpenTeamStore("", w, testing::TestEnv());
  ASSERT_TRUE(store.ok()) << store.status().message();
  ASSERT_TRUE((*store)
                  ->UpdateTeam("t",
                               [](TeamConfig& c) {
                                 c.git.target_branch = "mates/t";
                                 c.git.target_at = std::string(40, 'a');
                                 c.git.held_found = std::string(40, 'b');
                                 c.git.held_since = WallSeconds();
                                 return Status::Ok();
                               })
                  .ok());
  MergeStore merges(w, "t");
  MergeRequest conflict;
  conflict.task = 1;
  conflict.owner = "a";
  conflict.status = MergeState::kConflict;
  conflict.files = {"src/a.cc"};
  conflict.output = "CONFLICT (content): Merge conflict in src/a.cc";
  MergeRequest review = conflict;
  review.task = 2;
  review.status = MergeState::kReview;
  review.files.clear();
  MergeRequest another = review;
  another.task = 3;
  another.owner = "b";
  for (const auto& m : {conflict, review, another}) ASSERT_TRUE(merges.Create(m).ok());
  // Hosted by this process, as a host holds its agents.
  std::vector<std::unique_ptr<Hold>> hosted;
  for (const char* member : {"lead", "a", "b"}) {
    auto held = (*store)->HoldLiveness("t", member);
    ASSERT_TRUE(held.ok()) << held.status().message();
    hosted.push_back(std::move(*held));
  }
  {
    // What the host's agents recorded: the lead's turn failed, a retries
    // the model, a hook blocked b.
    agent::ActivityFile lead(w.AgentsDir("t") / "lead.status.json", "lead", "m", testing::TestEnv().files,
                              testing::TestEnv().prices);
    lead.Failed("HTTP 503 (gave up after 5 attempts)", "tries again at its next message");
    agent::ActivityFile a(w.AgentsDir("t") / "a.status.json", "a", "m", testing::TestEnv().files,
                              testing::TestEnv().prices);
    a.Retrying(2, 5, 60, "connection refused");
    agent::ActivityFile b(w.AgentsDir("t") / "b.status.json", "b", "m", testing::TestEnv().files,
                              testing::TestEnv().prices);
    b.Blocked("PreToolUse", "bash(rm -rf build): no rm -rf here");
  }
  testing::TestEnv().files.Flush();
  // The person's MergeDecided hook, which a rejection runs.
  const fs::path decided = ws_.path() / "decided.json";
  fs::create_directories(config_.path() / "mates");
  testing::WriteAll(config_.path() / "mates/config.yaml",
                     "hooks:\n  MergeDecided:\n    - matcher: rejected\n      hooks: [{type: command, command: \"cat > " +
                         decided.string() + "\"}]\n");

  auto status = mates("status --team t");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  std::map<std::string, std::string> hint;  // the kind's words → its command
  std::regex item("\\n  ! ([^\\n]*)\\n      \\$ (mates -w [^\\n]*)");
  for (auto it = std::sregex_iterator(status.out.begin(), status.out.end(), item); it != std::sregex_iterator(); ++it) {
    hint[(*it)[1]] = (*it)[2];
  }
  auto find = [&](const std::string& words) {
    for (const auto& [subject, command] : hint) {
      if (subject.find(words) != std::string::npos) return command;
    }
    ADD_FAILURE() << "no item saying '" << words << "' in\n" << status.out;
    return std::string();
  };
  auto works = [&](const std::string& command, const std::string& says) {
    SCOPED_TRACE(command);
    auto r = sh(command);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE((r.out + r.err).find(says), std::string::npos) << r.out << r.err;
  };
  EXPECT_EQ(hint.size(), 7u) << status.out;
  works(find("lead's turn failed"), "sent message");
  works(find("conflicts in src/a.cc"), "CONFLICT (content)");
  works(find("merge request 2 (task #2 by a) waits for review"), "approved merge request 2");
  works(find("the merge queue is held"), "resumed: the merge queue of team t");
  works(find("a PreToolUse hook blocked"), "MergeDecided");
  const std::string watch = find("retrying in");
  EXPECT_EQ(sh("timeout 3 " + watch + " >/dev/null; echo $?").out, "124\n") << watch;
  // The other way of the review's note: a rejection, which tells b and runs
  // the person's hook.
  std::smatch note;
  ASSERT_TRUE(std::regex_search(status.out, note, std::regex("or: (mates -w \\S+ merges --team t reject 3) --feedback")))
      << status.out;
  auto reject = sh(note[1].str() + " --feedback \"split it up\"");
  EXPECT_EQ(reject.exit_code, 0) << reject.err;
  EXPECT_NE(mates("inbox --team t b --peek").out.find("merge rejected by user: split it up"), std::string::npos);
  auto hook_saw = Json::parse(testing::ReadAll(decided), nullptr, false);
  EXPECT_EQ(hook_saw.value("hook_event_name", ""), "MergeDecided") << testing::ReadAll(decided);
  // What the commands did is what status sees.
  status = mates("status --team t");
  EXPECT_NE(mates("inbox --team t lead --peek").out.find("Go on."), std::string::npos);
  for (const std::string gone : {"waits for review", "is held"}) {
    EXPECT_EQ(status.out.find(gone), std::string::npos) << gone << "\n" << status.out;
  }
}


// examples/tour.sh: up → send → status → a picture of the page → down, in
// a folder of its own, leaving nothing running.
TEST_F(FirstHourTest, TheTourRunsInAScratchFolderAndLeavesNothingRunning) {
  SubprocessOptions o;
  o.argv = {(SourceRoot() / "examples/tour.sh").string()};
  o.cwd = ws_.path().string();
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + ws_.path().string(), "TMPDIR=" + ws_.path().string(),
           "XDG_CONFIG_HOME=" + config_.path().string(), "MATES=" + testing::MatesBinary()};
  o.timeout_s = 180;
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("lead -> user (message): pong: the team is at work"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("#2 [completed] Review NOTES.md"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("is down"), std::string::npos) << r->out;
  std::smatch m;
  const std::string out = r->out;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("the tour ran in (\\S+) "))) << r->out;
  const fs::path scratch = m[1].str();
  EXPECT_EQ(scratch.parent_path(), ws_.path());
  EXPECT_EQ(testing::ReadAll(scratch / "NOTES.md"), "# Notes\n\nThe team of tour wrote this.\n");
  if (fs::exists("/usr/bin/chromium")) {
    EXPECT_GT(fs::file_size(scratch / "dashboard.png"), 10000u) << r->out;
    // The picture waited for the page's ready flag (the DOM dumped with it).
    EXPECT_NE(r->out.find("dashboard.png: the team's page, taken once it was drawn"), std::string::npos) << r->out;
  }
  EXPECT_TRUE(testing::ProcessesIn("mates", scratch).empty());
}

// The README's examples, as printed, in a scratch folder (DESIGN §21):
// each of the blocks that runs offline, line by line in one shell, with
// a person's setting — an Anthropic key, here for `mates mock-llm` serving
// the scenario the block's goals need. A line that watches or serves
// (--watch, --follow, dashboard) works if it is still at it after 3 s; one
// put in the background (&) is waited for until its port answers. Blocks
// listed together share a folder (MCP's joins the team the store's made).
// Run elsewhere: the cluster's block (claude_code_test.cc) and
// PostgreSQL's (below). Not run where Claude Code is not installed: its
// line (said, loudly).
TEST_F(FirstHourTest, TheReadmesExamplesWorkAsPrintedInAScratchFolder) {
  testing::MockLlm mock(testing::ScenarioFixture("lead_basic.yaml"), ws_.path() / "record.jsonl");
  testing::MockLlm teams(testing::ScenarioFixture("readme_teams.yaml"), ws_.path() / "teams.jsonl");
  testing::MockLlm worktrees(testing::ScenarioFixture("readme_worktrees.yaml"), ws_.path() / "worktrees.jsonl");
  const fs::path tmp = ws_.path() / "tmp";
  fs::create_directories(tmp);
  // Ollama's line, served where Ollama listens (11434) by the mock's
  // OpenAI-compatible API; if something else has that port, not run, loudly.
  Subprocess ollama = testing::Start({testing::MatesBinary(), "mock-llm", "--scenario",
                                      testing::ScenarioFixture("lead_basic.yaml"), "--port", "11434", "--quiet"});
  const bool have_ollama = ollama.ReadLine(DeadlineIn(10)).ok();
  const fs::path claude = SourceRoot() / ".cache/npm/node_modules/.bin";
  const bool have_claude = fs::exists(claude / "claude");
  int lines = 0;
  // The worktrees' block works in a repository whose tests `make test` runs.
  const std::string repository =
      "git init -q && printf 'test:\\n\\ttest -s limit.txt\\n' > Makefile && git add Makefile && "
      "git -c user.name=p -c user.email=p@x commit -qm start || exit 1\n";
  // The tokens' block prices with a table of the person's own, in a
  // repository (its replay starts from the session's commit).
  const std::string prices =
      "printf 'models:\\n  claude-:\\n    {input: 1, output: 2, cache_write: 1.25, cache_read: 0.1}\\n' "
      "> my-prices.yaml\n";
  struct Group {
    std::vector<std::string> headings;
    const testing::MockLlm* model;
    std::string folder;  // made ready so
  };
  // Claude Code's team: the fixture of a real run, as the team the block
  // names, in the Claude Code home of this shell.
  const std::string claude_team =
      "h=\"$PWD/claude-home\" && cp -r \"$ex/../tests/fixtures/claude_team\" \"$h\" && "
      "mv \"$h/teams/session-5e55e55e\" \"$h/teams/session-1a2b3c4d\" && "
      "mv \"$h/tasks/session-5e55e55e\" \"$h/tasks/session-1a2b3c4d\" && "
      "grep -rl session-5e55e55e \"$h\" | xargs sed -i s/session-5e55e55e/session-1a2b3c4d/g && "
      "export CLAUDE_CONFIG_DIR=\"$h\" || exit 1\n";
  const std::vector<Group> groups = {
      {{"The first hour"}, &mock, ""},
      {{"Leave it running"}, &mock, ""},
      {{"Work with an agent"}, &mock, ""},
      {{"The team store from the shell", "External agents in a team, over MCP"}, &mock, ""},
      {{"Tokens, cost and budgets"}, &mock, repository + prices},
      {{"What an agent's commands can touch"}, &mock, ""},
      {{"Teams"}, &teams, ""},
      {{"Teammates in their own worktrees"}, &worktrees, repository},
      {{"Trying prompts and flows offline"}, &mock, ""},
      {{"Claude Code's own agent teams, from mates"}, &mock, claude_team},
  };
  for (const auto& [headings, model, folder] : groups) {
    SCOPED_TRACE(headings[0]);
    std::string script = "set -u\nex=\"$PWD/examples\"\n";
    if (headings[0] != "The first hour") script += "cd \"$(mktemp -d)\"\n" + folder;
    for (const auto& heading : headings) {
      std::vector<std::string> block = ReadmeBlock(heading);
      ASSERT_FALSE(block.empty()) << heading;
      script += ScriptOf(block, have_claude ? "" : claude.string(), &lines, [&](const std::string& line) {
        if (have_ollama || line.find(":11434/") == std::string::npos) return line;
        std::cerr << "*** NOT RUN LOUDLY: port 11434 is taken here: " << line << "\n";
        return std::string("true");
      });
    }
    SubprocessOptions o;
    o.argv = {"bash", "-c", script};
    o.cwd = SourceRoot().string();
    o.env = {"PATH=" + fs::path(testing::MatesBinary()).parent_path().string() + ":" + claude.string() +
                 ":/usr/local/bin:/usr/bin:/bin",
             "HOME=" + ws_.path().string(), "TMPDIR=" + tmp.string(), "XDG_CONFIG_HOME=" + config_.path().string(),
             "ANTHROPIC_API_KEY=sk-test-readme", "ANTHROPIC_BASE_URL=" + model->url(), "LANG=C.UTF-8",
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"};
    o.timeout_s = 240;
    auto r = RunSubprocess(o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->exit_code, 0) << r->out.substr(r->out.size() > 3000 ? r->out.size() - 3000 : 0) << r->err;
    if (headings[0] == "Trying prompts and flows offline" && have_claude) {
      EXPECT_NE(r->out.find("Hello from a mates scenario!"), std::string::npos) << r->out << r->err;
    }
  }
  ollama.Signal(SIGTERM);
  EXPECT_EQ(ollama.Wait().exit_code, 0);
  EXPECT_GE(lines, 40);
  // Nothing was written where the README is.
  auto st = testing::Run({"git", "-C", SourceRoot().string(), "status", "--porcelain", "--ignored",
                          "--untracked-files=all", "--", "examples", ".teams", ".tasks", ".mates", "src/hello.sh",
                          "hello.sh", "NOTES.md"});
  EXPECT_FALSE(std::regex_search(st.out, std::regex("(^|\\n)(\\?\\?|!!) "))) << st.out;
}

// The README's settings (its YAML blocks), put where it says, are read
// as written: the hooks are listed, and the sandbox they shape works.
TEST_F(FirstHourTest, TheReadmesSettingsAreReadAsWritten) {
  std::string config;
  for (const std::string heading : {"What an agent's commands can touch", "Hooks: your rules between the agents and their tools"}) {
    std::vector<std::string> block = ReadmeBlock(heading, "```yaml\n");
    ASSERT_FALSE(block.empty()) << heading;
    for (const auto& line : block) config += line + "\n";
  }
  testing::WriteAll(config_.path() / "mates/config.yaml", config);
  auto hooks = Mates({"hooks", "list"});
  ASSERT_EQ(hooks.exit_code, 0) << hooks.err;
  EXPECT_NE(hooks.out.find("PreToolUse [Bash]  ~/bin/no-rm-rf"), std::string::npos) << hooks.out;
  EXPECT_NE(hooks.out.find("TaskCompleted  make -s test >&2 || exit 2  (timeout 300 s)"), std::string::npos)
      << hooks.out;
  auto doctor = Mates({"doctor", "--json", "--no-call"});
  auto j = Json::parse(doctor.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << doctor.out << doctor.err;
  bool checked = false;
  for (const auto& c : j["checks"]) {
    if (c["check"] != "sandbox") continue;
    checked = true;
    EXPECT_NE(c["result"], "fail") << c;
  }
  EXPECT_TRUE(checked) << doctor.out;
}

// README "A store in PostgreSQL", as printed, on a private server: its
// URL is the person's (the test server's here); the lines for "a second
// machine" (--teammates) run in a second folder, as on one; the folder is
// a git checkout with a remote, `origin`, as the README says every
// machine's is. What it leaves running is stopped after.
class FirstHourPgTest : public testing::PgSuite {
 protected:
  TempDir ws_;
  TempDir config_;
};

TEST_F(FirstHourPgTest, TheReadmesPostgresqlBlockWorksAsPrinted) {
  auto url = server_->CreateDatabase("readme");
  ASSERT_TRUE(url.ok()) << url.status().message();
  testing::MockLlm mock(testing::ScenarioFixture("lead_basic.yaml"), ws_.path() / "record.jsonl");
  const fs::path tmp = ws_.path() / "tmp";
  fs::create_directories(tmp);
  std::vector<std::string> block = ReadmeBlock("A store in PostgreSQL");
  ASSERT_FALSE(block.empty());
  ASSERT_EQ(block[0].rfind("export MATES_STORE=postgres://", 0), 0u) << block[0];
  int lines = 0;
  std::string script = "set -u\nhere=\"$(mktemp -d)\" second=\"$(mktemp -d)\"\n"
                       "trap '(cd \"$here/w\" && mates down --team demo); (cd \"$second\" && mates down --team demo)' EXIT\n"
                       "git init -q --bare \"$here/origin.git\" && mkdir \"$here/w\" && cd \"$here/w\" && git init -q && "
                       "git commit -q --allow-empty -m start && git remote add origin ../origin.git && "
                       "git push -q origin HEAD || exit 1\n";
  script += ScriptOf(block, "", &lines, [&](const std::string& line) {
    if (line.rfind("export MATES_STORE=", 0) == 0) return "export MATES_STORE=" + *url;
    if (line.find(" --teammates ") != std::string::npos) return "(cd \"$second\" && " + line + ")";
    return line;
  });
  SubprocessOptions o;
  o.argv = {"bash", "-c", script};
  o.cwd = ws_.path().string();
  o.env = {"PATH=" + fs::path(testing::MatesBinary()).parent_path().string() + ":/usr/bin:/bin",
           "HOME=" + ws_.path().string(), "TMPDIR=" + tmp.string(), "XDG_CONFIG_HOME=" + config_.path().string(),
           "ANTHROPIC_API_KEY=sk-test-readme", "ANTHROPIC_BASE_URL=" + mock.url(), "LANG=C.UTF-8",
           "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@x", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@x"};
  o.timeout_s = 240;
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0) << r->out.substr(r->out.size() > 3000 ? r->out.size() - 3000 : 0) << r->err;
  EXPECT_GE(lines, 19);
  EXPECT_NE(r->out.find("exported team 'demo'"), std::string::npos) << r->out;
  EXPECT_NE(r->out.find("carol@demo joined"), std::string::npos) << r->out;
  const auto left = testing::ProcessesIn("mates", tmp);
  EXPECT_TRUE(left.empty()) << left.front();
}

}  // namespace
}  // namespace mates
