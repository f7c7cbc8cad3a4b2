// `mates replay` end to end (DESIGN §31): the real binary re-enacts real
// records — the demo, a run whose tool saw a file that has since changed,
// a team of isolated teammates whose merges replay — in fresh checkouts,
// with no model; and records that cannot be replayed, each one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "store/board.h"
#include "store/merges.h"
#include "store/roster.h"
#include "store/workspace.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

Json Parsed(const testing::CommandResult& r) {
  auto j = ParseJson(r.out);
  EXPECT_TRUE(j.ok()) << r.out << r.err;
  return j.ok() ? *j : Json::object();
}

std::string Git(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", dir.string(), "-c", "user.name=test", "-c", "user.email=t@t"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = testing::Run(argv);
  EXPECT_EQ(r.exit_code, 0) << "git " << args.front() << ": " << r.err;
  return r.out;
}

// A repository at `ws` whose one commit holds `file` with `text`.
void RepositoryWith(const fs::path& ws, const std::string& file, const std::string& text) {
  fs::create_directories(ws);
  Git(ws, {"init", "-q", "-b", "main"});
  WriteAll(ws / file, text);
  Git(ws, {"add", file});
  Git(ws, {"commit", "-q", "-m", "start"});
}

// The files of a workspace (not its records or its repository), by path.
std::map<std::string, std::string> FilesOf(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string rel = fs::relative(it->path(), root).string();
    if (rel == ".git" || rel == ".teams" || rel == ".tasks") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files[rel] = ReadAll(it->path());
  }
  return files;
}

// What two replays of one record must agree on: each agent's calls and
// divergence, the board's differences.
Json Verdict(const Json& replay) {
  return Json{{"agents", replay.value("agents", Json::array())},
              {"board", replay.value("board", Json::array())},
              {"diverged", replay.value("diverged", true)}};
}

