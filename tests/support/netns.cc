#include "support/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/subprocess.h"

namespace mates::testing {

namespace {

constexpr const char* kBridge = "br0";
constexpr const char* kSubnet = "10.77.0.";

// Forks the holder of a new set of namespaces and, inside them, the
// machine's PID 1; returns PID 1 as this process numbers it (and the
// holder in *holder), or -1. The children make system calls only (this
// process has threads): no allocation, no lock, until they are gone.
pid_t Spawn(const char* hostname, const char* disk, const char* disk_options, pid_t* holder) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t parent = ::getpid();
  const pid_t h = ::fork();
  if (h < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (h == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    if (::unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID) != 0) ::_exit(2);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(3);
    if (::sethostname(hostname, std::strlen(hostname)) != 0) ::_exit(4);
    if (disk != nullptr && ::mount("tmpfs", disk, "tmpfs", 0, disk_options) != 0) ::_exit(5);
    const pid_t init = ::fork();
    if (init < 0) ::_exit(6);
    if (init == 0) {
      // PID 1: dies with the holder (and the kernel then ends every other
      // process of the machine); its own /proc, so that the machine's
      // processes see their own numbers; reaps what is orphaned.
      // (Its parent is outside its PID namespace: getppid() says 0 here,
      // so the holder's end before the prctl cannot be told; the holder
      // waits for it and ends only when the test does.)
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) ::_exit(7);
      ::close(fds[1]);
      for (;;) {
        if (::waitpid(-1, nullptr, 0) < 0) {
          struct timespec ts = {0, 50 * 1000 * 1000};
          ::nanosleep(&ts, nullptr);
        }
      }
    }
    (void)!::write(fds[1], &init, sizeof init);
    ::close(fds[1]);
    int st = 0;
    ::waitpid(init, &st, 0);
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t init = -1;
  const ssize_t n = ::read(fds[0], &init, sizeof init);
  ::close(fds[0]);
  if (n != static_cast<ssize_t>(sizeof init)) {
    ::kill(h, SIGKILL);
    ::waitpid(h, nullptr, 0);
    return -1;
  }
  *holder = h;
  return init;
}

void End(pid_t holder) {
  if (holder <= 0) return;
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
}

std::vector<std::string> Inside(pid_t init, const std::vector<std::string>& argv, bool all) {
  std::vector<std::string> out = {"nsenter", "-t", std::to_string(init), "-n"};
  if (all) out.insert(out.end(), {"-p", "-m", "-u"});
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Status Checked(const CommandResult& r, const std::string& what) {
  if (r.exit_code == 0) return Status::Ok();
  return Status::Internal(what + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err + r.out);
}

}  // namespace

std::string Network::Unavailable() {
  if (::geteuid() != 0) return "not root: namespaces and links cannot be made";
  for (const char* tool : {"ip", "nsenter", "nft"}) {
    if (Run({"sh", "-c", std::string("command -v ") + tool}).exit_code != 0) return std::string("no `") + tool + "`";
  }
  const pid_t p = ::fork();
  if (p == 0) ::_exit(::unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWPID) == 0 ? 0 : errno);
  int st = 0;
  if (p < 0 || ::waitpid(p, &st, 0) != p || !WIFEXITED(st)) return "no child to try namespaces in";
  if (WEXITSTATUS(st) != 0) return std::string("unshare: ") + std::strerror(WEXITSTATUS(st));
  return "";
}

Result<std::unique_ptr<Network>> Network::Make(const fs::path& dir) {
  std::unique_ptr<Network> n(new Network());
  n->dir_ = dir;
  n->switch_init_ = Spawn("switch", nullptr, nullptr, &n->switch_holder_);
  if (n->switch_init_ < 0) return Status::Internal("the bridge's namespace could not be made");
  MATES_RETURN_IF_ERROR(n->Ip({"link", "add", kBridge, "type", "bridge"}));
  MATES_RETURN_IF_ERROR(n->Ip({"link", "set", kBridge, "up"}));
  return n;
}

Network::~Network() { End(switch_holder_); }

Status Network::Ip(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return Checked(Run(Inside(switch_init_, argv, false)), "ip " + args[0] + " " + args[1]);
}

