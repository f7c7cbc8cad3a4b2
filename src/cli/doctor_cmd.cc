// mates doctor [--json] [--provider P] [--model M] [--base-url URL] [--no-call]
// (DESIGN §21): what a first run needs, checked on this machine — the
// provider (a key, and a minimal call that answers), git, tmux, Chromium,
// the store (PostgreSQL when configured), and the sandbox — each failure
// with the one thing to do about it. Exit 1 when something needed fails;
// what only some features need is a warning.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/run_options.h"
#include "core/clock.h"
#include "core/subprocess.h"
#include "git/git.h"
#include "host/telemetry_report.h"
#include "llm/http.h"
#include "store/host_info.h"
#include "llm/provider_factory.h"
#include "sandbox/sandbox.h"
#include "stores/open_store.h"
#include "tmux/agent_clis.h"

namespace mates::cli {
namespace {

enum class Verdict { kOk, kWarn, kFail, kSkip };
constexpr const char* kVerdictNames[] = {"ok", "warn", "fail", "skip"};

struct Check {
  std::string name;
  Verdict verdict = Verdict::kOk;
  std::string detail;  // what was found
  std::string fix;     // what to do ("" when nothing)
};

struct DoctorArgs {
  std::string provider, model, base_url, scenario;
  double timeout = 30;
  bool no_call = false;
  bool json = false;
};

// `c` with its verdict, what was found and what to do.
Check Verdicted(const Check& c, Verdict v, std::string detail, std::string fix) {
  return {c.name, v, std::move(detail), std::move(fix)};
}

// The first line `argv` prints, or "" when it cannot run.
std::string FirstLineOf(std::vector<std::string> argv) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  o.timeout_s = 10;
  o.merge_stderr = true;
  auto r = RunSubprocess(o);
  if (!r.ok() || r->exit_code != 0) return "";
  return r->out.substr(0, r->out.find('\n'));
}

// Where `program` is on PATH, or "".
std::string OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  for (size_t at = 0; at <= dirs.size();) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    fs::path p =
        fs::path(dirs.substr(at, end - at).empty() ? "." : dirs.substr(at, end - at)) / program;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
    at = end + 1;
  }
  return "";
}

Check ProviderCheck(const DoctorArgs& a) {
  Check c{"provider"};
  llm::ProviderConfig pc{a.provider, a.model, a.base_url, a.scenario, a.timeout};
  auto provider = llm::MakeProvider(pc);
  if (!provider.ok()) {
    return Verdicted(c, Verdict::kFail, provider.status().message(),
                     "set what it names, then `mates doctor` again (with the same --provider, --base-url); "
                     "`mates demo` and --provider scripted need none");
  }
  const std::string model = a.model.empty() ? (*provider)->default_model() : a.model;
  c.detail = std::string((*provider)->name()) + ", model " + model;
  if (a.no_call) {
    c.detail += " (not called: --no-call)";
    return c;
  }
  // The first failure is the answer: a doctor does not wait out retries.
  const double t0 = WallSeconds();
  Status r = llm::PreflightCall(**provider, model);
  if (!r.ok()) {
    return Verdicted(c, Verdict::kFail, c.detail + ": a minimal call failed: " + r.message(),
                     r.code() == StatusCode::kFailedPrecondition
                         ? "check the key and the model (--model, $MATES_MODEL)"
                         : "check the network and the base URL (--base-url, $ANTHROPIC_BASE_URL, "
                           "$OPENAI_BASE_URL, $GOOGLE_GEMINI_BASE_URL)");
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", WallSeconds() - t0);
  c.detail += ": a minimal call answered in " + std::string(took);
  return c;
}

Check GitCheck(const Workspace& ws) {
  Check c{"git"};
  const std::string version = FirstLineOf({"git", "--version"});
  if (version.empty()) {
    return Verdicted(c, Verdict::kFail, "git: not found", "apt-get install git");
  }
  c.detail = version;
  if (Status v = git::CheckGitVersion(); !v.ok()) {
    return Verdicted(c, Verdict::kFail, c.detail + ": " + v.message(), "install a newer git");
  }
  if (!git::RepoTop(ws.root()).ok()) {
    return Verdicted(
        c, Verdict::kWarn, c.detail + "; " + ws.root().string() + " is not a git repository",
        "git init (worktree isolation and the merge queue need one; shared mode does not)");
  }
  return c;
}

Check TmuxCheck() {
  Check c{"tmux"};
  c.detail = FirstLineOf({"tmux", "-V"});
  if (!c.detail.empty()) return c;
  return Verdicted(c, Verdict::kWarn,
                   "tmux: not found (only `mates cluster` and tmux teammates need it)",
                   "apt-get install tmux");
}

Check ChromiumCheck() {
  Check c{"chromium"};
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    if (std::string at = OnPath(name); !at.empty()) {
      c.detail = at;
      return c;
    }
  }
  return Verdicted(c, Verdict::kWarn,
                   "no Chromium on PATH (the dashboard opens in any browser; screenshots and the "
                   "browser tests need it)",
                   "apt-get install chromium");
}

