// mates run [GOAL] [--provider P] [--model M] [--base-url URL] [--scenario FILE]
//           [--team T] [--max-turns N] [--context-budget TOKENS] [--idle-timeout S]
//           [--shutdown-timeout S] [--fresh] [--sandbox off|workspace|strict]
// With a GOAL: the lead (and its team) work on it; the command returns when
// the lead has ended its turn with no teammate working and nothing unread.
// Without: the lead's REPL (/team /inbox /tasks /send /compact /usage /quit).
#include "cli/run_options.h"

#include <cstdlib>
#include <iostream>

#include "cli/session_view.h"
#include "cli/store_choice.h"
#include "stores/open_store.h"
#include "core/limits.h"
#include "core/names.h"
#include "core/secrets.h"
#include "sandbox/policy.h"
#include "trust/trust.h"
#include "git/worktrees.h"
#include "llm/provider_factory.h"
#include "llm/scenario.h"
#include "core/config_yaml.h"

namespace mates::cli {

void AddRunOptions(CLI::App* cmd, Globals& g, RunArgs& a) {
  cmd->add_option("GOAL", a.goal, "What to do");
  AddProviderOptions(cmd, a.provider, a.model, a.base_url);
  cmd->add_option("--scenario", a.scenario, "Scenario file for --provider scripted");
  AddTeamOption(cmd, g);
  cmd->add_option("--max-turns", a.max_turns, "Model calls at most per turn of each agent")->capture_default_str();
  cmd->add_option("--stall-calls", a.stall_calls,
                  "A teammate making this many model calls in a row without changing the board or a file is "
                  "paused, with an attention item (0 = never)")
      ->capture_default_str();
  cmd->add_option("--context-budget", a.context_budget, "Tokens before a context is compacted (default: 3/4 of the model's window)");
  cmd->add_option("--idle-timeout", a.idle_timeout, "Seconds an idle teammate waits for work before it stops (0 = forever)")->capture_default_str();
  cmd->add_option("--shutdown-timeout", a.shutdown_timeout, "Seconds a teammate has to answer a shutdown request")->capture_default_str();
  cmd->add_option("--request-timeout", a.request_timeout,
                  "Seconds one model request may take, reply included (default: no limit; "
                  "a stalled connection is dropped after 120 s without a byte)");
  cmd->add_flag("--fresh", a.fresh, "Start a new lead conversation instead of resuming the last one");
  cmd->add_option("--log", a.log, "Also append everything shown (every agent's text, tool calls, results) to FILE");
  cmd->add_option("--isolation", a.isolation,
                  "shared (all work in the workspace) or worktree (each teammate in its own git worktree, "
                  "work merged back by the merge queue)");
  cmd->add_option("--target-branch", a.target_branch,
                  "With worktrees: the branch merged work goes to (default: mates/<team>, made from HEAD)");
  cmd->add_option("--git-remote", a.git_remote,
                  "With worktrees on a shared store (--store postgres://…): the git remote every machine fetches "
                  "from and pushes to (default: origin)");
  cmd->add_option("--merge-check", a.merge_check, "With worktrees: a shell command each merge must pass (e.g. 'make test')");
  cmd->add_option("--merge-timeout", a.merge_timeout, "Seconds the merge check may take")->capture_default_str();
  cmd->add_option("--budget-tokens", a.budget_tokens,
                  "The team's token budget (every token its agents read or write, this run and earlier ones); "
                  "spent: no agent calls the model and run exits 1 (0 = no budget; default: the team's)");
  cmd->add_option("--budget-usd", a.budget_usd,
                  "The team's budget in US dollars, priced with the price table (see --prices); same rules");
  AddStoreOption(cmd, g);
  AddSandboxOption(cmd, a.sandbox);
  cmd->add_option("--merge", a.merge, "auto (merge what passes the check) or review (the lead or a person approves each)")
      ->capture_default_str();
}

Result<host::SessionOptions> SessionConfig(Globals& g, const RunArgs& a) {
  if (Status s = CheckSeconds("--idle-timeout", a.idle_timeout, 0, true); !s.ok()) {
    return Status::InvalidArgument(s.message() + " (0 = wait forever)");
  }
  MATES_RETURN_IF_ERROR(CheckSeconds("--shutdown-timeout", a.shutdown_timeout, 0, false));
  if (a.request_timeout != 0) {
    MATES_RETURN_IF_ERROR(CheckSeconds("--request-timeout", a.request_timeout, 0, false));
  }
  host::SessionOptions c;
  c.ws = g.ws();
  c.prices = g.price_table;
  c.mates = g.Mates();
  c.team = g.team;
  for (const auto& w : a.goal) c.goal += (c.goal.empty() ? "" : " ") + w;
  if (!a.goal.empty() && c.goal.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("the goal is empty: say what to do, or give no GOAL for the REPL");
  }
  c.model = a.model;
  c.max_turns = a.max_turns;
  if (a.stall_calls < 0 || a.stall_calls > 100000) {
    return Status::InvalidArgument("--stall-calls must be from 0 (never) to 100000");
  }
  c.stall_calls = a.stall_calls;
  c.context_budget = a.context_budget;
  c.idle_timeout_s = a.idle_timeout;
  c.shutdown_timeout_s = a.shutdown_timeout;
  c.fresh = a.fresh;
  // The store's URL is checked here; it is opened by whatever hosts the
  // session (a forked host opens its own connections).
  const std::string url = g.store;
  MATES_RETURN_IF_ERROR(CheckStoreUrl(url));
  c.store_url = IsFileStoreUrl(url) ? "" : url;
  MATES_RETURN_IF_ERROR(CheckSeconds("--merge-timeout", a.merge_timeout, 0, false));
  if (a.merge != "auto" && a.merge != "review") {
    return Status::InvalidArgument("--merge must be 'auto' or 'review', not '" + a.merge + "'");
  }
  // The bounds a lead's Task call has: a number past them was a typo, not
  // a budget (CLI11 turns 99999999999999999999 into 2^63 - 1 without a word).
  if (a.budget_tokens && !(*a.budget_tokens >= 0 && *a.budget_tokens <= kMaxBudgetTokens)) {
    return Status::InvalidArgument(
        "--budget-tokens must be a number of tokens from 0 to 1e12 (0 = no budget)");
  }
  // Below 1,000 tokens every call would compact; 0 is the default.
  if (a.context_budget != 0 &&
      !(a.context_budget >= kMinContextBudget && a.context_budget <= kMaxContextBudget)) {
    return Status::InvalidArgument(
        "--context-budget must be from 1000 to 1e9 tokens (0: 3/4 of the model's window)");
  }
  if (a.budget_usd && !(*a.budget_usd >= 0 && *a.budget_usd <= 1e9)) {
    return Status::InvalidArgument("--budget-usd must be a number of dollars from 0 to 1e9 (0 = no budget)");
  }
  c.budget_tokens = a.budget_tokens;
  const char* baseline = std::getenv("MATES_BASELINE");
  c.naive_baseline = baseline != nullptr && std::string(baseline) == "naive";
  c.budget_usd = a.budget_usd;
  c.git.merge_check = a.merge_check;
  c.git.merge_timeout_s = a.merge_timeout;
  c.git.merge_review = a.merge == "review";
  c.git.target_branch = a.target_branch;
  if (!a.isolation.empty()) {
    MATES_ASSIGN_OR_RETURN(c.git.isolation, ParseIsolation(a.isolation));
    c.isolation_given = true;
  }
  if (!a.git_remote.empty()) {
    if (c.store_url.empty()) {
      return Status::InvalidArgument("--git-remote is for a team on a shared store (--store postgres://…); on the "
                                     "file store merged work stays in this workspace");
    }
    MATES_RETURN_IF_ERROR(ValidateName("git remote", a.git_remote));
  }
  // On a shared store the teammates' work travels through a remote that
  // every machine reaches (DESIGN §13).
  if (!c.store_url.empty()) c.git.remote = a.git_remote.empty() ? kDefaultGitRemote : a.git_remote;
  if (c.git.isolation == Isolation::kWorktree) {
    // Checked before anything starts: not a repository, no such target, a
    // dirty checked-out target are errors of this command.
    MATES_ASSIGN_OR_RETURN(c.git, git::PrepareTarget(c.ws, c.team, c.git));
  }
  return c;
}

void AddSandboxOption(CLI::App* cmd, std::string& mode) {
  cmd->add_option("--sandbox", mode,
                  "Where the agents' commands run: workspace (default: write only their work root and tmp, no "
                  "secrets, no network but sandbox.network.allow), strict (no network at all) or off (as you)");
}

Status ChooseSandbox(host::HostOptions& c, const std::string& flag) {
  MATES_ASSIGN_OR_RETURN(c.sandbox, ChooseSandboxSettings(c.ws, flag));
  MATES_ASSIGN_OR_RETURN(c.hooks, ChooseHooks(c.ws));
  MATES_ASSIGN_OR_RETURN(c.telemetry, ChooseTelemetry());
  return Status::Ok();
}

Result<telemetry::OtlpConfig> ChooseTelemetry() {
  const fs::path file = sandbox::UserConfigPath();
  MATES_ASSIGN_OR_RETURN(YAML::Node config, ReadConfigYaml(file));
  Json section = Json::object();
  if (config.IsMap() && config["telemetry"]) {
    const YAML::Node t = config["telemetry"];
    if (!t.IsMap()) return Status::InvalidArgument(file.string() + ": telemetry must be a map");
    YAML::Emitter out;
    out << t;
    auto j = llm::YamlToJson(out.c_str());
    if (!j.ok()) return Status::InvalidArgument(file.string() + ": telemetry: " + j.status().message());
    section = std::move(*j);
  }
  return telemetry::OtlpConfig::FromEnvironment(section);
}

Result<std::shared_ptr<const hooks::Runner>> ChooseHooks(const Workspace& ws) {
  MATES_ASSIGN_OR_RETURN(trust::FileState f, trust::TrustStore().CheckFile(ws.root(), ".mates/config.yaml"));
  MATES_ASSIGN_OR_RETURN(hooks::HookSet set, hooks::LoadHooks(ws.root(), sandbox::UserConfigPath(),
                                                              f.trust == trust::FileTrust::kTrusted));
  for (const auto& note : set.notes) std::cerr << "mates: warning: " << note << std::endl;
  if (set.Empty()) return std::shared_ptr<const hooks::Runner>();
  return std::shared_ptr<const hooks::Runner>(std::make_shared<hooks::Runner>(std::move(set)));
}

Result<std::shared_ptr<sandbox::Sandbox>> HostsSandbox(const Workspace& ws, const std::string& name) {
  MATES_ASSIGN_OR_RETURN(sandbox::Settings settings, ChooseSandboxSettings(ws, ""));
  MATES_ASSIGN_OR_RETURN(fs::path run_dir, sandbox::RuntimeDirFor(name));
  return sandbox::Sandbox::Make(ws.root(), settings, run_dir);
}

Result<sandbox::Settings> ChooseSandboxSettings(const Workspace& ws, const std::string& flag) {
  std::optional<sandbox::Mode> mode;
  if (!flag.empty()) {
    auto m = sandbox::ParseMode(flag);
    if (!m.ok()) return Status::InvalidArgument("--sandbox must be off, workspace or strict, not '" + flag + "'");
    mode = *m;
  }
  MATES_ASSIGN_OR_RETURN(trust::FileState f, trust::TrustStore().CheckFile(ws.root(), ".mates/config.yaml"));
  MATES_ASSIGN_OR_RETURN(sandbox::Chosen chosen,
                         sandbox::ChooseSettings(ws.root(), mode, f.trust == trust::FileTrust::kTrusted));
  for (const auto& note : chosen.notes) std::cerr << "mates: warning: " << note << std::endl;
  return std::move(chosen.settings);
}

Result<std::unique_ptr<llm::Provider>> SessionProvider(const RunArgs& a) {
  llm::ProviderConfig pc{a.provider, a.model, a.base_url, a.scenario, a.request_timeout};
  return llm::MakeProvider(pc);
}

namespace {

int Run(Globals& g, const RunArgs& a) {
  // The lead and its teammates run commands a model wrote: keys out of
  // reach before any thread starts.
  Secrets::Scrub();
  auto c = SessionConfig(g, a);
  if (!c.ok()) return Fail(c.status());
  auto provider = SessionProvider(a);
  if (!provider.ok()) return Fail(provider.status());
  if (Status s = AdmitWorkspaceFiles(c->ws); !s.ok()) return Fail(s);
  if (Status s = ChooseSandbox(*c, a.sandbox); !s.ok()) return Fail(s);
  // Lines carry the agent's name from the start (the lead's too), so a
  // trace reads the same before and after teammates join.
  LiveOutput out(WantColor(), /*multi=*/true);
  if (!a.log.empty()) {
    if (Status s = out.TeeTo(a.log); !s.ok()) return Fail(s);
  }
  host::SessionOutput output = SessionOutputTo(out);
  const std::string provider_name((*provider)->name());
  output.repl = [&out, &provider_name](host::Session& session) { Repl(session, out, provider_name); };
  return SessionExit(host::Session::Run(*c, provider->get(), std::move(output)));
}

}  // namespace

void AddRunCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Work on a goal with the lead agent and its team (no GOAL: a REPL)");
  AddRunOptions(run, g, *a);
  run->callback([&g, a] { g.action = [&g, a] { return Run(g, *a); }; });
}

}  // namespace mates::cli
