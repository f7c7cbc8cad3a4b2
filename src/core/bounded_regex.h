// A cluster's prompt and busy patterns come from a file and are input like
// any other (DESIGN §10). They are std::regex (ECMAScript), searched in one
// screen row at a time, which is short. libstdc++'s std::regex overflows a
// signed integer on a repetition count past `long` (found by the scenario
// fuzzer: `a{2222222222222222222}`), and nested counts compile into an
// automaton as large as their product. So a pattern is held to a length,
// each count to a bound and its expanded size to another before std::regex
// sees it. (A scenario's `when`, searched in whole turns, is RE2.)
#pragma once

#include <regex>
#include <string>

#include "core/status.h"

namespace mates {

inline constexpr size_t kMaxRegexBytes = 4096;
inline constexpr long kMaxRegexRepeat = 1000;
// The pattern expanded (nested counts multiply) stays under this many
// states: std::regex builds one automaton node per state.
inline constexpr double kMaxRegexStates = 100000;

// InvalidArgument saying what is wrong (too long, a count too large, or
// std::regex's own complaint); the compiled regex otherwise.
Result<std::regex> CompileBoundedRegex(const std::string& pattern,
                                       std::regex::flag_type flags = std::regex::ECMAScript);

}  // namespace mates
