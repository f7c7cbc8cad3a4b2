// See store.h: members' journal copies, activity documents and forecasts.
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

// The lines as one JSON array (a single parameter, however many lines).
std::string LinesParam(const std::vector<std::string>& lines) {
  Json arr = Json::array();
  for (const auto& l : lines) arr.push_back(l);
  return DumpJson(arr);
}

// With a NOTIFY on JournalKey(team) (one: the same notification in one
// transaction is sent once).
const char* const kPutJournal =
    "WITH put AS (INSERT INTO mates_journals (team, member, seq, line) "
    "SELECT $1, $2, $3::bigint + x.ord - 1, x.line "
    "FROM jsonb_array_elements_text($4::jsonb) WITH ORDINALITY AS x(line, ord) "
    "ON CONFLICT (team, member, seq) DO UPDATE SET line = EXCLUDED.line RETURNING 1) "
    "SELECT pg_notify($5, '') FROM put";

}  // namespace

Result<uint64_t> JournalRows::Bytes(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows size, c->Exec("SELECT coalesce(sum(octet_length(line)), 0) FROM mates_journals "
                                            "WHERE team = $1 AND member = $2",
                                            {team, member}));
  return static_cast<uint64_t>(size.integer(0, 0));
}

Result<std::vector<std::string>> JournalRows::Lines(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  const std::string who = "the journal of '" + member + "' in team '" + team + "'";
  MATES_ASSIGN_OR_RETURN(uint64_t size, Bytes(team, member));
  if (size > kMaxJournalBytes) {
    return Status::Corrupt(who + " is over " + std::to_string(kMaxJournalBytes >> 20) + " MiB");
  }
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT seq, CASE WHEN octet_length(line) <= " +
                                             std::to_string(kMaxJournalLineBytes) +
                                             " THEN line END FROM mates_journals "
                                             "WHERE team = $1 AND member = $2 ORDER BY seq",
                                         {team, member}));
  std::vector<std::string> lines;
  lines.reserve(static_cast<size_t>(r.size()));
  for (int i = 0; i < r.size(); ++i) {
    if (r.integer(i, 0) != static_cast<int64_t>(lines.size())) {
      LogWarning(who + " has no line " + std::to_string(lines.size()) + ": what follows is left out");
      break;
    }
    if (r.null(i, 1)) return Status::Corrupt(who + " has a line over " + std::to_string(kMaxJournalLineBytes >> 20) + " MiB");
    lines.emplace_back(r.text(i, 1));
  }
  return lines;
}

Status JournalRows::Put(const std::string& team, const std::string& member, int64_t first,
                         const std::vector<std::string>& lines) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (first < 0) return Status::InvalidArgument("a journal's lines are numbered from 0");
  if (lines.empty()) return Status::Ok();
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return store_.Fenced(*c, team, member, [&] {
    return c->Exec(kPutJournal, {team, member, Num(first), LinesParam(lines), ChannelOf(JournalKey(team))}).status();
  });
}

Status JournalRows::Replace(const std::string& team, const std::string& member,
                             const std::vector<std::string>& lines) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  return InTransaction(*c, [&]() -> Status {
    store_.Fence(*c, team, member);
    MATES_RETURN_IF_ERROR(
        c->Exec("DELETE FROM mates_journals WHERE team = $1 AND member = $2", {team, member}).status());
    if (lines.empty()) return Status::Ok();
    return c->Exec(kPutJournal, {team, member, "0", LinesParam(lines), ChannelOf(JournalKey(team))}).status();
  });
}

