#include "core/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/log.h"

namespace mates {
namespace {

std::mutex g_children_mu;
std::set<pid_t>& Children() {  // guarded by g_children_mu
  static auto* children = new std::set<pid_t>();
  return *children;
}

// Reads at most `cap` bytes of a /proc file (they are generated, and an
// environment can be large).
std::string ReadProcFile(const std::string& path, size_t cap) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  std::string out;
  char buf[8192];
  while (out.size() < cap) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  uint64_t start_time = 0;
};

// /proc/<pid>/stat: "pid (comm) state ppid … starttime …"; comm may hold
// spaces and parentheses, so fields are counted from the last ')'.
bool ReadStat(pid_t pid, ProcStat* out) {
  std::string s = ReadProcFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  size_t close = s.rfind(')');
  if (close == std::string::npos || close + 2 >= s.size()) return false;
  std::string_view rest(s.data() + close + 2, s.size() - close - 2);
  int field = 3;  // the state
  while (!rest.empty()) {
    size_t sp = rest.find(' ');
    std::string_view f = rest.substr(0, sp);
    if (field == 3 && !f.empty()) out->state = f[0];
    if (field == 4) std::from_chars(f.data(), f.data() + f.size(), out->ppid);
    if (field == 5) std::from_chars(f.data(), f.data() + f.size(), out->pgrp);
    if (field == 22) {
      std::from_chars(f.data(), f.data() + f.size(), out->start_time);
      return true;
    }
    if (sp == std::string_view::npos) break;
    rest.remove_prefix(sp + 1);
    ++field;
  }
  return false;
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return pids;
  while (struct dirent* e = ::readdir(d)) {
    pid_t pid = 0;
    const char* name = e->d_name;
    auto [p, ec] = std::from_chars(name, name + std::strlen(name), pid);
    if (ec == std::errc() && *p == '\0' && pid > 0) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

// Whether `environ` (NUL-separated) holds MATES_PROC_TAG=<tag>: that tag,
// or any tag of a host's prefix (one that ends in '-'). A whole tag is not
// a prefix: "…-1" must not match "…-10".
bool HasTag(const std::string& environ_block, std::string_view tag) {
  const std::string needle = std::string(kProcTagVar) + "=" + std::string(tag);
  const bool prefix = !tag.empty() && tag.back() == '-';
  size_t pos = 0;
  while (pos < environ_block.size()) {
    size_t end = environ_block.find('\0', pos);
    if (end == std::string::npos) end = environ_block.size();
    if (environ_block.compare(pos, needle.size(), needle) == 0 && (prefix || end - pos == needle.size())) {
      return true;
    }
    pos = end + 1;
  }
  return false;
}

// Reaps `pid` if it is an unregistered child of ours; `block` waits for it
// (it was just sent SIGKILL).
void ReapIfOrphan(pid_t pid, bool block) {
  std::lock_guard<std::mutex> lock(g_children_mu);
  if (Children().count(pid) > 0) return;
  int status = 0;
  while (::waitpid(pid, &status, block ? 0 : WNOHANG) < 0 && errno == EINTR) {
  }
}

}  // namespace

void BecomeSubreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    LogWarning("cannot become a child subreaper: orphans of tools go to init");
  }
}

std::string HostTagPrefixOf(pid_t pid, uint64_t start_time) {
  return "m" + std::to_string(pid) + "." + std::to_string(start_time) + "-";
}

const std::string& HostTagPrefix() {
  static const std::string prefix = [] {
    ProcStat st;
    ReadStat(::getpid(), &st);
    return HostTagPrefixOf(::getpid(), st.start_time);
  }();
  return prefix;
}

std::string NewProcessTag() {
  static std::atomic<uint64_t> next{1};
  return HostTagPrefix() + std::to_string(next.fetch_add(1));
}

namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Until the process behind `pidfd` has exited or `end` has come.
bool AwaitPidfd(int pidfd, std::chrono::steady_clock::time_point end) {
  struct pollfd pfd = {pidfd, POLLIN, 0};
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    int rc = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (rc == 1) return true;
    if (rc < 0 && errno == EINTR) continue;
    return false;
  }
}

}  // namespace

