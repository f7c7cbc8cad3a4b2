#include "tools/tool.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/secrets.h"

namespace mates::tools {

std::string_view BackgroundStateName(BackgroundState s) {
  switch (s) {
    case BackgroundState::kRunning:
      return "running";
    case BackgroundState::kCompleted:
      return "completed";
    case BackgroundState::kFailed:
      return "failed";
    case BackgroundState::kStopped:
      return "stopped";
  }
  return "running";
}

void ToolRegistry::Add(std::unique_ptr<Tool> tool) { tools_.push_back(std::move(tool)); }

void ToolRegistry::AddSource(std::shared_ptr<ToolSource> source) { sources_.push_back(std::move(source)); }

std::vector<std::shared_ptr<const Tool>> ToolRegistry::All() const {
  if (sources_.empty()) return tools_;
  std::vector<std::shared_ptr<const Tool>> all = tools_;
  std::set<std::string> names;
  for (const auto& t : tools_) names.insert(t->name());
  for (const auto& source : sources_) {
    for (auto& t : source->Tools()) {
      if (t != nullptr && names.insert(t->name()).second) all.push_back(std::move(t));
    }
  }
  return all;
}

std::shared_ptr<const Tool> ToolRegistry::Find(const std::string& name) const {
  for (auto& t : All()) {
    if (t->name() == name) return t;
  }
  return nullptr;
}

std::vector<llm::ToolDef> ToolRegistry::Definitions() const {
  std::vector<llm::ToolDef> defs;
  for (const auto& t : All()) defs.push_back({t->name(), t->description(), t->input_schema()});
  return defs;
}

std::vector<std::string> ToolRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& t : All()) names.push_back(t->name());
  return names;
}

ToolResult ToolRegistry::Run(const llm::ContentBlock& call, ToolContext& ctx) const {
  const std::shared_ptr<const Tool> tool = Find(call.name);
  if (tool == nullptr) {
    std::string names;
    for (const auto& n : Names()) names += (names.empty() ? "" : ", ") + n;
    std::string why = "unknown tool '" + call.name + "'";
    static const char* const kLeadOnly[] = {"Task", "Skill", "TaskOutput", "TaskStop",
                                            "TeamCreate", "TeamDelete"};
    for (const char* lead_only : kLeadOnly) {
      if (call.name == lead_only && scope_ != Scope::kLead) {
        why = "tool '" + call.name + "' is only available to the team lead";
      }
    }
    return ToolResult::Error(why + ". Available tools: " + names);
  }
  if (!call.input_error.empty()) {
    return ToolResult::Error("your input for " + call.name + " could not be read: " +
                             call.input_error + ". Send a JSON object matching its schema.");
  }
  auto input = ParseJson(call.input_json);
  if (!input.ok() || !input->is_object()) {
    return ToolResult::Error("the input for " + call.name + " must be a JSON object");
  }
  if (ctx.plan_mode && !tool->read_only()) {
    return ToolResult::Error(
        "plan mode: " + call.name + " would change the workspace, and your plan has not been "
        "approved yet. Read what you need, then send your plan to the lead with "
        "SendMessage(type=\"plan_approval_request\", content=<the plan>) and wait for the answer.");
  }
  ToolResult result;
  try {
    result = tool->Run(*input, ctx);
  } catch (const std::exception& e) {
    result = ToolResult::Error("internal error in " + call.name + ": " + e.what());
  }
  // What a command printed may include a key (cat /proc/$PPID/environ, a
  // config file): it never reaches the model, the journal or the screen.
  Secrets::RedactInPlace(&result.content);
  return result;
}

std::string InputReader::String(const char* key, bool required) {
  auto it = in_.find(key);
  if (it == in_.end() || it->is_null()) {
    if (required) Error(std::string("missing required field '") + key + "'");
    return "";
  }
  if (!it->is_string()) {
    Error(std::string("field '") + key + "' must be a string, got " + it->type_name());
    return "";
  }
  return it->get<std::string>();
}

bool InputReader::Bool(const char* key, bool fallback) {
  auto r = JsonBool(in_, key, fallback);
  if (!r.ok()) {
    Error(r.status().message());
    return fallback;
  }
  return *r;
}

double InputReader::Number(const char* key, double fallback, double min, double max) {
  auto r = JsonNumber(in_, key, fallback);
  if (!r.ok()) {
    Error(r.status().message());
    return fallback;
  }
  if (!std::isfinite(*r) || *r < min || *r > max) {
    Error(std::string("field '") + key + "' must be between " + std::to_string(static_cast<int64_t>(min)) +
          " and " + std::to_string(static_cast<int64_t>(max)));
    return fallback;
  }
  return *r;
}

int64_t InputReader::Id(const char* key, bool required) {
  auto it = in_.find(key);
  if (it == in_.end() || it->is_null()) {
    if (required) Error(std::string("missing required field '") + key + "'");
    return 0;
  }
  auto id = JsonId(*it, key);
  if (!id.ok()) {
    Error(id.status().message());
    return 0;
  }
  return *id;
}

std::vector<int64_t> InputReader::IdList(const char* key) {
  std::vector<int64_t> ids;
  auto it = in_.find(key);
  if (it == in_.end() || it->is_null()) return ids;
  if (!it->is_array()) {
    // A single id is accepted as a list of one.
    auto id = JsonId(*it, key);
    if (id.ok()) return {*id};
    Error(std::string("field '") + key + "' must be a list of task ids");
    return ids;
  }
  for (const auto& v : *it) {
    auto id = JsonId(v, key);
    if (!id.ok()) {
      Error(id.status().message());
      continue;
    }
    ids.push_back(*id);
  }
  return ids;
}

std::vector<std::string> InputReader::StringList(const char* key) {
  std::vector<std::string> out;
  auto it = in_.find(key);
  if (it == in_.end() || it->is_null()) return out;
  if (it->is_string()) return {it->get<std::string>()};
  if (!it->is_array()) {
    Error(std::string("field '") + key + "' must be a list of strings");
    return out;
  }
  for (const auto& v : *it) {
    if (!v.is_string()) {
      Error(std::string("field '") + key + "' must be a list of strings");
      return {};
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

bool InputReader::Has(const char* key) const {
  auto it = in_.find(key);
  return it != in_.end() && !it->is_null();
}

}  // namespace mates::tools
