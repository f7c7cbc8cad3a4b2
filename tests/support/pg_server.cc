#include "support/pg_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "pg/connection.h"
#include "support/free_port.h"

namespace mates::testing {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPassword = "mates-test-password";

// Where initdb and postgres are: $MATES_PG_BINDIR, else `pg_config
// --bindir`, else the newest /usr/lib/postgresql/N/bin.
std::string FindBindir() {
  if (const char* env = std::getenv("MATES_PG_BINDIR"); env != nullptr && *env != '\0') return env;
  if (FILE* p = ::popen("pg_config --bindir 2>/dev/null", "r")) {
    char buf[512] = {};
    std::string out = std::fgets(buf, sizeof buf, p) != nullptr ? buf : "";
    ::pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (!out.empty() && fs::exists(fs::path(out) / "initdb")) return out;
  }
  std::string best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (fs::exists(e.path() / "bin" / "initdb") && e.path().string() > best) best = e.path().string();
  }
  return best.empty() ? "" : best + "/bin";
}

std::string Tail(const std::string& path, size_t bytes = 800) {
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

}  // namespace

// Forks `argv` with output to `log`, as the server's user, dying with us.
static pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, bool as_other, uid_t uid,
                   gid_t gid, int netns_fd = -1) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // The child: async-signal-safe calls only until exec.
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  ::setpgid(0, 0);
  if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(125);
  if (as_other && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0)) ::_exit(126);
  // After the credentials change, which clears it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  ::execv(args[0], args.data());
  ::_exit(127);
}

Result<std::unique_ptr<PgServer>> PgServer::Start(Options options) {
  std::unique_ptr<PgServer> s(new PgServer());
  s->options_ = options;
  s->bindir_ = FindBindir();
  if (options.netns_of > 0) {
    const std::string ns = "/proc/" + std::to_string(options.netns_of) + "/ns/net";
    s->netns_fd_ = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (s->netns_fd_ < 0) return Status::FromErrno("open " + ns, errno);
  }
  if (s->bindir_.empty()) {
    return Status::Unavailable("no PostgreSQL server binaries (initdb, postgres): run scripts/setup");
  }
  char tmpl[] = "/tmp/mates-pg-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return Status::FromErrno("mkdtemp", errno);
  s->dir_ = tmpl;
  s->data_ = s->dir_ + "/data";
  if (::geteuid() == 0) {
    // initdb refuses root: the server runs as `postgres`.
    struct passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) return Status::Unavailable("running as root and there is no 'postgres' user to run the server");
    s->as_other_ = true;
    s->uid_ = pw->pw_uid;
    s->gid_ = pw->pw_gid;
    if (::chown(s->dir_.c_str(), s->uid_, s->gid_) != 0) return Status::FromErrno("chown " + s->dir_, errno);
  }
  ::chmod(s->dir_.c_str(), 0755);
  std::string log = s->dir_ + "/initdb.log";
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (s->as_other_) (void)::fchown(fd, s->uid_, s->gid_);
    ::close(fd);
  }
  pid_t pid = Spawn({s->bindir_ + "/initdb", "-D", s->data_, "-U", "postgres", "--auth-local=trust",
                     "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"},
                    log, s->as_other_, s->uid_, s->gid_);
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    return Status::Unavailable("initdb failed: " + Tail(log));
  }
  if (options.listen != "127.0.0.1") {
    // Clients from the listening address's own subnet (the harness's
    // machines), with a password as over loopback.
    std::ofstream hba(s->data_ + "/pg_hba.conf", std::ios::app);
    hba << "host all all samenet scram-sha-256\n";
    if (!hba) return Status::Internal("cannot add to " + s->data_ + "/pg_hba.conf");
  }
  for (int attempt = 0;; ++attempt) {
    s->port_ = FreePort();
    Status up = s->Launch();
    if (up.ok()) break;
    if (attempt == 2) return up;  // a port taken between FreePort and bind, three times: give up
  }
  // The role and database the tests use, over the socket as the superuser.
  auto su = pg::ParseTarget(s->SuperUrl());
  if (!su.ok()) return su.status();
  auto c = pg::Connection::Open(*su, 10);
  if (!c.ok()) return c.status();
  MATES_RETURN_IF_ERROR(c->ExecScript(std::string("CREATE ROLE mates LOGIN PASSWORD ") + pg::QuoteLiteral(kPassword)));
  MATES_RETURN_IF_ERROR(c->ExecScript("CREATE DATABASE mates OWNER mates"));
  return s;
}

