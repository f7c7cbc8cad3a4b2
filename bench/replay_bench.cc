// replay_bench: what replaying a session costs next to running it (DESIGN
// §31). The demo (REST -> GraphQL: a lead and three teammates, 51 model
// calls) is run, then replayed from its record with `mates replay`, in
// the same run:
//
//   scripted   `mates demo`: the scripted provider answers at once (no
//              model waits at all: what a replay saves is nothing here,
//              and its pacing is what it costs)
//   model      `mates run` over HTTP against `mates mock-llm` answering
//              each call after `--latency` ms (default 300: a fast model's
//              time to a short reply), then its replay, which waits for no
//              model
//
//   replay_bench MATES_BINARY [--quick] [--latency MS]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/files.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "llm/mock_server.h"
#include "llm/scenario.h"

using namespace mates;
namespace fs = std::filesystem;

namespace {

struct Scratch {  // a folder gone however the bench ends
  fs::path dir;
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "mates-replay-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::exit(1);
    }
    dir = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// Runs argv; its wall seconds, or exits the bench with what it said.
double Timed(const std::vector<std::string>& argv, int want_exit, const std::vector<std::string>& env = {}) {
  SubprocessOptions so;
  so.argv = argv;
  if (!env.empty()) so.env = env;
  so.timeout_s = 300;
  const auto t0 = std::chrono::steady_clock::now();
  auto proc = Subprocess::Start(so);
  if (!proc.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0].c_str(), proc.status().message().c_str());
    std::exit(1);
  }
  SubprocessResult r = proc->Wait();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.exit_code != want_exit) {
    std::fprintf(stderr, "%s %s: exit %d (wanted %d)\n%s\n%s\n", argv[0].c_str(), argv[3].c_str(), r.exit_code,
                 want_exit, r.out.substr(0, 4000).c_str(), r.err.substr(0, 4000).c_str());
    std::exit(1);
  }
  return s;
}

void Git(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", dir.string(), "-c", "user.name=bench", "-c", "user.email=b@b"};
  argv.insert(argv.end(), args.begin(), args.end());
  SubprocessOptions so;
  so.argv = argv;
  auto p = Subprocess::Start(so);
  if (!p.ok() || p->Wait().exit_code != 0) {
    std::fprintf(stderr, "git %s failed\n", args[0].c_str());
    std::exit(1);
  }
}

// The demo's scenario with every reply `ms` late.
std::shared_ptr<llm::Scenario> SlowDemo(int ms) {
  auto text = ReadFile(MATES_DEMO_FILE);
  auto json = text.ok() ? llm::YamlToJson(*text) : Result<Json>(text.status());
  if (!json.ok()) {
    std::fprintf(stderr, "the demo's scenario: %s\n", json.status().message().c_str());
    std::exit(1);
  }
  for (auto& rule : (*json)["rules"]) rule["delay_ms"] = ms;
  auto scenario = llm::Scenario::Parse(DumpJson(*json), "rest-to-graphql.json");
  if (!scenario.ok()) std::exit(1);
  return std::make_shared<llm::Scenario>(std::move(*scenario));
}

struct Pair {
  std::vector<double> run, replay;
};

void Scripted(const std::string& mates, Pair* p) {
  Scratch s;
  p->run.push_back(Timed({mates, "--workspace", (s.dir / "w").string(), "demo"}, 0));
  p->replay.push_back(Timed({mates, "--workspace", (s.dir / "w").string(), "replay", "--into", (s.dir / "r").string()}, 0));
}

void Model(const std::string& mates, int latency_ms, Pair* p) {
  Scratch s;
  const fs::path w = s.dir / "w";
  (void)EnsureDir(w / "api");
  (void)WriteFileAtomic(w / "api/routes.txt", "GET /users\nGET /users/:id\nPOST /users\nGET /users/:id/orders\n");
  (void)WriteFileAtomic(w / "README.md", "# shop-api\n");
  Git(w, {"init", "-q", "-b", "main"});
  Git(w, {"add", "-A"});
  Git(w, {"commit", "-q", "-m", "app"});
  llm::MockServerOptions mo;
  mo.log_requests = false;
  auto server = llm::MockServer::Start(SlowDemo(latency_ms), mo);
  if (!server.ok()) std::exit(1);
  const std::vector<std::string> env = {"PATH=" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"),
                                        "HOME=" + s.dir.string(), "ANTHROPIC_API_KEY=bench-key"};
  p->run.push_back(Timed({mates, "--workspace", w.string(), "run", "--provider", "anthropic", "--base-url",
                          (*server)->url(), "--model", "claude-sonnet-4-5", "--shutdown-timeout", "10",
                          "Migrate the app from REST to GraphQL."},
                         0, env));
  (*server)->Stop();
  p->replay.push_back(Timed({mates, "--workspace", w.string(), "replay", "--into", (s.dir / "r").string()}, 0, env));
}

void Print(const char* what, const Pair& p) {
  const double run = bench::Percentile(p.run, 50), replay = bench::Percentile(p.replay, 50);
  std::printf("%-40s run %7.2f s   replay %7.2f s   replay/run %5.2f   (median of %zu)\n", what, run, replay,
              run > 0 ? replay / run : 0, p.run.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: replay_bench MATES_BINARY [--quick] [--latency MS]\n");
    return 2;
  }
  const std::string mates = fs::absolute(argv[1]).string();
  bool quick = false;
  int latency = 300;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--latency") == 0 && i + 1 < argc) latency = std::atoi(argv[++i]);
  }
  const int rounds = quick ? 1 : 5;
  Pair scripted, model;
  for (int i = 0; i < rounds; ++i) Scripted(mates, &scripted);
  for (int i = 0; i < (quick ? 1 : 3); ++i) Model(mates, latency, &model);
  Print("demo, scripted (no model waits)", scripted);
  char what[64];
  std::snprintf(what, sizeof what, "demo, a model at %d ms a call (HTTP)", latency);
  Print(what, model);
  return 0;
}
