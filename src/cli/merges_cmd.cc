// mates merges --team T [--store URL] list [--json] | show ID [--json]
//                       | approve ID [--feedback F] [--as NAME] | reject ID [--feedback F] [--as NAME]
//                       | resume
// The team's merge requests (DESIGN §12): what the merge queue did with each
// completed task of an isolated teammate, and the decisions of review mode.
// A team in PostgreSQL (DESIGN §13) keeps its requests there: these work
// on any machine.
#include <iostream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/usage.h"
#include "cli/cli_common.h"
#include "cli/run_options.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/names.h"
#include "core/text.h"
#include "git/diffs.h"
#include "git/git.h"
#include "git/provenance.h"
#include "git/submit.h"
#include "git/worktrees.h"
#include "sandbox/sandbox.h"
#include "store/merges.h"
#include "store/roster.h"

namespace mates::cli {
namespace {

struct MergesArgs {
  std::string id;
  std::string feedback;
  std::string as;
  bool json = false;
  bool diff = false;
  ArchivedChoice archived;
};

std::string Short(const std::string& commit) { return commit.substr(0, 10); }

std::string Line(const MergeRequest& m) {
  std::string out = std::to_string(m.id) + "  task #" + std::to_string(m.task) + "  " + m.owner + "  " +
                    std::string(MergeStateName(m.status));
  if (m.status == MergeState::kMerged) out += "  " + Short(m.merged_commit) + " on " + m.target;
  if (!m.files.empty()) {
    out += "  in ";
    for (size_t i = 0; i < m.files.size(); ++i) out += (i ? ", " : "") + m.files[i];
  }
  if (!m.subject.empty()) out += "  \"" + m.subject + "\"";
  return out;
}

Result<int64_t> MergeId(const std::string& text) { return ParseId(text, "merge id"); }

// The team's merge requests where it is kept: this workspace's files (an
// archive always is) or the database (DESIGN §13). NotFound for no team.
struct Opened {
  std::unique_ptr<TeamStore> store;
  std::unique_ptr<MergeBook> merges;
};

Result<Opened> OpenMerges(const Globals& g, const MergesArgs& a) {
  Opened o;
  if (a.archived.given()) {
    MATES_ASSIGN_OR_RETURN(Workspace ws, ReadingWorkspace(g, g.team, a.archived));
    o.store = FileTeamStore(ws, g.env());
  } else {
    MATES_ASSIGN_OR_RETURN(o.store, OpenChosenStore(g, g.store, g.ws()));
  }
  MATES_RETURN_IF_ERROR(o.store->LoadTeam(g.team).status());
  o.merges = o.store->Merges(g.team);
  return o;
}

int List(Globals& g, const MergesArgs& a) {
  auto opened = OpenMerges(g, a);
  if (!opened.ok()) return Fail(opened.status());
  auto list = opened->merges->List();
  if (!list.ok()) return Fail(list.status());
  if (a.json) {
    Json arr = Json::array();
    for (const auto& m : *list) arr.push_back(MergeRequestToJson(m));
    std::cout << DumpJson(arr) << std::endl;
    return 0;
  }
  if (list->empty()) std::cout << "(no merge requests)" << std::endl;
  for (const auto& m : *list) std::cout << Line(m) << "\n";
  std::cout.flush();
  return 0;
}

// The provenance note of a landed request (DESIGN §30): W's, or, for a
// team with a remote, the remote's fetched. Null when it has none.
Result<Json> NoteOf(const Globals& g, TeamStore& store, const MergeRequest& m) {
  if (m.status != MergeState::kMerged || !git::IsCommitId(m.merged_commit)) return Json();
  git::Git w(g.ws().root());
  auto note = git::ReadNote(w, m.merged_commit);
  if (note.ok() || note.status().code() != StatusCode::kNotFound) return note;
  auto cfg = store.LoadTeam(g.team);
  if (!cfg.ok() || cfg->git.remote.empty()) return Json();
  if (Status fetched = git::FetchNotes(g.ws(), cfg->git); !fetched.ok()) {
    return Status::FailedPrecondition("the team's notes could not be fetched: " + fetched.message());
  }
  note = git::ReadNote(w, m.merged_commit);
  if (!note.ok() && note.status().code() == StatusCode::kNotFound) return Json();
  return note;
}

std::string NoteText(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return ForTerminal(it->is_string() ? it->get<std::string>() : it->dump(), 300);
}

void PrintNote(const Json& n) {
  std::cout << "provenance (" << git::kNotesRef << "):\n";
  std::string work = NoteText(n, "agent");
  if (auto models = n.find("models"); models != n.end() && models->is_array() && !models->empty()) {
    std::string names;
    for (const auto& x : *models) names += (names.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : "?");
    work += " on " + ForTerminal(names, 300);
  }
  if (auto u = n.find("usage"); u != n.end() && u->is_object()) {
    work += ": " + NoteText(n, "calls") + " calls, " + agent::DescribeTokens(llm::UsageFromJson(*u));
    auto cost = n.find("cost_usd");
    work += cost != n.end() && cost->is_number() ? fmt::format(", ${:.4f}", cost->get<double>()) : ", cost unknown";
  } else {
    work += " (its tokens are not known here)";
  }
  std::cout << "  work:    " << work << "\n"
            << "  commits: base " << Short(NoteText(n, "base")) << ", head " << Short(NoteText(n, "head")) << ", merged "
            << Short(NoteText(n, "merged")) << "\n";
  if (auto checks = n.find("checks"); checks != n.end() && checks->is_array()) {
    for (const auto& c : *checks) {
      if (!c.is_object()) continue;
      // A note is anyone's text (a repository's notes ref): read without a throw.
      auto timed_out = c.find("timed_out");
      auto duration = c.find("duration_s");
      std::cout << "  check:   `" << NoteText(c, "command") << "` exit " << NoteText(c, "exit_code")
                << (timed_out != c.end() && timed_out->is_boolean() && timed_out->get<bool>() ? " (timed out)" : "")
                << " in " << fmt::format("{:.2f}", duration != c.end() && duration->is_number() ? duration->get<double>() : 0.0)
                << " s, output " << NoteText(c, "output_sha256") << "\n";
    }
    if (checks->empty()) std::cout << "  check:   none\n";
  }
  if (auto box = n.find("sandbox"); box != n.end() && box->is_object()) {
    std::cout << "  sandbox: " << NoteText(*box, "mode") << ", policy " << NoteText(*box, "policy") << "\n";
  }
  if (auto hooks = n.find("hooks"); hooks != n.end() && hooks->is_array()) {
    std::string ran;
    for (const auto& h : *hooks) {
      if (!h.is_object()) continue;
      ran += (ran.empty() ? "" : ", ") + NoteText(h, "event") + " (" + NoteText(h, "ran") + " ran)";
    }
    std::cout << "  hooks:   " << (ran.empty() ? "none" : ran) << "\n";
  }
  if (auto d = n.find("decided"); d != n.end() && d->is_object()) {
    std::cout << "  decided: by " << NoteText(*d, "by") << " (" << NoteText(*d, "as") << ")\n";
  }
}

int Show(Globals& g, const MergesArgs& a) {
  auto id = MergeId(a.id);
  if (!id.ok()) return Fail(id.status());
  auto opened = OpenMerges(g, a);
  if (!opened.ok()) return Fail(opened.status());
  auto m = opened->merges->Get(*id);
  if (!m.ok()) return Fail(m.status());
  if (a.json) {
    Json j = MergeRequestToJson(*m);
    if (a.diff) {
      auto d = git::DiffOfMerge(g.ws(), *m);
      if (!d.ok()) return Fail(d.status());
      j["diff"] = *d;
    }
    auto note = NoteOf(g, *opened->store, *m);
    if (!note.ok()) return Fail(note.status());
    j["provenance"] = *note;
    std::cout << DumpJsonPretty(j) << std::endl;
    return 0;
  }
  auto note = NoteOf(g, *opened->store, *m);
  if (!note.ok()) return Fail(note.status());
  std::cout << "merge request " << m->id << ": " << MergeStateName(m->status) << "\n"
            << "task:    #" << m->task << " " << m->subject << "\n"
            << "owner:   " << m->owner << " (" << m->branch << ", commit " << Short(m->commit) << ")\n"
            << "target:  " << m->target << "\n";
  if (!m->merged_commit.empty()) std::cout << "merged:  " << Short(m->merged_commit) << "\n";
  if (!m->files.empty()) {
    std::cout << "files:  ";
    for (const auto& f : m->files) std::cout << " " << f;
    std::cout << "\n";
  }
  if (!m->decided_by.empty()) {
    std::cout << "decided: " << (m->approved ? "approved" : "rejected") << " by " << m->decided_by
              << (m->feedback.empty() ? "" : ": " + m->feedback) << "\n";
  }
  if (note->is_object()) PrintNote(*note);
  if (m->status == MergeState::kMerged && !note->is_object()) std::cout << "provenance: none recorded\n";
  if (!m->output.empty()) std::cout << "output:\n" << m->output << (m->output.back() == '\n' ? "" : "\n");
  if (a.diff) {
    auto d = git::DiffOfMerge(g.ws(), *m);
    if (!d.ok()) return Fail(d.status());
    std::cout << "diff:\n" << (d->empty() ? "(no changes)\n" : *d);
  }
  std::cout.flush();
  return 0;
}

int Decide(Globals& g, const MergesArgs& a, bool approve) {
  auto id = MergeId(a.id);
  if (!id.ok()) return Fail(id.status());
  std::string by = a.as.empty() ? "user" : a.as;
  if (Status s = ValidateName("member name", by); !s.ok()) return Fail(s);
  auto opened = OpenMerges(g, a);
  if (!opened.ok()) return Fail(opened.status());
  // The person's MergeDecided hooks, run as a host runs them (in its sandbox).
  git::MergeHooks hooks{nullptr, sandbox::Sandbox::Off(), g.ws()};
  if (!approve) {
    auto chosen = ChooseHooks(g.ws());
    if (!chosen.ok()) return Fail(chosen.status());
    if (*chosen && (*chosen)->Wants(hooks::Event::kMergeDecided, {"rejected"})) {
      auto box = HostsSandbox(g.ws(), "merges");
      if (!box.ok()) return Fail(box.status());
      hooks = {*chosen, *box, g.ws()};
    }
  }
  auto m = git::DecideMerge(*opened->store, g.team, *id, approve, a.feedback, by, hooks);
  if (!m.ok()) return Fail(m.status());
  std::cout << (approve ? "approved" : "rejected") << " merge request " << m->id << " (task #" << m->task << " by "
            << m->owner << ")" << (approve ? ": the merge queue moves " + m->target + " to it" : ": " + m->owner + " is told")
            << std::endl;
  return 0;
}

// The queue held at a target moved outside it (DESIGN §19) merges onto
// the target as it is now: a person's decision, never an agent's.
int Resume(Globals& g, const MergesArgs& a) {
  if (const std::string agent = SandboxedAgent(); !agent.empty()) {
    return Fail(Status::FailedPrecondition("resuming the merge queue is for a person to decide, not " + agent));
  }
  auto opened = OpenMerges(g, a);
  if (!opened.ok()) return Fail(opened.status());
  auto cfg = opened->store->LoadTeam(g.team);
  if (!cfg.ok()) return Fail(cfg.status());
  const TeamGit& tg = cfg->git;
  if (!tg.configured()) {
    return Fail(Status::FailedPrecondition("team '" + g.team + "' merges nothing (no teammate works in a worktree)"));
  }
  if (!tg.held()) {
    return Fail(Status::FailedPrecondition("the merge queue of team '" + g.team + "' is not held: " +
                                           tg.target_name() + " is where the queue left it"));
  }
  if (Status fetched = git::FetchTarget(g.ws(), g.team, tg); !fetched.ok()) return Fail(fetched);
  auto now = git::ResolveCommit(git::Git(g.ws().root()), tg.target_ref());
  if (!now.ok()) return Fail(now.status());
  if (now->empty()) return Fail(Status::NotFound("the target branch '" + tg.target_name() + "' is gone"));
  auto resumed = opened->store->UpdateTeam(g.team, [&](TeamConfig& c) {
    c.git.target_at = *now;
    c.git.target_moving_to.clear();
    c.git.held_found.clear();
    c.git.held_since = 0;
    return Status::Ok();
  });
  if (!resumed.ok()) return Fail(resumed.status());
  std::cout << "resumed: the merge queue of team " << g.team << " merges onto " << tg.target_name() << " from "
            << Short(*now) << std::endl;
  return 0;
}

}  // namespace

void AddMergesCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<MergesArgs>();
  CLI::App* merges = app.add_subcommand("merges", "The team's merge requests (worktree isolation)");
  AddTeamOption(merges, g);
  merges->require_subcommand(1);
  AddStoreOption(merges, g);

