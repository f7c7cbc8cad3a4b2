// See store.h: the task board and its claims.
#include "pg/store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/json.h"
#include "core/names.h"
#include "pg/export.h"
#include "pg/schema.h"
#include "pg/store_rows.h"
#include "store/task_rules.h"

namespace mates::pg {

Result<Task> TaskRows::Create(const std::string& team, const TaskDraft& draft) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(ValidateLease(draft.paths));
  if (draft.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task's subject cannot be empty");
  }
  std::string metadata = "{}";
  if (!draft.metadata_json.empty()) {
    MATES_ASSIGN_OR_RETURN(Json md, ParseTaskMetadata(draft.metadata_json));
    metadata = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckTaskMetadataSize(metadata));
  }
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<Task> {
    // Ids are allocated, and the dependency graph changed, one writer at a
    // time per board (Update takes the same lock).
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {BoardKey(team)}).status());
    std::vector<int64_t> blockers;
    for (int64_t b : draft.blocked_by) {
      if (std::find(blockers.begin(), blockers.end(), b) == blockers.end()) blockers.push_back(b);
    }
    if (!blockers.empty()) {
      MATES_ASSIGN_OR_RETURN(Rows have, c->Exec("SELECT count(*) FROM mates_tasks WHERE team = $1 AND "
                                                "id = ANY($2::bigint[]) AND status <> 'deleted'",
                                                {team, ArrayText(blockers)}));
      if (have.integer(0, 0) != static_cast<int64_t>(blockers.size())) {
        return Status::NotFound("a task it is blocked by does not exist");
      }
    }
    std::string now = Seconds(WallSeconds());
    auto r = c->Exec(std::string("INSERT INTO mates_tasks (team, id, subject, description, active_form, status, "
                                 "blocked_by, metadata, created_at, updated_at, paths) "
                                 "SELECT $1, COALESCE(max(id), 0) + 1, $2, $3, $4, 'pending', $5::bigint[], $6, "
                                 "$7, $7, $8::jsonb FROM mates_tasks WHERE team = $1 RETURNING ") +
                         kTaskColumns,
                     {team, draft.subject, draft.description, draft.active_form, ArrayText(blockers), metadata, now,
                      DumpJson(Json(draft.paths))});
    if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(*r, 0));
    if (!blockers.empty()) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocks = array_append(blocks, $3) "
                                    "WHERE team = $1 AND id = ANY($2::bigint[])",
                                    {team, ArrayText(blockers), Num(t.id)})
                                .status());
    }
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(BoardKey(team))}).status());
    return t;
  });
}

Result<Task> TaskRows::Get(const std::string& team, int64_t id) {
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kTaskColumns +
                                             " FROM mates_tasks WHERE team = $1 AND id = $2",
                                         {team, Num(id)}));
  if (r.size() == 0) return NoTask(id);
  return TaskOf(r, 0);
}

