#include "store/elicitation.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <nlohmann/json.hpp>

namespace mates::elicitation {
namespace {

Status Bad(const std::string& field, const std::string& what) {
  return Status::InvalidArgument(field.empty() ? what : "field '" + field + "': " + what);
}

const Json* Member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string StringMember(const Json& j, const char* key) {
  const Json* v = Member(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// The choices of a single or multiple choice: [{value, title}]. Empty for
// a field that is not one.
struct Choice {
  std::string value;
  std::string title;
};
std::vector<Choice> ChoicesOf(const Json& prop) {
  const Json* holder = &prop;
  if (StringMember(prop, "type") == "array") {
    holder = Member(prop, "items");
    if (holder == nullptr) return {};
  }
  std::vector<Choice> out;
  if (const Json* e = Member(*holder, "enum"); e != nullptr && e->is_array()) {
    const Json* names = Member(*holder, "enumNames");  // the legacy titles
    for (size_t i = 0; i < e->size(); ++i) {
      if (!(*e)[i].is_string()) continue;
      std::string title = names != nullptr && names->is_array() && i < names->size() && (*names)[i].is_string()
                              ? (*names)[i].get<std::string>()
                              : std::string();
      out.push_back({(*e)[i].get<std::string>(), title});
    }
    return out;
  }
  for (const char* key : {"oneOf", "anyOf"}) {
    const Json* list = Member(*holder, key);
    if (list == nullptr || !list->is_array()) continue;
    for (const auto& c : *list) {
      const Json* v = Member(c, "const");
      if (v != nullptr && v->is_string()) out.push_back({v->get<std::string>(), StringMember(c, "title")});
    }
  }
  return out;
}

bool IsChoice(const std::vector<Choice>& choices, const std::string& v) {
  return std::any_of(choices.begin(), choices.end(), [&](const Choice& c) { return c.value == v; });
}

size_t CodePoints(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

bool Digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  return std::all_of(s.begin() + at, s.begin() + at + n, [](char c) { return c >= '0' && c <= '9'; });
}
int Num(std::string_view s, size_t at, size_t n) {
  int v = 0;
  std::from_chars(s.data() + at, s.data() + at + n, v);
  return v;
}

bool IsDate(std::string_view s) {
  if (s.size() < 10 || !Digits(s, 0, 4) || s[4] != '-' || !Digits(s, 5, 2) || s[7] != '-' || !Digits(s, 8, 2)) {
    return false;
  }
  const int y = Num(s, 0, 4), m = Num(s, 5, 2), d = Num(s, 8, 2);
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1 || d > kDays[m - 1]) return false;
  return !(m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)));
}

// RFC 3339: 2026-11-28T22:50:03(.123)?(Z|+01:00).
bool IsDateTime(std::string_view s) {
  if (!IsDate(s) || s.size() < 20 || (s[10] != 'T' && s[10] != 't') || !Digits(s, 11, 2) || s[13] != ':' ||
      !Digits(s, 14, 2) || s[16] != ':' || !Digits(s, 17, 2)) {
    return false;
  }
  if (Num(s, 11, 2) > 23 || Num(s, 14, 2) > 59 || Num(s, 17, 2) > 60) return false;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i + 1) return false;
    i = j;
  }
  std::string_view zone = s.substr(i);
  if (zone == "Z" || zone == "z") return true;
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && Digits(zone, 1, 2) && zone[3] == ':' &&
         Digits(zone, 4, 2) && Num(zone, 1, 2) <= 23 && Num(zone, 4, 2) <= 59;
}

bool IsEmail(std::string_view s) {
  size_t at = s.find('@');
  return at != std::string_view::npos && at > 0 && at + 1 < s.size() && s.find('@', at + 1) == std::string_view::npos &&
         s.find_first_of(" \t\r\n<>") == std::string_view::npos && s.find('.', at + 1) != std::string_view::npos;
}

// An absolute URI: a scheme (RFC 3986 §3.1), ':', something.
bool IsUri(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return false;
  if (std::isalpha(static_cast<unsigned char>(s[0])) == 0) return false;
  for (size_t i = 1; i < colon; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isalnum(c) == 0 && c != '+' && c != '-' && c != '.') return false;
  }
  return s.find_first_of(" \t\r\n<>\"") == std::string_view::npos;
}

