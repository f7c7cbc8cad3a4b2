// See store.h: merge requests.
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

namespace {

const std::string kBoundedMerge =
    "CASE WHEN octet_length(doc) <= " + std::to_string(kMaxMergeBytes) + " THEN doc END";

Result<MergeRequest> MergeOf(const Rows& r, int row, const std::string& team) {
  const std::string which = "merge request " + std::string(r.text(row, 0)) + " of team '" + team + "'";
  if (r.null(row, 1)) return Status::Corrupt(which + " is too large to read");
  auto j = ParseJson(r.text(row, 1));
  if (!j.ok()) return Status::Corrupt(which + ": " + j.status().message());
  auto m = MergeRequestFromJson(*j);
  if (!m.ok()) return Status::Corrupt(which + ": " + m.status().message());
  if (m->id != r.integer(row, 0)) return Status::Corrupt(which + " holds merge " + std::to_string(m->id));
  return m;
}

Result<std::string> MergeDoc(const MergeRequest& m) {
  std::string doc = DumpJson(MergeRequestToJson(m));
  if (doc.size() > kMaxMergeBytes) {
    return Status::InvalidArgument("a merge request may be " + std::to_string(kMaxMergeBytes) + " bytes at most");
  }
  return doc;
}

Status CheckMergeId(int64_t id) {
  if (id < 1 || id > kMaxTaskId) return Status::InvalidArgument("merge ids are numbers from 1");
  return Status::Ok();
}

Status NoMerge(int64_t id, const std::string& team) {
  return Status::NotFound("no merge request " + std::to_string(id) + " in team '" + team + "'");
}

}  // namespace

Result<MergeRequest> MergeRows::Create(const std::string& team, MergeRequest m) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<MergeRequest> {
    store_.Fence(*c, team, m.owner);
    // One creator at a time per team: ids are dense and never reused.
    MATES_RETURN_IF_ERROR(
        c->Exec("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {MergeKey(team)}).status());
    MATES_ASSIGN_OR_RETURN(Rows last, c->Exec("SELECT coalesce(max(id), 0) FROM mates_merges WHERE team = $1", {team}));
    const int64_t id = last.integer(0, 0) + 1;
    if (id > kMaxTaskId) return Status::FailedPrecondition("team '" + team + "' has no merge id left");
    m.id = id;
    m.created_at = m.updated_at = WallSeconds();
    MATES_ASSIGN_OR_RETURN(std::string doc, MergeDoc(m));
    auto ins = c->Exec("INSERT INTO mates_merges (team, id, doc) VALUES ($1, $2, $3)", {team, Num(id), doc});
    if (!ins.ok()) return NoTeamIfForeignKey(ins.status(), team);
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(MergeKey(team))}).status());
    return m;
  });
}

Result<MergeRequest> MergeRows::Get(const std::string& team, int64_t id) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(CheckMergeId(id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT id, " + kBoundedMerge + " FROM mates_merges WHERE team = $1 AND id = $2",
                                         {team, Num(id)}));
  if (r.size() == 0) return NoMerge(id, team);
  return MergeOf(r, 0, team);
}

Result<std::vector<MergeRequest>> MergeRows::List(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT id, " + kBoundedMerge + " FROM mates_merges WHERE team = $1 ORDER BY id",
                                         {team}));
  std::vector<MergeRequest> out;
  for (int i = 0; i < r.size(); ++i) {
    auto m = MergeOf(r, i, team);
    if (m.ok()) {
      out.push_back(std::move(*m));
    } else {
      LogDebug("merges: skipping " + m.status().message());
    }
  }
  return out;
}

Result<MergeRequest> MergeRows::Update(const std::string& team, int64_t id,
                                        const std::function<Status(MergeRequest&)>& mutate) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_RETURN_IF_ERROR(CheckMergeId(id));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Result<MergeRequest> {
    MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT id, " + kBoundedMerge +
                                               " FROM mates_merges WHERE team = $1 AND id = $2 FOR UPDATE",
                                           {team, Num(id)}));
    if (r.size() == 0) return NoMerge(id, team);
    MATES_ASSIGN_OR_RETURN(MergeRequest m, MergeOf(r, 0, team));
    MATES_RETURN_IF_ERROR(mutate(m));
    m.id = id;
    m.updated_at = WallSeconds();
    MATES_ASSIGN_OR_RETURN(std::string doc, MergeDoc(m));
    MATES_RETURN_IF_ERROR(
        c->Exec("UPDATE mates_merges SET doc = $3 WHERE team = $1 AND id = $2", {team, Num(id), doc}).status());
    MATES_RETURN_IF_ERROR(c->Exec("SELECT pg_notify($1, '')", {ChannelOf(MergeKey(team))}).status());
    return m;
  });
}

// ----------------------------------------------------------------- teams

}  // namespace mates::pg
