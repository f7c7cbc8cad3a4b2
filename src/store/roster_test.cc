#include "store/roster.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/files.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

// Team "t" (its lead "lead") with a teammate "alice".
void TeamWithAlice(Roster& roster) {
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  Member m;
  m.name = "alice";
  ASSERT_TRUE(roster.AddMember("t", m).ok());
}

TEST(RosterTest, CreateWritesTheDesignConfig) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  auto c = roster.CreateTeam("rest-to-graphql");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->lead, "lead");
  ASSERT_EQ(c->members.size(), 1u);
  EXPECT_EQ(c->members[0].agent_id, "lead@rest-to-graphql");
  EXPECT_EQ(c->members[0].role, MemberRole::kLead);
  EXPECT_EQ(c->members[0].status, MemberStatus::kActive);
  EXPECT_TRUE(fs::exists(dir.path() / ".teams/rest-to-graphql/config.json"));
  EXPECT_TRUE(fs::is_directory(dir.path() / ".tasks/rest-to-graphql"));
  auto again = roster.CreateTeam("rest-to-graphql");
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
}

// The team's folder is watched by every process hosting its members (their
// inboxes are there): a status written is the roster moving in, nothing of
// its spare (kept in `.spares/`, DESIGN §3).
TEST(RosterTest, AStatusWrittenIsOneMoveInTheTeamsFolder) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  TeamWithAlice(roster);
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kIdle).ok());  // both ways once
  ScopedFd watch = testing::WatchFolder(Workspace(dir.path()).TeamDir("t"));
  ASSERT_TRUE(watch.valid());
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kActive).ok());
  ASSERT_TRUE(roster.SetStatuses("t", {{"alice", MemberStatus::kIdle}}).ok());
  EXPECT_EQ(testing::Heard(watch.get()),
            (std::vector<std::string>{"moved_to config.json", "moved_from config.json",
                                      "moved_to config.json", "moved_from config.json"}));
  EXPECT_EQ(roster.Load("t")->Find("alice")->status, MemberStatus::kIdle);
}

TEST(RosterTest, BadNamesCreateNothing) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  for (const char* bad : {"../escape", "a/b", "", ".."}) {
    EXPECT_EQ(roster.CreateTeam(bad).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(roster.CreateTeam("ok", "bad/lead").status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(testing::ListFiles(dir.path()).empty());
}

TEST(RosterTest, MembersGetIdsAndCyclingColours) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  std::vector<std::string> colors;
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
    Member m;
    m.name = name;
    auto added = roster.AddMember("t", m);
    ASSERT_TRUE(added.ok());
    EXPECT_EQ(added->agent_id, std::string(name) + "@t");
    colors.push_back(added->color);
  }
  EXPECT_EQ(colors, (std::vector<std::string>{"cyan", "yellow", "magenta", "green", "blue",
                                              "cyan"}));
  Member dup;
  dup.name = "a";
  EXPECT_EQ(roster.AddMember("t", dup).status().code(), StatusCode::kAlreadyExists);
  Member bad;
  bad.name = "../x";
  EXPECT_EQ(roster.AddMember("t", bad).status().code(), StatusCode::kInvalidArgument);
  Member orphan;
  orphan.name = "x";
  EXPECT_EQ(roster.AddMember("nope", orphan).status().code(), StatusCode::kNotFound);
}

TEST(RosterTest, StatusUpdatesAreKept) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  ASSERT_NO_FATAL_FAILURE(TeamWithAlice(roster));
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kActive).ok());
  EXPECT_EQ(roster.Load("t")->Find("alice")->status, MemberStatus::kActive);
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kShutdown).ok());
  EXPECT_EQ(roster.Load("t")->Find("alice")->status, MemberStatus::kShutdown);
  EXPECT_EQ(roster.SetStatus("t", "bob", MemberStatus::kIdle).code(), StatusCode::kNotFound);
}

TEST(RosterTest, ConcurrentJoinsAndStatusChangesLoseNothing) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      Member m;
      m.name = "m" + std::to_string(i);
      ASSERT_TRUE(roster.AddMember("t", m).ok());
      ASSERT_TRUE(roster.SetStatus("t", m.name, MemberStatus::kActive).ok());
    });
  }
  for (auto& t : threads) t.join();
  auto c = roster.Load("t");
  ASSERT_EQ(c->members.size(), 17u);
  for (const auto& m : c->members) EXPECT_EQ(m.status, MemberStatus::kActive) << m.name;
}

