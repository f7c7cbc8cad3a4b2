#include "tmux/cluster.h"

#include <fcntl.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <mutex>
#include <set>
#include <regex>
#include <thread>

#include "core/file_lock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/ids.h"
#include "core/json.h"
#include "core/waker.h"
#include "tmux/claude_setup.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"

namespace mates::tmux {

namespace {

constexpr double kPollS = 0.01;  // how often a pane is read back while waiting

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  return s;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// The input's last non-empty line: its echo ends the input.
std::string LastInputLine(const std::string& input) {
  std::vector<std::string> lines = CaptureLines(input);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string t = Trim(*it);
    if (!t.empty()) return t;
  }
  return "";
}

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool EndsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// A row that ends the echo of an input whose last line is `last`: it holds
// that line whole, or it is the tail the CLI wrapped onto a row of its own
// (TUIs such as Claude Code wrap long input at word boundaries themselves).
bool EndsEcho(const std::string& row, const std::string& last) {
  if (last.empty()) return false;
  if (row.find(last) != std::string::npos) return true;
  std::string t = Trim(row);
  for (const char* glyph : {">", "❯", "›", "│", "|"}) {
    if (StartsWith(t, glyph)) t = Trim(t.substr(std::string(glyph).size()));
  }
  return !t.empty() && EndsWith(last, t);
}

// How many non-empty rows at the bottom of a pane belong to the CLI's
// input area (its prompt, rules around it, a status line under it).
constexpr size_t kBottomRows = 6;

// The indexes of the pane's bottom non-empty rows, the lowest row first.
std::vector<size_t> BottomRows(const std::vector<std::string>& lines) {
  std::vector<size_t> rows;
  for (size_t i = lines.size(); i-- > 0 && rows.size() < kBottomRows;) {
    if (!Trim(lines[i]).empty()) rows.push_back(i);
  }
  return rows;
}

// The CLI's input prompt among the pane's bottom rows, or npos.
size_t PromptRow(const std::vector<std::string>& lines, const std::regex& ready) {
  for (size_t i : BottomRows(lines)) {
    if (std::regex_search(lines[i], ready)) return i;
  }
  return std::string::npos;
}

// The CLI says it is still working (Claude Code: "esc to interrupt").
bool LooksBusy(const std::vector<std::string>& lines, const std::string& busy_pattern) {
  if (busy_pattern.empty()) return false;
  std::regex busy(busy_pattern);
  for (size_t i : BottomRows(lines)) {
    if (std::regex_search(lines[i], busy)) return true;
  }
  return false;
}

// The first row that differs between two captures of one pane: everything
// above it is older than the send.
size_t FirstDifference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// A rule drawn with box characters, or nothing: the CLI's, not the reply.
bool IsRule(const std::string& row) {
  std::string t = Trim(row);
  if (t.empty()) return false;
  for (const char* piece : {"─", "━", "═", "-"}) {
    std::string p = piece;
    std::string rest = t;
    while (StartsWith(rest, p)) rest = rest.substr(p.size());
    if (rest.empty()) return true;
  }
  return false;
}

// A reply's rows without the CLI's chrome: prompt lines, rules, and the
// bullet a TUI puts before each message ("● ", "⏺ ", continuation rows
// indented under it).
std::string Unchrome(const std::vector<std::string>& body, const std::regex& ready) {
  std::vector<std::string> rows;
  for (const auto& l : body) {
    if (std::regex_search(l, ready) || IsRule(l)) continue;
    rows.push_back(l);
  }
  bool bulleted = false;
  for (const auto& r : rows) {
    if (Trim(r).empty()) continue;
    bulleted = StartsWith(r, "● ") || StartsWith(r, "⏺ ");
    break;
  }
  std::string out;
  for (auto r : rows) {
    if (bulleted) {
      if (StartsWith(r, "● ")) r = r.substr(std::string("● ").size());
      else if (StartsWith(r, "⏺ ")) r = r.substr(std::string("⏺ ").size());
      else if (StartsWith(r, "  ")) r = r.substr(2);
    }
    out += r + "\n";
  }
  return Trim(out);
}

void Sleep(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// The process still runs: it exists and is not a zombie waiting for its
// parent (tmux) to reap it.
bool Running(int pid) {
  if (::kill(pid, 0) != 0) return false;
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return true;
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] != 'Z';
}

}  // namespace

