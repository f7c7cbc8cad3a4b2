#include <re2/re2.h>

#include "llm/scenario.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/limits.h"
#include "core/ids.h"

namespace mates::llm {
namespace {

// YAML aliases let a small file stand for a huge tree (*a repeated at
// every level: "a billion laughs"); the conversion stops at this many nodes.
constexpr size_t kMaxYamlNodes = 1000000;

Result<Json> YamlNodeToJson(const YAML::Node& node, int depth, size_t* budget) {
  if (depth > kMaxJsonDepth) {
    return Status::InvalidArgument("YAML nested deeper than " + std::to_string(kMaxJsonDepth) +
                                   " levels is refused");
  }
  if (*budget == 0) {
    return Status::InvalidArgument("YAML of more than " + std::to_string(kMaxYamlNodes) +
                                   " values (aliases included) is refused");
  }
  --*budget;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return Json(nullptr);
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node) {
        MATES_ASSIGN_OR_RETURN(Json v, YamlNodeToJson(item, depth + 1, budget));
        arr.push_back(std::move(v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : node) {
        MATES_ASSIGN_OR_RETURN(Json v, YamlNodeToJson(kv.second, depth + 1, budget));
        if (!kv.first.IsScalar()) return Status::InvalidArgument("a YAML key must be a plain value");
        obj[kv.first.Scalar()] = std::move(v);
      }
      return obj;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return Json(s);  // quoted: always a string
      if (s == "null" || s == "~") return Json(nullptr);
      if (s == "true") return Json(true);
      if (s == "false") return Json(false);
      char* end = nullptr;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size()) return Json(static_cast<int64_t>(i));
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return Json(d);
      return Json(s);
    }
  }
  return Json(nullptr);
}

// A `when` as RE2 compiles it: RE2 searches in time linear in the text,
// without recursion, and refuses counts past 1000 and programs past its
// memory budget. libstdc++'s std::regex, used before, recursed once per
// character (a 20 KB tool result overflowed an 8 MB stack on `(a|b)*c`, 8 KB
// on nested groups), took quadratic time, and overflowed a long on a large
// count (found by the scenario fuzzer).
Result<std::shared_ptr<const re2::RE2>> CompileWhen(const std::string& pattern) {
  constexpr size_t kMaxWhenBytes = 4096;
  if (pattern.size() > kMaxWhenBytes) {
    return Status::InvalidArgument("longer than " + std::to_string(kMaxWhenBytes) + " bytes");
  }
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(8 << 20);
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (!re->ok()) return Status::InvalidArgument(re->error());
  return re;
}

// The capture groups of a `when` match; an unmatched group is empty.
using Groups = std::vector<std::string>;

// Replaces $1…$9 and $TEAM in every string of `v`.
void Substitute(Json& v, const Groups& m, const std::string& team) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find('$') == std::string::npos) return;
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 5, "$TEAM") == 0) {
        out += team;
        i += 4;
      } else if (s[i] == '$' && i + 1 < s.size() && s[i + 1] >= '1' && s[i + 1] <= '9') {
        size_t g = static_cast<size_t>(s[i + 1] - '0');
        if (g < m.size()) out += m[g];
        ++i;
      } else {
        out += s[i];
      }
    }
    v = out;
  } else if (v.is_array() || v.is_object()) {
    for (auto& child : v) Substitute(child, m, team);
  }
}

// Searches `text` for `re`; on a match `groups` holds $0…$n.
bool SearchWhen(const re2::RE2& re, const std::string& text, Groups& groups) {
  std::vector<re2::StringPiece> pieces(static_cast<size_t>(re.NumberOfCapturingGroups()) + 1);
  if (!re.Match(text, 0, text.size(), re2::RE2::UNANCHORED, pieces.data(), static_cast<int>(pieces.size()))) {
    return false;
  }
  groups.clear();
  for (const auto& p : pieces) groups.emplace_back(p.data() == nullptr ? std::string() : std::string(p));
  return true;
}

Status CheckKeys(const Json& obj, std::initializer_list<const char*> allowed, const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) return Status::InvalidArgument(where + ": unknown field '" + it.key() + "'");
  }
  return Status::Ok();
}