Status PgServer::Launch() {
  // MATES_PG_TRACE_LOG=FILE: the server's log goes there and names every
  // statement with its time (parse, bind and execute apart), to see where
  // a benchmark's time on the server goes; it outlives the server's folder.
  const char* trace = std::getenv("MATES_PG_TRACE_LOG");
  std::string log = trace != nullptr && *trace != '\0' ? std::string(trace) : dir_ + "/server.log";
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    if (as_other_) (void)::fchown(fd, uid_, gid_);
    ::close(fd);
  }
  std::vector<std::string> argv = {bindir_ + "/postgres", "-D", data_, "-p", std::to_string(port_), "-k", dir_,
                                   "-c", "listen_addresses=" + options_.listen,
                                   "-c", "max_connections=" + std::to_string(options_.max_connections),
                                   "-c", "shared_buffers=64MB", "-c", "log_min_messages=warning"};
  if (trace != nullptr && *trace != '\0') {
    for (const char* c : {"log_min_duration_statement=0", "log_line_prefix=%m [%p] "}) {
      argv.push_back("-c");
      argv.push_back(c);
    }
  }
  if (!options_.durable) {
    for (const char* c : {"fsync=off", "synchronous_commit=off", "full_page_writes=off"}) {
      argv.push_back("-c");
      argv.push_back(c);
    }
  }
  pid_ = Spawn(argv, log, as_other_, uid_, gid_, netns_fd_);
  if (pid_ < 0) return Status::FromErrno("fork", errno);
  Status ready = WaitReady(30);
  if (!ready.ok()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  return ready;
}

Status PgServer::WaitReady(double seconds) {
  // The server answers a ping once it accepts connections; until then it
  // is starting (or has died: then its log says why).
  std::string port = std::to_string(port_);
  const char* keys[] = {"host", "port", "dbname", "user", "connect_timeout", nullptr};
  const char* values[] = {dir_.c_str(), port.c_str(), "postgres", "postgres", "2", nullptr};
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (PQpingParams(keys, values, 0) == PQPING_OK) return Status::Ok();
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::Unavailable("the PostgreSQL server exited at start: " + Tail(dir_ + "/server.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Timeout("the PostgreSQL server did not accept connections within " +
                         std::to_string(static_cast<int>(seconds)) + " s: " + Tail(dir_ + "/server.log"));
}

Status PgServer::Stop() {
  if (pid_ < 0) return Status::Ok();
  ::kill(pid_, SIGINT);  // fast shutdown: sessions are ended, nothing is lost
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int st = 0;
  while (::waitpid(pid_, &st, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  return Status::Ok();
}

Status PgServer::Restart() {
  MATES_RETURN_IF_ERROR(Stop());
  return Launch();
}

PgServer::~PgServer() {
  (void)Stop();
  if (netns_fd_ >= 0) ::close(netns_fd_);
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

std::string PgServer::Url() const { return UrlWithPassword(kPassword); }

std::string PgServer::UrlWithPassword(const std::string& password) const {
  return "postgresql://mates:" + password + "@" + options_.listen + ":" + std::to_string(port_) + "/mates";
}

std::string PgServer::LocalUrl() const {
  return "postgresql://mates@/mates?host=" + dir_ + "&port=" + std::to_string(port_);
}

std::string PgServer::SuperUrl(const std::string& db) const {
  return "postgresql://postgres@/" + db + "?host=" + dir_ + "&port=" + std::to_string(port_);
}

Result<std::string> PgServer::CreateDatabase(const std::string& name) {
  MATES_ASSIGN_OR_RETURN(pg::Target su, pg::ParseTarget(SuperUrl()));
  MATES_ASSIGN_OR_RETURN(pg::Connection c, pg::Connection::Open(su, 10));
  MATES_RETURN_IF_ERROR(c.ExecScript("CREATE DATABASE " + name + " OWNER mates"));
  return "postgresql://mates:" + std::string(kPassword) + "@" + options_.listen + ":" + std::to_string(port_) + "/" + name;
}

}  // namespace mates::testing
