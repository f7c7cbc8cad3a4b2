// `mates-relay --launcher`: the launcher (DESIGN §18, §22), the one
// process an agent's bash commands (and, in a launcher of their own, its
// hooks) are started from inside its sandbox. It reads requests on stdin
// (sandbox/launcher_wire.h), runs each with `/bin/sh -c` or `/bin/bash -c`
// in a process group of its own, feeds it its input, keeps its output (up
// to the bound asked: the head, or the head and the tail), kills its group
// at its timeout or when asked, and answers on stdout. Requests run at
// once, each on a thread. It is the sandbox's subreaper: whatever a
// command left running (a daemon, a double fork) is killed once none
// runs, before the last one's answer. At the end of its input it ends, and
// the sandbox with it.
//
// It is not dumpable: the commands it runs, in its sandbox as the same
// user, cannot open its descriptors through /proc (every capability is
// dropped there) and so cannot write an answer of their own to the host.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "sandbox/launcher_wire.h"
#include "core/write_all.h"

namespace {

namespace wire = mates::sandbox::launcher;

extern "C" char** environ;

std::mutex g_out_mu;     // one answer at a time on stdout
std::mutex g_spawn_mu;   // starting a command, and the sweep, exclusive
int g_running = 0;       // commands running; g_spawn_mu
std::map<std::string, pid_t> g_groups;  // each running job's process group, by id; g_spawn_mu

bool WriteAll(int fd, const std::string& s) { return mates::WriteFully(fd, s) == 0; }

// The parent of `pid`, or 0.
pid_t ParentOf(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* close = std::strrchr(buf, ')');
  int ppid = 0;
  if (close == nullptr || std::sscanf(close + 1, " %*c %d", &ppid) != 1) return 0;
  return ppid;
}

// Every process below this one: what commands left behind (as the subreaper,
// whatever they orphaned is below it too). Only descendants, so that a
// launcher run outside a pid namespace could still harm nothing else.
// g_spawn_mu held, no command running.
void Sweep() {
  const pid_t self = ::getpid();
  // Round after round until a look finds none: one killed may have had
  // children of its own, which come to this subreaper once it is gone.
  for (int round = 0; round < 64; ++round) {
    std::vector<int> dying;  // pidfds of those killed: readable once each has ended
    bool any = false;
    DIR* d = ::opendir("/proc");
    if (d == nullptr) return;
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != 0 || pid <= 1 || pid == self) continue;
      pid_t up = static_cast<pid_t>(pid);
      for (int depth = 0; depth < 64 && up > 1 && up != self; ++depth) up = ParentOf(up);
      if (up != self) continue;
      any = true;
      const int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      if (fd >= 0) dying.push_back(fd);
    }
    ::closedir(d);
    // Each one's end, within 100 ms for them all (a kill takes effect at
    // once unless the process is stuck in the kernel).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    for (int fd : dying) {
      const long left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd p{fd, POLLIN, 0};
      if (left > 0) (void)::poll(&p, 1, static_cast<int>(left));
      ::close(fd);
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (!any) return;
  }
}

struct Job {
  std::string id;
  long timeout_ms = 60000;
  size_t max_output = 1 << 20;
  bool bash = false;    // b
  bool merge = false;   // m
  bool middle = false;  // c
  std::string env;      // entries joined by NUL; "" = ours
  std::string command;
  std::string input;
};

// One stream's output as kept: the head, and with `middle` the tail too
// (half of the bound each), and how much was not.
class Kept {
 public:
  Kept(size_t max, bool middle) : head_max_(middle ? max - max / 2 : max), tail_max_(middle ? max / 2 : 0) {}
  void Add(const char* data, size_t n) {
    const size_t to_head = std::min(n, head_max_ - head_.size());
    head_.append(data, to_head);
    data += to_head;
    n -= to_head;
    if (n == 0) return;
    if (tail_max_ == 0) {
      dropped_ += n;
      return;
    }
    tail_.append(data, n);
    if (tail_.size() > tail_max_) {
      const size_t cut = tail_.size() - tail_max_;
      dropped_ += cut;
      tail_.erase(0, cut);
    }
  }
  std::string Take() { return head_ + tail_; }
  size_t dropped() const { return dropped_; }