std::vector<std::string> CaptureLines(const std::string& raw) {
  // U+00A0 reads as the space it shows (Claude Code's prompt is "❯\u00a0").
  std::string capture;
  capture.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\xC2' && i + 1 < raw.size() && raw[i + 1] == '\xA0') {
      capture += ' ';
      ++i;
    } else {
      capture += raw[i];
    }
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= capture.size()) {
    size_t nl = capture.find('\n', start);
    if (nl == std::string::npos) {
      if (start < capture.size()) lines.push_back(TrimRight(capture.substr(start)));
      break;
    }
    lines.push_back(TrimRight(capture.substr(start, nl - start)));
    start = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

bool FindReply(const std::vector<std::string>& lines, size_t start, const std::string& input,
               const std::string& marker, const std::string& ready_pattern, std::string* reply) {
  // Where the echo of the input ends (the prompt row itself when the CLI
  // shows no echo we can find, e.g. a "[Pasted text]" placeholder).
  size_t echo_end = start;
  std::string last = LastInputLine(input);
  for (size_t i = start; i < lines.size(); ++i) {
    if (EndsEcho(lines[i], last)) {
      echo_end = i;
      break;
    }
  }
  std::regex ready(ready_pattern);
  for (size_t i = echo_end + 1; i < lines.size(); ++i) {
    size_t at = lines[i].find(marker);
    if (at == std::string::npos) continue;
    std::vector<std::string> body(lines.begin() + static_cast<long>(echo_end) + 1, lines.begin() + static_cast<long>(i));
    std::string marker_line = TrimRight(lines[i].substr(0, at) + lines[i].substr(at + marker.size()));
    if (!Trim(marker_line).empty()) body.push_back(marker_line);
    *reply = Unchrome(body, ready);
    return true;
  }
  return false;
}

Cluster::Cluster(ClusterConfig config) : config_(std::move(config)), tmux_(config_.socket()) {}

bool Cluster::IsUp() const { return tmux_.HasSession(config_.session); }

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

Result<std::string> Cluster::PaneOf(const std::string& agent) const {
  if (config_.Find(agent) == nullptr) {
    std::string names;
    for (const auto& a : config_.agents) names += (names.empty() ? "" : ", ") + a.name;
    return Status::NotFound("no agent '" + agent + "' in cluster " + config_.name + " (agents: " + names + ")");
  }
  auto data = ReadFile(config_.state_dir() / "state.json");
  if (!data.ok() || !IsUp()) {
    return Status::FailedPrecondition("cluster " + config_.name + " is not up (mates cluster up -c " +
                                      config_.config_file.string() + ")");
  }
  auto j = ParseJson(*data);
  if (!j.ok() || !j->contains("panes") || !(*j)["panes"].contains(agent)) {
    return Status::FailedPrecondition("the cluster's state file is damaged; run mates cluster down, then up");
  }
  return (*j)["panes"][agent].get<std::string>();
}

Result<std::string> Cluster::Exchange(const AgentConfig& a, const std::string& pane, const std::string& text,
                                      const Deadline& deadline) const {
  std::regex ready(a.ready_pattern);
  // 1. The CLI must be waiting for input, or what we type may be lost.
  std::vector<std::string> before;
  size_t prompt = std::string::npos;
  for (;;) {
    MATES_ASSIGN_OR_RETURN(std::string cap, tmux_.Capture(pane));
    before = CaptureLines(cap);
    prompt = PromptRow(before, ready);
    if (prompt != std::string::npos && !LooksBusy(before, a.busy_pattern)) break;
    if (Expired(deadline)) {
      return Status::Timeout(a.name + " is not ready for input (" +
                             (prompt == std::string::npos ? "its prompt never showed" : "it is still busy") + ")");
    }
    Sleep(kPollS);
  }
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
    Sleep(kPollS / 2);
  }
  MATES_RETURN_IF_ERROR(tmux_.SendKey(pane, "Enter"));
  // 3. The marker, after the echo.
  for (;;) {
    MATES_ASSIGN_OR_RETURN(std::string cap, tmux_.Capture(pane));
    std::vector<std::string> now = CaptureLines(cap);
    std::string reply;
    if (FindReply(now, new_from(now), text, a.marker, a.ready_pattern, &reply)) return reply;
    if (Expired(deadline)) {
      return Status::Timeout("no '" + a.marker + "' from " + a.name + " in time");
    }
    Sleep(kPollS);
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
  WarnIfFailed(Log(from, agent, "task", text), "the message log");
  auto reply = Exchange(a, pane, text, deadline);
  if (!reply.ok()) {
    WarnIfFailed(Log(agent, from, "error", reply.status().message()), "the message log");
    return reply.status();
  }
  WarnIfFailed(Log(agent, from, "result", *reply), "the message log");
  return reply;
}

Status Cluster::Route(const std::atomic<bool>& stop) {
  Workspace ws(config_.work_dir);
  fs::path team_dir = ws.TeamDir(config_.name);
  std::vector<std::thread> threads;
  for (const auto& agent : config_.agents) {
    threads.emplace_back([&, name = agent.name] {
     RunGuarded("router for " + name, [&] {
      // This router hosts the pane agent: its host lock says it is alive
      // (DESIGN §10), and a second router leaves it alone.
      (void)EnsureDir(ws.AgentsDir(config_.name));
      auto host = FileLock::TryAcquire(ws.AgentsDir(config_.name) / (name + ".lock"));
      if (!host.ok()) {
        LogWarning("router: " + name + " is routed by another process already; not routing it here");
        return;
      }
      auto waker = std::make_shared<Waker>();
      auto sub = Watcher::Default().Subscribe(team_dir, Workspace::InboxFileName(name), waker);
      if (!sub.ok()) LogWarning("router: cannot watch " + name + "'s inbox (" + sub.status().message() + "); looking every second");
      Mailbox box(team_dir, name);
      while (!stop.load()) {
        uint64_t g = waker->generation();
        if (box.MayHavePending()) {
          auto batch = box.BeginDrain();
          if (batch.ok()) {
            // The agent is at work for someone: a lead waiting on its team
            // sees it (and `mates team show`).
            WarnIfFailed(Roster(ws).SetStatus(config_.name, name, MemberStatus::kActive), name + "'s status");
            for (const auto& m : batch->messages) {
              // An answer the router brought back (it names the message it
              // answers) is delivered, and what the agent says to it stays
              // in the log: answering answers would never end.
              const bool answer = m.type == MessageType::kMessage && !m.request_id.empty();
              std::string text = answer ? "Reply from " + m.sender + " to your message: " + m.content
                                        : "Message from " + m.sender + " (" + std::string(MessageTypeName(m.type)) +
                                              (m.summary.empty() ? "" : ", " + m.summary) + "): " + m.content;
              auto reply = Send(m.sender, name, text);
              if (answer) continue;
              SendRequest back;
              back.sender = name;
              back.recipient = m.sender;
              back.summary = "reply from " + name;
              back.request_id = m.id;
              back.content = reply.ok() ? *reply : "(no reply: " + reply.status().message() + ")";
              auto sent = Messenger(ws, config_.name).Send(back);
              WarnIfFailed(sent.status(), name + "'s reply to " + m.sender);
            }
            WarnIfFailed(box.Commit(*batch), name + "'s inbox");
            WarnIfFailed(Roster(ws).SetStatus(config_.name, name, MemberStatus::kIdle), name + "'s status");
            continue;
          }
          LogWarning("router: " + name + "'s inbox: " + batch.status().message());
        }
        waker->WaitChange(g, DeadlineIn(1));
      }
     });
    });
  }
  for (auto& t : threads) t.join();
  return Status::Ok();
}

Result<std::vector<std::string>> Cluster::PrepareFirstRun() const {
  std::vector<std::string> notes;
  std::set<std::pair<fs::path, std::string>> done;
  for (const auto& a : config_.agents) {
    if (a.first_run != FirstRun::kClaudeCode) continue;
    auto file = ClaudeConfigFile(a.env);
    if (!file.ok()) return file.status().WithContext(a.name);
    std::string key = EnvOf(a.env, "ANTHROPIC_API_KEY");
    if (!done.insert({*file, key}).second) continue;
    auto changed = PrepareClaudeCode(*file, config_.work_dir, key);
    if (!changed.ok()) return changed.status().WithContext(a.name + ": Claude Code's first-run answers");
    if (changed->empty()) continue;
    std::string what;
    for (const auto& c : *changed) what += (what.empty() ? "" : ", ") + c;
    notes.push_back("Claude Code's first-run answers in " + file->string() + ": " + what);
  }
  return notes;
}

Result<std::vector<AgentReadiness>> Cluster::Up(const std::function<void(const AgentReadiness&)>& progress,
                                                const std::function<void(const std::string&)>& notice) {
  if (IsUp()) {
    return Status::AlreadyExists("cluster " + config_.name + " is already up (session " + config_.session +
                                 "); mates cluster down first");
  }
  MATES_RETURN_IF_ERROR(EnsureDir(config_.state_dir()));
  // Before any pane starts: a question on screen is an agent that never
  // comes up.
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> notes, PrepareFirstRun());
  for (const auto& n : notes) {
    WarnIfFailed(Log("mates", config_.name, "info", n), "the message log");
    if (notice) notice(n);
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);  // this mates
  Json state;
  state["socket"] = config_.socket();
  state["session"] = config_.session;
  state["started_at"] = IsoTime(WallSeconds());
  state["panes"] = Json::object();
  auto launch_of = [&](const AgentConfig& a) {
    Launch l;
    l.cwd = config_.work_dir.string();
    l.argv = a.command;
    l.env = a.env;
    l.env["MATES_TEAM"] = config_.name;
    l.env["MATES_AGENT_NAME"] = a.name;
    l.env["MATES_WORKSPACE"] = config_.work_dir.string();
    // `mates send` and `mates tasks` work from the agent's shell tool.
    std::string path = EnvOf(a.env, "PATH");
    if (!self.empty()) l.env["PATH"] = self.parent_path().string() + (path.empty() ? "" : ":" + path);
    return l;
  };
  for (size_t i = 0; i < config_.agents.size(); ++i) {
    const AgentConfig& a = config_.agents[i];
    auto pane = i == 0 ? tmux_.NewSession(config_.session, launch_of(a)) : tmux_.SplitWindow(config_.session, launch_of(a));
    if (!pane.ok()) {
      WarnIfFailed(tmux_.KillServer(), "stopping the half-started session");
      return pane.status().WithContext("starting " + a.name);
    }
    state["panes"][a.name] = *pane;
  }
  MATES_RETURN_IF_ERROR(WriteFileAtomic(config_.state_dir() / "state.json", DumpJsonPretty(state)));
  // The router lives in the session (it goes down with it).
  if (!self.empty()) {
    Launch r;
    r.cwd = config_.work_dir.string();
    r.argv = {self.string(), "cluster", "route", "-c", config_.config_file.string()};
    auto router = tmux_.NewWindow(config_.session, "router", r);
    if (!router.ok()) return router.status().WithContext("starting the router");
  }
  // The agents are members of the team named after the cluster (backend
  // tmux), so `mates send` and teams reach them.
  Roster roster(Workspace(config_.work_dir));
  if (!roster.Load(config_.name).ok()) MATES_RETURN_IF_ERROR(roster.CreateTeam(config_.name).status());
  for (const auto& a : config_.agents) {
    Member m;
    m.name = a.name;
    m.role = MemberRole::kTeammate;
    m.backend = MemberBackend::kTmux;
    m.prompt = a.role;
    auto added = roster.AddMember(config_.name, m);
    if (!added.ok()) {
      if (added.status().code() != StatusCode::kAlreadyExists) return added.status().WithContext("adding " + a.name + " to the team");
      MATES_RETURN_IF_ERROR(roster.SetStatus(config_.name, a.name, MemberStatus::kIdle));
    }
  }
  // Handshakes, in parallel: ready only once the agent answered with its
  // marker (the marker in its command line does not count: it is older
  // than the handshake).
  std::vector<AgentReadiness> out(config_.agents.size());
  std::vector<std::thread> threads;
  std::mutex mu;
  for (size_t i = 0; i < config_.agents.size(); ++i) {
    threads.emplace_back([&, i] { RunGuarded("the handshake with " + config_.agents[i].name, [&] {
      const AgentConfig& a = config_.agents[i];
      auto t0 = SteadyClock::now();
      AgentReadiness r;
      r.agent = a.name;
      std::string text = "You are " + a.name + " (" + a.role + ") in the cluster " + config_.name +
                         ". Reply with your marker to confirm you are ready.";
      auto reply = Send("mates", a.name, text, config_.startup_timeout_s);
      r.seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
      r.ready = reply.ok();
      if (!reply.ok()) r.error = reply.status().message();
      std::lock_guard<std::mutex> lock(mu);
      out[i] = r;
      if (progress) progress(r);
    }); });
  }
  for (auto& t : threads) t.join();
  return out;
}

