#include "core/json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mates {
namespace {

TEST(JsonTest, ParsesAndReportsWhereItBroke) {
  auto ok = ParseJson(R"({"a": [1, 2]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["a"][1], 2);
  auto bad = ParseJson(R"({"a": [1, 2)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("malformed JSON"), std::string::npos);
  EXPECT_NE(bad.status().message().find("line 1"), std::string::npos);
  EXPECT_FALSE(ParseJson("").ok());
  EXPECT_FALSE(ParseJson("{\"a\":1} trailing").ok());
}

TEST(JsonTest, DumpNeverThrowsOnInvalidUtf8AndStaysOneLine) {
  Json j = {{"text", std::string("bad \xff\xfe bytes\nand a newline")}};
  std::string s;
  ASSERT_NO_THROW(s = DumpJson(j));
  EXPECT_EQ(s.find('\n'), std::string::npos);
  EXPECT_NE(s.find("\\n"), std::string::npos);
  EXPECT_TRUE(ParseJson(s).ok());
}

TEST(JsonTest, KeepsInsertionOrder) {
  Json j = {{"id", 1}, {"type", "message"}, {"content", "x"}};
  EXPECT_EQ(DumpJson(j), R"({"id":1,"type":"message","content":"x"})");
}

TEST(JsonTest, FieldAccessSaysWhatIsWrong) {
  Json j = {{"s", "x"}, {"n", 3}, {"b", true}, {"bs", "false"}};
  EXPECT_EQ(*JsonString(j, "s", true), "x");
  EXPECT_EQ(*JsonString(j, "missing", false, "dflt"), "dflt");
  auto missing = JsonString(j, "missing", true);
  EXPECT_NE(missing.status().message().find("missing field 'missing'"), std::string::npos);
  auto wrong = JsonString(j, "n", true);
  EXPECT_NE(wrong.status().message().find("must be a string"), std::string::npos);
  EXPECT_TRUE(*JsonBool(j, "b", false));
  EXPECT_FALSE(*JsonBool(j, "bs", true));
  EXPECT_FALSE(JsonBool(j, "s", true).ok());
  EXPECT_EQ(*JsonNumber(j, "n", 0), 3);
}

TEST(JsonTest, IdsAcceptNumbersAndNumericStringsOnly) {
  EXPECT_EQ(*JsonId(Json(3), "task_id"), 3);
  EXPECT_EQ(*JsonId(Json("42"), "task_id"), 42);
  EXPECT_EQ(*JsonId(Json(7.0), "task_id"), 7);
  EXPECT_FALSE(JsonId(Json(2.5), "task_id").ok());
  EXPECT_FALSE(JsonId(Json("4a"), "task_id").ok());
  EXPECT_FALSE(JsonId(Json("-1"), "task_id").ok());
  EXPECT_FALSE(JsonId(Json(0), "task_id").ok());
  EXPECT_FALSE(JsonId(Json(nullptr), "task_id").ok());
  EXPECT_FALSE(ParseId("", "id").ok());
  EXPECT_FALSE(ParseId("1 ", "id").ok());
  EXPECT_EQ(*ParseId("12", "id"), 12);
}

}  // namespace
}  // namespace mates