Result<std::vector<ModelSpend>> JournalRows::Spent(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  // A team's journals naming countless models (another writer of the
  // database can) are read as 256 rows at most: the models with the most
  // calls, the rest summed as one of no price (as a host reads a journal).
  MATES_ASSIGN_OR_RETURN(
      Rows r, c->Exec("SELECT CASE WHEN n <= 255 THEN model ELSE '' END, sum(calls), sum(input), sum(output), "
                      "sum(cache_write), sum(cache_read) FROM (SELECT *, row_number() OVER (ORDER BY calls DESC, "
                      "model) AS n FROM mates_spend WHERE team = $1 AND calls > 0) s GROUP BY 1 ORDER BY 1",
                      {team}));
  std::vector<ModelSpend> out;
  for (int i = 0; i < r.size(); ++i) {
    // A sum below 0 (lines removed that were never counted) is none.
    const auto count = [&](int col) { return std::max<int64_t>(0, r.integer(i, col)); };
    out.push_back({std::string(r.text(i, 0)), count(1), count(2), count(3), count(4), count(5)});
  }
  return out;
}

// -------------------------------------------------------------- activity

Status JournalRows::PutActivity(const std::string& team, const std::string& member, const std::string& doc) {
  MATES_RETURN_IF_ERROR(CheckNames(team, member));
  if (doc.size() > kMaxStateFileBytes) {
    return Status::InvalidArgument("an activity document may be " + std::to_string(kMaxStateFileBytes) +
                                   " bytes at most");
  }
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire(/*wait=*/false));
  auto r = c->Exec(
      "WITH up AS (INSERT INTO mates_activity (team, member, doc) VALUES ($1, $2, $3) "
      "ON CONFLICT (team, member) DO UPDATE SET doc = EXCLUDED.doc RETURNING 1) "
      "SELECT pg_notify($4, '') FROM up",
      {team, member, doc, ChannelOf(ActivityKey(team))});
  if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
  return Status::Ok();
}

Result<std::vector<std::pair<std::string, std::string>>> JournalRows::Activities(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT member, CASE WHEN octet_length(doc) <= " +
                                             std::to_string(kMaxStateFileBytes) +
                                             " THEN doc END FROM mates_activity WHERE team = $1 ORDER BY member",
                                         {team}));
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < r.size(); ++i) {
    if (r.null(i, 1)) {
      LogWarning("activity of " + std::string(r.text(i, 0)) + "@" + team + ": over " +
                 std::to_string(kMaxStateFileBytes) + " bytes, left out");
      continue;
    }
    out.emplace_back(std::string(r.text(i, 0)), std::string(r.text(i, 1)));
  }
  return out;
}

// ------------------------------------------------------------- forecasts

Status JournalRows::PutForecasts(const std::string& team, const std::vector<ConflictForecast>& forecasts) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  const std::string doc = DumpJson(ForecastsToJson(forecasts));
  if (doc.size() > kMaxForecastBytes) {
    return Status::InvalidArgument("a forecast document may be " + std::to_string(kMaxForecastBytes) +
                                   " bytes at most");
  }
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  auto r = c->Exec(
      "WITH up AS (INSERT INTO mates_forecasts (team, doc) VALUES ($1, $2) "
      "ON CONFLICT (team) DO UPDATE SET doc = EXCLUDED.doc RETURNING 1) "
      "SELECT pg_notify($3, '') FROM up",
      {team, doc, ChannelOf(ForecastKey(team))});
  if (!r.ok()) return NoTeamIfForeignKey(r.status(), team);
  return Status::Ok();
}

Result<std::vector<ConflictForecast>> JournalRows::Forecasts(const std::string& team) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  MATES_ASSIGN_OR_RETURN(Lease c, store_.Acquire());
  MATES_ASSIGN_OR_RETURN(Rows r, c->Exec("SELECT CASE WHEN octet_length(doc) <= " +
                                             std::to_string(kMaxForecastBytes) +
                                             " THEN doc END FROM mates_forecasts WHERE team = $1",
                                         {team}));
  if (r.size() == 0 || r.null(0, 0)) return std::vector<ConflictForecast>{};
  auto j = ParseJson(std::string(r.text(0, 0)));
  return j.ok() ? ForecastsFromJson(*j) : std::vector<ConflictForecast>{};
}

// ------------------------------------------------------------- mailboxes

}  // namespace mates::pg
