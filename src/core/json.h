// JSON helpers: parse without throwing, dump without throwing (invalid UTF-8
// is replaced, never a crash), and typed field access that says what is wrong.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mates {

// Insertion-ordered, so files read in the order DESIGN.md gives (id, type, …).
using Json = nlohmann::ordered_json;

// Parses one JSON document; the error names the position and the problem.
Result<Json> ParseJson(std::string_view text);

// Compact one-line dump (JSONL-safe: no raw newline can appear).
std::string DumpJson(const Json& value);
// Indented dump for people.
std::string DumpJsonPretty(const Json& value);

// Field access for objects that came from outside: each returns
// InvalidArgument naming the field when the type is wrong, and the fallback
// (or NotFound when `required`) when the field is absent or null.
Result<std::string> JsonString(const Json& obj, const char* key, bool required,
                               std::string fallback = "");
Result<bool> JsonBool(const Json& obj, const char* key, bool fallback);
Result<double> JsonNumber(const Json& obj, const char* key, double fallback);

// An integer id given as a number (3) or a numeric string ("3"), as tool
// inputs allow (DESIGN §2). Rejects fractions, negatives and junk.
Result<int64_t> JsonId(const Json& value, const char* what);
// Parses "3" as an id; InvalidArgument for anything else.
Result<int64_t> ParseId(std::string_view text, const char* what);

}  // namespace mates
