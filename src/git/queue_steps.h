// What the merge queue's two files (merge_queue.cc: one request at a time;
// merge_train.cc: trains) share, and nothing else includes.
#pragma once

#include <cstdint>
#include <string>

#include "store/team_store.h"

namespace mates::git::queue {

// The most requests one train takes.
inline constexpr size_t kTrainCars = 16;

// The last 3,000 bytes of a command's output, "…" before them when cut.
std::string Tail(const std::string& s);
// A request taken (checking) goes back to the queue.
void QueueAgain(TeamStore& store, const std::string& team, int64_t id);
// Where the watched target is (`at`, once moved) or is about to be
// (`moving_to`, before the move: a host killed after it finds the target
// there and knows it for its own).
void NoteTarget(TeamStore& store, const std::string& team, const std::string& at, const std::string& moving_to);

}  // namespace mates::git::queue
