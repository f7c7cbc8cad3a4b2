// System prompts and identities of the lead, teammates and subagents.
#pragma once

#include <string>

#include "store/workspace.h"

namespace mates::agent {

struct PromptFacts {
  Workspace ws{"."};
  std::string team;
  std::string name;
  std::string lead;        // the lead's member name
  std::string skills;      // SkillLibrary::PromptSection()
  std::string role_prompt; // a teammate's own instructions (its spawn prompt)
  bool plan_mode = false;
  // An isolated teammate's own git worktree and where its work merges
  // (DESIGN §12); empty when it shares the workspace.
  fs::path work_root;
  std::string target_branch;
};

std::string LeadSystemPrompt(const PromptFacts& f);
std::string LeadIdentity(const PromptFacts& f);
std::string TeammateSystemPrompt(const PromptFacts& f);
std::string TeammateIdentity(const PromptFacts& f);
std::string SubagentSystemPrompt(const PromptFacts& f);

}  // namespace mates::agent
