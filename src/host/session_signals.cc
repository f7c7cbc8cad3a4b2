#include "host/session_signals.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/process_tree.h"
#include "core/guarded.h"

namespace mates::host {

SessionSignals::SessionSignals(double grace_s) : grace_s_(grace_s) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  // Blocked here, before any other thread starts: every thread inherits it.
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  signal_fd_.reset(::signalfd(-1, &set, SFD_CLOEXEC));
  stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  end_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  thread_ = std::thread([this] {
    NameThisThread("mates-signals");
    RunGuarded("the signal thread", [this] { Main(); });
  });
}

SessionSignals::~SessionSignals() {
  Finished();
  uint64_t one = 1;
  (void)!::write(end_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  // Signals that came after the thread ended stay pending until the mask
  // is restored: they then act as they would have (a SIGTERM ends us).
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void SessionSignals::SetHooks(Hooks hooks) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  if (!finished_.load()) hooks_ = std::move(hooks);
}

void SessionSignals::Finished() {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  finished_.store(true);
  hooks_ = Hooks{};
}

void SessionSignals::Say(const std::string& text) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  if (hooks_.say) hooks_.say(text);
}

void SessionSignals::Stop(int signal_number) {
  int code = signal_number == SIGTERM ? 143 : signal_number == SIGHUP ? 129 : 130;
  int none = 0;
  if (!exit_code_.compare_exchange_strong(none, code)) return;  // stopping already
  Say(signal_number == SIGINT ? "stopping (Ctrl-C again)" : signal_number == SIGTERM ? "stopping (SIGTERM)"
                                                                                      : "stopping (SIGHUP)");
  {
    std::lock_guard<std::mutex> lock(hooks_mu_);
    if (hooks_.stop_all) hooks_.stop_all();
  }
  uint64_t one = 1;
  (void)!::write(stop_fd_.get(), &one, sizeof one);
}

void SessionSignals::Main() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point give_up{};
  for (;;) {
    int timeout_ms = -1;
    if (exit_code_.load() != 0 && !finished_.load()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
      if (left <= 0) {
        // The main thread is stuck (a tool that ignores everything, a
        // server that never answers): leave anyway, leaving nothing.
        KillTagged(HostTagPrefix());
        std::fflush(stdout);
        std::fflush(stderr);
        ::_exit(exit_code_.load());
      }
      timeout_ms = static_cast<int>(left);
    }
    struct pollfd fds[2] = {{signal_fd_.get(), POLLIN, 0}, {end_fd_.get(), POLLIN, 0}};
    int rc = ::poll(fds, 2, timeout_ms);
    if (rc < 0 && errno != EINTR) return;
    if ((fds[1].revents & POLLIN) != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    struct signalfd_siginfo info {};
    if (::read(signal_fd_.get(), &info, sizeof info) != sizeof info) continue;
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGINT && interrupts_.fetch_add(1) == 0 && exit_code_.load() == 0) {
      if (turn_running_.load()) {
        {
          std::lock_guard<std::mutex> lock(hooks_mu_);
          if (hooks_.interrupt_turn) hooks_.interrupt_turn();
        }
        Say("interrupted (Ctrl-C again to exit)");
      } else {
        Say("(Ctrl-C again, or /quit, to exit)");
      }
      continue;
    }
    if (exit_code_.load() == 0) give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                              std::chrono::duration<double>(grace_s_));
    Stop(sig);
  }
}

}  // namespace mates::host
