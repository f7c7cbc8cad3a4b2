#include "core/names.h"

#include <string>

namespace mates {
namespace {
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
}  // namespace

Status ValidateName(std::string_view kind, std::string_view name) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("invalid " + std::string(kind) + " '" + std::string(name) +
                                   "': " + why +
                                   " (use 1-64 letters, digits, '.', '_' or '-', starting with a "
                                   "letter or digit)");
  };
  if (name.empty()) return bad("it is empty");
  if (name.size() > 64) return bad("it is longer than 64 characters");
  if (!IsAlnum(name[0])) return bad("it must start with a letter or digit");
  for (char c : name) {
    if (!IsAlnum(c) && c != '.' && c != '_' && c != '-') {
      return bad(std::string("character '") + (c == '\n' ? std::string("\\n") : std::string(1, c)) +
                 "' is not allowed");
    }
  }
  return Status::Ok();
}

}  // namespace mates