  CLI::App* list = merges->add_subcommand("list", "List merge requests by id");
  list->add_flag("--json", a->json, "Machine-readable output");
  AddArchivedOption(list, a->archived);
  list->callback([&g, a] { g.action = [&g, a] { return List(g, *a); }; });

  CLI::App* show = merges->add_subcommand("show", "Show one merge request (with the check's output)");
  show->add_option("ID", a->id, "Merge request id")->required();
  show->add_flag("--json", a->json, "Machine-readable output");
  show->add_flag("--diff", a->diff, "Also what it changes, as a unified diff");
  AddArchivedOption(show, a->archived);
  show->callback([&g, a] { g.action = [&g, a] { return Show(g, *a); }; });

  for (bool approve : {true, false}) {
    CLI::App* d = merges->add_subcommand(approve ? "approve" : "reject",
                                         approve ? "Approve a merge waiting for review" : "Send a merge back to its owner");
    d->add_option("ID", a->id, "Merge request id")->required();
    d->add_option("--feedback", a->feedback, approve ? "A note kept with the decision" : "What the owner should change");
    d->add_option("--as", a->as, "Who decides (default: user)");
    d->callback([&g, a, approve] { g.action = [&g, a, approve] { return Decide(g, *a, approve); }; });
  }

  CLI::App* resume = merges->add_subcommand(
      "resume", "Merge onto the target as it is now, after it was moved outside the merge queue");
  resume->callback([&g, a] { g.action = [&g, a] { return Resume(g, *a); }; });
}

}  // namespace mates::cli