std::optional<double> NumberMember(const Json& j, const char* key) {
  const Json* v = Member(j, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::string NumberText(double d) {
  Json j = d;
  if (std::floor(d) == d && std::fabs(d) < 1e15) j = static_cast<int64_t>(d);
  return j.dump();
}

// One value against its property's schema.
Status CheckValue(const std::string& name, const Json& prop, const Json& v) {
  const std::string type = StringMember(prop, "type");
  if (type == "string") {
    if (!v.is_string()) return Bad(name, "a string is wanted, not " + v.dump());
    const std::string s = v.get<std::string>();
    const std::vector<Choice> choices = ChoicesOf(prop);
    if (!choices.empty() && !IsChoice(choices, s)) return Bad(name, "'" + s + "' is not one of its choices");
    const size_t n = CodePoints(s);
    if (auto min = NumberMember(prop, "minLength"); min && static_cast<double>(n) < *min) {
      return Bad(name, "at least " + NumberText(*min) + " characters are wanted");
    }
    if (auto max = NumberMember(prop, "maxLength"); max && static_cast<double>(n) > *max) {
      return Bad(name, "at most " + NumberText(*max) + " characters are allowed");
    }
    const std::string format = StringMember(prop, "format");
    if ((format == "email" && !IsEmail(s)) || (format == "uri" && !IsUri(s)) || (format == "date" && !IsDate(s)) ||
        (format == "date-time" && !IsDateTime(s))) {
      return Bad(name, "'" + s + "' is not a valid " + format);
    }
    return Status::Ok();
  }
  if (type == "number" || type == "integer") {
    if (!v.is_number()) return Bad(name, "a number is wanted, not " + v.dump());
    const double d = v.get<double>();
    if (type == "integer" && !(v.is_number_integer() || std::floor(d) == d)) {
      return Bad(name, "a whole number is wanted, not " + v.dump());
    }
    if (auto min = NumberMember(prop, "minimum"); min && d < *min) {
      return Bad(name, v.dump() + " is below its minimum " + NumberText(*min));
    }
    if (auto max = NumberMember(prop, "maximum"); max && d > *max) {
      return Bad(name, v.dump() + " is above its maximum " + NumberText(*max));
    }
    return Status::Ok();
  }
  if (type == "boolean") {
    if (!v.is_boolean()) return Bad(name, "true or false is wanted, not " + v.dump());
    return Status::Ok();
  }
  if (type == "array") {
    if (!v.is_array()) return Bad(name, "a list of choices is wanted, not " + v.dump());
    const std::vector<Choice> choices = ChoicesOf(prop);
    for (const auto& e : v) {
      if (!e.is_string() || !IsChoice(choices, e.get<std::string>())) {
        return Bad(name, e.dump() + " is not one of its choices");
      }
    }
    if (auto min = NumberMember(prop, "minItems"); min && static_cast<double>(v.size()) < *min) {
      return Bad(name, "at least " + NumberText(*min) + " choices are wanted");
    }
    if (auto max = NumberMember(prop, "maxItems"); max && static_cast<double>(v.size()) > *max) {
      return Bad(name, "at most " + NumberText(*max) + " choices are allowed");
    }
    return Status::Ok();
  }
  return Bad(name, "type '" + type + "' is not one a question may ask");
}

}  // namespace

std::string QuestionContent(const Question& q) {
  return DumpJson(Json{{"server", q.server}, {"message", q.message}, {"requestedSchema", q.schema}});
}

Result<Question> ParseQuestion(std::string_view content) {
  auto j = ParseJson(content);
  if (!j.ok() || !j->is_object()) return Status::InvalidArgument("an elicitation's question must be a JSON object");
  Question q;
  MATES_ASSIGN_OR_RETURN(q.server, JsonString(*j, "server", true));
  MATES_ASSIGN_OR_RETURN(q.message, JsonString(*j, "message", true));
  const Json* schema = Member(*j, "requestedSchema");
  if (schema != nullptr) q.schema = *schema;
  MATES_RETURN_IF_ERROR(CheckSchema(q.schema));
  return q;
}

Status CheckSchema(const Json& schema) {
  if (!schema.is_object()) return Bad("", "requestedSchema must be a JSON object");
  if (const Json* t = Member(schema, "type"); t != nullptr && *t != "object") {
    return Bad("", "requestedSchema must be of type object");
  }
  const Json* props = Member(schema, "properties");
  if (props != nullptr && !props->is_object()) return Bad("", "requestedSchema.properties must be an object");
  if (props != nullptr && props->size() > kMaxFields) {
    return Bad("", "a question may ask " + std::to_string(kMaxFields) + " fields at most");
  }
  if (props != nullptr) {
    for (const auto& [name, prop] : props->items()) {
      if (!prop.is_object()) return Bad(name, "its schema must be an object");
      const std::string type = StringMember(prop, "type");
      if (type != "string" && type != "number" && type != "integer" && type != "boolean" && type != "array") {
        return Bad(name, "type " + (Member(prop, "type") ? Member(prop, "type")->dump() : std::string("(none)")) +
                             " is not one a question may ask (string, number, integer, boolean, array)");
      }
      if (type == "array" && ChoicesOf(prop).empty()) return Bad(name, "a list must name its choices (items.enum or items.anyOf)");
      if (const Json* d = Member(prop, "default"); d != nullptr) {
        if (Status s = CheckValue(name, prop, *d); !s.ok()) return Bad(name, "its default: " + s.message());
      }
    }
  }
  if (const Json* req = Member(schema, "required"); req != nullptr) {
    if (!req->is_array()) return Bad("", "requestedSchema.required must be a list of names");
    for (const auto& r : *req) {
      if (!r.is_string() || props == nullptr || !props->contains(r.get<std::string>())) {
        return Bad("", "requestedSchema.required names " + r.dump() + ", which is not one of its properties");
      }
    }
  }
  return Status::Ok();
}

Json WithDefaults(const Json& schema, Json content) {
  if (!content.is_object()) content = Json::object();
  const Json* props = Member(schema, "properties");
  if (props == nullptr || !props->is_object()) return content;
  for (const auto& [name, prop] : props->items()) {
    const Json* d = Member(prop, "default");
    if (content.contains(name) || d == nullptr) continue;
    // Only what an answer may hold: primitives, or a list (a multiple choice).
    if (d->is_string() || d->is_number() || d->is_boolean() || d->is_array()) content[name] = *d;
  }
  return content;
}

Status CheckAnswer(const Json& schema, const Json& content) {
  if (!content.is_object()) return Bad("", "an answer must be a JSON object of fields");
  const Json* props = Member(schema, "properties");
  for (const auto& [name, v] : content.items()) {
    const Json* prop = props != nullptr && props->is_object() ? Member(*props, name.c_str()) : nullptr;
    if (prop == nullptr) return Bad(name, "the question does not ask it");
    MATES_RETURN_IF_ERROR(CheckValue(name, *prop, v));
  }
  const Json filled = WithDefaults(schema, content);
  if (const Json* req = Member(schema, "required"); req != nullptr && req->is_array()) {
    for (const auto& r : *req) {
      if (r.is_string() && !filled.contains(r.get<std::string>())) return Bad(r.get<std::string>(), "it is required");
    }
  }
  return Status::Ok();
}

Result<Json> ParseField(const Json& schema, const std::string& name, std::string_view text) {
  const Json* props = Member(schema, "properties");
  const Json* prop = props != nullptr ? Member(*props, name.c_str()) : nullptr;
  if (prop == nullptr) return Bad(name, "the question does not ask it");
  const std::string type = StringMember(*prop, "type");
  const std::vector<Choice> choices = ChoicesOf(*prop);
  // A choice may be given by its title.
  auto choice = [&](std::string_view t) {
    for (const auto& c : choices) {
      if (c.value == t) return c.value;
    }
    for (const auto& c : choices) {
      if (!c.title.empty() && c.title == t) return c.value;
    }
    return std::string(t);
  };
  Json v;
  if (type == "string") {
    v = choices.empty() ? std::string(text) : choice(text);
  } else if (type == "integer" || type == "number") {
    const std::string s(text);
    char* end = nullptr;
    errno = 0;
    const double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(d)) {
      return Bad(name, "'" + s + "' is not a number");
    }
    int64_t i = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    v = ec == std::errc() && p == s.data() + s.size() ? Json(i) : Json(d);
  } else if (type == "boolean") {
    if (text == "true" || text == "yes" || text == "y") {
      v = true;
    } else if (text == "false" || text == "no" || text == "n") {
      v = false;
    } else {
      return Bad(name, "true or false is wanted, not '" + std::string(text) + "'");
    }
  } else if (type == "array") {
    v = Json::array();
    size_t from = 0;
    while (from <= text.size() && !text.empty()) {
      size_t comma = text.find(',', from);
      std::string_view part = text.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      if (!part.empty()) v.push_back(choice(part));
      if (comma == std::string_view::npos) break;
      from = comma + 1;
    }
  } else {
    return Bad(name, "type '" + type + "' is not one a question may ask");
  }
  MATES_RETURN_IF_ERROR(CheckValue(name, *prop, v));
  return v;
}

