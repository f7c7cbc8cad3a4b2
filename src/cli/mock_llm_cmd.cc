// mates mock-llm --scenario FILE [--port P] [--fault SPEC]... [--model GLOB]... [--record FILE] [--quiet]
#include <signal.h>

#include <iostream>

#include "cli/cli_common.h"
#include "llm/mock_server.h"

namespace mates::cli {
namespace {

struct MockArgs {
  std::string scenario;
  int port = 0;
  std::vector<std::string> faults;
  std::vector<std::string> models;
  std::string record;
  bool quiet = false;
};

int MockLlm(const MockArgs& a) {
  if (a.port < 0 || a.port > 65535) return Usage("--port must be 0..65535");
  llm::MockServerOptions o;
  o.port = a.port;
  o.record_path = a.record;
  o.log_requests = !a.quiet;
  o.models = a.models;
  for (const auto& spec : a.faults) {
    auto f = llm::ParseFaultSpec(spec);
    if (!f.ok()) return Fail(f.status());
    o.faults.push_back(*f);
  }
  // Everything is checked before the server listens.
  auto scenario = llm::Scenario::Load(a.scenario);
  if (!scenario.ok()) return Fail(scenario.status());
  // Wait for SIGINT/SIGTERM in this thread while the server serves.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto server = llm::MockServer::Start(std::make_shared<llm::Scenario>(std::move(*scenario)), o);
  if (!server.ok()) return Fail(server.status());
  std::cout << "listening on " << (*server)->url() << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Stop();
  if (!a.quiet) std::cerr << "mates mock-llm: stopped after " << (*server)->requests() << " requests" << std::endl;
  return 0;
}

}  // namespace

void AddMockLlmCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<MockArgs>();
  CLI::App* cmd = app.add_subcommand(
      "mock-llm",
      "Serve a scenario on 127.0.0.1 as the Anthropic Messages, OpenAI Chat, OpenAI Responses and Gemini APIs");
  cmd->add_option("--scenario", a->scenario, "Scenario file (JSON or YAML)")->required();
  cmd->add_option("--port", a->port, "Port (0 = any free port)")->capture_default_str();
  cmd->add_option("--fault", a->faults,
                  "status=CODE[:first=N|:every=N][:retry_after=S], cut_stream_after=N, stall_after=N, "
                  "error_event_after=N (repeatable)");
  cmd->add_option("--model", a->models,
                  "Serve only models matching this glob (repeatable; default: any); others get the API's 404");
  cmd->add_option("--record", a->record, "Append every request to this JSONL file");
  cmd->add_flag("--quiet", a->quiet, "No line per request on stderr");
  cmd->callback([&g, a] { g.action = [a] { return MockLlm(*a); }; });
}

}  // namespace mates::cli
