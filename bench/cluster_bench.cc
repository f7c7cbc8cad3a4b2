// cluster_bench: what driving agent CLIs through tmux costs, with the fake
// agent CLI answering at once:
//   up     `cluster up` of five agents (start + handshake)
//   send   send -> extracted reply (delivery and marker detection), next to
//          the seed's way (send-keys, then capture-pane every 0.5 s)
//
//   cluster_bench FAKE_AGENT [--quick]
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "bench_util.h"
#include "core/files.h"
#include "tmux/cluster.h"

using namespace mates;
using namespace mates::bench;

namespace {

// The seed's PaneIO: send-keys "text" Enter, then every 0.5 s capture the
// pane and look for the marker (anywhere after the old content).
double SeedSend(const tmux::Tmux& t, const std::string& pane, const std::string& text, const std::string& marker) {
  auto before = t.Capture(pane);
  size_t old = tmux::CaptureLines(before.ok() ? *before : "").size();
  int64_t t0 = NowNs();
  (void)t.Run({"send-keys", "-t", pane, text, "Enter"});
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto cap = t.Capture(pane);
    auto lines = tmux::CaptureLines(cap.ok() ? *cap : "");
    for (size_t j = old; j < lines.size(); ++j) {
      if (lines[j].find("done. " + marker) != std::string::npos) return static_cast<double>(NowNs() - t0) / 1e6;
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cluster_bench FAKE_AGENT [--quick]\n");
    return 2;
  }
  bool quick = argc > 2 && std::string(argv[2]) == "--quick";
  char tmpl[] = "/tmp/mates-cluster-bench-XXXXXX";
  fs::path dir = ::mkdtemp(tmpl);
  const char* names[] = {"grand_boss", "middle_manager", "coder", "researcher", "tester"};
  std::string y = "cluster:\n  name: bench\n  session_name: bench-" + std::to_string(::getpid()) +
                  "\n  command: [" + fs::absolute(argv[1]).string() + ", --marker, '{marker}', --name, '{name}']\nagents:\n";
  for (int i = 0; i < 5; ++i) {
    (void)WriteFileAtomic(dir / (std::string(names[i]) + ".txt"), "x");
    y += "  - {name: " + std::string(names[i]) + ", personality_prompt_path: " + names[i] + ".txt, marker: '" +
         names[i] + " OK', pane_index: " + std::to_string(i) + "}\n";
  }
  (void)WriteFileAtomic(dir / "c.yaml", y);
  auto cfg = tmux::LoadClusterConfig(dir / "c.yaml");
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s\n", cfg.status().message().c_str());
    return 1;
  }
  tmux::Cluster cluster(*cfg);
  std::printf("cluster_bench (%s run, %u cores), fake agent CLI answering at once\n\n", quick ? "quick" : "full",
              std::thread::hardware_concurrency());
  int64_t t0 = NowNs();
  auto up = cluster.Up();
  double up_ms = static_cast<double>(NowNs() - t0) / 1e6;
  if (!up.ok()) {
    std::fprintf(stderr, "up: %s\n", up.status().message().c_str());
    return 1;
  }
  std::printf("up, 5 agents (start + handshake): %.0f ms\n", up_ms);
  int n = quick ? 10 : 50;
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    int64_t s = NowNs();
    auto r = cluster.Send("bench", "coder", "message number " + std::to_string(i));
    if (!r.ok()) {
      std::fprintf(stderr, "send: %s\n", r.status().message().c_str());
      break;
    }
    ms.push_back(static_cast<double>(NowNs() - s) / 1e6);
  }
  std::printf("send -> reply, mates:          p50 %7.1f ms   p99 %7.1f ms   (n=%zu)\n", Percentile(ms, 50),
              Percentile(ms, 99), ms.size());
  std::vector<double> seed;
  auto pane = cluster.AgentStatuses();
  std::string researcher_pane = pane.ok() ? (*pane)[3].pane : "";
  for (int i = 0; i < (quick ? 2 : 6); ++i) {
    double v = SeedSend(cluster.tmux(), researcher_pane, "seed message " + std::to_string(i), "researcher OK");
    if (v >= 0) seed.push_back(v);
  }
  std::printf("send -> reply, seed (0.5 s):   p50 %7.1f ms   p99 %7.1f ms   (n=%zu)\n", Percentile(seed, 50),
              Percentile(seed, 99), seed.size());
  (void)cluster.Down();
  fs::remove_all(dir);
  return 0;
}
