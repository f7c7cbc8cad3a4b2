// mates export --bundle FILE [--team T] [--store URL] [--archived [STAMP]] [--no-git]
// mates import FILE
//
// A team's session as one file (DESIGN §31, report/bundle.h): exported
// from a live team, a stopped one or an archive, on any store (a
// PostgreSQL team is written as the file layout first, as `mates store
// export` does); imported as an archive of this workspace, which every
// `--archived` reader reads.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/names.h"
#include "core/text.h"
#include "git/git.h"
#include "report/bundle.h"
#include "report/report.h"
#include "stores/open_store.h"

namespace mates::cli {
namespace {

struct BundleArgs {
  std::string out;
  bool no_git = false;
  ArchivedChoice archived;
  std::string file;  // import
};

// A folder of this process's, removed with it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "mates-export-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The team's git history, into `into`: its target and teammates' branches
// and the provenance notes, or HEAD for a team without branches of its
// own. Nothing (no refs) outside a repository.
Result<std::vector<std::string>> GitBundle(const fs::path& repo, const TeamConfig& team, const fs::path& into,
                                           std::string* head) {
  git::Git g(repo);
  auto inside = g.Run({"rev-parse", "--is-inside-work-tree"}, git::kGitQuickS);
  if (!inside.ok() || inside->exit_code != 0) return std::vector<std::string>{};
  auto h = g.Run({"rev-parse", "--verify", "-q", "HEAD"}, git::kGitQuickS);
  if (h.ok() && h->exit_code == 0) *head = h->out.substr(0, h->out.find('\n'));
  std::vector<std::string> refs;
  MATES_ASSIGN_OR_RETURN(std::string listed,
                         g.Ok({"for-each-ref", "--format=%(refname)", "refs/heads/mates/", "refs/notes/mates"},
                              git::kGitQuickS));
  const std::string mine = "@" + team.name;
  for (size_t at = 0, nl; at < listed.size(); at = nl + 1) {
    nl = listed.find('\n', at);
    if (nl == std::string::npos) nl = listed.size();
    const std::string ref = listed.substr(at, nl - at);
    const bool target = team.git.configured() && ref == "refs/heads/" + team.git.target_branch;
    if (target || ref == "refs/notes/mates" || (ref.size() > mine.size() && ref.ends_with(mine))) refs.push_back(ref);
  }
  if (refs.empty() && !head->empty()) refs.push_back("HEAD");
  if (refs.empty()) return refs;
  std::vector<std::string> args = {"bundle", "create", "-q", (into / "repo.bundle").string()};
  args.insert(args.end(), refs.begin(), refs.end());
  MATES_RETURN_IF_ERROR(g.Ok(args, git::kGitTreeS).status());
  return refs;
}

int Export(Globals& g, const BundleArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  auto reading = OpenReadingStore(g, g.team, a.archived);
  if (!reading.ok()) return Fail(reading.status());
  TeamStore& store = *reading->store;
  if (!store.foreign().empty()) return Usage("a team of " + store.foreign() + " keeps no mates record to bundle");
  auto team = store.LoadTeam(g.team);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), g.ws(), g.team, a.archived));
  const std::string state = reading->stamp.empty() ? (store.LiveHost(g.team) ? "live" : "stopped")
                                                   : "archived " + reading->stamp;
  auto r = report::Build(store, reading->ws, g.team, state, g.price_table);
  if (!r.ok()) return Fail(r.status());
  ScratchDir scratch;
  if (scratch.path().empty()) return Fail(Status::FromErrno("mkdtemp", errno));
  // A team in a database is written as the file layout first.
  Workspace files_in = reading->ws;
  if (!store.FilesHere()) {
    auto exported = ExportStoreTeam(g.store, g.team, scratch.path() / "team");
    if (!exported.ok()) return Fail(exported.status());
    files_in = Workspace(scratch.path() / "team");
  }
  auto files = report::TeamFiles(files_in, g.team);
  if (!files.ok()) return Fail(files.status());
  report::BundleManifest m{g.team, r->state, store.where(), WallSeconds(), MATES_VERSION, {}, ""};
  if (!a.no_git) {
    auto refs = GitBundle(g.ws().root(), *team, scratch.path(), &m.git_head);
    if (!refs.ok()) return Fail(refs.status().WithContext("the team's git history"));
    m.git_refs = std::move(*refs);
    if (!m.git_refs.empty()) files->push_back({"repo.bundle", scratch.path() / "repo.bundle"});
  }
  if (Status s = report::WriteBundle(a.out, m, report::Html(*r), *files); !s.ok()) return Fail(s);
  std::error_code ec;
  const auto size = fs::file_size(a.out, ec);
  std::cout << "wrote " << a.out << " (" << files->size() + 2 << " files, " << (ec ? 0 : (size + 1023) / 1024)
            << " KiB): team " << g.team << " (" << r->state << ")"
            << (m.git_refs.empty() ? ", no git history" : ", git: " + JoinWords(m.git_refs, " ", 6))
            << "\nelsewhere: mates import " << a.out << "\n";
  return 0;
}

int Import(Globals& g, const BundleArgs& a) {
  auto in = report::ImportBundle(a.file, g.ws());
  if (!in.ok()) return Fail(in.status());
  const std::string& team = in->manifest.team;
  const std::string at = "--team " + team + " --archived " + in->archive.stamp;
  std::cout << "imported team " << team << " (" << in->manifest.state << ", from " << in->manifest.from << ", "
            << UtcIsoTime(in->manifest.made) << ") as its archive " << in->archive.stamp << ": " << in->files
            << " files, " << (in->bytes + 1023) / 1024 << " KiB\n"
            << "  " << g.Mates() << " report " << at << "\n"
            << "  " << g.Mates() << " log " << at << "\n";
  if (!in->manifest.git_refs.empty()) {
    std::cout << "  git clone " << (in->archive.root / "repo.bundle").string() << " DIR   # its git history\n";
  }
  return 0;
}

}  // namespace

void AddBundleCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<BundleArgs>();
  CLI::App* exp = app.add_subcommand("export", "A team's session as one file: mates export --bundle FILE");
  AddTeamOption(exp, g);
  AddStoreOption(exp, g);
  exp->add_option("--bundle", a->out, "The file to write (a gzipped tar: record, report, git history)")
      ->required()
      ->type_name("FILE");
  exp->add_flag("--no-git", a->no_git, "Leave the team's git history out");
  AddArchivedOption(exp, a->archived);
  exp->callback([&g, a] { g.action = [&g, a] { return Export(g, *a); }; });
  CLI::App* imp = app.add_subcommand("import", "Unpack a bundle as an archived team of this workspace");
  imp->add_option("file", a->file, "The bundle (mates export --bundle)")->required()->type_name("FILE");
  imp->callback([&g, a] { g.action = [&g, a] { return Import(g, *a); }; });
}

}  // namespace mates::cli
