// The cluster's YAML file (seed 003's schema, `config/cc-cluster.yaml`):
//
//   cluster:
//     name: orchestrator-cc          # also the team the agents join
//     session_name: orchestrator-cc  # the tmux session
//     work_dir: "."                  # where the agents work
//     command: claude                # default for every agent (string or list)
//     env: {KEY: value}
//     startup_timeout: 60            # seconds for an agent to come up and handshake
//     response_timeout: 30           # seconds for a reply (the seed's)
//     log_file: logs/messages.jsonl  # the seed's message log
//     ready_pattern: '…'             # regex: the CLI's input prompt (near the bottom)
//     busy_pattern: esc to interrupt # regex: the CLI is still working (near the bottom)
//     first_run: auto                # claude-code: pre-answer Claude Code's first-run
//                                    # questions; none; auto: by the command's name
//     mcp: auto                      # on: the agent reaches the team through
//                                    # `mates mcp` (in the CLI's own MCP config);
//                                    # off; auto: on for the CLIs with a preset
//     cli: claude                    # a preset (claude, qwen, codex, gemini,
//                                    # opencode): its command, how it is told who
//                                    # it is and given the team (DESIGN §28)
//     model_url: http://…            # the agents' model server (e.g. mates
//                                    # mock-llm), each CLI told in its own way
//   agents:
//     - name: grand_boss
//       role: grand_boss
//       personality_prompt_path: config/personalities/grand_boss.txt
//       marker: GRAND BOSS OK
//       pane_index: 0
//       command / env / reports_to / ready_pattern / busy_pattern / first_run / mcp
//       / cli / model_url            # optional, per agent (a cli without a
//                                    # command takes the preset's command)
//
// Relative paths resolve against the config file's folder. In `command`,
// {personality_file}, {marker} and {name} are replaced. Every mistake is one
// error naming the field ("agents[2].marker: …").
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace mates::tmux {

namespace fs = std::filesystem;

// What `up` does about the CLI's first-run questions.
enum class FirstRun {
  kAuto,        // claude-code when the command's program is named "claude", else none
  kClaudeCode,  // see tmux/claude_setup.h
  kNone,
};

// The agent CLIs with a preset (DESIGN §28). kNone: a command of the
// person's own.
enum class CliPreset { kNone, kClaude, kQwen, kCodex, kGemini, kOpenCode };
std::string_view CliPresetName(CliPreset cli);
// The preset a program's name is (a path's file name too), kNone if none.
CliPreset CliPresetOf(std::string_view program);

struct AgentConfig {
  std::string name;
  std::string role;
  fs::path personality_file;
  std::string marker;
  int pane_index = 0;
  std::vector<std::string> command;  // placeholders already replaced
  std::map<std::string, std::string> env;
  std::string reports_to;  // "" for the top of the hierarchy
  std::string ready_pattern;
  std::string busy_pattern;  // "" = never busy by its looks
  FirstRun first_run = FirstRun::kNone;  // never kAuto once loaded
  // Works in its own git worktree of work_dir (DESIGN §12); its completed
  // tasks go through the merge queue the router hosts.
  bool worktree = false;
  // Reaches the team through `mates mcp` as itself (DESIGN §14): `up`
  // gives its CLI an MCP config (Claude Code's --mcp-config) and the
  // router, instead of typing each message in, tells it that messages
  // wait, for it to read them with read_inbox and answer with
  // send_message.
  bool mcp = false;
  // Runs in the sandbox (DESIGN §18) in the mode `cluster up --sandbox`
  // chose (workspace by default): writes only its work root and a private
  // /tmp, no secrets, no network but network.allow; its `mates` reaches
  // the team through the router, as itself.
  bool sandbox = false;
  // Its CLI's preset: how `up` gives it the team and the model (kNone for
  // a command of the person's own).
  CliPreset cli = CliPreset::kNone;
  // Its model server ("" = the CLI's own): Claude Code's
  // ANTHROPIC_BASE_URL, Qwen Code's and OpenCode's OpenAI-compatible
  // server, Codex's Responses API, Gemini CLI's GOOGLE_GEMINI_BASE_URL.
  std::string model_url;
  // How long after the pasted text shows to press Enter: Gemini CLI takes
  // an Enter within 40 ms of a paste as a newline in it.
  int enter_delay_ms = 0;
};

struct ClusterConfig {
  fs::path config_file;  // absolute
  std::string name;
  std::string session;
  fs::path work_dir;  // absolute
  double startup_timeout_s = 60;
  double response_timeout_s = 30;
  fs::path log_file;  // absolute
  std::vector<AgentConfig> agents;  // by pane_index

  const AgentConfig* Find(const std::string& name) const;
  // The tmux server of this cluster ("mates-<session>").
  std::string socket() const { return "mates-" + session; }
  // Where `up` leaves what other processes need (pane ids, …).
  fs::path state_dir() const { return work_dir / ".mates-cluster" / session; }
};

// The seed's hierarchy when `reports_to` is not given: grand_boss at the
// top, middle_manager under it, everyone else under middle_manager (when
// those roles exist).
Result<ClusterConfig> LoadClusterConfig(const fs::path& file);

}  // namespace mates::tmux