Result<std::vector<AgentStatus>> Cluster::AgentStatuses() const {
  std::vector<AgentStatus> out;
  auto data = ReadFile(config_.state_dir() / "state.json");
  Json panes = Json::object();
  if (data.ok()) {
    auto j = ParseJson(*data);
    if (j.ok() && j->contains("panes")) panes = (*j)["panes"];
  }
  std::vector<PaneInfo> live;
  if (IsUp()) {
    auto l = tmux_.ListPanes(config_.session);
    if (l.ok()) live = *l;
  }
  // Last activity per agent, from the message log.
  std::map<std::string, std::string> last;
  auto log = ReadFile(config_.log_file);
  if (log.ok()) {
    for (const auto& line : CaptureLines(*log)) {
      auto j = ParseJson(line);
      if (!j.ok()) continue;
      std::string ts = j->value("timestamp", "");
      last[j->value("from", "")] = ts;
      last[j->value("to", "")] = ts;
    }
  }
  for (const auto& a : config_.agents) {
    AgentStatus s;
    s.name = a.name;
    s.role = a.role;
    s.reports_to = a.reports_to;
    s.pane = panes.contains(a.name) ? panes[a.name].get<std::string>() : "";
    for (const auto& p : live) s.alive |= p.id == s.pane && !p.dead;
    if (s.alive) {
      auto lock = FileLock::TryAcquire(config_.state_dir() / (a.name + ".busy"));
      s.busy = !lock.ok();
    }
    s.last_activity = last.count(a.name) ? last[a.name] : "";
    out.push_back(s);
  }
  return out;
}

