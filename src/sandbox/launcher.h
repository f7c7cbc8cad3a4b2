// The host's side of a launcher (sandbox/launcher_wire.h): one
// `mates-relay --launcher` kept running in one place's sandbox, through
// which that place's commands start with a fork there rather than a
// bubblewrap each (≈ 4 ms of namespaces and mounts: bench/sandbox_bench).
//
// Sandbox::LauncherFor keeps one per purpose (an agent's bash, its hooks)
// and place, and starts a new one when the old one broke or when a unix
// socket has come into its sight since it started: a per-command sandbox
// covers every socket bound at its start (sandbox.h), and a launcher's
// sandbox must not show one bound later.
//
// Thread-safe: any number of Run calls at once; one thread reads the
// answers and hands each to its caller.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.h"
#include "core/files.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "sandbox/sandbox.h"

namespace mates::sandbox {

class Launcher {
 public:
  struct Job {
    std::string command;
    bool bash = false;               // `/bin/bash -c`, else `/bin/sh -c`
    std::string input;               // its stdin ("" = none)
    std::vector<std::string> env;    // its environment; the sandbox's own variables win
    double timeout_s = 60;           // then its group is killed (timed_out)
    size_t max_output = 1 << 20;     // per stream
    bool merge_stderr = false;       // stderr into stdout
    bool cut_middle = false;         // past max_output: head and tail, else the head
  };

  // Starts one in `box` for `place`, working in `cwd`.
  static Result<std::shared_ptr<Launcher>> Start(const Sandbox& box, const Place& place, const std::string& cwd);
  ~Launcher();
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Runs `job` and waits for it. `cancel` kills it (the result says
  // cancelled). Unavailable: it was not sent (it did not run); another
  // error: sent, and no answer came (the launcher broke: say so, do not
  // run it again).
  Result<SubprocessResult> Run(const Job& job, const CancelToken* cancel = nullptr);

  // Broken: its process ended or spoke out of turn. A new one is needed.
  bool broken() const;
  // A unix socket bound since it started that its sandbox shows.
  bool SeesANewSocket() const { return sight_.ShowsANewSocket(); }
  pid_t pid() const { return proc_.pid(); }

 private:
  struct Waiting;
  Launcher(Subprocess proc, Sight sight);
  void ReadAnswers();
  // Every caller still waiting gets an error naming `why`; later Runs
  // are refused. BreakLocked: mu_ held.
  void Break(const std::string& why);
  void BreakLocked(const std::string& why);
  Status Send(const std::string& line);

  Subprocess proc_;
  const Sight sight_;
  std::mutex write_mu_;  // one request at a time on its stdin
  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Waiting>> waiting_;  // guarded by mu_
  uint64_t next_id_ = 0;                                 // guarded by mu_
  std::string broken_;                                   // guarded by mu_: why, once broken
  std::thread reader_;
};

}  // namespace mates::sandbox
