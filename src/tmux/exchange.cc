// A send to a pane agent and its reply (see cluster.h): wait for the
// prompt, paste, Enter once the echo shows, read until the marker.
#include <fcntl.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/log.h"
#include "tmux/cluster.h"
#include "tmux/pane_screen.h"

namespace mates::tmux {
namespace {

constexpr double kPollS = 0.01;  // how often a pane is read back while waiting, at most

// The waits between looks at a pane: the first after 1 ms — an agent that
// answers at once is seen at once — then each half as long again, up to
// `max_s` for the wait's first second, 50 ms until its fifth, 200 ms
// after. A look is a `tmux` process (~3 ms of CPU here): looking every
// 10 ms, five agents waiting on slow CLIs took the cores those CLIs
// needed (five OpenCode agents did not come up in 120 s on 2 cores).
class Backoff {
 public:
  explicit Backoff(double max_s = kPollS) : max_s_(max_s) {}
  void Wait() {
    Clock::Real().Sleep(next_s_, nullptr);
    const double waited = std::chrono::duration<double>(SteadyClock::now() - started_).count();
    const double cap = waited < 1 ? max_s_ : std::max(max_s_, waited < 5 ? 0.05 : 0.2);
    next_s_ = std::min(cap, next_s_ * 1.5);
  }

