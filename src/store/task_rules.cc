#include "store/task_rules.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/limits.h"
#include "core/names.h"

namespace mates {

Result<Json> ParseTaskMetadata(const std::string& text) {
  if (text.size() > 4 * kMaxTaskMetadataBytes) {
    return Status::InvalidArgument("metadata is " + std::to_string(text.size()) +
                                   " bytes; a task's metadata may be " +
                                   std::to_string(kMaxTaskMetadataBytes) + " bytes at most");
  }
  auto md = ParseJson(text);
  if (!md.ok()) return Status::InvalidArgument("metadata: " + md.status().message());
  if (!md->is_object()) return Status::InvalidArgument("metadata must be a JSON object");
  return md;
}

Status CheckTaskMetadataSize(const std::string& compact) {
  if (compact.size() > kMaxTaskMetadataBytes) {
    return Status::InvalidArgument("metadata would be " + std::to_string(compact.size()) +
                                   " bytes; a task's metadata may be " +
                                   std::to_string(kMaxTaskMetadataBytes) + " bytes at most");
  }
  return Status::Ok();
}

Result<Json> CheckPatch(const TaskPatch& patch) {
  if (patch.owner.has_value() && !patch.owner->empty()) {
    MATES_RETURN_IF_ERROR(ValidateName("owner name", *patch.owner));
  }
  if (patch.subject.has_value() && patch.subject->find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task's subject cannot be empty");
  }
  if (patch.paths.has_value()) MATES_RETURN_IF_ERROR(ValidateLease(*patch.paths));
  Json metadata_patch;
  if (patch.metadata_json.has_value()) {
    MATES_ASSIGN_OR_RETURN(metadata_patch, ParseTaskMetadata(*patch.metadata_json));
  }
  return metadata_patch;
}

std::string BlockedReason(const Task& t, const TaskLookup& lookup) {
  std::string why;
  for (int64_t b : t.blocked_by) {
    const Task* blocker = lookup(b);
    if (blocker != nullptr && ReleasesDependents(blocker->status)) continue;
    if (!why.empty()) why += ", ";
    why += TaskRef(b) + (blocker == nullptr ? std::string(" (missing)")
                                            : " (" + std::string(TaskStatusName(blocker->status)) + ")");
  }
  return why;
}

bool DependsOn(int64_t from, int64_t target, const TaskLookup& lookup) {
  std::vector<int64_t> stack = {from};
  std::set<int64_t> visited;
  while (!stack.empty()) {
    int64_t cur = stack.back();
    stack.pop_back();
    if (cur == target) return true;
    if (!visited.insert(cur).second) continue;
    const Task* t = lookup(cur);
    if (t == nullptr) continue;
    for (int64_t b : t->blocked_by) stack.push_back(b);
  }
  return false;
}

Status CheckUpdateAllowed(const Task& t, const TaskPatch& patch, const Caller& caller) {
  const std::string ref = "task " + TaskRef(t.id);
  // Deleted is final: a deleted task holds no one back and takes no
  // dependencies, so nothing may bring it back.
  if (t.status == TaskStatus::kDeleted) {
    return Status::FailedPrecondition(ref + " is deleted; create a new task instead");
  }
  // Who may do what: a teammate works on its own or unowned tasks only.
  if (!caller.is_lead && !t.owner.empty() && t.owner != caller.name) {
    if (patch.owner.has_value() && *patch.owner != t.owner) {
      return Status::FailedPrecondition(ref + " is owned by '" + t.owner + "'; only the lead can reassign it");
    }
    if (patch.status.has_value() && *patch.status != t.status) {
      return Status::FailedPrecondition(ref + " is owned by '" + t.owner +
                                        "'; only its owner or the lead can change its status");
    }
  }
  if (patch.status == TaskStatus::kDeleted && (!patch.add_blocked_by.empty() || !patch.add_blocks.empty())) {
    return Status::InvalidArgument(ref + ": a task being deleted takes no new dependencies");
  }
  return Status::Ok();
}

Result<NewLinks> CheckNewLinks(const Task& t, const TaskPatch& patch, const TaskLookup& lookup) {
  const int64_t id = t.id;
  const std::string ref = "task " + TaskRef(id);
  auto live = [&](int64_t b) -> const Task* {
    const Task* other = lookup(b);
    return other == nullptr || other->status == TaskStatus::kDeleted ? nullptr : other;
  };
  NewLinks links;
  for (int64_t b : patch.add_blocked_by) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    if (live(b) == nullptr) return NoTask(b);
    if (std::find(t.blocked_by.begin(), t.blocked_by.end(), b) != t.blocked_by.end()) continue;
    if (std::find(links.blocked_by.begin(), links.blocked_by.end(), b) != links.blocked_by.end()) continue;
    if (DependsOn(b, id, lookup)) {
      return Status::FailedPrecondition("dependency cycle: " + TaskRef(b) + " already waits on " + TaskRef(id));
    }
    links.blocked_by.push_back(b);
  }
  for (int64_t b : patch.add_blocks) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    const Task* other = live(b);
    if (other == nullptr) return NoTask(b);
    const auto& bb = other->blocked_by;
    if (std::find(bb.begin(), bb.end(), id) != bb.end()) continue;
    if (std::find(links.blocks.begin(), links.blocks.end(), b) != links.blocks.end()) continue;
    if (DependsOn(id, b, lookup) ||
        std::find(links.blocked_by.begin(), links.blocked_by.end(), b) != links.blocked_by.end()) {
      return Status::FailedPrecondition("dependency cycle: " + TaskRef(id) + " already waits on " + TaskRef(b));
    }
    links.blocks.push_back(b);
  }
  return links;
}

