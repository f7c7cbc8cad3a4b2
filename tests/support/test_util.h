// Helpers shared by mates tests: scratch folders, running the mates binary
// and the store helper, waiting on conditions without sleeping blindly.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "support/free_port.h"
#include "core/waker.h"

namespace mates::testing {

namespace fs = std::filesystem;

// A fresh folder under $TMPDIR, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// Paths of the binaries under test (set by CMake).
std::string MatesBinary();
// tests/support/sandbox_probe.cc, built: one system call a sandbox refuses.
std::string SandboxProbe();
std::string StoreHelperBinary();

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `mates --workspace ws args...` to completion; killed after
// timeout_s (exit_code -1 then).
CommandResult RunMates(const fs::path& ws, const std::vector<std::string>& args,
                       const std::vector<std::string>& extra_env = {},
                       const std::string& stdin_data = "", double timeout_s = 30);
// Starts `mates --workspace ws args...` without waiting.
Subprocess StartMates(const fs::path& ws, const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env = {});
// tests/scenarios/<name>, the scripted provider's fixtures.
std::string ScenarioFixture(const std::string& name);
// The project's top folder (its tests' scripts, .cache's npm packages).
fs::path SourceDir();
// tests/fixtures/<name>: what real clients sent, recorded.
std::string Fixture(const std::string& name);
// Whether `pid` runs (exists and is not a zombie).
bool ProcessRunning(pid_t pid);
// The running processes whose command line has `pattern` and whose
// working folder is `dir` or inside it: a test's own, not those of a test
// running next to it (ctest -j) with the same commands. "pid: args" each.
std::vector<std::string> ProcessesIn(const std::string& pattern, const fs::path& dir);
// The live processes whose environment holds `needle` ("HOME=/tmp/x"),
// and what they are (pid, state, command line), for a failure's message.
std::vector<int> ProcessesWithEnv(const std::string& needle);
std::string DescribeProcesses(const std::vector<int>& pids);
// "PATH=DIR", DIR a folder made for this process with only `tools` in it
// (links to where /usr/bin:/bin has them): a test that needs a program to
// be missing cannot find the person's global install of it (claude in
// /usr/bin after `npm install -g`). Throws if a tool is not installed.
std::string PathOf(const std::vector<std::string>& tools);
// Runs any program.
CommandResult Run(const std::vector<std::string>& argv, double timeout_s = 60);
Subprocess Start(const std::vector<std::string>& argv);

// Whether this build runs under a sanitizer (its figures are not the
// product's).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// `count` connections to 127.0.0.1:port that each send the start of a
// request head (`start`) and then a header line now and then, never its
// end: what held every worker of cpp-httplib's server (#50). Closed at
// destruction.
class SlowHeads {
 public:
  SlowHeads(int port, int count, const std::string& start);
  ~SlowHeads();
  SlowHeads(const SlowHeads&) = delete;
  SlowHeads& operator=(const SlowHeads&) = delete;
  // How many are connected and still accepted by the server's socket.
  int open() const;
  // Reads one connection until the server closes it: what it answered.
  std::string AnswerOfFirst();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One HTTP request with curl (a real client); `headers` as "Name: value".
struct HttpReply {
  int code = 0;
  std::string body;
  Json json() const;  // null if the body is not JSON
};
HttpReply Http(const std::string& method, const std::string& url, const std::vector<std::string>& headers = {},
               const std::string& body = "", const std::string& content_type = "application/json");
// A dashboard's "http://127.0.0.1:P/?token=T" as its base and token (both
// empty if it is not one).
struct DashboardUrl {
  std::string base, token;
};
DashboardUrl SplitDashboardUrl(const std::string& url);
// The URL of the dashboard `mates up` printed in `up_out` ("" if none).
std::string PrintedDashboardUrl(const std::string& up_out);
// A request to a dashboard's API, with its token.
HttpReply DashboardGet(const DashboardUrl& u, const std::string& path);
HttpReply DashboardPost(const DashboardUrl& u, const std::string& path, const std::string& json);

// `mates mock-llm --scenario FILE --record RECORD --quiet` on a free port,
// for the object's lifetime.
class MockLlm {
 public:
  MockLlm(const std::string& scenario, const fs::path& record);
  ~MockLlm();
  MockLlm(const MockLlm&) = delete;
  MockLlm& operator=(const MockLlm&) = delete;
  const std::string& url() const { return url_; }  // http://127.0.0.1:PORT

 private:
  Subprocess proc_;
  std::string url_;
};

// A `mates mock-llm --scenario FILE --quiet` that can be stopped (killed,
// as a server that dies) and started again on its port.
class ModelServer {
 public:
  explicit ModelServer(const fs::path& scenario, const fs::path& record = {});
  ~ModelServer() { Stop(); }
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;
  void Start(int port);
  void Stop();
  const std::string& url() const { return url_; }  // http://127.0.0.1:PORT
  int port() const { return port_; }

 private:
  fs::path scenario_;
  fs::path record_;
  std::unique_ptr<Subprocess> process_;
  std::string url_;
  int port_ = 0;
};

// Lists every file below `dir` (relative paths, sorted).
std::vector<std::string> ListFiles(const fs::path& dir);
std::string ReadAll(const fs::path& path);
// A non-blocking inotify watch on the folder `dir` for files written
// (closed), moved in or out, made and deleted; invalid if none was made.
ScopedFd WatchFolder(const fs::path& dir);
// What such a watch has heard since it was last asked, in order:
// "<event> <name>", the event one of close_write, moved_to, moved_from,
// create, delete (or other: the watch's own end, an overflow).
std::vector<std::string> Heard(int inotify_fd);
// Writes `data` to `path`, creating its folders.
void WriteAll(const fs::path& path, const std::string& data);

// Checks `condition` until it holds or `timeout_s` passes; for state that
// no event announces (the kernel's lock table, another process's children).
// Backs off from 1 ms to 20 ms between looks.
bool WaitUntil(const std::function<bool()>& condition, double timeout_s = 30);
// Scenario rules (YAML list items) for teammates "w*" working from a board:
// a "Task #N:" message is answered by completing task N; and the last rule,
// any other message of anyone answered "Done.".
std::string CompleteTaskRule();
std::string DoneRule();
// Checks `done` at each notification of `waker` until it holds or
// `timeout_s` passes (and once a second besides).
bool UntilWoken(const std::shared_ptr<Waker>& waker, const std::function<bool()>& done,
                double timeout_s = 60);
// Whether some process waits (blocked) for a lock on the file with inode
// `ino`, as /proc/locks says.
bool LockWaiterOn(uint64_t ino);

}  // namespace mates::testing
