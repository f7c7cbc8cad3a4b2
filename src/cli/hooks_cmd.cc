// mates hooks list [--json] | test EVENT --input FILE
// The person's hooks (DESIGN §22): what is configured where, trusted or
// not; and one event's hooks run as an agent's would be (in the sandbox a
// host would give them), with the decision they came to.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/run_options.h"
#include "core/files.h"
#include "core/json.h"
#include "hooks/hooks.h"
#include "sandbox/policy.h"
#include "sandbox/sandbox.h"
#include "tools/builtin_tools.h"
#include "tools/hook_calls.h"
#include "trust/trust.h"

namespace mates::cli {
namespace {

struct HooksArgs {
  bool json = false;
  std::string event;
  std::string input;
  std::string as = "lead";
};

Result<hooks::HookSet> Load(const Globals& g) {
  MATES_ASSIGN_OR_RETURN(trust::FileState f, trust::TrustStore().CheckFile(g.ws().root(), ".mates/config.yaml"));
  return hooks::LoadHooks(g.ws().root(), sandbox::UserConfigPath(), f.trust == trust::FileTrust::kTrusted);
}

int List(Globals& g, const HooksArgs& a) {
  auto set = Load(g);
  if (!set.ok()) return Fail(set.status());
  if (a.json) {
    Json out = Json::array();
    for (const auto& s : set->sources) {
      for (const auto& [event, groups] : s.events) {
        for (const auto& gr : groups) {
          for (const auto& h : gr.hooks) {
            out.push_back({{"file", s.file.string()}, {"trusted", s.trusted}, {"event", std::string(hooks::EventName(event))},
                           {"matcher", gr.matcher}, {"command", h.command}, {"timeout", h.timeout_s}});
          }
        }
      }
    }
    std::cout << DumpJsonPretty(out) << std::endl;
    return 0;
  }
  if (set->sources.empty()) {
    std::cout << "no hooks (add them under hooks: in " << sandbox::UserConfigPath().string() << " or "
              << (g.ws().root() / ".mates/config.yaml").string() << ", Claude Code's structure)" << std::endl;
  }
  for (const auto& s : set->sources) {
    std::cout << s.file.string() << (s.trusted ? "" : "  (NOT RUN: not trusted as it is; mates trust)") << "\n";
    for (const auto& [event, groups] : s.events) {
      for (const auto& gr : groups) {
        for (const auto& h : gr.hooks) {
          std::cout << "  " << hooks::EventName(event)
                    << (gr.matcher.empty() ? "" : " [" + gr.matcher + "]") << "  " << h.command << "  (timeout "
                    << h.timeout_s << " s)\n";
        }
      }
    }
  }
  for (const auto& n : set->notes) std::cout << "note: " << n << "\n";
  std::cout.flush();
  return 0;
}

int Test(Globals& g, const HooksArgs& a) {
  auto event = hooks::EventOf(a.event);
  if (!event) return Usage("'" + a.event + "' is not a hook event (PreToolUse, PostToolUse, TaskCompleted, …)");
  Result<std::string> text = std::string();
  if (a.input == "-") {
    // Bounded like a file: a read past the bound is refused below.
    std::string in;
    char buf[65536];
    while (in.size() <= (1 << 20) && std::cin.read(buf, sizeof buf).gcount() > 0) in.append(buf, std::cin.gcount());
    text = in;
  } else {
    text = ReadFilePrefix(a.input, (1 << 20) + 1);
  }
  if (!text.ok()) return Fail(text.status());
  if (text->size() > (1 << 20)) return Fail(Status::InvalidArgument(a.input + ": larger than 1 MiB"));
  auto input = ParseJson(*text);
  if (!input.ok() || !input->is_object()) {
    return Fail(Status::InvalidArgument(a.input + ": not a JSON object (the hook's input)"));
  }
  auto set = Load(g);
  if (!set.ok()) return Fail(set.status());
  for (const auto& n : set->notes) std::cerr << "mates: warning: " << n << std::endl;
  hooks::Runner runner(std::move(*set));
  // The subjects a matcher takes, as mates gives them: a tool's name, a
  // session's source, a merge's owner (queued) or state (decided).
  std::vector<std::string> subjects;
  const auto subject = [&](const Json& in, const char* key) {
    if (auto t = in.find(key); t != in.end() && t->is_string()) subjects.push_back(t->get<std::string>());
  };
  // A tool by either name, as a run gives both (Bash and bash).
  if (auto t = input->find("tool_name"); t != input->end() && t->is_string()) {
    subjects = tools::HookToolNames(t->get<std::string>());
  }
  if (*event == hooks::Event::kSessionStart) subject(*input, "source");
  if (auto m = input->find("merge"); m != input->end() && m->is_object()) {
    if (*event == hooks::Event::kMergeQueued) subject(*m, "owner");
    if (*event == hooks::Event::kMergeDecided) subject(*m, "status");
  }
  if (!runner.Wants(*event, subjects)) {
    std::cout << "no trusted hook runs on " << a.event << (subjects.empty() ? "" : " for " + subjects.front())
              << std::endl;
    return 0;
  }
  // As a host would run them: in its sandbox (DESIGN §18).
  auto box = HostsSandbox(g.ws(), "hooks-test");
  if (!box.ok()) return Fail(box.status());
  auto store = FileTeamStore(g.ws(), g.env());
  tools::ToolContext ctx(g.ws(), *store);
  ctx.team = g.team;
  ctx.agent = a.as;
  hooks::Launch launch;
  launch.sandbox = *box;
  launch.place = ctx.Place();
  launch.env = tools::BashEnvironment(ctx);
  launch.env.push_back("CLAUDE_PROJECT_DIR=" + g.ws().root().string());
  launch.cwd = g.ws().root();
  hooks::Outcome o = runner.Run(*event, subjects, *input, launch);
  if (a.json) {
    Json out = {{"ran", o.ran}, {"blocked", o.blocked}, {"reason", o.reason}, {"context", o.context},
                {"updated_input", o.updated_input ? *o.updated_input : Json(nullptr)}, {"errors", o.errors}};
    std::cout << DumpJsonPretty(out) << std::endl;
  } else {
    std::cout << a.event << ": " << o.ran << (o.ran == 1 ? " hook ran; " : " hooks ran; ")
              << (o.blocked ? "BLOCKED" : "goes on") << "\n";
    if (o.blocked) std::cout << "reason (what the model reads):\n" << o.reason << "\n";
    if (!o.context.empty()) std::cout << "added context:\n" << o.context << "\n";
    if (o.updated_input) std::cout << "updated input: " << DumpJson(*o.updated_input) << "\n";
    for (const auto& e : o.errors) std::cout << "error: " << e << "\n";
    std::cout.flush();
  }
  return o.blocked ? 2 : 0;
}

}  // namespace

void AddHooksCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<HooksArgs>();
  CLI::App* hooks = app.add_subcommand("hooks", "The hooks that run between agents and what they do (Claude Code's)");
  hooks->require_subcommand(1);
  CLI::App* list = hooks->add_subcommand("list", "The hooks configured, where, and whether they are trusted");
  list->add_flag("--json", a->json, "Machine-readable output");
  list->callback([&g, a] { g.action = [&g, a] { return List(g, *a); }; });
  CLI::App* test = hooks->add_subcommand("test", "Run an event's hooks as an agent's would run; print the decision "
                                                 "(exit 2 when they block)");
  test->add_option("EVENT", a->event, "PreToolUse, PostToolUse, TaskCompleted, …")->required();
  test->add_option("--input", a->input, "The hook input: a JSON file ('-' reads stdin)")->required();
  test->add_option("--as", a->as, "The agent it runs for (default: lead)");
  AddTeamOption(test, g);
  test->add_flag("--json", a->json, "Machine-readable output");
  test->callback([&g, a] { g.action = [&g, a] { return Test(g, *a); }; });
}

}  // namespace mates::cli
