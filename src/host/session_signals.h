// SessionSignals: SIGINT, SIGTERM and SIGHUP for a process that hosts agents
// (`mates run`, `mates demo`), taken by one thread this object owns.
//
// The signals are blocked in every thread (the mask is set before any other
// thread starts, and restored when the object goes away); the thread reads
// them from a signalfd, polled beside an eventfd that ends it. So nothing
// runs in a signal handler, no thread is detached, and teardown can never
// race a signal against objects being destroyed.
//
// - The first Ctrl-C interrupts the running turn (hooks.interrupt_turn).
// - A second Ctrl-C, SIGTERM or SIGHUP stops the session (DESIGN §10): the
//   hosts' agents are interrupted for good and every process tree this
//   host started is killed (hooks.stop_all), stop_fd() becomes readable
//   for a reader blocked on stdin, and the main thread winds down and
//   returns exit_code() (130, 143 or 129). If it has not finished within
//   `grace`, the thread kills the trees once more and exits the process
//   with that code: a host told to stop always stops.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <signal.h>

#include "core/files.h"

namespace mates::host {

class SessionSignals {
 public:
  struct Hooks {
    std::function<void()> interrupt_turn;  // the first Ctrl-C, while a turn runs
    std::function<void()> stop_all;        // the session is stopping
    std::function<void(const std::string&)> say;
  };

  // Constructed before any other thread starts (they inherit the mask).
  explicit SessionSignals(double grace_s = 10);
  ~SessionSignals();
  SessionSignals(const SessionSignals&) = delete;
  SessionSignals& operator=(const SessionSignals&) = delete;

  // What to do on a signal, once the objects the hooks use exist.
  void SetHooks(Hooks hooks);
  // Whether a turn runs (the first Ctrl-C interrupts it) or the REPL waits.
  void SetTurnRunning(bool running) { turn_running_.store(running); }
  bool turn_running() const { return turn_running_.load(); }
  // Ctrl-Cs since the last ResetInterrupts (a new REPL line).
  int interrupts() const { return interrupts_.load(); }
  void ResetInterrupts() { interrupts_.store(0); }
  // 0 while the session may go on, else the exit code it must end with.
  int exit_code() const { return exit_code_.load(); }
  // Readable once the session is stopping.
  int stop_fd() const { return stop_fd_.get(); }
  // The main thread has wound down: no hook runs from now on (the objects
  // they use may go), and there is no emergency exit.
  void Finished();

 private:
  void Main();
  void Stop(int signal_number);

  void Say(const std::string& text);

  // Constant after construction.
  const double grace_s_;
  sigset_t old_mask_;
  ScopedFd signal_fd_;
  ScopedFd stop_fd_;  // eventfd: the session is stopping
  ScopedFd end_fd_;   // eventfd: the thread must end

  std::mutex hooks_mu_;
  Hooks hooks_;  // guarded by hooks_mu_; cleared by Finished()
  std::atomic<bool> turn_running_{false};
  std::atomic<int> interrupts_{0};
  std::atomic<int> exit_code_{0};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace mates::host
