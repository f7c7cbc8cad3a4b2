// Machines for the fault harness (DESIGN §32): each a set of Linux
// namespaces of its own (network, mount, PID, hostname) behind one veth
// pair to a bridge, which lives in a namespace of its own too. Nothing is
// added to the test's own network: the addresses (10.77.0.0/24) exist only
// inside the namespaces made here.
//
// Gone on every exit path: a machine's first process (PID 1 of its PID
// namespace) dies with the test process (PR_SET_PDEATHSIG, also when that
// is SIGKILLed), the kernel then ends every process of the machine, and a
// namespace no process is in is freed with its links. No named namespace
// (`ip netns add`) is made: it would outlive a killed test.
//
// Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) and `ip`, `nsenter`
// from iproute2 and util-linux; Available() says why not.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "support/test_util.h"

namespace mates::testing {

namespace fs = std::filesystem;

class Network;

class Machine {
 public:
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  const std::string& name() const { return name_; }
  const std::string& address() const { return address_; }
  // Its first process, as the test's PID namespace numbers it.
  pid_t init_pid() const { return init_; }
  // Its own folder, a tmpfs of `disk_mib` mounted only inside the machine
  // (at the same path as the empty folder the test sees outside).
  const fs::path& disk() const { return disk_; }
  // A path of the machine's, as the test reads it from outside.
  fs::path Outside(const fs::path& inside) const;

  // Runs argv inside the machine (all its namespaces) to its end.
  CommandResult Run(const std::vector<std::string>& argv, double timeout_s = 60) const;
  // Starts argv inside the machine without waiting.
  Subprocess Start(const std::vector<std::string>& argv) const;
  // `mates --workspace ws args…` inside the machine.
  CommandResult Mates(const fs::path& ws, const std::vector<std::string>& args, double timeout_s = 60) const;
  // Sends `sig` to the process the machine numbers `pid`.
  Status Signal(pid_t pid, int sig) const;

  // Its link to the bridge down (packets to and from it are lost, its
  // sockets stay open) and up again.
  Status Cut();
  Status Mend();
  // A packet filter in the machine (nftables) drops what it sends to
  // `peer` and what comes from it, its link up and its other peers
  // reachable; Unfilter() takes it away.
  Status Filter(const std::string& peer);
  Status Unfilter();
  // Fills its disk but for `leave_bytes`; Free() takes the filler away.
  Status Fill(size_t leave_bytes = 0);
  Status Free();

 private:
  friend class Network;
  Machine() = default;

  std::string name_, address_, link_;  // link_: its veth's end on the bridge
  const Network* net_ = nullptr;
  pid_t holder_ = -1;  // in the test's PID namespace, with the machine's other namespaces
  pid_t init_ = -1;    // PID 1 of the machine's PID namespace
  fs::path disk_;
};

class Network {
 public:
  // Empty when machines can be made here, else why not.
  static std::string Unavailable();
  static Result<std::unique_ptr<Network>> Make(const fs::path& dir);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // A machine named `name` (its hostname) at the next address, its disk
  // `disk_mib` MiB under dir/name.
  Result<std::unique_ptr<Machine>> Add(const std::string& name, int disk_mib = 64);

 private:
  friend class Machine;
  Network() = default;
  Status Ip(const std::vector<std::string>& args) const;  // `ip` inside the bridge's namespace

  fs::path dir_;
  pid_t switch_holder_ = -1;
  pid_t switch_init_ = -1;
  int next_host_ = 1;
};

}  // namespace mates::testing
