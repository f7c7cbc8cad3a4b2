#include "core/ids.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace mates {
namespace {

std::mt19937_64& Rng() {
  // One generator per thread, seeded from the OS, the pid and the clock so
  // that forked processes and threads never share a sequence.
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    seed ^= static_cast<uint64_t>(::getpid()) << 17;
    seed ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return std::mt19937_64(seed);
  }());
  return rng;
}

}  // namespace

std::string NewId(std::string_view prefix) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Rng()()));
  std::string id(prefix);
  id += '-';
  id += hex;
  return id;
}

std::string RandomHex(size_t digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(digits, '0');
  for (;;) {
    bool zero = true;
    for (size_t i = 0; i < digits; i += 16) {
      uint64_t r = Rng()();
      for (size_t j = i; j < digits && j < i + 16; ++j, r >>= 4) {
        out[j] = kHex[r & 0xf];
        zero = zero && out[j] == '0';
      }
    }
    if (!zero || digits == 0) return out;
  }
}

std::string NewUuid() {
  uint64_t hi = Rng()();
  uint64_t lo = Rng()();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  char buf[37];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

}  // namespace mates
