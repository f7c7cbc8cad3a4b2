// The cost of one claim on a board of 10,000 tasks (Google Benchmark):
// - mates, warm: a long-lived Board (a teammate), refreshed from inotify;
// - mates, cold: a new Board per claim, as a fresh `mates tasks claim`
//   process has (reads .index and the folder listing), process start excluded;
// - seed: list and read every task file per claim (seed v9 auto-claim);
// - mates, warm, on a graph: 10,000 tasks of which only a few are claimable
//   at a time (levels of 30, each blocked by the level before), as a large
//   team's board is: an idle teammate's look that finds nothing, and a
//   claim with the level before completed.
// --quick (scripts/bench --quick, CI's smoke run): a tenth of the board and
// of the claims, so that every benchmark runs through in seconds; its
// figures are for no one.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "seed_baseline.h"
#include "store/board.h"

namespace fs = std::filesystem;
using namespace mates;

namespace {

int tasks = 10000;  // a tenth with --quick (main)

fs::path MakeDir() {
  char tmpl[] = "/tmp/mates-claim-bench-XXXXXX";
  return ::mkdtemp(tmpl);
}

// `width` 0: independent tasks; else levels of `width`, each task blocked
// by the whole level before.
fs::path MatesBoard(int width = 0) {
  fs::path dir = MakeDir();
  Board board(dir);
  for (int i = 0; i < tasks; ++i) {
    TaskDraft d;
    d.subject = "task " + std::to_string(i);
    d.description = "a description of a realistic length for task " + std::to_string(i);
    const int level = width > 0 ? i / width : 0;
    for (int j = (level - 1) * width; level > 0 && j < level * width; ++j) d.blocked_by.push_back(j + 1);
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

constexpr int kWidth = 30;  // a large team's graph

// The first level claimed by others: nothing is claimable until they finish.
void BM_MatesWarmLookNothingOnGraph(benchmark::State& state) {
  fs::path dir = MatesBoard(kWidth);
  {
    Board board(dir);
    for (int id = 1; id <= kWidth; ++id) (void)board.Claim(id, "other");
    for (auto _ : state) {
      auto t = board.NextClaimable("bench");
      if (!t.ok() || t->has_value()) state.SkipWithError("something was claimable");
    }
  }
  fs::remove_all(dir);
}

// Claims a level's tasks one by one, as a teammate does (with the outlook
// of what is left, for waking other idle teammates), completing each level
// once it is taken (the completions are not timed).
void BM_MatesWarmClaimOnGraph(benchmark::State& state) {
  fs::path dir = MatesBoard(kWidth);
  {
    Board board(dir);
    std::vector<int64_t> level;
    for (auto _ : state) {
      Board::ClaimOutlook outlook;
      auto t = board.ClaimNext("bench", &outlook);
      if (!t.ok() || !t->has_value()) {
        state.SkipWithError("ran out of tasks");
        break;
      }
      level.push_back((*t)->id);
      if (level.size() == kWidth) {
        state.PauseTiming();
        for (int64_t id : level) {
          TaskPatch done;
          done.status = TaskStatus::kCompleted;
          (void)board.Update(id, done, Caller{"bench"});
        }
        level.clear();
        state.ResumeTiming();
      }
    }
  }
  fs::remove_all(dir);
}

void BM_SeedFullScanClaim(benchmark::State& state) {
  fs::path dir = MakeDir();
  seed::SeedCreateTasks(dir, tasks);
  for (auto _ : state) {
    if (!seed::SeedClaimNext(dir, "bench")) state.SkipWithError("ran out of tasks");
  }
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  int scale = 1;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      scale = 10;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  tasks /= scale;
  auto add = [scale](const char* name, void (*fn)(benchmark::State&), int iterations) {
    benchmark::RegisterBenchmark(name, fn)->Iterations(iterations / scale)->Unit(benchmark::kMicrosecond);
  };
  add("BM_MatesWarmClaim", BM_MatesWarmClaim, 3000);
  add("BM_MatesColdClaim", BM_MatesColdClaim, 300);
  add("BM_MatesWarmLookNothingOnGraph", BM_MatesWarmLookNothingOnGraph, 3000);
  add("BM_MatesWarmClaimOnGraph", BM_MatesWarmClaimOnGraph, 3000);
  add("BM_SeedFullScanClaim", BM_SeedFullScanClaim, 20);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
