// sandbox_probe ATTEMPT [PID]: tries one thing a sandboxed tool must not
// be able to do, by the system call itself (no tool in between that might
// be missing or refuse for its own reasons). Exit 0: it worked (an escape);
// exit 1: refused, with the error on stdout; exit 2: bad usage.
//
//   mount        a tmpfs over /mnt
//   unshare      a new user namespace, then a new mount namespace
//   clone-ns     clone() with CLONE_NEWUSER
//   setns        into pid 1's mount namespace
//   keyctl       a key in the session keyring
//   bpf          a BPF array map
//   ptrace PID   attach to PID (the host's view of a process outside)
//   ptrace-child attach to a child of its own
//   vm-read PID  process_vm_readv of PID
//   kill PID     SIGTERM to PID
//   tiocsti      push a character into the input of the terminal on fd 0
//   tioclinux    TIOCLINUX's paste on fd 0 (a console's; a pty says ENOTTY
//                or EINVAL, which is not the sandbox's EPERM: exit 1 and
//                the error either way, the caller tells them apart)
//   connect PATH a connection to the unix socket at PATH
#include <fcntl.h>
#include <linux/bpf.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int Said(const char* what, long rc) {
  if (rc >= 0) {
    std::printf("%s: worked\n", what);
    return 0;
  }
  std::printf("%s: %s\n", what, std::strerror(errno));
  return 1;
}


int Probe(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string a = argv[1];
  const pid_t pid = argc > 2 ? static_cast<pid_t>(std::atol(argv[2])) : 0;
  if (a == "mount") return Said("mount", ::mount("none", "/mnt", "tmpfs", 0, nullptr));
  if (a == "unshare") {
    if (::unshare(CLONE_NEWUSER) != 0) return Said("unshare(CLONE_NEWUSER)", -1);
    return Said("unshare(CLONE_NEWNS)", ::unshare(CLONE_NEWNS));
  }
  if (a == "clone-ns") {
    long child = ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0);
    if (child == 0) ::_exit(0);
    if (child > 0) ::waitpid(static_cast<pid_t>(child), nullptr, 0);
    return Said("clone(CLONE_NEWUSER)", child);
  }
  if (a == "setns") {
    int fd = ::open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Said("open /proc/1/ns/mnt", -1);
    return Said("setns", ::setns(fd, 0));
  }
  if (a == "keyctl") {
    return Said("add_key", ::syscall(SYS_add_key, "user", "mates-probe", "x", 1, -3 /*KEY_SPEC_SESSION_KEYRING*/));
  }
  if (a == "bpf") {
    union bpf_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    long fd = ::syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return Said("bpf(BPF_MAP_CREATE)", fd);
  }
  if (a == "ptrace") {
    long rc = ::ptrace(PTRACE_ATTACH, pid, nullptr, nullptr);
    if (rc == 0) ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    return Said("ptrace(PTRACE_ATTACH)", rc);
  }
  if (a == "ptrace-child") {
    pid_t child = ::fork();
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    long rc = ::ptrace(PTRACE_ATTACH, child, nullptr, nullptr);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return Said("ptrace(PTRACE_ATTACH) of a child", rc);
  }
  if (a == "vm-read") {
    char buf[16];
    struct iovec local = {buf, sizeof buf};
    struct iovec remote = {reinterpret_cast<void*>(0x400000), sizeof buf};
    long rc = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    // EFAULT means the call reached the process's memory: it worked.
    if (rc < 0 && errno == EFAULT) rc = 0;
    return Said("process_vm_readv", rc);
  }
  if (a == "kill") return Said("kill", ::kill(pid, SIGTERM));
  if (a == "connect") {
    if (argc < 3) return 2;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, argv[2], sizeof addr.sun_path - 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Said("socket", fd);
    return Said("connect", ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  }
  if (a == "tiocsti") {
    const char c = '#';
    return Said("ioctl(TIOCSTI)", ::ioctl(0, TIOCSTI, &c));
  }
  if (a == "tioclinux") {
    char sub = 3;  // TIOCL_PASTESEL
    return Said("ioctl(TIOCLINUX)", ::ioctl(0, TIOCLINUX, &sub));
  }
  return 2;
}

}  // namespace

// Said at once (unbuffered), and ended by _Exit: no exit handler runs,
// LeakSanitizer's among them, which dies in the sandbox (it needs ptrace)
// whatever ASAN_OPTIONS the caller passed.
int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::_Exit(Probe(argc, argv));
}