Result<std::unique_ptr<Machine>> Network::Add(const std::string& name, int disk_mib) {
  std::unique_ptr<Machine> m(new Machine());
  const int n = next_host_++;
  m->name_ = name;
  m->net_ = this;
  m->address_ = kSubnet + std::to_string(n);
  m->link_ = "m" + std::to_string(n);
  m->disk_ = dir_ / name;
  std::error_code ec;
  fs::create_directories(m->disk_, ec);
  if (ec) return Status::Internal("mkdir " + m->disk_.string() + ": " + ec.message());
  const std::string options = "size=" + std::to_string(disk_mib) + "m,mode=0755";
  m->init_ = Spawn(name.c_str(), m->disk_.c_str(), options.c_str(), &m->holder_);
  if (m->init_ < 0) return Status::Internal("machine " + name + "'s namespaces could not be made");
  MATES_RETURN_IF_ERROR(Ip({"link", "add", m->link_, "type", "veth", "peer", "name", "eth0", "netns",
                            std::to_string(m->init_)}));
  MATES_RETURN_IF_ERROR(Ip({"link", "set", m->link_, "master", kBridge, "up"}));
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"ip", "addr", "add", m->address_ + "/24", "dev", "eth0"},
                                             {"ip", "link", "set", "eth0", "up"},
                                             {"ip", "link", "set", "lo", "up"}}) {
    MATES_RETURN_IF_ERROR(Checked(Run(Inside(m->init_, cmd, false)), name + ": " + cmd[1] + " " + cmd[2]));
  }
  return m;
}

Machine::~Machine() { End(holder_); }

fs::path Machine::Outside(const fs::path& inside) const {
  return fs::path("/proc") / std::to_string(init_) / "root" / inside.relative_path();
}

CommandResult Machine::Run(const std::vector<std::string>& argv, double timeout_s) const {
  return testing::Run(Inside(init_, argv, true), timeout_s);
}

Subprocess Machine::Start(const std::vector<std::string>& argv) const {
  return testing::Start(Inside(init_, argv, true));
}

CommandResult Machine::Mates(const fs::path& ws, const std::vector<std::string>& args, double timeout_s) const {
  std::vector<std::string> argv = {MatesBinary(), "--workspace", ws.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, timeout_s);
}

Status Machine::Signal(pid_t pid, int sig) const {
  return Checked(Run({"kill", "-" + std::to_string(sig), std::to_string(pid)}),
                 name_ + ": kill -" + std::to_string(sig) + " " + std::to_string(pid));
}

Status Machine::Cut() { return net_->Ip({"link", "set", link_, "down"}); }
Status Machine::Mend() { return net_->Ip({"link", "set", link_, "up"}); }

Status Machine::Filter(const std::string& peer) {
  auto r = Run({"nft", "add table inet mates_cut; "
                       "add chain inet mates_cut out { type filter hook output priority 0; }; "
                       "add chain inet mates_cut in { type filter hook input priority 0; }; "
                       "add rule inet mates_cut out ip daddr " + peer + " drop; "
                       "add rule inet mates_cut in ip saddr " + peer + " drop"});
  if (r.exit_code != 0) return Status::Internal("nft in " + name_ + ": " + r.err);
  return Status::Ok();
}

Status Machine::Unfilter() {
  auto r = Run({"nft", "delete table inet mates_cut"});
  if (r.exit_code != 0) return Status::Internal("nft in " + name_ + ": " + r.err);
  return Status::Ok();
}

Status Machine::Fill(size_t leave_bytes) {
  const fs::path filler = Outside(disk_ / ".filler");
  struct statvfs sv {};
  if (::statvfs(Outside(disk_).c_str(), &sv) != 0) return Status::FromErrno("statvfs", errno);
  const size_t free_bytes = static_cast<size_t>(sv.f_bavail) * sv.f_frsize;
  size_t want = free_bytes > leave_bytes ? free_bytes - leave_bytes : 0;
  int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("open " + filler.string(), errno);
  std::vector<char> block(1 << 20, 'x');
  while (want > 0) {
    const ssize_t w = ::write(fd, block.data(), std::min(want, block.size()));
    if (w <= 0) break;  // full (ENOSPC): as full as it gets
    want -= static_cast<size_t>(w);
  }
  ::close(fd);
  return Status::Ok();
}

Status Machine::Free() {
  std::error_code ec;
  fs::remove(Outside(disk_ / ".filler"), ec);
  return ec ? Status::Internal("rm filler: " + ec.message()) : Status::Ok();
}

}  // namespace mates::testing
