#include "support/test_util.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/clock.h"

namespace mates::testing {

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/mates-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string MatesBinary() { return MATES_BINARY; }
std::string SandboxProbe() { return MATES_SANDBOX_PROBE; }
std::string StoreHelperBinary() { return MATES_STORE_HELPER; }

namespace {
std::vector<std::string> EnvWith(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    // Tests choose these themselves.
    if (kv.rfind("MATES_AGENT_NAME=", 0) == 0 || kv.rfind("MATES_TEAM=", 0) == 0 ||
        kv.rfind("MATES_WORKSPACE=", 0) == 0) {
      continue;
    }
    // What `extra` sets replaces ours (getenv finds the first of two).
    const std::string key = kv.substr(0, kv.find('=') + 1);
    bool replaced = false;
    for (const auto& x : extra) replaced |= x.rfind(key, 0) == 0;
    if (!replaced) env.push_back(kv);
  }
  for (const auto& kv : extra) env.push_back(kv);
  return env;
}
}  // namespace

CommandResult RunMates(const fs::path& ws, const std::vector<std::string>& args,
                       const std::vector<std::string>& extra_env, const std::string& stdin_data,
                       double timeout_s) {
  SubprocessOptions o;
  o.argv = {MatesBinary(), "--workspace", ws.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = EnvWith(extra_env);
  o.timeout_s = timeout_s;
  o.stdin_data = stdin_data;
  auto r = RunSubprocess(o);
  if (!r.ok()) throw std::runtime_error(r.status().message());
  return {r->exit_code, r->out, r->err};
}

Subprocess StartMates(const fs::path& ws, const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env) {
  SubprocessOptions o;
  o.argv = {MatesBinary(), "--workspace", ws.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = EnvWith(extra_env);
  auto p = Subprocess::Start(o);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  return std::move(*p);
}

std::string PathOf(const std::vector<std::string>& tools) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, std::unique_ptr<TempDir>> made;
  std::lock_guard lock(mu);
  auto& dir = made[tools];
  if (dir == nullptr) {
    dir = std::make_unique<TempDir>();
    for (const std::string& tool : tools) {
      std::error_code ec;
      fs::path at;
      for (const char* bin : {"/usr/bin", "/bin"}) {
        if (::access((fs::path(bin) / tool).c_str(), X_OK) == 0) {
          at = fs::path(bin) / tool;
          break;
        }
      }
      if (at.empty()) throw std::runtime_error("PathOf: " + tool + " is not in /usr/bin or /bin");
      fs::create_symlink(at, dir->path() / tool, ec);
      if (ec) throw std::runtime_error("PathOf: " + ec.message());
    }
  }
  return "PATH=" + dir->str();
}

CommandResult Run(const std::vector<std::string>& argv, double timeout_s) {
  SubprocessOptions o;
  o.argv = argv;
  o.env = EnvWith({});
  o.timeout_s = timeout_s;
  auto r = RunSubprocess(o);
  if (!r.ok()) throw std::runtime_error(r.status().message());
  return {r->exit_code, r->out, r->err};
}

Subprocess Start(const std::vector<std::string>& argv) {
  SubprocessOptions o;
  o.argv = argv;
  o.env = EnvWith({});
  auto p = Subprocess::Start(o);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  return std::move(*p);
}

std::vector<std::string> ListFiles(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    out.push_back(fs::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ScopedFd WatchFolder(const fs::path& dir) {
  ScopedFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (fd.valid() && ::inotify_add_watch(
                        fd.get(), dir.c_str(),
                        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE) < 0) {
    fd.reset();
  }
  return fd;
}

std::vector<std::string> Heard(int inotify_fd) {
  std::vector<std::string> heard;
  alignas(struct inotify_event) char buf[4096];
  for (;;) {
    ssize_t n = ::read(inotify_fd, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      std::string what = (ev->mask & IN_CLOSE_WRITE)  ? "close_write"
                         : (ev->mask & IN_MOVED_TO)   ? "moved_to"
                         : (ev->mask & IN_MOVED_FROM) ? "moved_from"
                         : (ev->mask & IN_CREATE)     ? "create"
                         : (ev->mask & IN_DELETE)     ? "delete"
                                                      : "other";
      heard.push_back(what + " " + (ev->len > 0 ? std::string(ev->name) : ""));
    }
  }
  return heard;
}

void WriteAll(const fs::path& path, const std::string& data) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

bool WaitUntil(const std::function<bool()>& condition, double timeout_s) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                      std::chrono::duration<double>(timeout_s));
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

std::string CompleteTaskRule() {
  return "  - agent: \"w*\"\n"
         "    when: \"Task #(\\\\d+):\"\n"
         "    once: false\n"
         "    reply: [{type: tool_use, name: TaskUpdate, input: {task_id: \"$1\", status: "
         "completed}}]\n";
}

std::string DoneRule() {
  return "  - agent: \"*\"\n"
         "    once: false\n"
         "    reply: [{type: text, text: \"Done.\"}]\n";
}

bool UntilWoken(const std::shared_ptr<Waker>& waker, const std::function<bool()>& done,
                double timeout_s) {
  Deadline until = DeadlineIn(timeout_s);
  for (;;) {
    uint64_t g = waker->generation();
    if (done()) return true;
    if (Expired(until)) return false;
    waker->WaitChange(g, DeadlineIn(1));
  }
}

bool LockWaiterOn(uint64_t ino) {
  // "12: -> OFDLCK ADVISORY WRITE -1 08:01:4242 0 0": the device and inode
  // come as MAJ:MIN:INODE.
  std::ifstream in("/proc/locks");
  std::string line;
  const std::string suffix = ":" + std::to_string(ino) + " ";
  while (std::getline(in, line)) {
    if (line.find("->") != std::string::npos && line.find(suffix) != std::string::npos) return true;
  }
  return false;
}

MockLlm::MockLlm(const std::string& scenario, const fs::path& record)
    : proc_(Start({MatesBinary(), "mock-llm", "--scenario", scenario, "--record", record.string(), "--quiet"})) {
  auto line = proc_.ReadLine(DeadlineIn(10));
  const std::string prefix = "listening on ";
  if (line.ok() && line->rfind(prefix, 0) == 0) url_ = line->substr(prefix.size());
}

MockLlm::~MockLlm() { proc_.Signal(SIGTERM); }

ModelServer::ModelServer(const fs::path& scenario, const fs::path& record) : scenario_(scenario), record_(record) {
  Start(0);
}

void ModelServer::Start(int port) {
  std::vector<std::string> argv = {MatesBinary(), "mock-llm", "--scenario", scenario_.string(),
                                   "--port",      std::to_string(port), "--quiet"};
  if (!record_.empty()) argv.insert(argv.end(), {"--record", record_.string()});
  process_ = std::make_unique<Subprocess>(testing::Start(argv));
  auto line = process_->ReadLine(DeadlineIn(10));
  const std::string prefix = "listening on ";
  url_ = line.ok() && line->rfind(prefix, 0) == 0 ? line->substr(prefix.size()) : "";
  port_ = url_.empty() ? 0 : std::stoi(url_.substr(url_.rfind(':') + 1));
}

void ModelServer::Stop() {
  if (!process_) return;
  process_->Signal(SIGKILL);
  (void)process_->Wait();
  process_.reset();
}

std::string ScenarioFixture(const std::string& name) { return std::string(MATES_SCENARIOS) + "/" + name; }
fs::path SourceDir() { return MATES_SOURCE_DIR; }

std::string Fixture(const std::string& name) { return std::string(MATES_FIXTURES) + "/" + name; }

std::vector<int> ProcessesWithEnv(const std::string& needle) {
  std::vector<int> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::string env = ReadAll(fs::path("/proc") / e->d_name / "environ");
    std::string stat = ReadAll(fs::path("/proc") / e->d_name / "stat");
    size_t paren = stat.rfind(')');
    bool zombie = paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
    if (!zombie && env.find(needle + '\0') != std::string::npos) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

std::string DescribeProcesses(const std::vector<int>& pids) {
  std::string out;
  for (int pid : pids) {
    std::string cmd = ReadAll(fs::path("/proc") / std::to_string(pid) / "cmdline");
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    std::string stat = ReadAll(fs::path("/proc") / std::to_string(pid) / "stat");
    size_t paren = stat.rfind(')');
    out += "\n  " + std::to_string(pid) + " (" + (paren + 2 < stat.size() ? stat.substr(paren + 2, 1) : "?") +
           "): " + cmd.substr(0, 200);
  }
  return out;
}

bool ProcessRunning(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
}

std::vector<std::string> ProcessesIn(const std::string& pattern, const fs::path& dir) {
  std::error_code ec;
  const std::string root = fs::weakly_canonical(dir, ec).string();
  std::vector<std::string> out;
  std::istringstream pids(Run({"pgrep", "-f", pattern}).out);
  for (std::string pid; pids >> pid;) {
    const std::string proc = "/proc/" + pid;
    fs::path cwd = fs::read_symlink(proc + "/cwd", ec);
    if (ec || !ProcessRunning(static_cast<pid_t>(std::stol(pid)))) continue;
    const std::string c = cwd.string();
    if (c != root && c.rfind(root + "/", 0) != 0) continue;
    std::string args = ReadAll(proc + "/cmdline");
    std::replace(args.begin(), args.end(), '\0', ' ');
    out.push_back(pid + ": " + args);
  }
  return out;
}

Json HttpReply::json() const {
  auto j = ParseJson(body);
  return j.ok() ? *j : Json();
}

HttpReply Http(const std::string& method, const std::string& url, const std::vector<std::string>& headers,
               const std::string& body, const std::string& content_type) {
  TempDir d;  // both bodies through files: they may be large
  // 60 s: a page of several MiB, under ThreadSanitizer beside other tests,
  // took more than 10 (curl said 0); a dashboard that hangs still fails.
  std::vector<std::string> argv = {"curl", "-s",   "-m", "60", "-X", method, "-w", "%{http_code}",
                                   "-o",   (d.path() / "reply").string()};
  for (const auto& h : headers) argv.insert(argv.end(), {"-H", h});
  if (!body.empty()) {
    WriteAll(d.path() / "body", body);
    argv.insert(argv.end(), {"-H", "Content-Type: " + content_type, "--data-binary", "@" + (d.path() / "body").string()});
  }
  argv.push_back(url);
  auto r = Run(argv, 90);
  std::error_code ec;
  return {std::atoi(r.out.c_str()), fs::exists(d.path() / "reply", ec) ? ReadAll(d.path() / "reply") : ""};
}

std::string PrintedDashboardUrl(const std::string& up_out) {
  const std::string mark = " — dashboard ";
  const size_t at = up_out.find(mark + "http://127.0.0.1:");
  if (at == std::string::npos) return "";
  const std::string rest = up_out.substr(at + mark.size());
  return rest.substr(0, rest.find('\n'));
}

HttpReply DashboardGet(const DashboardUrl& u, const std::string& path) {
  return Http("GET", u.base + path, {"Authorization: Bearer " + u.token});
}

HttpReply DashboardPost(const DashboardUrl& u, const std::string& path, const std::string& json) {
  return Http("POST", u.base + path, {"Authorization: Bearer " + u.token}, json);
}

DashboardUrl SplitDashboardUrl(const std::string& url) {
  size_t q = url.find("/?token=");
  if (q == std::string::npos) return {};
  return {url.substr(0, q), url.substr(q + 8)};
}


struct SlowHeads::State {
  std::vector<int> fds;
  std::mutex mu;
  std::condition_variable stop;
  bool stopping = false;
  std::thread trickle;
};

SlowHeads::SlowHeads(int port, int count, const std::string& start) : state_(std::make_unique<State>()) {
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      if (fd >= 0) ::close(fd);
      continue;
    }
    timeval tv{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)!::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    state_->fds.push_back(fd);
  }
  // A header line every 100 ms on each: a timeout that starts again with
  // every byte never ends.
  state_->trickle = std::thread([s = state_.get()] {
    std::unique_lock<std::mutex> lock(s->mu);
    while (!s->stop.wait_for(lock, std::chrono::milliseconds(100), [s] { return s->stopping; })) {
      for (int fd : s->fds) (void)!::send(fd, "X-Slow: a\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  });
}

SlowHeads::~SlowHeads() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->stop.notify_all();
  state_->trickle.join();
  for (int fd : state_->fds) ::close(fd);
}

int SlowHeads::open() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  int n = 0;
  for (int fd : state_->fds) {
    char c;
    const ssize_t got = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    n += got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 1 : 0;
  }
  return n;
}

std::string SlowHeads::AnswerOfFirst() {
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->fds.empty()) return "";
    fd = state_->fds.front();
  }
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
  return got;
}

}  // namespace mates::testing