Status ValidateReply(const Json& reply, const std::string& where) {
  if (!reply.is_array() || reply.empty()) {
    return Status::InvalidArgument(where + ": must be a non-empty list of content blocks");
  }
  for (size_t i = 0; i < reply.size(); ++i) {
    const Json& b = reply[i];
    std::string at = where + "[" + std::to_string(i) + "]";
    if (!b.is_object()) return Status::InvalidArgument(at + ": a content block must be an object");
    auto type_field = JsonString(b, "type", false);
    if (!type_field.ok()) return Status::InvalidArgument(at + ".type: must be 'text' or 'tool_use'");
    const std::string& type = *type_field;
    if (type == "text") {
      MATES_RETURN_IF_ERROR(CheckKeys(b, {"type", "text"}, at));
      if (!b.contains("text") || !b["text"].is_string() || b["text"].get<std::string>().empty()) {
        return Status::InvalidArgument(at + ": a text block needs a non-empty 'text' string");
      }
    } else if (type == "tool_use") {
      MATES_RETURN_IF_ERROR(CheckKeys(b, {"type", "name", "input", "id"}, at));
      if (!b.contains("name") || !b["name"].is_string() || b["name"].get<std::string>().empty()) {
        return Status::InvalidArgument(at + ": a tool_use block needs a 'name'");
      }
      if (b.contains("input") && !b["input"].is_object()) {
        return Status::InvalidArgument(at + ".input: must be an object");
      }
      if (b.contains("id") && (!b["id"].is_string() || b["id"].get<std::string>().empty())) {
        return Status::InvalidArgument(at + ".id: must be a non-empty string");
      }
    } else {
      return Status::InvalidArgument(at + ".type: must be 'text' or 'tool_use', got '" + type + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Json> YamlToJson(const std::string& text) {
  try {
    YAML::Node node = YAML::Load(text);
    size_t budget = kMaxYamlNodes;
    return YamlNodeToJson(node, 0, &budget);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("malformed YAML at line " + std::to_string(e.mark.line + 1) +
                                   ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

bool GlobMatch(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

std::string AgentName(const std::string& agent_id) { return agent_id.substr(0, agent_id.find('@')); }

std::string TeamOfAgent(const std::string& agent_id) {
  const size_t at = agent_id.find('@');
  return at == std::string::npos ? "" : agent_id.substr(at + 1);
}

std::string NewestUserText(const std::vector<ChatMessage>& messages) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->role != Role::kUser) continue;
    std::string out;
    for (const auto& b : it->content) {
      if (b.type == BlockType::kText || b.type == BlockType::kToolResult) {
        if (!out.empty()) out += "\n";
        out += b.text;
      }
    }
    return out;
  }
  return "";
}

Scenario::Scenario(Scenario&& o) noexcept
    : rules_(std::move(o.rules_)),
      default_reply_json_(std::move(o.default_reply_json_)),
      fired_(std::move(o.fired_)),
      next_tool_id_(o.next_tool_id_),
      run_tag_(std::move(o.run_tag_)) {}

Result<Scenario> Scenario::Parse(const std::string& text, const std::string& source) {
  Result<Json> parsed = Status::InvalidArgument("empty");
  bool yaml = source.size() > 5 && (source.substr(source.size() - 5) == ".yaml" ||
                                    source.substr(source.size() - 4) == ".yml");
  bool json = source.size() > 5 && source.substr(source.size() - 5) == ".json";
  if (yaml) {
    parsed = YamlToJson(text);
  } else {
    parsed = ParseJson(text);
    if (!parsed.ok() && !json) {
      auto as_yaml = YamlToJson(text);
      if (as_yaml.ok() && as_yaml->is_object()) parsed = std::move(as_yaml);
    }
  }
  if (!parsed.ok()) return parsed.status().WithContext(source);
  const Json& j = *parsed;
  auto fail = [&](const std::string& what) { return Status::InvalidArgument(source + ": " + what); };
  if (!j.is_object()) return fail("a scenario must be an object with 'rules' and 'default_reply'");
  Status keys = CheckKeys(j, {"rules", "default_reply"}, "scenario");
  if (!keys.ok()) return fail(keys.message());
  Scenario sc;
  sc.run_tag_ = NewId("x").substr(2, 6);
  if (j.contains("rules")) {
    if (!j["rules"].is_array()) return fail("rules: must be a list");
    for (size_t i = 0; i < j["rules"].size(); ++i) {
      const Json& r = j["rules"][i];
      std::string at = "rules[" + std::to_string(i) + "]";
      if (!r.is_object()) return fail(at + ": a rule must be an object");
      Status k = CheckKeys(r, {"agent", "when", "once", "delay_ms", "reply", "stop_reason"}, at);
      if (!k.ok()) return fail(k.message());
      ScenarioRule rule;
      if (r.contains("agent")) {
        if (!r["agent"].is_string() || r["agent"].get<std::string>().empty()) {
          return fail(at + ".agent: must be a non-empty string (a glob, '*' = any agent)");
        }
        rule.agent = r["agent"].get<std::string>();
      }
      if (r.contains("when") && !r["when"].is_null()) {
        if (!r["when"].is_string()) return fail(at + ".when: must be a string (a regex)");
        rule.when = r["when"].get<std::string>();
        auto re = CompileWhen(rule.when);
        if (!re.ok()) return fail(at + ".when: invalid regex '" + rule.when + "': " + re.status().message());
        rule.when_re = std::move(*re);
      }
      if (r.contains("once")) {
        if (!r["once"].is_boolean()) return fail(at + ".once: must be true or false");
        rule.once = r["once"].get<bool>();
      }
      if (r.contains("delay_ms")) {
        if (!r["delay_ms"].is_number() || !(r["delay_ms"].get<double>() >= 0) ||
            r["delay_ms"].get<double>() > 600000) {
          return fail(at + ".delay_ms: must be a number of milliseconds from 0 to 600000");
        }
        rule.delay_ms = static_cast<int>(r["delay_ms"].get<double>());
      }
      if (r.contains("stop_reason")) {
        static const std::set<std::string> valid = {"end_turn", "tool_use", "max_tokens",
                                                    "stop_sequence", "refusal", "pause_turn"};
        if (!r["stop_reason"].is_string() || valid.count(r["stop_reason"].get<std::string>()) == 0) {
          return fail(at + ".stop_reason: must be one of end_turn, tool_use, max_tokens, "
                           "stop_sequence, refusal, pause_turn");
        }
        rule.stop_reason = r["stop_reason"].get<std::string>();
      }
      if (!r.contains("reply")) return fail(at + ": a rule needs a 'reply'");
      Status v = ValidateReply(r["reply"], at + ".reply");
      if (!v.ok()) return fail(v.message());
      rule.reply_json = DumpJson(r["reply"]);
      sc.rules_.push_back(std::move(rule));
    }
  }
  if (j.contains("default_reply") && !j["default_reply"].is_null()) {
    Status v = ValidateReply(j["default_reply"], "default_reply");
    if (!v.ok()) return fail(v.message());
    sc.default_reply_json_ = DumpJson(j["default_reply"]);
  } else {
    sc.default_reply_json_ = R"([{"type":"text","text":"Done."}])";
  }
  return sc;
}

Result<Scenario> Scenario::Load(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (!ec && size > kMaxStateFileBytes) {
    return Status::InvalidArgument("scenario file " + path + " is " + std::to_string(size) +
                                   " bytes; at most " + std::to_string(kMaxStateFileBytes) + " are read");
  }
  auto text = ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return Status::InvalidArgument("scenario file " + path + " does not exist");
    }
    return text.status();
  }
  return Parse(*text, path);
}

int Scenario::RuleFor(const std::string& agent, const std::string& user_text, Groups* match) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    const ScenarioRule& r = rules_[i];
    if (!GlobMatch(r.agent, agent)) continue;
    if (r.once && fired_.count({i, agent}) > 0) continue;
    if (r.when_re && !SearchWhen(*r.when_re, user_text, *match)) continue;
    if (!r.when_re) match->clear();
    return static_cast<int>(i);
  }
  return -1;
}

int Scenario::DelayOf(const std::string& agent, const std::string& user_text) {
  Groups match;
  std::lock_guard<std::mutex> lock(mu_);
  int i = RuleFor(agent, user_text, &match);
  return i < 0 ? 0 : rules_[static_cast<size_t>(i)].delay_ms;
}

ScenarioReply Scenario::Reply(const std::string& agent, const std::string& user_text, bool consume,
                              const std::string& team) {
  ScenarioReply out;
  Json reply;
  Groups match;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.rule = RuleFor(agent, user_text, &match);
    if (out.rule >= 0) {
      const ScenarioRule& r = rules_[static_cast<size_t>(out.rule)];
      if (r.once && consume) fired_.insert({static_cast<size_t>(out.rule), agent});
      reply = *ParseJson(r.reply_json);
      out.delay_ms = r.delay_ms;
      out.stop_reason = r.stop_reason;
    } else {
      reply = *ParseJson(default_reply_json_);
    }
    Substitute(reply, match, team);
    for (auto& b : reply) {
      if (b["type"] == "tool_use" && !b.contains("id")) {
        b["id"] = "toolu_s" + run_tag_ + "_" + std::to_string(next_tool_id_++);
      }
    }
  }
  bool has_tool_use = false;
  for (const auto& b : reply) {
    if (b["type"] == "text") {
      out.content.push_back(ContentBlock::Text(b["text"].get<std::string>()));
    } else {
      has_tool_use = true;
      out.content.push_back(ContentBlock::ToolUse(
          b["id"].get<std::string>(), b["name"].get<std::string>(),
          b.contains("input") ? DumpJson(b["input"]) : "{}"));
    }
  }
  if (out.stop_reason.empty()) out.stop_reason = has_tool_use ? "tool_use" : "end_turn";
  return out;
}

}  // namespace mates::llm