bool WaitProcessExit(pid_t pid, double seconds) {
  int fd = PidfdOpen(pid);
  if (fd < 0) return errno == ESRCH;
  ScopedFd pidfd(fd);
  return AwaitPidfd(pidfd.get(), std::chrono::steady_clock::now() +
                                     std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
}

bool AwaitGroupExit(pid_t pgid, double seconds) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  std::vector<ScopedFd> members;
  for (pid_t pid : AllPids()) {
    ProcStat st;
    if (!ReadStat(pid, &st) || st.pgrp != pgid || st.state == 'Z') continue;
    ScopedFd pidfd(PidfdOpen(pid));
    // Read again once the pidfd holds it: the pid may have been reused.
    if (pidfd.valid() && ReadStat(pid, &st) && st.pgrp == pgid) members.push_back(std::move(pidfd));
  }
  for (const auto& fd : members) {
    if (!AwaitPidfd(fd.get(), end)) return false;
  }
  return true;
}

// Processes whose environment stayed empty through a whole look-again
// window (the VM's init, say): not in an exec, only without one; by pid
// and start time, so that a new process on the same pid is looked at.
class Envless {
 public:
  static Envless& Get() {
    static Envless known;
    return known;
  }
  bool Known(pid_t pid, uint64_t start) {
    std::lock_guard<std::mutex> lock(mu_);
    return known_.count({pid, start}) > 0;
  }
  void Remember(pid_t pid, uint64_t start) {
    std::lock_guard<std::mutex> lock(mu_);
    if (known_.size() >= 256) known_.clear();
    known_.insert({pid, start});
  }

 private:
  std::mutex mu_;
  std::set<std::pair<pid_t, uint64_t>> known_;  // guarded by mu_
};

// An exec makes a process's environment read empty for a moment (between
// its new memory and the new program's stack being set up): such a process
// may carry the tag a moment later. Not a zombie, a kernel thread, one we
// may not read, or one known to have no environment.
bool MayBeInExec(pid_t pid, const std::string& environ_path, uint64_t* start) {
  ProcStat st;
  if (!ReadStat(pid, &st)) return false;                 // gone
  if (st.state == 'Z' || st.state == 'X') return false;  // dead: no environment any more
  if (pid == 2 || st.ppid == 2) return false;            // a kernel thread: never one
  *start = st.start_time;
  return ::access(environ_path.c_str(), R_OK) == 0 && !Envless::Get().Known(pid, st.start_time);
}

