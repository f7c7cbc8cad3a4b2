#include "core/process_tree.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <vector>

#include "core/subprocess.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

bool Alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  // A zombie answers signal 0 but runs nothing.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
}

// Item 4: a tool's `setsid …&` or double-forked child survived the tool's
// timeout with PPID 1.
TEST(ProcessTreeTest, WhatLeavesTheGroupIsKilledWithTheTool) {
  TempDir dir;
  BecomeSubreaper();
  for (std::string escape : {"setsid sleep 300 & echo $! > " + dir.str() + "/pid; wait",
                             "( ( sleep 300 & echo $! > " + dir.str() + "/pid ) & ); sleep 300",
                             "setsid sh -c 'sleep 300 & echo $! > " + dir.str() + "/pid; wait' & sleep 300"}) {
    fs::remove(dir.path() / "pid");
    SubprocessOptions o;
    o.argv = {"/bin/bash", "-c", escape};
    o.timeout_s = 60;
    o.tag = NewProcessTag();
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p.ok());
    ASSERT_TRUE(testing::WaitUntil([&] { return fs::exists(dir.path() / "pid") && fs::file_size(dir.path() / "pid") > 0; }));
    pid_t escaped = std::stoi(testing::ReadAll(dir.path() / "pid"));
    ASSERT_TRUE(Alive(escaped));
    CancelToken cancel;
    cancel.Cancel();  // as a timeout or an interrupt would
    auto r = p->Wait(&cancel);
    EXPECT_TRUE(r.cancelled);
    EXPECT_TRUE(testing::WaitUntil([&] { return !Alive(escaped); }, 5)) << escape;
  }
}

TEST(ProcessTreeTest, WhatATaggedCommandLeftRunningAfterItExitedIsKilled) {
  TempDir dir;
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", "setsid sleep 300 > /dev/null 2>&1 & echo $!"};
  o.tag = NewProcessTag();
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok());
  pid_t escaped = std::stoi(r->out);
  EXPECT_TRUE(testing::WaitUntil([&] { return !Alive(escaped); }, 5));
}

// The resident memory of `pid` in bytes (0 if it is gone).
int64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// A process that holds a gigabyte takes tens of milliseconds to die after
// SIGKILL (its memory is freed first); a loaded machine can take as long
// for any process. `dd` with a 1 GiB block is one, started in the
// background of a shell that waits; returns its pid once it holds it.
pid_t StartHeavy(Subprocess& shell) {
  auto line = shell.ReadLine(DeadlineIn(10));
  if (!line.ok()) return -1;
  pid_t pid = std::stoi(*line);
  if (!testing::WaitUntil([&] { return ResidentBytes(pid) >= (int64_t{1} << 30); }, 30)) return -1;
  return pid;
}
constexpr const char* kHeavy = "dd if=/dev/zero of=/dev/null bs=1G count=1000000 2>/dev/null & echo $!; wait";

// `mates down` said "killed" of processes still freeing their memory, and
// the next look found them running: killed means gone once KillTagged
// returns.
TEST(ProcessTreeTest, WhatKillTaggedKillsIsGoneWhenItReturns) {
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", kHeavy};
  o.tag = NewProcessTag();
  auto shell = Subprocess::Start(o);
  ASSERT_TRUE(shell.ok());
  pid_t heavy = StartHeavy(*shell);
  ASSERT_GT(heavy, 0) << "dd never held its block";
  EXPECT_EQ(KillTagged(o.tag), 2);  // the shell and dd
  EXPECT_FALSE(Alive(heavy)) << "killed, and still running";
  EXPECT_EQ(shell->Wait().term_signal, SIGKILL);
}

// The same for what a command leaves in its process group: gone when the
// command's Wait returns.
TEST(ProcessTreeTest, WhatACommandLeftInItsGroupIsGoneWhenItsWaitReturns) {
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", kHeavy};
  auto shell = Subprocess::Start(o);
  ASSERT_TRUE(shell.ok());
  pid_t heavy = StartHeavy(*shell);
  ASSERT_GT(heavy, 0) << "dd never held its block";
  CancelToken cancel;
  cancel.Cancel();
  EXPECT_TRUE(shell->Wait(&cancel).cancelled);
  EXPECT_FALSE(Alive(heavy)) << "killed with its group, and still running";
  EXPECT_TRUE(WaitProcessExit(heavy, 0));
  EXPECT_TRUE(AwaitGroupExit(shell->pid(), 0));
}

