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


// DESIGN §10: no document from outside may nest deeper than 128 levels
// (the parser's result would overflow the stack when dumped or compared).
TEST(JsonTest, RefusesDeepNestingWithOneClearError) {
  for (int depth : {129, 100000, 1000000}) {
    std::string deep = std::string(depth, '[') + std::string(depth, ']');
    auto r = ParseJson(deep);
    ASSERT_FALSE(r.ok()) << depth;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("deeper than 128"), std::string::npos) << r.status().message();
    std::string objects;
    for (int i = 0; i < depth; ++i) objects += "{\"a\":";
    EXPECT_FALSE(ParseJson(objects + "1" + std::string(depth, '}')).ok()) << depth;
  }
  std::string ok = std::string(128, '[') + std::string(128, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
  // Brackets inside strings (escaped quotes too) are not nesting.
  std::string in_string = "{\"s\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  EXPECT_TRUE(ParseJson(in_string).ok()) << in_string.substr(0, 40);
  EXPECT_EQ(JsonNestingDepth(in_string, 128), 1);
}

TEST(JsonTest, ValueDepthIsMeasuredWithoutRecursion) {
  Json v = Json::array();
  Json* cur = &v;
  for (int i = 0; i < 200000; ++i) {
    cur->push_back(Json::array());
    cur = &cur->back();
  }
  EXPECT_EQ(JsonValueDepth(v, 128), 129);
  EXPECT_EQ(JsonValueDepth(Json::parse("[[1],{\"a\":[2]}]"), 128), 3);
  EXPECT_EQ(JsonValueDepth(Json(3), 128), 0);
}

// The pretty form grows linearly with the value: full indentation of 3,000
// levels took 18 MB for 6 KB of metadata.
TEST(JsonTest, PrettyDumpStaysLinearAndReadable) {
  std::string nested;
  for (int i = 0; i < 120; ++i) nested += "{\"k\":";
  nested += "1" + std::string(120, '}');
  Json task = {{"id", 3}, {"blockedBy", {1, 2}}, {"metadata", *ParseJson(nested)}};
  std::string pretty = DumpJsonPretty(task);
  EXPECT_LT(pretty.size(), 2 * DumpJson(task).size() + 64) << pretty.size();
  EXPECT_EQ(*ParseJson(pretty), task);
  EXPECT_NE(pretty.find("\n  \"id\": 3,\n"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\"blockedBy\": [1,2]"), std::string::npos) << pretty;
  Json config = {{"members", {{{"name", "a"}}, {{"name", "b"}}}}};
  EXPECT_EQ(DumpJsonPretty(config),
            "{\n  \"members\": [\n    {\n      \"name\": \"a\"\n    },\n    {\n      \"name\": \"b\"\n    }\n  ]\n}");
  EXPECT_EQ(DumpJsonPretty(Json::object()), "{}");
  EXPECT_EQ(DumpJsonPretty(Json::array()), "[]");
}

TEST(JsonTest, PrettyDumpEscapesKeysAndValuesLikeTheCompactOne) {
  // Keys laid out one a line are written by hand when plain; anything else
  // is escaped as DumpJson escapes it, invalid UTF-8 replaced.
  Json doc = {{"plain", 1},
              {"quo\"te", "a\\b"},
              {"tab\there", "line\nbreak"},
              {"ctl\x01", "\x7f"},
              {"bad\xff", "v\xc3"},
              {"ünï", {{"nested\"", {1, {{"k", "\xff"}}}}}}};
  std::string pretty = DumpJsonPretty(doc);
  EXPECT_NE(pretty.find("\"quo\\\"te\": \"a\\\\b\""), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\"tab\\there\": \"line\\nbreak\""), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\"ctl\\u0001\""), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("\"bad\xEF\xBF\xBD\": \"v\xEF\xBF\xBD\""), std::string::npos) << pretty;
  // Read back, it is the document with U+FFFD for the invalid bytes: the
  // compact dump's reading.
  EXPECT_EQ(*ParseJson(pretty), *ParseJson(DumpJson(doc)));
}

TEST(JsonTest, IntegersAndStructuredFieldsSayWhatIsWrong) {
  Json j = *ParseJson(R"({"i": 3, "f": 4.0, "half": 2.5, "s": "3", "n": null, "o": {}, "a": []})");
  EXPECT_EQ(*JsonInt(j, "i", true), 3);
  EXPECT_EQ(*JsonInt(j, "f", true), 4);
  EXPECT_EQ(*JsonInt(j, "missing", false, 7), 7);
  EXPECT_EQ(*JsonInt(j, "n", false, 7), 7);
  EXPECT_NE(JsonInt(j, "n", true).status().message().find("missing field 'n'"), std::string::npos);
  EXPECT_NE(JsonInt(j, "half", true).status().message().find("'half' must be an integer"), std::string::npos);
  EXPECT_NE(JsonInt(j, "s", true).status().message().find("got string"), std::string::npos);
  EXPECT_NE(*JsonObjectField(j, "o", true), nullptr);
  EXPECT_EQ(*JsonObjectField(j, "n", false), nullptr);
  EXPECT_NE(JsonObjectField(j, "a", false).status().message().find("'a' must be an object, got array"),
            std::string::npos);
  EXPECT_NE(*JsonArrayField(j, "a", true), nullptr);
  EXPECT_FALSE(JsonArrayField(j, "o", true).ok());
  EXPECT_FALSE(JsonInt(Json(3), "i", true).ok());
}

}  // namespace
}  // namespace mates
