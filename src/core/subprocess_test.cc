#include "core/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "support/test_util.h"

namespace mates {
namespace {

SubprocessResult Sh(const std::string& script, double timeout = 10, size_t cap = 1 << 20) {
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", script};
  o.timeout_s = timeout;
  o.max_output = cap;
  auto r = RunSubprocess(o);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : SubprocessResult{};
}

// Whether any process has `marker` in its command line.
bool Alive(const std::string& marker) {
  auto r = testing::Run({"pgrep", "-f", marker});
  return r.exit_code == 0;
}

TEST(SubprocessTest, ExitCodeAndBothStreams) {
  auto r = Sh("echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(SubprocessTest, AnInteractiveChildIsAConversation) {
  testing::TempDir dir;
  SubprocessOptions o;
  // Echoes each line back; says on stderr that it ends.
  o.argv = {"/bin/bash", "-c", "while IFS= read -r l; do echo \"got $l\"; done; echo bye >&2"};
  o.interactive = true;
  o.stderr_path = (dir.path() / "err.log").string();
  o.timeout_s = 5;
  auto p = Subprocess::Start(o);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WriteStdin("one\ntwo\n", DeadlineIn(5)).ok());
  EXPECT_EQ(*p->ReadLine(DeadlineIn(5)), "got one");
  EXPECT_EQ(*p->ReadLine(DeadlineIn(5)), "got two");
  // A line over the bound is refused once and skipped; the next one reads.
  ASSERT_TRUE(p->WriteStdin(std::string(100000, 'x') + "\nshort\n", DeadlineIn(5)).ok());
  EXPECT_EQ(p->ReadLine(DeadlineIn(5), 1000).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*p->ReadLine(DeadlineIn(5), 1000), "got short");
  // A cancel stops a read that waits.
  CancelToken cancel;
  cancel.Cancel();
  EXPECT_EQ(p->ReadLine(std::nullopt, 1000, &cancel).status().code(), StatusCode::kCancelled);
  // Wait() closes stdin: the child ends; its stderr went to the file.
  SubprocessResult r = p->Wait();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(testing::ReadAll(dir.path() / "err.log"), "bye\n");
}

TEST(SubprocessTest, WritingToAChildThatIsGoneIsAnErrorNotADeath) {
  SubprocessOptions o;
  o.argv = {"/bin/true"};
  o.interactive = true;
  auto p = Subprocess::Start(o);
  ASSERT_TRUE(p.ok());
  // Its stdout ends when it does; then its stdin has no reader.
  EXPECT_EQ(p->ReadLine(DeadlineIn(5)).status().code(), StatusCode::kNotFound);
  Status s;
  for (int i = 0; i < 100 && s.ok(); ++i) s = p->WriteStdin(std::string(4096, 'x'), DeadlineIn(5));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << "SIGPIPE would have ended this test";
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "no SIGPIPE left pending";
  EXPECT_EQ(p->Wait().exit_code, 0);
}

TEST(SubprocessTest, StdinIsDevNullOrTheGivenText) {
  EXPECT_EQ(Sh("cat; echo done").out, "done\n");
  SubprocessOptions o;
  o.argv = {"cat"};
  o.stdin_data = std::string(200000, 'x');  // larger than a pipe buffer
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out.size(), 200000u);
}

TEST(SubprocessTest, EnvironmentAndFolderAreTheGivenOnes) {
  testing::TempDir dir;
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "echo \"$ONLY:$HOME\"; pwd"};
  o.env = std::vector<std::string>{"ONLY=this", "PATH=/usr/bin:/bin"};
  o.cwd = dir.str();
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "this:\n" + fs::canonical(dir.path()).string() + "\n");
}

TEST(SubprocessTest, TimeoutKillsTheWholeGroupEvenPipeHolders) {
  std::string marker = "mates_sub_test_" + std::to_string(::getpid()) + "_a";
  auto start = std::chrono::steady_clock::now();
  // A grandchild in the background keeps stdout open; the child sleeps.
  auto r = Sh("(exec -a " + marker + " sleep 30) & exec -a " + marker + " sleep 30", 0.3);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_FALSE(Alive(marker));
}

TEST(SubprocessTest, ABackgroundedProcessDoesNotHangTheCallerNorOutliveIt) {
  std::string marker = "mates_sub_test_" + std::to_string(::getpid()) + "_b";
  auto start = std::chrono::steady_clock::now();
  auto r = Sh("(exec -a " + marker + " sleep 30) & echo started", 20);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "started\n");
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_FALSE(Alive(marker));
}

TEST(SubprocessTest, HugeOutputKeepsHeadAndTailAndSaysTheCut) {
  auto r = Sh("echo FIRST; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo LAST", 20, 10000);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("FIRST\n", 0), 0u);
  EXPECT_NE(r.out.find("LAST\n"), std::string::npos);
  EXPECT_NE(r.out.find("bytes cut"), std::string::npos);
  EXPECT_GT(r.out_dropped, 4900000u);
  EXPECT_LT(r.out.size(), 10100u);
}

TEST(SubprocessTest, CancelStopsIt) {
  CancelToken cancel;
  SubprocessOptions o;
  o.argv = {"sleep", "30"};
  auto p = Subprocess::Start(o);
  ASSERT_TRUE(p.ok());
  std::thread t([&] {
    // Cancel once the child is surely running: it answered a signal 0.
    while (::kill(p->pid(), 0) != 0) std::this_thread::yield();
    cancel.Cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto r = p->Wait(&cancel);
  t.join();
  EXPECT_TRUE(r.cancelled);
  // The token wakes the wait (an eventfd), no tick needed.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(SubprocessTest, UnknownProgramIsNotFound) {
  SubprocessOptions o;
  o.argv = {"definitely-not-a-program-xyz"};
  EXPECT_EQ(RunSubprocess(o).status().code(), StatusCode::kNotFound);
}

TEST(SubprocessTest, ReadLineThenWaitKeepsTheRest) {
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "echo one; echo two; echo three"};
  auto p = Subprocess::Start(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p->ReadLine(DeadlineIn(5)), "one");
  auto r = p->Wait();
  EXPECT_EQ(r.out, "two\nthree\n");
}

}  // namespace
}  // namespace mates
