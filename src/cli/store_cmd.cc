// mates store init|migrate|status [--store URL] (DESIGN §13): the schema of
// a PostgreSQL store. The URL comes from --store, else $MATES_STORE; the
// file store (file:, the default) keeps its state in W/.mates and needs no
// schema.
// mates store export --team T DIR: a team of the PostgreSQL store written
// as the file store's layout in DIR (roster, undelivered messages, tasks),
// to inspect or archive with ordinary tools.
#include <cstdlib>
#include <iostream>

#include "cli/cli_common.h"
#include "pg/connection.h"
#include "core/names.h"
#include "pg/schema.h"
#include "cli/store_choice.h"
#include "pg/export.h"
#include "pg/store.h"

namespace mates::cli {

Result<std::optional<pg::Target>> ChosenStore(const std::string& given) {
  std::string url = given;
  if (url.empty()) {
    const char* env = std::getenv("MATES_STORE");
    url = env != nullptr ? env : "";
  }
  if (url.empty() || url == "file:" || url == "file") return std::optional<pg::Target>();
  MATES_ASSIGN_OR_RETURN(pg::Target t, pg::ParseTarget(url));
  return std::optional<pg::Target>(std::move(t));
}

Result<std::unique_ptr<pg::Store>> OpenChosenStore(const std::string& url) {
  MATES_ASSIGN_OR_RETURN(std::optional<pg::Target> target, ChosenStore(url));
  if (!target) return std::unique_ptr<pg::Store>();
  return pg::Store::Open(*target);
}

void AddStoreOption(CLI::App* cmd, std::string& url) {
  cmd->add_option("--store", url, "The store: file: (default) or postgres://...")->envname("MATES_STORE");
}

namespace {

struct StoreArgs {
  std::string url;
  double timeout = 10;
  std::string team;  // export
  std::string dir;   // export
};

// Runs `fn` on a connection to the store; the file store needs nothing.
template <typename Fn>
int WithStore(const StoreArgs& a, const char* file_store_says, Fn&& fn) {
  if (Status s = CheckSeconds("--connect-timeout", a.timeout, 0, false); !s.ok()) return Fail(s);
  auto target = ChosenStore(a.url);
  if (!target.ok()) return Fail(target.status());
  if (!target->has_value()) {
    std::cout << file_store_says << std::endl;
    return 0;
  }
  auto conn = pg::Connection::Open(**target, a.timeout);
  if (!conn.ok()) return Fail(conn.status());
  return fn(*conn);
}

// The team's state from `store` into the workspace at `dir`.
int Export(const StoreArgs& a, pg::Store& store) {
  auto n = pg::ExportTeam(store, a.team, Workspace(a.dir));
  if (!n.ok()) return Fail(n.status());
  std::cout << "exported team '" << a.team << "' (" << n->members << " members, " << n->undelivered
            << " undelivered messages, " << n->logged << " logged, " << n->requests << " requests, " << n->merges << " merge requests, " << n->tasks
            << " tasks, " << n->journals << " journals) from " << store.target().shown << " to " << a.dir
            << std::endl;
  return 0;
}

}  // namespace

void AddStoreCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<StoreArgs>();
  CLI::App* store = app.add_subcommand("store", "The team store's schema (PostgreSQL: --store postgres://...)");
  store->require_subcommand(1);
  auto common = [a](CLI::App* cmd) {
    cmd->add_option("--store", a->url, "The store: file: (default) or postgres://... (default: $MATES_STORE)");
    cmd->add_option("--connect-timeout", a->timeout, "Seconds to wait for the server (default 10)");
  };

  CLI::App* init = store->add_subcommand("init", "Create the mates schema in an empty database");
  common(init);
  init->callback([&g, a] {
    g.action = [a] {
      return WithStore(*a, "the file store keeps its state in W/.mates: nothing to initialise", [](pg::Connection& c) {
        auto was = pg::InitSchema(c);
        if (!was.ok()) return Fail(was.status());
        if (*was == pg::kSchemaVersion) {
          std::cout << c.target().shown << ": the mates schema is there already (version " << *was << ")"
                    << std::endl;
        } else {
          std::cout << c.target().shown << ": created the mates schema (version " << pg::kSchemaVersion << ")"
                    << std::endl;
        }
        return 0;
      });
    };
  });

  CLI::App* migrate = store->add_subcommand("migrate", "Bring the database's mates schema up to this mates' version");
  common(migrate);
  migrate->callback([&g, a] {
    g.action = [a] {
      return WithStore(*a, "the file store has no schema to migrate", [](pg::Connection& c) {
        auto was = pg::MigrateSchema(c);
        if (!was.ok()) return Fail(was.status());
        if (*was == pg::kSchemaVersion) {
          std::cout << c.target().shown << ": the mates schema is current (version " << *was << ")" << std::endl;
        } else {
          std::cout << c.target().shown << ": migrated the mates schema from version " << *was << " to "
                    << pg::kSchemaVersion << std::endl;
        }
        return 0;
      });
    };
  });

  CLI::App* exp = store->add_subcommand("export", "Write a team of the PostgreSQL store as the file layout in DIR");
  common(exp);
  exp->add_option("--team", a->team, "The team (default: $MATES_TEAM)")->envname("MATES_TEAM");
  exp->add_option("dir", a->dir, "The folder to write it in (a workspace; created if missing)")->required();
  exp->callback([&g, a] {
    g.action = [a] {
      if (a->team.empty()) return Usage("which team? give --team or set MATES_TEAM");
      if (Status s = ValidateName("team name", a->team); !s.ok()) return Fail(s);
      if (Status s = CheckSeconds("--connect-timeout", a->timeout, 0, false); !s.ok()) return Fail(s);
      auto target = ChosenStore(a->url);
      if (!target.ok()) return Fail(target.status());
      if (!target->has_value()) return Usage("export reads a PostgreSQL store: give --store postgres://... or set MATES_STORE");
      auto store = pg::Store::Open(**target);
      if (!store.ok()) return Fail(store.status());
      return Export(*a, **store);
    };
  });

  CLI::App* status = store->add_subcommand("status", "Check the database's mates schema (exit 1 unless current)");
  common(status);
  status->callback([&g, a] {
    g.action = [a] {
      return WithStore(*a, "file store (W/.mates)", [](pg::Connection& c) {
        if (Status s = pg::CheckSchema(c); !s.ok()) return Fail(s);
        std::cout << c.target().shown << ": mates schema version " << pg::kSchemaVersion << " (current)"
                  << std::endl;
        return 0;
      });
    };
  });
}

}  // namespace mates::cli
