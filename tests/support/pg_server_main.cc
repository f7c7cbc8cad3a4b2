// mates_pg_server: a private PostgreSQL server (pg_server.h) for tests that
// are not C++ (the browser test). Prints "url URL" (the database `mates`,
// with the schema) on its first line, then serves until its stdin closes
// or it gets SIGTERM/SIGINT; the server goes with it (even after a
// SIGKILL: it dies with its parent).
//
//   mates_pg_server            exit 0 after serving; 77 if no server can
//                              be started here (no PostgreSQL binaries)
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "pg/connection.h"
#include "pg/schema.h"
#include "support/pg_server.h"

int main() {
  using namespace mates;
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  ::sigprocmask(SIG_BLOCK, &stop, nullptr);
  auto server = testing::PgServer::Start();
  if (!server.ok()) {
    std::cerr << "mates_pg_server: " << server.status().message() << "\n";
    return 77;
  }
  auto target = pg::ParseTarget((*server)->Url());
  auto c = target.ok() ? pg::Connection::Open(*target, 10) : Result<pg::Connection>(target.status());
  Status schema = c.ok() ? pg::InitSchema(*c).status() : c.status();
  if (!schema.ok()) {
    std::cerr << "mates_pg_server: " << schema.message() << "\n";
    return 1;
  }
  std::cout << "url " << (*server)->Url() << std::endl;
  // Until stdin closes or a signal comes: both are file descriptors this
  // thread polls (the signals blocked above arrive through a signalfd).
  const int sig_fd = ::signalfd(-1, &stop, SFD_CLOEXEC);
  if (sig_fd < 0) return 1;
  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {sig_fd, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents != 0) break;
    if (fds[0].revents != 0) {
      char buf[256];
      if (::read(STDIN_FILENO, buf, sizeof buf) <= 0) break;
    }
  }
  ::close(sig_fd);
  server->reset();  // stops it
  return 0;
}
