// What the files of the PostgreSQL store (store*.cc, teams.cc) share:
// how rows are read and values written in statements. Internal to src/pg.
#pragma once

#include <charconv>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/limits.h"
#include "core/names.h"
#include "core/status.h"
#include "pg/connection.h"
#include "store/message.h"
#include "store/task.h"

namespace mates::pg {

inline constexpr size_t kMaxIdle = 8;
inline constexpr const char* kTaskColumns =
    "id, subject, description, active_form, status, owner, blocked_by, blocks, metadata, created_at, updated_at, "
    "history::text, paths::text";

inline std::string Num(int64_t v) { return std::to_string(v); }

// An inbox row's line, or NULL past the bound on what is read (a row edited
// by hand to hold a gigabyte is not loaded).
inline const std::string kBoundedLine =
    "CASE WHEN octet_length(line) <= " + std::to_string(kMaxStateFileBytes) + " THEN line END";

inline std::string Seconds(double v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, p) : "0";
}

// "{1,2,3}" (PostgreSQL's text form of a bigint[]).
inline std::vector<int64_t> IdArray(std::string_view s) {
  std::vector<int64_t> out;
  if (s.size() < 2) return out;
  s = s.substr(1, s.size() - 2);
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    int64_t v = 0;
    if (std::from_chars(part.data(), part.data() + part.size(), v).ec == std::errc()) out.push_back(v);
    s.remove_prefix(comma == std::string_view::npos ? s.size() : comma + 1);
  }
  return out;
}

inline std::string ArrayText(const std::vector<int64_t>& ids) {
  std::string s = "{";
  for (size_t i = 0; i < ids.size(); ++i) s += (i > 0 ? "," : "") + Num(ids[i]);
  return s + "}";
}

// A message as its one stored line (no newline).
inline std::string LineOf(const Message& m) {
  std::string line = MessageToLine(m);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

inline Result<Task> TaskOf(const Rows& r, int row) {
  Task t;
  t.id = r.integer(row, 0);
  t.subject = std::string(r.text(row, 1));
  t.description = std::string(r.text(row, 2));
  t.active_form = std::string(r.text(row, 3));
  MATES_ASSIGN_OR_RETURN(t.status, ParseTaskStatus(r.text(row, 4)));
  t.owner = std::string(r.text(row, 5));
  t.blocked_by = IdArray(r.text(row, 6));
  t.blocks = IdArray(r.text(row, 7));
  t.metadata_json = std::string(r.text(row, 8));
  std::string_view c = r.text(row, 9), u = r.text(row, 10);
  std::from_chars(c.data(), c.data() + c.size(), t.created_at);
  std::from_chars(u.data(), u.data() + u.size(), t.updated_at);
  // Read like input (DESIGN §10): a history that does not parse is none.
  auto h = ParseJson(r.text(row, 11));
  if (h.ok()) t.history = TaskHistoryFromJson(*h);
  if (auto p = ParseJson(r.text(row, 12)); p.ok() && p->is_array()) {
    std::vector<std::string> paths;
    for (const auto& x : *p) {
      if (x.is_string()) paths.push_back(x.get<std::string>());
    }
    if (ValidateLease(paths).ok()) t.paths = std::move(paths);
  }
  return t;
}

// A row that names a team that is not there is "no such team".
inline Status NoTeamIfForeignKey(Status s, const std::string& team) {
  if (s.code() == StatusCode::kInvalidArgument && s.message().find("foreign key") != std::string::npos) {
    return Status::NotFound("no team '" + team + "'");
  }
  return s;
}

inline Status CheckNames(const std::string& team, const std::string& member) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", team));
  return ValidateName("member name", member);
}

}  // namespace mates::pg
