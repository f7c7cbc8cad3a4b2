#include "core/names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mates {
namespace {

TEST(NamesTest, AcceptsThePattern) {
  for (std::string ok : std::vector<std::string>{"a", "lead", "rest-to-graphql", "A.b_c-9", "0x", std::string(64, 'z')}) {
    EXPECT_TRUE(ValidateName("team name", ok).ok()) << ok;
  }
}

TEST(NamesTest, RefusesPathEscapesAndJunk) {
  for (std::string bad : std::vector<std::string>{"", "..", ".", "a/b", "/abs", "-x", "_x", ".hidden", "a b", "a\nb",
                          "x\\y", "é", std::string(65, 'z')}) {
    Status s = ValidateName("team name", bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("invalid team name"), std::string::npos);
  }
}

// A hostile name is refused without being passed on as it is: no control
// byte or NUL reaches the message, and a huge one is shown cut.
TEST(NamesTest, TheErrorShowsABadNameShortAndPrintable) {
  Status nul = ValidateName("team name", std::string("d\0x", 3));
  EXPECT_NE(nul.message().find("'d\\x00x'"), std::string::npos) << nul.message();
  EXPECT_NE(nul.message().find("character '\\x00' is not allowed"), std::string::npos)
      << nul.message();
  Status esc = ValidateName("team name", "a\x1b[2Jb\n");
  EXPECT_EQ(esc.message().find('\x1b'), std::string::npos) << esc.message();
  EXPECT_EQ(esc.message().find('\n'), std::string::npos) << esc.message();
  Status huge = ValidateName("team name", std::string(5000, 'a'));
  EXPECT_LT(huge.message().size(), 300u) << huge.message();
  EXPECT_NE(huge.message().find("… (5000 bytes)"), std::string::npos) << huge.message();
  EXPECT_NE(huge.message().find("longer than 64 characters"), std::string::npos);
}

}  // namespace
}  // namespace mates