Status Cluster::Down() {
  std::vector<int> pids;
  if (IsUp()) {
    auto panes = tmux_.ListPanes(config_.session);
    if (panes.ok()) {
      for (const auto& p : *panes) {
        if (!p.dead && p.pid > 0) pids.push_back(p.pid);
      }
    }
  } else if (!fs::exists(config_.state_dir() / "state.json")) {
    return Status::FailedPrecondition("cluster " + config_.name + " is not up");
  }
  // The agents first (their whole process groups), then the server.
  for (int pid : pids) {
    ::kill(-pid, SIGTERM);
    ::kill(pid, SIGTERM);
  }
  Deadline grace = DeadlineIn(2);
  for (int pid : pids) {
    while (Running(pid) && !Expired(grace)) Sleep(0.02);
    if (Running(pid)) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
  WarnIfFailed(tmux_.KillServer(), "killing the tmux server");
  std::error_code ec;
  fs::remove(config_.state_dir() / "state.json", ec);
  // Nobody waits on the pane agents any more (their inboxes are kept).
  Roster roster{Workspace(config_.work_dir)};
  for (const auto& a : config_.agents) {
    WarnIfFailed(roster.SetStatus(config_.name, a.name, MemberStatus::kShutdown), a.name + "'s status");
  }
  return Status::Ok();
}

}  // namespace mates::tmux
