// mates tasks --team T [--store URL] list [--json] | get ID | create SUBJECT
//   [--description D] [--blocked-by 1,2] [--paths GLOB…] | update ID [--status S] [--owner O] ...
//   | claim [ID] --owner NAME
// On the file store (the default) or a PostgreSQL one (--store postgres://…
// or $MATES_STORE, DESIGN §13): the same rules, the same output.
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "git/diffs.h"
#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/json.h"
#include "core/names.h"
#include "store/board.h"
#include "git/submit.h"
#include "store/roster.h"
#include "store/task_board.h"

namespace mates::cli {
namespace {

struct TasksArgs {
  std::string id;
  std::string subject;
  std::string description;
  std::string active_form;
  std::string blocked_by;
  std::string status;
  std::string owner;
  std::string metadata;
  std::string add_blocked_by;
  std::string add_blocks;
  std::string paths;
  std::string as;
  bool all = false;
  bool json = false;
  ArchivedChoice archived;
  // Which of the optional update fields were given.
  bool has_subject = false, has_description = false, has_active_form = false,
       has_owner = false, has_metadata = false, has_paths = false;
};

Result<std::vector<int64_t>> ParseIds(const std::string& list, const char* what) {
  std::vector<int64_t> ids;
  for (const auto& piece : SplitList(list)) {
    std::string p = piece[0] == '#' ? piece.substr(1) : piece;
    MATES_ASSIGN_OR_RETURN(int64_t id, ParseId(p, what));
    ids.push_back(id);
  }
  return ids;
}

// An existing team's roster and board in the chosen store (a typo must not
// create a phantom board). One operation per process: no watch to keep.
struct TeamState {
  TeamConfig config;
  std::unique_ptr<TeamStore> store;
  std::unique_ptr<TaskBoard> board;
};

Result<TeamState> OpenTeam(const Globals& g, const TasksArgs& a) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", g.team));
  TeamState s;
  // An archive is this workspace's files, whichever store the team was in.
  if (a.archived.given()) {
    MATES_ASSIGN_OR_RETURN(Workspace ws, ReadingWorkspace(g, g.team, a.archived));
    s.store = FileTeamStore(ws, g.env(), StoreUse{.one_shot = true});
  } else {
    MATES_ASSIGN_OR_RETURN(s.store, OpenChosenStore(g, g.store, g.ws(), StoreUse{.one_shot = true}));
  }
  MATES_ASSIGN_OR_RETURN(s.config, s.store->LoadTeam(g.team));
  s.board = s.store->Board(g.team);
  return s;
}

// The workspace a reading command reads (a deleted team's archive with
// --archived: this workspace's files, whichever store the team was in).
Result<Workspace> Reading(const Globals& g, const TasksArgs& a) {
  return ReadingWorkspace(g, g.team, a.archived);
}

int PrintTask(const Task& t, bool json, const std::string& verb) {
  if (json) {
    std::cout << DumpJsonPretty(TaskToJson(t)) << std::endl;
  } else if (verb.empty()) {
    std::cout << FormatTaskDetail(t);
  } else {
    std::cout << verb << " " << FormatTaskLine(t) << "\n";
  }
  return 0;
}

int List(Globals& g, const TasksArgs& a) {
  auto reading = Reading(g, a);
  if (!reading.ok()) return Fail(reading.status());
  auto team = OpenTeam(g, a);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), g.ws(), g.team, a.archived));
  // Deleted tasks too: a deleted blocker blocks no more.
  auto all = team->board->List(/*include_deleted=*/true);
  if (!all.ok()) return Fail(all.status());
  std::map<int64_t, TaskStatus> statuses;
  std::vector<Task> shown;
  for (auto& t : *all) {
    statuses[t.id] = t.status == TaskStatus::kDeleted ? TaskStatus::kCompleted : t.status;
    if (a.all || t.status != TaskStatus::kDeleted) shown.push_back(std::move(t));
  }
  if (a.json) {
    Json out = Json::array();
    for (const auto& t : shown) out.push_back(TaskToJson(t));
    std::cout << DumpJsonPretty(out) << std::endl;
    return 0;
  }
  if (shown.empty()) std::cout << "no tasks\n";
  for (const auto& t : shown) std::cout << FormatTaskLine(t, &statuses) << "\n";
  return 0;
}

int Get(Globals& g, const TasksArgs& a) {
  auto id = ParseId(a.id, "task id");
  if (!id.ok()) return Fail(id.status());
  auto reading = Reading(g, a);
  if (!reading.ok()) return Fail(reading.status());
  auto team = OpenTeam(g, a);
  if (!team.ok()) return Fail(SayIfArchived(team.status(), g.ws(), g.team, a.archived));
  auto t = team->board->Get(*id);
  if (!t.ok()) return Fail(t.status());
  return PrintTask(*t, a.json, "");
}

