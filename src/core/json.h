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
// Documents nested deeper than kMaxJsonDepth (core/limits.h) are refused
// before the parser sees them: nothing downstream (dump, compare, destroy)
// recurses that deep, and no input can overflow the stack.
Result<Json> ParseJson(std::string_view text);
// The nesting depth of `text` ({ and [ outside strings), stopping early once
// it passes `limit`. Linear, no allocation.
int JsonNestingDepth(std::string_view text, int limit);
// The nesting depth of a value already built (bounded by `limit` likewise).
int JsonValueDepth(const Json& value, int limit);

// An empty object with room for `members` keys. An ordered object is a
// vector of (const key, value) pairs, and a const key cannot be moved: each
// time the vector grows it copies every value it holds, so a request body
// copied the whole conversation when its tools were set. Objects built on
// a hot path are made with the room they will need.
Json JsonObject(size_t members);

// Compact one-line dump (JSONL-safe: no raw newline can appear).
std::string DumpJson(const Json& value);
// Indented dump for people and state files: objects and arrays of objects
// are laid out over lines down to three levels, anything deeper stays on one
// line, so the size is linear in the value (full indentation of a deeply
// nested value grows with the square of its depth).
std::string DumpJsonPretty(const Json& value);

// Field access for objects that came from outside: each returns
// InvalidArgument naming the field when the type is wrong, and the fallback
// (or NotFound when `required`) when the field is absent or null.
Result<std::string> JsonString(const Json& obj, const char* key, bool required,
                               std::string fallback = "");
Result<bool> JsonBool(const Json& obj, const char* key, bool fallback);
Result<double> JsonNumber(const Json& obj, const char* key, double fallback);
// An integral number (3, 3.0; never "3", 3.5 or null when required).
Result<int64_t> JsonInt(const Json& obj, const char* key, bool required, int64_t fallback = 0);
// The object or array under `key`: nullptr when absent or null (and not
// `required`), InvalidArgument naming the field when it is something else.
Result<const Json*> JsonObjectField(const Json& obj, const char* key, bool required);
Result<const Json*> JsonArrayField(const Json& obj, const char* key, bool required);
// A string member of anything, `fallback` when `obj` is no object or the
// member is absent or no string: for fields whose type is checked
// elsewhere, or never matters. Never throws.
std::string StringOr(const Json& obj, const char* key, const std::string& fallback = "");
// A member of anything, null when `obj` is no object or has none: for
// reading a line a crash, a disk or a hand may have left odd. Never throws.
const Json& FieldOr(const Json& obj, const char* key);

// An integer id given as a number (3) or a numeric string ("3"), as tool
// inputs allow (DESIGN §2). Rejects fractions, negatives and junk.
Result<int64_t> JsonId(const Json& value, const char* what);
// Parses "3" as an id; InvalidArgument for anything else.
Result<int64_t> ParseId(std::string_view text, const char* what);

}  // namespace mates
