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
// "10:30:00" for people.
std::string ClockTime(double wall_seconds);

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

// How long a writer thread that batches its work keeps looking for work by
// itself after a batch, before it sleeps until woken. Looking is cheap for
// the writer (a timed wait) and saves whoever posts the next change a
// wake-up (a futex wake of a thread asleep on another core: 30-50 µs on
// the way to a model call). But each look is a wake-up of the writer's
// own, so it looks only as long as batches have been coming: twice the
// longest gap among its last kGaps batches, at most `most`. A team at work
// (batches every level's turn) keeps it looking from one to the next; one
// that went idle costs a few looks, not a second of them.
class Linger {
 public:
  explicit Linger(SteadyClock::duration most) : most_(most) {}
  void set_most(SteadyClock::duration most) { most_ = most; }
  // A batch was taken at `at` (times never go back).
  void Batch(SteadyClock::time_point at);
  // How long to look after the last batch (`most` until two were seen).
  SteadyClock::duration For() const;
  static constexpr int kGaps = 8;

 private:
  SteadyClock::duration most_;
  SteadyClock::duration gaps_[kGaps] = {};  // a ring: the oldest is overwritten
  int gaps_seen_ = 0;                        // up to kGaps
  int next_ = 0;                             // where the next gap goes
  std::optional<SteadyClock::time_point> last_;
};

// A deadline `seconds` from now; negative, NaN or beyond 10^9 s = none.
Deadline DeadlineIn(double seconds);
// True once `d` has passed (never for nullopt).
bool Expired(const Deadline& d);

}  // namespace mates
