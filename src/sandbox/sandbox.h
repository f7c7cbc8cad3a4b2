// The sandbox every process an agent's tools start runs in (DESIGN §18):
// bash and what it leaves in the background, merge checks, MCP stdio
// servers.
//
// Mechanism, and why these parts:
//  - Namespaces, through Debian's bubblewrap (`bwrap`): a user namespace
//    with every capability dropped, a mount namespace in which `/` is
//    read-only and only the agent's work root, its private /tmp and the
//    person's `allow_write` are bound writable (team state and the
//    repository's shared git state bound read-only over them, secrets
//    hidden under empty read-only folders or /dev/null), a pid namespace
//    (nothing outside the tool's own tree can be seen, signalled or traced,
//    and all of it dies with its first process: a double fork cannot
//    outlive it; an agent's launcher, its pid 1, kills what a command left
//    before it answers, sandbox/launcher.h), and a network namespace with
//    loopback only.
//    bubblewrap does the namespace and mount work well and is what
//    Flatpak and Claude Code use; doing it by hand would be ~1,000 lines of
//    setup that is easy to get subtly wrong.
//    Nothing a command's text says decides a mount (DESIGN §26), and
//    every unix socket of the host's is out of sight: /run and the
//    private /tmp hide the usual places, and a socket bound anywhere else
//    still shown (W, HOME) is covered with /dev/null — a socket on a
//    read-only mount still answers connect(). /proc/sys is read-only.
//  - seccomp, through libseccomp: a filter (built here, handed to bwrap on
//    a pipe) that refuses mount and the new mount API, unshare/setns and
//    namespace flags to clone, clone3 (ENOSYS, so libc falls back to clone
//    whose flags the filter can see), ptrace and process_vm_*, keyctl,
//    bpf, perf_event_open, userfaultfd, module and kexec calls, terminal
//    injection (TIOCSTI, TIOCLINUX) and file handles; a syscall of another
//    architecture kills the process. bwrap sets no_new_privs.
//  - Landlock is not used: every file rule here is a mount rule the kernel
//    enforces already (read-only binds cannot be remounted without the
//    capabilities that are dropped and the calls seccomp refuses, and a
//    hard link cannot cross mounts), and a Landlock domain set before bwrap
//    would forbid the mounts bwrap makes. `mates doctor` reports it.
//
// Where the kernel or the machine lacks a part (no bwrap, no user
// namespaces, no seccomp), Make fails closed with one error naming it and
// `--sandbox off` as the way out; nothing degrades silently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/files.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "sandbox/net_proxy.h"

