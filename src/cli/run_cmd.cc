// mates run [GOAL] [--provider P] [--model M] [--base-url URL] [--scenario FILE]
//           [--team T] [--max-turns N] [--context-budget TOKENS] [--idle-timeout S]
//           [--shutdown-timeout S] [--fresh]
// With a GOAL: the lead (and its team) work on it; the command returns when
// the lead has ended its turn with no teammate working and nothing unread.
// Without: the lead's REPL (/team /inbox /tasks /send /compact /usage /quit).
#include "cli/cli_common.h"
#include "cli/lead_session.h"
#include "core/secrets.h"
#include "llm/provider_factory.h"

namespace mates::cli {
namespace {

struct RunArgs {
  std::vector<std::string> goal;
  std::string provider, model, base_url, scenario;
  std::string team = "default";
  int max_turns = 100;
  int64_t context_budget = 0;
  double idle_timeout = 60;
  double shutdown_timeout = 60;
  double request_timeout = 0;
  bool fresh = false;
};

int Run(Globals& g, const RunArgs& a) {
  // The lead and its teammates run commands a model wrote: keys out of
  // reach before any thread starts.
  Secrets::Scrub();
  if (Status s = CheckSeconds("--idle-timeout", a.idle_timeout, 0, true); !s.ok()) {
    return Usage(s.message() + " (0 = wait forever)");
  }
  if (Status s = CheckSeconds("--shutdown-timeout", a.shutdown_timeout, 0, false); !s.ok()) {
    return Fail(s);
  }
  if (a.request_timeout != 0) {
    if (Status s = CheckSeconds("--request-timeout", a.request_timeout, 0, false); !s.ok()) return Fail(s);
  }
  llm::ProviderConfig pc{a.provider, a.model, a.base_url, a.scenario, a.request_timeout};
  auto provider = llm::MakeProvider(pc);
  if (!provider.ok()) return Fail(provider.status());
  LeadSessionConfig c;
  c.ws = g.ws();
  c.team = a.team;
  for (const auto& w : a.goal) c.goal += (c.goal.empty() ? "" : " ") + w;
  c.model = a.model;
  c.max_turns = a.max_turns;
  c.context_budget = a.context_budget;
  c.idle_timeout_s = a.idle_timeout;
  c.shutdown_timeout_s = a.shutdown_timeout;
  c.fresh = a.fresh;
  LiveOutput out(WantColor(), /*multi=*/false);
  return RunLeadSession(c, provider->get(), out).exit_code;
}

}  // namespace

void AddRunCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Work on a goal with the lead agent and its team (no GOAL: a REPL)");
  run->add_option("GOAL", a->goal, "What to do");
  run->add_option("--provider", a->provider, "anthropic, openai or scripted (default: anthropic if ANTHROPIC_API_KEY is set)");
  run->add_option("--model", a->model, "Model (default: $MATES_MODEL, else the provider's)");
  run->add_option("--base-url", a->base_url, "API base URL (anthropic: without /v1; openai: with /v1)");
  run->add_option("--scenario", a->scenario, "Scenario file for --provider scripted");
  run->add_option("--team", a->team, "The lead's team (created if missing)")->capture_default_str();
  run->add_option("--max-turns", a->max_turns, "Model calls at most per turn of each agent")->capture_default_str();
  run->add_option("--context-budget", a->context_budget, "Tokens before a context is compacted (default: 3/4 of the model's window)");
  run->add_option("--idle-timeout", a->idle_timeout, "Seconds an idle teammate waits for work before it stops (0 = forever)")->capture_default_str();
  run->add_option("--shutdown-timeout", a->shutdown_timeout, "Seconds a teammate has to answer a shutdown request")->capture_default_str();
  run->add_option("--request-timeout", a->request_timeout,
                  "Seconds one model request may take, reply included (default: no limit; "
                  "a stalled connection is dropped after 120 s without a byte)");
  run->add_flag("--fresh", a->fresh, "Start a new lead conversation instead of resuming the last one");
  run->callback([&g, a] { g.action = [&g, a] { return Run(g, *a); }; });
}

}  // namespace mates::cli
