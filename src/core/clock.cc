#include "core/clock.h"

#include <sys/prctl.h>

#include <thread>

#include "core/cancel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace mates {

double WallSeconds() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(now).count();
}

namespace {
// A time read from anywhere (a journal's "ts" may say 1e57, or nan) as one
// a calendar holds: years 1970 to 9999.
double Calendar(double wall_seconds) {
  constexpr double kYear9999 = 253402300799.0;
  return std::isfinite(wall_seconds) ? std::clamp(wall_seconds, 0.0, kYear9999) : 0.0;
}

std::tm LocalTm(double wall_seconds) {
  auto secs = static_cast<time_t>(std::floor(Calendar(wall_seconds)));
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  return tm;
}
}  // namespace

std::string IsoTime(double wall_seconds) {
  wall_seconds = Calendar(wall_seconds);  // for the microseconds too
  std::tm tm = LocalTm(wall_seconds);
  auto micros = static_cast<long>((wall_seconds - std::floor(wall_seconds)) * 1e6);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
  return buf;
}

std::string UtcIsoTime(double wall_seconds) {
  wall_seconds = Calendar(wall_seconds);
  auto secs = static_cast<time_t>(std::floor(wall_seconds));
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  auto millis = std::min(999L, static_cast<long>((wall_seconds - std::floor(wall_seconds)) * 1e3));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

std::optional<double> ParseIsoTime(const std::string& s) {
  std::tm tm{};
  const char* p = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (p == nullptr) return std::nullopt;
  double frac = 0;
  if (*p == '.') {
    ++p;
    double scale = 0.1;
    while (*p >= '0' && *p <= '9') {
      frac += (*p - '0') * scale;
      scale /= 10;
      ++p;
    }
  }
  int offset = 0;
  if (*p == '+' || *p == '-') {
    int hh = 0, mm = 0;
    if (std::sscanf(p + 1, "%2d:%2d", &hh, &mm) < 1) return std::nullopt;
    offset = (hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
  }
  return static_cast<double>(::timegm(&tm)) + frac - offset;
}

std::string ShortDuration(double seconds) {
  if (!(seconds > 0)) seconds = 0;
  auto s = static_cast<int64_t>(std::min(seconds, 1e15));  // ~31 million years: any longer is no length
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  if (s < 86400) return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
  return std::to_string(s / 86400) + "d" + std::to_string(s % 86400 / 3600) + "h";
}

std::string ClockTime(double wall_seconds) {
  std::tm tm = LocalTm(wall_seconds);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

FineTimerSlack::FineTimerSlack() : before_(::prctl(PR_GET_TIMERSLACK)) {
  ::prctl(PR_SET_TIMERSLACK, 1L);
}

FineTimerSlack::~FineTimerSlack() {
  if (before_ > 0) ::prctl(PR_SET_TIMERSLACK, before_);
}

void SleepUntilOnTime(SteadyClock::time_point until) {
  std::this_thread::sleep_until(until - kFineWait);
  FineTimerSlack fine;
  std::this_thread::sleep_until(until);
}

Deadline DeadlineIn(double seconds) {
  // Negative, not a number, or so far off that the clock would overflow:
  // no deadline (callers that must refuse such values check them first).
  if (!(seconds >= 0) || seconds > 1e9) return std::nullopt;
  return SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                  std::chrono::duration<double>(seconds));
}

namespace {
class RealClock : public Clock {
 public:
  SteadyClock::time_point Now() override { return SteadyClock::now(); }
  bool Sleep(double seconds, const CancelToken* cancel) override {
    if (cancel != nullptr) return cancel->WaitFor(seconds);
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return false;
  }
};
}  // namespace

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();
  return *clock;
}

bool Expired(const Deadline& d) { return d.has_value() && SteadyClock::now() >= *d; }

}  // namespace mates