Status ApplyPatch(Task& t, const TaskPatch& patch, const Json& metadata_patch, const NewLinks& links,
                  const Caller& caller, const TaskLookup& lookup, std::vector<int64_t>* dropped) {
  if (patch.subject) t.subject = *patch.subject;
  if (patch.paths) t.paths = *patch.paths;
  if (patch.description) t.description = *patch.description;
  if (patch.active_form) t.active_form = *patch.active_form;
  if (patch.owner) t.owner = *patch.owner;
  if (patch.metadata_json) {
    auto current = ParseJson(t.metadata_json);
    Json md = current.ok() && current->is_object() ? std::move(*current) : Json::object();
    for (auto& [k, v] : metadata_patch.items()) {
      if (v.is_null()) {
        md.erase(k);
      } else {
        md[k] = v;
      }
    }
    t.metadata_json = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckTaskMetadataSize(t.metadata_json));
  }
  t.blocked_by.insert(t.blocked_by.end(), links.blocked_by.begin(), links.blocked_by.end());
  t.blocks.insert(t.blocks.end(), links.blocks.begin(), links.blocks.end());
  if (patch.status && *patch.status != t.status) {
    if (*patch.status == TaskStatus::kInProgress) {
      std::string why = BlockedReason(t, lookup);
      if (!why.empty()) return Status::FailedPrecondition("task " + TaskRef(t.id) + " is blocked by " + why);
      if (t.owner.empty() && !caller.is_lead && !caller.name.empty()) t.owner = caller.name;
    }
    t.status = *patch.status;
  }
  // A deleted task keeps no one-sided link: its own lists go, and it
  // leaves the others' (OtherSides).
  if (t.status == TaskStatus::kDeleted) {
    dropped->insert(dropped->end(), t.blocked_by.begin(), t.blocked_by.end());
    dropped->insert(dropped->end(), t.blocks.begin(), t.blocks.end());
    t.blocked_by.clear();
    t.blocks.clear();
  }
  return Status::Ok();
}

Result<std::vector<Task>> OtherSides(const Task& t, const NewLinks& links, const std::vector<int64_t>& dropped,
                                     const std::vector<int64_t>& ids, const TaskLookup& lookup,
                                     const std::function<Result<Task>(int64_t)>& full) {
  std::vector<Task> out;
  for (int64_t b : links.blocked_by) {
    MATES_ASSIGN_OR_RETURN(Task other, full(b));
    other.blocks.push_back(t.id);
    out.push_back(std::move(other));
  }
  for (int64_t b : links.blocks) {
    MATES_ASSIGN_OR_RETURN(Task other, full(b));
    other.blocked_by.push_back(t.id);
    out.push_back(std::move(other));
  }
  if (t.status != TaskStatus::kDeleted) return out;
  // A deleted task no longer holds anyone back: it leaves its dependents'
  // blockedBy and its blockers' blocks (and anyone else who names it).
  std::set<int64_t> touched(dropped.begin(), dropped.end());
  for (int64_t oid : ids) {
    if (oid == t.id) continue;
    const Task* other = lookup(oid);
    if (other == nullptr) continue;
    const auto& bb = other->blocked_by;
    if (std::find(bb.begin(), bb.end(), t.id) != bb.end()) touched.insert(oid);
  }
  for (int64_t oid : touched) {
    auto other = full(oid);
    if (!other.ok()) continue;  // gone or unreadable: nothing to keep consistent
    auto n = std::erase(other->blocked_by, t.id) + std::erase(other->blocks, t.id);
    if (n > 0) out.push_back(std::move(*other));
  }
  return out;
}

}  // namespace mates
