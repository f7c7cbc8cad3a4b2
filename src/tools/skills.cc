#include "tools/skills.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/log.h"
#include "core/names.h"
#include "llm/scenario.h"

namespace mates::tools {

Result<Skill> ParseSkill(const std::string& text, const std::string& dir_name) {
  Skill s;
  s.name = dir_name;
  std::string body = text;
  if (text.rfind("---", 0) == 0) {
    size_t first_nl = text.find('\n');
    size_t end = text.find("\n---", first_nl == std::string::npos ? 0 : first_nl);
    if (first_nl == std::string::npos || end == std::string::npos) {
      return Status::InvalidArgument("the front matter has no closing '---'");
    }
    auto fm = llm::YamlToJson(text.substr(first_nl + 1, end - first_nl));
    if (!fm.ok()) return fm.status();
    if (fm->is_object()) {
      if (fm->contains("name") && (*fm)["name"].is_string()) s.name = (*fm)["name"].get<std::string>();
      if (fm->contains("description") && (*fm)["description"].is_string()) {
        s.description = (*fm)["description"].get<std::string>();
      }
    }
    size_t after = text.find('\n', end + 1);
    body = after == std::string::npos ? "" : text.substr(after + 1);
  }
  MATES_RETURN_IF_ERROR(ValidateName("skill name", s.name));
  s.body = body;
  return s;
}

SkillLibrary SkillLibrary::Load(const Workspace& ws) {
  SkillLibrary lib;
  fs::path dir = ws.root() / "skills";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return lib;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    fs::path md = e.path() / "SKILL.md";
    if (!e.is_directory() || !fs::exists(md)) continue;
    auto text = ReadFile(md);
    if (!text.ok()) continue;
    auto s = ParseSkill(*text, e.path().filename().string());
    if (!s.ok()) {
      LogWarning("skill " + md.string() + " skipped: " + s.status().message());
      continue;
    }
    s->path = md.string();
    lib.skills_.push_back(std::move(*s));
  }
  std::sort(lib.skills_.begin(), lib.skills_.end(),
            [](const Skill& a, const Skill& b) { return a.name < b.name; });
  return lib;
}

const Skill* SkillLibrary::Find(const std::string& name) const {
  for (const auto& s : skills_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string SkillLibrary::PromptSection() const {
  if (skills_.empty()) return "";
  std::string out = "Skills (load one with the Skill tool when it fits the work):\n";
  for (const auto& s : skills_) {
    out += "- " + s.name + (s.description.empty() ? "" : ": " + s.description) + "\n";
  }
  return out;
}

}  // namespace mates::tools
