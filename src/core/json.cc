#include "core/json.h"

#include <charconv>
#include <algorithm>
#include <cmath>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/limits.h"

namespace mates {

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c == '}' || c == ']') {
      if (depth > 0) --depth;
    }
  }
  return deepest;
}

int JsonValueDepth(const Json& value, int limit) {
  // Iterative: the value may come from a library that did not bound it.
  struct Frame {
    const Json* v;
    int depth;
  };
  std::vector<Frame> stack = {{&value, 0}};
  int deepest = 0;
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    if (!f.v->is_structured()) continue;
    int d = f.depth + 1;
    deepest = std::max(deepest, d);
    if (deepest > limit) return deepest;
    for (const auto& child : *f.v) stack.push_back({&child, d});
  }
  return deepest;
}

Result<Json> ParseJson(std::string_view text) {
  if (JsonNestingDepth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    return Status::InvalidArgument("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                   " levels is refused");
  }
  // The one place where JSON from outside enters: the library's exception
  // carries the position and the reason, so it is caught here, once.
  try {
    return Json::parse(text);
  } catch (const Json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." -> drop the tag.
    auto pos = what.find("] ");
    return Status::InvalidArgument("malformed JSON: " +
                                   (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
}

Json JsonObject(size_t members) {
  Json j = Json::object();
  j.get_ref<Json::object_t&>().reserve(members);
  return j;
}

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

constexpr int kPrettyLevels = 3;

bool HasStructuredChild(const Json& v) {
  for (const auto& c : v) {
    if (c.is_structured() && !c.empty()) return true;
  }
  return false;
}

// One serializer for the whole document: Json::dump makes a serializer
// (an output adapter, the locale's separators, a 512-byte buffer) per call,
// and a roster of a hundred members is two thousand keys and values; made
// once, the roster's dump takes a third of the time (bench/serialize_bench).
// `detail::serializer` is what Json::dump itself uses (nlohmann 3.11, as
// Debian ships it).
class PrettyWriter {
 public:
  explicit PrettyWriter(std::string* out)
      : out_(out),
        serializer_(nlohmann::detail::output_adapter<char, std::string>(*out), ' ', Json::error_handler_t::replace) {}

  void Value(const Json& v, int level) {
    const bool laid_out = v.is_object() ? !v.empty() : v.is_array() && HasStructuredChild(v);
    if (level >= kPrettyLevels || !laid_out) {
      serializer_.dump(v, /*pretty_print=*/false, /*ensure_ascii=*/false, 0);
      return;
    }
    const size_t inner = static_cast<size_t>(2 * (level + 1));
    out_->append(v.is_object() ? "{\n" : "[\n");
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out_->append(",\n");
      first = false;
      out_->append(inner, ' ');
      if (v.is_object()) {
        Key(it.key());
        out_->append(": ");
      }
      Value(*it, level + 1);
    }
    out_->append("\n");
    out_->append(static_cast<size_t>(2 * level), ' ');
    out_->append(v.is_object() ? "}" : "]");
  }

 private:
  // A key of printable ASCII that needs no escape is written as it is;
  // any other goes through the serializer (escapes, invalid UTF-8).
  void Key(const std::string& key) {
    const bool plain = std::all_of(key.begin(), key.end(), [](char c) {
      return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
    });
    if (!plain) {
      serializer_.dump(Json(key), false, false, 0);
      return;
    }
    out_->push_back('"');
    out_->append(key);
    out_->push_back('"');
  }

  std::string* out_;
  nlohmann::detail::serializer<Json> serializer_;
};

}  // namespace

std::string DumpJsonPretty(const Json& value) {
  std::string out;
  PrettyWriter(&out).Value(value, 0);
  return out;
}

std::string StringOr(const Json& obj, const char* key, const std::string& fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

const Json& FieldOr(const Json& obj, const char* key) {
  static const Json kNone;
  if (!obj.is_object()) return kNone;
  auto it = obj.find(key);
  return it == obj.end() ? kNone : *it;
}

Result<std::string> JsonString(const Json& obj, const char* key, bool required,
                               std::string fallback) {
  if (!obj.is_object()) return Status::InvalidArgument("expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Status::InvalidArgument(std::string("missing field '") + key + "'");
    return fallback;
  }
  if (!it->is_string()) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be a string, got " +
                                   it->type_name());
  }
  return it->get<std::string>();
}

Result<bool> JsonBool(const Json& obj, const char* key, bool fallback) {
  if (!obj.is_object()) return Status::InvalidArgument("expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return Status::InvalidArgument(std::string("field '") + key + "' must be true or false");
}

Result<double> JsonNumber(const Json& obj, const char* key, double fallback) {
  if (!obj.is_object()) return Status::InvalidArgument("expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) return v;
  }
  return Status::InvalidArgument(std::string("field '") + key + "' must be a number");
}

Result<int64_t> JsonInt(const Json& obj, const char* key, bool required, int64_t fallback) {
  if (!obj.is_object()) return Status::InvalidArgument("expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Status::InvalidArgument(std::string("missing field '") + key + "'");
    return fallback;
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
  }
  return Status::InvalidArgument(std::string("field '") + key + "' must be an integer, got " +
                                 (it->is_number() ? DumpJson(*it) : std::string(it->type_name())));
}

namespace {
Result<const Json*> StructuredField(const Json& obj, const char* key, bool required, bool object) {
  const char* want = object ? "an object" : "an array";
  if (!obj.is_object()) return Status::InvalidArgument("expected a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Status::InvalidArgument(std::string("missing field '") + key + "'");
    return static_cast<const Json*>(nullptr);
  }
  if (object ? !it->is_object() : !it->is_array()) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be " + want + ", got " +
                                   it->type_name());
  }
  return &*it;
}
}  // namespace

Result<const Json*> JsonObjectField(const Json& obj, const char* key, bool required) {
  return StructuredField(obj, key, required, /*object=*/true);
}

Result<const Json*> JsonArrayField(const Json& obj, const char* key, bool required) {
  return StructuredField(obj, key, required, /*object=*/false);
}

Result<int64_t> ParseId(std::string_view text, const char* what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || v < 1) {
    return Status::InvalidArgument(std::string(what) + " must be a positive integer, got '" +
                                   std::string(text) + "'");
  }
  return v;
}

Result<int64_t> JsonId(const Json& value, const char* what) {
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v >= 1) return v;
  } else if (value.is_number_float()) {
    double d = value.get<double>();
    if (d >= 1 && std::floor(d) == d && d < 9.0e15) return static_cast<int64_t>(d);
  } else if (value.is_string()) {
    return ParseId(value.get_ref<const std::string&>(), what);
  }
  return Status::InvalidArgument(std::string(what) + " must be a positive integer, got " +
                                 DumpJson(value));
}

}  // namespace mates
