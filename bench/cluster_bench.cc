// cluster_bench: what driving agent CLIs through tmux costs.
//   up     `cluster up` of five agents (start + handshake)
//   send   send -> extracted reply (delivery and marker detection), next to
//          the seed's way (send-keys, then capture-pane every 0.5 s)
//
//   cluster_bench fake FAKE_AGENT [--quick]
//       the fake agent CLI answering at once: mates' own overhead
//   cluster_bench claude|codex|gemini|opencode CLI MATES [--quick]
//       the real agent CLI (its preset, DESIGN §28), its model `MATES
//       mock-llm` answering at once over the API the CLI speaks (a fresh
//       HOME: nothing of the person's is touched)
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "bench_util.h"
#include "core/files.h"
#include "core/subprocess.h"
#include "tmux/cluster.h"

using namespace mates;
using namespace mates::bench;

namespace {

const char* kNames[] = {"grand_boss", "middle_manager", "coder", "researcher", "tester"};

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
    for (size_t j = old > 0 ? old - 1 : 0; j < lines.size(); ++j) {
      if (lines[j].find(marker) != std::string::npos && lines[j].find(text) == std::string::npos) {
        return static_cast<double>(NowNs() - t0) / 1e6;
      }
    }
  }
  return -1;
}

int Usage() {
  std::fprintf(stderr, "usage: cluster_bench fake FAKE_AGENT [--quick]\n"
                       "       cluster_bench claude|codex|gemini|opencode CLI MATES [--quick]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string mode = argv[1];
  // A real CLI by its preset, or the fake one.
  const bool real = mode == "claude" || mode == "codex" || mode == "gemini" || mode == "opencode";
  if (!real && mode != "fake") return Usage();
  if (real && argc < 4) return Usage();
  bool quick = std::string(argv[argc - 1]) == "--quick";
  char tmpl[] = "/tmp/mates-cluster-bench-XXXXXX";
  fs::path dir = ::mkdtemp(tmpl);

  std::optional<Subprocess> mock;
  std::string command, preset;
  if (real) {
    // Every agent answers its handshake ("You are NAME (") and every message
    // with its marker, at once.
    (void)WriteFileAtomic(dir / "s.yaml", R"(rules:
  - {when: "You are (\\w+) \\(", once: false, reply: [{type: text, text: "ready.\n$1 OK"}]}
  - {when: "message number", once: false, reply: [{type: text, text: "got it.\ncoder OK"}]}
  - {when: "seed message", once: false, reply: [{type: text, text: "got it.\nresearcher OK"}]}
default_reply: [{type: text, text: "title"}]
)");
    SubprocessOptions o;
    o.argv = {fs::absolute(argv[3]).string(), "mock-llm", "--scenario", (dir / "s.yaml").string(), "--quiet"};
    auto m = Subprocess::Start(o);
    if (!m.ok()) {
      std::fprintf(stderr, "mock-llm: %s\n", m.status().message().c_str());
      return 1;
    }
    mock.emplace(std::move(*m));
    auto line = mock->ReadLine(DeadlineIn(10));
    if (!line.ok()) {
      std::fprintf(stderr, "mock-llm did not start\n");
      return 1;
    }
    // The tmux server, and so the panes, inherit this environment; the
    // preset tells each CLI where its model is (model_url).
    fs::create_directories(dir / "home");
    ::setenv("HOME", (dir / "home").c_str(), 1);
    ::setenv("ANTHROPIC_API_KEY", "sk-bench-not-a-real-key-0123456789", 1);
    ::setenv("OPENAI_API_KEY", "sk-bench-not-a-real-key-0123456789", 1);
    ::setenv("GEMINI_API_KEY", "bench-not-a-real-key-0123456789", 1);
    ::setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1", 1);
    ::setenv("DISABLE_AUTOUPDATER", "1", 1);
    ::unsetenv("CLAUDE_CONFIG_DIR");
    const std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("PATH", (fs::absolute(argv[2]).parent_path().string() + ":" + path).c_str(), 1);
    preset = "  cli: " + mode + "\n  mcp: off\n  model_url: " + line->substr(std::string("listening on ").size()) + "\n";
  } else {
    command = fs::absolute(argv[2]).string() + ", --marker, '{marker}', --name, '{name}'";
  }
  std::string y = "cluster:\n  name: bench\n  session_name: bench-" + std::to_string(::getpid()) +
                  "\n  startup_timeout: 120\n" + (real ? preset : "  command: [" + command + "]\n") + "agents:\n";
  for (int i = 0; i < 5; ++i) {
    (void)WriteFileAtomic(dir / (std::string(kNames[i]) + ".txt"), std::string("You are ") + kNames[i] + ".\n");
    y += "  - {name: " + std::string(kNames[i]) + ", personality_prompt_path: " + kNames[i] + ".txt, marker: '" +
         kNames[i] + " OK', pane_index: " + std::to_string(i) + "}\n";
  }
  (void)WriteFileAtomic(dir / "c.yaml", y);
  auto cfg = tmux::LoadClusterConfig(dir / "c.yaml");
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s\n", cfg.status().message().c_str());
    return 1;
  }
  tmux::Cluster cluster(*cfg);
  std::printf("cluster_bench (%s run, %u cores), %s\n\n", quick ? "quick" : "full",
              std::thread::hardware_concurrency(),
              real ? (mode + " CLI, mock-llm answering at once").c_str() : "fake agent CLI answering at once");
  int64_t t0 = NowNs();
  auto up = cluster.Up();
  double up_ms = static_cast<double>(NowNs() - t0) / 1e6;
  int ready = 0;
  if (up.ok()) {
    for (const auto& r : *up) ready += r.ready ? 1 : 0;
  }
  if (!up.ok() || ready != 5) {
    std::fprintf(stderr, "up: %s\n", up.ok() ? "not every agent came up" : up.status().message().c_str());
    (void)cluster.Down();
    return 1;
  }
  std::printf("up, 5 agents (start + handshake): %.0f ms\n", up_ms);
  int n = real ? (quick ? 5 : 20) : (quick ? 10 : 50);
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
    // A CLI that did not answer the seed's send-keys will not answer the
    // next one either.
    if (v < 0) break;
    seed.push_back(v);
    // The TUI may still be finishing its turn: the seed's next send-keys
    // would land in it, so wait as its fixed sleeps do.
    if (real) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (seed.empty()) {
    // Its send-keys "text" Enter in one go: a CLI that takes the Enter as
    // part of a paste (Gemini CLI) never answers it.
    std::printf("send -> reply, seed (0.5 s):   no answer to its send-keys in 50 s\n");
  } else {
    std::printf("send -> reply, seed (0.5 s):   p50 %7.1f ms   p99 %7.1f ms   (n=%zu)\n", Percentile(seed, 50),
                Percentile(seed, 99), seed.size());
  }
  (void)cluster.Down();
  if (mock) mock->Signal(SIGTERM);
  fs::remove_all(dir);
  return 0;
}
