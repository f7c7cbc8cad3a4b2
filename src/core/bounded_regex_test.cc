#include "core/bounded_regex.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mates {
namespace {

TEST(BoundedRegexTest, OrdinaryPatternsCompileAndMatch) {
  for (const char* p : {"^\\s*[>❯]\\s*$", "esc to interrupt", "a{3}b{1,1000}", "(x|y){2,}", "(a)\\1", "[{]"}) {
    auto re = CompileBoundedRegex(p);
    ASSERT_TRUE(re.ok()) << p << ": " << re.status().message();
  }
  auto re = CompileBoundedRegex("(ab){2}c");
  ASSERT_TRUE(re.ok());
  EXPECT_TRUE(std::regex_search("xxababc", *re));
  EXPECT_FALSE(std::regex_search("xxabc", *re));
}

TEST(BoundedRegexTest, HostilePatternsAreRefusedWithAReason) {
  struct Case {
    std::string pattern;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"a{2222222222222222222}", "repetition count past 1000"},  // overflowed a long: UB
           {"a{2222222222222222222", "repetition count past 1000"},   // no closing brace
           {"x{1,5000}", "repetition count past 1000"},
           {"(a)\\2222222222222222222", "back-reference number"},
           {"(((((a{9}){9}){9}){9}){9}){9}", "nested repetition counts multiply"},
           {std::string(5000, 'a'), "at most 4096 are taken"},
           {"(unclosed", "Mismatched"},
       }) {
    auto re = CompileBoundedRegex(c.pattern);
    ASSERT_FALSE(re.ok()) << c.pattern.substr(0, 40);
    EXPECT_NE(re.status().message().find(c.says), std::string::npos) << re.status().message();
  }
}

}  // namespace
}  // namespace mates
