#include "core/text.h"

namespace mates {

std::string CutUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end)) + "…";
}

}  // namespace mates