TEST(ProcessTreeTest, StartTimesTellAProcessFromOneThatReusedItsPid) {
  EXPECT_GT(ProcessStartTime(::getpid()), 0u);
  EXPECT_EQ(ProcessStartTime(0x7ffffff0), 0u);
  EXPECT_TRUE(ProcessLives(::getpid(), ProcessStartTime(::getpid())));
  EXPECT_FALSE(ProcessLives(::getpid(), ProcessStartTime(::getpid()) + 1)) << "a reused pid is not the process";
  // A child that exited and is not reaped yet (a zombie) does not live.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  uint64_t started = ProcessStartTime(child);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);  // exited, not reaped
  EXPECT_FALSE(ProcessLives(child, started));
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
}

// Item 4: after a host's SIGKILL its tools' trees ran on while the resumed
// team ran the same tasks again. The .procs journal lets the next host
// kill them — and nothing else.
TEST(ProcessTreeTest, LeftoversOfADeadHostAreKilledButAReusedPidIsNot) {
  TempDir dir;
  // A "dead host": a process that started a tagged tree and wrote the
  // journal, then was SIGKILLed.
  fs::path journal = dir.path() / "alice.procs";
  std::string tag = "m1.1-" + std::to_string(::getpid()) + "-leftover";
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", "setsid sleep 300 & echo $!; sleep 300"};
  o.tag = tag;
  auto tree = Subprocess::Start(o);
  ASSERT_TRUE(tree.ok());
  pid_t escaped = std::stoi(*tree->ReadLine(DeadlineIn(10)));
  ASSERT_TRUE(ProcessJournal(journal).Add({tree->pid(), ProcessStartTime(tree->pid()), tag}).ok());
  // And a stale record: a pid now used by an unrelated process (this test).
  std::string stale = "{\"pid\":" + std::to_string(::getpid()) + ",\"start_time\":1,\"tag\":\"m2.2-stale\"}\n";
  {
    std::ofstream f(journal, std::ios::app);
    f << stale << "not json\n";
  }
  auto alive = ProcessJournal(journal).KillLeftovers();
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(*alive, 1);
  EXPECT_TRUE(testing::WaitUntil([&] { return !Alive(escaped); }, 5));
  auto r = tree->Wait();
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_FALSE(fs::exists(journal));
  EXPECT_TRUE(Alive(::getpid()));
}

// A check started, and the host killed before it recorded the check's pid:
// the check ran on after the next host "cleaned up" (WorktreeTest under
// load). A record is added with its tag before the tree starts; the tag
// alone is enough to kill by.
TEST(ProcessTreeTest, ATreeListedByItsTagAloneIsKilledToo) {
  TempDir dir;
  fs::path journal = dir.path() / "checks.procs";
  const std::string tag = "m1.1-" + std::to_string(::getpid()) + "-unstarted";
  ASSERT_TRUE(ProcessJournal(journal).Add({0, 0, tag}).ok());
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", kHeavy};
  o.tag = tag;
  auto shell = Subprocess::Start(o);
  ASSERT_TRUE(shell.ok());
  pid_t heavy = StartHeavy(*shell);
  ASSERT_GT(heavy, 0) << "dd never held its block";
  auto alive = ProcessJournal(journal).KillLeftovers();
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(*alive, 1);
  EXPECT_FALSE(Alive(heavy));
  EXPECT_EQ(shell->Wait().term_signal, SIGKILL);
  EXPECT_FALSE(fs::exists(journal));
}

// Started gives the tag's record its root; Remove takes it by its tag.
TEST(ProcessTreeTest, ARecordGetsItsRootOnceStartedAndGoesByItsTag) {
  TempDir dir;
  fs::path journal = dir.path() / "a.procs";
  ProcessJournal procs(journal);
  ASSERT_TRUE(procs.Add({0, 0, "m1.1-a"}).ok());
  ASSERT_TRUE(procs.Add({0, 0, "m1.1-b"}).ok());
  ASSERT_TRUE(procs.Started("m1.1-a", 4242, 77).ok());
  std::string listed = testing::ReadAll(journal);
  EXPECT_NE(listed.find(R"({"pid":4242,"start_time":77,"tag":"m1.1-a"})"), std::string::npos) << listed;
  EXPECT_NE(listed.find(R"({"pid":0,"start_time":0,"tag":"m1.1-b"})"), std::string::npos) << listed;
  ASSERT_TRUE(procs.Remove("m1.1-a").ok());
  listed = testing::ReadAll(journal);
  EXPECT_EQ(listed.find("m1.1-a"), std::string::npos) << listed;
  ASSERT_TRUE(procs.Remove("m1.1-b").ok());
  EXPECT_FALSE(fs::exists(journal)) << "an empty list is no file";
}

