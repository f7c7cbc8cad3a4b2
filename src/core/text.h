// Text from outside, made short enough to pass on (a notice to a model, a
// status line) without cutting a character in two.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mates {

// `s` cut to at most `max` bytes, never inside a UTF-8 sequence, with "…"
// after it when cut.
std::string CutUtf8(std::string_view s, size_t max);

}  // namespace mates
