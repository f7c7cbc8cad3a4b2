// mates store init|migrate|status [--store URL] (DESIGN §13): the schema of
// a PostgreSQL store. The URL comes by the rule of DESIGN §21; the
// file store (file:, the default) keeps its state in W/.mates and needs no
// schema.
// mates store export --team T DIR: a team of the PostgreSQL store written
// as the file store's layout in DIR (roster, undelivered messages, tasks),
// to inspect or archive with ordinary tools.
#include <iostream>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/names.h"
#include "stores/open_store.h"

namespace mates::cli {

Result<std::unique_ptr<TeamStore>> OpenChosenStore(const Globals& g, const std::string& url, const Workspace& ws,
                                                   StoreUse use) {
  return OpenTeamStore(url, ws, g.env(), use);
}

namespace {

struct StoreArgs {
  double timeout = 10;
  std::string dir;  // export
};

// What `fn` (a schema function of stores/open_store.h) said, or its error.
int Said(const Globals& g, const StoreArgs& a, Result<std::string> (*fn)(const std::string&, double)) {
  if (Status s = CheckSeconds("--connect-timeout", a.timeout, 0, false); !s.ok()) return Fail(s);
  auto said = fn(g.store, a.timeout);
  if (!said.ok()) return Fail(said.status());
  std::cout << *said << std::endl;
  return 0;
}

}  // namespace

void AddStoreCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<StoreArgs>();
  CLI::App* store = app.add_subcommand("store", "The team store's schema (PostgreSQL: --store postgres://...)");
  store->require_subcommand(1);
  auto common = [&g, a](CLI::App* cmd) {
    AddStoreOption(cmd, g);
    cmd->add_option("--connect-timeout", a->timeout, "Seconds to wait for the server (default 10)");
  };

  CLI::App* init = store->add_subcommand("init", "Create the mates schema in an empty database");
  common(init);
  init->callback([&g, a] { g.action = [&g, a] { return Said(g, *a, InitStoreSchema); }; });

  CLI::App* migrate = store->add_subcommand("migrate", "Bring the database's mates schema up to this mates' version");
  common(migrate);
  migrate->callback([&g, a] { g.action = [&g, a] { return Said(g, *a, MigrateStoreSchema); }; });

  CLI::App* exp = store->add_subcommand("export", "Write a team of the PostgreSQL store as the file layout in DIR");
  common(exp);
  AddTeamOption(exp, g);
  exp->add_option("dir", a->dir, "The folder to write it in (a workspace; created if missing)")->required();
  exp->callback([&g, a] {
    g.action = [&g, a] {
      if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
      if (Status s = CheckSeconds("--connect-timeout", a->timeout, 0, false); !s.ok()) return Fail(s);
      const std::string& url = g.store;
      if (Status s = CheckStoreUrl(url); !s.ok()) return Fail(s);
      if (IsFileStoreUrl(url)) return Usage("export reads a PostgreSQL store: give --store postgres://... or set MATES_STORE");
      auto said = ExportStoreTeam(url, g.team, a->dir);
      if (!said.ok()) return Fail(said.status());
      std::cout << *said << std::endl;
      return 0;
    };
  });

  CLI::App* status = store->add_subcommand("status", "Check the database's mates schema (exit 1 unless current)");
  common(status);
  status->callback([&g, a] { g.action = [&g, a] { return Said(g, *a, CheckStoreSchema); }; });
}

}  // namespace mates::cli
