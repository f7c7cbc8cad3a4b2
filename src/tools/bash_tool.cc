// bash: runs a command in the agent's work root.
//
// The command runs with the work root as its folder, in its own process
// group (killed whole on timeout or interrupt, grandchildren included;
// what it leaves running when it exits is killed too, in its group or
// not), with
// stdin from /dev/null, a capped output, and an environment built from an
// allowlist (no API keys or other secrets reach it). Unless the host runs
// with --sandbox off it runs in the host's sandbox (sandbox/sandbox.h,
// DESIGN §18), started by the agent's launcher there (sandbox/launcher.h):
// it can write only its work root, a private /tmp and what
// the person allowed, read no secret, reach no network but what is
// allowed, and touch no process outside its own tree; when the sandbox
// refused it something, the result says which rule and how a person
// widens it. In plan mode (a teammate waiting for plan approval) bash is
// not available at all, since no command can be known to change nothing.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/process_tree.h"
#include "core/subprocess.h"
#include "core/trace_context.h"
#include "sandbox/launcher.h"
#include "tools/builtin_tools.h"

namespace mates::tools {
namespace {

constexpr size_t kMaxCommandOutput = 30000;  // bytes of a command's output the model sees

// The folder of the running mates binary, so `mates …` works in commands.
std::string SelfDir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : self.parent_path().string();
}

// The command from the agent's launcher in its sandbox (sandbox/
// launcher.h): a fork there, not a bubblewrap (≈ 1 ms against ≈ 4:
// bench/sandbox_bench spawn). Unavailable when there is none or it took
// nothing (the command did not run); another error when it broke with the
// command sent (it may have run: not run again).
Result<SubprocessResult> RunLaunched(const ToolContext& ctx, const sandbox::Place& place, const std::string& cwd,
                                     const std::string& command, double timeout) {
  std::shared_ptr<sandbox::Launcher> launcher = ctx.sandbox->LauncherFor("bash", place, cwd);
  if (launcher == nullptr) return Status::Unavailable("no launcher");
  sandbox::Launcher::Job job;
  job.command = command;
  job.bash = true;
  job.env = BashEnvironment(ctx);
  job.timeout_s = timeout;
  job.max_output = kMaxCommandOutput;
  job.merge_stderr = true;
  job.cut_middle = true;
  return launcher->Run(job, ctx.cancel);
}

class BashTool : public Tool {
 public:
  std::string name() const override { return "bash"; }
  std::string description() const override {
    return "Run a shell command (bash -c) in your working folder (the workspace root, or your own git "
           "worktree when you have one) and return its output (stdout "
           "and stderr together) and exit code. Use it to build, test, search (grep, find), "
           "inspect git and run programs. stdin is empty, so interactive commands fail: pass "
           "non-interactive flags. Default timeout 120 s (`timeout`, at most 600); on timeout the "
           "command and everything it started is killed. Processes left running in the "
           "background are killed when the command ends. Output beyond 30000 characters is cut "
           "in the middle. `mates send …`, `mates tasks …` and `mates inbox` work from here, as you "
           "(MATES_TEAM and MATES_AGENT_NAME are set). In the sandbox you can write only your working folder "
           "and /tmp, and reach no network but what a person allowed.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "command":{"type":"string","description":"The command line to run with bash -c"},
      "timeout":{"type":"number","description":"Seconds before the command is killed (default 120, max 600)"}},
      "required":["command"]})S";
  }

  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string command = in.String("command", true);
    double timeout = in.Number("timeout", ctx.bash_default_timeout_s, 1, 600);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (command.find_first_not_of(" \t\n") == std::string::npos) {
      return ToolResult::Error("the command is empty");
    }
    const sandbox::Place place = ctx.Place();
    const std::string cwd = ctx.WorkRoot().root().string();
    auto ran = RunLaunched(ctx, place, cwd, command, timeout);
    if (!ran.ok() && ran.status().code() != StatusCode::kUnavailable) {
      return ToolResult::Error("could not run bash in its sandbox: " + ran.status().message());
    }
    if (!ran.ok()) {
      // No launcher here (--sandbox off, or none could start): a process,
      // and its sandbox, of its own.
      SubprocessOptions o;
      o.argv = {"/bin/bash", "-c", command};
      o.env = BashEnvironment(ctx);
      o.cwd = cwd;
      o.timeout_s = timeout;
      o.max_output = kMaxCommandOutput;
      o.merge_stderr = true;
      o.tag = NewProcessTag();
      // Listed while it runs (in a team), so that a host killed at any
      // instant leaves its successor a list of what to kill.
      std::optional<ProcessJournal> procs;
      if (!ctx.team.empty()) procs.emplace(ctx.ws.AgentsDir(ctx.team) / (ctx.agent + ".procs"));
      auto confined = ctx.sandbox->Wrap(place, std::move(o));
      if (!confined.ok()) return ToolResult::Error("could not start bash in its sandbox: " + confined.status().message());
      ran = RunListed(confined->options, procs ? &*procs : nullptr, ctx.cancel);
      confined->keep.reset();
      if (!ran.ok()) return ToolResult::Error("could not start bash: " + ran.status().message());
    }
    const SubprocessResult& r = *ran;
    std::string out = r.out;
    // A failure the sandbox caused says so, and how a person widens it.
    std::string sandbox_why;
    if (r.exit_code != 0 || r.term_signal != 0) {
      sandbox_why = ctx.sandbox->Explain(out, place);
      if (!sandbox_why.empty()) out += (out.empty() || out.back() == '\n' ? "" : "\n") + sandbox_why;
    }
    auto failed = [&](std::string content) {
      return sandbox_why.empty() ? ToolResult::Error(std::move(content))
                                 : ToolResult::Refused(std::move(content), {Refusal::By::kSandbox, "", sandbox_why});
    };
    if (r.out_dropped > 0) {
      out += "\n[output was " + std::to_string(r.out.size() + r.out_dropped) +
             " characters; the middle was cut]";
    }
    if (r.timed_out) {
      return failed(out + (out.empty() || out.back() == '\n' ? "" : "\n") + "[timed out after " +
                               std::to_string(static_cast<int>(timeout)) +
                               " s; the command and everything it started were killed]");
    }
    if (r.cancelled) return failed(out + "\n[interrupted; the command was killed]");
    if (r.term_signal != 0) {
      return failed(out + "\n[killed by signal " + std::to_string(r.term_signal) + "]");
    }
    if (r.exit_code != 0) {
      return failed(out + (out.empty() || out.back() == '\n' ? "" : "\n") + "[exit code " +
                               std::to_string(r.exit_code) + "]");
    }
    return ToolResult::Ok(out.empty() ? "(no output)" : out);
  }
};

}  // namespace

std::vector<std::string> BashEnvironment(const ToolContext& ctx) {
  std::vector<std::string> env;
  static const char* const kAllowed[] = {"HOME", "USER", "LOGNAME", "LANG", "LC_ALL",
                                         "LC_CTYPE", "TZ", "TMPDIR"};
  for (const char* k : kAllowed) {
    const char* v = std::getenv(k);
    if (v != nullptr) env.push_back(std::string(k) + "=" + v);
  }
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
  std::string self = SelfDir();
  if (!self.empty()) p = self + ":" + p;
  env.push_back("PATH=" + p);
  env.push_back("SHELL=/bin/bash");
  env.push_back("TERM=dumb");
  env.push_back("MATES_WORKSPACE=" + ctx.ws.root().string());
  if (!ctx.team.empty()) env.push_back("MATES_TEAM=" + ctx.team);
  if (!ctx.agent.empty()) env.push_back("MATES_AGENT_NAME=" + ctx.agent);
  // The tool call's span (DESIGN §29): what the command reports joins it.
  AddTraceEnvironment(&env);
  return env;
}

std::unique_ptr<Tool> MakeBashTool() { return std::make_unique<BashTool>(); }

}  // namespace mates::tools
