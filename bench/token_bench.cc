// token_bench: what mates sends the model, measured offline (DESIGN §15,
// §16). The demo (REST -> GraphQL: a lead and three teammates) runs with
// the real `mates run` over HTTP against `mates mock-llm`, which accounts
// prompt caching the way the APIs do; every request it served is recorded
// and read back here. Per agent: calls, input tokens (all kinds), the share
// of input read from the cache (all calls, and in steady state: without each
// agent's first call), and for the lead the share of its input that is
// team news (<team-update> blocks, each request counting what it carries).
//
//   mates      the way mates sends: cache breakpoints on the tools, the
//              system prompt and the two newest user turns; team news
//              coalesced into the lead's next turn
//   naive      no breakpoints, and every teammate's change a lead turn of
//              its own (MATES_BASELINE=naive: what other agent teams do)
//   openai     mates over the OpenAI protocol (automatic prefix caching)
//
//   token_bench MATES_BINARY
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

#include "core/files.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "llm/mock_server.h"

using namespace mates;

namespace {

struct AgentFigures {
  int calls = 0;
  int64_t input = 0;       // every input token: uncached, written, read
  int64_t cache_read = 0;
  int64_t steady_input = 0;  // without the agent's first call
  int64_t steady_read = 0;
  int64_t news = 0;        // tokens of <team-update> blocks carried
  int64_t output = 0;
};

struct RunFigures {
  std::map<std::string, AgentFigures> agents;
  bool ok = false;
  std::string error;  // why not, when !ok
  double seconds = 0;
};

// Characters of the <team-update> text in one request's messages.
size_t NewsChars(const Json& body, bool openai) {
  size_t n = 0;
  auto count = [&](const std::string& text) {
    size_t at = 0;
    while ((at = text.find("<team-update>", at)) != std::string::npos) {
      size_t end = text.find("</team-update>", at);
      if (end == std::string::npos) break;
      end += std::string("</team-update>").size();
      n += end - at;
      at = end;
    }
  };
  auto msgs = body.find("messages");
  if (msgs == body.end() || !msgs->is_array()) return 0;
  for (const auto& m : *msgs) {
    auto c = m.find("content");
    if (c == m.end()) continue;
    if (c->is_string()) {
      count(c->get<std::string>());
    } else if (c->is_array()) {
      for (const auto& b : *c) {
        if (b.is_object() && b.contains("text") && b["text"].is_string()) count(b["text"].get<std::string>());
      }
    }
  }
  (void)openai;
  return n;
}

RunFigures Failed(RunFigures f, std::string why) {
  f.error = std::move(why);
  return f;
}

RunFigures RunDemo(const std::string& mates, const std::string& variant) {
  RunFigures f;
  const bool openai = variant == "openai";
  std::string tmpl = (fs::temp_directory_path() / "mates-token-bench-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Failed(f, "mkdtemp " + tmpl + ": " + std::strerror(errno));
  fs::path dir(tmpl);
  struct RemovedAtEnd {  // the workspace, the record: gone however the run ends
    fs::path dir;
    ~RemovedAtEnd() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } removed{dir};
  fs::path ws = dir / "ws";
  (void)EnsureDir(ws / "api");
  (void)WriteFileAtomic(ws / "api/routes.txt", "GET /users\nGET /users/:id\nPOST /users\nGET /users/:id/orders\n");
  (void)WriteFileAtomic(ws / "README.md", "# shop-api\n\nA small REST API (api/routes.txt), about to move to GraphQL.\n");
  auto text = ReadFile(MATES_DEMO_FILE);
  if (!text.ok()) return Failed(f, text.status().message());
  auto scenario = llm::Scenario::Parse(*text, "rest-to-graphql.yaml");
  if (!scenario.ok()) return Failed(f, scenario.status().message());
  llm::MockServerOptions mo;
  mo.record_path = (dir / "record.jsonl").string();
  mo.log_requests = false;
  auto server = llm::MockServer::Start(std::make_shared<llm::Scenario>(std::move(*scenario)), mo);
  if (!server.ok()) return Failed(f, "mock-llm: " + server.status().message());
  SubprocessOptions so;
  so.argv = {mates, "--workspace", ws.string(), "run", "--provider", openai ? "openai" : "anthropic",
             "--base-url", openai ? (*server)->url() + "/v1" : (*server)->url(), "--model",
             openai ? "gpt-4.1" : "claude-sonnet-4-5", "--shutdown-timeout", "10", "--idle-timeout", "30",
             "Migrate the app from REST to GraphQL."};
  std::vector<std::string> env = {"PATH=" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"),
                                  "HOME=" + dir.string(), "ANTHROPIC_API_KEY=bench-key", "OPENAI_API_KEY=bench-key"};
  if (variant == "naive") env.push_back("MATES_BASELINE=naive");
  so.env = env;
  so.timeout_s = 300;
  auto t0 = std::chrono::steady_clock::now();
  auto proc = Subprocess::Start(so);
  if (!proc.ok()) return Failed(f, mates + ": " + proc.status().message());
  SubprocessResult r = proc->Wait();
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  (*server)->Stop();
  if (r.exit_code != 0) {
    std::string how = "exited " + std::to_string(r.exit_code);
    if (r.timed_out)
      how = "timed out after " + std::to_string(static_cast<int>(so.timeout_s)) + " s";
    if (r.term_signal != 0 && !r.timed_out)
      how = "was killed by signal " + std::to_string(r.term_signal);
    std::fprintf(stderr, "%s: mates run %s\n%s\n", variant.c_str(), how.c_str(), r.err.c_str());
    return Failed(f, "mates run " + how + " (its stderr above)");
  }
  auto record = ReadFile(dir / "record.jsonl");
  if (!record.ok()) return Failed(f, record.status().message());
  std::istringstream in(*record);
  std::string line;
  while (std::getline(in, line)) {
    auto j = ParseJson(line);
    if (!j.ok() || (*j)["status"] != 200 || !j->contains("usage")) continue;
    const Json& u = (*j)["usage"];
    std::string agent = (*j)["agent"].get<std::string>();
    AgentFigures& a = f.agents[agent];
    int64_t read = u["cache_read_input_tokens"].get<int64_t>();
    // OpenAI's input_tokens (prompt_tokens) count the cached ones already.
    int64_t input = openai ? u["input_tokens"].get<int64_t>()
                           : u["input_tokens"].get<int64_t>() + u["cache_creation_input_tokens"].get<int64_t>() + read;
    if (a.calls > 0) {
      a.steady_input += input;
      a.steady_read += read;
    }
    ++a.calls;
    a.input += input;
    a.cache_read += read;
    a.output += u["output_tokens"].get<int64_t>();
    a.news += static_cast<int64_t>(NewsChars((*j)["body"], openai) / 4);
  }
  f.ok = true;
  return f;
}

double Pct(int64_t part, int64_t whole) { return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole); }

void Print(const std::string& variant, const RunFigures& f) {
  if (!f.ok) {
    std::printf("%-7s  FAILED: %s\n", variant.c_str(), f.error.c_str());
    return;
  }
  AgentFigures mates_total;
  for (const auto& [name, a] : f.agents) {
    std::printf("%-7s  %-9s %5d %10lld %9.1f%% %10.1f%% %9.1f%%\n", variant.c_str(), name.c_str(), a.calls,
                static_cast<long long>(a.input), Pct(a.cache_read, a.input), Pct(a.steady_read, a.steady_input),
                Pct(a.news, a.input));
    if (name == "lead") continue;
    mates_total.calls += a.calls;
    mates_total.input += a.input;
    mates_total.cache_read += a.cache_read;
    mates_total.steady_input += a.steady_input;
    mates_total.steady_read += a.steady_read;
  }
  const AgentFigures& lead = f.agents.count("lead") ? f.agents.at("lead") : AgentFigures{};
  int64_t all_input = mates_total.input + lead.input;
  std::printf("%-7s  %-9s %5d %10lld %9.1f%% %10.1f%% %10s   (%.1f s)\n", variant.c_str(), "teammates",
              mates_total.calls, static_cast<long long>(mates_total.input), Pct(mates_total.cache_read, mates_total.input),
              Pct(mates_total.steady_read, mates_total.steady_input), "", f.seconds);
  std::printf("%-7s  %-9s %5d %10lld %9.1f%%  (lead's team-news share %.2f%%)\n", variant.c_str(), "all",
              mates_total.calls + lead.calls, static_cast<long long>(all_input),
              Pct(mates_total.cache_read + lead.cache_read, all_input), Pct(lead.news, lead.input));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: token_bench MATES_BINARY\n");
    return 2;
  }
  const std::string mates = argv[1];
  std::printf("the demo over HTTP through mates mock-llm (tokens = 4 characters; cache as the APIs account it)\n");
  std::printf("targets (DESIGN §16): teammates' steady-state cache-read share >= 80%%, the lead's team-news share <= 5%%\n\n");
  std::printf("%-7s  %-9s %5s %10s %10s %11s %10s\n", "variant", "agent", "calls", "input", "cache-read",
              "steady-read", "news");
  bool ok = true;
  for (const std::string variant : {"mates", "naive", "openai"}) {
    RunFigures f = RunDemo(mates, variant);
    Print(variant, f);
    ok = ok && f.ok;
  }
  return ok ? 0 : 1;
}