// RunListed: the tree is in the list while it runs (with its root), and
// the list is gone once it has ended; without a tag it is refused.
TEST(ProcessTreeTest, ARunListedIsInTheListWhileItRunsOnly) {
  TempDir dir;
  const ProcessJournal procs(dir.path() / "a.procs");
  SubprocessOptions o;
  o.tag = NewProcessTag();
  // The root (this shell) is added once it has started, so the child may
  // run before: it waits for its own pid in the list (at most 10 s), then
  // shows the list it saw.
  const std::string list = (dir.path() / "a.procs").string();
  o.argv = {"/bin/sh", "-c",
            "echo $$; i=0; until grep -q \"\\\"pid\\\":$$,\" '" + list +
                "' || [ $i -ge 2000 ]; do i=$((i+1)); sleep 0.005; done; cat '" + list + "'"};
  auto r = RunListed(o, &procs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string root = r->out.substr(0, r->out.find('\n'));
  EXPECT_NE(r->out.find("{\"pid\":" + root + ",\"start_time\":"), std::string::npos)
      << "its root is not listed: " << r->out;
  EXPECT_NE(r->out.find("\"tag\":\"" + o.tag + "\""), std::string::npos) << r->out;
  EXPECT_EQ(r->out.find("\"pid\":0,"), std::string::npos)
      << "listed twice, once without its root: " << r->out;
  EXPECT_FALSE(fs::exists(dir.path() / "a.procs"));
  // A program that cannot start leaves nothing listed either.
  o.argv = {"/nonexistent/program"};
  auto failed = RunListed(o, &procs);
  EXPECT_TRUE(!failed.ok() || failed->exit_code != 0);
  EXPECT_FALSE(fs::exists(dir.path() / "a.procs"));
  o.tag.clear();
  auto untagged = RunListed(o, &procs);
  ASSERT_FALSE(untagged.ok());
  EXPECT_EQ(untagged.status().code(), StatusCode::kInvalidArgument);
}

// Tags are numbered: ending call 1 killed the running calls 10 to 19 (a
// tag matched as a prefix). A whole tag matches itself only; a host's
// prefix ("…-") matches all its tags.
TEST(ProcessTreeTest, AWholeTagIsNotThePrefixOfTheNextTenTags) {
  const std::string host = "m1.1-" + std::to_string(::getpid()) + "x-";
  std::vector<Subprocess> trees;
  for (const char* n : {"1", "10"}) {
    SubprocessOptions o;
    o.argv = {"/bin/sh", "-c", "echo $$; exec sleep 300"};
    o.tag = host + n;
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p.ok());
    trees.push_back(std::move(*p));
  }
  std::vector<pid_t> pids;
  for (auto& t : trees) pids.push_back(std::stoi(*t.ReadLine(DeadlineIn(10))));
  EXPECT_EQ(KillTagged(host + "1"), 1);
  EXPECT_FALSE(Alive(pids[0]));
  EXPECT_TRUE(Alive(pids[1])) << "tag -10 was killed for tag -1";
  EXPECT_EQ(KillTagged(host), 1);
  EXPECT_FALSE(Alive(pids[1]));
  for (auto& t : trees) EXPECT_EQ(t.Wait().term_signal, SIGKILL);
}

// A list is a file: one naming a host's prefix, or a root no pid can be,
// kills nothing.
TEST(ProcessTreeTest, AHostileListKillsNothing) {
  TempDir dir;
  const std::string host = "m1.1-" + std::to_string(::getpid()) + "h-";
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "echo $$; exec sleep 300"};
  o.tag = host + "1";
  auto tree = Subprocess::Start(o);
  ASSERT_TRUE(tree.ok());
  pid_t pid = std::stoi(*tree->ReadLine(DeadlineIn(10)));
  fs::path journal = dir.path() / "x.procs";
  {
    std::ofstream f(journal);
    f << "{\"pid\":0,\"start_time\":0,\"tag\":\"" << host << "\"}\n"
      << "{\"pid\":" << (int64_t{1} << 32) + pid << ",\"start_time\":" << ProcessStartTime(pid)
      << ",\"tag\":\"m9.9-none\"}\n"
      << "{\"pid\":-5,\"start_time\":0,\"tag\":\"" << o.tag << "\"}\n"
      << std::string(1000, '\0') << "\n[[[[[[[[[[\n";
  }
  auto alive = ProcessJournal(journal).KillLeftovers();
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(*alive, 0);
  EXPECT_TRUE(Alive(pid));
  tree->Signal(SIGKILL);
  EXPECT_EQ(tree->Wait().term_signal, SIGKILL);
}

}  // namespace
}  // namespace mates
