// mates mcp [--team T] [--as NAME]: the team as an MCP server on stdio
// (DESIGN §14). One JSON-RPC message per line in and out; stdout carries
// nothing else (diagnostics go to stderr). Ends when stdin does.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>

#include "cli/cli_common.h"
#include "core/names.h"
#include "mcp/team_tools.h"
#include "store/messenger.h"

namespace mates::cli {
namespace {

struct McpArgs {
  std::string team;
  std::string as;
};

// Writes all of `data` to `fd`; false once the reader is gone.
bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int Serve(Globals& g, const McpArgs& a) {
  if (a.team.empty()) return Usage("which team? give --team or set MATES_TEAM");
  if (Status s = ValidateName("team name", a.team); !s.ok()) return Fail(s);
  std::string as = a.as;
  if (as.empty()) {
    // An agent's shell has MATES_AGENT_NAME; otherwise the team's lead.
    auto member = DefaultMember(g.ws(), a.team);
    if (!member.ok()) return Fail(member.status());
    as = *member;
  }
  if (as != kUserName) {
    if (Status s = ValidateName("member name", as); !s.ok()) return Fail(s);
  }
  // A client that goes away mid-answer is an ended session, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  mcp::TeamIdentity who{g.ws(), a.team, as};
  std::atomic<bool> client_gone{false};
  mcp::Server::Options options;
  options.version = "0.1.0";
  options.instructions = mcp::TeamInstructions(who);
  mcp::Server server(options, mcp::TeamTools(who), [&](const std::string& frame) {
    if (!WriteAll(STDOUT_FILENO, frame + "\n")) client_gone.store(true);
  });
  // Lines of at most kMaxFrameBytes; a longer one is answered with one
  // error and skipped to its end.
  std::string line;
  bool skipping = false;
  char buf[64 << 10];
  while (!client_gone.load()) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buf[i] != '\n') continue;
      if (!skipping) {
        line.append(buf + start, i - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) server.HandleFrame(line);
      }
      line.clear();
      skipping = false;
      start = i + 1;
    }
    if (!skipping) {
      line.append(buf + start, static_cast<size_t>(n) - start);
      if (line.size() > mcp::kMaxFrameBytes) {
        server.HandleFrame(line);  // answered: too long
        line.clear();
        line.shrink_to_fit();
        skipping = true;
      }
    }
  }
  // A last message without its newline is still one.
  if (!skipping && !line.empty() && !client_gone.load()) server.HandleFrame(line);
  server.Shutdown();
  return 0;
}

}  // namespace

void AddMcpCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<McpArgs>();
  CLI::App* mcp = app.add_subcommand(
      "mcp", "Serve the team to an external agent over MCP (stdio): messages and the task board as tools");
  mcp->add_option("--team", a->team, "Team name")->envname("MATES_TEAM");
  mcp->add_option("--as", a->as, "The member the agent is (default: $MATES_AGENT_NAME, else the team's lead)");
  mcp->callback([&g, a] {
    if (!g.action) g.action = [&g, a] { return Serve(g, *a); };
  });
}

}  // namespace mates::cli
