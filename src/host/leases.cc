#include "host/leases.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "core/log.h"
#include "git/worktrees.h"
#include "store/board.h"

namespace mates::host {

void LeaseInference::AfterTool(const std::string& team, const std::string& name, const llm::ContentBlock& call,
                               const tools::ToolResult& result) {
  if ((call.name != "write_file" && call.name != "edit_file") || result.is_error) return;
  auto input = ParseJson(call.input_json);
  if (!input.ok() || !input->is_object()) return;
  auto p = input->find("path");
  if (p == input->end() || !p->is_string()) return;
  // The path as the workspace names it: relative to the teammate's root
  // (its worktree, or W).
  fs::path path = fs::path(p->get<std::string>()).lexically_normal();
  if (path.is_absolute()) {
    const fs::path own = git::TeammateWorktree(ws_, team, name);
    fs::path rel = path.lexically_relative(own);
    if (rel.empty() || *rel.begin() == "..") rel = path.lexically_relative(ws_.root());
    path = rel;
  }
  const std::string file = path.generic_string();
  if (file.empty() || !ValidateLease({file}).ok() || file.find_first_of("*?[") != std::string::npos) return;
  auto board = store_->Board(team);
  auto tasks = board->List(false);
  if (!tasks.ok()) return;
  // The task it works on: of those it holds in progress, the one it took
  // last (one it completed may wait in the merge queue, in progress still).
  const Task* current = nullptr;
  auto taken_at = [&](const Task& t) {
    double at = t.updated_at;
    for (const auto& e : t.history) {
      if (e.status == TaskStatus::kInProgress && e.owner == name) at = e.at;
    }
    return at;
  };
  for (const Task& t : *tasks) {
    if (t.status != TaskStatus::kInProgress || t.owner != name) continue;
    if (current == nullptr || taken_at(t) > taken_at(*current)) current = &t;
  }
  if (current == nullptr) return;
  {
    const Task& t = *current;
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_pair(team, t.id);
    const bool ours = inferred_.count(key) > 0;
    if (!t.paths.empty() && !ours) return;  // given by someone: theirs
    if (std::find(t.paths.begin(), t.paths.end(), file) != t.paths.end() || t.paths.size() >= kMaxInferred) return;
    TaskPatch patch;
    patch.paths = t.paths;
    patch.paths->push_back(file);
    auto done = board->Update(t.id, patch, Caller{name, false});
    if (done.ok()) {
      inferred_.insert(key);
    } else {
      LogDebug("lease of task #" + std::to_string(t.id) + ": " + done.status().message());
    }
  }
}

}  // namespace mates::host
