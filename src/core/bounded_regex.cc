#include "core/bounded_regex.h"

#include <algorithm>
#include <vector>

namespace mates {
namespace {

// How many states the pattern expands to, roughly: an atom is 1, a group
// the sum of what it holds, and a count {n,m} multiplies what it follows
// by m (or n). Nested counts multiply — `((a{10}){10}){10}` is 1,000 —
// which is what makes std::regex's automaton blow up. Saturates at `cap`.
// Also refuses a single count past kMaxRegexRepeat (libstdc++ overflows a
// long on a count like 2222222222222222222, found by the scenario fuzzer).
Status CheckSize(const std::string& p, double cap) {
  std::vector<double> groups = {0};  // size of each open group so far
  double last = 0;                   // size of the last atom or group
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      size_t j = i + 1;
      while (j < p.size() && p[j] >= '0' && p[j] <= '9') ++j;
      i = j > i + 1 ? j - 1 : i + 1;
      last = 1;
      groups.back() += 1;
    } else if (c == '[') {
      // A class is one atom; skip to its end ("]" first in it is literal).
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = j;
      last = 1;
      groups.back() += 1;
    } else if (c == '(') {
      groups.push_back(0);
    } else if (c == ')') {
      if (groups.size() == 1) continue;  // unbalanced: std::regex will say
      last = std::max(1.0, groups.back());
      groups.pop_back();
      groups.back() += last;
    } else if (c == '|') {
      last = 0;
    } else if (c == '{') {
      size_t j = i + 1;
      long n = 0, m = -1;
      bool digits = false, second = false;
      for (; j < p.size(); ++j) {
        char d = p[j];
        if (d >= '0' && d <= '9') {
          long& v = second ? m : n;
          if (v < 0) v = 0;
          if (v <= kMaxRegexRepeat) v = v * 10 + (d - '0');
          digits = true;
        } else if (d == ',' && !second) {
          second = true;
        } else {
          break;
        }
      }
      // Checked even when no '}' closes it: std::regex reads the number
      // before it finds out (and overflows on it).
      long count = std::max(n, m);
      if (count > kMaxRegexRepeat) {
        return Status::InvalidArgument("a repetition count past " + std::to_string(kMaxRegexRepeat));
      }
      if (!digits || j >= p.size() || p[j] != '}') {  // a literal brace
        last = 1;
        groups.back() += 1;
        continue;
      }
      groups.back() += last * (static_cast<double>(std::max(count, 1L)) - 1);
      last *= static_cast<double>(std::max(count, 1L));
      i = j;
    } else if (c == '*' || c == '+' || c == '?') {
      // The same states, looped.
    } else {
      last = 1;
      groups.back() += 1;
    }
    if (groups.back() > cap || last > cap) {
      return Status::InvalidArgument("it would expand to more than " + std::to_string(static_cast<long>(cap)) +
                                     " states (nested repetition counts multiply)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::regex> CompileBoundedRegex(const std::string& pattern, std::regex::flag_type flags) {
  if (pattern.size() > kMaxRegexBytes) {
    return Status::InvalidArgument("a regex of " + std::to_string(pattern.size()) + " bytes; at most " +
                                   std::to_string(kMaxRegexBytes) + " are taken");
  }
  // A number after a backslash (a back-reference, in a class or not) is
  // read the way a count is, and overflows the same way
  // (\2222222222222222222: the fuzzer again).
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\') continue;
    size_t j = i + 1;
    while (j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9') ++j;
    if (j - (i + 1) > 3) return Status::InvalidArgument("a back-reference number past 999");
    i = std::max(i + 1, j) - 1;
  }
  MATES_RETURN_IF_ERROR(CheckSize(pattern, kMaxRegexStates));
  try {
    return std::regex(pattern, flags);
  } catch (const std::regex_error& e) {
    return Status::InvalidArgument(e.what());
  }
}

}  // namespace mates