namespace mates::sandbox {

enum class Mode { kOff, kWorkspace, kStrict };
std::string_view ModeName(Mode m);  // off, workspace, strict
Result<Mode> ParseMode(std::string_view s);

// What a host's sandbox allows beyond the rules (DESIGN §18). Only the
// person's own config or a trusted workspace file widens it (policy.h).
struct Settings {
  Mode mode = Mode::kWorkspace;
  std::vector<fs::path> allow_write;  // absolute, besides the work root and the private tmp
  std::vector<fs::path> deny_read;    // absolute, besides DefaultSecrets()
  std::vector<std::string> network_allow;  // host names, host:port
  // The relay program for network_allow ("" = mates-relay beside this
  // program, which is mates but in benchmarks).
  fs::path relay;
};

// A digest of what a sandbox of `s` allows (mode, writable and hidden
// folders, network rules), "sha256:…": what a merge's provenance names
// (DESIGN §30), so two merges checked under one policy say so.
std::string PolicyDigest(const Settings& s);

// The secrets no tool may read: ~/.ssh, ~/.aws, … and mates' own trust file.
std::vector<fs::path> DefaultSecrets();

// Where and for whom one process runs.
struct Place {
  fs::path work_root;  // writable: the agent's worktree, or W in shared mode
  std::string team;    // its private tmp is per team and agent
  std::string agent;
  // Its `mates` speaks for the agent (bash): the agent's gate to the host
  // is bound in as MATES_HOST_SOCKET (host/agent_gate.h). A merge check or
  // an MCP server speaks for no one.
  bool speaks = false;
  // Folders the person's configuration says the process runs from (an MCP
  // server's program and the files its arguments name, ProgramFolders),
  // bound read-only where the private /tmp would hide them. Never from a
  // model's text: what it names is not mounted (DESIGN §26).
  std::vector<fs::path> programs = {};
};

// The folders under /tmp that `argv` names as its program or an argument
// (`node /tmp/x/node_modules/pkg/index.js`): the top one of each there,
// since what it loads beside it (its packages, its interpreter) is
// anywhere below. For commands from the person's configuration only.
std::vector<fs::path> ProgramFolders(const std::vector<std::string>& argv);

// A process ready to start inside: `options` runs bwrap, and `keep` holds
// the seccomp filter's pipe until the process has started.
struct Confined {
  SubprocessOptions options;
  ScopedFd keep;
};

// What one sandbox shows of the host's unix sockets (a socket answers
// connect() on a read-only mount): its rules, each a path and whether it
// hides what is below it, and the sockets bound when it was made (each
// covered then where in sight), by inode and path. For a long-lived one
// (a launcher): has a socket bound since come into its sight? One bound
// again where a covered one was counts: the old one's cover went with it.
struct Sight {
  std::vector<std::pair<fs::path, bool>> rules;
  std::vector<std::pair<uint64_t, fs::path>> sockets;  // sorted
  bool ShowsANewSocket() const;
};

class Launcher;  // sandbox/launcher.h

class Sandbox {
 public:
  // The sandbox that is none (`--sandbox off`): Wrap changes nothing.
  static std::shared_ptr<const Sandbox> Off();
  // A sandbox for the tools of workspace `ws`'s agents. Checks once that
  // the machine can make it (bwrap, user namespaces, seccomp): otherwise
  // FailedPrecondition naming what is missing and `--sandbox off`. Its
  // private tmp folders live under `runtime_dir/tmp`, and the whole of
  // `runtime_dir` goes with it (the host's gate keeps its sockets there).
  //
  // Serving::kElsewhere (a tmux cluster's `up`, whose panes outlive it):
  // the gate's and proxy's sockets are made and served by another process
  // (the cluster's router) at the paths the callbacks give, and
  // `runtime_dir` stays when this object goes.
  enum class Serving { kHere, kElsewhere };
  static Result<std::shared_ptr<Sandbox>> Make(const fs::path& ws, Settings settings, fs::path runtime_dir,
                                               Serving serving = Serving::kHere);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // The socket through which `mates` inside reaches the team as `agent`
  // of `team` (host/agent_gate.h). Set by the host before any agent runs.
  using GateOf = std::function<Result<fs::path>(const std::string& team, const std::string& agent)>;
  void SetGate(GateOf gate) { gate_ = std::move(gate); }
  // Where the proxy to network.allow listens for `agent` (set by Make when
  // it serves it here; by the caller when it is served elsewhere).
  void SetProxy(GateOf proxy) { proxy_of_ = std::move(proxy); }
  const std::vector<NetRule>& rules() const { return rules_; }
  // The per-agent socket folders both sides agree on: RUNTIME/gate/NAME,
  // RUNTIME/net/NAME (NAME: SocketDirName).
  static fs::path GateDirOf(const fs::path& runtime_dir, const std::string& team, const std::string& agent);
  fs::path NetDir() const;
  const fs::path& runtime_dir() const { return runtime_dir_; }
  // mates-relay (also the launcher, sandbox/launcher.h).
  const fs::path& relay() const { return relay_; }

  Mode mode() const { return settings_.mode; }
  bool on() const { return settings_.mode != Mode::kOff; }
  const Settings& settings() const { return settings_; }
  // The proxy to the hosts of network.allow (workspace mode with rules),
  // null otherwise: what it refused is there.
  const NetProxy* proxy() const { return proxy_.get(); }

