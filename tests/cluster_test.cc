// `mates cluster` end to end: a private tmux server, panes running the fake
// agent CLI (tests/support/fake_agent.cc), every command from its own
// process.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/json.h"
#include "store/board.h"
#include "store/workspace.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;

uint32_t Fnv(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::string Hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

const char* kSeedAgents[][3] = {{"grand_boss", "GRAND BOSS OK", "grand_boss"},
                                {"middle_manager", "MIDDLE MANAGER OK", "middle_manager"},
                                {"coding_writing_specialist", "CODING OK", "specialist_coding_writing"},
                                {"research_analysis_specialist", "RESEARCH OK", "specialist_research_analysis"},
                                {"testing_specialist", "TESTING OK", "specialist_testing"}};

// A cluster of fake agents in `dir`; `extra[name]` adds fake_agent flags.
class ClusterTest : public ::testing::Test {
 protected:
  void Write(int agents, std::map<std::string, std::string> extra = {}, double startup_timeout = 20,
             const std::string& work_dir = ".") {
    session_ = "t" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    std::string y = "cluster:\n  name: " + session_ + "\n  session_name: " + session_ +
                    "\n  work_dir: " + work_dir + "\n  startup_timeout: " + std::to_string(startup_timeout) + "\n  response_timeout: 10" +
                    "\n  command: [" + std::string(MATES_FAKE_AGENT) +
                    ", --marker, '{marker}', --name, '{name}', --prompt-file, '{personality_file}']\nagents:\n";
    for (int i = 0; i < agents; ++i) {
      std::string n = kSeedAgents[i][0];
      testing::WriteAll(dir_.path() / "personalities" / (n + ".txt"), "You are " + n + ".\n");
      y += "  - name: " + n + "\n    role: " + kSeedAgents[i][2] + "\n    personality_prompt_path: personalities/" +
           n + ".txt\n    marker: " + kSeedAgents[i][1] + "\n    pane_index: " + std::to_string(i) + "\n";
      if (extra.count(n)) {
        y += "    command: [" + std::string(MATES_FAKE_AGENT) + ", --marker, '{marker}', --name, '{name}', " +
             extra[n] + "]\n";
      }
    }
    testing::WriteAll(dir_.path() / "cc.yaml", y);
  }
  testing::CommandResult Cluster(std::vector<std::string> args) {
    std::vector<std::string> full = {"cluster"};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"-c", (dir_.path() / "cc.yaml").string()});
    return testing::RunMates(dir_.path(), full);
  }
  void TearDown() override {
    // Whatever a failed test left: this cluster's own server only.
    if (ServerAlive()) (void)Cluster({"down"});
    if (ServerAlive()) (void)testing::Run({"tmux", "-L", "mates-" + session_, "kill-server"});
  }
  std::string SocketFile() {
    const char* tmp = std::getenv("TMUX_TMPDIR");
    return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/tmux-" + std::to_string(::getuid()) +
           "/mates-" + session_;
  }
  testing::CommandResult Git(std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", dir_.path().string(), "-c", "user.name=t", "-c", "user.email=t@t"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::Run(argv);
  }
  // The test's folder as a repository whose one commit holds `file`.
  bool CommittedRepository(const std::string& file, const std::string& content) {
    if (Git({"init", "-q", "-b", "main"}).exit_code != 0) return false;
    testing::WriteAll(dir_.path() / file, content);
    return Git({"add", file}).exit_code == 0 && Git({"commit", "-q", "-m", "initial"}).exit_code == 0;
  }
  // How many conflict forecasts merge-queue told `who` in `team`'s log.
  int ForecastsTold(const std::string& team, const std::string& who) {
    std::istringstream lines(ReadAll(Workspace(dir_.path()).MessagesLogPath(team)));
    int told = 0;
    for (std::string line; std::getline(lines, line);) {
      told += line.find("\"recipient\":\"" + who + "\"") != std::string::npos &&
              line.find("Conflict forecast") != std::string::npos &&
              line.find("\"sender\":\"merge-queue\"") != std::string::npos;
    }
    return told;
  }
  bool ServerAlive() { return testing::Run({"tmux", "-L", "mates-" + session_, "has-session"}).exit_code == 0; }
  bool AgentsRunning() {
    return testing::Run({"pgrep", "-f", dir_.path().string() + "/personalities"}).exit_code == 0;
  }

  TempDir dir_;
  std::string session_;
  static inline int counter_ = 0;
};

