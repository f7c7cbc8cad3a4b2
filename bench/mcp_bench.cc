// MCP round trips (DESIGN §14), each next to what it replaces:
//  1. an external agent's message through `mates mcp` (tools/call
//     send_message over stdio, answer included) vs shelling out to
//     `mates send` (what pane agents did before), with a ping as the floor;
//  2. a mates agent's call to a stdio MCP server (server-everything's echo
//     through the Hub: the session is shared and kept) vs starting the
//     server for each call (spawn, initialize, list, call).
//
//   mcp_bench MATES_BINARY [SERVER_EVERYTHING_BINARY] [--quick]
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "mcp/hub.h"
#include "store/roster.h"

using namespace mates;
using bench::NowNs;
using bench::Percentile;

namespace {

void Print(const char* what, const std::vector<double>& ms) {
  std::printf("  %-62s p50 %8.3f ms   p99 %8.3f ms   (n=%zu)\n", what, Percentile(ms, 50), Percentile(ms, 99),
              ms.size());
}

// One request written, its answer read back (the server answers in order).
double RoundTrip(Subprocess& p, const std::string& frame) {
  int64_t t0 = NowNs();
  if (!p.WriteStdin(frame + "\n", DeadlineIn(10)).ok()) return -1;
  auto line = p.ReadLine(DeadlineIn(10));
  if (!line.ok()) return -1;
  return static_cast<double>(NowNs() - t0) / 1e6;
}

void ServerSide(const std::string& mates, int n) {
  char tmpl[] = "/tmp/mates-mcp-bench-XXXXXX";
  fs::path ws = ::mkdtemp(tmpl);
  Roster roster{Workspace(ws)};
  (void)roster.CreateTeam("t", "lead");
  Member w1;
  w1.name = "w1";
  (void)roster.AddMember("t", w1);

  SubprocessOptions o;
  o.argv = {mates, "--workspace", ws.string(), "mcp", "--team", "t", "--as", "w1"};
  o.interactive = true;
  o.timeout_s = 5;
  auto p = Subprocess::Start(o);
  if (!p.ok()) {
    std::printf("  cannot start mates mcp: %s\n", p.status().message().c_str());
    return;
  }
  RoundTrip(*p, R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})");
  (void)p->WriteStdin("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n", DeadlineIn(5));
  std::vector<double> ping, send, shell;
  for (int i = 1; i <= n; ++i) {
    ping.push_back(RoundTrip(*p, "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(i) + ",\"method\":\"ping\"}"));
  }
  for (int i = 1; i <= n; ++i) {
    Json call = {{"jsonrpc", "2.0"},
                 {"id", 100000 + i},
                 {"method", "tools/call"},
                 {"params", {{"name", "send_message"}, {"arguments", {{"recipient", "lead"}, {"content", "status " + std::to_string(i)}}}}}};
    send.push_back(RoundTrip(*p, DumpJson(call)));
  }
  (void)p->Wait();
  for (int i = 0; i < n; ++i) {
    SubprocessOptions s;
    s.argv = {mates, "--workspace", ws.string(), "send", "--team", "t", "--from", "w1", "--to", "lead", "status"};
    int64_t t0 = NowNs();
    auto r = RunSubprocess(s);
    if (r.ok() && r->exit_code == 0) shell.push_back(static_cast<double>(NowNs() - t0) / 1e6);
  }
  Print("ping through mates mcp (the floor)", ping);
  Print("send_message through mates mcp (tools/call, stdio)", send);
  Print("baseline: `mates send` from the shell (a process per message)", shell);
  std::error_code ec;
  fs::remove_all(ws, ec);
}

void ClientSide(const std::string& everything, int n) {
  char tmpl[] = "/tmp/mates-mcp-bench-XXXXXX";
  fs::path ws = ::mkdtemp(tmpl);
  mcp::ServerConfig c;
  c.name = "everything";
  c.argv = {everything};
  auto hub = std::make_shared<mcp::Hub>(Workspace(ws), std::vector<mcp::ServerConfig>{c});
  hub->Start();
  std::vector<double> shared, cold;
  for (int i = 0; i < n; ++i) {
    int64_t t0 = NowNs();
    auto r = hub->Call("everything", "echo", Json{{"message", "hi " + std::to_string(i)}}, nullptr);
    if (!r.is_error) shared.push_back(static_cast<double>(NowNs() - t0) / 1e6);
  }
  hub.reset();
  int cold_n = std::max(3, n / 50);
  for (int i = 0; i < cold_n; ++i) {
    int64_t t0 = NowNs();
    auto h = std::make_shared<mcp::Hub>(Workspace(ws), std::vector<mcp::ServerConfig>{c});
    h->Start();
    auto r = h->Call("everything", "echo", Json{{"message", "cold"}}, nullptr);
    if (!r.is_error) cold.push_back(static_cast<double>(NowNs() - t0) / 1e6);
  }
  Print("echo from a mates agent to server-everything (Hub, shared)", shared);
  Print("naive: the server started for the call (spawn+init+list+call)", cold);
  std::error_code ec;
  fs::remove_all(ws, ec);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (args.empty()) {
    std::fprintf(stderr, "usage: mcp_bench MATES_BINARY [SERVER_EVERYTHING_BINARY] [--quick]\n");
    return 2;
  }
  const int n = quick ? 100 : 1000;
  std::printf("mates mcp: an external agent's calls\n");
  ServerSide(args[0], n);
  std::printf("mates agents calling an MCP server\n");
  if (args.size() < 2 || ::access(args[1].c_str(), X_OK) != 0) {
    std::printf("  *** SKIPPED: server-everything is not installed (scripts/setup-mcp) ***\n");
    return 0;
  }
  ClientSide(fs::absolute(args[1]).string(), quick ? 100 : 1000);
  return 0;
}
