#include "core/shell_words.h"

#include <gtest/gtest.h>

namespace mates {
namespace {

using Words = std::vector<std::string>;

TEST(ShellWordsTest, SplitsLikeTheShellWithoutExpanding) {
  struct Case {
    const char* in;
    Words out;
  };
  for (const Case& c : std::vector<Case>{
           {"bash agent.sh 'BOSS OK' 0.3", {"bash", "agent.sh", "BOSS OK", "0.3"}},  // the issue's case
           {"  claude   --model  x ", {"claude", "--model", "x"}},
           {R"(echo "a \"quoted\" \$word" b\ c)", {"echo", R"(a "quoted" $word)", "b c"}},
           {R"(say 'it''s' "")", {"say", "its", ""}},
           {R"(x "\n stays" '\n too')", {"x", R"(\n stays)", R"(\n too)"}},
           {"run $HOME/* ~", {"run", "$HOME/*", "~"}},
           {"a'b'\"c\"d", {"abcd"}},
           {"", {}},
       }) {
    auto w = SplitShellWords(c.in);
    ASSERT_TRUE(w.ok()) << c.in << ": " << w.status().message();
    EXPECT_EQ(*w, c.out) << c.in;
  }
}

TEST(ShellWordsTest, UnterminatedQuotesAndATrailingBackslashAreRefused) {
  EXPECT_NE(SplitShellWords("bash 'BOSS OK").status().message().find("unterminated '"), std::string::npos);
  EXPECT_NE(SplitShellWords("say \"hi").status().message().find("unterminated \""), std::string::npos);
  EXPECT_NE(SplitShellWords("x \\").status().message().find("trailing backslash"), std::string::npos);
}

}  // namespace
}  // namespace mates
