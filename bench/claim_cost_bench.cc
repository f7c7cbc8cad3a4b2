// The cost of one claim on a board of 10,000 tasks (Google Benchmark):
// - mates, warm: a long-lived Board (a teammate), refreshed from inotify;
// - mates, cold: a new Board per claim, as a fresh `mates tasks claim`
//   process has (reads .index and the folder listing), process start excluded;
// - seed: list and read every task file per claim (seed v9 auto-claim).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "seed_baseline.h"
#include "store/board.h"

namespace fs = std::filesystem;
using namespace mates;

namespace {

constexpr int kTasks = 10000;

fs::path MakeDir() {
  char tmpl[] = "/tmp/mates-claim-bench-XXXXXX";
  return ::mkdtemp(tmpl);
}

fs::path MatesBoard() {
  fs::path dir = MakeDir();
  Board board(dir);
  for (int i = 0; i < kTasks; ++i) {
    TaskDraft d;
    d.subject = "task " + std::to_string(i);
    d.description = "a description of a realistic length for task " + std::to_string(i);
    (void)board.Create(d);
  }
  return dir;
}

void BM_MatesWarmClaim(benchmark::State& state) {
  fs::path dir = MatesBoard();
  {
    Board board(dir);
    for (auto _ : state) {
      auto t = board.ClaimNext("bench");
      if (!t.ok() || !t->has_value()) state.SkipWithError("ran out of tasks");
    }
  }
  fs::remove_all(dir);
}

void BM_MatesColdClaim(benchmark::State& state) {
  fs::path dir = MatesBoard();
  for (auto _ : state) {
    Board board(dir, Board::Options{.watch = false});  // as `mates tasks claim` does
    auto t = board.ClaimNext("bench");
    if (!t.ok() || !t->has_value()) state.SkipWithError("ran out of tasks");
  }
  fs::remove_all(dir);
}

void BM_SeedFullScanClaim(benchmark::State& state) {
  fs::path dir = MakeDir();
  seed::SeedCreateTasks(dir, kTasks);
  for (auto _ : state) {
    if (!seed::SeedClaimNext(dir, "bench")) state.SkipWithError("ran out of tasks");
  }
  fs::remove_all(dir);
}

}  // namespace

BENCHMARK(BM_MatesWarmClaim)->Iterations(3000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MatesColdClaim)->Iterations(300)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SeedFullScanClaim)->Iterations(20)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
