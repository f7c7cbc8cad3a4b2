#include "core/clock.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <thread>

#include "core/cancel.h"

namespace mates {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Restores this thread's timer slack after a test that changes it.
class SlackKept {
 public:
  SlackKept() : slack_(::prctl(PR_GET_TIMERSLACK)) {}
  ~SlackKept() { ::prctl(PR_SET_TIMERSLACK, slack_); }

 private:
  long slack_;
};

TEST(ClockTest, FineTimerSlackIsOneNanosecondWhileItLivesThenWhatItWas) {
  SlackKept kept;
  ASSERT_EQ(::prctl(PR_SET_TIMERSLACK, 70000L), 0);
  {
    FineTimerSlack fine;
    EXPECT_EQ(::prctl(PR_GET_TIMERSLACK), 1);
  }
  EXPECT_EQ(::prctl(PR_GET_TIMERSLACK), 70000);
}

TEST(ClockTest, WaitsOnTimeNeverEndEarlyAndLeaveTheSlackAsItWas) {
  const long slack = ::prctl(PR_GET_TIMERSLACK);
  CancelToken token;
  // Longer than the fine part, shorter than it, and already past.
  for (auto wait : {microseconds(4000), microseconds(300), microseconds(-100)}) {
    auto until = SteadyClock::now() + wait;
    SleepUntilOnTime(until);
    EXPECT_GE(SteadyClock::now(), until);
    until = SteadyClock::now() + wait;
    EXPECT_FALSE(token.WaitUntilOnTime(until));
    EXPECT_GE(SteadyClock::now(), until);
  }
  EXPECT_EQ(::prctl(PR_GET_TIMERSLACK), slack);
}

TEST(ClockTest, AWaitOnTimeEndsWhenItsTokenIsCancelled) {
  CancelToken token;
  const auto start = SteadyClock::now();
  std::thread canceller([&] { token.Cancel(); });
  EXPECT_TRUE(token.WaitUntilOnTime(start + std::chrono::seconds(60)));
  canceller.join();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(30));
  // Cancelled already, and a wait shorter than its fine part: at once too.
  EXPECT_TRUE(token.WaitUntilOnTime(SteadyClock::now() + milliseconds(1)));
}

TEST(ClockTest, ALingerFollowsTheLongestRecentGapBetweenBatches) {
  const auto t0 = SteadyClock::time_point{} + std::chrono::hours(1);
  Linger linger(std::chrono::seconds(1));
  EXPECT_EQ(linger.For(), std::chrono::seconds(1)) << "no batch yet: the longest";
  linger.Batch(t0);
  EXPECT_EQ(linger.For(), std::chrono::seconds(1)) << "one batch: no gap known";
  linger.Batch(t0 + milliseconds(50));
  EXPECT_EQ(linger.For(), milliseconds(100));
  // A level's turn: batches a millisecond apart. The 50 ms gap before them
  // still counts, so the writer looks until the next turn.
  for (int i = 1; i <= Linger::kGaps - 1; ++i) linger.Batch(t0 + milliseconds(50 + i));
  EXPECT_EQ(linger.For(), milliseconds(100));
  // One more and the 50 ms gap is out of the last kGaps.
  linger.Batch(t0 + milliseconds(50 + Linger::kGaps));
  EXPECT_EQ(linger.For(), milliseconds(2));
  // Batches seconds apart: at most `most`.
  linger.Batch(t0 + std::chrono::seconds(10));
  EXPECT_EQ(linger.For(), std::chrono::seconds(1));
}

}  // namespace
}  // namespace mates
