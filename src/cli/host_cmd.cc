// mates up   [--team T] [run options] [--teammates] [GOAL]
// mates down [--team T] [--timeout S]
//
// `up` hosts a team with no terminal (DESIGN §11): it forks a host (new
// session, stdin /dev/null, output appended to .teams/T/host.log), waits
// until the host holds the lead's lock and has written host.json, says so
// and exits 0. The host runs until `down` or SIGTERM. `down` sends the host
// SIGTERM (its agents stop, their tools' trees are killed, their journals
// stay for the next `up`), waits for it to exit, and after --timeout kills
// it and whatever its tools left.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "cli/run_options.h"
#include "cli/session_view.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "core/secrets.h"
#include "llm/provider_factory.h"
#include "store/host_info.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/team_store.h"
#include "stores/open_store.h"
#include "team/shutdown.h"

namespace mates::cli {
namespace {

constexpr double kUpReadySeconds = 60;

fs::path HostLogPath(const Workspace& ws, const std::string& team) { return ws.TeamDir(team) / "host.log"; }

// The refusal when `team` has a live host.
Status AlreadyHosted(const Globals& g, TeamStore& store, const std::string& team) {
  auto host = store.LiveHost(team);
  if (!host) return Status::Ok();
  std::string who = host->pid > 0 ? " (pid " + std::to_string(host->pid) + ")" : "";
  return Status::FailedPrecondition("team '" + team + "' is already hosted" + who + "; `" + g.Mates() + " down --team " + team +
                                    "` stops it");
}

// In the forked host: detach from the terminal and the session, then host
// the team. Never returns to the caller's code path: the process exits.
[[noreturn]] void BecomeHost(const host::SessionOptions& config, const RunArgs& a, int ready_fd) {
  ::setsid();
  // A second fork: the host is no session leader, so no terminal it opens
  // can become its controlling one.
  pid_t pid = ::fork();
  if (pid != 0) ::_exit(pid < 0 ? 1 : 0);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int log_fd = ::open(HostLogPath(config.ws, config.team).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (null_fd < 0 || log_fd < 0) ::_exit(1);
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  ::close(null_fd);
  ::close(log_fd);
  std::cout << "[" << IsoTime(WallSeconds()) << "] mates up: hosting team " << config.team << " (pid "
            << ::getpid() << ")" << std::endl;
  Secrets::Scrub();
  int code = 1;
  auto provider = SessionProvider(a);
  if (!provider.ok()) {
    std::cerr << "mates: error: " << provider.status().message() << std::endl;
  } else {
    host::SessionOptions c = config;
    c.mode = a.teammates_only ? HostMode::kTeammates : HostMode::kUp;
    c.hosted = true;
    c.respawn = a.respawn == "on-work";
    c.teammates_only = a.teammates_only;
    c.adopt = !a.no_adopt;
    c.dashboard_port = a.no_dashboard ? -1 : a.dashboard_port;
    c.on_ready = [ready_fd] {
      char r = 'R';
      (void)!::write(ready_fd, &r, 1);
      ::close(ready_fd);
    };
    LiveOutput out(/*color=*/false, /*multi=*/true);
    Status tee = a.log.empty() ? Status::Ok() : out.TeeTo(a.log);
    if (!tee.ok()) {
      std::cerr << "mates: error: " << tee.message() << std::endl;
    } else {
      code = SessionExit(host::Session::Run(c, provider->get(), SessionOutputTo(out)));
    }
  }
  std::cout << "[" << IsoTime(WallSeconds()) << "] mates up: the host ends (exit " << code << ")" << std::endl;
  std::cout.flush();
  std::cerr.flush();
  ::_exit(code);
}

// Fail fast (DESIGN §27): one minimal call to the provider, from the
// person's terminal, before anything is hosted; at most kPreflightSeconds.
constexpr double kPreflightSeconds = 10;
Status Preflight(const RunArgs& a) {
  const double timeout = a.request_timeout > 0 ? std::min(a.request_timeout, kPreflightSeconds) : kPreflightSeconds;
  llm::ProviderConfig pc{a.provider, a.model, a.base_url, a.scenario, timeout};
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<llm::Provider> p, llm::MakeProvider(pc));
  const std::string model = p->default_model();
  Status s = llm::PreflightCall(*p, model);
  if (s.ok()) return s;
  return Status::FailedPrecondition(
      "the model provider did not answer a first call (" + std::string(p->name()) + ", model " + model + "): " +
      s.message() + "; nothing is hosted. " +
      (s.code() == StatusCode::kFailedPrecondition ? "Check the key and the model (--model, $MATES_MODEL)"
                                                   : "Check that the server runs and the base URL (--base-url)") +
      ", or --no-preflight to host without this check");
}

// What the host wrote to its log since `offset` (its last lines), to say
// why it did not start.
std::string LogSince(const fs::path& log, uint64_t offset) {
  auto text = ReadFilePrefix(log, 1 << 20);
  if (!text.ok() || text->size() <= offset) return "";
  std::string tail = text->substr(offset);
  if (tail.size() > 4000) tail = "…" + tail.substr(tail.size() - 4000);
  return tail;
}

int Up(Globals& g, const RunArgs& a) {
  auto config = SessionConfig(g, a);
  if (!config.ok()) return Fail(config.status());
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (a.max_turns < 1) return Usage("--max-turns must be at least 1");
  if (a.dashboard_port < 0 || a.dashboard_port > 65535) return Usage("--dashboard-port must be 0..65535 (0 = any free port)");
  // Checked here, where a mistake can be seen; the host makes its own.
  if (auto p = SessionProvider(a); !p.ok()) return Fail(p.status());
  if (!a.no_preflight) {
    if (Status s = Preflight(a); !s.ok()) return Fail(s);
  }
  if (a.teammates_only && !config->goal.empty()) return Usage("--teammates hosts no lead: it takes no goal");
  const Workspace& ws = config->ws;
  {
    // Closed before the fork: the host opens its own connections.
    auto teams = OpenTeamStore(config->store_url, ws, g.env());
    if (!teams.ok()) return Fail(teams.status());
    if (a.teammates_only && !(*teams)->HostsApart()) {
      return Usage("--teammates hosts the teammates of a team kept in a database that other machines share "
                   "(--store postgres://...); on the file store the lead's host has them");
    }
    if (a.no_adopt && !(*teams)->HostsApart()) {
      return Usage("--no-adopt leaves teammates to the other hosts of a team kept in a database that other machines "
                   "share (--store postgres://...); on the file store the lead's host is the only one");
    }
    if (a.teammates_only) {
      auto team = (*teams)->LoadTeam(g.team);
      if (!team.ok()) return Fail(team.status());
    }
    if (Status s = AlreadyHosted(g, **teams, g.team); !s.ok()) return Fail(s);
  }
  // Asked here, on the person's terminal: the host has none.
  if (Status s = AdmitWorkspaceFiles(ws); !s.ok()) return Fail(s);
  if (Status s = ChooseSandbox(*config, a.sandbox); !s.ok()) return Fail(s);
  if (Status s = EnsureDir(ws.TeamDir(g.team)); !s.ok()) return Fail(s);
  const fs::path log = HostLogPath(ws, g.team);
  std::error_code ec;
  uint64_t log_start = fs::exists(log, ec) ? fs::file_size(log, ec) : 0;

  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return Fail(Status::FromErrno("pipe", errno));
  std::cout.flush();
  std::cerr.flush();
  pid_t child = ::fork();
  if (child < 0) return Fail(Status::FromErrno("fork", errno));
  if (child == 0) {
    ::close(ready[0]);
    BecomeHost(*config, a, ready[1]);
  }
  ::close(ready[1]);
  int status = 0;
  ::waitpid(child, &status, 0);  // the first fork exits at once
  ScopedFd ready_fd(ready[0]);
  char byte = 0;
  struct pollfd pfd = {ready_fd.get(), POLLIN, 0};
  int rc = ::poll(&pfd, 1, static_cast<int>(kUpReadySeconds * 1000));
  bool ok = rc == 1 && ::read(ready_fd.get(), &byte, 1) == 1 && byte == 'R';
  if (!ok) {
    std::string why = LogSince(log, log_start);
    return Fail(Status::FailedPrecondition(
        "the host of team '" + g.team + "' did not start" +
        (rc == 0 ? " within " + std::to_string(static_cast<int>(kUpReadySeconds)) + " s" : "") +
        (why.empty() ? "" : "; its log says:\n" + why)));
  }
  auto teams = OpenTeamStore(config->store_url, ws, g.env());
  auto host = teams.ok() ? (*teams)->LiveHost(g.team) : std::nullopt;
  std::string pid = host && host->pid > 0 ? std::to_string(host->pid) : "?";
  std::cout << (a.teammates_only ? "hosting the teammates of team " : "hosting team ") << g.team << " (pid " << pid << ")"
            << (host && !host->dashboard.empty() ? " — dashboard " + host->dashboard : "") << "\n"
            << "log " << log.string() << "\n"
            << g.Mates() << " status --team " << g.team << " shows it; " << g.Mates() << " send --team " << g.team
            << " --to lead TEXT talks to it; " << g.Mates() << " down --team " << g.team << " stops it\n";
  return 0;
}

struct DownArgs {
  double grace = 10;
  double timeout = 30;
};

// The shutdown protocol (DESIGN §3) before any force: every teammate a
// host runs (in-process, hosted now: not an external agent, which the
// host does not stop, nor one nobody hosts, which cannot answer) is asked,
// as the lead, to wrap up and answer; those that stop
// (roster status `shutdown`) within `grace` seconds are done for good. One
// line says who was asked and who did not stop in time: those the host's
// SIGTERM stops, and the next `up` resumes from their journals.
// `of_team`: say which team (the host hosts more than one).
void AskTeammatesToStop(TeamStore& store, const TeamConfig& team, double grace, bool of_team) {
  std::vector<std::string> asked = team::AskToShutDown(
      store, team, "The team is going down (mates down): wrap up, answer with shutdown_response, then stop.",
      [&](const Member& m) { return m.backend == MemberBackend::kInProcess && store.IsHosted(team.name, m.name); });
  if (asked.empty()) return;
  std::vector<std::string> left = team::WaitForShutdowns(
      store, team.name, asked, [&](const std::string& n) { return team::StoppedByRoster(store, team.name, n); },
      DeadlineIn(grace), std::make_shared<Waker>());
  std::cout << "asked " << asked.size() << " teammate(s)"
            << (of_team ? " of team " + team.name : "") << " to stop";
  if (left.empty()) {
    std::cout << ": all stopped\n";
  } else {
    std::string names;
    for (const auto& n : left) names += (names.empty() ? "" : ", ") + n;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g s", grace);
    std::cout << "; not stopped within " << secs << ": " << names
              << " (stopped with the host, resumed by the next up)\n";
  }
}

int Down(Globals& g, const DownArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (Status s = CheckSeconds("--timeout", a.timeout, 0, false); !s.ok()) return Fail(s);
  if (Status s = CheckSeconds("--grace", a.grace, 0, true); !s.ok()) return Fail(s);
  Workspace ws = g.ws();
  auto opened = OpenChosenStore(g, g.store, ws);
  if (!opened.ok()) return Fail(opened.status());
  std::unique_ptr<TeamStore> store = std::move(*opened);
  auto team = store->LoadTeam(g.team);
  if (!team.ok()) return Fail(team.status());
  auto host = store->LiveHost(g.team);
  if (!host) {
    // A host whose lead's lock is not held this moment (its connection to
    // the database lost, the lock being taken again) still lives: the
    // process host.json names says so, and it is stopped, not mourned.
    auto recorded = ReadHostInfo(ws, g.team);
    if (recorded.ok() && recorded->pid > 0 &&
        ProcessLives(static_cast<pid_t>(recorded->pid), recorded->start_time)) {
      host = *recorded;
    }
  }
  if (!host) {
    // A host that was killed (SIGKILL, OOM) could not stop its tools: what
    // they started still runs, tagged with the host's prefix.
    int left = 0;
    auto dead = ReadHostInfo(ws, g.team);
    if (dead.ok()) {
      left = KillTagged(HostTagPrefixOf(static_cast<pid_t>(dead->pid), dead->start_time));
      std::error_code ec;
      fs::remove(HostInfoPath(ws, g.team), ec);
    }
    std::cout << "team " << g.team << " is not hosted"
              << (left > 0 ? " (" + std::to_string(left) + " leftover process(es) of its dead host killed)" : "")
              << "\n";
    return 0;
  }
  if (host->pid <= 0) {
    return Fail(Status::FailedPrecondition("team '" + g.team + "' is hosted by a process that has not said who it "
                                           "is (host.json); try again in a moment"));
  }
  // A host of teammates only is stopped alone: its teammates go on at the
  // team's other hosts, which adopt them.
  const bool teammates_host = host->mode == HostMode::kTeammates;
  if (!teammates_host) {
    AskTeammatesToStop(*store, *team, a.grace, /*of_team=*/!host->also.empty());
    // The team its lead made and works in, hosted by the same process.
    for (const auto& other : host->also) {
      auto t = store->LoadTeam(other.team);
      if (t.ok()) AskTeammatesToStop(*store, *t, a.grace, /*of_team=*/true);
    }
  }
  const pid_t pid = static_cast<pid_t>(host->pid);
  if (::kill(pid, SIGTERM) != 0 && errno != ESRCH) return Fail(Status::FromErrno("signal the host", errno));
  bool forced = false;
  if (!WaitProcessExit(pid, a.timeout)) {
    forced = true;
    ::kill(pid, SIGKILL);
    WaitProcessExit(pid, 10);
  }
  // What the host's tools started and the host could not stop.
  int left = KillTagged(HostTagPrefixOf(pid, host->start_time));
  std::cout << (teammates_host ? "the teammates host of team " : "team ") << g.team << " is down (host pid " << pid
            << (forced ? " killed after " : " stopped") << (forced ? std::to_string(static_cast<int>(a.timeout)) + " s" : "")
            << (left > 0 ? ", " + std::to_string(left) + " leftover process(es) killed" : "") << ")"
            << (teammates_host ? "; its teammates go on at the team's other hosts" : "") << "\n";
  // Worktree isolation's merged work is on the team's target, not in the
  // person's checkout: where it is, and how to take it.
  if (!teammates_host && team->git.configured()) {
    std::cout << "the team's merged work is on " << team->git.target_name() << " (`git merge "
              << team->git.target_name() << "` brings it into your branch)\n";
  }
  return 0;
}

}  // namespace

void AddHostCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<RunArgs>();
  // A hosted team's teammates persist (seed v9, DESIGN §27): idle, they
  // wait at no cost until work or a shutdown request comes.
  a->idle_timeout = 0;
  CLI::App* up = app.add_subcommand("up", "Host a team in the background, with no terminal, until `mates down`");
  AddRunOptions(up, g, *a);
  up->add_option("--respawn", a->respawn,
                 "on-work: a task that waits with no running teammate to take it brings a stopped one back; "
                 "off: that is left to the lead")
      ->check(CLI::IsMember({"on-work", "off"}))
      ->capture_default_str();
  auto* port = up->add_option("--dashboard-port", a->dashboard_port,
                              "Port of the dashboard on 127.0.0.1 (default: any free port)");
  up->add_flag("--no-dashboard", a->no_dashboard, "Serve no dashboard")->excludes(port);
  up->add_flag("--no-preflight", a->no_preflight,
               "Host without first checking that the model provider answers (a minimal call)");
  auto* teammates = up->add_flag("--teammates", a->teammates_only,
                                 "Host no lead, only the team's teammates that no host has, now and whenever one's "
                                 "host dies or stops (a team in a shared --store postgres://...)");
  up->add_flag("--no-adopt", a->no_adopt,
               "Take over no teammate whose host died or stopped: leave them to the `up --teammates` hosts (a team in "
               "a shared --store postgres://...); the teammates the lead spawns are hosted here")
      ->excludes(teammates);
  up->callback([&g, a] { g.action = [&g, a] { return Up(g, *a); }; });

  auto d = std::make_shared<DownArgs>();
  CLI::App* down = app.add_subcommand("down", "Stop a team's host (its agents resume at the next `up`)");
  AddTeamOption(down, g);
  down->add_option("--grace", d->grace,
                   "Seconds the teammates have to answer the shutdown request before the host is stopped (0 = ask, "
                   "do not wait)")
      ->capture_default_str();
  AddStoreOption(down, g);
  down->add_option("--timeout", d->timeout, "Seconds the host has to stop before it is killed")->capture_default_str();
  down->callback([&g, d] { g.action = [&g, d] { return Down(g, *d); }; });
}

}  // namespace mates::cli
