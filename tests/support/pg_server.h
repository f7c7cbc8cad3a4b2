// A private PostgreSQL server for tests and benchmarks (DESIGN §13): Debian's
// server binaries, initdb into a fresh temporary folder, listening on a unix
// socket in that folder and on a free 127.0.0.1 port, gone with this object.
// As root (CI) the server runs as the unprivileged `postgres` user, which
// initdb requires; it is started with PR_SET_PDEATHSIG so that it does not
// outlive the test process even when that is SIGKILLed.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "core/status.h"

namespace mates::testing {

class PgServer {
 public:
  struct Options {
    // For tests: no fsync, so that a test's writes cost what the store
    // costs, not the disk (the benchmarks say which settings they ran with).
    bool durable = false;
    int max_connections = 200;
    // The fault harness (support/netns.h): the server in the network
    // namespace of this process's (-1: this one's), listening on `listen`.
    pid_t netns_of = -1;
    std::string listen = "127.0.0.1";
  };

  // Unavailable naming what is missing when the server cannot be started
  // (no PostgreSQL binaries, initdb failed: its log's tail is in the message).
  static Result<std::unique_ptr<PgServer>> Start(Options options);
  static Result<std::unique_ptr<PgServer>> Start() { return Start(Options{}); }
  ~PgServer();

  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // The database `mates` as the role `mates` (password auth over TCP).
  std::string Url() const;
  // The role `mates` over the unix socket (trust): for the test itself when
  // the server listens in another network namespace.
  std::string LocalUrl() const;
  // The same with another password (for the wrong-credentials test).
  std::string UrlWithPassword(const std::string& password) const;
  // The superuser over the unix socket (trust).
  std::string SuperUrl(const std::string& db = "postgres") const;
  // A fresh empty database owned by `mates`; its URL.
  Result<std::string> CreateDatabase(const std::string& name);

  int port() const { return port_; }
  const std::string& dir() const { return dir_; }

  // Stops the server (fast shutdown) and starts it again on the same port
  // and data: the "server restarted mid-run" tests.
  Status Restart();
  // Stops it; Start again with Restart().
  Status Stop();

 private:
  PgServer() = default;
  Status Launch();
  Status WaitReady(double seconds);

  Options options_;
  std::string bindir_;
  std::string dir_;    // the temporary folder (socket, data/, log)
  std::string data_;   // dir_/data
  int port_ = 0;
  pid_t pid_ = -1;
  uid_t uid_ = 0;      // whom the server runs as
  gid_t gid_ = 0;
  bool as_other_ = false;
  int netns_fd_ = -1;  // options_.netns_of's namespace, open while the server may be (re)started
};

}  // namespace mates::testing
