#include "store/elicitation.h"

#include <gtest/gtest.h>

namespace mates::elicitation {
namespace {

// The reference server's form (server-everything's trigger-elicitation-
// request), cut to one field of each kind.
const Json kSchema = Json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "Your full, legal name", "maxLength": 5},
    "check": {"type": "boolean"},
    "email": {"type": "string", "format": "email"},
    "homepage": {"type": "string", "format": "uri"},
    "birthdate": {"type": "string", "format": "date"},
    "at": {"type": "string", "format": "date-time"},
    "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
    "number": {"type": "number", "minimum": 0, "maximum": 1000},
    "friend": {"type": "string", "enum": ["Monica", "Ross"], "default": "Monica"},
    "hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-3", "title": "Wonder Woman"}]},
    "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]},
    "tools": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]}},
    "fish": {"type": "array", "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}]}}
  },
  "required": ["name"]
})");

TEST(ElicitationTest, SchemasOfEveryAllowedKindPassAndOthersAreNamed) {
  EXPECT_TRUE(CheckSchema(kSchema).ok());
  EXPECT_TRUE(CheckSchema(Json::object()).ok()) << "a question with no field: a yes or no";
  struct Case {
    const char* schema;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"([])", "requestedSchema must be a JSON object"},
           {R"({"type":"array"})", "must be of type object"},
           {R"({"properties":[]})", "properties must be an object"},
           {R"({"properties":{"a":{"type":"object"}}})", "field 'a': type \"object\" is not one a question may ask"},
           {R"({"properties":{"a":{}}})", "field 'a': type (none)"},
           {R"({"properties":{"a":{"type":"array","items":{"type":"string"}}}})", "must name its choices"},
           {R"({"properties":{"a":{"type":"integer","default":"x"}}})", "field 'a': its default"},
           {R"({"properties":{"a":{"type":"string","enum":["x"],"default":"y"}}})", "its default"},
           {R"({"properties":{"a":{"type":"string"}},"required":["b"]})", "names \"b\""},
           {R"({"properties":{"a":{"type":"string"}},"required":"a"})", "required must be a list"},
       }) {
    Status s = CheckSchema(Json::parse(c.schema));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.schema;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.schema << ": " << s.message();
  }
  Json many = {{"type", "object"}, {"properties", Json::object()}};
  for (size_t i = 0; i <= kMaxFields; ++i) many["properties"]["f" + std::to_string(i)] = {{"type", "string"}};
  EXPECT_FALSE(CheckSchema(many).ok()) << "a form of more fields than a person reads";
}

TEST(ElicitationTest, AnswersAreCheckedFieldByFieldWithDefaultsFilledIn) {
  EXPECT_TRUE(CheckAnswer(kSchema, Json{{"name", "Ann"}}).ok());
  EXPECT_EQ(WithDefaults(kSchema, Json{{"name", "Ann"}}),
            Json::parse(R"({"name":"Ann","integer":42,"friend":"Monica"})"));
  EXPECT_TRUE(CheckAnswer(kSchema, Json::parse(R"({"name":"Ann","check":false,"email":"a@b.org",
      "homepage":"https://x.org/p","birthdate":"2000-02-29","at":"2026-11-28T22:50:03.5+01:00","integer":100,
      "number":3.14,"hero":"hero-3","pet":"pet-2","tools":["Piano","Drums"],"fish":["fish-2"]})"))
                  .ok());
  struct Case {
    const char* content;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {R"({})", "field 'name': it is required"},
           {R"({"name":"Annabel"})", "at most 5 characters"},
           {R"({"name":7})", "a string is wanted"},
           {R"({"name":"A","check":"yes"})", "true or false is wanted"},
           {R"({"name":"A","email":"a@b"})", "not a valid email"},
           {R"({"name":"A","homepage":"x.org"})", "not a valid uri"},
           {R"({"name":"A","birthdate":"2001-02-29"})", "not a valid date"},
           {R"({"name":"A","at":"2026-11-28 22:50"})", "not a valid date-time"},
           {R"({"name":"A","integer":1.5})", "a whole number is wanted"},
           {R"({"name":"A","integer":0})", "below its minimum 1"},
           {R"({"name":"A","number":"3"})", "a number is wanted"},
           {R"({"name":"A","friend":"Joey"})", "not one of its choices"},
           {R"({"name":"A","hero":"Superman"})", "not one of its choices"},
           {R"({"name":"A","tools":[]})", "at least 1 choices"},
           {R"({"name":"A","tools":["Piano","Drums","Guitar"]})", "at most 2 choices"},
           {R"({"name":"A","fish":["fish-3"]})", "not one of its choices"},
           {R"({"name":"A","colour":"red"})", "field 'colour': the question does not ask it"},
           {R"([])", "must be a JSON object"},
       }) {
    Status s = CheckAnswer(kSchema, Json::parse(c.content));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.content;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.content << ": " << s.message();
  }
  // Characters, not bytes.
  EXPECT_TRUE(CheckAnswer(kSchema, Json{{"name", "Zoë Ü"}}).ok());
}

TEST(ElicitationTest, WhatAPersonTypesIsReadByTheFieldsType) {
  auto field = [](const std::string& name, std::string_view text) { return ParseField(kSchema, name, text); };
  EXPECT_EQ(*field("name", "Ann"), "Ann");
  EXPECT_EQ(*field("check", "yes"), true);
  EXPECT_EQ(*field("check", "false"), false);
  EXPECT_EQ(*field("integer", "7"), 7);
  EXPECT_EQ(*field("number", "2.5"), 2.5);
  EXPECT_EQ(*field("hero", "Wonder Woman"), "hero-3") << "a choice by its title";
  EXPECT_EQ(*field("hero", "hero-1"), "hero-1");
  EXPECT_EQ(*field("pet", "Dogs"), "pet-2") << "enumNames are titles too";
  EXPECT_EQ(*field("tools", "Piano, Drums"), Json::parse(R"(["Piano","Drums"])"));
  EXPECT_EQ(*field("fish", "Tuna"), Json::parse(R"(["fish-1"])"));
  for (auto [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"check", "maybe"}, {"integer", "seven"}, {"integer", "1e999"}, {"integer", "500"}, {"number", ""},
           {"hero", "Batman"}, {"tools", "Piano,Kazoo"}, {"nosuch", "x"}}) {
    EXPECT_FALSE(field(name, text).ok()) << name << "=" << text;
  }
}

TEST(ElicitationTest, QuestionsRoundTripAndDescribeTheirFields) {
  Question q{"gh", "Which repo?", kSchema};
  auto back = ParseQuestion(QuestionContent(q));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->server, "gh");
  EXPECT_EQ(back->message, "Which repo?");
  EXPECT_EQ(back->schema, kSchema);
  EXPECT_FALSE(ParseQuestion("{}").ok());
  EXPECT_FALSE(ParseQuestion(R"({"server":"gh","message":"m","requestedSchema":7})").ok());
  EXPECT_FALSE(ParseQuestion("not json").ok());
  const std::vector<std::string> lines = DescribeFields(kSchema);
  auto has = [&](const std::string& line) { return std::find(lines.begin(), lines.end(), line) != lines.end(); };
  EXPECT_TRUE(has("name (string, required): Your full, legal name"));
  EXPECT_TRUE(has("integer (integer 1..100, default 42)"));
  EXPECT_TRUE(has("email (string email)"));
  EXPECT_TRUE(has("hero (one of: hero-1 (Superman), hero-3 (Wonder Woman))"));
  EXPECT_TRUE(has("tools (some of: Guitar, Piano, Drums)"));
}

}  // namespace
}  // namespace mates::elicitation
