// The sandbox's seccomp filter (see seccomp_filter.h).
#include "sandbox/seccomp_filter.h"

#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "core/files.h"

namespace mates::sandbox {

Result<std::string> BuildSeccompFilter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return Status::FailedPrecondition("libseccomp could not make a filter");
  struct Release {
    scmp_filter_ctx c;
    ~Release() { seccomp_release(c); }
  } release{ctx};
  // Refused with EPERM: what changes mounts or namespaces, reaches into
  // another process, the kernel's keyring, BPF, modules or the terminal.
  static const char* const kRefused[] = {
      "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
      "fsmount", "fspick", "mount_setattr", "unshare", "setns", "ptrace", "process_vm_readv",
      "process_vm_writev", "pidfd_getfd", "kcmp", "keyctl", "add_key", "request_key", "bpf",
      "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "init_module", "finit_module",
      "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
      "open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "iopl", "ioperm", "vhangup",
      "fanotify_init", "nfsservctl", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
      "sethostname", "setdomainname", "uselib"};
  for (const char* name : kRefused) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) != 0) {
      return Status::Internal(std::string("libseccomp refused a rule for ") + name);
    }
  }
  // clone3 passes its flags in memory, where a filter cannot look: ENOSYS
  // makes libc fall back to clone, whose namespace flags are refused.
  if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0) {
    return Status::Internal("libseccomp refused the clone3 rule");
  }
  static const uint64_t kNewNamespace[] = {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                           CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME};
  // (libseccomp's SCMP_A* macros are C compound literals: spelt out.)
  auto masked = [](unsigned arg, uint64_t mask, uint64_t value) {
    scmp_arg_cmp c{};
    c.arg = arg;
    c.op = SCMP_CMP_MASKED_EQ;
    c.datum_a = mask;
    c.datum_b = value;
    return c;
  };
  for (uint64_t flag : kNewNamespace) {
    const scmp_arg_cmp cmp = masked(0, flag, flag);
    if (seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, &cmp) != 0) {
      return Status::Internal("libseccomp refused a clone rule");
    }
  }
  // Typing into the terminal of whoever started mates.
  for (uint64_t req : {static_cast<uint64_t>(TIOCSTI), static_cast<uint64_t>(TIOCLINUX)}) {
    const scmp_arg_cmp cmp = masked(1, 0xFFFFFFFFu, req);
    if (seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, &cmp) != 0) {
      return Status::Internal("libseccomp refused an ioctl rule");
    }
  }
  int fd = ::memfd_create("mates-seccomp", MFD_CLOEXEC);
  if (fd < 0) return Status::FromErrno("memfd_create", errno);
  ScopedFd mem(fd);
  if (int rc = seccomp_export_bpf(ctx, mem.get()); rc != 0) return Status::FromErrno("seccomp_export_bpf", -rc);
  if (::lseek(mem.get(), 0, SEEK_SET) != 0) return Status::FromErrno("lseek", errno);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(mem.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read", errno);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  if (out.empty()) return Status::Internal("libseccomp made an empty filter");
  return out;
}

}  // namespace mates::sandbox
