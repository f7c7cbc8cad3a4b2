// Elicitation: an MCP server's question for a person (DESIGN §23), as the
// team protocol carries it. A host whose server asks sends an
// `elicitation_request` to `user`; its content is the question as JSON,
//   {"server": NAME, "message": TEXT, "requestedSchema": SCHEMA}
// and a person answers it — `mates answer`, the dashboard — with an
// `elicitation_response` from `user`: approve true with the fields as a
// JSON object in its content (accept), or approve false (decline). The
// host reads the answer from the request's record; it goes to no inbox.
//
// SCHEMA is what MCP allows a question to ask: a flat object whose
// properties are each a string (minLength, maxLength, format email, uri,
// date or date-time), a single choice (enum, or oneOf of {const, title}),
// a number or integer (minimum, maximum), a boolean, or a multiple choice
// (type array, items with enum or anyOf of {const, title}, minItems,
// maxItems); any may have a default, and `required` names those an answer
// must have. Everything here checks what it reads: a question or an answer
// of another shape is InvalidArgument naming the field.
#pragma once

#include <string>
#include <string_view>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace mates::elicitation {

// At most so many fields in a question (MCP forms are short; a server's
// schema is not trusted to be).
inline constexpr size_t kMaxFields = 64;

struct Question {
  std::string server;
  std::string message;
  Json schema = Json::object();  // the requestedSchema
};

// The content of an elicitation_request, and back. ParseQuestion checks
// the schema (CheckSchema).
std::string QuestionContent(const Question& q);
Result<Question> ParseQuestion(std::string_view content);

// Whether `schema` is a question MCP allows (above).
Status CheckSchema(const Json& schema);
// `content` with the schema's `default` for each property it leaves out
// (SEP-1034); what is not an object is taken as {}.
Json WithDefaults(const Json& schema, Json content);
// Whether `content` (a JSON object), its defaults filled in, answers
// `schema`: only its properties, each of its type and within its bounds,
// every required one there.
Status CheckAnswer(const Json& schema, const Json& content);

// A field's value from what a person typed (`mates answer ID NAME=VALUE`),
// by its property schema: a string as it is; a number, an integer; a
// boolean as true/false/yes/no; a choice by its value or its title; a
// multiple choice as values separated by commas.
Result<Json> ParseField(const Json& schema, const std::string& name, std::string_view text);

// The fields as a person reads them, one line each:
//   "name (integer 1..100, required, default 42): Your favourite integer"
std::vector<std::string> DescribeFields(const Json& schema);

}  // namespace mates::elicitation
