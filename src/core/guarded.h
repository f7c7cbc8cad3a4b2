// RunGuarded: the body of every thread mates starts (DESIGN §10: no
// exception crosses a thread). Nothing in mates throws on purpose; this is
// the last line, where an exception from a library (a bad_alloc, a JSON
// accessor missed in review) is said and the thread ends, instead of
// std::terminate taking the whole team down.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "core/log.h"
#include "core/status.h"

namespace mates {

// Names the calling thread for ps -L, top -H, perf and gdb: an agent's
// thread is the agent's name, the process's own ones "mates-…". The kernel
// keeps 15 bytes; a longer name is cut there, never inside a UTF-8
// character.
void NameThisThread(std::string_view name) noexcept;

template <typename F>
void RunGuarded(const std::string& what, F&& body) noexcept {
  try {
    std::forward<F>(body)();
  } catch (const std::exception& e) {
    LogWarning(what + " stopped on an unexpected error: " + e.what());
  } catch (...) {
    LogWarning(what + " stopped on an unexpected error");
  }
}

// Runs `body` (it returns a Status or a Result) with an exception from it
// turned into an Internal error: for work done on another thread's
// behalf, which must get its answer whatever happens.
template <typename F>
auto Guarded(std::string_view what, F&& body) noexcept -> decltype(body()) {
  try {
    return std::forward<F>(body)();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + ": unexpected error: " + e.what());
  } catch (...) {
    return Status::Internal(std::string(what) + ": unexpected error");
  }
}

}  // namespace mates
