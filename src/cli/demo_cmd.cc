// mates demo [--workspace DIR]: the offline showcase (seed v9, "REST ->
// GraphQL"): a scripted lead and three teammates in a fresh workspace.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/cli_common.h"
#include "core/secrets.h"
#include "cli/session_view.h"
#include "core/files.h"
#include "demo_scenario.h"
#include "git/git.h"
#include "llm/scripted.h"

namespace mates::cli {
namespace {

struct DemoArgs {
  std::string workspace;
  double shutdown_timeout = 10;
};

Result<fs::path> DemoWorkspace(const std::string& flag) {
  if (flag.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "mates-demo-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno("mkdtemp", errno);
    return fs::path(tmpl);
  }
  fs::path p = fs::absolute(flag);
  std::error_code ec;
  if (fs::exists(p, ec) && !fs::is_empty(p, ec)) {
    return Status::InvalidArgument("the demo needs an empty folder; " + p.string() + " is not empty");
  }
  MATES_RETURN_IF_ERROR(EnsureDir(p));
  return p;
}

Status CommitTheApp(const fs::path& dir) {
  git::Git git(dir);
  MATES_RETURN_IF_ERROR(git.Ok({"init", "--quiet", "--initial-branch=main"}).status());
  MATES_RETURN_IF_ERROR(git.Ok({"add", "api/routes.txt", "README.md"}).status());
  return git.Ok({"commit", "--quiet", "-m", "shop-api: the REST API"}).status();
}

// The demo's summary of the team it disbanded: who did which tasks, the
// messages by type, who shut down, and the files the team wrote in `dir`.
void PrintWhatTheTeamDid(const team::TeamSummary& t, const fs::path& dir) {
  std::cout << "  tasks by owner:   ";
  bool first = true;
  for (const auto& [owner, ids] : t.tasks_by_owner) {
    std::string list;
    for (int64_t id : ids) list += (list.empty() ? "#" : ", #") + std::to_string(id);
    std::cout << (first ? "" : "; ") << owner << " " << list;
    first = false;
  }
  std::cout << "\n  messages by type: ";
  first = true;
  for (const auto& [type, n] : t.messages_by_type) {
    std::cout << (first ? "" : ", ") << type << " " << n;
    first = false;
  }
  std::cout << "\n  shutdown:         ";
  first = true;
  for (const auto& who : t.stopped) {
    std::cout << (first ? "" : "; ") << who;
    first = false;
  }
  std::cout << "\n  files written:    ";
  first = true;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string rel = fs::relative(e.path(), dir).string();
    if (!e.is_regular_file() || rel.rfind(".", 0) == 0 || rel == "README.md" || rel == "api/routes.txt") continue;
    std::cout << (first ? "" : ", ") << rel << " (" << e.file_size() << " B)";
    first = false;
  }
}

int Demo(const DemoArgs& a, const agent::PriceTable& prices) {
  Secrets::Scrub();
  if (Status s = CheckSeconds("--shutdown-timeout", a.shutdown_timeout, 0, false); !s.ok()) {
    return Fail(s);
  }
  auto dir = DemoWorkspace(a.workspace);
  if (!dir.ok()) return Fail(dir.status());
  Workspace ws(*dir);
  // The app being migrated: a small REST API.
  Status s = EnsureDir(*dir / "api");
  if (s.ok()) s = WriteFileAtomic(*dir / "api/routes.txt", "GET /users\nGET /users/:id\nPOST /users\nGET /users/:id/orders\n");
  if (s.ok()) s = WriteFileAtomic(*dir / "README.md", "# shop-api\n\nA small REST API (api/routes.txt), about to move to GraphQL.\n");
  if (!s.ok()) return Fail(s);
  // A repository with the app committed: the session records that commit,
  // and `mates replay` starts a checkout of it (DESIGN §31).
  if (Status g = CommitTheApp(*dir); !g.ok()) {
    std::cerr << "mates demo: the workspace is not a git repository (" << g.message()
              << "): the session cannot be replayed\n";
  }
  auto scenario = llm::Scenario::Parse(kDemoScenario, "rest-to-graphql.yaml");
  if (!scenario.ok()) return Fail(scenario.status());
  llm::ScriptedProvider provider(std::make_shared<llm::Scenario>(std::move(*scenario)), "scripted-demo");

  bool color = WantColor();
  auto bold = [&](const std::string& t) { return color ? "\033[1m" + t + "\033[0m" : t; };
  std::cout << bold("mates demo") << ": the seed v9 flow \"REST -> GraphQL\", scripted (no network).\n"
            << "A lead and three teammates (analyst, backend, frontend in plan mode) in "
            << dir->string() << "\n\n" << std::flush;

  host::SessionOptions c;
  c.prices = prices;
  c.mode = HostMode::kDemo;
  c.ws = ws;
  c.goal = "Migrate the app from REST to GraphQL.";
  c.max_turns = 50;
  c.shutdown_timeout_s = a.shutdown_timeout;
  LiveOutput out(color, /*multi=*/true);  // a team is about to form
  auto start = std::chrono::steady_clock::now();
  const host::SessionResult r = host::Session::Run(c, &provider, SessionOutputTo(out));
  const int code = SessionExit(r);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << "\n" << bold("Summary") << "\n";
  if (!r.deleted_team) {
    std::cout << "  the team was not disbanded: the flow did not finish\n";
    return code != 0 ? code : 1;
  }
  PrintWhatTheTeamDid(*r.deleted_team, *dir);
  char t[32];
  std::snprintf(t, sizeof t, "%.2f s", secs);
  std::cout << "\n  wall time:        " << t << "\n  workspace:        " << dir->string()
            << " (kept; the lead's journal is in .teams/default/agents/lead.jsonl)\n";
  return code;
}

}  // namespace

void AddDemoCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<DemoArgs>();
  CLI::App* demo = app.add_subcommand("demo", "The offline showcase: a scripted team migrates REST to GraphQL");
  demo->add_option("--shutdown-timeout", a->shutdown_timeout, "Seconds a teammate has to answer a shutdown request")
      ->capture_default_str();
  demo->callback([&g, a] {
    a->workspace = g.workspace;
    g.action = [a, &g] { return Demo(*a, g.price_table); };
  });
}

}  // namespace mates::cli
