// The Env (core/env.h) of a test or benchmark program: one ProcessEnv, made
// at its first use and never destroyed. A test that wants
// other parts (a poll watcher, a clock it moves) makes a ProcessEnv of its
// own and passes that.
#pragma once

#include "core/env.h"
#include "store/process_env.h"

namespace mates::testing {

inline const Env& TestEnv() {
  static const ProcessEnv* env = new ProcessEnv();  // never destroyed: see process_env.h
  return env->env();
}

}  // namespace mates::testing
