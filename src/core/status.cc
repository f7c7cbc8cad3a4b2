#include "core/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mates {

Status Status::FromErrno(const std::string& what, int err) {
  return IOError(what + ": " + std::strerror(err));
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return {code_, context + ": " + message_};
}

void DieOnMissingValue(const Status& s) {
  std::fprintf(stderr, "mates: internal error: value of a failed Result read (%s)\n",
               s.message().c_str());
  std::abort();
}

int ExitCodeFor(const Status& s) {
  if (s.ok()) return 0;
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace mates
