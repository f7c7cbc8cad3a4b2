// What the CLI shows of a session (see session_view.h).
#include "cli/session_view.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "cli/cli_common.h"
#include "core/clock.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/waker.h"
#include "store/liveness.h"
#include "store/messenger.h"

namespace mates::cli {
namespace {

// Lines typed at the REPL, read from stdin beside the session's stop fd:
// a stopping session is never stuck in a read.
class LineReader {
 public:
  explicit LineReader(int stop_fd) : stop_fd_(stop_fd) {}
  // The next line (without '\n'); nullopt at the end of input or when the
  // session stops.
  std::optional<std::string> Next() {
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      if (eof_) {
        if (buf_.empty()) return std::nullopt;
        std::string line = std::move(buf_);
        buf_.clear();
        return line;
      }
      struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      int rc = ::poll(fds, 2, -1);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || (fds[1].revents & POLLIN) != 0) return std::nullopt;
      char chunk[4096];
      ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof_ = true;
      } else {
        buf_.append(chunk, static_cast<size_t>(n));
      }
    }
  }

 private:
  int stop_fd_;
  std::string buf_;
  bool eof_ = false;
};

// Announces messages for the lead that arrive while the person types (they
// reach the lead at its next turn), on a thread of its own. The lead's team
// is read from the TeamManager (TeamCreate moves it).
class InboxNotifier {
 public:
  InboxNotifier(std::string agent, team::TeamManager& teams, LiveOutput& out, const host::SessionSignals& signals)
      : agent_(std::move(agent)), teams_(teams), out_(out), signals_(signals) {
    thread_ = std::thread([this] {
      NameThisThread("mates-notifier");
      RunGuarded("the inbox notifier", [this] { Main(); });
    });
  }
  ~InboxNotifier() {
    done_.store(true);
    waker_->Notify();
    thread_.join();
  }

 private:
  void Main() {
    size_t shown = 0;
    std::string watched;
    std::unique_ptr<Hold> sub;
    while (!done_.load()) {
      std::string team = teams_.place().team();
      if (team != watched) {
        auto s = teams_.store().InboxOf(team, agent_)->WatchWith(waker_);
        sub = s.ok() ? std::move(*s) : nullptr;
        watched = team;
        shown = 0;
      }
      uint64_t g = waker_->generation();
      auto n = teams_.store().InboxOf(team, agent_)->PendingCount();
      if (n.ok() && *n > shown && !signals_.turn_running()) {
        out_.Line("", "✉ " + std::to_string(*n) + " new message(s) for " + agent_ +
                          " (they reach the lead with your next line; /inbox shows them)");
      }
      if (n.ok()) shown = *n;
      // The team can change under a lead turn: look again now and then.
      waker_->WaitChange(g, DeadlineIn(sub ? 2.0 : 0.5));
    }
  }

  const std::string agent_;
  team::TeamManager& teams_;
  LiveOutput& out_;
  const host::SessionSignals& signals_;
  const std::shared_ptr<Waker> waker_ = std::make_shared<Waker>();
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// A slash command's answer (printed by the loop); nullopt for a line that
// is no command.
std::optional<std::string> Command(host::Session& session, LiveOutput& out, const std::string& line) {
  tools::ToolContext& ctx = session.host().lead_context();
  TeamStore& store = session.host().teams().store();
  if (line == "/help") return "/team  /inbox  /tasks  /send NAME TEXT  /compact  /usage  /quit\n";
  if (line == "/team") {
    auto c = store.LoadTeam(ctx.team);
    if (!c.ok()) return c.status().message() + "\n";
    std::string text = "team " + c->name + "\n";
    for (const auto& m : c->members) {
      bool hosted = m.status == MemberStatus::kShutdown || store.IsHosted(c->name, m.name);
      text += "  " + m.name + "  " + std::string(MemberRoleName(m.role)) + "  " + std::string(ShownStatus(m, hosted)) +
              "\n";
    }
    return text;
  }
  if (line == "/inbox") {
    auto msgs = store.InboxOf(ctx.team, ctx.agent)->Peek();
    if (!msgs.ok()) return "";
    if (msgs->empty()) return "(no new messages)\n";
    std::string text;
    for (const auto& m : *msgs) text += FormatMessage(m) + "\n";
    return text;
  }
  if (line == "/tasks") {
    auto tasks = store.Board(ctx.team)->List(false);
    if (!tasks.ok()) return "";
    if (tasks->empty()) return "(no tasks)\n";
    std::string text;
    for (const auto& t : *tasks) text += FormatTaskLine(t) + "\n";
    return text;
  }
  if (line.rfind("/send ", 0) == 0) {
    std::string rest = line.substr(6);
    size_t sp = rest.find(' ');
    if (sp == std::string::npos) return "usage: /send NAME TEXT\n";
    SendRequest r;
    r.sender = ctx.agent;
    r.recipient = rest.substr(0, sp);
    r.content = rest.substr(sp + 1);
    auto receipt = Messenger(*store.Mail(ctx.team)).Send(r);
    return (receipt.ok() ? "sent to " + r.recipient : receipt.status().message()) + "\n";
  }
  if (line == "/compact") {
    Status s = session.host().lead().Compact();
    return s.ok() ? "" : "compaction failed: " + s.message() + "\n";
  }
  if (line == "/usage") {
    for (const auto& l : session.UsageLines()) out.Line("", l);
    return "";
  }
  if (line[0] == '/') return "unknown command " + line + " (/help)\n";
  return std::nullopt;
}

}  // namespace

host::SessionOutput SessionOutputTo(LiveOutput& out) {
  host::SessionOutput output;
  output.events = &out;
  output.say = [&out](const std::string& text) { out.Line("", text); };
  output.on_spawn = [&out](const Member& m) {
    out.SetColor(m.name, m.color);
    out.SetMulti(true);
  };
  return output;
}

void Repl(host::Session& session, LiveOutput& out, const std::string& provider_name) {
  tools::ToolContext& ctx = session.host().lead_context();
  host::SessionSignals& signals = session.signals();
  const std::string& mates = session.options().mates;
  std::cout << "mates REPL — lead '" << ctx.agent << "' of team " << ctx.team << ", " << provider_name << " ("
            << session.host().lead().model() << "), workspace " << ctx.ws.root().string()
            << "\nType a goal, or /help; /quit (or Ctrl-D) ends it. Others reach the lead with: " << mates
            << " send --team " << ctx.team << " --to " << ctx.agent << " TEXT" << std::endl;
  InboxNotifier notifier(ctx.agent, session.host().teams(), out, signals);
  const bool tty = ::isatty(STDIN_FILENO) == 1;
  LineReader reader(signals.stop_fd());
  for (;;) {
    if (tty) std::cout << "mates> " << std::flush;
    std::cout << std::flush;  // what the last line printed, also into a pipe, before waiting for the next
    auto next = reader.Next();
    if (!next) break;
    const std::string& line = *next;
    signals.ResetInterrupts();
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (auto answer = Command(session, out, line)) {
      std::cout << *answer;
      continue;
    }
    auto r = session.Prompt(line);
    if (!r.ok()) std::cerr << "mates: error: " << r.status().message() << std::endl;
    if (signals.exit_code() != 0) break;
  }
}

int SessionExit(const host::SessionResult& r) {
  if (r.status.ok()) return r.exit_code;
  const int code = Fail(r.status);
  return r.exit_code != 0 ? r.exit_code : code;
}

}  // namespace mates::cli
