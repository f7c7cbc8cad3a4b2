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


}  // namespace
}  // namespace mates