// What the task changed (DESIGN §27): its merge request's diff, or its
// owner's branch's.
int Diff(Globals& g, const TasksArgs& a) {
  auto id = ParseId(a.id, "task id");
  if (!id.ok()) return Fail(id.status());
  auto team = OpenTeam(g, a);
  if (!team.ok()) return Fail(team.status());
  auto t = team->board->Get(*id);
  if (!t.ok()) return Fail(t.status());
  auto d = git::DiffOfTask(g.ws(), *team->store, g.team, *t);
  if (!d.ok()) return Fail(d.status());
  if (a.json) {
    std::cout << DumpJson(Json{{"task", t->id}, {"diff", *d}}) << std::endl;
  } else {
    std::cout << (d->empty() ? "task #" + std::to_string(t->id) + ": no changes\n" : *d) << std::flush;
  }
  return 0;
}

int Create(Globals& g, const TasksArgs& a) {
  TaskDraft d;
  d.subject = a.subject;
  d.description = a.description;
  d.active_form = a.active_form;
  d.metadata_json = a.metadata;
  auto blockers = ParseIds(a.blocked_by, "--blocked-by id");
  if (!blockers.ok()) return Fail(blockers.status());
  d.blocked_by = *blockers;
  d.paths = SplitList(a.paths);
  auto team = OpenTeam(g, a);
  if (!team.ok()) return Fail(team.status());
  auto t = team->board->Create(d);
  if (!t.ok()) return Fail(t.status());
  return PrintTask(*t, a.json, "created");
}

int Update(Globals& g, const TasksArgs& a) {
  auto id = ParseId(a.id, "task id");
  if (!id.ok()) return Fail(id.status());
  TaskPatch p;
  if (!a.status.empty()) {
    auto s = ParseTaskStatusAsSaid(a.status);
    if (!s.ok()) return Fail(s.status());
    p.status = *s;
  }
  if (a.has_owner) p.owner = a.owner;
  if (a.has_subject) p.subject = a.subject;
  if (a.has_description) p.description = a.description;
  if (a.has_active_form) p.active_form = a.active_form;
  if (a.has_metadata) p.metadata_json = a.metadata;
  if (a.has_paths) p.paths = SplitList(a.paths);
  auto bb = ParseIds(a.add_blocked_by, "--add-blocked-by id");
  if (!bb.ok()) return Fail(bb.status());
  p.add_blocked_by = *bb;
  auto bl = ParseIds(a.add_blocks, "--add-blocks id");
  if (!bl.ok()) return Fail(bl.status());
  p.add_blocks = *bl;
  Workspace ws = g.ws();
  auto team = OpenTeam(g, a);
  if (!team.ok()) return Fail(team.status());
  Caller caller;
  if (std::string refused = RefusedIdentity("--as", a.as); !refused.empty()) return Usage(refused);
  if (!a.as.empty()) {
    Status s = ValidateName("member name", a.as);
    if (!s.ok()) return Fail(s);
    caller.name = a.as;
  } else {
    caller.name = DefaultMember(team->config);
  }
  caller.is_lead = team->config.IsLead(caller.name);
  // An isolated owner's work completes through the merge queue (DESIGN
  // §12), on either store (its worktree is this machine's).
  if (p.status == TaskStatus::kCompleted) {
    TaskPatch rest = p;
    rest.status.reset();
    auto t = team->board->Update(*id, rest, caller);
    if (!t.ok()) return Fail(t.status());
    auto submitted = git::SubmitForMerge(ws, *team->store, g.team, *id, caller);
    if (!submitted.ok()) return Fail(submitted.status());
    if (submitted->has_value()) {
      if (a.json) {
        Json j = TaskToJson((*submitted)->task);
        j["merge_request"] = MergeRequestToJson((*submitted)->request);
        std::cout << DumpJson(j) << std::endl;
      } else {
        std::cout << (*submitted)->text << std::endl;
      }
      return 0;
    }
  }
  auto t = team->board->Update(*id, p, caller);
  if (!t.ok()) return Fail(t.status());
  return PrintTask(*t, a.json, "updated");
}

