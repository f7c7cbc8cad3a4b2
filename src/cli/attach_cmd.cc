// mates attach [--team T]
//
// The person's terminal joins a hosted lead's conversation (DESIGN §27):
// over the host's levers' socket (host/levers.h, host/attach.h), what the
// team does is shown as `mates run` shows it, and each line typed goes to
// the lead as the person's message. Ctrl-C interrupts the lead's turn (two
// within a second and a half detach); Ctrl-D, /quit or /detach detaches.
// The host goes on either way.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_common.h"
#include "cli/live_output.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/names.h"
#include "core/unix_socket.h"
#include "host/attach.h"
#include "host/levers.h"
#include "store/host_info.h"
#include "store/team_store.h"

namespace mates::cli {
namespace {

constexpr double kHelloSeconds = 10;
constexpr double kDoubleInterruptSeconds = 1.5;

// A string field of what the host sent, or `otherwise`.
std::string Field(const Json& e, const char* key, const std::string& otherwise = "") {
  auto s = JsonString(e, key, false);
  return s.ok() && !s->empty() ? *s : otherwise;
}

// An event from the host, shown; false for what is not one.
bool Show(const Json& e, LiveOutput& out) {
  auto field = [&](const char* key) { return Field(e, key); };
  const std::string ev = field("ev");
  const std::string agent = field("agent");
  if (ev == "text") {
    out.OnText(agent, field("text"));
  } else if (ev == "text_end") {
    out.OnTextEnd(agent);
  } else if (ev == "tool_call") {
    out.ShowCall(agent, field("call"));
  } else if (ev == "tool_result") {
    const auto flag = e.find("error");
    const bool error = flag != e.end() && flag->is_boolean() && flag->get<bool>();
    out.ShowResult(agent, field("call"), field("result"), error);
  } else if (ev == "message") {
    Message m;
    m.sender = field("from");
    auto type = ParseMessageType(field("type"));
    m.type = type.ok() ? *type : MessageType::kMessage;
    m.summary = field("about");
    out.OnMessages(agent, {m});
  } else if (ev == "line") {
    out.Line(agent, field("text"));
  } else {
    return false;
  }
  return true;
}

// SIGINT as a descriptor, blocked for every thread from here on.
Result<ScopedFd> InterruptsAsFd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return Status::Internal("cannot block SIGINT");
  int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) return Status::FromErrno("signalfd", errno);
  return ScopedFd(fd);
}

