#include "tmux/claude_setup.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"

namespace mates::tmux {

std::string EnvOf(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  if (it != env.end()) return it->second;
  const char* v = std::getenv(name.c_str());
  return v != nullptr ? v : "";
}

Result<fs::path> ClaudeConfigFile(const std::map<std::string, std::string>& env) {
  std::string dir = EnvOf(env, "CLAUDE_CONFIG_DIR");
  if (!dir.empty()) return fs::path(dir) / ".claude.json";
  std::string home = EnvOf(env, "HOME");
  if (home.empty()) {
    return Status::FailedPrecondition("neither CLAUDE_CONFIG_DIR nor HOME is set: nowhere to pre-answer "
                                      "Claude Code's first-run questions (set one in the cluster's env)");
  }
  return fs::path(home) / ".claude.json";
}

Result<std::vector<std::string>> PrepareClaudeCode(const fs::path& config_file, const fs::path& work_dir,
                                                   const std::string& api_key) {
  Json j = Json::object();
  std::error_code ec;
  if (fs::exists(config_file, ec)) {
    MATES_ASSIGN_OR_RETURN(std::string data, ReadFile(config_file));
    if (!data.empty()) {
      auto parsed = ParseJson(data);
      if (!parsed.ok() || !parsed->is_object()) {
        return Status::FailedPrecondition(config_file.string() +
                                " is not a JSON object; not touching it (fix or remove it, or set "
                                "first_run: none and answer Claude Code's questions in the panes)");
      }
      j = *parsed;
    }
  }
  std::vector<std::string> changed;
  // The person's file: a flag of another type is not true, and never a throw.
  auto is_true = [](const Json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_boolean() && it->get<bool>();
  };
  if (!is_true(j, "hasCompletedOnboarding")) {
    j["hasCompletedOnboarding"] = true;
    changed.push_back("onboarding done");
    // The onboarding's first question (Claude Code drops the key later
    // when it holds the default).
    if (!j.contains("theme")) j["theme"] = "dark";
  }
  // Claude Code keys projects by the folder as its own cwd shows it.
  fs::path dir = fs::weakly_canonical(work_dir, ec);
  if (ec) dir = work_dir;
  Json& projects = j["projects"];
  if (!projects.is_object()) projects = Json::object();
  Json& project = projects[dir.string()];
  if (!project.is_object()) project = Json::object();
  if (!is_true(project, "hasTrustDialogAccepted")) {
    project["hasTrustDialogAccepted"] = true;
    changed.push_back("folder " + dir.string() + " trusted");
  }
  if (!is_true(project, "hasCompletedProjectOnboarding")) project["hasCompletedProjectOnboarding"] = true;
  if (!api_key.empty()) {
    std::string tail = api_key.size() > 20 ? api_key.substr(api_key.size() - 20) : api_key;
    Json& responses = j["customApiKeyResponses"];
    if (!responses.is_object()) responses = Json::object();
    for (const char* list : {"approved", "rejected"}) {
      if (!responses[list].is_array()) responses[list] = Json::array();
    }
    auto has = [&](const char* list) {
      for (const auto& v : responses[list]) {
        if (v.is_string() && v.get<std::string>() == tail) return true;
      }
      return false;
    };
    if (!has("approved") && !has("rejected")) {
      responses["approved"].push_back(tail);
      changed.push_back("the environment's ANTHROPIC_API_KEY approved");
    }
  }
  if (changed.empty()) return changed;
  MATES_RETURN_IF_ERROR(EnsureDir(config_file.parent_path()));
  MATES_RETURN_IF_ERROR(WriteFileAtomic(config_file, DumpJsonPretty(j) + "\n"));
  return changed;
}

}  // namespace mates::tmux
