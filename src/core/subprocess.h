// Subprocess: runs a program as ninja does — its own session and process
// group, stdin from /dev/null (or given text), stdout/stderr through pipes —
// and stops it by killing the whole group, grandchildren included.
//
// Output is capped: past `max_output` bytes per stream the head and the tail
// are kept and the cut is said. When the direct child exits, whatever it
// left running in its group is killed after a short grace, so a command that
// backgrounds a process (or a grandchild that keeps the pipe open) neither
// hangs the caller nor outlives it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cancel.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/status.h"

namespace mates {

class ProcessJournal;  // core/process_tree.h

struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  // The complete environment ("KEY=value"); nullopt inherits ours.
  std::optional<std::vector<std::string>> env;
  std::string cwd;         // "" = ours
  std::string stdin_data;  // fed to stdin, then closed; empty = /dev/null
  double timeout_s = -1;   // < 0: none
  size_t max_output = 1 << 20;  // per stream, head + tail kept
  bool merge_stderr = false;    // stderr into the stdout pipe
  // Grace after the direct child exits before its group is killed.
  double group_grace_s = 0.05;
  // Given: the child and all it starts carry MATES_PROC_TAG=tag, and when
  // the call ends every process with that tag is killed too, those that
  // left the group (setsid, double fork) included (core/process_tree.h).
  std::string tag;
  // A conversation rather than a run (an MCP server over stdio): stdin
  // stays a pipe for WriteStdin() until CloseStdin() or Wait(), and stderr
  // goes to `stderr_path` (appended; "" = /dev/null) instead of a pipe, so
  // that reading stdout line by line is all the caller has to do.
  bool interactive = false;
  std::string stderr_path;
  // Descriptors of ours (>= 3) the child keeps under the same numbers,
  // though they are close-on-exec here (the sandbox's seccomp filter for
  // bwrap); the caller keeps them open until Start returns.
  std::vector<int> keep_fds;
};

struct SubprocessResult {
  int exit_code = -1;    // when it exited normally
  int term_signal = 0;   // when a signal ended it
  bool timed_out = false;
  bool cancelled = false;
  std::string out;
  std::string err;
  size_t out_dropped = 0;  // bytes cut from the middle
  size_t err_dropped = 0;
};

// A running child. Move-only; the destructor kills its group and reaps it.
class Subprocess {
 public:
  static Result<Subprocess> Start(const SubprocessOptions& options);

  Subprocess(Subprocess&& o) noexcept;
  Subprocess& operator=(Subprocess&& o) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }
  // Whether the child has exited (or was reaped), without reaping it: what
  // it left behind may still hold its pipes open. Safe beside ReadLine(),
  // WriteStdin() and Wait() on other threads.
  bool Exited() const;
  // Sends `sig` to the whole process group.
  void Signal(int sig) const;
  // Reads one line of stdout (without '\n'); Timeout if none by `deadline`,
  // NotFound at end of output, InvalidArgument for a line longer than
  // `max_bytes` (the rest of it is skipped), Cancelled once `cancel` is.
  Result<std::string> ReadLine(const Deadline& deadline, size_t max_bytes = SIZE_MAX,
                               const CancelToken* cancel = nullptr);
  // Interactive only: writes all of `data` to the child's stdin; Timeout
  // if it will not take it by `deadline`, Unavailable once it is closed.
  // Not to be called at the same time as CloseStdin() or Wait().
  Status WriteStdin(std::string_view data, const Deadline& deadline);
  void CloseStdin() { in_.reset(); }
  // Collects output until the child exits (or the timeout / `cancel` stops
  // it, killing the group), then reaps it. A cancel is seen at once.
  SubprocessResult Wait(const CancelToken* cancel = nullptr);

 private:
  Subprocess() = default;
  void Reap(SubprocessResult* r);

  pid_t pid_ = -1;
  bool reaped_ = false;
  ScopedFd out_;
  ScopedFd err_;
  ScopedFd in_;
  std::string stdin_data_;
  size_t stdin_pos_ = 0;
  std::string line_buf_;  // ReadLine's leftovers, returned first by Wait
  bool skipping_line_ = false;  // ReadLine is past a line longer than its bound
  SubprocessOptions options_;
};

// Start + Wait.
Result<SubprocessResult> RunSubprocess(const SubprocessOptions& options,
                                       const CancelToken* cancel = nullptr);

// Start + Wait, the tree listed in `journal` (if given; options.tag must be
// set) from before it starts until it has ended: a host killed at any
// instant leaves its successor the list of what to kill
// (core/process_tree.h).
Result<SubprocessResult> RunListed(const SubprocessOptions& options, const ProcessJournal* journal,
                                   const CancelToken* cancel = nullptr);

}  // namespace mates
