// Skills: folders W/skills/<name>/SKILL.md with front matter (name,
// description). Their names and descriptions go into the lead's system
// prompt; the body is returned when the model calls Skill(name).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/workspace.h"

namespace mates::tools {

struct Skill {
  std::string name;
  std::string description;
  std::string body;
  std::string path;
};

class SkillLibrary {
 public:
  // Reads W/skills/*/SKILL.md. A skill that cannot be read is skipped with a
  // warning (it does not stop the agent).
  static SkillLibrary Load(const Workspace& ws);

  const Skill* Find(const std::string& name) const;
  const std::vector<Skill>& skills() const { return skills_; }
  // "" when there are none; else a section for the system prompt.
  std::string PromptSection() const;

 private:
  std::vector<Skill> skills_;
};

// Parses SKILL.md text: front matter between '---' lines (YAML), then the
// body. Errors say what is wrong.
Result<Skill> ParseSkill(const std::string& text, const std::string& dir_name);

}  // namespace mates::tools
