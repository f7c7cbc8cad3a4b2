#include "store/roster.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

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
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  Member m;
  m.name = "alice";
  ASSERT_TRUE(roster.AddMember("t", m).ok());
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

// A roster this process wrote is not parsed again when it reads it back
// (roster.cc's ParsedRosters): what it reads must still be exactly what is
// on disk, whoever wrote it and whatever did not survive the writing.
TEST(RosterTest, WhatIsReadIsWhatIsOnDiskWhoeverWroteIt) {
  TempDir dir;
  Workspace ws(dir.path());
  Roster roster{ws};
  ASSERT_TRUE(roster.CreateTeam("t").ok());
  Member m;
  m.name = "alice";
  ASSERT_TRUE(roster.AddMember("t", m).ok());
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

}  // namespace
}  // namespace mates
