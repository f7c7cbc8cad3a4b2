#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"
#include "core/process_tree.h"

extern char** environ;

namespace mates {
namespace {

// Keeps the first and last `cap/2` bytes of a stream and counts the rest.
class CappedBuffer {
 public:
  explicit CappedBuffer(size_t cap) : cap_(cap) {}
  void Append(const char* p, size_t n) {
    size_t head_room = cap_ / 2 > head_.size() ? cap_ / 2 - head_.size() : 0;
    size_t to_head = std::min(head_room, n);
    head_.append(p, to_head);
    p += to_head;
    n -= to_head;
    if (n == 0) return;
    tail_.append(p, n);
    size_t tail_cap = cap_ - cap_ / 2;
    if (tail_.size() > 2 * tail_cap + 4096) Trim(tail_cap);
  }
  std::string Take(size_t* dropped) {
    Trim(cap_ - cap_ / 2);
    *dropped = dropped_;
    if (dropped_ == 0) return head_ + tail_;
    return head_ + "\n[... " + std::to_string(dropped_) + " bytes cut ...]\n" + tail_;
  }

 private:
  void Trim(size_t keep) {
    if (tail_.size() > keep) {
      dropped_ += tail_.size() - keep;
      tail_.erase(0, tail_.size() - keep);
    }
  }
  size_t cap_;
  std::string head_, tail_;
  size_t dropped_ = 0;
};

int PipeCloexec(int fds[2]) { return ::pipe2(fds, O_CLOEXEC); }

}  // namespace

Subprocess::Subprocess(Subprocess&& o) noexcept { *this = std::move(o); }

Subprocess& Subprocess::operator=(Subprocess&& o) noexcept {
  if (this != &o) {
    pid_ = o.pid_;
    reaped_ = o.reaped_;
    out_ = std::move(o.out_);
    err_ = std::move(o.err_);
    in_ = std::move(o.in_);
    stdin_data_ = std::move(o.stdin_data_);
    stdin_pos_ = o.stdin_pos_;
    line_buf_ = std::move(o.line_buf_);
    options_ = std::move(o.options_);
    o.pid_ = -1;
    o.reaped_ = true;
  }
  return *this;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !reaped_) {
    Signal(SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    UnregisterChild(pid_);
  }
  if (pid_ > 0 && !options_.tag.empty()) KillTagged(options_.tag);
}

Result<Subprocess> Subprocess::Start(const SubprocessOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("no program to run");
  Subprocess p;
  p.options_ = options;
  int out[2], err[2], in[2] = {-1, -1};
  if (PipeCloexec(out) != 0) return Status::FromErrno("pipe", errno);
  ScopedFd out_r(out[0]), out_w(out[1]);
  ScopedFd err_r, err_w;
  if (options.interactive) {
    // stderr to a file (or nowhere): nobody reads a pipe of it.
    int fd = options.stderr_path.empty()
                 ? ::open("/dev/null", O_WRONLY | O_CLOEXEC)
                 : ::open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno("open " + (options.stderr_path.empty() ? std::string("/dev/null") : options.stderr_path), errno);
    err_w.reset(fd);
  } else if (!options.merge_stderr) {
    if (PipeCloexec(err) != 0) return Status::FromErrno("pipe", errno);
    err_r.reset(err[0]);
    err_w.reset(err[1]);
  }
  ScopedFd in_r, in_w;
  if (!options.stdin_data.empty() || options.interactive) {
    if (PipeCloexec(in) != 0) return Status::FromErrno("pipe", errno);
    in_r.reset(in[0]);
    in_w.reset(in[1]);
  }

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in_r.valid()) {
    posix_spawn_file_actions_adddup2(&fa, in_r.get(), 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, options.merge_stderr ? out_w.get() : err_w.get(), 2);
  // dup2 onto itself clears close-on-exec in the child only (glibc >= 2.29).
  for (int fd : options.keep_fds) {
    if (fd > 2) posix_spawn_file_actions_adddup2(&fa, fd, fd);
  }
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, options.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own session (hence own process group): the group can be killed whole,
  // and the child has no controlling terminal to read from.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF |
                                       POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> tagged_env;
  std::vector<char*> envp;
  if (!options.tag.empty()) {
    // The tag joins whichever environment the child gets.
    if (options.env) {
      tagged_env = *options.env;
    } else {
      for (char** e = environ; *e != nullptr; ++e) tagged_env.emplace_back(*e);
    }
    std::erase_if(tagged_env, [](const std::string& e) { return e.rfind(std::string(kProcTagVar) + "=", 0) == 0; });
    tagged_env.push_back(std::string(kProcTagVar) + "=" + options.tag);
  }
  const std::vector<std::string>* env = !options.tag.empty() ? &tagged_env : options.env ? &*options.env : nullptr;
  if (env != nullptr) {
    for (const auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  // posix_spawnp searches PATH of *our* environment; the child's own PATH
  // matters only to what it runs itself. Registered as it is born, so that
  // a subreaper's orphan reaping never takes it.
  int rc = SpawnRegistered([&](pid_t* pid) {
    int r = ::posix_spawnp(&p.pid_, argv[0], &fa, &attr, argv.data(), env != nullptr ? envp.data() : environ);
    *pid = p.pid_;
    return r;
  });

  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    p.pid_ = -1;
    p.reaped_ = true;
    if (rc == ENOENT) return Status::NotFound("program not found: " + options.argv[0]);
    return Status::FromErrno("spawn " + options.argv[0], rc);
  }
  p.out_ = std::move(out_r);
  p.err_ = std::move(err_r);
  if (in_w.valid()) {
    p.in_ = std::move(in_w);
    p.stdin_data_ = options.stdin_data;
    ::fcntl(p.in_.get(), F_SETFL, O_NONBLOCK);
  }
  return p;
}

bool Subprocess::Exited() const {
  if (pid_ <= 0) return true;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno == ECHILD;
  return info.si_pid == pid_;
}

void Subprocess::Signal(int sig) const {
  if (pid_ > 0 && !reaped_) {
    if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
  }
}

Result<std::string> Subprocess::ReadLine(const Deadline& deadline, size_t max_bytes, const CancelToken* cancel) {
  for (;;) {
    size_t nl = line_buf_.find('\n');
    if (nl != std::string::npos) {
      if (skipping_line_) {
        // The end of a line that was too long: drop it, go on after it.
        line_buf_.erase(0, nl + 1);
        skipping_line_ = false;
        continue;
      }
      if (nl > max_bytes) {
        line_buf_.erase(0, nl + 1);
        return Status::InvalidArgument("a line of more than " + std::to_string(max_bytes) + " bytes");
      }
      std::string line = line_buf_.substr(0, nl);
      line_buf_.erase(0, nl + 1);
      return line;
    }
    if (skipping_line_) line_buf_.clear();
    if (!skipping_line_ && line_buf_.size() > max_bytes) {
      line_buf_.clear();
      skipping_line_ = true;
      return Status::InvalidArgument("a line of more than " + std::to_string(max_bytes) + " bytes");
    }
    if (!out_.valid()) return Status::NotFound("end of output");
    if (cancel != nullptr && cancel->cancelled()) return Status::Cancelled("cancelled");
    int timeout_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - SteadyClock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    struct pollfd pfd[2] = {{out_.get(), POLLIN, 0}, {cancel != nullptr ? cancel->wake_fd() : -1, POLLIN, 0}};
    int r = ::poll(pfd, cancel != nullptr && cancel->wake_fd() >= 0 ? 2 : 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Status::Timeout("no line before the deadline");
    if (pfd[0].revents == 0) continue;  // the cancel: seen at the top
    char buf[65536];
    ssize_t n = ::read(out_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out_.reset();
      if (!line_buf_.empty()) {
        std::string line = std::move(line_buf_);
        line_buf_.clear();
        return line;
      }
      return Status::NotFound("end of output");
    }
    line_buf_.append(buf, static_cast<size_t>(n));
  }
}

namespace {
// Writing to a pipe whose reader is gone raises SIGPIPE, which would end
// the whole process: blocked for this thread while it writes, and a
// SIGPIPE it raised taken back before unblocking (EPIPE says it all).
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    if (!was_pending_) {
      struct timespec zero = {0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};
}  // namespace

Status Subprocess::WriteStdin(std::string_view data, const Deadline& deadline) {
  NoSigpipe no_sigpipe;
  size_t done = 0;
  while (done < data.size()) {
    if (!in_.valid()) return Status::Unavailable("its input is closed");
    ssize_t w = ::write(in_.get(), data.data() + done, data.size() - done);
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno != EAGAIN) return Status::Unavailable(std::string("it stopped reading (") + std::strerror(errno) + ")");
    int timeout_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - SteadyClock::now());
      if (left.count() <= 0) return Status::Timeout("it does not read its input");
      timeout_ms = static_cast<int>(left.count());
    }
    struct pollfd pfd = {in_.get(), POLLOUT, 0};
    if (::poll(&pfd, 1, timeout_ms) == 0) return Status::Timeout("it does not read its input");
  }
  return Status::Ok();
}

void Subprocess::Reap(SubprocessResult* r) {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  UnregisterChild(pid_);
  reaped_ = true;
  if (WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r->term_signal = WTERMSIG(status);
}

SubprocessResult Subprocess::Wait(const CancelToken* cancel) {
  SubprocessResult r;
  CappedBuffer out(options_.max_output), err(options_.max_output);
  out.Append(line_buf_.data(), line_buf_.size());
  line_buf_.clear();
  // A pidfd becomes readable when the child exits, so poll() wakes for that
  // too; without one (old kernels) poll() ticks every 20 ms instead.
  ScopedFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  Deadline deadline = DeadlineIn(options_.timeout_s);
  Deadline stop_at;  // once set: kill the group, then give up on the pipes here
  bool exited = false;
  bool killed = false;
  char buf[65536];
  auto check_exit = [&] {
    if (exited) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return;
    UnregisterChild(pid_);
    exited = true;
    reaped_ = true;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
    pidfd.reset();
    // Whatever it left behind in its group gets a short grace to finish
    // writing, then is killed.
    if (!stop_at) stop_at = DeadlineIn(options_.group_grace_s);
  };
  for (;;) {
    check_exit();
    if (!killed && !exited) {
      if (Expired(deadline)) r.timed_out = true;
      if (cancel != nullptr && cancel->cancelled()) r.cancelled = true;
      if (r.timed_out || r.cancelled) {
        killed = true;
        Signal(SIGKILL);
        stop_at = DeadlineIn(0.1);
      }
    }
    if (stop_at && Expired(stop_at)) {
      // Only what escaped the group (setsid) can still hold the pipes.
      ::kill(-pid_, SIGKILL);
      if (exited || !out_.valid()) break;
    }
    if (exited && !out_.valid() && !err_.valid()) break;
    struct pollfd fds[5];
    int n = 0;
    int out_i = -1, err_i = -1, in_i = -1, pid_i = -1;
    if (cancel != nullptr && !killed && cancel->wake_fd() >= 0) fds[n++] = {cancel->wake_fd(), POLLIN, 0};
    if (out_.valid()) { out_i = n; fds[n++] = {out_.get(), POLLIN, 0}; }
    if (err_.valid()) { err_i = n; fds[n++] = {err_.get(), POLLIN, 0}; }
    if (in_.valid()) { in_i = n; fds[n++] = {in_.get(), POLLOUT, 0}; }
    if (pidfd.valid()) { pid_i = n; fds[n++] = {pidfd.get(), POLLIN, 0}; }
    int64_t wait_ms = pidfd.valid() || exited ? -1 : 20;
    auto until = [&](const Deadline& d) {
      if (!d) return;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*d - SteadyClock::now());
      int64_t ms = std::max<int64_t>(0, left.count() + 1);
      wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
    };
    if (!killed) until(deadline);
    until(stop_at);
    // Without an eventfd to wake us, look at the flag now and then.
    if (cancel != nullptr && !killed && cancel->wake_fd() < 0) {
      wait_ms = wait_ms < 0 ? 50 : std::min<int64_t>(wait_ms, 50);
    }
    int rc = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(wait_ms));
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto drain = [&](int idx, ScopedFd& fd, CappedBuffer& into) {
      if (idx < 0 || fds[idx].revents == 0) return;
      ssize_t got = ::read(fd.get(), buf, sizeof buf);
      if (got > 0) {
        into.Append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fd.reset();
      }
    };
    drain(out_i, out_, out);
    drain(err_i, err_, err);
    if (in_i >= 0 && fds[in_i].revents != 0) {
      if ((fds[in_i].revents & (POLLERR | POLLHUP)) != 0) {
        in_.reset();
      } else {
        ssize_t w = ::write(in_.get(), stdin_data_.data() + stdin_pos_,
                            stdin_data_.size() - stdin_pos_);
        if (w > 0) stdin_pos_ += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_pos_ >= stdin_data_.size()) {
          in_.reset();
        }
      }
    }
    (void)pid_i;  // its readiness is picked up by check_exit()
  }
  // A last look at what is already in the pipes, without waiting.
  for (auto [fd, into] : {std::pair{&out_, &out}, std::pair{&err_, &err}}) {
    if (!fd->valid()) continue;
    ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
    ssize_t got;
    while ((got = ::read(fd->get(), buf, sizeof buf)) > 0) into->Append(buf, static_cast<size_t>(got));
  }
  out_.reset();
  err_.reset();
  in_.reset();
  if (!exited) {
    Signal(SIGKILL);
    Reap(&r);
  }
  // Nothing of the group may outlive the call, nor what left the group.
  // Something still in the group is waited for: killed, it is gone only
  // once it next runs.
  if (::kill(-pid_, SIGKILL) == 0 && !AwaitGroupExit(pid_, 5)) {
    LogWarning("a process of group " + std::to_string(pid_) + " has not exited within 5 s of SIGKILL");
  }
  if (!options_.tag.empty()) KillTagged(options_.tag);
  r.out = out.Take(&r.out_dropped);
  r.err = err.Take(&r.err_dropped);
  return r;
}

Result<SubprocessResult> RunSubprocess(const SubprocessOptions& options,
                                       const CancelToken* cancel) {
  MATES_ASSIGN_OR_RETURN(Subprocess p, Subprocess::Start(options));
  return p.Wait(cancel);
}

Result<SubprocessResult> RunListed(const SubprocessOptions& options, const ProcessJournal* journal,
                                   const CancelToken* cancel) {
  if (journal == nullptr) return RunSubprocess(options, cancel);
  if (options.tag.empty()) return Status::InvalidArgument("a listed process needs a tag");
  // A record that cannot be written is a cleanup the next host will miss,
  // not a reason to refuse the command.
  if (Status s = journal->Add({0, 0, options.tag}); !s.ok()) LogDebug("process list: " + s.message());
  auto started = Subprocess::Start(options);
  if (!started.ok()) {
    (void)journal->Remove(options.tag);
    return started.status();
  }
  (void)journal->Started(options.tag, started->pid(), ProcessStartTime(started->pid()));
  SubprocessResult r = started->Wait(cancel);
  (void)journal->Remove(options.tag);
  return r;
}

}  // namespace mates
