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
    for (const char* v : {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                          "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "MATES_MODEL"}) {
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
  c.kind = "cohere";
  EXPECT_NE(MakeProvider(c).status().message().find(
                "unknown provider 'cohere' (valid: anthropic, openai, openai-responses, gemini, scripted)"),
            std::string::npos);
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
  c.kind = "openai-responses";
  EXPECT_NE(MakeProvider(c).status().message().find("needs OPENAI_API_KEY"), std::string::npos);
  c.kind = "gemini";
  EXPECT_NE(MakeProvider(c).status().message().find("needs GEMINI_API_KEY (or GOOGLE_API_KEY)"), std::string::npos);
  c.base_url = "http://127.0.0.1:11434/v1";  // a local server needs no key
  for (const char* kind : {"openai", "openai-responses", "gemini"}) {
    c.kind = kind;
    auto p = MakeProvider(c);
    ASSERT_TRUE(p.ok()) << kind;
    EXPECT_EQ((*p)->name(), kind);
  }
}

// Gemini's key comes from either variable, as Gemini CLI reads them, and
// its base URL from GOOGLE_GEMINI_BASE_URL.
TEST_F(ProviderFactoryTest, GeminisKeyAndBaseUrlComeFromItsVariables) {
  ::setenv("GOOGLE_API_KEY", "google-key-for-tests", 1);
  ::setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9", 1);
  ASSERT_TRUE(Secrets::Load().ok());
  ProviderConfig c;
  c.kind = "gemini";
  auto p = MakeProvider(c);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->default_model(), "gemini-2.5-flash");
  // The key is a secret like the others: redacted wherever it would show.
  EXPECT_EQ(Secrets::Redact("key=google-key-for-tests"), "key=[redacted]");
  ::unsetenv("GOOGLE_API_KEY");
  ::unsetenv("GOOGLE_GEMINI_BASE_URL");
}

}  // namespace
}  // namespace mates::llm