  // `o` rewritten to run inside for `place` (unchanged when off). Safe
  // from any thread. `sight`, if given, gets what it shows of sockets.
  // kCommandIsInit (a launcher): the command is the sandbox's pid 1, which
  // nothing inside can kill, and whose end ends everything inside.
  enum class Init { kBubblewrap, kCommandIsInit };
  Result<Confined> Wrap(const Place& place, SubprocessOptions o, Sight* sight = nullptr,
                        Init init = Init::kBubblewrap) const;
  // The launcher (sandbox/launcher.h) that starts `purpose`'s commands
  // ("bash", "hooks": never one for both, so that a model's command
  // cannot reach a hook's) for `place` in `cwd`: started with the first
  // and kept while this sandbox lives; a new one once the old one broke
  // or a socket bound since came into its sight. Null when off, when
  // mates-relay is missing or a launcher cannot start (said in the debug
  // log): the caller then starts a sandbox per command.
  std::shared_ptr<Launcher> LauncherFor(const std::string& purpose, const Place& place, const std::string& cwd) const;
  // `argv` as a tmux pane runs it inside, in `cwd`: bwrap behind a shell
  // that hands it the seccomp filter from a file (no descriptor of ours
  // reaches a pane). Unchanged when off.
  Result<std::vector<std::string>> WrapPane(const Place& place, const std::vector<std::string>& argv,
                                            const std::string& cwd) const;

  // What to tell a model whose command met the sandbox: "" when `output`
  // shows no sign of it (a read-only file system, a refused operation, no
  // network), else one line naming the rule and how a person widens it.
  std::string Explain(std::string_view output, const Place& place) const;

 private:
  Sandbox(fs::path ws, Settings settings, fs::path runtime_dir);
  Result<fs::path> TmpFor(const Place& place) const;
  // bwrap's arguments for `command`, the filter read from `seccomp_fd`.
  Result<std::vector<std::string>> Args(const Place& place, const std::vector<std::string>& command,
                                        const std::string& cwd, bool long_lived, const std::string& seccomp_fd,
                                        Sight* sight = nullptr, Init init = Init::kBubblewrap) const;

  const fs::path ws_;
  const Settings settings_;
  const fs::path runtime_dir_;
  fs::path git_dir_;          // W's common git folder ("" = not a repository)
  std::string bwrap_;         // its path
  std::string filter_;        // the seccomp program (BPF)
  fs::path relay_;            // mates-relay, the first process of a sandbox with a network
  fs::path self_dir_;         // the folder of this program (mates, on the tools' PATH)
  Serving serving_ = Serving::kHere;
  GateOf gate_;
  GateOf proxy_of_;
  std::vector<NetRule> rules_;
  std::unique_ptr<NetProxy> proxy_;  // when served here
  mutable std::mutex launchers_mu_;
  mutable std::map<std::string, std::shared_ptr<Launcher>> launchers_;  // guarded by launchers_mu_
};

// A private folder for a sandbox's runtime: $TMPDIR/mates-UID/NAME.PID,
// each level this user's own and 0700 (else FailedPrecondition). Those of
// processes that are gone (a host killed by SIGKILL) are removed on the way.
Result<fs::path> RuntimeDirFor(const std::string& name);
// The folder RuntimeDirFor makes them in: TMP/mates-UID.
fs::path RuntimeBase();
// Whether a RuntimeDirFor folder's process (or a fork of it) still lives:
// it holds a lock on the folder's .alive file (its PID would not say
// across PID namespaces).
bool RuntimeDirInUse(const fs::path& dir);

// What the machine supports, for `mates doctor` and the fail-closed error:
// "" when the sandbox can be made, else what is missing.
std::string WhatIsMissing();

}  // namespace mates::sandbox
