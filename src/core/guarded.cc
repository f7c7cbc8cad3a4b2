#include "core/guarded.h"

#include <pthread.h>

#include <algorithm>

namespace mates {

void NameThisThread(std::string_view name) noexcept {
  constexpr size_t kKept = 15;  // the kernel's TASK_COMM_LEN, less the NUL
  size_t end = std::min(name.size(), kKept);
  if (end < name.size()) {
    while (end > 0 && (static_cast<unsigned char>(name[end]) & 0xC0) == 0x80)
      --end;  // not mid-character
  }
  char buf[kKept + 1] = {};
  name.copy(buf, end);
  (void)::pthread_setname_np(::pthread_self(), buf);
}

}  // namespace mates