Result<std::vector<Task>> TaskRows::List(const std::string& team, bool include_deleted) {
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kTaskColumns +
                                             " FROM mates_tasks WHERE team = $1 AND (status <> 'deleted' OR $2) "
                                             "ORDER BY id",
                                         {team, include_deleted ? "t" : "f"}));
  std::vector<Task> out;
  for (int i = 0; i < r.size(); ++i) {
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, i));
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::optional<Task>> TaskRows::ClaimNext(const std::string& team, const std::string& owner,
                                             ClaimOutlook* outlook) {
  MATES_RETURN_IF_ERROR(CheckNames(team, owner));
  const int64_t count_up_to = outlook != nullptr ? std::max<int64_t>(outlook->count_up_to, 0) : 0;
  if (outlook != nullptr) *outlook = ClaimOutlook{};
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return store_.Fenced(*c, team, owner, [&]() -> Result<std::optional<Task>> {
    if (outlook != nullptr) {
      // mates_claim_look (schema.cc): the same claim, then what it left.
      MATES_ASSIGN_OR_RETURN(
          Rows r, c->Exec("SELECT (c.claimed).id, (c.claimed).subject, (c.claimed).description, "
                          "(c.claimed).active_form, (c.claimed).status, (c.claimed).owner, (c.claimed).blocked_by, "
                          "(c.claimed).blocks, (c.claimed).metadata, (c.claimed).created_at, (c.claimed).updated_at, "
                          "(c.claimed).history::text, (c.claimed).paths::text, "
                          "c.unowned_left, c.assigned_to FROM mates_claim_look($1, $2, $3, $4) c",
                          {team, owner, Seconds(WallSeconds()), Num(count_up_to)}));
      if (r.size() != 1) return Status::Internal("mates_claim_look returned " + Num(r.size()) + " rows");
      outlook->unowned = r.integer(0, 13);
      std::string_view names = r.text(0, 14);
      for (size_t at = 0; at < names.size();) {
        size_t end = std::min(names.find(' ', at), names.size());
        std::string name(names.substr(at, end - at));
        // A row written by hand with a name no claimer can have wakes nobody.
        if (ValidateName("member name", name).ok()) outlook->assigned_to.push_back(std::move(name));
        at = end + 1;
      }
      if (r.null(0, 0)) return std::optional<Task>();
      MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, 0));
      return std::optional<Task>(std::move(t));
    }
    // mates_claim_next (schema.cc): assigned first, then unowned, by id,
    // skipping rows other claimers hold. A claim notifies no one: it makes
    // nothing claimable.
    MATES_ASSIGN_OR_RETURN(Rows r, c->Exec(std::string("SELECT ") + kTaskColumns +
                                               " FROM mates_claim_next($1, $2, $3)",
                                           {team, owner, Seconds(WallSeconds())}));
    if (r.size() == 0) return std::optional<Task>();
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, 0));
    return std::optional<Task>(std::move(t));
  });
}

Result<std::shared_ptr<ClaimLine>> TaskRows::ClaimLineOf(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  std::lock_guard<std::mutex> lock(lines_mu_);
  auto it = lines_.find(team);
  if (it != lines_.end()) return it->second.line;
  Line l;
  l.line = ClaimLine::Told([this, team](int64_t id, const TaskPatch& patch, const Caller& caller) {
    return Update(team, id, patch, caller);
  });
  ClaimLine* line = l.line.get();
  MATES_ASSIGN_OR_RETURN(l.changes, store_.listener().Subscribe(BoardKey(team), [line](int64_t wanted) { line->Changed(wanted); }));
  return lines_.emplace(team, std::move(l)).first->second.line;
}

Result<std::optional<Task>> TaskRows::CompleteIfInProgress(const std::string& team, int64_t id,
                                                        const std::string& owner) {
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return store_.Fenced(*c, team, owner, [&]() -> Result<std::optional<Task>> {
    // The NOTIFY says how many tasks it left claimable, as far as this
    // statement sees (a blocker completed at the same moment by another is
    // not seen: a host's line wakes one at least, and the look's outlook
    // wakes the rest), so that a host wakes that many idle teammates at once.
    MATES_ASSIGN_OR_RETURN(
        Rows r, c->Exec(std::string("WITH upd AS (UPDATE mates_tasks SET status = 'completed', updated_at = $4 "
                                    "WHERE team = $1 AND id = $2 AND owner = $3 AND status = 'in_progress' "
                                    "RETURNING *) SELECT ") +
                            kTaskColumns +
                            ", (SELECT count(*) FROM (SELECT pg_notify($5, (SELECT count(*) FROM mates_tasks d "
                            "WHERE d.team = $1 AND d.id = ANY(u.blocks) AND d.status = 'pending' AND "
                            "NOT EXISTS (SELECT 1 FROM unnest(d.blocked_by) AS bid WHERE bid <> $2 AND (SELECT b.status FROM "
                            "mates_tasks b WHERE b.team = d.team AND b.id = bid) NOT IN ('completed', 'deleted')))::text) "
                            "FROM upd u) n) FROM upd",
                        {team, Num(id), owner, Seconds(WallSeconds()), ChannelOf(BoardKey(team))}));
    if (r.size() != 1) return std::optional<Task>();
    MATES_ASSIGN_OR_RETURN(Task t, TaskOf(r, 0));
    return std::optional<Task>(std::move(t));
  });
}

