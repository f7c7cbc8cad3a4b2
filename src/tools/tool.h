// Tools (DESIGN §5): what an agent can do. Each tool validates its own input
// and answers with a ToolResult; a failure is a result with is_error, never
// an exception or a dead thread. Tools reach other layers only through the
// narrow interfaces below, so each is testable alone.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "hooks/hooks.h"
#include "llm/provider.h"
#include "llm/types.h"
#include "store/board.h"
#include "sandbox/sandbox.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::tools {

// Which tool set an agent gets (seed v8 table).
enum class Scope {
  kLead,      // everything
  kTeammate,  // base + task board + SendMessage
  kSubagent,  // base only: bash, read_file, write_file, edit_file
};

// What refused a tool's work, when something did: the sandbox (a failed
// command whose output shows one of its rules) or one of the person's
// hooks. The agent keeps it in its activity, where status and the page
// show it (DESIGN §18, §22); the model reads it in the content.
struct Refusal {
  enum class By { kSandbox, kHook };
  By by = By::kSandbox;
  std::string event;  // the hook's event ("TaskCompleted"); "" for the sandbox
  std::string what;   // the sandbox's line, or the hook's reason
};

struct ToolResult {
  std::string content;
  bool is_error = false;
  std::optional<Refusal> refused;
  static ToolResult Ok(std::string c) { return {std::move(c), false, std::nullopt}; }
  static ToolResult Error(std::string c) { return {std::move(c), true, std::nullopt}; }
  static ToolResult Refused(std::string c, Refusal why) { return {std::move(c), true, std::move(why)}; }
};

enum class BackgroundState { kRunning, kCompleted, kFailed, kStopped };
// "running" | "completed" | "failed" | "stopped": what the model reads.
std::string_view BackgroundStateName(BackgroundState s);

struct BackgroundStatus {
  std::string id;
  std::string description;
  BackgroundState state = BackgroundState::kRunning;
  std::string output;  // the final text, or the error
};

// Subagents and background work (the `Task` tool); implemented by the agent
// layer.
class SubagentRunner {
 public:
  virtual ~SubagentRunner() = default;
  // A fresh agent with base tools; returns its final text.
  virtual Result<std::string> RunSubagent(const std::string& prompt, const std::string& model,
                                          llm::CancelToken* cancel) = 0;
  // The same, on a thread of its own; returns an id for TaskOutput/TaskStop.
  virtual Result<std::string> StartBackground(const std::string& prompt,
                                              const std::string& description,
                                              const std::string& model) = 0;
  // NotFound for an unknown id; with `block`, waits up to `timeout_s`.
  virtual Result<BackgroundStatus> Output(const std::string& id, bool block, double timeout_s) = 0;
  virtual Result<BackgroundStatus> Stop(const std::string& id) = 0;
};

// A persistent teammate as the lead asks for it (Task with team_name + name).
struct TeammateSpec {
  std::string team;
  std::string name;
  std::string prompt;
  bool plan_mode_required = false;
  std::string model;      // "" = the host's
  std::string isolation;  // "" = the team's setting, "shared" or "worktree" (DESIGN §12)
  int64_t budget_tokens = 0;   // its own token budget, 0 = none (DESIGN §15)
  int64_t context_budget = 0;  // compact above this many tokens, 0 = the host's setting
};

// Teams (TeamCreate, Task with team_name + name, TeamDelete); implemented by
// the team layer.
class TeamRuntime {
 public:
  virtual ~TeamRuntime() = default;
  // `isolation`: "" = the host's setting, "shared" or "worktree" (DESIGN §12).
  virtual Result<std::string> CreateTeam(const std::string& name, const std::string& description,
                                         const std::string& isolation) = 0;
  virtual Result<std::string> SpawnTeammate(const TeammateSpec& spec) = 0;
  virtual Result<std::string> DeleteTeam(const std::string& name) = 0;
  // The lead's lever on a teammate (DESIGN §27): "restart" or "interrupt",
  // what it did in words.
  virtual Result<std::string> PullLever(const std::string& action, const std::string& name) = 0;
};

class SkillLibrary;

// Everything a tool call may use. The agent owns it; `team` may change
// (after TeamCreate the lead belongs to the new team).
struct ToolContext {
  ToolContext(Workspace ws, TeamStore& store) : ws(std::move(ws)), store_(&store) {}
  // The store the team is in (DESIGN §13, §17), which outlives the context.
  TeamStore& store() const { return *store_; }
  void set_store(TeamStore& store) { store_ = &store; }

