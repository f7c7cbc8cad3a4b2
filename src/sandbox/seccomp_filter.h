// The seccomp program every sandboxed process runs under (DESIGN §18,
// §26), as bwrap reads it from a file descriptor (BPF), built with
// libseccomp: EPERM for what changes mounts or namespaces, reaches into
// another process, the kernel's keyring, BPF, modules or the terminal
// (TIOCSTI, TIOCLINUX); ENOSYS for clone3, whose flags a filter cannot see.
#pragma once

#include <string>

#include "core/status.h"

namespace mates::sandbox {

Result<std::string> BuildSeccompFilter();

}  // namespace mates::sandbox