Result<Task> TaskRows::Complete(const std::string& team, int64_t id, const std::string& owner) {
  MATES_RETURN_IF_ERROR(CheckNames(team, owner));
  MATES_ASSIGN_OR_RETURN(std::optional<Task> done, CompleteIfInProgress(team, id, owner));
  if (done) return std::move(*done);
  MATES_ASSIGN_OR_RETURN(Task t, Get(team, id));
  return Status::Conflict("task #" + Num(id) + " is " + std::string(TaskStatusName(t.status)) +
                          (t.owner.empty() ? "" : ", owned by '" + t.owner + "'") + ", not in progress for '" +
                          owner + "'");
}

namespace {

// The board's tasks by id, as the update rules see them.
struct BoardRows {
  std::map<int64_t, Task> tasks;
  TaskLookup lookup() const {
    return [this](int64_t id) -> const Task* {
      auto it = tasks.find(id);
      return it == tasks.end() ? nullptr : &it->second;
    };
  }
};

BoardRows BoardOf(const Rows& r) {
  BoardRows board;
  for (int i = 0; i < r.size(); ++i) {
    auto t = TaskOf(r, i);
    if (t.ok()) board.tasks[t->id] = std::move(*t);  // (a status edited into garbage: not a task)
  }
  return board;
}

Result<BoardRows> ReadBoard(Connection& c, const std::string& team) {
  MATES_ASSIGN_OR_RETURN(
      Rows r,
      c.Exec(std::string("SELECT ") + kTaskColumns + " FROM mates_tasks WHERE team = $1", {team}));
  return BoardOf(r);
}

// Only the tasks `ids` of the board.
Result<BoardRows> ReadTasks(Connection& c, const std::string& team,
                            const std::vector<int64_t>& ids) {
  MATES_ASSIGN_OR_RETURN(Rows r,
                         c.Exec(std::string("SELECT ") + kTaskColumns +
                                    " FROM mates_tasks WHERE team = $1 AND id = ANY($2::bigint[])",
                                {team, ArrayText(ids)}));
  return BoardOf(r);
}

// Task `id`, its row held until the transaction ends.
Result<Task> HoldTask(Connection& c, const std::string& team, int64_t id) {
  MATES_ASSIGN_OR_RETURN(Rows r, c.Exec(std::string("SELECT ") + kTaskColumns +
                                            " FROM mates_tasks WHERE team = $1 AND id = $2 FOR UPDATE",
                                        {team, Num(id)}));
  if (r.size() == 0) return NoTask(id);
  return TaskOf(r, 0);
}

Status WriteTask(Connection& c, const std::string& team, const Task& t) {
  return c.Exec("UPDATE mates_tasks SET subject = $3, description = $4, active_form = $5, status = $6, owner = $7, "
                "blocked_by = $8::bigint[], blocks = $9::bigint[], metadata = $10, updated_at = $11, "
                "paths = $12::jsonb WHERE team = $1 AND id = $2",
                {team, Num(t.id), t.subject, t.description, t.active_form, std::string(TaskStatusName(t.status)),
                 t.owner, ArrayText(t.blocked_by), ArrayText(t.blocks), t.metadata_json, Seconds(t.updated_at),
                 DumpJson(Json(t.paths))})
      .status();
}

}  // namespace