// The agent CLIs a team may hold (DESIGN §28): each found, with its
// version; the missing ones with their install lines (a warning: only a
// team with that CLI needs it).
Check AgentClisCheck() {
  Check c{"agent CLIs"};
  std::vector<std::string> found, missing, installs;
  for (const tmux::KnownCli& cli : tmux::KnownClis()) {
    const std::string program(cli.program);
    if (OnPath(program).empty()) {
      missing.push_back(std::string(cli.name) + " (" + program + ")");
      installs.emplace_back(cli.install);
      continue;
    }
    std::string version = FirstLineOf({program, "--version"});
    found.push_back(std::string(cli.name) + (version.empty() ? "" : " " + version));
  }
  auto joined = [](const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
    return out;
  };
  c.detail = joined(found, ", ");
  if (missing.empty()) return c;
  return Verdicted(c, Verdict::kWarn,
                   (found.empty() ? "" : c.detail + "; ") + "not on PATH: " + joined(missing, ", ") +
                       " (only a team with one of them needs it)",
                   joined(installs, "; "));
}

Check StoreCheck(const Globals& g, double timeout) {
  Check c{"store"};
  if (IsFileStoreUrl(g.store)) {
    const fs::path root = g.ws().root();
    c.detail = "files in " + root.string();
    if (::access(root.c_str(), W_OK) == 0) return c;
    return Verdicted(c, Verdict::kFail, c.detail + ": not writable",
                     "run mates in a folder you can write, or give -w DIR");
  }
  auto said = CheckStoreSchema(g.store, timeout);
  if (!said.ok()) {
    return Verdicted(
        c, Verdict::kFail, said.status().message(),
        said.status().code() == StatusCode::kFailedPrecondition
            ? g.Mates() + " store init (an empty database) or " + g.Mates() + " store migrate"
            : "check that the server runs and the URL (--store, $MATES_STORE, store: in "
              ".mates/config.yaml)");
  }
  c.detail = *said;
  return c;
}

Check SandboxCheck(const Workspace& ws) {
  Check c{"sandbox"};
  auto settings = ChooseSandboxSettings(ws, "");
  if (!settings.ok()) {
    return Verdicted(c, Verdict::kFail, settings.status().message(),
                     "fix the sandbox: section it names");
  }
  if (settings->mode == sandbox::Mode::kOff) {
    return Verdicted(c, Verdict::kWarn, "off in the config: agents' tools run unconfined",
                     "remove `sandbox: {mode: off}` from your config.yaml");
  }
  auto box = HostsSandbox(ws, "doctor");
  if (!box.ok()) {
    return Verdicted(
        c, Verdict::kFail, box.status().message(),
        "apt-get install bubblewrap, and allow user namespaces (sysctl "
        "kernel.unprivileged_userns_clone=1, or "
        "kernel.apparmor_restrict_unprivileged_userns=0); else run with --sandbox off");
  }
  // Made is not enough: a command must run in it.
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "echo inside"};
  o.timeout_s = 20;
  auto confined = (*box)->Wrap({ws.root(), "doctor", "doctor"}, std::move(o));
  auto r = confined.ok() ? RunSubprocess(confined->options)
                         : Result<SubprocessResult>(confined.status());
  if (!r.ok() || r->exit_code != 0 || r->out.find("inside") == std::string::npos) {
    return Verdicted(
        c, Verdict::kFail,
        "a command did not run in it: " + (r.ok() ? r->err.substr(0, 300) : r.status().message()),
        "allow user namespaces for bubblewrap, or run with --sandbox off");
  }
  c.detail = std::string(sandbox::ModeName(settings->mode)) +
             ": bubblewrap, user namespaces and seccomp work";
  return c;
}

