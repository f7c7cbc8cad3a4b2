// What every `mates` subcommand shares: the global options, how errors and
// results are printed, and how a subcommand hands its action to main().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "agent/prices.h"
#include "core/status.h"
#include "store/message.h"
#include "store/roster.h"
#include "store/task.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates {
class TeamStore;
struct Env;
class ProcessEnv;
struct HostInfo;
}  // namespace mates

namespace mates::cli {

// Where a command's team came from (DESIGN §21), in this order.
enum class TeamFrom { kFlag, kEnv, kCurrent, kDefault };

struct Globals {
  std::string workspace;  // --workspace
  std::string prices;     // --prices FILE (DESIGN §15); "" = $MATES_PRICES
  // The built-in prices with that file over them, loaded by main() before
  // any command runs; the Env's and the hosts' prices are this.
  agent::PriceTable price_table = agent::PriceTable::Builtin();
  // --team and --store as given; after ResolveTeamAndStore, the team and
  // the store URL every command works on ("" = the file store).
  std::string team;
  std::string store;
  TeamFrom team_from = TeamFrom::kDefault;
  bool store_given = false;  // by --store (a hint repeats it)
  // `team use` sets the current team: one gone bad is not an error there.
  bool setting_current_team = false;
  // Set by the subcommand that was chosen; main() runs it after parsing.
  std::function<int()> action;
  // The process's parts (core/env.h), made at the first ask (a command
  // that watches nothing starts no watcher) and gone with main()'s Globals.
  const Env& env() const;
  mutable std::shared_ptr<ProcessEnv> process;

