// Cluster: agent CLIs in the panes of one tmux session (seed 003), driven
// by typing into their panes and reading them back.
//
// A send: wait until the agent's CLI shows its input prompt among the
// pane's bottom rows and does not say it is busy (so Enter is not lost);
// remember the pane's content; paste the text; press Enter once the echo
// is there; the reply is complete when the agent's marker shows up after
// the echo of the input, in rows that changed since the send (a marker in
// the input, or in older scrollback, does not count). The reply is the
// text between the echo and the marker, without the CLI's chrome (prompt
// rows, rules, a TUI's message bullet).
//
// `up` leaves the pane ids in <work_dir>/.mates-cluster/<session>/, so
// `send`, `status` and `down` work from any process. A send holds the
// agent's busy lock there (one exchange per pane at a time; other panes
// go on in parallel); `status` reads it. Every exchange is logged to the
// seed's JSONL message log.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/waker.h"
#include "store/mailbox.h"
#include "tmux/cli_wiring.h"
#include "tmux/cluster_config.h"
#include "tmux/pane_screen.h"
#include "sandbox/sandbox.h"
#include "telemetry/otlp.h"
#include "tmux/tmux.h"

namespace mates {
struct Env;
}  // namespace mates

namespace mates::tmux {

struct AgentReadiness {
  std::string agent;
  bool ready = false;
  double seconds = 0;
  std::string error;
};

struct AgentStatus {
  std::string name, role, reports_to, pane;
  bool alive = false;
  bool busy = false;
  bool failed = false;   // its pane's program exited
  int exit_status = -1;  // then with this status
  std::string last_activity;  // ISO time of its last logged message, or ""
  // What went wrong (DESIGN §20), "" if nothing: its last exchange failed
  // (no marker in time, the pane gone) and none succeeded since, or its
  // program exited (with what it printed last).
  std::string error;
  std::string error_at;  // ISO time, for an exchange that failed
};

class PaneActivity;  // router.cc: a pane agent's activity document

class Cluster {
 public:
  explicit Cluster(ClusterConfig config);

  // Answers the first-run questions of the agents' CLIs (first_run:
  // claude-code, see tmux/claude_setup.h); what it changed, in words.
  Result<std::vector<std::string>> PrepareFirstRun() const;
  // Creates the session, starts every agent, handshakes them in parallel
  // (each must answer with its marker); `progress` hears each result,
  // `notice` what was done for the CLIs' first run.
  Result<std::vector<AgentReadiness>> Up(const std::function<void(const AgentReadiness&)>& progress = {},
                                         const std::function<void(const std::string&)>& notice = {});
  // The sandbox of the agents with `sandbox: true` (given before Up; off =
  // none is sandboxed). Their gates and proxies are the router's.
  void SetSandbox(sandbox::Settings settings) { sandbox_settings_ = std::move(settings); }
  // The team's telemetry (DESIGN §29, given before Up): each pane's CLI is
  // started with its OTEL_* so that the CLI's own telemetry (Claude
  // Code's, Codex's) goes where mates' does, marked with the team and the
  // member. The person's own env for an agent wins.
  void SetTelemetry(telemetry::OtlpConfig otlp) { otlp_ = std::move(otlp); }
  // Where the sandboxed agents' sockets live (the router serves them).
  fs::path SandboxDir() const { return config_.state_dir() / "sandbox"; }
  // Sends `text` from `from` ("user" by default) to `agent`; the reply.
  Result<std::string> Send(const std::string& from, const std::string& agent, const std::string& text,
                           double timeout_s = -1);
  Result<std::vector<AgentStatus>> AgentStatuses() const;
  // The bridge into the team named after the cluster: each agent's inbox is
  // typed into its pane when it is free (one message at a time, waiting for
  // the marker); the reply goes back to the sender as a `message`. An agent
  // with `mcp` reads its inbox itself: it is only told that messages wait. Runs
  // until `stop`; a message is taken from the inbox only once it has been
  // answered (a router that dies delivers it again). `up` starts it in the
  // session's "router" window. Inboxes are watched through `env`.
  Status Route(const std::atomic<bool>& stop, const Env& env);
  // Kills this cluster's tmux server and whatever its panes started.
  Status Down();
  bool IsUp() const;

  const ClusterConfig& config() const { return config_; }
  const Tmux& tmux() const { return tmux_; }
  // One entry of the message log (type: task, info, result or error).
  Status Log(const std::string& from, const std::string& to, const std::string& type, const std::string& content) const;

 private:
  // Up's steps, in order.
  // Every agent's program found on the PATH its pane will have.
  Status CheckPrograms(const fs::path& self) const;
  // Where each agent starts, and what its command line gains.
  struct Placed {
    std::map<std::string, fs::path> trees;                        // agents in their own worktree
    std::map<std::string, CliWiring> wiring;                      // what each CLI gains
  };
  // The team named after the cluster made or joined, each agent a member
  // (backend tmux), and the worktrees of those with `worktree: true`.
  Result<Placed> JoinTeam();
  // What each agent's CLI gains (tmux/cli_wiring.h): `mates mcp` as it,
  // its model server; the files those name written.
  Result<std::map<std::string, CliWiring>> WireClis(const fs::path& self) const;
  // The sandbox of the agents that ask for one (sandbox_settings_), if any.
  Status MakeSandbox();
  Result<Launch> LaunchOf(const AgentConfig& a, const Placed& placed, const fs::path& self) const;
  // One pane per agent, state.json, and the router's window.
  Status StartPanes(const fs::path& self, const Placed& placed);
  std::vector<AgentReadiness> Handshake(const std::function<void(const AgentReadiness&)>& progress);

  Result<std::string> PaneOf(const std::string& agent) const;
  // The error for an agent whose pane's program exited: its status and
  // what it printed last.
  // `agent`'s program exited (`when`: " before its prompt showed", or "").
  Status DeadPane(const AgentConfig& agent, int exit_status, const std::vector<std::string>& screen,
                  const std::string& when = " before its prompt showed") const;
  Result<std::vector<std::string>> WaitForPrompt(const AgentConfig& a, const std::string& pane,
                                                 const Deadline& deadline, std::string first, size_t* prompt) const;
  // `first`: the pane as it was read last, under the agent's busy lock.
  Result<std::string> Exchange(const AgentConfig& agent, const std::string& pane,
                               const std::string& text, const Deadline& deadline,
                               std::string first) const;
  // "cluster C is not up (mates cluster up -c FILE)".
  Status NotUp() const;
  // The router of an agent that reads its inbox over MCP: it is told
  // (typed in) that new messages wait, once per message.
  void NudgeLoop(const AgentConfig& agent, const Mailbox& box, Waker& waker, PaneActivity& activity,
                 const std::atomic<bool>& stop);

  ClusterConfig config_;
  Tmux tmux_;
  sandbox::Settings sandbox_settings_;
  telemetry::OtlpConfig otlp_;
  std::shared_ptr<sandbox::Sandbox> sandbox_;  // made by Up when an agent asks for it
};

}  // namespace mates::tmux
