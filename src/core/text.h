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

// Text from outside as a terminal may show it: control characters (C0 but
// the newline, DEL, C1 in UTF-8), which could move the cursor or rewrite
// what the person sees, each become '?'; at most `max` bytes, "…" after.
std::string ForTerminal(std::string_view text, size_t max = static_cast<size_t>(-1));
// `s` with every byte but RFC 3986's unreserved ones (letters, digits,
// '-', '.', '_', '~') and those in `keep` as %XX.
std::string PercentEncode(std::string_view s, std::string_view keep = "");

}  // namespace mates