TEST_F(ClusterTest, UpSendStatusLogDownFromSeparateProcesses) {
  Write(5);
  auto up = Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  for (const auto& a : kSeedAgents) EXPECT_NE(up.out.find(std::string(a[0]) + ": ready"), std::string::npos) << up.out;

  auto r = Cluster({"send", "--from", "grand_boss", "middle_manager", "split the work please"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("middle_manager got 21 bytes in 1 lines, fnv " + Hex(Fnv("split the work please"))),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MIDDLE MANAGER OK"), std::string::npos) << r.out;  // the marker is not the reply
  EXPECT_EQ(r.out.find("> "), std::string::npos) << r.out;                 // nor the prompt

  auto st = Cluster({"status", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto j = ParseJson(st.out);
  ASSERT_TRUE(j.ok()) << st.out;
  EXPECT_TRUE((*j)["up"].get<bool>());
  ASSERT_EQ((*j)["agents"].size(), 5u);
  for (const auto& a : (*j)["agents"]) {
    EXPECT_TRUE(a["alive"].get<bool>()) << a;
    EXPECT_FALSE(a["busy"].get<bool>()) << a;
    EXPECT_EQ(a["pane"].get<std::string>()[0], '%');
    EXPECT_FALSE(a["last_activity"].get<std::string>().empty());
  }
  EXPECT_EQ((*j)["agents"][2]["reports_to"], "middle_manager");
  // In the folder it was brought up in, -c may be left out.
  auto plain = testing::RunMates(dir_.path(), {"cluster", "status", "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto pj = ParseJson(plain.out);
  ASSERT_TRUE(pj.ok()) << plain.out;
  EXPECT_EQ((*pj)["agents"].size(), 5u);
  // Elsewhere, with no config there, it says so.
  testing::TempDir elsewhere;
  auto none = testing::RunMates(elsewhere.path(), {"cluster", "status"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "mates: error: no cluster here: config/cc-cluster.yaml does not exist and no `mates cluster up` "
                      "ran in " + elsewhere.path().string() + " (-c FILE names a config)\n");
  // Without a UTF-8 locale (CI's) tmux prints a tab as '_': the panes were
  // all reported dead then.
  auto c_locale = testing::RunMates(dir_.path(), {"cluster", "status", "--json", "-c", (dir_.path() / "cc.yaml").string()},
                                    {"LC_ALL=C", "LANG="});
  auto cj = ParseJson(c_locale.out);
  ASSERT_TRUE(cj.ok()) << c_locale.out << c_locale.err;
  for (const auto& a : (*cj)["agents"]) EXPECT_TRUE(a["alive"].get<bool>()) << a;

  // The seed's log: handshakes (task + result) and the exchange.
  auto log = Cluster({"log", "--json"});
  int tasks = 0, results = 0;
  std::istringstream in(log.out);
  std::string line;
  while (std::getline(in, line)) {
    auto e = ParseJson(line);
    ASSERT_TRUE(e.ok()) << line;
    EXPECT_EQ((*e)["id"].get<std::string>().size(), 36u);
    EXPECT_EQ((*e)["timestamp"].get<std::string>()[4], '-');
    tasks += (*e)["type"] == "task" ? 1 : 0;
    results += (*e)["type"] == "result" ? 1 : 0;
  }
  EXPECT_EQ(tasks, 6);
  EXPECT_EQ(results, 6);
  EXPECT_NE(Cluster({"log"}).out.find("grand_boss -> middle_manager [task] split the work please"), std::string::npos);

  // The agents are members of the team named after the cluster.
  auto team = testing::RunMates(dir_.path(), {"team", "show", session_});
  EXPECT_NE(team.out.find("testing_specialist"), std::string::npos) << team.out;

  auto down = Cluster({"down"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_FALSE(ServerAlive());
  EXPECT_FALSE(AgentsRunning());
  EXPECT_FALSE(fs::exists(SocketFile())) << SocketFile();  // tmux leaves it; down does not
  EXPECT_NE(Cluster({"status"}).out.find(": down"), std::string::npos);
  EXPECT_EQ(Cluster({"send", "grand_boss", "hi"}).exit_code, 1);
}

// A cluster brought up from one folder (-c) that works in another: its
// team lives where it works, and from the folder it was brought up in,
// `status --team` finds it there (it said "no team" before); a team not
// the cluster's is still not found, nor is it from any other folder.
TEST_F(ClusterTest, ItsTeamIsFoundFromTheFolderItWasBroughtUpIn) {
  fs::create_directories(dir_.path() / "proj");
  Write(1, {}, 20, "proj");
  testing::TempDir from, elsewhere;
  const std::string config = (dir_.path() / "cc.yaml").string();
  auto up = testing::RunMates(from.path(), {"cluster", "up", "-c", config});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto st = testing::RunMates(from.path(), {"status", "--team", session_});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("team " + session_ + " — its members are a tmux cluster's panes"), std::string::npos)
      << st.out;
  EXPECT_NE(st.out.find("grand_boss"), std::string::npos) << st.out;
  auto json = testing::RunMates(from.path(), {"status", "--team", session_, "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  auto other = testing::RunMates(from.path(), {"status", "--team", "nope"});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_EQ(other.err.rfind("mates: error: no team 'nope' in " + from.path().string(), 0), 0u) << other.err;
  auto away = testing::RunMates(elsewhere.path(), {"status", "--team", session_});
  EXPECT_EQ(away.exit_code, 1);
  EXPECT_NE(away.err.find("no team '" + session_ + "' in " + elsewhere.path().string()), std::string::npos)
      << away.err;
  EXPECT_EQ(testing::RunMates(from.path(), {"cluster", "down"}).exit_code, 0);
  EXPECT_FALSE(ServerAlive());
}

// What `up` prints to go on with, each line run as printed (DESIGN §21):
// from another folder, through sh, with `mates` on the PATH; AGENT TEXT
// filled in, attach on a terminal (script(1)) where it stays attached.
TEST_F(ClusterTest, TheFollowUpsUpPrintsWorkAsPrinted) {
  Write(2);
  auto up = Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  std::vector<std::string> next;
  std::istringstream in(up.out.substr(up.out.find("from here:\n")));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  mates cluster ", 0) == 0) next.push_back(line.substr(2));
  }
  ASSERT_EQ(next.size(), 5u) << up.out;
  const std::string path = fs::path(testing::MatesBinary()).parent_path().string() + ":/usr/bin:/bin";
  auto sh = [&](const std::string& line) {
    return testing::Run({"env", "-C", "/", "PATH=" + path, "TERM=xterm", "sh", "-c", line}, 30);
  };
  const std::string send = next[0];
  ASSERT_EQ(send.substr(send.size() - 11), " AGENT TEXT") << send;
  auto sent = sh(send.substr(0, send.size() - 10) + "middle_manager 'split the work please'");
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  EXPECT_NE(sent.out.find("middle_manager got 21 bytes"), std::string::npos) << sent.out;
  auto status = sh(next[1]);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("middle_manager"), std::string::npos) << status.out;
  auto log = sh(next[2]);
  EXPECT_NE(log.out.find("-> middle_manager [task] split the work please"), std::string::npos) << log.out;
  // attach takes the terminal and keeps it until the person detaches.
  auto attach = sh("timeout 3 script -qec \"" + next[3] + "\" /dev/null >/dev/null; echo $?");
  EXPECT_EQ(attach.out, "124\n") << next[3] << attach.err;
  auto down = sh(next[4]);
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_FALSE(ServerAlive());
}

// A first-time user's pane whose command is missing, or exits at once:
// `up` said nothing for the whole startup timeout. Now a missing command
// is refused before anything starts, and a pane that exits is reported at
// once with its status and what it printed; status says `failed`.
TEST_F(ClusterTest, APaneThatCannotStartIsReportedAtOnce) {
  Write(2, {}, /*startup_timeout=*/120);
  std::string yaml = testing::ReadAll(dir_.path() / "cc.yaml");
  std::string missing = yaml + "    command: no-such-agent-cli --flag\n";
  testing::WriteAll(dir_.path() / "cc.yaml", missing);
  auto r = Cluster({"up"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("middle_manager: no-such-agent-cli: command not found on PATH"), std::string::npos) << r.err;
  EXPECT_FALSE(ServerAlive());

  // A missing Claude Code is found before anything is written for it: its
  // first-run answers (in its config file) wait until it can run.
  const fs::path claude_dir = dir_.path() / "claude-config";
  testing::WriteAll(dir_.path() / "cc.yaml", yaml + "    command: claude --verbose\n");
  r = testing::RunMates(dir_.path(), {"cluster", "up", "-c", (dir_.path() / "cc.yaml").string()},
                        {"CLAUDE_CONFIG_DIR=" + claude_dir.string(), testing::PathOf({"tmux", "sh", "bash"})});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("middle_manager: claude: command not found on PATH (install it: npm install -g "
                       "@anthropic-ai/claude-code, or set"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(claude_dir / ".claude.json")) << "up edited Claude Code's config before finding it missing";
  EXPECT_FALSE(ServerAlive());

  testing::WriteAll(dir_.path() / "cc.yaml",
                    yaml + "    command: \"bash -c 'echo cannot start: no model configured; exit 3'\"\n");
  auto t0 = std::chrono::steady_clock::now();
  r = Cluster({"up"});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_LT(took, 60) << "up waited for the 120 s startup timeout";
  const std::string why = "middle_manager's command (bash) exited with status 3 before its prompt showed; it printed: "
                          "cannot start: no model configured";
  EXPECT_NE(r.out.find(why) == std::string::npos ? r.err.find(why) : 0, std::string::npos) << r.out << r.err;
  auto st = Cluster({"status"});
  EXPECT_NE(st.out.find("cluster " + session_ + ": failed"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("middle_manager  %1  failed (exit 3)"), std::string::npos) << st.out;
  // What it printed, in status too, every time it is asked.
  EXPECT_NE(st.out.find("exited with status 3; it printed: cannot start: no model configured"), std::string::npos)
      << st.out;
  auto js = Cluster({"status", "--json"});
  auto j = ParseJson(js.out);
  ASSERT_TRUE(j.ok()) << js.out;
  EXPECT_EQ((*j)["state"], "failed");
  EXPECT_EQ((*j)["agents"][1]["exit_status"], 3);
  EXPECT_NE((*j)["agents"][1]["error"].get<std::string>().find("it printed: cannot start"), std::string::npos)
      << j->dump();
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
}

TEST_F(ClusterTest, MarkersInTheInputOrInOldScrollbackAreNotReplies) {
  Write(1, {{"grand_boss", "--banner-marker, --delay-ms, '400'"}});
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  auto t0 = std::chrono::steady_clock::now();
  std::string text = "end your answer with GRAND BOSS OK\nlike this: GRAND BOSS OK";
  auto r = Cluster({"send", "grand_boss", text});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fnv " + Hex(Fnv(text))), std::string::npos) << r.out;
  EXPECT_GE(ms, 400);  // the real reply, not the echo or the banner
}

TEST_F(ClusterTest, NoMarkerInTimeIsAnErrorAndLogged) {
  Write(1, {{"grand_boss", "--no-marker"}}, 1.5);
  auto up = Cluster({"up"});
  EXPECT_EQ(up.exit_code, 1);  // the handshake itself times out…
  EXPECT_NE(up.out.find("grand_boss: NOT ready"), std::string::npos) << up.out;
  auto r = Cluster({"send", "--timeout", "1", "grand_boss", "anyone there?"});  // …and so does a send
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no 'GRAND BOSS OK' from grand_boss in time"), std::string::npos) << r.err;
  EXPECT_NE(Cluster({"log"}).out.find("grand_boss -> user [error] no 'GRAND BOSS OK'"), std::string::npos);
  // Its state says so until an exchange succeeds (DESIGN §20), never idle.
  auto st = Cluster({"status"});
  EXPECT_NE(st.out.find("grand_boss  %0  error"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find("no 'GRAND BOSS OK' from grand_boss in time"), std::string::npos) << st.out;
  auto js = ParseJson(Cluster({"status", "--json"}).out);
  ASSERT_TRUE(js.ok());
  EXPECT_NE((*js)["agents"][0]["error"].get<std::string>().find("in time"), std::string::npos) << js->dump();
  EXPECT_TRUE((*js)["agents"][0]["error_at"].is_string()) << js->dump();
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
  EXPECT_FALSE(AgentsRunning());
}

TEST_F(ClusterTest, EnterIsNotTypedBeforeTheCliIsReady) {
  Write(1, {{"grand_boss", "--start-delay-ms, '1500'"}});
  auto up = Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto r = Cluster({"send", "grand_boss", "still there?"});
  EXPECT_NE(r.out.find("fnv " + Hex(Fnv("still there?"))), std::string::npos) << r.out;
}

TEST_F(ClusterTest, FivePanesAtOnceAnyTextArrivesIntact) {
  Write(5);
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  std::string long_text;
  for (int i = 0; long_text.size() < 10000; ++i) long_text += "word" + std::to_string(i) + " ";
  std::vector<std::string> texts = {
      "quotes ' \" ` $HOME $(rm -rf /) ; && | \\ done",
      "unicode: 日本語のテキスト, émigré, emoji 🚀",
      "three\nlines\nof text",
      long_text,
      "tabs\tand  spaces   kept",
  };
  std::vector<testing::CommandResult> results(5);
  std::vector<std::thread> threads;
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&, i] { results[i] = Cluster({"send", kSeedAgents[i][0], texts[i]}); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(results[i].exit_code, 0) << results[i].err;
    EXPECT_NE(results[i].out.find(std::string(kSeedAgents[i][0]) + " got " + std::to_string(texts[i].size()) +
                                  " bytes"),
              std::string::npos)
        << i << ": " << results[i].out;
    EXPECT_NE(results[i].out.find("fnv " + Hex(Fnv(texts[i]))), std::string::npos) << i << ": " << results[i].out;
  }
}

// The bridge: a message to a pane agent's inbox is typed into its pane by
// the router, and the reply comes back to the sender's inbox.
TEST_F(ClusterTest, TheRouterDeliversInboxMessagesAndRoutesReplies) {
  Write(2);
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  auto sent = testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "middle_manager", "plan the release"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  // A person sends as `user`; the pane agent's answer comes back to user's inbox.
  auto inbox = testing::RunMates(dir_.path(), {"inbox", "--team", session_, "user", "--wait", "20"});
  ASSERT_EQ(inbox.exit_code, 0) << inbox.err;
  EXPECT_NE(inbox.out.find("middle_manager"), std::string::npos) << inbox.out;
  std::string typed = "Message from user (message): plan the release";
  EXPECT_NE(inbox.out.find("fnv " + Hex(Fnv(typed))), std::string::npos) << inbox.out;
  EXPECT_NE(Cluster({"log"}).out.find("user -> middle_manager [task] " + typed), std::string::npos);
  // A command of the person's own records no usage mates reads: its spend
  // is said to be unknown, not shown as none (its activity is the router's).
  std::string status;
  EXPECT_TRUE(testing::WaitUntil([&] {
    status = testing::RunMates(dir_.path(), {"status", "--team", session_}).out;
    return status.find("usage unknown (") != std::string::npos;
  }, 10)) << status;
  EXPECT_NE(status.find("middle_manager: its command records no usage mates reads"), std::string::npos) << status;
  auto usage = testing::RunMates(dir_.path(), {"usage", "--team", session_});
  EXPECT_NE(usage.out.find("unknown: its command records no usage mates reads"), std::string::npos) << usage.out;
  auto usage_json = ParseJson(testing::RunMates(dir_.path(), {"usage", "--team", session_, "--json"}).out);
  ASSERT_TRUE(usage_json.ok());
  EXPECT_EQ((*usage_json)["agents"][0]["unknown"], "its command records no usage mates reads") << *usage_json;

  // Between two pane agents: the answer is brought back into the sender's
  // pane, and what the sender says to it is not routed on (no ping-pong).
  sent = testing::RunMates(dir_.path(), {"send", "--team", session_, "--from", "grand_boss", "--to", "middle_manager",
                                         "status?"});
  ASSERT_EQ(sent.exit_code, 0) << sent.err;
  const std::string answer_line = "middle_manager -> grand_boss [task] Reply from middle_manager to your message: ";
  std::string log;
  Deadline deadline = DeadlineIn(20);
  for (;;) {  // the log is the only trace of it (nobody's inbox gets it)
    log = Cluster({"log"}).out;
    if (log.find("grand_boss -> middle_manager [result]") != std::string::npos || Expired(deadline)) break;
  }
  EXPECT_NE(log.find(answer_line), std::string::npos) << log;
  // A message the user sends afterwards is the next thing middle_manager sees.
  sent = testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "middle_manager", "and now?"});
  inbox = testing::RunMates(dir_.path(), {"inbox", "--team", session_, "user", "--wait", "20"});
  ASSERT_EQ(inbox.exit_code, 0) << inbox.err;
  log = Cluster({"log"}).out;
  size_t tasks = 0;
  for (size_t at = log.find("-> middle_manager [task]"); at != std::string::npos;
       at = log.find("-> middle_manager [task]", at + 1)) {
    ++tasks;
  }
  EXPECT_EQ(tasks, 4u) << log;  // handshake, user's, grand_boss's, user's again: no answer to an answer
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
  EXPECT_FALSE(AgentsRunning());
  EXPECT_NE(testing::Run({"pgrep", "-f", "cluster route -c " + (dir_.path() / "cc.yaml").string()}).exit_code, 0);
}

// `sandbox: true`: the pane agent runs in the sandbox — it writes only its
// work root, cannot edit the cluster's state the router types by, and its
// `mates` reaches the team through the router's gate as itself only.
TEST_F(ClusterTest, ASandboxedPaneAgentTouchesOnlyItsWorkAndSpeaksAsItself) {
  Write(2);
  std::string y = testing::ReadAll(dir_.path() / "cc.yaml");
  const std::string at = "    pane_index: 0\n";
  y.insert(y.find(at) + at.size(), "    sandbox: true\n");
  testing::WriteAll(dir_.path() / "cc.yaml", y);
  auto up = Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  // The router serves the gate once it runs.
  const fs::path gate = dir_.path() / ".mates-cluster" / session_ / "sandbox/gate" / (session_ + "+grand_boss") / "s";
  ASSERT_TRUE(testing::WaitUntil([&] { return fs::exists(gate); }, 20));
  const fs::path outside = fs::path(std::getenv("HOME")) / ("mates-cluster-escape-" + session_);
  auto r = Cluster({"send", "grand_boss",
                    "!echo x > " + outside.string() + " || echo write-refused; echo x > work.txt && echo inside-ok; "
                    "echo x >> .mates-cluster/" + session_ + "/state.json || echo state-refused; "
                    "mates send --to middle_manager hello-from-gb; echo own=$?; "
                    "mates send --from middle_manager --to grand_boss forged; echo forged=$?"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* said : {"write-refused", "inside-ok", "state-refused", "own=0", "forged=2"}) {
    EXPECT_NE(r.out.find(said), std::string::npos) << said << "\n" << r.out;
  }
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_TRUE(fs::exists(dir_.path() / "work.txt"));
  const std::string log = testing::ReadAll(dir_.path() / ".teams" / session_ / "messages.jsonl");
  EXPECT_NE(log.find("hello-from-gb"), std::string::npos) << log;
  EXPECT_EQ(log.find("forged"), std::string::npos) << log;
  // The unsandboxed agent is not: the same write works from its pane.
  auto free = Cluster({"send", "middle_manager", "!echo x > " + outside.string() + " && echo write-ok"});
  EXPECT_NE(free.out.find("write-ok"), std::string::npos) << free.out;
  std::error_code ec;
  fs::remove(outside, ec);
  // Each agent's mode, where a person looks.
  auto status = Cluster({"status", "--json"});
  auto j = ParseJson(status.out);
  ASSERT_TRUE(j.ok()) << status.out;
  for (const auto& agent : (*j)["agents"]) {
    EXPECT_EQ(agent["sandbox"], agent["name"] == "grand_boss" ? "workspace" : "off") << agent;
  }
  EXPECT_NE(Cluster({"status"}).out.find("sandbox: workspace"), std::string::npos);
  // state.json is read like input: a sandbox section of the wrong shapes
  // is taken as none, never a crash.
  const fs::path state = dir_.path() / ".mates-cluster" / session_ / "state.json";
  auto doc = ParseJson(testing::ReadAll(state));
  ASSERT_TRUE(doc.ok());
  (*doc)["sandbox"] = {{"mode", 7}, {"agents", "grand_boss"}, {"network_allow", {{"x", 1}}}};
  testing::WriteAll(state, DumpJson(*doc));
  auto bent = Cluster({"status", "--json"});
  EXPECT_EQ(bent.exit_code, 0) << bent.err;
  EXPECT_NE(bent.out.find("\"sandbox\":\"off\""), std::string::npos) << bent.out;
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
}

// `worktree: true`: the pane agent starts in its own worktree, and its task
// completed from the pane (`mates tasks update`) is merged by the router's
// merge queue onto the team's target, as a hosted teammate's would be.
TEST_F(ClusterTest, APaneAgentInItsOwnWorktreeMergesThroughTheQueue) {
  ASSERT_TRUE(CommittedRepository("README", "project\n"));
  Write(1);
  testing::WriteAll(dir_.path() / "cc.yaml", testing::ReadAll(dir_.path() / "cc.yaml") + "    worktree: true\n");
  auto up = Cluster({"up"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  const fs::path tree = dir_.path() / ".mates" / "worktrees" / session_ / "grand_boss";
  ASSERT_TRUE(fs::exists(tree / "README"));
  EXPECT_NE(Git({"worktree", "list"}).out.find(tree.string()), std::string::npos);
  auto cwd = testing::Run({"tmux", "-L", "mates-" + session_, "display", "-p", "-t", session_ + ":0.0",
                           "#{pane_current_path}"});
  EXPECT_EQ(cwd.out, tree.string() + "\n") << "the pane runs in its worktree";
  auto team = testing::RunMates(dir_.path(), {"team", "show", session_, "--json"});
  EXPECT_NE(team.out.find("\"worktree\": true"), std::string::npos) << team.out;

  auto mates = [&](std::vector<std::string> args) {
    std::vector<std::string> full = {"tasks", "--team", session_};
    full.insert(full.end(), args.begin(), args.end());
    return testing::RunMates(dir_.path(), full);
  };
  ASSERT_EQ(mates({"create", "write notes"}).exit_code, 0);
  ASSERT_EQ(mates({"claim", "1", "--owner", "grand_boss"}).exit_code, 0);
  testing::WriteAll(tree / "notes.txt", "from the pane\n");  // what the pane agent wrote
  auto done = mates({"update", "1", "--status", "completed", "--as", "grand_boss"});
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.out.find("Task #1 submitted for merge: merge request 1"), std::string::npos) << done.out;
  Board board(Workspace(dir_.path()).TasksDir(session_));
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto t = board.Get(1);
    return t.ok() && t->status == TaskStatus::kCompleted;
  }, 30)) << testing::RunMates(dir_.path(), {"merges", "--team", session_, "show", "1"}).out;
  EXPECT_EQ(Git({"show", "mates/" + session_ + ":notes.txt"}).out, "from the pane\n");
  EXPECT_EQ(Git({"log", "-1", "--format=%s", "mates/grand_boss@" + session_}).out, "Task #1: write notes\n");
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
}

// A pane agent runs no tool of the host's, yet its worktree is in the
// conflict forecast (DESIGN §30): the lead's host looks at it while its
// activity says it works, and once it has worked since the last look.
// Here it sets the line a hosted teammate sets too: both are told, and the
// forecast is gone once the pane agent's next turn has undone it.
TEST_F(ClusterTest, APaneAgentsWorktreeIsInTheConflictForecast) {
  const std::string ten = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  ASSERT_TRUE(CommittedRepository("shared.txt", ten));
  Write(1);
  testing::WriteAll(dir_.path() / "cc.yaml", testing::ReadAll(dir_.path() / "cc.yaml") + "    worktree: true\n");
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  const fs::path pane_tree = dir_.path() / ".mates" / "worktrees" / session_ / "grand_boss";
  ASSERT_TRUE(fs::exists(pane_tree / "shared.txt"));

  const fs::path flag = dir_.path() / "go";
  const fs::path yaml = dir_.path() / "forecast.yaml";
  testing::WriteAll(yaml, "rules:\n"
                          "  - agent: lead\n"
                          "    when: \"Go\"\n"
                          "    reply: [{type: tool_use, name: Task, input: {team_name: " + session_ +
                          ", name: w1, isolation: worktree, prompt: \"Work.\"}}]\n"
                          "  - {agent: lead, once: false, reply: [{type: text, text: \"Noted.\"}]}\n"
                          "  - agent: w1\n"
                          "    when: \"Task #(\\\\d+): set line (\\\\d+) to (\\\\S+)\"\n"
                          "    reply:\n"
                          "      - {type: tool_use, name: bash, input: {command: \"sed -i '$2s/.*/$3/' shared.txt\"}}\n"
                          "      - {type: tool_use, name: bash, input: {command: \"until [ -e " + flag.string() +
                          " ]; do sleep 0.02; done\"}}\n"
                          "      - {type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: completed}}\n"
                          "  - {agent: w1, once: false, reply: [{type: text, text: \"Done.\"}]}\n");
  ASSERT_EQ(testing::RunMates(dir_.path(), {"tasks", "--team", session_, "create", "set line 2 to one"}).exit_code, 0);
  Subprocess host = testing::StartMates(dir_.path(), {"run", "--team", session_, "--provider", "scripted", "--scenario",
                                                      yaml.string(), "--sandbox", "off", "--idle-timeout", "0", "Go"});
  const fs::path w1_tree = dir_.path() / ".mates" / "worktrees" / session_ / "w1";
  ASSERT_TRUE(testing::WaitUntil([&] { return ReadAll(w1_tree / "shared.txt").find("\none\n") != std::string::npos; },
                                 60));
  auto forecasts = [&] {
    auto st = testing::RunMates(dir_.path(), {"status", "--team", session_, "--json"});
    auto j = Json::parse(st.out, nullptr, false);
    return j.is_object() ? j.value("forecasts", Json::array()) : Json::array();
  };
  // What the pane agent wrote, in a turn of its own.
  testing::WriteAll(pane_tree / "shared.txt", "1\npane\n3\n4\n5\n6\n7\n8\n9\n10\n");
  ASSERT_EQ(testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "grand_boss", "set line 2"}).exit_code, 0);
  Json seen;
  ASSERT_TRUE(testing::WaitUntil([&] { return (seen = forecasts()).size() == 1; }, 30)) << seen.dump();
  EXPECT_EQ(seen[0]["members"], (Json{"grand_boss", "w1"})) << seen.dump();
  EXPECT_EQ(seen[0]["files"], Json{"shared.txt"}) << seen.dump();
  // Told once each: the cluster's router stands aside while the lead's
  // host forecasts.
  EXPECT_EQ(ForecastsTold(session_, "w1"), 1) << ReadAll(Workspace(dir_.path()).MessagesLogPath(session_));
  EXPECT_EQ(ForecastsTold(session_, "grand_boss"), 1);
  // Its next turn puts the line back: no conflict left.
  testing::WriteAll(pane_tree / "shared.txt", ten);
  ASSERT_EQ(testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "grand_boss", "undo it"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return (seen = forecasts()).empty(); }, 30)) << seen.dump();

  testing::WriteAll(flag, "go\n");
  auto done = host.Wait();
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(Git({"show", "mates/" + session_ + ":shared.txt"}).out, "1\none\n3\n4\n5\n6\n7\n8\n9\n10\n");
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
}

// With no lead's host, the cluster's router forecasts for its pane agents:
// two that set one line differently are both told, and the forecast is
// gone once one has put it back.
TEST_F(ClusterTest, TwoPaneAgentsOfAClusterGetTheirConflictForecast) {
  const std::string ten = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
  ASSERT_TRUE(CommittedRepository("shared.txt", ten));
  Write(2);
  std::string yaml = testing::ReadAll(dir_.path() / "cc.yaml");
  for (const char* index : {"    pane_index: 0\n", "    pane_index: 1\n"}) {
    yaml.replace(yaml.find(index), std::string(index).size(), std::string(index) + "    worktree: true\n");
  }
  testing::WriteAll(dir_.path() / "cc.yaml", yaml);
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  const fs::path trees = dir_.path() / ".mates" / "worktrees" / session_;
  auto forecasts = [&] {
    auto st = testing::RunMates(dir_.path(), {"status", "--team", session_, "--json"});
    auto j = Json::parse(st.out, nullptr, false);
    return j.is_object() ? j.value("forecasts", Json::array()) : Json::array();
  };
  // What each pane agent wrote, in a turn of its own.
  testing::WriteAll(trees / "grand_boss" / "shared.txt", "1\nboss\n3\n4\n5\n6\n7\n8\n9\n10\n");
  testing::WriteAll(trees / "middle_manager" / "shared.txt", "1\nmanager\n3\n4\n5\n6\n7\n8\n9\n10\n");
  for (const char* who : {"grand_boss", "middle_manager"}) {
    ASSERT_EQ(testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", who, "set line 2"}).exit_code, 0);
  }
  Json seen;
  ASSERT_TRUE(testing::WaitUntil([&] { return (seen = forecasts()).size() == 1; }, 30)) << seen.dump();
  EXPECT_EQ(seen[0]["members"], (Json{"grand_boss", "middle_manager"})) << seen.dump();
  EXPECT_EQ(seen[0]["files"], Json{"shared.txt"}) << seen.dump();
  EXPECT_TRUE(testing::WaitUntil([&] {
    return ForecastsTold(session_, "grand_boss") == 1 && ForecastsTold(session_, "middle_manager") == 1;
  }, 10)) << ReadAll(Workspace(dir_.path()).MessagesLogPath(session_));
  // The manager's next turn puts the line back.
  testing::WriteAll(trees / "middle_manager" / "shared.txt", ten);
  ASSERT_EQ(testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "middle_manager", "undo"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return (seen = forecasts()).empty(); }, 30)) << seen.dump();
  // Down: the router empties them as it goes.
  testing::WriteAll(trees / "middle_manager" / "shared.txt", "1\nmanager\n3\n4\n5\n6\n7\n8\n9\n10\n");
  ASSERT_EQ(testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "middle_manager", "redo"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return forecasts().size() == 1; }, 30));
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
  EXPECT_TRUE(testing::WaitUntil([&] { return forecasts().empty(); }, 10)) << forecasts().dump();
}