 private:
  const double max_s_;
  const SteadyClock::time_point started_ = SteadyClock::now();
  double next_s_ = 0.001;
};

}  // namespace

Status Cluster::Log(const std::string& from, const std::string& to, const std::string& type,
                    const std::string& content) const {
  MATES_RETURN_IF_ERROR(EnsureDir(config_.log_file.parent_path()));
  Json j;
  j["timestamp"] = IsoTime(WallSeconds());
  j["id"] = NewUuid();
  j["from"] = from;
  j["to"] = to;
  j["type"] = type;
  j["content"] = content;
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(config_.log_file.string() + ".lock"));
  ScopedFd fd(::open(config_.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno("open " + config_.log_file.string(), errno);
  return WriteAll(fd.get(), DumpJson(j) + "\n", "the message log");
}

Status Cluster::NotUp() const {
  return Status::FailedPrecondition("cluster " + config_.name + " is not up (mates cluster up -c " +
                                    config_.config_file.string() + ")");
}

Result<std::string> Cluster::PaneOf(const std::string& agent) const {
  if (config_.Find(agent) == nullptr) {
    std::string names;
    for (const auto& a : config_.agents) names += (names.empty() ? "" : ", ") + a.name;
    return Status::NotFound("no agent '" + agent + "' in cluster " + config_.name + " (agents: " + names + ")");
  }
  // Whether the session still runs, Send's first look at the pane finds
  // out: one `tmux` process less per send.
  auto data = ReadFile(config_.state_dir() / "state.json");
  if (!data.ok()) return NotUp();
  auto damaged = [] {
    return Status::Corrupt("the cluster's state file is damaged; run mates cluster down, then up");
  };
  auto j = ParseJson(*data);
  if (!j.ok()) return damaged();
  auto panes = JsonObjectField(*j, "panes", true);
  if (!panes.ok()) return damaged();
  auto pane = JsonString(**panes, agent.c_str(), true);
  if (!pane.ok()) return damaged();
  return *pane;
}

Status Cluster::DeadPane(const AgentConfig& a, int exit_status, const std::vector<std::string>& screen,
                         const std::string& when) const {
  // What the program printed last (tmux's own "Pane is dead" line aside).
  std::string said;
  int kept = 0;
  for (auto it = screen.rbegin(); it != screen.rend() && kept < 4; ++it) {
    std::string row = Trim(*it);
    if (row.empty() || row.rfind("Pane is dead", 0) == 0) continue;
    said = row + (said.empty() ? "" : " | " + said);
    ++kept;
  }
  return Status::FailedPrecondition(a.name + "'s command (" + a.command[0] + ") exited" +
                                    (exit_status >= 0 ? " with status " + std::to_string(exit_status) : "") +
                                    when + (said.empty() ? "" : "; it printed: " + said));
}

// The pane's screen once its CLI waits for input (its prompt shows, and it
// is not busy); `*prompt` is the prompt's row. A CLI that exited is said at
// once; `first` is a capture taken already.
Result<std::vector<std::string>> Cluster::WaitForPrompt(const AgentConfig& a, const std::string& pane,
                                                        const Deadline& deadline, std::string first,
                                                        size_t* prompt) const {
  const std::regex ready(a.ready_pattern);
  std::vector<std::string> before;
  Backoff ready_wait;
  for (bool looked = true;; looked = false) {
    std::string cap = std::move(first);
    if (!looked) {
      MATES_ASSIGN_OR_RETURN(cap, tmux_.Capture(pane));
    }
    before = CaptureLines(cap);
    *prompt = PromptRow(before, ready);
    if (*prompt != std::string::npos && !LooksBusy(before, a.busy_pattern)) break;
    if (*prompt == std::string::npos) {
      // A program that exited will never show its prompt: say so now, not
      // when the timeout runs out.
      MATES_ASSIGN_OR_RETURN(std::optional<int> dead, tmux_.DeadStatus(pane));
      if (dead) {
        // The screen above may predate the program's last words: it can
        // print and exit between the capture and this look. A dead pane's
        // screen is final, so read it again.
        MATES_ASSIGN_OR_RETURN(std::string last, tmux_.Capture(pane));
        return DeadPane(a, *dead, CaptureLines(last));
      }
    }
    if (Expired(deadline)) {
      return Status::Timeout(a.name + " is not ready for input (" +
                             (*prompt == std::string::npos ? "its prompt never showed" : "it is still busy") + ")");
    }
    ready_wait.Wait();
  }
  return before;
}

Result<std::string> Cluster::Exchange(const AgentConfig& a, const std::string& pane,
                                      const std::string& text, const Deadline& deadline,
                                      std::string first) const {
  std::regex ready(a.ready_pattern);
  // 1. The CLI must be waiting for input, or what we type may be lost.
  size_t prompt = std::string::npos;
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> before, WaitForPrompt(a, pane, deadline, std::move(first), &prompt));
  // Rows from here on may be new: the prompt row, or any row above it the
  // CLI redraws (a TUI may move its input area when the echo goes above).
  auto new_from = [&](const std::vector<std::string>& now) { return std::min(prompt, FirstDifference(before, now)); };
  // 2. Type it; press Enter once the text is in: its last line shows, or
  // the pane changed and then stayed still for a moment (a TUI may show a
  // long paste as a placeholder).
  MATES_RETURN_IF_ERROR(tmux_.Paste(pane, text));
  std::string last = LastInputLine(text);
  std::vector<std::string> seen = before;
  auto still_since = SteadyClock::now();
  Backoff echo_wait(kPollS / 2);
  for (;;) {
    MATES_ASSIGN_OR_RETURN(std::string cap, tmux_.Capture(pane));
    std::vector<std::string> now = CaptureLines(cap);
    bool shown = false;
    for (size_t i = new_from(now); i < now.size() && !shown; ++i) shown = EndsEcho(now[i], last);
    if (now != seen) {
      seen = now;
      still_since = SteadyClock::now();
    }
    bool settled = now != before && SteadyClock::now() - still_since > std::chrono::milliseconds(100);
    if (shown || settled || Expired(deadline)) break;
    echo_wait.Wait();
  }
  if (a.enter_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a.enter_delay_ms));
  MATES_RETURN_IF_ERROR(tmux_.SendKey(pane, "Enter"));
  auto entered = SteadyClock::now();
  int enters = 1;
  // 3. The marker, after the echo.
  Backoff reply_wait;
  for (;;) {
    MATES_ASSIGN_OR_RETURN(std::string cap, tmux_.Capture(pane));
    std::vector<std::string> now = CaptureLines(cap);
    std::string reply;
    if (FindReply(now, new_from(now), text, a.marker, a.ready_pattern, &reply)) return reply;
    // A CLI that may take an Enter as a newline in a paste (a loaded
    // machine can stretch its window past the delay): when, a while on,
    // its prompt is neither empty nor busy and the text is still among its
    // bottom rows, the text waits in it. (Nothing else gets an Enter: a
    // question the CLI asks shows neither.)
    auto waiting = [&] {
      for (size_t i : BottomRows(now)) {
        if (EndsEcho(now[i], last)) return true;
      }
      return false;
    };
    if (a.enter_delay_ms > 0 && enters < 4 && SteadyClock::now() - entered > std::chrono::milliseconds(1500) &&
        PromptRow(now, ready) == std::string::npos && !LooksBusy(now, a.busy_pattern) && waiting()) {
      MATES_RETURN_IF_ERROR(tmux_.SendKey(pane, "Enter"));
      entered = SteadyClock::now();
      ++enters;
    }
    if (Expired(deadline)) {
      return Status::Timeout("no '" + a.marker + "' from " + a.name + " in time");
    }
    reply_wait.Wait();
  }
}

Result<std::string> Cluster::Send(const std::string& from, const std::string& agent, const std::string& text,
                                  double timeout_s) {
  MATES_ASSIGN_OR_RETURN(std::string pane, PaneOf(agent));
  const AgentConfig& a = *config_.Find(agent);
  if (Trim(text).empty()) return Status::InvalidArgument("nothing to send");
  double t = timeout_s > 0 ? timeout_s : config_.response_timeout_s;
  Deadline deadline = DeadlineIn(t);
  // One exchange per pane at a time (across processes); `status` sees it.
  MATES_ASSIGN_OR_RETURN(FileLock busy, FileLock::Acquire(config_.state_dir() / (agent + ".busy")));
  auto first = tmux_.Capture(pane);
  if (!first.ok()) return IsUp() ? first.status() : NotUp();
  WarnIfFailed(Log(from, agent, "task", text), "the message log");
  auto reply = Exchange(a, pane, text, deadline, std::move(*first));
  if (!reply.ok()) {
    WarnIfFailed(Log(agent, from, "error", reply.status().message()), "the message log");
    return reply.status();
  }
  WarnIfFailed(Log(agent, from, "result", *reply), "the message log");
  return reply;
}

}  // namespace mates::tmux