Result<Task> TaskRows::Update(const std::string& team, int64_t id, const TaskPatch& patch, const Caller& caller) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Json metadata_patch, CheckPatch(patch));
  // A teammate completing its own task in progress, the write every
  // handoff waits on: Complete's one statement, which the rules below
  // allow as they stand (it changes no link, so it needs no board lock),
  // instead of a transaction of six. Whatever it does not match (a task
  // not in progress, another's, the lead's call) goes the long way, which
  // says why it is refused or does it.
  const bool completes_own = patch.status == TaskStatus::kCompleted && !caller.is_lead &&
                             !patch.owner && !patch.subject && !patch.description &&
                             !patch.active_form && !patch.metadata_json &&
                             patch.add_blocked_by.empty() && patch.add_blocks.empty() &&
                             CheckNames(team, caller.name).ok();
  if (completes_own) {
    MATES_ASSIGN_OR_RETURN(std::optional<Task> done, CompleteIfInProgress(team, id, caller.name));
    if (done) return std::move(*done);
  }
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<Task> {
    if (!caller.name.empty()) store_.Fence(*c, team, caller.name);
    // The graph changes one update at a time per board (task creation
    // takes the same lock); claims hold rows, not this lock.
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {BoardKey(team)}).status());
    MATES_ASSIGN_OR_RETURN(Task t, HoldTask(*c, team, id));
    // The rules look at other tasks only for new links (the graph, for
    // cycles) and for a task being started (its blockers): the board is
    // read only then. A completion, the handoff's write, reads its own
    // row, not every task on the board.
    BoardRows board;
    if (!patch.add_blocked_by.empty() || !patch.add_blocks.empty()) {
      MATES_ASSIGN_OR_RETURN(board, ReadBoard(*c, team));
    } else if (patch.status == TaskStatus::kInProgress && t.status != TaskStatus::kInProgress &&
               !t.blocked_by.empty()) {
      MATES_ASSIGN_OR_RETURN(board, ReadTasks(*c, team, t.blocked_by));
    }
    board.tasks[id] = t;  // the version held
    const TaskLookup lookup = board.lookup();
    // The file board's rules, in the same order (store/task_rules.h).
    MATES_RETURN_IF_ERROR(CheckUpdateAllowed(t, patch, caller));
    MATES_ASSIGN_OR_RETURN(NewLinks links, CheckNewLinks(t, patch, lookup));
    std::vector<int64_t> dropped;
    MATES_RETURN_IF_ERROR(ApplyPatch(t, patch, metadata_patch, links, caller, lookup, &dropped));
    const std::string now = Seconds(WallSeconds());
    t.updated_at = WallSeconds();
    MATES_RETURN_IF_ERROR(WriteTask(*c, team, t));
    // The other side of each link, and a deleted task out of everyone's
    // lists: changed in place, field by field, so that a claim of one of
    // those rows meanwhile is kept.
    for (int64_t b : links.blocked_by) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocks = array_append(blocks, $3), updated_at = $4 "
                                    "WHERE team = $1 AND id = $2",
                                    {team, Num(b), Num(id), now})
                                .status());
    }
    for (int64_t b : links.blocks) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocked_by = array_append(blocked_by, $3), "
                                    "updated_at = $4 WHERE team = $1 AND id = $2",
                                    {team, Num(b), Num(id), now})
                                .status());
    }
    if (t.status == TaskStatus::kDeleted) {
      MATES_RETURN_IF_ERROR(c->Exec("UPDATE mates_tasks SET blocked_by = array_remove(blocked_by, $2), "
                                    "blocks = array_remove(blocks, $2), updated_at = $3 "
                                    "WHERE team = $1 AND id <> $2 AND ($2 = ANY(blocked_by) OR $2 = ANY(blocks))",
                                    {team, Num(id), now})
                                .status());
    }
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(BoardKey(team))}).status());
    return t;
  });
}

Result<Task> TaskRows::Claim(const std::string& team, int64_t id, const std::string& owner) {
  MATES_RETURN_IF_ERROR(CheckNames(team, owner));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<Task> {
    store_.Fence(*c, team, owner);
    MATES_ASSIGN_OR_RETURN(Task t, HoldTask(*c, team, id));
    const std::string ref = "task #" + Num(id);
    if (t.status == TaskStatus::kDeleted) return NoTask(id);
    if (t.owner == owner && t.status == TaskStatus::kInProgress) return t;  // already ours
    if (!t.owner.empty() && t.owner != owner) return Status::Conflict(ref + " is already claimed by '" + t.owner + "'");
    if (t.status != TaskStatus::kPending) return Status::Conflict(ref + " is " + std::string(TaskStatusName(t.status)));
    MATES_ASSIGN_OR_RETURN(BoardRows board, ReadBoard(*c, team));
    std::string why = BlockedReason(t, board.lookup());
    if (!why.empty()) return Status::FailedPrecondition(ref + " is blocked by " + why);
    t.owner = owner;
    t.status = TaskStatus::kInProgress;
    t.updated_at = WallSeconds();
    MATES_RETURN_IF_ERROR(WriteTask(*c, team, t));
    return t;
  });
}

}  // namespace mates::pg