  Workspace ws;
  // Where bash runs and file tools are confined: "" = ws.root(); an
  // isolated teammate's own git worktree (DESIGN §12). Team state stays in ws.
  fs::path work_root;
  Workspace WorkRoot() const { return work_root.empty() ? ws : Workspace(work_root); }
  std::string team;
  std::string agent;
  // A lead's: the team its session began in. While it works in a team it
  // made, what is sent to it there still reaches it (AgentLoop), and what
  // it sends to `user` goes there too (SendMessage).
  std::string home_team;
  bool is_lead = false;
  // Tasks it was taken up with in progress on another machine than its
  // last (its journal's "place"): the first completion of each is refused,
  // once, with why — its work there did not come with it — lest a task be
  // completed with its work left on a machine that is gone (DESIGN §32).
  std::set<int64_t> work_not_here;
  // A plan-mode teammate may read but not change anything until its plan is
  // approved.
  bool plan_mode = false;
  llm::CancelToken* cancel = nullptr;
  // A long tool's progress as a person reads it ("3/10: indexing"), for the
  // agent's activity; any thread; null = nobody shows it.
  std::function<void(const std::string& note)> progress;
  SubagentRunner* subagents = nullptr;
  TeamRuntime* teams = nullptr;
  const SkillLibrary* skills = nullptr;
  double bash_default_timeout_s = 120;
  // Where every process a tool starts runs (DESIGN §18): the host's, or
  // none for a context made by hand.
  std::shared_ptr<const sandbox::Sandbox> sandbox = sandbox::Sandbox::Off();
  // The person's hooks (DESIGN §22), trusted ones only run; null = none.
  std::shared_ptr<const hooks::Runner> hooks;
  // Where this agent's processes run inside it.
  sandbox::Place Place() const { return {WorkRoot().root(), team, agent, /*speaks=*/true}; }

 private:
  TeamStore* store_;  // never null
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual std::string name() const = 0;
  // What a model reads to decide when and how to use it.
  virtual std::string description() const = 0;
  virtual std::string input_schema() const = 0;  // JSON Schema (an object)
  // Reads only: allowed in plan mode.
  virtual bool read_only() const { return false; }
  virtual ToolResult Run(const Json& input, ToolContext& ctx) const = 0;
};

// Tools that may change while an agent runs: an MCP server's, which may
// tell us its list changed (DESIGN §23). A registry asks its sources on
// every turn; Tools() may be called from any agent's thread.
class ToolSource {
 public:
  virtual ~ToolSource() = default;
  virtual std::vector<std::shared_ptr<const Tool>> Tools() = 0;
};

class ToolRegistry {
 public:
  explicit ToolRegistry(Scope scope) : scope_(scope) {}
  void Add(std::unique_ptr<Tool> tool);
  // Its tools come after the fixed ones; one named like a fixed tool (or
  // an earlier source's) is left out.
  void AddSource(std::shared_ptr<ToolSource> source);
  // Held for the call: a source may drop the tool meanwhile.
  std::shared_ptr<const Tool> Find(const std::string& name) const;
  std::vector<llm::ToolDef> Definitions() const;
  std::vector<std::string> Names() const;
  Scope scope() const { return scope_; }

  // Runs a model's tool call: an unknown tool, input that did not parse or
  // is not an object, a plan-mode write, or an exception becomes an error
  // result that says what was wrong.
  ToolResult Run(const llm::ContentBlock& call, ToolContext& ctx) const;

 private:
  // The fixed tools, then the sources' as they are now.
  std::vector<std::shared_ptr<const Tool>> All() const;

  Scope scope_;
  std::vector<std::shared_ptr<const Tool>> tools_;
  std::vector<std::shared_ptr<ToolSource>> sources_;
};

// The built-in tools for a scope (DESIGN §5 table).
std::unique_ptr<ToolRegistry> MakeToolRegistry(Scope scope);

// Reads a tool's input, collecting what is wrong with it.
class InputReader {
 public:
  explicit InputReader(const Json& input) : in_(input) {}
  std::string String(const char* key, bool required);
  bool Bool(const char* key, bool fallback);
  double Number(const char* key, double fallback, double min, double max);
  // An id given as a number or a numeric string.
  int64_t Id(const char* key, bool required);
  std::vector<int64_t> IdList(const char* key);
  // A list of strings (a single string is a list of one).
  std::vector<std::string> StringList(const char* key);
  bool Has(const char* key) const;
  // "" if all was well, else the errors, one per line.
  const std::string& errors() const { return errors_; }
  bool ok() const { return errors_.empty(); }

 private:
  void Error(const std::string& e) { errors_ += (errors_.empty() ? "" : "\n") + e; }
  const Json& in_;
  std::string errors_;
};

}  // namespace mates::tools
