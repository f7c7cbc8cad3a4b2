#include "core/clock.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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


// A time read from a file is anyone's (a journal's "ts" of 1e57, nan):
// said as one a calendar holds, never converted out of range.
TEST(ClockTest, ATimeFromAnywhereIsSaidWithinTheCalendar) {
  EXPECT_EQ(UtcIsoTime(1e57), "9999-12-31T23:59:59.000Z");
  EXPECT_EQ(UtcIsoTime(-1e57), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(UtcIsoTime(std::nan("")), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(UtcIsoTime(1.5), "1970-01-01T00:00:01.500Z");
  EXPECT_EQ(ClockTime(std::numeric_limits<double>::infinity()).size(), 8u);
  EXPECT_EQ(IsoTime(1e300).rfind("9999-12-31T", 0) == 0 || IsoTime(1e300).rfind("10000-01-01T", 0) == 0, true);
  EXPECT_EQ(ShortDuration(1e300), ShortDuration(1e15));
  EXPECT_EQ(ShortDuration(std::nan("")), "0s");
}

}  // namespace
}  // namespace mates