// Telemetry (DESIGN §29): what the configuration says, whether the
// collector takes an (empty) export, and what a live host dropped.
Check TelemetryCheck(const Workspace& ws, const std::string& team, double timeout) {
  Check c{"telemetry"};
  auto chosen = ChooseTelemetry();
  if (!chosen.ok()) return Verdicted(c, Verdict::kFail, chosen.status().message(), "fix the telemetry: section");
  std::string warnings;
  for (const auto& w : chosen->warnings) warnings += (warnings.empty() ? "" : "; ") + w;
  if (!chosen->enabled()) {
    if (!warnings.empty()) return Verdicted(c, Verdict::kWarn, warnings, "fix the OTEL_* variables it names");
    c.detail = "off (set OTEL_EXPORTER_OTLP_ENDPOINT to export traces, metrics and logs)";
    return c;
  }
  const std::string url = !chosen->traces_url.empty()    ? chosen->traces_url
                          : !chosen->metrics_url.empty() ? chosen->metrics_url
                                                         : chosen->logs_url;
  llm::HttpRequest req;
  req.url = url;
  req.body = chosen->json ? "{}" : "";  // an export of nothing
  req.headers = chosen->headers;
  req.headers.push_back(chosen->json ? "Content-Type: application/json" : "Content-Type: application/x-protobuf");
  req.connect_timeout_s = std::min(timeout, 10.0);
  req.total_timeout_s = timeout;
  auto r = llm::NewCurlTransport()->Send(req, [](std::string_view) { return true; }, nullptr);
  if (!r.ok() || r->status / 100 != 2) {
    return Verdicted(c, Verdict::kWarn,
                     "the collector at " + url + (r.ok() ? " answered " + std::to_string(r->status)
                                                         : " cannot be reached: " + r.status().message()),
                     "start the collector, or correct OTEL_EXPORTER_OTLP_ENDPOINT and its headers");
  }
  c.detail = "exports to " + url + (chosen->json ? " (http/json)" : " (http/protobuf)");
  if (auto report = team.empty() ? std::nullopt : host::ReadTelemetryReport(ws, team); report && ReadLiveHost(ws, team)) {
    c.detail += "; the host of " + team + " " + host::DescribeTelemetry(*report);
    if (report->stats.spans_dropped + report->stats.logs_dropped > 0) c.verdict = Verdict::kWarn;
  }
  if (!warnings.empty()) return Verdicted(c, Verdict::kWarn, c.detail + "; " + warnings, "fix the OTEL_* variables it names");
  return c;
}

int Doctor(Globals& g, const DoctorArgs& a) {
  if (Status s = CheckSeconds("--timeout", a.timeout, 0, false); !s.ok()) return Fail(s);
  const Workspace ws = g.ws();
  std::vector<Check> checks = {
      ProviderCheck(a),         GitCheck(ws),     TmuxCheck(), ChromiumCheck(), AgentClisCheck(),
      StoreCheck(g, a.timeout), SandboxCheck(ws), TelemetryCheck(ws, g.team, a.timeout)};
  bool failed = false;
  Json out = Json::array();
  for (const auto& c : checks) {
    failed |= c.verdict == Verdict::kFail;
    const char* verdict = kVerdictNames[static_cast<int>(c.verdict)];
    if (a.json) {
      out.push_back({{"check", c.name},
                     {"result", verdict},
                     {"detail", c.detail},
                     {"fix", c.fix.empty() ? Json(nullptr) : Json(c.fix)}});
      continue;
    }
    std::cout << (c.verdict == Verdict::kOk     ? "  ok    "
                  : c.verdict == Verdict::kWarn ? "  warn  "
                                                : "  FAIL  ")
              << c.name << ": " << c.detail << "\n";
    if (!c.fix.empty()) std::cout << "        fix: " << c.fix << "\n";
  }
  if (a.json) {
    std::cout << DumpJsonPretty(Json{{"ok", !failed}, {"checks", out}}) << std::endl;
  } else {
    std::cout << (failed ? "something mates needs is missing: see FAIL above\n"
                         : "mates is ready here\n");
  }
  return failed ? 1 : 0;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<DoctorArgs>();
  CLI::App* cmd =
      app.add_subcommand("doctor",
                         "Check what mates needs here: provider, git, tmux, Chromium, store, "
                         "sandbox, telemetry; each failure with its fix");
  AddProviderOptions(cmd, a->provider, a->model, a->base_url);
  cmd->add_option("--scenario", a->scenario, "Scenario file for --provider scripted");
  cmd->add_option("--timeout", a->timeout, "Seconds the provider's call and the store may take")
      ->capture_default_str();
  cmd->add_flag("--no-call", a->no_call, "Check the provider's settings but make no call");
  cmd->add_flag("--json", a->json, "One JSON document");
  AddStoreOption(cmd, g);
  cmd->callback([&g, a] { g.action = [&g, a] { return Doctor(g, *a); }; });
}

}  // namespace mates::cli
