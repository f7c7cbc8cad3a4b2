// A team's host killed with SIGKILL again and again, on any store: the
// test of HostileTeamTest.AHostKilledAgainAndAgainLosesNothingAndRedoesNothingDone
// (the workspace's files) and of PgRuntimeTest's on PostgreSQL, written once.
//
// Three teammates work a graph of 36 jobs in levels of three, each job
// blocked by the whole level before (scenario team_chaos.yaml: a job
// appends its number to work.log, tells the lead, completes its task). The
// host is killed eight times, each after 1-3 more jobs began and then a
// random 0-90 ms, and resumed by the next `mates run` each time. Then:
// every task is completed; no task completed before a kill is worked on
// after it; no job began before all of its blockers' work was over; every
// job's report reached the lead; every journal replays whole; no command
// outlives its host. The seed is printed; MATES_CHAOS_SEED replays one.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/journal.h"
#include "store/workspace.h"
#include "store/team_store.h"
#include "support/test_util.h"

namespace mates::testing {

// `run_args`: what resumes the team (`run --team T …`, the store's flags
// with it); the first run adds the goal "Go". `store`: where the team is
// kept, already made, its board empty.
inline void KillAHostAgainAndAgain(const fs::path& ws, TeamStore& store, const std::string& team,
                                   const std::vector<std::string>& run_args) {
  constexpr int kJobs = 36, kWidth = 3, kKills = 8;
  // Job `id`'s blockers: the whole level before.
  auto blockers = [](int64_t id) {
    std::vector<int64_t> out;
    for (int64_t b = (id - 1) / kWidth * kWidth - kWidth + 1;
         b >= 1 && b <= (id - 1) / kWidth * kWidth; ++b) {
      out.push_back(b);
    }
    return out;
  };
  unsigned seed = std::random_device{}();
  if (const char* s = std::getenv("MATES_CHAOS_SEED"))
    seed = static_cast<unsigned>(std::strtoul(s, nullptr, 10));
  SCOPED_TRACE("MATES_CHAOS_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  std::unique_ptr<TaskBoard> board = store.Board(team);
  for (int i = 1; i <= kJobs; ++i) {
    TaskDraft d;
    d.subject = "job " + std::to_string(i);
    d.blocked_by = blockers(i);
    ASSERT_TRUE(board->Create(d).ok());
  }
  const fs::path work = ws / "work.log";
  auto lines = [&] {
    std::vector<std::string> out;
    std::istringstream in(ReadAll(work));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(line);
    }
    return out;
  };
  auto completed = [&] {
    std::set<int64_t> done;
    auto all = board->List(false);
    EXPECT_TRUE(all.ok()) << all.status().message();
    for (const auto& t : all.ok() ? *all : std::vector<Task>{}) {
      if (t.status == TaskStatus::kCompleted) done.insert(t.id);
    }
    return done;
  };
  const fs::path agents = Workspace(ws).AgentsDir(team);
  // Who holds what, for a failure.
  auto who = [&] {
    return Run({"sh", "-c",
                "ls -li " + agents.string() +
                    "; cat /proc/locks; ps -eo pid,ppid,pgid,sid,stat,etimes,args"})
        .out;
  };
  // Per kill: the lines of work.log by then, and the tasks completed.
  std::vector<std::pair<size_t, std::set<int64_t>>> kills;
  for (int round = 0; round < kKills; ++round) {
    auto args = run_args;
    if (round == 0) args.push_back("Go");
    const size_t lines_before = lines().size();
    Subprocess host = StartMates(ws, args);
    const size_t wanted = lines_before + std::uniform_int_distribution<size_t>(1, 3)(rng);
    ASSERT_TRUE(WaitUntil([&] { return lines().size() >= wanted || host.Exited(); }))
        << "round " << round << ": no job began";
    if (host.Exited()) {
      auto ended = host.Wait();
      FAIL() << "round " << round << ": the host ended (exit " << ended.exit_code
             << ") before it was killed:\n"
             << ended.err << who();
    }
    // Chaos, not synchronisation: the kill lands at a random moment of the
    // jobs under way (a job's command takes 73 ms).
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(0, 90000)(rng)));
    host.Signal(SIGKILL);
    EXPECT_EQ(host.Wait().term_signal, SIGKILL);
    kills.emplace_back(lines().size(), completed());
    if (kills.back().second.size() >= kJobs - kWidth)
      break;  // leave the last level for the last run
  }
  ASSERT_LT(kills.back().second.size(), static_cast<size_t>(kJobs))
      << "the work was over before the last kill";

  auto r = RunMates(ws, run_args, {}, "", 60);
  ASSERT_EQ(r.exit_code, 0) << r.err << who();
  EXPECT_EQ(completed().size(), static_cast<size_t>(kJobs)) << r.err;

  // Nothing completed was done again, and no job began before its blockers
  // were done for good (their last line: a job redone after a kill runs
  // again, and its dependents wait for that).
  const auto all = lines();
  std::map<int64_t, size_t> first, last;
  for (size_t i = 0; i < all.size(); ++i) {
    int64_t id = std::stoll(all[i]);
    first.emplace(id, i);
    last[id] = i;
  }
  EXPECT_EQ(first.size(), static_cast<size_t>(kJobs));
  for (const auto& [at, done] : kills) {
    for (size_t i = at; i < all.size(); ++i) {
      EXPECT_EQ(done.count(std::stoll(all[i])), 0u)
          << "job " << all[i] << " was done again after a kill";
    }
  }
  for (int64_t id = kWidth + 1; id <= kJobs; ++id) {
    for (int64_t b : blockers(id)) {
      EXPECT_GT(first[id], last[b])
          << "job " << id << " began before its blocker " << b << " was done";
    }
  }
  // Every report reached the lead: in its conversation, or still in its
  // inbox (a lead that had no turn left to take it in).
  std::string lead_saw = ReadAll(agents / "lead.jsonl");
  auto unread = store.InboxOf(team, "lead")->Peek();
  ASSERT_TRUE(unread.ok()) << unread.status().message();
  for (const auto& m : *unread) lead_saw += "\n" + m.content + "\n";
  for (int id = 1; id <= kJobs; ++id) {
    EXPECT_TRUE(std::regex_search(lead_saw, std::regex("done " + std::to_string(id) + "[^0-9]")))
        << "the lead never got job " << id << "'s report";
  }
  // Every journal replays whole: a kill tears at most a last line, which
  // the next open cuts off.
  for (const auto& entry : fs::directory_iterator(agents)) {
    if (entry.path().extension() != ".jsonl") continue;
    auto state = agent::Journal::Load(entry.path());
    ASSERT_TRUE(state.ok()) << entry.path();
    EXPECT_FALSE(state->problem.has_value())
        << entry.path().filename() << " stops at line " << state->problem->line << ": "
        << state->problem->what;
  }
  EXPECT_EQ(ProcessesIn("sleep 0.0731", ws), std::vector<std::string>{})
      << "a job's command outlived its host:\n"
      << r.err << who();
}

}  // namespace mates::testing