// A `mates run` lead in the cluster's team talks to a pane agent through
// the mailboxes, and its run waits for the answer (the pane agent owes one)
// instead of ending as soon as the lead's turn does.
TEST_F(ClusterTest, ARunLeadWaitsForAPaneAgentsAnswer) {
  Write(2);
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  auto run = testing::RunMates(dir_.path(), {"run", "--team", session_, "--provider", "scripted", "--scenario",
                                             std::string(MATES_SOURCE_DIR) + "/tests/scenarios/cluster_lead.yaml",
                                             "Ask the manager"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string typed = "Message from lead (message, plan): plan the release";
  EXPECT_NE(run.out.find("The manager answered (" + std::to_string(typed.size()) + " bytes)."), std::string::npos)
      << run.out << run.err;
  auto team = testing::RunMates(dir_.path(), {"team", "show", session_});
  EXPECT_NE(team.out.find("middle_manager"), std::string::npos);
  ASSERT_EQ(Cluster({"down"}).exit_code, 0);
  // Down: the pane agents owe nothing any more; a run does not wait on them.
  auto sent = testing::RunMates(dir_.path(), {"send", "--team", session_, "--to", "middle_manager", "anyone?"});
  ASSERT_EQ(sent.exit_code, 0);
  auto after = testing::RunMates(dir_.path(), {"run", "--team", session_, "--provider", "scripted", "--scenario",
                                               std::string(MATES_SOURCE_DIR) + "/tests/scenarios/cluster_lead.yaml",
                                               "Hello"});
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  EXPECT_NE(after.out.find("Waiting for the manager."), std::string::npos) << after.out;
}

TEST_F(ClusterTest, BadInputsAreOneClearError) {
  Write(2);
  auto r = Cluster({"send", "nobody", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no agent 'nobody'"), std::string::npos) << r.err;
  r = Cluster({"send", "grand_boss", "hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not up"), std::string::npos) << r.err;
  EXPECT_EQ(Cluster({"down"}).exit_code, 1);
  r = testing::RunMates(dir_.path(), {"cluster", "status", "-c", (dir_.path() / "missing.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no cluster config"), std::string::npos);
  testing::WriteAll(dir_.path() / "bad.yaml", "cluster: {name: x}\nagents:\n  - {name: a, pane_index: 0}\n");
  r = testing::RunMates(dir_.path(), {"cluster", "up", "-c", (dir_.path() / "bad.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("agents[0].personality_prompt_path: missing"), std::string::npos) << r.err;
  ASSERT_EQ(Cluster({"up"}).exit_code, 0);
  r = Cluster({"up"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("already up"), std::string::npos);
  // Its tmux server gone behind its back: a send says so, and nothing was
  // logged as sent.
  ASSERT_EQ(testing::Run({"tmux", "-L", "mates-" + session_, "kill-server"}).exit_code, 0);
  r = Cluster({"send", "grand_boss", "anyone there after the kill?"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not up (mates cluster up -c"), std::string::npos) << r.err;
  auto log = Cluster({"log"});
  EXPECT_NE(log.out.find("grand_boss -> mates [result]"), std::string::npos)
      << log.out;  // the handshake
  EXPECT_EQ(log.out.find("after the kill"), std::string::npos) << log.out;
  EXPECT_EQ(Cluster({"down"}).exit_code, 0);
}

}  // namespace
}  // namespace mates
