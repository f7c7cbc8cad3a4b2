#include "core/text.h"

#include <gtest/gtest.h>

#include <string>

namespace mates {
namespace {

TEST(CutUtf8Test, ShortTextIsKeptWhole) {
  EXPECT_EQ(CutUtf8("", 0), "");
  EXPECT_EQ(CutUtf8("abc", 3), "abc");
  EXPECT_EQ(CutUtf8("é", 2), "é");
}

TEST(CutUtf8Test, LongTextIsCutAtTheBoundAndMarked) {
  EXPECT_EQ(CutUtf8("abcdef", 3), "abc…");
  EXPECT_EQ(CutUtf8("abc", 0), "…");
}

TEST(CutUtf8Test, NeverCutsInsideACharacter) {
  // "é" is two bytes, "€" three, "𝄞" four: a bound inside one drops it whole.
  EXPECT_EQ(CutUtf8("aé", 2), "a…");
  EXPECT_EQ(CutUtf8("a€b", 2), "a…");
  EXPECT_EQ(CutUtf8("a€b", 3), "a…");
  EXPECT_EQ(CutUtf8("a€b", 4), "a€…");
  EXPECT_EQ(CutUtf8("𝄞x", 3), "…");
  const std::string many(1000, '\xC3');  // lead bytes with no continuation: cut by bytes
  EXPECT_EQ(CutUtf8(many, 10), std::string(10, '\xC3') + "…");
  const std::string cont(1000, '\x80');  // continuation bytes only: nothing safe to keep
  EXPECT_EQ(CutUtf8(cont, 10), "…");
}

TEST(CutUtf8Test, KeepsNulBytes) {
  const std::string nul("a\0b\0c", 5);
  EXPECT_EQ(CutUtf8(nul, 5), nul);
  EXPECT_EQ(CutUtf8(nul, 3), std::string("a\0b", 3) + "…");
}

}  // namespace
TEST(TextTest, PercentEncodingKeepsOnlyWhatItMay) {
  EXPECT_EQ(PercentEncode("a b&c=d/é~"), "a%20b%26c%3Dd%2F%C3%A9~");
  EXPECT_EQ(PercentEncode("/tmp/a b", "/"), "/tmp/a%20b");
  EXPECT_EQ(PercentEncode(std::string("\0\n", 2)), "%00%0A");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(JoinWordsTest, SeparatesAndCutsAtMost) {
  EXPECT_EQ(JoinWords({}), "");
  EXPECT_EQ(JoinWords({"a"}), "a");
  EXPECT_EQ(JoinWords({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(JoinWords({"a", "b", "c"}, " "), "a b c");
  EXPECT_EQ(JoinWords({"a", "b", "c"}, ", ", 2), "a, b, …");
  EXPECT_EQ(JoinWords({"a", "b"}, ", ", 2), "a, b");
}

}  // namespace mates