int Claim(Globals& g, const TasksArgs& a) {
  Status s = ValidateName("owner name", a.owner);
  if (!s.ok()) return Fail(s);
  std::optional<int64_t> id;
  if (!a.id.empty()) {
    auto parsed = ParseId(a.id, "task id");
    if (!parsed.ok()) return Fail(parsed.status());
    id = *parsed;
  }
  auto team = OpenTeam(g, a);
  if (!team.ok()) return Fail(team.status());
  // A task claimed by no one on the roster would never be worked on.
  if (team->config.Find(a.owner) == nullptr) {
    return Fail(Status::FailedPrecondition("'" + a.owner + "' is not a member of team '" + g.team +
                                           "': only members claim tasks"));
  }
  Task claimed;
  if (id) {
    auto t = team->board->Claim(*id, a.owner);
    if (!t.ok()) return Fail(t.status());
    claimed = *t;
  } else {
    auto t = team->board->ClaimNext(a.owner);
    if (!t.ok()) return Fail(t.status());
    if (!t->has_value()) return Fail(Status::NotFound("nothing claimable"));
    claimed = **t;
  }
  if (a.json) return PrintTask(claimed, true, "");
  std::cout << claimed.id << "\n";
  return 0;
}

}  // namespace

void AddTasksCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<TasksArgs>();
  CLI::App* tasks = app.add_subcommand("tasks", "The team's task board");
  AddTeamOption(tasks, g);
  AddStoreOption(tasks, g);
  tasks->require_subcommand(1);

  auto set = [&g, a](int (*fn)(Globals&, const TasksArgs&)) {
    return [&g, a, fn] { g.action = [&g, a, fn] { return fn(g, *a); }; };
  };

  CLI::App* list = tasks->add_subcommand("list", "List tasks by id");
  list->add_flag("--all", a->all, "Include deleted tasks");
  list->add_flag("--json", a->json, "Machine-readable output");
  AddArchivedOption(list, a->archived);
  list->callback(set(&List));

  CLI::App* get = tasks->add_subcommand("get", "Show one task");
  get->add_option("ID", a->id, "Task id")->required();
  get->add_flag("--json", a->json, "Machine-readable output");
  AddArchivedOption(get, a->archived);
  get->callback(set(&Get));

  CLI::App* diff = tasks->add_subcommand("diff", "What a task changed: its merge request's diff, or its owner's branch's");
  diff->add_option("ID", a->id, "Task id")->required();
  diff->add_flag("--json", a->json, "One JSON document: task, diff");
  diff->callback(set(&Diff));

  CLI::App* create = tasks->add_subcommand("create", "Create a task");
  create->add_option("SUBJECT", a->subject, "What is to be done")->required();
  create->add_option("--description", a->description, "Details");
  create->add_option("--active-form", a->active_form, "Shown while in progress");
  AddListOption(create, "--blocked-by", a->blocked_by, "Ids that must finish first");
  AddListOption(create, "--paths", a->paths,
                "Its file lease: paths or globs it changes (a claim passes over it while one in progress overlaps)");
  create->add_option("--metadata", a->metadata, "A JSON object");
  create->add_flag("--json", a->json, "Machine-readable output");
  create->callback(set(&Create));

  CLI::App* update = tasks->add_subcommand("update", "Change a task");
  update->add_option("ID", a->id, "Task id")->required();
  update->add_option("--status", a->status, "pending, in_progress, completed or deleted");
  auto* owner = update->add_option("--owner", a->owner, "New owner ('' to release)");
  auto* subject = update->add_option("--subject", a->subject, "New subject");
  auto* desc = update->add_option("--description", a->description, "New description");
  auto* form = update->add_option("--active-form", a->active_form, "New active form");
  auto* md = update->add_option("--metadata", a->metadata, "JSON object merged in (null removes)");
  AddListOption(update, "--add-blocked-by", a->add_blocked_by, "Ids this task must wait for");
  AddListOption(update, "--add-blocks", a->add_blocks, "Ids that must wait for this task");
  auto* paths = AddListOption(update, "--paths", a->paths, "Its file lease anew (paths or globs; '' for none)");
  update->add_option("--as", a->as, "Act as this member (default: the lead)");
  update->add_flag("--json", a->json, "Machine-readable output");
  update->callback([&g, a, owner, subject, desc, form, md, paths] {
    a->has_paths = paths->count() > 0;
    a->has_owner = owner->count() > 0;
    a->has_subject = subject->count() > 0;
    a->has_description = desc->count() > 0;
    a->has_active_form = form->count() > 0;
    a->has_metadata = md->count() > 0;
    g.action = [&g, a] { return Update(g, *a); };
  });

  CLI::App* claim = tasks->add_subcommand(
      "claim", "Claim a task (default: the lowest claimable); prints its id");
  claim->add_option("ID", a->id, "Task id");
  claim->add_option("--owner", a->owner, "Who claims it")->required();
  claim->add_flag("--json", a->json, "Print the claimed task as JSON");
  claim->callback(set(&Claim));
}

}  // namespace mates::cli
