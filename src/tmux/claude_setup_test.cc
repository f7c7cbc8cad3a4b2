#include "tmux/claude_setup.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "support/test_util.h"

namespace mates::tmux {
namespace {

Json Load(const fs::path& p) { return *ParseJson(testing::ReadAll(p)); }

TEST(ClaudeSetupTest, AFreshEnvironmentGetsEveryAnswer) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "work");
  fs::path file = dir.path() / "cfg/.claude.json";
  auto changed = PrepareClaudeCode(file, dir.path() / "work", "sk-test-abcdefghijklmnopqrstuvwxyz0123");
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(changed->size(), 3u);
  Json j = Load(file);
  EXPECT_EQ(j["hasCompletedOnboarding"], true);
  EXPECT_EQ(j["theme"], "dark");
  std::string work = fs::canonical(dir.path() / "work").string();
  EXPECT_EQ(j["projects"][work]["hasTrustDialogAccepted"], true);
  // Claude Code knows a key by its last 20 characters; the key itself is not written.
  EXPECT_EQ(j["customApiKeyResponses"]["approved"], Json::array({"klmnopqrstuvwxyz0123"}));
  EXPECT_EQ(testing::ReadAll(file).find("sk-test-abc"), std::string::npos);
  // Asked again: nothing to do, the file is left alone.
  auto again = PrepareClaudeCode(file, dir.path() / "work", "sk-test-abcdefghijklmnopqrstuvwxyz0123");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST(ClaudeSetupTest, KeepsWhatIsThereAndThePersonsOwnAnswers) {
  testing::TempDir dir;
  fs::path file = dir.path() / ".claude.json";
  testing::WriteAll(file, R"({"theme": "light", "userID": "u1", "hasCompletedOnboarding": false, "oauthAccount": {"email": "a@b"},
    "customApiKeyResponses": {"approved": [], "rejected": ["klmnopqrstuvwxyz0123"]},
    "projects": {"/elsewhere": {"allowedTools": ["Bash"]}}})");
  auto changed = PrepareClaudeCode(file, dir.path(), "sk-test-abcdefghijklmnopqrstuvwxyz0123");
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  Json j = Load(file);
  EXPECT_EQ(j["theme"], "light");
  EXPECT_EQ(j["userID"], "u1");
  EXPECT_EQ(j["oauthAccount"]["email"], "a@b");
  EXPECT_EQ(j["projects"]["/elsewhere"]["allowedTools"], Json::array({"Bash"}));
  // A key the person rejected stays rejected.
  EXPECT_TRUE(j["customApiKeyResponses"]["approved"].empty());
  EXPECT_EQ(j["customApiKeyResponses"]["rejected"], Json::array({"klmnopqrstuvwxyz0123"}));
  // No key in the environment: no key answer.
  testing::TempDir other;
  ASSERT_TRUE(PrepareClaudeCode(other.path() / ".claude.json", other.path(), "").ok());
  EXPECT_FALSE(Load(other.path() / ".claude.json").contains("customApiKeyResponses"));
}

TEST(ClaudeSetupTest, AFileThatIsNotAJsonObjectIsNeverOverwritten) {
  testing::TempDir dir;
  for (std::string bad : {"{\"theme\": \"dark\", \"projects\": {", "[1, 2]", "not json"}) {
    fs::path file = dir.path() / ".claude.json";
    testing::WriteAll(file, bad);
    auto r = PrepareClaudeCode(file, dir.path(), "");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("is not a JSON object; not touching it"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(testing::ReadAll(file), bad);
  }
}

TEST(ClaudeSetupTest, TheFileIsWhereClaudeCodeLooks) {
  auto f = ClaudeConfigFile({{"CLAUDE_CONFIG_DIR", "/x/cfg"}, {"HOME", "/x/home"}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, fs::path("/x/cfg/.claude.json"));
  f = ClaudeConfigFile({{"CLAUDE_CONFIG_DIR", ""}, {"HOME", "/x/home"}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, fs::path("/x/home/.claude.json"));
  f = ClaudeConfigFile({{"CLAUDE_CONFIG_DIR", ""}, {"HOME", ""}});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("neither CLAUDE_CONFIG_DIR nor HOME"), std::string::npos);
  EXPECT_EQ(EnvOf({{"A", "agent's"}}, "A"), "agent's");
}

}  // namespace
}  // namespace mates::tmux