  Workspace ws() const { return WorkspaceFrom(workspace); }
  // "mates" with the -w and --store this command was given, for the
  // command lines it prints (DESIGN §21: every hint works as printed,
  // pasted in any folder); a hint names its team itself.
  std::string Mates() const;
  // `hint`, a "mates …" command line, with Mates()'s options.
  std::string Pasteable(const std::string& hint) const;
  // `text` (a note) with each command in it, "mates …" after a space, a
  // parenthesis or a backtick, made pasteable as above.
  std::string PasteableIn(const std::string& text) const;
};

// A word as a POSIX shell reads it back: bare when it is safe, else in
// single quotes (for the command lines mates prints).
std::string ShellQuoted(const std::string& word);

// --team and --store, on the root and on each command that works on a
// team (both bind to `g`; either place works).
CLI::Option* AddTeamOption(CLI::App* cmd, Globals& g);
void AddStoreOption(CLI::App* cmd, Globals& g);
// --provider, --model and --base-url: the model a command talks to.
void AddProviderOptions(CLI::App* cmd, std::string& provider, std::string& model, std::string& base_url);
// The one rule (DESIGN §21). The team: --team, else $MATES_TEAM, else the
// workspace's current team (`mates team use`, W/.mates/team), else
// "default". The store: --store, else $MATES_STORE, else `store:` in W's
// .mates/config.yaml (only when the person trusted it: it says where the
// team's messages go), else in the person's own config.yaml, else the
// files. A store: of an untrusted file is said in one warning.
Status ResolveTeamAndStore(Globals& g);
// W/.mates/cluster: the config of the cluster `cluster up` last brought up
// from W, so that later `mates cluster` commands there need no -c.
fs::path ClusterPointer(const Workspace& ws);
// The folder where that cluster's team `team` lives (its config's
// work_dir), when it is not W: a named team found nowhere in W is looked
// for there (ResolveTeamAndStore), so `status --team` works from W.
std::optional<fs::path> ClusterWorkspace(const Workspace& ws, const std::string& team);
// W/.mates/team: the current team, or NotFound.
Result<std::string> CurrentTeam(const Workspace& ws);
Status SetCurrentTeam(const Workspace& ws, const std::string& team);  // "" clears it

// Prints "mates: error: <message>" and returns the exit code for it.
int Fail(const Status& s);
// Same for a bad-usage message (exit 2).
int Usage(const std::string& message);

// Human-readable one-message rendering ("[10:30:00] lead → frontend …").
std::string FormatMessage(const Message& m);
// One task per line for `tasks list`, and the full view for `tasks get`.
// With `board` (every task's status), a pending task with dependencies
// says "blocked by #1" or "ready (#1 done)".
std::string FormatTaskLine(const Task& t, const std::map<int64_t, TaskStatus>* board = nullptr);
std::string FormatTaskDetail(const Task& t);

// A number of seconds from the command line: finite, at least `min`
// (`min_inclusive` says whether `min` itself is allowed) and at most
// kMaxSeconds; InvalidArgument naming `flag` otherwise (nan, inf, 1e308 and
// negatives included).
inline constexpr double kMaxSeconds = 1e7;  // ~115 days
Status CheckSeconds(const std::string& flag, double value, double min, bool min_inclusive);

// `--archived [STAMP]` (DESIGN §11): read a deleted team from its archive,
// the latest without a STAMP.
struct ArchivedChoice {
  std::string stamp;
  std::vector<CLI::Option*> options;  // one per subcommand that takes it
  bool given() const {
    for (const CLI::Option* o : options) {
      if (o->count() > 0) return true;
    }
    return false;
  }
};
void AddArchivedOption(CLI::App* cmd, ArchivedChoice& choice);
// The workspace to read `team` in: the live one, or its archive's.
Result<Workspace> ReadingWorkspace(const Globals& g, const std::string& team, const ArchivedChoice& choice);

// What a reading command reads `team` from: with --archived, its archive
// (this workspace's files there, whichever store the team was in), else
// the chosen store (g.store); `ws`: where the team's files are.
struct ReadingStore {
  Workspace ws;
  std::unique_ptr<TeamStore> store;
  std::string stamp;  // the archive's; "" for none
};
Result<ReadingStore> OpenReadingStore(const Globals& g, const std::string& team, const ArchivedChoice& choice);

// `s`, a team not found, said better when the team was deleted here: its
// archive is named, and how to read it (the command takes --archived and
// was not given it). Anything else comes back unchanged.
Status SayIfArchived(Status s, const Workspace& ws, const std::string& team,
                     const ArchivedChoice& choice);

// An option that takes a list (DESIGN §21): repeated, comma-separated, or
// both; `joined` gets the items as "a,b,c" (split with SplitList).
CLI::Option* AddListOption(CLI::App* cmd, const std::string& name, std::string& joined, const std::string& help);
// Splits "a,b,c" (empty pieces dropped).
std::vector<std::string> SplitList(const std::string& s);

// Registration of each command group.
void AddTeamCommands(CLI::App& app, Globals& g);
void AddSendCommand(CLI::App& app, Globals& g);
void AddInboxCommand(CLI::App& app, Globals& g);
void AddAnswerCommand(CLI::App& app, Globals& g);
void AddTasksCommands(CLI::App& app, Globals& g);
void AddLogCommand(CLI::App& app, Globals& g);
void AddMockLlmCommand(CLI::App& app, Globals& g);
void AddRunCommand(CLI::App& app, Globals& g);
void AddHostCommands(CLI::App& app, Globals& g);   // up, down
void AddStatusCommand(CLI::App& app, Globals& g);
void AddDashboardCommand(CLI::App& app, Globals& g);
void AddDemoCommand(CLI::App& app, Globals& g);
void AddClusterCommands(CLI::App& app, Globals& g);
void AddMergesCommands(CLI::App& app, Globals& g);
void AddUsageCommand(CLI::App& app, Globals& g);
void AddBudgetCommands(CLI::App& app, Globals& g);  // budget show|set|clear
void AddInitCommand(CLI::App& app, Globals& g);
void AddDoctorCommand(CLI::App& app, Globals& g);
void AddDocsCommands(CLI::App& app, Globals& g);  // completion, manpage
void AddMcpCommands(CLI::App& app, Globals& g);  // mcp
void AddStoreCommands(CLI::App& app, Globals& g);  // store init|migrate|status
void AddTrustCommand(CLI::App& app, Globals& g);   // trust
void AddHooksCommands(CLI::App& app, Globals& g);  // hooks list|test
void AddClaudeCommands(CLI::App& app, Globals& g);  // claude list|status|send|task
void AddLeverCommands(CLI::App& app, Globals& g);   // stop, restart, interrupt
void AddAttachCommand(CLI::App& app, Globals& g);   // attach
// The live host of g.team with its levers' socket, or the error that says
// how to get one (levers_cmd.cc).
Result<HostInfo> LeverHost(Globals& g, TeamStore& store);
void AddPsCommand(CLI::App& app, Globals& g);
void AddLogsCommand(CLI::App& app, Globals& g);
void AddReportCommand(CLI::App& app, Globals& g);  // report
void AddBundleCommands(CLI::App& app, Globals& g);  // export, import
void AddReplayCommand(CLI::App& app, Globals& g);   // replay
// `mates status` of g.team in g.store: once (as text, or --json), or
// redrawn as it changes (--watch).
int ShowStatusOf(Globals& g, bool watch, bool json);

// Before a workspace's own files may start anything (DESIGN §19): a
// .mcp.json not trusted as it is is asked about on a terminal (and trusted
// if the person says yes), else said in one warning line; the host then
// skips what is still untrusted.
Status AdmitWorkspaceFiles(const Workspace& ws);

// The sender/caller name when --from/--as is not given: $MATES_AGENT_NAME,
// else the team's lead.
std::string DefaultMember(const TeamConfig& team);
// The agent a command runs for when its host's gate runs it for a
// sandboxed tool (host/agent_gate.h: MATES_AS_AGENT), else "". Such a
// command acts as that agent only: another --from, --as or inbox is
// refused.
std::string SandboxedAgent();
// "" if `name` may be acted as here, else the usage error.
std::string RefusedIdentity(const std::string& option, const std::string& name);
// Run by an agent's gate (SandboxedAgent() set): "" when the parsed
// command is one a sandboxed tool may run on its own team, else why not.
std::string RefusedAtTheGate(const CLI::App& app);

}  // namespace mates::cli
