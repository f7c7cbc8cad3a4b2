#include "core/json.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace mates {

Result<Json> ParseJson(std::string_view text) {
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

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string DumpJsonPretty(const Json& value) {
  return value.dump(2, ' ', false, Json::error_handler_t::replace);
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
