#include "store/task.h"

#include <nlohmann/json.hpp>

namespace mates {

std::string_view TaskStatusName(TaskStatus s) {
  switch (s) {
    case TaskStatus::kPending:
      return "pending";
    case TaskStatus::kInProgress:
      return "in_progress";
    case TaskStatus::kCompleted:
      return "completed";
    case TaskStatus::kDeleted:
      return "deleted";
  }
  return "pending";
}

Result<TaskStatus> ParseTaskStatus(std::string_view name) {
  if (name == "pending") return TaskStatus::kPending;
  if (name == "in_progress") return TaskStatus::kInProgress;
  if (name == "completed") return TaskStatus::kCompleted;
  if (name == "deleted") return TaskStatus::kDeleted;
  return Status::InvalidArgument("unknown task status '" + std::string(name) +
                                 "' (valid: pending, in_progress, completed, deleted)");
}

Result<TaskStatus> ParseTaskStatusAsSaid(std::string_view name) {
  // What people and models say for the two in between and at the end.
  if (name == "done" || name == "complete") return TaskStatus::kCompleted;
  if (name == "in-progress" || name == "in progress" || name == "started") return TaskStatus::kInProgress;
  return ParseTaskStatus(name);
}

Json TaskToJson(const Task& t) {
  Json metadata = Json::object();
  auto parsed = ParseJson(t.metadata_json);
  if (parsed.ok() && parsed->is_object()) metadata = std::move(*parsed);
  // A member at a time, moved (roster.cc says why).
  Json j = JsonObject(11);
  j["id"] = t.id;
  j["subject"] = t.subject;
  j["description"] = t.description;
  j["activeForm"] = t.active_form;
  j["status"] = std::string(TaskStatusName(t.status));
  j["owner"] = t.owner;
  j["blockedBy"] = t.blocked_by;
  j["blocks"] = t.blocks;
  j["metadata"] = std::move(metadata);
  if (!t.paths.empty()) j["paths"] = t.paths;
  j["created_at"] = t.created_at;
  j["updated_at"] = t.updated_at;
  if (!t.history.empty()) {
    Json h = Json::array();
    for (const auto& e : t.history) {
      h.push_back({{"at", e.at}, {"status", std::string(TaskStatusName(e.status))}, {"owner", e.owner}});
    }
    j["history"] = std::move(h);
  }
  return j;
}

void NoteHistory(Task* t) {
  if (!t->history.empty() && t->history.back().status == t->status && t->history.back().owner == t->owner) return;
  t->history.push_back({t->updated_at, t->status, t->owner});
  if (t->history.size() > kMaxTaskHistory) {
    t->history.erase(t->history.begin(), t->history.end() - static_cast<std::ptrdiff_t>(kMaxTaskHistory));
  }
}

// A task's history as stored: read like input, an entry of another shape
// left out, the latest kMaxTaskHistory kept.
std::vector<TaskEvent> TaskHistoryFromJson(const Json& h) {
  std::vector<TaskEvent> out;
  if (!h.is_array()) return out;
  for (const auto& e : h) {
    if (!e.is_object()) continue;
    auto at = e.find("at");
    auto status = e.find("status");
    auto owner = e.find("owner");
    if (at == e.end() || !at->is_number() || status == e.end() || !status->is_string()) continue;
    auto st = ParseTaskStatus(status->get<std::string>());
    if (!st.ok()) continue;
    std::string who = owner != e.end() && owner->is_string() ? owner->get<std::string>() : "";
    if (who.size() > 64) continue;
    out.push_back({at->get<double>(), *st, std::move(who)});
  }
  if (out.size() > kMaxTaskHistory) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(kMaxTaskHistory));
  return out;
}

namespace {
Result<std::vector<int64_t>> IdList(const Json& j, const char* key) {
  std::vector<int64_t> ids;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return ids;
  if (!it->is_array()) return Status::InvalidArgument(std::string("'") + key + "' must be an array");
  for (const auto& v : *it) {
    MATES_ASSIGN_OR_RETURN(int64_t id, JsonId(v, key));
    ids.push_back(id);
  }
  return ids;
}
}  // namespace

