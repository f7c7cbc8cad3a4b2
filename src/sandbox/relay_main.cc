// mates-relay SOCKET PORTS -- COMMAND…   (PORTS: "3128,5432")
// mates-relay --launcher                   (sandbox/launcher_main.cc)
//
// The first process of a sandbox that may reach the network (DESIGN §18,
// sandbox/net_proxy.h): listens on 127.0.0.1 at each port inside the
// sandbox's own network namespace, passes each connection to the agent's
// proxy socket (for a port other than the proxy's, through a CONNECT to
// the host's 127.0.0.1:port), runs COMMAND, and exits as it exits — and
// with it, as the sandbox's first process, everything in the sandbox.
//
// A program of its own, with no library but the C and C++ ones, because it
// starts once per sandboxed command: mates itself takes ~8 ms to load its
// libraries, this ~1 ms.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/pump.h"

extern char** environ;

namespace {

constexpr int kRelayPort = 3128;  // sandbox/net_proxy.h

int ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One connection of the command's, to the proxy.
void Relay(int client, std::string proxy, int port) {
  using mates::sandbox::Pump;
  using mates::sandbox::ReadHead;
  using mates::sandbox::SendAll;
  int up = ConnectUnix(proxy);
  if (up >= 0) {
    bool ready = true;
    if (port != kRelayPort) {
      std::string head, rest;
      ready = SendAll(up, "CONNECT 127.0.0.1:" + std::to_string(port) + " HTTP/1.1\r\n\r\n") &&
              ReadHead(up, &head, &rest) && head.find(" 200 ") != std::string::npos &&
              (rest.empty() || SendAll(client, rest));
    }
    if (ready) Pump(client, up, nullptr);
    ::close(up);
  }
  ::close(client);
}

}  // namespace

int LauncherMain();

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--launcher") return LauncherMain();
  if (argc < 5 || std::string(argv[3]) != "--") {
    std::fprintf(stderr, "usage: mates-relay SOCKET PORTS -- COMMAND...\n");
    return 2;
  }
  const std::string proxy = argv[1];
  std::vector<int> ports;
  const std::string list = argv[2];
  for (size_t at = 0; at < list.size();) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    int port = std::atoi(list.substr(at, end - at).c_str());
    if (port < 1 || port > 65535) {
      std::fprintf(stderr, "mates-relay: '%s' is not a port\n", list.substr(at, end - at).c_str());
      return 2;
    }
    ports.push_back(port);
    at = end + 1;
  }
  std::vector<struct pollfd> fds;
  for (int port : ports) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
      std::fprintf(stderr, "mates sandbox: cannot listen on 127.0.0.1:%d: %s\n", port, std::strerror(errno));
      return 126;
    }
    fds.push_back({fd, POLLIN, 0});
  }
  pid_t child = -1;
  if (int rc = ::posix_spawnp(&child, argv[4], nullptr, nullptr, argv + 4, environ); rc != 0) {
    std::fprintf(stderr, "mates sandbox: cannot run %s: %s\n", argv[4], std::strerror(rc));
    return rc == ENOENT ? 127 : 126;
  }
  // Connections are served until the command ends; the process then ends
  // with every thread (never joined: _exit).
  std::vector<std::thread> threads;
  threads.emplace_back([&fds, &ports, proxy] {
    std::vector<std::thread> relays;
    for (;;) {
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      for (size_t i = 0; i < fds.size(); ++i) {
        if ((fds[i].revents & POLLIN) == 0) continue;
        int c = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) relays.emplace_back(Relay, c, proxy, ports[i]);
      }
    }
  });
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::fflush(nullptr);
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}
