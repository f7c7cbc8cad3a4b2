// Process containment (DESIGN §10): nothing a tool starts outlives what
// started it.
//
// A tool's command runs in its own process group, killed whole; but a
// command can leave its group (`setsid cmd &`) or double-fork. So:
// - every process a tool starts carries an environment variable
//   MATES_PROC_TAG=<tag>, inherited by all it starts in turn (a command that
//   scrubs its own environment escapes this; nothing short of a cgroup
//   would hold it, and mates does not require one);
// - a host makes itself a child subreaper, so a tool's orphans become its
//   children (not init's), and reaps them;
// - when a tool ends, times out or is interrupted, every process tagged
//   with its tag is killed (KillTagged scans /proc);
// - each host records the trees it started, with their start times, in
//   `agents/<name>.procs`; a host that resumes a team kills what a dead
//   predecessor left there (a pid whose start time differs was reused by
//   an unrelated process and is left alone).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mates {

namespace fs = std::filesystem;

inline constexpr const char* kProcTagVar = "MATES_PROC_TAG";

// Makes this process a child subreaper (prctl PR_SET_CHILD_SUBREAPER).
void BecomeSubreaper();

// A tag unique to this host and call: "<host prefix><n>".
std::string NewProcessTag();
// The prefix every tag of this process starts with ("m<pid>.<start>-").
const std::string& HostTagPrefix();
// The prefix of another host's tags (`mates down` cleaning up after a host
// it had to kill).
std::string HostTagPrefixOf(pid_t pid, uint64_t start_time);

// Kills every process whose environment holds MATES_PROC_TAG=`tag_prefix`
// (a whole tag), or one starting with it (a host's prefix, which ends in
// '-'), waits until they have exited (up to 5 s), then reaps those that
// were our children and any orphan zombie reparented to us. Returns how
// many it killed.
int KillTagged(std::string_view tag_prefix);

// Waits up to `seconds` for `pid`, ours or not, to exit (a pidfd: no
// polling). True if it has, or was not there.
bool WaitProcessExit(pid_t pid, double seconds);
// Waits up to `seconds` until every process of the group `pgid` has
// exited (zombies count as exited). True if they have.
bool AwaitGroupExit(pid_t pgid, double seconds);

// Reaps zombie children that no Subprocess waits for (orphans a subreaper
// inherits). Registered children (Subprocess) are left to their owners.
void ReapOrphans();
// Runs `spawn` (which starts one child, stores its pid and returns 0, or an
// errno) and registers the child as one its starter waits for, with no
// instant at which ReapOrphans could take it for an orphan.
int SpawnRegistered(const std::function<int(pid_t*)>& spawn);
// The starter has reaped it.
void UnregisterChild(pid_t pid);

// The kernel's start time of `pid` (clock ticks since boot), 0 if gone.
uint64_t ProcessStartTime(pid_t pid);
// Whether the process `pid` that started at `start_time` runs still (a
// zombie does not: it died, and waits for its parent to know).
bool ProcessLives(pid_t pid, uint64_t start_time);

// One tree a host started: its root, the root's start time, its tag. A
// record is added before its tree starts, with the tag alone (pid 0), and
// given its root once started: a host killed in between (the tree may run
// already) leaves its successor the tag to kill by.
struct ProcessRecord {
  pid_t pid = 0;
  uint64_t start_time = 0;
  std::string tag;
};

// agents/<name>.procs: the trees an agent's tools are running now. Shared by
// the threads of a process (an agent and its subagents); rewritten whole
// (atomically) on every change, so a host killed at any instant leaves an
// accurate list.
class ProcessJournal {
 public:
  explicit ProcessJournal(fs::path path) : path_(std::move(path)) {}
  Status Add(const ProcessRecord& r) const;
  // The record of `tag` gets its root.
  Status Started(const std::string& tag, pid_t pid, uint64_t start_time) const;
  Status Remove(const std::string& tag) const;
  // Kills what the list names (roots whose start time still matches, and
  // everything with their tags), then removes the file. Returns how many
  // trees were still alive.
  Result<int> KillLeftovers() const;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace mates
