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

}  // namespace
}  // namespace mates