TEST(ReplayTest, TheDemoReplaysWithNoDivergenceAndTwoReplaysAgree) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "demo";
  auto demo = testing::Run({testing::MatesBinary(), "demo", "--workspace", ws.string()});
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;

  // Named by the team the lead made (archived): the session replayed is
  // the one it was made in.
  const fs::path one = tmp.path() / "one";
  auto r = testing::RunMates(ws, {"replay", "--team", "rest-to-graphql", "--archived", "--into", one.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json first = Parsed(r);
  EXPECT_EQ(first["team"], "default");
  EXPECT_EQ(first["teams"], Json::array({"default", "rest-to-graphql"}));
  EXPECT_EQ(first["commit"].get<std::string>().size(), 40u);
  ASSERT_EQ(first["agents"].size(), 4u) << first.dump();
  for (const auto& a : first["agents"]) {
    EXPECT_FALSE(a["diverged"].get<bool>()) << a.dump();
    EXPECT_GT(a["recorded_calls"].get<int>(), 1) << a.dump();
    EXPECT_EQ(a["replayed_calls"], a["recorded_calls"]) << a.dump();
  }
  EXPECT_EQ(first["board"], Json::array());
  EXPECT_EQ(first["tasks_compared"], 4);
  // The same files, written again by the replayed tools.
  const auto files = FilesOf(ws);
  EXPECT_EQ(FilesOf(one), files);
  EXPECT_TRUE(files.count("web/queries.test.js") > 0 && files.count("server/resolvers.js") > 0);
  // DIR's own store holds the session again: the board, the messages, the
  // spend (the recorded usage, call for call).
  // The replayed lead disbanded the team: it is archived in DIR.
  EXPECT_FALSE(fs::exists(one / ".teams/rest-to-graphql"));
  EXPECT_TRUE(fs::exists(fs::directory_iterator(one / ".teams/.archive")->path() / ".teams/rest-to-graphql"));
  auto usage = testing::RunMates(one, {"usage", "--team", "rest-to-graphql", "--archived", "--json"});
  auto recorded = testing::RunMates(ws, {"usage", "--team", "rest-to-graphql", "--archived", "--json"});
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  EXPECT_EQ(Parsed(usage)["agents"], Parsed(recorded)["agents"]);
  auto log = testing::RunMates(one, {"log", "--team", "rest-to-graphql", "--archived", "--json"});
  EXPECT_NE(log.out.find("plan_approval_response"), std::string::npos) << log.out.substr(0, 2000);

  // Again, from the team where the session started: the same verdict.
  const fs::path two = tmp.path() / "two";
  auto again = testing::RunMates(ws, {"replay", "--into", two.string(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(Verdict(Parsed(again)), Verdict(first));
  EXPECT_EQ(FilesOf(two), files);

  // Said for a person too.
  const fs::path three = tmp.path() / "three";
  auto text = testing::RunMates(ws, {"replay", "--into", three.string()});
  EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find("frontend"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("board: the same (4 tasks)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nno divergence\n"), std::string::npos) << text.out;
}

// The demo's team as a bundle, imported where nothing else of the session
// is (not even a repository, and a default team of another's): its git
// history and record are enough to replay it.
TEST(ReplayTest, AnImportedBundleReplaysElsewhere) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "demo";
  auto demo = testing::Run({testing::MatesBinary(), "demo", "--workspace", ws.string()});
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  const fs::path file = tmp.path() / "session.tgz";
  auto out = testing::RunMates(ws, {"export", "--team", "rest-to-graphql", "--archived", "--bundle", file.string()});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const fs::path there = tmp.path() / "elsewhere";
  fs::create_directories(there);
  WriteAll(tmp.path() / "hello.yaml", "default_reply: [{type: text, text: Hello.}]\n");
  auto own = testing::RunMates(there, {"run", "--provider", "scripted", "--scenario",
                                       (tmp.path() / "hello.yaml").string(), "my own work"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  auto in = testing::RunMates(there, {"import", file.string()});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  const fs::path dir = tmp.path() / "replayed";
  auto r = testing::RunMates(there, {"replay", "--team", "rest-to-graphql", "--archived", "--into", dir.string(),
                                     "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json j = Parsed(r);
  EXPECT_EQ(j["team"], "default");  // where its lead made it, as in the record
  EXPECT_EQ(j["teams"], Json::array({"rest-to-graphql"}));
  EXPECT_EQ(j["board"], Json::array());
  for (const auto& a : j["agents"]) EXPECT_FALSE(a["diverged"].get<bool>()) << a.dump();
  EXPECT_EQ(FilesOf(dir), FilesOf(ws));
}

// A repository whose config.txt the session read while it had an edit not
// committed: the replay's checkout reads what was committed.
TEST(ReplayTest, AToolThatSawWhatHasSinceChangedIsItsAgentsDivergence) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "repo";
  RepositoryWith(ws, "config.txt", "port: 80\n");
  WriteAll(ws / "config.txt", "port: 8080\n");  // not committed
  const fs::path yaml = tmp.path() / "read.yaml";
  WriteAll(yaml, R"Y(rules:
  - agent: lead
    when: "Check the port"
    reply:
      - {type: text, text: "Reading it."}
      - {type: tool_use, name: read_file, input: {path: config.txt}}
  - agent: lead
    when: "port: "
    reply: [{type: tool_use, name: bash, input: {command: "wc -c < config.txt"}}]
  - {agent: lead, once: false, reply: [{type: text, text: "The port is read."}]}
)Y");
  auto run = testing::RunMates(ws, {"run", "--provider", "scripted", "--scenario", yaml.string(), "Check the port"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  const fs::path dir = tmp.path() / "replayed";
  auto r = testing::RunMates(ws, {"replay", "--into", dir.string(), "--json"});
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const Json j = Parsed(r);
  EXPECT_TRUE(j["diverged"].get<bool>());
  ASSERT_EQ(j["agents"].size(), 1u) << j.dump();
  const Json& lead = j["agents"][0];
  EXPECT_EQ(lead["name"], "lead");
  ASSERT_TRUE(lead["diverged"].get<bool>()) << lead.dump();
  // The first divergence only: the read (turn 1, call 1), not the count after it.
  EXPECT_EQ(lead["divergence"]["turn"], 1);
  EXPECT_EQ(lead["divergence"]["call"], 1);
  EXPECT_EQ(lead["divergence"]["tool"], "read_file");
  EXPECT_NE(lead["divergence"]["recorded"].get<std::string>().find("8080"), std::string::npos) << lead.dump();
  EXPECT_EQ(lead["divergence"]["replayed"].get<std::string>().find("8080"), std::string::npos) << lead.dump();
  EXPECT_EQ(lead["replayed_calls"], lead["recorded_calls"]);
  EXPECT_EQ(ReadAll(dir / "config.txt"), "port: 80\n");

  // Two replays agree, divergence and all.
  auto again = testing::RunMates(ws, {"replay", "--into", (tmp.path() / "again").string(), "--json"});
  EXPECT_EQ(again.exit_code, 3);
  EXPECT_EQ(Verdict(Parsed(again)), Verdict(j));
  auto text = testing::RunMates(ws, {"replay", "--into", (tmp.path() / "text").string()});
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_NE(text.out.find("diverged at turn 1 (call 1), read_file: its result differs"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("then: "), std::string::npos) << text.out;
}

// The person's words in the middle of a session are said again where they
// came: the lead's turn that took them in replays with them.
TEST(ReplayTest, ThePersonsMessagesAreSentAgainWhereTheyCame) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "repo";
  RepositoryWith(ws, "README", "x\n");
  const fs::path yaml = tmp.path() / "wait.yaml";
  WriteAll(yaml, R"Y(rules:
  - agent: lead
    when: "Wait for me"
    reply: [{type: tool_use, name: bash, input: {command: "for i in $(seq 60); do [ -f go ] && break; sleep 0.05; done; echo waited"}}]
  - agent: lead
    when: "mind the tests"
    reply: [{type: text, text: "Heard you."}]
  - {agent: lead, once: false, reply: [{type: text, text: "Done."}]}
)Y");
  Subprocess run = testing::StartMates(ws, {"run", "--provider", "scripted", "--scenario", yaml.string(), "Wait for me"});
  const fs::path journal = Workspace(ws).JournalPath("default", "lead");
  for (int i = 0; i < 600 && ReadAll(journal).find("seq 60") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polls a file another process writes
  }
  auto said = testing::RunMates(ws, {"send", "--to", "lead", "mind the tests"});
  ASSERT_EQ(said.exit_code, 0) << said.err;
  WriteAll(ws / "go", "");
  ASSERT_EQ(run.Wait().exit_code, 0);
  ASSERT_NE(ReadAll(journal).find("Heard you."), std::string::npos) << ReadAll(journal);

  const fs::path dir = tmp.path() / "replayed";
  auto r = testing::RunMates(ws, {"replay", "--into", dir.string(), "--json", "--give-up", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(Parsed(r)["diverged"].get<bool>());
  auto log = testing::RunMates(dir, {"log", "--json"});
  EXPECT_NE(log.out.find("mind the tests"), std::string::npos) << log.out;
  EXPECT_NE(ReadAll(Workspace(dir).JournalPath("default", "lead")).find("mind the tests"), std::string::npos);
}

TEST(ReplayTest, AWorktreeTeamReplaysItsMerges) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "repo";
  RepositoryWith(ws, "README", "the project\n");
  ASSERT_TRUE(Roster(Workspace(ws)).CreateTeam("wt").ok());
  Board board(Workspace(ws).TasksDir("wt"));
  ASSERT_TRUE(board.Create({"write a.txt with alpha", "", "", {}, ""}).ok());
  ASSERT_TRUE(board.Create({"write b.txt with beta", "", "", {1}, ""}).ok());
  const std::string yaml = testing::ScenarioFixture("team_quiet_lead.yaml");
  auto run = testing::RunMates(ws, {"run", "--team", "wt", "--provider", "scripted", "--scenario", yaml,
                                    "--idle-timeout", "0", "--isolation", "worktree", "Go isolated one"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto recorded = MergeStore(Workspace(ws), "wt").List();
  ASSERT_TRUE(recorded.ok());
  ASSERT_EQ(recorded->size(), 2u);

  const fs::path dir = tmp.path() / "replayed";
  auto r = testing::RunMates(ws, {"replay", "--team", "wt", "--into", dir.string(), "--json"}, {}, "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json j = Parsed(r);
  EXPECT_EQ(j["board"], Json::array()) << j.dump();
  EXPECT_EQ(j["tasks_compared"], 2);
  // The merges happened again, in the same order, onto the replay's target.
  auto merges = MergeStore(Workspace(dir), "wt").List();
  ASSERT_TRUE(merges.ok());
  ASSERT_EQ(merges->size(), recorded->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    EXPECT_EQ((*merges)[i].task, (*recorded)[i].task);
    EXPECT_EQ((*merges)[i].status, (*recorded)[i].status);
    EXPECT_EQ((*merges)[i].status, MergeState::kMerged);
  }
  EXPECT_EQ(Git(dir, {"show", "mates/wt:a.txt"}), "alpha\n");
  EXPECT_EQ(Git(dir, {"show", "mates/wt:b.txt"}), "beta\n");
}

TEST(ReplayTest, WhatCannotBeReplayedIsOneClearError) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "demo";
  auto demo = testing::Run({testing::MatesBinary(), "demo", "--workspace", ws.string()});
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  auto replay = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"replay"};
    all.insert(all.end(), args.begin(), args.end());
    return testing::RunMates(ws, all);
  };
  // No --into; a folder that is not empty; the workspace itself.
  EXPECT_NE(replay({}).exit_code, 0);
  WriteAll(tmp.path() / "full/x", "x");
  auto full = replay({"--into", (tmp.path() / "full").string()});
  EXPECT_EQ(full.exit_code, 2) << full.err;
  EXPECT_NE(full.err.find("is not an empty folder"), std::string::npos) << full.err;
  auto self = replay({"--into", ws.string()});
  EXPECT_NE(self.exit_code, 0);
  // No such team, a bad name, a deleted one without --archived.
  auto none = replay({"--team", "nope", "--into", (tmp.path() / "a").string()});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_NE(replay({"--team", "../x", "--into", (tmp.path() / "b").string()}).exit_code, 0);
  auto deleted = replay({"--team", "rest-to-graphql", "--into", (tmp.path() / "c").string()});
  EXPECT_EQ(deleted.exit_code, 1);
  EXPECT_NE(deleted.err.find("--archived"), std::string::npos) << deleted.err;
  EXPECT_FALSE(fs::exists(tmp.path() / "c"));

  // A session that did not start in a git checkout.
  const fs::path plain = tmp.path() / "plain";
  fs::create_directories(plain);
  WriteAll(tmp.path() / "hello.yaml", "default_reply: [{type: text, text: Hello.}]\n");
  auto run = testing::RunMates(plain, {"run", "--provider", "scripted", "--scenario",
                                       (tmp.path() / "hello.yaml").string(), "hello"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto nogit = testing::RunMates(plain, {"replay", "--into", (tmp.path() / "d").string()});
  EXPECT_EQ(nogit.exit_code, 1);
  EXPECT_NE(nogit.err.find("did not start in a git checkout"), std::string::npos) << nogit.err;

  // A roster whose recorded commit is an option to git: refused, not passed on.
  const fs::path config = ws / ".teams/default/config.json";
  const std::string roster = ReadAll(config);
  auto edited_roster = Json::parse(roster);
  edited_roster["sessions"][0]["commit"] = "--orphan=x";
  WriteAll(config, edited_roster.dump());
  auto option = replay({"--into", (tmp.path() / "o").string()});
  EXPECT_EQ(option.exit_code, 1) << option.out;
  EXPECT_NE(option.err.find("not a commit id"), std::string::npos) << option.err;
  WriteAll(config, roster);

  // A journal edited by hand: the analyst's write now writes elsewhere.
  const fs::path archive = fs::directory_iterator(ws / ".teams/.archive")->path();
  const fs::path journal = archive / ".teams/rest-to-graphql/agents/analyst.jsonl";
  const std::string original = ReadAll(journal);
  std::string text = original;
  const size_t at = text.find("docs/rest-endpoints.md\",\"content\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 22, "docs/rest-endpoints.txt");
  WriteAll(journal, text);
  auto edited = replay({"--into", (tmp.path() / "e").string(), "--json", "--give-up", "2"});
  EXPECT_EQ(edited.exit_code, 3) << edited.out << edited.err;
  const Json e = Parsed(edited);
  for (const auto& a : e["agents"]) {
    if (a["name"] != "analyst") continue;
    ASSERT_TRUE(a["diverged"].get<bool>()) << a.dump();
    EXPECT_EQ(a["divergence"]["tool"], "write_file") << a.dump();
  }
  // Its last line torn (a crash): what is whole replays, and the analyst's
  // last turn, which the record lost, is a call it does not have.
  WriteAll(journal, original.substr(0, original.size() - 40));
  auto torn = replay({"--into", (tmp.path() / "f").string(), "--json", "--give-up", "2"});
  EXPECT_EQ(torn.exit_code, 3) << torn.out << torn.err;
  const Json t = Parsed(torn);
  for (const auto& a : t["agents"]) {
    EXPECT_EQ(a["diverged"].get<bool>(), a["name"] == "analyst") << a.dump();
    if (a["name"] == "analyst") {
      EXPECT_EQ(a["divergence"]["what"], "a model call the record does not have") << a.dump();
    }
  }
  // A journal of a gigabyte (sparse: nothing is written) is one error, read not at all.
  fs::resize_file(journal, size_t{1} << 30);
  auto huge = replay({"--into", (tmp.path() / "g").string()});
  EXPECT_EQ(huge.exit_code, 1) << huge.out;
  EXPECT_NE(huge.err.find("too large to replay"), std::string::npos) << huge.err;
}

}  // namespace
}  // namespace mates