// What is read is exactly what is on disk, whoever wrote it and whatever
// did not survive the writing.
TEST(RosterTest, WhatIsReadIsWhatIsOnDiskWhoeverWroteIt) {
  TempDir dir;
  Workspace ws(dir.path());
  Roster roster{ws};
  ASSERT_NO_FATAL_FAILURE(TeamWithAlice(roster));
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kActive).ok());
  EXPECT_EQ(roster.Load("t")->Find("alice")->color, "cyan");
  // Another writer, at once and to the same length: no timestamp or size
  // would tell the versions apart.
  std::string text = testing::ReadAll(ws.ConfigPath("t"));
  auto at = text.find("\"cyan\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, "\"blue\"");
  testing::WriteAll(ws.ConfigPath("t"), text);
  EXPECT_EQ(roster.Load("t")->Find("alice")->color, "blue");
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kIdle).ok());
  EXPECT_EQ(roster.Load("t")->Find("alice")->color, "blue");
  // What the file cannot hold is read back as the file has it: invalid
  // UTF-8 as U+FFFD, a time that is no number as none, a lead's model
  // (not written) as empty.
  auto changed = roster.Update("t", [](TeamConfig& c) {
    c.Find("alice")->prompt = "a\xff b";
    c.Find("alice")->joined_at = std::nan("");
    c.Find("lead")->model = "m";
    return Status::Ok();
  });
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  auto c = roster.Load("t");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->Find("alice")->prompt, "a\xEF\xBF\xBD b");
  EXPECT_EQ(c->Find("alice")->joined_at, 0);
  EXPECT_EQ(c->Find("lead")->model, "");
  // And a later update starts from that, not from what was asked.
  ASSERT_TRUE(roster.SetStatus("t", "alice", MemberStatus::kActive).ok());
  EXPECT_EQ(roster.Load("t")->Find("alice")->prompt, "a\xEF\xBF\xBD b");
  EXPECT_EQ(roster.Load("t")->Find("lead")->model, "");
}

// Statuses set in batches give the very file a whole write of the roster
// gives: every length of status before and after, members whose text looks
// like a status, many rounds on one roster.
TEST(RosterTest, StatusesSetInBatchesWriteWhatAWholeWriteWrites) {
  TempDir dir;
  Workspace ws(dir.path());
  Roster roster{ws};
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  for (int i = 0; i < 12; ++i) {
    Member m;
    m.name = "m" + std::to_string(i);
    m.prompt = i % 3 == 0 ? "\"status\": \"active\"" : "say \"status\": \"idle\" when done";
    m.model = "status";
    ASSERT_TRUE(roster.AddMember("t", m).ok());
  }
  TeamConfig expected = *roster.Load("t");
  const MemberStatus kAll[] = {MemberStatus::kIdle, MemberStatus::kActive, MemberStatus::kShutdown};
  uint32_t seed = 7;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff; };
  for (int round = 0; round < 60; ++round) {
    std::vector<std::pair<std::string, MemberStatus>> changes;
    for (size_t k = 0, n = 1 + next() % 5; k < n; ++k) {
      const Member& m = expected.members[next() % expected.members.size()];
      changes.emplace_back(m.name, kAll[next() % 3]);
    }
    if (round % 10 == 0) changes.emplace_back("nobody", MemberStatus::kActive);  // passed over
    for (const auto& [name, status] : changes) {
      if (Member* m = expected.Find(name)) m->status = status;
    }
    ASSERT_TRUE(roster.SetStatuses("t", changes).ok());
    ASSERT_EQ(testing::ReadAll(ws.ConfigPath("t")), DumpJsonPretty(TeamConfigToJson(expected)))
        << "round " << round;
    // Read back, and through a parse of the bytes alone.
    auto read = roster.Load("t");
    ASSERT_TRUE(read.ok());
    auto parsed = TeamConfigFromJson(*ParseJson(testing::ReadAll(ws.ConfigPath("t"))));
    ASSERT_TRUE(parsed.ok());
    for (size_t i = 0; i < expected.members.size(); ++i) {
      EXPECT_EQ(read->members[i].status, expected.members[i].status) << round << " " << i;
      EXPECT_EQ(parsed->members[i].status, expected.members[i].status) << round << " " << i;
    }
  }
  EXPECT_EQ(roster.SetStatuses("nope", {{"m1", MemberStatus::kIdle}}).code(),
            StatusCode::kNotFound);
}