int KillTagged(std::string_view tag_prefix) {
  if (tag_prefix.empty()) return 0;
  const pid_t self = ::getpid();
  // Each process once: one killed in a pass may still be dying (its
  // environ readable) in the next.
  std::set<pid_t> killed;
  // Held on each one killed: the signal goes to the process whose environ
  // was read (a pidfd cannot follow a reused pid), and its exit is waited
  // for below.
  std::vector<ScopedFd> dying;
  auto environ_of = [](pid_t pid) { return "/proc/" + std::to_string(pid) + "/environ"; };
  // Kills `pid` if its environment holds the tag.
  auto kill_if_tagged = [&](pid_t pid, const std::string& environ_block) {
    if (!HasTag(environ_block, tag_prefix)) return false;
    ScopedFd pidfd(PidfdOpen(pid));
    if (pidfd.valid()) {
      // Read again through the pinned process: the pid may have been
      // reused between the first read and the pidfd.
      if (!HasTag(ReadProcFile(environ_of(pid), 1 << 20), tag_prefix)) return false;
      if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) != 0) return false;
    } else if (errno == ESRCH || ::kill(pid, SIGKILL) != 0) {
      return false;  // gone meanwhile (without pidfds, before Linux 5.3: killed, not waited for)
    }
    killed.insert(pid);
    if (pidfd.valid()) dying.push_back(std::move(pidfd));
    return true;
  };
  // A pass may miss a process forked after /proc was listed: repeat until
  // one finds nothing new (bounded, against a fork bomb winning the race).
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<pid_t> hit;
    std::vector<std::pair<pid_t, uint64_t>> in_exec;  // pid, start time
    for (pid_t pid : AllPids()) {
      if (pid == self || killed.count(pid) > 0) continue;
      std::string environ_block = ReadProcFile(environ_of(pid), 1 << 20);
      uint64_t start = 0;
      if (environ_block.empty() && MayBeInExec(pid, environ_of(pid), &start))
        in_exec.push_back({pid, start});
      if (kill_if_tagged(pid, environ_block)) hit.push_back(pid);
    }
    // Those in an exec are read again until their environment is there,
    // for at most ~5 ms. Polled: nothing tells an unprivileged process that
    // another's exec is done (a pidfd wakes only at exit; the kernel's
    // process-event connector needs CAP_NET_ADMIN), and the window is
    // microseconds unless the machine is loaded.
    for (int look = 0; look < 20 && !in_exec.empty(); ++look) {
      std::this_thread::sleep_for(std::chrono::microseconds(250));
      std::erase_if(in_exec, [&](const std::pair<pid_t, uint64_t>& p) {
        std::string environ_block = ReadProcFile(environ_of(p.first), 1 << 20);
        if (environ_block.empty()) {
          ProcStat st;  // still in its exec, unless it ended meanwhile
          return !ReadStat(p.first, &st) || st.state == 'Z' || st.state == 'X';
        }
        if (kill_if_tagged(p.first, environ_block)) hit.push_back(p.first);
        return true;
      });
    }
    for (const auto& [pid, start] : in_exec) Envless::Get().Remember(pid, start);
    if (hit.empty()) break;
    for (pid_t pid : hit) {
      ProcStat st;
      if (ReadStat(pid, &st) && st.ppid == self) ReapIfOrphan(pid, /*block=*/true);
    }
  }
  // Killed means gone when this returns: SIGKILL is acted on when the
  // process next runs, which on a loaded machine is not at once. Bounded:
  // a process stuck in the kernel (an unreachable NFS mount) dies later.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (const auto& fd : dying) {
    if (!AwaitPidfd(fd.get(), end)) {
      LogWarning("a killed process of " + std::string(tag_prefix) + " has not exited within 5 s");
      break;
    }
  }
  ReapOrphans();
  return static_cast<int>(killed.size());
}

void ReapOrphans() {
  const pid_t self = ::getpid();
  for (pid_t pid : AllPids()) {
    ProcStat st;
    if (ReadStat(pid, &st) && st.ppid == self && st.state == 'Z') ReapIfOrphan(pid, /*block=*/false);
  }
}

int SpawnRegistered(const std::function<int(pid_t*)>& spawn) {
  std::lock_guard<std::mutex> lock(g_children_mu);
  pid_t pid = -1;
  int rc = spawn(&pid);
  if (rc == 0 && pid > 0) Children().insert(pid);
  return rc;
}

void UnregisterChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(g_children_mu);
  Children().erase(pid);
}

uint64_t ProcessStartTime(pid_t pid) {
  ProcStat st;
  return ReadStat(pid, &st) ? st.start_time : 0;
}

bool ProcessLives(pid_t pid, uint64_t start_time) {
  ProcStat st;
  return ReadStat(pid, &st) && st.start_time == start_time && st.state != 'Z' && st.state != 'X';
}

namespace {

std::mutex g_journals_mu;
// What each journal file lists now, per path; guarded by g_journals_mu.
std::map<std::string, std::vector<ProcessRecord>>& Journals() {
  static auto* journals = new std::map<std::string, std::vector<ProcessRecord>>();
  return *journals;
}

Status WriteJournalLocked(const fs::path& path, const std::vector<ProcessRecord>& records) {
  if (records.empty()) {
    std::error_code ec;
    fs::remove(path, ec);
    return Status::Ok();
  }
  std::string data;
  for (const auto& r : records) {
    data += DumpJson(Json{{"pid", r.pid}, {"start_time", r.start_time}, {"tag", r.tag}}) + "\n";
  }
  return WriteFileAtomic(path, data);
}

}  // namespace

