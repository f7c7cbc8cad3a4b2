#include "llm/provider_factory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "core/secrets.h"
#include "support/test_util.h"

namespace mates::llm {
namespace {

class ProviderFactoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
                          "OPENAI_BASE_URL", "MATES_MODEL"}) {
      ::unsetenv(v);
    }
    ASSERT_TRUE(Secrets::Load().ok());
  }
};

TEST_F(ProviderFactoryTest, NoChoiceSaysHowToChoose) {
  auto p = MakeProvider({});
  ASSERT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("ANTHROPIC_API_KEY"), std::string::npos);
  EXPECT_NE(p.status().message().find("--provider scripted --scenario FILE"), std::string::npos);
}

TEST_F(ProviderFactoryTest, AKeyMeansAnthropicAndEnvironmentFillsIn) {
  ::setenv("ANTHROPIC_API_KEY", "sk-x", 1);
  ::setenv("MATES_MODEL", "claude-test", 1);
  ASSERT_TRUE(Secrets::Load().ok());  // keys are read once, at start-up
  auto p = MakeProvider({});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->name(), "anthropic");
  EXPECT_EQ((*p)->default_model(), "claude-test");
  ProviderConfig c;
  c.kind = "anthropic";
  c.model = "flag-wins";
  EXPECT_EQ((*MakeProvider(c))->default_model(), "flag-wins");
}

TEST_F(ProviderFactoryTest, BadChoicesAreRefused) {
  ProviderConfig c;
  c.kind = "gemini";
  EXPECT_NE(MakeProvider(c).status().message().find("unknown provider 'gemini'"), std::string::npos);
  c.kind = "scripted";
  EXPECT_NE(MakeProvider(c).status().message().find("needs --scenario"), std::string::npos);
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "s.json", "{\"rules\": 3}");
  c.scenario = (dir.path() / "s.json").string();
  EXPECT_NE(MakeProvider(c).status().message().find("rules: must be a list"), std::string::npos);
  c.kind = "anthropic";  // the public API without a key
  EXPECT_NE(MakeProvider(c).status().message().find("needs ANTHROPIC_API_KEY"), std::string::npos);
  c.kind = "openai";
  EXPECT_NE(MakeProvider(c).status().message().find("OPENAI_API_KEY"), std::string::npos);
  c.base_url = "http://127.0.0.1:11434/v1";  // a local server needs no key
  EXPECT_TRUE(MakeProvider(c).ok());
}

}  // namespace
}  // namespace mates::llm
