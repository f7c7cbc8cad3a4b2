// agent_bench: the agent loop's own cost per turn (everything but the
// model's latency) and memory per agent.
//
// One turn = one model call whose reply asks for a cheap tool (read_file of
// a small file), the tool run, its result appended, journaled. Measured at
// growing conversation lengths, with:
//   scripted  the scripted provider at 0 ms (it validates every request the
//             way the API would, which costs what a real request body does);
//   zero      a provider that answers at once, to see the loop alone;
//   seed      a seed-style loop (append, call, run the tool; no journal, no
//             validation, no context management) on the zero provider.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent_loop.h"
#include "bench_util.h"
#include "core/files.h"
#include "llm/scripted.h"
#include "store/roster.h"
#include "support/test_env.h"
#include "tools/builtin_tools.h"

using namespace mates;
using namespace mates::bench;
namespace fs = std::filesystem;

namespace {

// Answers every call with a read_file of note.txt, instantly.
class ZeroProvider : public llm::Provider {
 public:
  Result<llm::Response> Complete(const llm::Request&, const llm::StreamCallbacks&, llm::CancelToken*) override {
    llm::Response r;
    r.content.push_back(llm::ContentBlock::ToolUse("toolu_" + std::to_string(++n_), "read_file", R"({"path":"note.txt"})"));
    r.stop_reason = "tool_use";
    r.usage.input_tokens = 1000;
    r.usage.output_tokens = 20;
    return r;
  }
  std::string_view name() const override { return "zero"; }
  std::string default_model() const override { return "zero"; }
  int64_t ContextWindow(const std::string&) const override { return 10000000; }

 private:
  int n_ = 0;
};

struct Scratch {
  char tmpl[64] = "/tmp/mates-agent-bench-XXXXXX";
  fs::path dir;
  Workspace ws{"."};
  std::unique_ptr<TeamStore> store;
  tools::ToolContext ctx;
  std::unique_ptr<tools::ToolRegistry> tools;
  Scratch() : dir(::mkdtemp(tmpl)), ws(dir), store(FileTeamStore(ws, mates::testing::TestEnv())), ctx(ws, *store) {
    (void)Roster(ws).CreateTeam("b");
    (void)WriteFileAtomic(dir / "note.txt", "a short note\nof two lines\n");
    ctx.team = "b";
    ctx.agent = "lead";
    ctx.is_lead = true;
    tools = tools::MakeToolRegistry(tools::Scope::kLead);
  }
  ~Scratch() { fs::remove_all(dir); }
};

// Drives AgentLoop one model call at a time: a Run with max_calls = 1.
std::vector<double> MatesTurnsStepwise(llm::Provider* provider, int prefill, int turns) {
  Scratch env;
  agent::AgentSpec spec;
  spec.name = "lead";
  spec.system = "You are a benchmark agent.";
  spec.identity = "bench";
  spec.max_calls = 1;
  spec.read_inbox = true;
  agent::AgentLoop loop(spec, provider, env.tools.get(), &env.ctx, nullptr);
  env.ctx.cancel = loop.cancel_token();
  (void)loop.AttachJournal(env.ws.AgentsDir("b") / "lead.jsonl", false);
  (void)loop.Run("start");
  for (int i = 0; i < prefill; ++i) (void)loop.Continue();
  std::vector<double> us;
  for (int i = 0; i < turns; ++i) {
    int64_t t0 = NowNs();
    (void)loop.Continue();
    us.push_back(static_cast<double>(NowNs() - t0) / 1000.0);
  }
  return us;
}

// The seeds' loop: messages += reply; run tools; messages += results.
std::vector<double> SeedTurns(llm::Provider* provider, int prefill, int turns) {
  Scratch env;
  std::vector<llm::ChatMessage> messages = {{llm::Role::kUser, {llm::ContentBlock::Text("start")}}};
  auto turn = [&] {
    llm::Request req;
    req.system = "You are a benchmark agent.";
    req.messages = messages;
    req.tools = env.tools->Definitions();
    auto r = provider->Complete(req, {}, nullptr);
    messages.push_back({llm::Role::kAssistant, r->content});
    std::vector<llm::ContentBlock> results;
    for (const auto& b : r->content) {
      auto out = env.tools->Run(b, env.ctx);
      results.push_back(llm::ContentBlock::ToolResult(b.id, out.content, out.is_error));
    }
    messages.push_back({llm::Role::kUser, std::move(results)});
  };
  for (int i = 0; i < prefill; ++i) turn();
  std::vector<double> us;
  for (int i = 0; i < turns; ++i) {
    int64_t t0 = NowNs();
    turn();
    us.push_back(static_cast<double>(NowNs() - t0) / 1000.0);
  }
  return us;
}

std::shared_ptr<llm::Scenario> ReadForever() {
  auto sc = llm::Scenario::Parse(
      R"J({"rules":[{"once":false,"reply":[{"type":"tool_use","name":"read_file","input":{"path":"note.txt"}}]}]})J",
      "bench.json");
  return std::make_shared<llm::Scenario>(std::move(*sc));
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  const int turns = quick ? 50 : 300;
  std::printf("agent_bench: cost of one turn of the loop (model latency excluded), µs, median / p99\n\n");
  std::printf("%-28s %-22s %-22s %-22s\n", "conversation length", "mates + scripted", "mates + zero provider",
              "seed-style loop (zero)");
  for (int prefill : {0, 50, 250}) {
    ZeroProvider z1, z2;
    llm::ScriptedProvider scripted(ReadForever());
    auto a = MatesTurnsStepwise(&scripted, prefill, turns);
    auto b = MatesTurnsStepwise(&z1, prefill, turns);
    auto c = SeedTurns(&z2, prefill, turns);
    char col[3][64];
    std::snprintf(col[0], 64, "%.0f / %.0f", Percentile(a, 50), Percentile(a, 99));
    std::snprintf(col[1], 64, "%.0f / %.0f", Percentile(b, 50), Percentile(b, 99));
    std::snprintf(col[2], 64, "%.0f / %.0f", Percentile(c, 50), Percentile(c, 99));
    std::printf("%-28s %-22s %-22s %-22s\n", (std::to_string(2 * prefill + 1) + " messages").c_str(), col[0],
                col[1], col[2]);
  }

  // Memory: agents with a 40-message conversation each.
  const int agents = quick ? 50 : 200;
  Scratch env;
  double before = RssMb();
  std::vector<std::unique_ptr<ZeroProvider>> providers;
  std::vector<std::unique_ptr<agent::AgentLoop>> loops;
  agent::AgentSpec spec;
  spec.name = "lead";
  spec.system = "You are a benchmark agent.";
  spec.max_calls = 1;
  for (int i = 0; i < agents; ++i) {
    providers.push_back(std::make_unique<ZeroProvider>());
    loops.push_back(std::make_unique<agent::AgentLoop>(spec, providers.back().get(), env.tools.get(), &env.ctx, nullptr));
    (void)loops.back()->Run("start");
    for (int t = 0; t < 19; ++t) (void)loops.back()->Continue();
  }
  double after = RssMb();
  std::printf("\nmemory per agent (a 40-message conversation, no journal): %.1f KB (%d agents, RSS %.1f -> %.1f MB)\n",
              (after - before) * 1024 / agents, agents, before, after);
  return 0;
}
