// SettledWriter (Env::files): one thread that writes the latest document of
// each of a process's status files (an agent's activity, DESIGN §11), a
// burst at a time.
//
// A change is written kSettle after the first change of its burst, with
// everything that came meanwhile: an agent's states come in bursts (a
// reply, its usage, a tool, the next call within a millisecond), and so do
// a team's (a level of tasks ending together). Written at once, each
// burst's dozens of file replacements took the CPU at the very moment the
// next claims and model calls were starting (a sixth of the process's CPU
// in team_bench). A person does not see 10 ms; Flush does not wait them out.
// A document is made from the latest state when it is written, on this
// thread: not at every change, on the poster's. Between bursts it sleeps
// until a change wakes it: a team that went idle costs nothing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/clock.h"

namespace mates {

namespace fs = std::filesystem;

class SettledWriter {
 public:
  static constexpr std::chrono::milliseconds kSettle{10};

  // One file: replaced through `spare`; `what` names it in a warning;
  // `also` (optional, set before the first post) gets every document
  // written, on the writer's thread after the file.
  struct Slot {
    fs::path path, spare;
    std::string what;
    std::function<void(const std::string& document)> also;
    std::function<std::string()> latest;  // guarded by the writer's mutex: makes the document
    bool queued = false;                  // guarded by the writer's mutex
  };

  SettledWriter() = default;
  // What was posted is written first.
  ~SettledWriter();
  SettledWriter(const SettledWriter&) = delete;
  SettledWriter& operator=(const SettledWriter&) = delete;

  // `slot`'s file is to hold what `document` makes, unless a later post
  // comes before it is written.
  void Post(const std::shared_ptr<Slot>& slot, std::function<std::string()> document);
  // Returns once everything posted so far is on disk.
  void Flush();

 private:
  void Main();
  // Writes the queue's first file; `lock` holds mu_, and holds it again after.
  void WriteOne(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  // The writer waits on work_cv_ (woken only when it waits for work, by a
  // Flush or by the end); Flush waits on idle_cv_.
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::shared_ptr<Slot>> queue_;  // guarded by mu_
  int writing_ = 0;                          // guarded by mu_
  int flushing_ = 0;                         // guarded by mu_
  bool waiting_for_work_ = false;            // guarded by mu_: a post wakes it
  SteadyClock::time_point burst_start_;      // guarded by mu_: the queue's first change
  bool stop_ = false;                        // guarded by mu_
  std::thread thread_;                       // guarded by mu_ until joined: started at the first post
};

}  // namespace mates
