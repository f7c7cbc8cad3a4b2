// Limits: how much of anything from outside mates takes in (DESIGN §10).
// Every entry point checks against these and refuses what is over with one
// clear error, so no input can exhaust the stack (deep JSON), memory (an
// endless stream) or the disk (a task file that grows with the square of
// its metadata).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mates {

// Nesting of any JSON document read: server replies, tool input, files,
// CLI --metadata, HTTP bodies to mock-llm, MCP frames.
inline constexpr int kMaxJsonDepth = 128;
// One tool input from a model, one message's content.
inline constexpr size_t kMaxToolInputBytes = 1 << 20;
inline constexpr size_t kMaxMessageBytes = 1 << 20;
// A task's metadata object, as compact JSON.
inline constexpr size_t kMaxTaskMetadataBytes = 64 << 10;
// One model reply as streamed, and one SSE line within it.
inline constexpr size_t kMaxReplyBytes = 64 << 20;
inline constexpr size_t kMaxSseLineBytes = 16 << 20;
// One JSON state file read from disk (a task, the roster, a request): far
// above what mates writes, far below what would hurt.
inline constexpr size_t kMaxStateFileBytes = 16 << 20;
// Task ids: a board holds at most this many (an id past it, in a file
// name or the index, is not a task: a hand-edited "99999999999.json" must
// not make a board allocate for it).
inline constexpr int64_t kMaxTaskId = 10000000;
// The board's index file, read whole on a cold start.
inline constexpr size_t kMaxIndexBytes = 256 << 20;
// An agent's journal as a store's copy of it is read back (DESIGN §13): a
// line of it (a compaction holds a whole conversation) and all of it.
inline constexpr size_t kMaxJournalLineBytes = 64 << 20;
inline constexpr size_t kMaxJournalBytes = 512 << 20;
// One HTTP request body to mock-llm.
inline constexpr size_t kMaxHttpBodyBytes = 64 << 20;
// Token budgets (DESIGN §15), from the command line or a lead's Task call:
// a budget of tokens, and a context size to compact at (0: none, and the
// default; a context budget under kMinContextBudget would compact at every
// call).
inline constexpr int64_t kMaxBudgetTokens = 1000000000000;
inline constexpr int64_t kMinContextBudget = 1000;
inline constexpr int64_t kMaxContextBudget = 1000000000;
// How long a host's operations wait for a PostgreSQL store that cannot be
// reached (a restart, a network gap) before they fail (DESIGN §13).
inline constexpr double kStoreOutagePatienceS = 300;

}  // namespace mates
