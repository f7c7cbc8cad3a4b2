// Time: wall-clock seconds for the on-disk formats, ISO-8601 for the tmux
// message log, steady time for deadlines.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace mates {

using SteadyClock = std::chrono::steady_clock;
using Deadline = std::optional<SteadyClock::time_point>;  // nullopt = forever

// Seconds since the epoch with sub-second precision (the seeds' time.time()).
double WallSeconds();
// Local time as ISO-8601 with microseconds, e.g. "2026-02-01T10:30:00.123456".
std::string IsoTime(double wall_seconds);
// UTC as JavaScript's toISOString writes it: "2026-02-01T10:30:00.123Z".
std::string UtcIsoTime(double wall_seconds);
// RFC 3339 ("2026-02-01T10:30:05Z", with fractions or an offset) to
// seconds since the epoch; nullopt if it is not one.
std::optional<double> ParseIsoTime(const std::string& s);
// "10:30:00" for people.
std::string ClockTime(double wall_seconds);
// A span as a status line shows it: "42s", "3m7s", "2h5m", "1d3h" (a
// negative one as 0s).
std::string ShortDuration(double seconds);

// Waiting that a test can replace (leveldb's Env, for time): the retry
// loop's backoff waits through one, so a test of retry-after and backoff
// runs in no time and sees every wait asked for.
class CancelToken;
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyClock::time_point Now() = 0;
  // Waits `seconds`, or until `cancel` (may be null) fires; true if it did.
  virtual bool Sleep(double seconds, const CancelToken* cancel) = 0;
  // The real one.
  static Clock& Real();
};

// Waits that must end on time (a mock model's answer after its delay_ms).
// The kernel lets a timer fire up to the thread's slack (50 µs) late, and a
// virtual machine's timer runs late in proportion to the wait: a 50 ms
// sleep here ended ~150 µs late. So the last kFineWait of such a wait is
// waited for again, under FineTimerSlack: ~40 µs late.
inline constexpr std::chrono::milliseconds kFineWait{2};
// This thread's timer slack is 1 ns while it lives, then what it was.
class FineTimerSlack {
 public:
  FineTimerSlack();
  ~FineTimerSlack();
  FineTimerSlack(const FineTimerSlack&) = delete;
  FineTimerSlack& operator=(const FineTimerSlack&) = delete;

 private:
  long before_;
};
// Sleeps until `until`, to within tens of microseconds.
void SleepUntilOnTime(SteadyClock::time_point until);


// A deadline `seconds` from now; negative, NaN or beyond 10^9 s = none.
Deadline DeadlineIn(double seconds);
// True once `d` has passed (never for nullopt).
bool Expired(const Deadline& d);

}  // namespace mates