std::vector<std::string> DescribeFields(const Json& schema) {
  std::vector<std::string> out;
  const Json* props = Member(schema, "properties");
  if (props == nullptr || !props->is_object()) return out;
  const Json* req = Member(schema, "required");
  for (const auto& [name, prop] : props->items()) {
    std::string type = StringMember(prop, "type");
    const std::vector<Choice> choices = ChoicesOf(prop);
    if (!choices.empty()) {
      std::string list;
      for (const auto& c : choices) {
        list += (list.empty() ? "" : ", ") + c.value + (c.title.empty() || c.title == c.value ? "" : " (" + c.title + ")");
      }
      type = (type == "array" ? "some of: " : "one of: ") + list;
    } else {
      const std::string format = StringMember(prop, "format");
      if (!format.empty()) type += " " + format;
      auto min = NumberMember(prop, "minimum"), max = NumberMember(prop, "maximum");
      if (min || max) type += " " + (min ? NumberText(*min) : "") + ".." + (max ? NumberText(*max) : "");
    }
    std::string line = name + " (" + type;
    if (req != nullptr && req->is_array() && std::find(req->begin(), req->end(), Json(name)) != req->end()) {
      line += ", required";
    }
    if (const Json* d = Member(prop, "default"); d != nullptr) line += ", default " + d->dump();
    line += ")";
    std::string about = StringMember(prop, "description");
    if (about.empty()) about = StringMember(prop, "title");
    if (!about.empty()) line += ": " + about;
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace mates::elicitation