int Attach(Globals& g) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  auto store = OpenChosenStore(g, g.store, g.ws());
  if (!store.ok()) return Fail(store.status());
  auto team = (*store)->LoadTeam(g.team);
  if (!team.ok()) return Fail(team.status());
  auto host = LeverHost(g, **store);
  if (!host.ok()) return Fail(host.status());
  if (host->lead.empty()) {
    return Fail(Status::FailedPrecondition("the host of team '" + g.team + "' runs its teammates only: `" +
                                           g.Mates() + " ps` shows where its lead is"));
  }
  auto interrupts = InterruptsAsFd();
  if (!interrupts.ok()) return Fail(interrupts.status());

  auto conn = ConnectUnix(host->control);
  if (!conn.ok()) {
    return Fail(Status::Unavailable("the team's host does not answer at " + host->control + " (" +
                                    conn.status().message() + ")"));
  }
  const int fd = conn->get();
  if (!SendAllTo(fd, host::LeverRequestLine({"attach", g.team, host->lead, ""}))) {
    return Fail(Status::Unavailable("the team's host closed the connection"));
  }
  SocketLines from_host(fd);
  std::string hello;
  if (from_host.Next(&hello, host::AttachHub::kMaxLineBytes, DeadlineIn(kHelloSeconds)) !=
      SocketLines::Got::kLine) {
    return Fail(Status::Unavailable("the team's host did not answer"));
  }
  auto answer = ParseJson(hello);
  std::optional<bool> ok;
  if (answer.ok() && answer->is_object()) {
    if (auto it = answer->find("ok"); it != answer->end() && it->is_boolean()) ok = it->get<bool>();
  }
  if (!ok) return Fail(Status::Unavailable("the team's host answered what is not an answer"));
  if (!*ok) {
    return Fail(Status::FailedPrecondition(Field(*answer, "error", "refused")));
  }

  LiveOutput out(WantColor(), /*multi=*/true);
  for (const auto& m : team->members) out.SetColor(m.name, m.color);
  out.Line("", Field(*answer, "said", "attached") + "; /help for more");

  // The host's events, on a thread of their own; the end of them wakes
  // the terminal's loop.
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return Fail(Status::FromErrno("pipe", errno));
  ScopedFd gone_r(ends[0]), gone_w(ends[1]);
  std::thread events([&] {
    std::string line;
    while (from_host.Next(&line, host::AttachHub::kMaxLineBytes, std::nullopt) == SocketLines::Got::kLine) {
      auto e = ParseJson(line);
      if (e.ok() && e->is_object()) Show(*e, out);
    }
    (void)!::write(gone_w.get(), "x", 1);
  });

  auto send = [&](const Json& j) { return SendAllTo(fd, DumpJson(j) + "\n"); };
  std::string typed;
  bool host_went = false;
  std::optional<SteadyClock::time_point> last_interrupt;
  for (bool attached = true; attached;) {
    struct pollfd p[3] = {{STDIN_FILENO, POLLIN, 0}, {interrupts->get(), POLLIN, 0}, {gone_r.get(), POLLIN, 0}};
    int rc = ::poll(p, 3, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) break;
    if ((p[2].revents & (POLLIN | POLLHUP)) != 0) {
      host_went = true;
      break;
    }
    if ((p[1].revents & POLLIN) != 0) {
      signalfd_siginfo si;
      while (::read(interrupts->get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      }
      const auto now = SteadyClock::now();
      if (last_interrupt && now - *last_interrupt < std::chrono::duration<double>(kDoubleInterruptSeconds)) break;
      last_interrupt = now;
      send(Json{{"interrupt", true}});
      out.Line("", "(Ctrl-C again within 1.5 s detaches; the host goes on)");
      continue;
    }
    if ((p[0].revents & (POLLIN | POLLHUP)) == 0) continue;
    char chunk[4096];
    ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // Ctrl-D; a last line without its newline is still said
      if (!typed.empty() && typed.size() <= kMaxMessageBytes) send(Json{{"say", typed}});
      break;
    }
    typed.append(chunk, static_cast<size_t>(n));
    for (size_t nl; attached && (nl = typed.find('\n')) != std::string::npos;) {
      std::string line = typed.substr(0, nl);
      typed.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (line == "/quit" || line == "/detach" || line == "/exit") {
        attached = false;
      } else if (line == "/help") {
        out.Line("", "a line goes to the lead as your message; Ctrl-C interrupts its turn; Ctrl-D, /quit or "
                     "/detach detaches (the host goes on). `" + g.Mates() + " logs -f`, `" + g.Mates() +
                     " status` and the page show the rest.");
      } else if (line.size() > kMaxMessageBytes) {
        out.Line("", "not sent: a message may be " + std::to_string(kMaxMessageBytes) + " bytes at most");
      } else if (!send(Json{{"say", line}})) {
        host_went = true;
        attached = false;
      }
    }
  }
  ::shutdown(fd, SHUT_RDWR);
  events.join();
  if (host_went) {
    out.Line("", "the host of team " + g.team + " went away (`" + g.Mates() + " ps` shows what runs)");
    return 1;
  }
  out.Line("", "detached: team " + g.team + " goes on (`" + g.Mates() + " attach --team " + g.team +
                   "` comes back, `" + g.Mates() + " down --team " + g.team + "` stops it)");
  return 0;
}

}  // namespace

void AddAttachCommand(CLI::App& app, Globals& g) {
  CLI::App* cmd = app.add_subcommand(
      "attach", "Join the hosted lead's conversation from this terminal (Ctrl-C interrupts it, Ctrl-D detaches)");
  AddTeamOption(cmd, g);
  AddStoreOption(cmd, g);
  cmd->callback([&g] { g.action = [&g] { return Attach(g); }; });
}

}  // namespace mates::cli