Result<Task> TaskFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("task is not a JSON object");
  Task t;
  auto id = j.find("id");
  if (id == j.end()) return Status::InvalidArgument("task has no id");
  MATES_ASSIGN_OR_RETURN(t.id, JsonId(*id, "id"));
  MATES_ASSIGN_OR_RETURN(t.subject, JsonString(j, "subject", true));
  MATES_ASSIGN_OR_RETURN(t.description, JsonString(j, "description", false));
  MATES_ASSIGN_OR_RETURN(t.active_form, JsonString(j, "activeForm", false));
  MATES_ASSIGN_OR_RETURN(std::string status, JsonString(j, "status", false, "pending"));
  MATES_ASSIGN_OR_RETURN(t.status, ParseTaskStatus(status));
  MATES_ASSIGN_OR_RETURN(t.owner, JsonString(j, "owner", false));
  MATES_ASSIGN_OR_RETURN(t.blocked_by, IdList(j, "blockedBy"));
  MATES_ASSIGN_OR_RETURN(t.blocks, IdList(j, "blocks"));
  auto md = j.find("metadata");
  t.metadata_json = (md != j.end() && md->is_object()) ? DumpJson(*md) : "{}";
  // A lease that is not one (edited by hand) is none.
  if (auto p = j.find("paths"); p != j.end() && p->is_array()) {
    std::vector<std::string> paths;
    for (const auto& x : *p) {
      if (x.is_string()) paths.push_back(x.get<std::string>());
    }
    if (ValidateLease(paths).ok()) t.paths = std::move(paths);
  }
  MATES_ASSIGN_OR_RETURN(t.created_at, JsonNumber(j, "created_at", 0));
  MATES_ASSIGN_OR_RETURN(t.updated_at, JsonNumber(j, "updated_at", 0));
  if (auto h = j.find("history"); h != j.end()) t.history = TaskHistoryFromJson(*h);
  return t;
}

std::vector<std::pair<double, double>> WorkWindows(const Task& t, const std::string& owner, double until) {
  std::vector<std::pair<double, double>> windows;
  bool open = false;
  double from = 0;
  for (const TaskEvent& e : t.history) {
    const bool working = e.status == TaskStatus::kInProgress && e.owner == owner;
    if (working && !open) from = e.at;
    if (!working && open) windows.emplace_back(from, e.at);
    open = working;
  }
  if (open) windows.emplace_back(from, until);
  return windows;
}

Status ValidateLease(const std::vector<std::string>& paths) {
  if (paths.size() > kMaxLeasePaths) {
    return Status::InvalidArgument("a task's lease names at most " + std::to_string(kMaxLeasePaths) + " paths");
  }
  for (const auto& p : paths) {
    const bool bad = p.empty() || p.size() > 256 || p[0] == '/' || p.find('\0') != std::string::npos ||
                     p.find('\n') != std::string::npos || p == ".." || p.rfind("../", 0) == 0 ||
                     p.find("/../") != std::string::npos ||
                     (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0);
    if (bad) {
      return Status::InvalidArgument("'" + p.substr(0, 80) +
                                     "' is no lease path: a path or glob inside the workspace (src/auth/**)");
    }
  }
  return Status::Ok();
}

namespace {

size_t WildcardAt(const std::string& p) { return p.find_first_of("*?["); }

bool Overlap(const std::string& a, const std::string& b) {
  auto starts = [](const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; };
  if (WildcardAt(a) == std::string::npos && WildcardAt(b) == std::string::npos) {
    return a == b || starts(b, a + "/") || starts(a, b + "/");
  }
  const std::string pa = a.substr(0, WildcardAt(a)), pb = b.substr(0, WildcardAt(b));
  return starts(pa, pb) || starts(pb, pa);
}

}  // namespace

bool LeasesOverlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (Overlap(x, y)) return true;
    }
  }
  return false;
}

std::string TaskRef(int64_t id) { return "#" + std::to_string(id); }

Status NoTask(int64_t id) { return Status::NotFound("no task " + TaskRef(id)); }

}  // namespace mates
