// ProcessEnv: the parts of an Env (core/env.h), owned. A Host has one (its
// first member: gone after everything it handed it to); a command makes one
// at its first ask (Globals::env, gone with main's Globals); a test program
// keeps one for good (support/test_env.h) or a test makes its own, with the
// watcher, clock and prices it wants, and outlives what it handed it to.
// It sits in the agent layer, the lowest that sees all its parts (the
// store's and the price table).
#pragma once

#include <utility>

#include "agent/prices.h"
#include "core/clock.h"
#include "core/env.h"
#include "store/settled_writer.h"
#include "store/task_folders.h"
#include "store/watcher.h"

namespace mates {

class ProcessEnv {
 public:
  explicit ProcessEnv(Watcher::Options watch = Watcher::OptionsFromVariables(), Clock& clock = Clock::Real(),
                      agent::PriceTable prices = agent::PriceTable::Builtin())
      : watcher_(watch),
        folders_(watcher_),
        prices_(std::move(prices)),
        env_{clock, watcher_, folders_, files_, prices_} {}
  ProcessEnv(const ProcessEnv&) = delete;
  ProcessEnv& operator=(const ProcessEnv&) = delete;

  const Env& env() const { return env_; }

 private:
  Watcher watcher_;
  TaskFolders folders_;
  SettledWriter files_;
  const agent::PriceTable prices_;
  const Env env_;
};

}  // namespace mates
