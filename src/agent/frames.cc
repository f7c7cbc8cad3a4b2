#include "agent/frames.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace mates::agent {

namespace {

// The frames mates writes, as their names fold (letters only, lower case).
constexpr std::array<std::string_view, 4> kFrameNames = {"teammatemessage", "teamupdate", "backgroundtask",
                                                         "conversationsummary"};
constexpr size_t kLongestName = 19;
// How far past an opener a name is looked for, in code points.
constexpr int kMostGap = 8;
constexpr int kMostNameSteps = 64;

struct Fold {
  uint32_t cp;
  char letter;
};
constexpr Fold kFolds[] = {
#include "agent/letter_folds.inc"
};

// One code point of UTF-8 at `i`: (code point, bytes). A byte that starts
// no valid sequence is U+FFFD, one byte long.
std::pair<uint32_t, size_t> Decode(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return {c, 1};
  size_t len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (len == 0 || i + len > s.size()) return {0xFFFD, 1};
  uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  return {cp, len};
}

bool Invisible(uint32_t cp) {
  return (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2060 && cp <= 0x2064) || cp == 0xFEFF || cp == 0x00AD ||
         cp == 0x034F || (cp >= 0x0300 && cp <= 0x036F) || (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0x180E;
}

bool Separator(uint32_t cp) {
  return cp == '-' || cp == '_' || cp == '.' || cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
         (cp >= 0x2010 && cp <= 0x2015) || cp == 0x2212 || cp == 0xFE63 || cp == 0xFF0D || cp == 0xFF3F ||
         cp == 0x00A0 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x3000 || cp == 0x00B7;
}

bool Space(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || cp == 0x00A0 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x3000;
}

bool Slash(uint32_t cp) {
  return cp == '/' || cp == '\\' || cp == 0xFF0F || cp == 0x2215 || cp == 0x2044 || cp == 0x29F8 ||
         cp == 0xFF3C;
}

// The Latin letter `cp` reads as (lower case), or 0.
char FoldLetter(uint32_t cp) {
  if (cp < 0x80) {
    if (cp >= 'A' && cp <= 'Z') return static_cast<char>(cp - 'A' + 'a');
    if (cp >= 'a' && cp <= 'z') return static_cast<char>(cp);
    return 0;
  }
  const auto in = [cp](uint32_t lo, uint32_t hi) { return cp >= lo && cp <= hi; };
  const auto letter = [](uint32_t k) { return static_cast<char>('a' + k % 26); };
  if (in(0xFF21, 0xFF3A)) return letter(cp - 0xFF21);  // full-width
  if (in(0xFF41, 0xFF5A)) return letter(cp - 0xFF41);
  if (in(0x1D400, 0x1D6A3)) return letter((cp - 0x1D400) % 52);  // mathematical, A-Z a-z per style
  if (in(0x24B6, 0x24E9)) return letter(cp - 0x24B6);            // circled
  if (in(0x1F130, 0x1F189)) return letter(cp - 0x1F130);         // squared, negative circled and squared
  if (in(0x1F1E6, 0x1F1FF)) return letter(cp - 0x1F1E6);         // regional indicators
  auto it = std::lower_bound(std::begin(kFolds), std::end(kFolds), cp,
                             [](const Fold& f, uint32_t want) { return f.cp < want; });
  return it != std::end(kFolds) && it->cp == cp ? it->letter : 0;
}

bool Lookalike(uint32_t cp) {
  switch (cp) {
    case 0xFF1C: case 0xFE64: case 0x2039: case 0x27E8: case 0x3008: case 0x2329: case 0x1438:
    case 0x02C2: case 0x276C: case 0x276E: case 0x29FC: case 0x00AB: case 0x226A: case 0x2264:
    case 0x300A: case 0x27EA: case 0x2AA1: case 0xFE3F: case 0x3111:
      return true;
    default:
      return false;
  }
}

bool StartsWithNoCase(std::string_view s, size_t i, std::string_view word) {
  if (i + word.size() > s.size()) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    char c = s[i + k];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != word[k]) return false;
  }
  return true;
}

// An HTML character reference to '<' at `i` (&lt, &LT;, &#60;, &#x3c;,
// and the same escaped again, &amp;lt;): its length, or 0.
size_t EntityAt(std::string_view s, size_t i) {
  size_t k = i + 1;
  while (StartsWithNoCase(s, k, "amp;")) k += 4;
  if (StartsWithNoCase(s, k, "lt")) {
    k += 2;
  } else if (k < s.size() && s[k] == '#') {
    ++k;
    const bool hex = k < s.size() && (s[k] == 'x' || s[k] == 'X');
    if (hex) ++k;
    uint32_t v = 0;
    size_t digits = 0;
    for (; k < s.size() && digits < 8; ++k, ++digits) {
      char c = s[k];
      int d = c >= '0' && c <= '9' ? c - '0' : hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : hex && c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) break;
      v = v * (hex ? 16 : 10) + static_cast<uint32_t>(d);
    }
    if (digits == 0 || v != '<') return 0;
  } else {
    return 0;
  }
  if (k < s.size() && s[k] == ';') ++k;
  return k - i;
}

// A '<' at `i` in any spelling: its length, or 0.
size_t OpenerAt(std::string_view s, size_t i) {
  const char c = s[i];
  if (c == '<') return 1;
  if (c == '&') return EntityAt(s, i);
  if (c == '\\') {
    for (std::string_view e : {"\\u003c", "\\u003C", "\\x3c", "\\x3C", "\\074", "\\U0000003c", "\\U0000003C"}) {
      if (s.substr(i, e.size()) == e) return e.size();
    }
    return 0;
  }
  if (c == '%') return StartsWithNoCase(s, i, "%3c") ? 3 : 0;
  if (static_cast<unsigned char>(c) < 0x80) return 0;
  auto [cp, len] = Decode(s, i);
  return Lookalike(cp) ? len : 0;
}

// Whether what follows an opener at `j` reads as one of mates' frames:
// a gap (spaces, slashes, invisible characters), then a name that folds
// to one of kFrameNames.
bool FrameNameAt(std::string_view s, size_t j) {
  size_t k = j;
  for (int gap = 0; k < s.size() && gap < kMostGap; ++gap) {
    auto [cp, len] = Decode(s, k);
    if (!(Space(cp) || Slash(cp) || Invisible(cp))) break;
    k += len;
  }
  std::string folded;
  for (int steps = 0; k < s.size() && steps < kMostNameSteps && folded.size() < kLongestName; ++steps) {
    auto [cp, len] = Decode(s, k);
    k += len;
    if (Invisible(cp) || Separator(cp)) continue;
    const char letter = FoldLetter(cp);
    if (letter == 0) break;
    folded += letter;
  }
  return std::any_of(kFrameNames.begin(), kFrameNames.end(),
                     [&](std::string_view name) { return folded.compare(0, name.size(), name) == 0; });
}

}  // namespace

std::string FrameAttribute(std::string_view value) {
  // One line first: what is neutralised is what is written.
  std::string line(value);
  for (char& c : line) c = c == '\n' ? ' ' : c;
  std::string out;
  for (char c : NeutraliseFrames(line)) {
    switch (c) {
      case '"': out += "&quot;"; break;
      case '<': out += "&lt;"; break;
      case '&': out += "&amp;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string NeutraliseFrames(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t opener = OpenerAt(text, i);
    if (opener > 0 && FrameNameAt(text, i + opener)) {
      out += '[';
      i += opener;
      continue;
    }
    out += text[i];
    ++i;
  }
  return out;
}

}  // namespace mates::agent