 private:
  const size_t head_max_, tail_max_;
  std::string head_, tail_;
  size_t dropped_ = 0;
};

// The job's environment: its own entries, then this process's (what the
// sandbox set: they win). Points into `job` and `environ`.
std::vector<char*> EnvironmentOf(Job& job) {
  std::vector<char*> out;
  std::vector<std::string_view> names;
  auto name_of = [](std::string_view e) { return e.substr(0, e.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) names.push_back(name_of(*e));
  if (!job.env.empty()) {
    for (size_t at = 0; at <= job.env.size();) {
      size_t end = job.env.find('\0', at);
      if (end == std::string::npos) end = job.env.size();
      char* entry = job.env.data() + at;  // NUL-ended: by the next separator, or the string's own
      const std::string_view e(entry, end - at);
      if (e.find('=') != std::string_view::npos &&
          std::find(names.begin(), names.end(), name_of(e)) == names.end()) {
        out.push_back(entry);
      }
      at = end + 1;
    }
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.push_back(*e);
  out.push_back(nullptr);
  return out;
}

void RunJob(Job job, std::shared_ptr<std::atomic<bool>> done) {
  struct Done {
    std::atomic<bool>* d;
    ~Done() { d->store(true); }
  } said{done.get()};
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  pid_t pid = -1;
  int pidfd = -1;
  std::vector<char*> env = EnvironmentOf(job);
  const char* shell = job.bash ? "/bin/bash" : "/bin/sh";
  {
    std::lock_guard<std::mutex> l(g_spawn_mu);
    if (::pipe2(in, O_CLOEXEC) == 0 && ::pipe2(out, O_CLOEXEC) == 0 && (job.merge || ::pipe2(err, O_CLOEXEC) == 0)) {
      pid = ::fork();
      if (pid == 0) {
        ::setpgid(0, 0);
        ::signal(SIGPIPE, SIG_DFL);
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(job.merge ? out[1] : err[1], 2);
        const char* argv[] = {job.bash ? "bash" : "sh", "-c", job.command.c_str(), nullptr};
        ::execve(shell, const_cast<char**>(argv), env.data());
        ::_exit(127);
      }
      if (pid > 0) {
        ::setpgid(pid, pid);
        ++g_running;
        g_groups[job.id] = pid;
        pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
      }
    }
    for (int fd : {in[0], out[1], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
  Kept o(job.max_output, job.middle), e(job.max_output, job.middle);
  int code = -1, sig = 0;
  bool timed_out = false;
  if (pid > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(job.timeout_ms);
    size_t fed = 0;
    int fin = in[1], fout = out[0], ferr = err[0];
    if (job.input.empty()) {
      ::close(fin);
      fin = -1;
    } else {
      ::fcntl(fin, F_SETFL, O_NONBLOCK);
    }
    bool exited = false;
    int status = 0;
    char buf[65536];
    // Once it exited, what is still in the pipes is read for a moment more:
    // a pipe held by one that left its group is not waited for.
    auto grace = std::chrono::steady_clock::time_point::max();
    while (fout >= 0 || ferr >= 0 || !exited) {
      const auto now = std::chrono::steady_clock::now();
      if (exited && now >= grace) break;
      const long left = std::chrono::duration_cast<std::chrono::milliseconds>(std::min(deadline, grace) - now).count();
      if (left <= 0 && !exited) {
        timed_out = true;
        break;
      }
      pollfd p[4];
      int n = 0;
      int at_in = -1, at_out = -1, at_err = -1, at_pid = -1;
      if (fin >= 0) p[at_in = n++] = {fin, POLLOUT, 0};
      if (fout >= 0) p[at_out = n++] = {fout, POLLIN, 0};
      if (ferr >= 0) p[at_err = n++] = {ferr, POLLIN, 0};
      if (!exited && pidfd >= 0) p[at_pid = n++] = {pidfd, POLLIN, 0};
      if (::poll(p, n, static_cast<int>(std::min(left, 1000L))) < 0 && errno != EINTR) break;
      if (at_in >= 0 && p[at_in].revents != 0) {
        ssize_t w = ::write(fin, job.input.data() + fed, job.input.size() - fed);
        if (w > 0) fed += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) fed = job.input.size();  // it stopped reading
        if (fed >= job.input.size()) {
          ::close(fin);
          fin = -1;
        }
      }
      for (auto [at, fd, into] : {std::tuple{at_out, &fout, &o}, std::tuple{at_err, &ferr, &e}}) {
        if (at < 0 || p[at].revents == 0) continue;
        ssize_t r = ::read(*fd, buf, sizeof buf);
        if (r > 0) {
          into->Add(buf, static_cast<size_t>(r));
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          ::close(*fd);
          *fd = -1;
        }
      }
      if ((at_pid >= 0 && p[at_pid].revents != 0) || pidfd < 0) {
        const pid_t reaped = ::waitpid(pid, &status, pidfd < 0 ? WNOHANG : 0);
        // ECHILD: the sweep at the launcher's end killed and reaped it.
        // (Looked at again, its pidfd would stay readable: a busy loop
        // to the command's timeout.)
        if (reaped < 0 && errno == ECHILD) status = SIGKILL;
        if (reaped == pid || (reaped < 0 && errno == ECHILD)) {
          exited = true;
          grace = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
          // What it left in its group goes with it.
          ::kill(-pid, SIGKILL);
        }
      }
    }
    ::kill(-pid, SIGKILL);
    if (!exited && ::waitpid(pid, &status, 0) == pid) exited = true;
    if (exited && !timed_out) {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    for (int fd : {fin, fout, ferr, pidfd}) {
      if (fd >= 0) ::close(fd);
    }
    std::lock_guard<std::mutex> l(g_spawn_mu);
    g_groups.erase(job.id);
    if (--g_running == 0) Sweep();
  } else {
    for (int fd : {in[1], out[0], err[0]}) {
      if (fd >= 0) ::close(fd);
    }
  }
  std::string line = job.id + "\t" + std::to_string(code) + "\t" + std::to_string(sig) + "\t" + (timed_out ? "1" : "0") +
                     "\t" + std::to_string(o.dropped() + e.dropped()) + "\t" + wire::Escape(o.Take()) + "\t" +
                     wire::Escape(pid > 0 ? e.Take() : std::string("cannot start ") + shell) + "\n";
  std::lock_guard<std::mutex> l(g_out_mu);
  (void)WriteAll(1, line);
}

// A kill request: the job's group, if it runs.
void Kill(const std::string& id) {
  std::lock_guard<std::mutex> l(g_spawn_mu);
  auto it = g_groups.find(id);
  if (it != g_groups.end()) ::kill(-it->second, SIGKILL);
}

}  // namespace

int LauncherMain() {
  ::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::prctl(PR_SET_DUMPABLE, 0);
  std::string pending;
  char buf[65536];
  // Each request's thread, joined once it is done (and all at the end).
  std::list<std::pair<std::thread, std::shared_ptr<std::atomic<bool>>>> jobs;
  for (;;) {
    for (auto it = jobs.begin(); it != jobs.end();) {
      if (!it->second->load()) {
        ++it;
        continue;
      }
      it->first.join();
      it = jobs.erase(it);
    }
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      auto f = wire::Fields(std::string_view(pending).substr(0, nl));
      if (f.size() == 2 && f[1] == "kill") {
        Kill(std::string(f[0]));
      } else if (f.size() == 7) {
        Job j;
        j.id = std::string(f[0]);
        j.timeout_ms = std::max(1L, std::atol(std::string(f[1]).c_str()));
        j.max_output = static_cast<size_t>(std::max(1L, std::atol(std::string(f[2]).c_str())));
        j.bash = f[3].find('b') != std::string_view::npos;
        j.merge = f[3].find('m') != std::string_view::npos;
        j.middle = f[3].find('c') != std::string_view::npos;
        j.env = wire::Unescape(f[4]);
        j.command = wire::Unescape(f[5]);
        j.input = wire::Unescape(f[6]);
        auto done = std::make_shared<std::atomic<bool>>(false);
        jobs.emplace_back(std::thread(RunJob, std::move(j), done), done);
      }
      pending.erase(0, nl + 1);
    }
  }
  // The host is gone or done: so is everything here.
  {
    std::lock_guard<std::mutex> l(g_spawn_mu);
    Sweep();
  }
  for (auto& [t, done] : jobs) t.join();
  ::_exit(0);
}
