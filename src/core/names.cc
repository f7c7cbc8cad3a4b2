#include "core/names.h"

#include <cstdio>
#include <string>

namespace mates {
namespace {
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
}  // namespace

namespace {

// `text` as an error message may show it: printable ASCII as it is, any
// other byte (a control, a NUL, a quote, UTF-8) as \xNN, and at most the
// first kShown bytes, so that a hostile name cannot flood a log or a
// terminal.
std::string Shown(std::string_view text) {
  constexpr size_t kShown = 64;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (text.size() > kShown) out += "… (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace

Status ValidateName(std::string_view kind, std::string_view name) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("invalid " + std::string(kind) + " '" + Shown(name) +
                                   "': " + why +
                                   " (use 1-64 letters, digits, '.', '_' or '-', starting with a "
                                   "letter or digit)");
  };
  if (name.empty()) return bad("it is empty");
  if (name.size() > 64) return bad("it is longer than 64 characters");
  if (!IsAlnum(name[0])) return bad("it must start with a letter or digit");
  for (char c : name) {
    if (!IsAlnum(c) && c != '.' && c != '_' && c != '-') {
      return bad("character '" + Shown(std::string_view(&c, 1)) + "' is not allowed");
    }
  }
  return Status::Ok();
}

}  // namespace mates
