// AttachHub (host/attach.h) over a real socket pair: a character cut
// between two streamed pieces arrives whole, a terminal that does not read
// holds no agent up and is told what it missed, its lines reach the
// actions, and more terminals than allowed are refused.
#include "host/attach.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/unix_socket.h"
#include "support/test_util.h"

namespace mates::host {
namespace {

// One end for the hub, the other for the test as the terminal.
std::pair<ScopedFd, ScopedFd> Pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  return {ScopedFd(fds[0]), ScopedFd(fds[1])};
}

struct Terminal {
  explicit Terminal(ScopedFd end) : fd(std::move(end)), lines(fd.get()) {}
  Json Next() {
    std::string line;
    if (lines.Next(&line, 8 << 20, DeadlineIn(10)) != SocketLines::Got::kLine) return nullptr;
    auto j = ParseJson(line);
    return j.ok() ? *j : Json(nullptr);
  }
  ScopedFd fd;
  SocketLines lines;
};

AttachActions Counting(std::atomic<int>* said, std::atomic<int>* interrupted) {
  AttachActions a;
  a.say = [said](const std::string& text) {
    if (text == "refuse me") return Status::InvalidArgument("refused as asked");
    ++*said;
    return Status::Ok();
  };
  a.interrupt = [interrupted]() -> Result<std::string> {
    ++*interrupted;
    return std::string("interrupted");
  };
  return a;
}

TEST(AttachHubTest, ACharacterCutBetweenPiecesArrivesWhole) {
  AttachHub hub(nullptr, nullptr);
  auto [host_end, term_end] = Pair();
  std::atomic<int> said{0}, interrupted{0};
  ASSERT_TRUE(hub.Attach(host_end, "hello", Counting(&said, &interrupted)).ok());
  Terminal t(std::move(term_end));
  EXPECT_EQ(t.Next()["said"], "hello");
  const std::string e_acute = "\xC3\xA9";
  hub.OnText("lead", "caf" + e_acute.substr(0, 1));
  hub.OnText("lead", e_acute.substr(1) + "!");
  hub.OnTextEnd("lead");
  std::string text;
  for (Json e = t.Next(); !e.is_null() && e["ev"] != "text_end"; e = t.Next()) text += e.value("text", "");
  EXPECT_EQ(text, "caf" + e_acute + "!");
}

TEST(AttachHubTest, ATerminalThatDoesNotReadHoldsNobodyUpAndIsToldWhatItMissed) {
  AttachHub hub(nullptr, nullptr);
  auto [host_end, term_end] = Pair();
  std::atomic<int> said{0}, interrupted{0};
  ASSERT_TRUE(hub.Attach(host_end, "hello", Counting(&said, &interrupted)).ok());
  // 8 MiB of notices, none read meanwhile: each call returns at once.
  const std::string notice(4096, 'x');
  for (int i = 0; i < 2048; ++i) hub.OnNotice("worker", notice);
  Terminal t(std::move(term_end));
  size_t got = 0;
  bool told = false;
  for (Json e = t.Next(); !e.is_null(); e = t.Next()) {
    const std::string text = e.value("text", "");
    if (text.find("events dropped: this terminal did not keep up with the team") != std::string::npos) {
      told = true;
      break;
    }
    ++got;
  }
  EXPECT_TRUE(told);
  EXPECT_LT(got, 2048u);
}

TEST(AttachHubTest, ATerminalsLinesReachTheActionsAndBadOnesAreAnswered) {
  AttachHub hub(nullptr, nullptr);
  auto [host_end, term_end] = Pair();
  std::atomic<int> said{0}, interrupted{0};
  ASSERT_TRUE(hub.Attach(host_end, "hello", Counting(&said, &interrupted)).ok());
  Terminal t(std::move(term_end));
  t.Next();
  ASSERT_TRUE(SendAllTo(t.fd.get(), "{\"say\":\"go on\"}\n{\"interrupt\":true}\n"));
  EXPECT_EQ(t.Next().value("text", ""), "interrupted");
  EXPECT_EQ(said.load(), 1);
  EXPECT_EQ(interrupted.load(), 1);
  ASSERT_TRUE(SendAllTo(t.fd.get(), "{\"say\":\"refuse me\"}\nnot json\n{\"say\":3}\n{\"shout\":\"x\"}\n"));
  EXPECT_EQ(t.Next().value("text", ""), "not sent: refused as asked");
  EXPECT_EQ(t.Next().value("text", ""), "not understood: a line is one JSON object");
  EXPECT_EQ(t.Next().value("text", "").rfind("not sent: ", 0), 0u);
  EXPECT_EQ(t.Next().value("text", ""), "not understood: say or interrupt");
  // A line past the bound ends the terminal's session.
  ASSERT_TRUE(SendAllTo(t.fd.get(), std::string(AttachHub::kMaxLineBytes + 10, 'x')));
  EXPECT_TRUE(t.Next().is_null());
  EXPECT_TRUE(mates::testing::WaitUntil([&] { return hub.attached() == 0; }));
}

TEST(AttachHubTest, MoreTerminalsThanAllowedAreRefusedAndADetachedOneFreesItsPlace) {
  AttachHub hub(nullptr, nullptr);
  std::atomic<int> said{0}, interrupted{0};
  std::vector<ScopedFd> terms;
  for (size_t i = 0; i < AttachHub::kMaxAttached; ++i) {
    auto [host_end, term_end] = Pair();
    ASSERT_TRUE(hub.Attach(host_end, "hello", Counting(&said, &interrupted)).ok());
    terms.push_back(std::move(term_end));
  }
  auto [host_end, term_end] = Pair();
  Status refused = hub.Attach(host_end, "hello", Counting(&said, &interrupted));
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(host_end.valid()) << "a refused terminal's connection is left to answer on";
  terms.pop_back();  // one detaches
  EXPECT_TRUE(mates::testing::WaitUntil([&] { return hub.attached() < AttachHub::kMaxAttached; }));
  EXPECT_TRUE(hub.Attach(host_end, "hello", Counting(&said, &interrupted)).ok());
}

}  // namespace
}  // namespace mates::host
