// Hooks (DESIGN §22): commands a person puts between an agent and what it
// does, in Claude Code's contract, so that a hook written for Claude Code
// works unchanged.
//
// Configured under `hooks:` in the person's `$XDG_CONFIG_HOME/mates/
// config.yaml` (always theirs) and in the workspace's `.mates/config.yaml`
// (only once trusted, DESIGN §19: a repository's hooks are its code):
//
//   hooks:
//     PreToolUse:
//       - matcher: "Bash"                 # the tool's name; a regex, "*" or none = all
//         hooks:
//           - {type: command, command: "~/bin/no-rm-rf", timeout: 10}
//
// A hook gets one JSON document on stdin (Claude Code's field names:
// session_id, transcript_path, cwd, hook_event_name, tool_name,
// tool_input, tool_response, prompt, …, plus team_name, agent_name, task,
// merge). Exit 0 goes on, and its stdout may be Claude Code's JSON reply
// (decision/reason, hookSpecificOutput.permissionDecision, updatedInput,
// additionalContext, continue/stopReason); exit 2 blocks, its stderr the
// reason the model reads; any other exit, a timeout or a reply that does
// not parse is an error for people, and the action goes on. Every hook
// matching an event runs at once, each in the agent's sandbox with its
// own timeout (default 60 s; a hook that hangs is killed with all it
// started); an agent waits for its own hooks only.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/files.h"
#include "core/json.h"
#include "core/status.h"
#include "sandbox/sandbox.h"

namespace mates::hooks {

enum class Event {
  kPreToolUse,
  kPostToolUse,
  kUserPromptSubmit,
  kSessionStart,
  kStop,
  kSubagentStop,
  kTeammateIdle,
  kTaskCreated,
  kTaskCompleted,
  kMergeQueued,
  kMergeDecided,
};
std::string_view EventName(Event e);
std::optional<Event> EventOf(std::string_view name);
const std::vector<Event>& AllEvents();

inline constexpr double kDefaultTimeoutS = 60;
inline constexpr double kMaxTimeoutS = 3600;

struct HookCommand {
  std::string command;  // run with sh -c, as Claude Code runs it
  double timeout_s = kDefaultTimeoutS;
};

struct HookGroup {
  std::string matcher;  // "" = every subject
  std::shared_ptr<const std::regex> pattern;  // null for "" and "*"
  std::vector<HookCommand> hooks;
  bool Matches(const std::vector<std::string>& subjects) const;
};

// One file's hooks.
struct HookSource {
  fs::path file;
  bool trusted = false;  // the person's own file, or a workspace file they trusted
  std::map<Event, std::vector<HookGroup>> events;
};

struct HookSet {
  std::vector<HookSource> sources;  // those with a hooks: section, trusted or not
  // What was left out, a line each: a workspace file's hooks not trusted.
  std::vector<std::string> notes;
  bool Empty() const;
};

// The `hooks:` section of the YAML text `text` (from `origin`); one clear
// error for anything that is not Claude Code's structure.
Result<std::map<Event, std::vector<HookGroup>>> ParseHooksSection(const std::string& text, const std::string& origin);

// The person's file and W's `.mates/config.yaml` (`workspace_trusted`: as
// trust/trust.h says of it now).
Result<HookSet> LoadHooks(const fs::path& workspace, const fs::path& user_config, bool workspace_trusted);

// What the hooks of one event said, together.
struct Outcome {
  bool blocked = false;       // exit 2, decision block, permissionDecision deny (or ask: nobody to ask)
  std::string reason;         // what the model reads when blocked (every blocking hook's, a line each)
  std::string context;        // additionalContext (and, where Claude Code takes it, plain stdout)
  std::optional<Json> updated_input;  // PreToolUse: hookSpecificOutput.updatedInput
  std::vector<std::string> errors;    // for people: exits other than 0 and 2, timeouts, bad replies
  int ran = 0;
};

// Where and how a hook's command runs: the agent's sandbox and place, an
// environment without secrets, its work folder.
struct Launch {
  std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off();
  sandbox::Place place;
  std::vector<std::string> env;
  fs::path cwd;
};

class Runner {
 public:
  explicit Runner(HookSet set);
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  const HookSet& set() const { return set_; }
  // Whether any trusted hook would run: callers build no input otherwise.
  bool Wants(Event e, const std::vector<std::string>& subjects = {}) const;
  // Runs every trusted hook of `e` whose matcher takes one of `subjects`
  // (tool events: the tool's names), at once; `input` gets
  // hook_event_name. In a sandbox they start from the agent's hook
  // launcher (Sandbox::LauncherFor, sandbox/launcher.h), started with its
  // first hook and kept: a bubblewrap per agent, not per hook (where the
  // launcher is missing or fails, each hook gets its own).
  Outcome Run(Event e, const std::vector<std::string>& subjects, Json input, const Launch& launch) const;

 private:
  HookSet set_;
};

// What one hook's run came to (exit code, stdout, stderr) read by Claude
// Code's rules for `e`; folded into `into`. For `mates hooks test` and
// Runner::Run.
void ReadReply(Event e, int exit_code, bool timed_out, const std::string& out, const std::string& err,
               const std::string& command, Outcome* into);

}  // namespace mates::hooks
