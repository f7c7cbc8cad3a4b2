// The Env (core/env.h) of a test or benchmark program: one ProcessEnv, made
// at its first use and never destroyed, pricing at the built-in table. A
// test that wants other parts (a poll watcher, a clock it moves, prices of
// its own) makes a ProcessEnv of its own and passes that. A program that
// includes this links mates_agent (the ProcessEnv's layer).
#pragma once

#include "agent/process_env.h"
#include "core/env.h"

namespace mates::testing {

inline const Env& TestEnv() {
  static const ProcessEnv* env = new ProcessEnv();  // never destroyed: see process_env.h
  return env->env();
}

}  // namespace mates::testing