// A version another writer wrote (its own spacing, an old status name) is
// changed too; a change that changes nothing writes nothing.
TEST(RosterTest, StatusesSetOnAnotherWritersVersionAndUnchangedOnes) {
  TempDir dir;
  Workspace ws(dir.path());
  Roster roster{ws};
  ASSERT_NO_FATAL_FAILURE(TeamWithAlice(roster));
  // Another writer: one line, its own spacing, "working" for active.
  std::string text = DumpJson(*ParseJson(testing::ReadAll(ws.ConfigPath("t"))));
  auto at = text.find("\"status\":\"idle\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "\"status\":\"working\"");
  testing::WriteAll(ws.ConfigPath("t"), text);
  ASSERT_TRUE(
      roster.SetStatuses("t", {{"alice", MemberStatus::kShutdown}, {"lead", MemberStatus::kIdle}})
          .ok());
  auto c = roster.Load("t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->Find("alice")->status, MemberStatus::kShutdown);
  EXPECT_EQ(c->Find("lead")->status, MemberStatus::kIdle);
  EXPECT_EQ(testing::ReadAll(ws.ConfigPath("t")), DumpJsonPretty(TeamConfigToJson(*c)));
  // Nothing to change: the file stays the same inode (a write replaces it).
  struct stat before {};
  ASSERT_EQ(::stat(ws.ConfigPath("t").c_str(), &before), 0);
  ASSERT_TRUE(
      roster.SetStatuses("t", {{"alice", MemberStatus::kShutdown}, {"bob", MemberStatus::kActive}})
          .ok());
  struct stat after {};
  ASSERT_EQ(::stat(ws.ConfigPath("t").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  ASSERT_TRUE(roster.SetStatuses("t", {{"alice", MemberStatus::kActive}}).ok());
  ASSERT_EQ(::stat(ws.ConfigPath("t").c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  EXPECT_EQ(roster.Load("t")->Find("alice")->status, MemberStatus::kActive);
}

TEST(RosterTest, ListAndDelete) {
  TempDir dir;
  Roster roster{Workspace(dir.path())};
  ASSERT_TRUE(roster.CreateTeam("b").ok());
  ASSERT_TRUE(roster.CreateTeam("a").ok());
  EXPECT_EQ(*roster.ListTeams(), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(roster.DeleteTeam("a").ok());
  EXPECT_EQ(*roster.ListTeams(), std::vector<std::string>{"b"});
  EXPECT_FALSE(fs::exists(dir.path() / ".teams/a"));
  EXPECT_FALSE(fs::exists(dir.path() / ".tasks/a"));
  EXPECT_EQ(roster.DeleteTeam("a").code(), StatusCode::kNotFound);
}

TEST(RosterTest, ReadsTheSeedConfigShape) {
  TempDir dir;
  Workspace ws(dir.path());
  fs::create_directories(ws.TeamDir("seed"));
  testing::WriteAll(ws.ConfigPath("seed"), R"({
    "name": "seed", "created_at": 1709234500.0,
    "members": [{"name": "frontend", "agent_id": "frontend@seed", "status": "working"}]})");
  auto c = Roster(ws).Load("seed");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->members[0].status, MemberStatus::kActive);
  EXPECT_EQ(c->lead, "lead");
}

TEST(RosterTest, CorruptConfigIsAClearError) {
  TempDir dir;
  Workspace ws(dir.path());
  fs::create_directories(ws.TeamDir("t"));
  testing::WriteAll(ws.ConfigPath("t"), "{\"name\": ");
  auto c = Roster(ws).Load("t");
  // Corrupt state, not bad input (DESIGN §10): exit 1 at the CLI.
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(ExitCodeFor(c.status()), 1);
  EXPECT_NE(c.status().message().find("config.json is corrupt"), std::string::npos);
  // Names that would lead out of the team's folder are corrupt too.
  testing::WriteAll(ws.ConfigPath("t"),
                    R"({"name": "t", "members": [{"name": "lead", "role": "lead"}, {"name": "../x"}]})");
  c = Roster(ws).Load("t");
  EXPECT_EQ(c.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(c.status().message().find("invalid member name '../x'"), std::string::npos)
      << c.status().message();
  testing::WriteAll(ws.ConfigPath("t"), R"({"name": "other", "members": []})");
  EXPECT_EQ(Roster(ws).Load("t").status().code(), StatusCode::kCorrupt);
}

void SetBudget(Roster& roster, const TeamBudget& budget) {
  ASSERT_TRUE(roster
                  .Update("t",
                          [&](TeamConfig& c) {
                            c.budget = budget;
                            return Status::Ok();
                          })
                  .ok());
}

// A team made in a session under a budget keeps where the budget came from
// and what that session had spent before it; a hand-edited one that would
// give a budget back or lead out of the teams' folder is corrupt.
// The sessions a team records (DESIGN §31): the latest kMaxTeamSessions
// round-trip; a hand-edited entry of the wrong shape is a clear error.
TEST(RosterTest, TheLatestSessionsRoundTripAndABadOneIsAClearError) {
  TempDir dir;
  Workspace ws(dir.path());
  Roster roster(ws);
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(roster.Update("t", [&](TeamConfig& c) {
      c.NoteSession({1000.0 + i, i % 2 ? "up" : "run", std::string(40, static_cast<char>('a' + i % 6)), "main"});
      return Status::Ok();
    }).ok());
  }
  auto c = roster.Load("t");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->sessions.size(), kMaxTeamSessions);
  EXPECT_EQ(c->sessions.front().started_at, 1004.0);
  EXPECT_EQ(c->sessions.back().started_at, 1019.0);
  EXPECT_EQ(c->sessions.back().how, "up");
  EXPECT_EQ(c->sessions.back().branch, "main");
  auto j = ParseJson(testing::ReadAll(ws.ConfigPath("t")));
  ASSERT_TRUE(j.ok());
  (*j)["sessions"][0]["commit"] = 7;
  testing::WriteAll(ws.ConfigPath("t"), DumpJson(*j));
  auto bad = roster.Load("t");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("commit"), std::string::npos) << bad.status().message();
}

TEST(RosterTest, ABudgetSharedWithTheSessionThatMadeTheTeamRoundTrips) {
  TempDir dir;
  Workspace ws(dir.path());
  Roster roster(ws);
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  TeamBudget shared;
  shared.usd = 0.5;
  shared.from = "default";
  shared.spent_before_tokens = 3229;
  shared.spent_before_usd = 0.0125;
  shared.spent_in_made_tokens = 77;
  shared.spent_in_made_usd = 0.25;
  SetBudget(roster, shared);
  auto c = roster.Load("t");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->budget.tokens, 0);
  EXPECT_DOUBLE_EQ(c->budget.usd, 0.5);
  EXPECT_EQ(c->budget.from, "default");
  EXPECT_EQ(c->budget.spent_before_tokens, 3229);
  EXPECT_DOUBLE_EQ(c->budget.spent_before_usd, 0.0125);
  EXPECT_EQ(c->budget.spent_in_made_tokens, 77);
  EXPECT_DOUBLE_EQ(c->budget.spent_in_made_usd, 0.25);
  EXPECT_EQ(c->budget.counted_tokens(), 3229 + 77);
  // A budget of the team's own writes neither.
  SetBudget(roster, TeamBudget{.tokens = 100});
  std::string text = testing::ReadAll(ws.ConfigPath("t"));
  EXPECT_EQ(text.find("from"), std::string::npos) << text;
  EXPECT_EQ(text.find("spent_before"), std::string::npos) << text;
  EXPECT_EQ(text.find("spent_in_teams_made"), std::string::npos) << text;
  // What its sessions spent in teams they made stays with no budget: one
  // given again counts it.
  SetBudget(roster, TeamBudget{.spent_in_made_tokens = 5});
  EXPECT_EQ(roster.Load("t")->budget.spent_in_made_tokens, 5);

  const std::pair<const char*, const char*> bad[] = {
      {R"("from": "../x")", "invalid budget.from '../x'"},
      {R"("from": 7)", "field 'from' must be a string"},
      {R"("from": "default", "spent_before": {"tokens": -1})", "budget.spent_before"},
      {R"("from": "default", "spent_before": {"usd": -0.5})", "budget.spent_before"},
      {R"("from": "default", "spent_before": {"usd": 1e300})", "budget.spent_before"},
      {R"("from": "default", "spent_before": 3)", "field 'spent_before' must be an object"},
      {R"("from": "default", "spent_before": {"tokens": 1000000000000000001})",
       "budget.spent_before"},
      {R"("spent_in_teams_made": {"tokens": -3})", "budget.spent_in_teams_made"},
      {R"("spent_in_teams_made": {"tokens": 9223372036854775807})", "budget.spent_in_teams_made"},
      {R"("spent_in_teams_made": {"tokens": 5, "usd": "x"})", "field 'usd' must be a number"}};
  for (const auto& [json, says] : bad) {
    testing::WriteAll(
        ws.ConfigPath("t"),
        std::string(R"({"name": "t", "members": [], "budget": {"tokens": 9, )") + json + "}}");
    auto r = Roster(ws).Load("t");
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << json;
    EXPECT_NE(r.status().message().find(says), std::string::npos)
        << json << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace mates
