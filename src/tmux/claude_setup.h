// Claude Code's first-run questions, answered before it starts.
//
// The first time Claude Code runs under a config dir, or in a folder, it
// asks: the theme and the onboarding screens, "Do you trust the files in
// this folder?", and "Detected a custom API key … use it?". In a pane
// nobody answers, and the agent never comes up (the onboarding screens
// even try to reach api.anthropic.com). `mates cluster up` records the
// answers beforehand in the file where Claude Code records a person's
// answers itself, so the panes start straight at the input prompt:
//
//   hasCompletedOnboarding   true
//   theme                    "dark" unless one is chosen (with the onboarding)
//   projects[<work_dir>]     hasTrustDialogAccepted, hasCompletedProjectOnboarding
//   customApiKeyResponses    the key's last 20 characters approved (how
//                            Claude Code identifies a key; never the key),
//                            unless the person rejected that key
//
// Everything else in the file is kept; a file that is not a JSON object is
// an error, never overwritten.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace mates::tmux {

namespace fs = std::filesystem;

// The value of `name` in an agent's environment: its own `env` first, then
// the environment it inherits from this process. "" when unset.
std::string EnvOf(const std::map<std::string, std::string>& env, const std::string& name);

// Where Claude Code keeps those answers for an agent with this environment:
// $CLAUDE_CONFIG_DIR/.claude.json, else $HOME/.claude.json.
Result<fs::path> ClaudeConfigFile(const std::map<std::string, std::string>& env);

// Records the answers for `work_dir` (and `api_key` when not empty) in
// `config_file`, creating it if needed. Returns what it changed, in words
// (empty when everything was already answered).
Result<std::vector<std::string>> PrepareClaudeCode(const fs::path& config_file, const fs::path& work_dir,
                                                   const std::string& api_key);

}  // namespace mates::tmux