Status ProcessJournal::Add(const ProcessRecord& r) const {
  std::lock_guard<std::mutex> lock(g_journals_mu);
  auto& records = Journals()[path_.string()];
  records.push_back(r);
  return WriteJournalLocked(path_, records);
}

Status ProcessJournal::Started(const std::string& tag, pid_t pid, uint64_t start_time) const {
  std::lock_guard<std::mutex> lock(g_journals_mu);
  auto& records = Journals()[path_.string()];
  for (auto& r : records) {
    if (r.tag != tag) continue;
    r.pid = pid;
    r.start_time = start_time;
    return WriteJournalLocked(path_, records);
  }
  records.push_back({pid, start_time, tag});
  return WriteJournalLocked(path_, records);
}

Status ProcessJournal::Remove(const std::string& tag) const {
  std::lock_guard<std::mutex> lock(g_journals_mu);
  auto& records = Journals()[path_.string()];
  std::erase_if(records, [&](const ProcessRecord& r) { return r.tag == tag; });
  return WriteJournalLocked(path_, records);
}

Result<int> ProcessJournal::KillLeftovers() const {
  // Bounded like every file mates reads: a list of 4 MiB is some 50,000
  // trees; what lies past it is not read.
  auto data = ReadFilePrefix(path_, 4 << 20);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return 0;
    return data.status();
  }
  int alive = 0;
  size_t start = 0;
  while (start < data->size()) {
    size_t end = data->find('\n', start);
    if (end == std::string::npos) end = data->size();
    auto j = ParseJson(std::string_view(*data).substr(start, end - start));
    start = end + 1;
    if (!j.ok()) continue;
    auto pid = JsonInt(*j, "pid", true);
    auto started = JsonInt(*j, "start_time", true);
    auto tag = JsonString(*j, "tag", true);
    if (!pid.ok() || !started.ok() || !tag.ok() || *pid < 0) continue;
    // Whole tags of a host's kind ("m<pid>.<start>-<n>"): never an empty
    // prefix, nor a host's ("…-"), which would match every tree of a host
    // that may be alive.
    if (tag->size() < 4 || (*tag)[0] != 'm' || tag->back() == '-') continue;
    // A root of 0 was not started yet when the list was written: its tag
    // alone says what to kill. (Never init, nor a number no pid can be.)
    const bool has_root = *pid > 1 && *pid <= std::numeric_limits<pid_t>::max();
    // Pinned before its start time is compared: the signal and the wait
    // below are for that process, whatever happens to its pid meanwhile.
    ScopedFd root(has_root ? PidfdOpen(static_cast<pid_t>(*pid)) : -1);
    bool root_alive = has_root && (root.valid() || errno != ESRCH) &&
                      ProcessStartTime(static_cast<pid_t>(*pid)) == static_cast<uint64_t>(*started);
    if (root_alive) {
      ::kill(-static_cast<pid_t>(*pid), SIGKILL);
      if (root.valid()) {
        ::syscall(SYS_pidfd_send_signal, root.get(), SIGKILL, nullptr, 0);
      } else {
        ::kill(static_cast<pid_t>(*pid), SIGKILL);
      }
    }
    int tagged = KillTagged(*tag);
    if (root_alive && root.valid() &&
        !AwaitPidfd(root.get(), std::chrono::steady_clock::now() + std::chrono::seconds(5))) {
      LogWarning("a leftover process (pid " + std::to_string(*pid) + ") has not exited within 5 s of SIGKILL");
    }
    if (root_alive || tagged > 0) ++alive;
  }
  std::lock_guard<std::mutex> lock(g_journals_mu);
  Journals().erase(path_.string());
  std::error_code ec;
  fs::remove(path_, ec);
  return alive;
}

}  // namespace mates
