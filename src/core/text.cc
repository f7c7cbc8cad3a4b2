#include "core/text.h"

#include <cctype>

namespace mates {

std::string CutUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end)) + "…";
}

std::string ForTerminal(std::string_view text, size_t max) {
  std::string out;
  size_t i = 0;
  for (; i < text.size() && out.size() < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += '?';
      ++i;
    } else if ((c < 0x20 && c != '\n') || c == 0x7F) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i == text.size()) return out;
  // Cut: no character left in two, whatever byte the cut fell on.
  if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) {
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty()) out.pop_back();  // the lead byte of the character cut
  }
  return out + "…";
}

std::string PercentEncode(std::string_view s, std::string_view keep) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool unreserved = std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace mates
