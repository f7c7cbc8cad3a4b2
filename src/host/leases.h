// File leases inferred (DESIGN §30): a task created without a lease gets
// one from its owner's first edits — each file a teammate writes or edits
// while it holds the task joins the lease, up to kMaxInferred — so that
// the next claim passes over a ready task that names the same files. A
// lease someone gave is theirs: it is never changed here.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "llm/types.h"
#include "store/team_store.h"
#include "store/workspace.h"
#include "tools/tool.h"

namespace mates::host {

class LeaseInference {
 public:
  static constexpr size_t kMaxInferred = 8;
  LeaseInference(TeamStore& store, Workspace ws) : store_(&store), ws_(std::move(ws)) {}
  // After `name` of `team` ran `call` (a write_file or edit_file that
  // succeeded counts).
  void AfterTool(const std::string& team, const std::string& name, const llm::ContentBlock& call,
                 const tools::ToolResult& result);

 private:
  TeamStore* const store_;
  const Workspace ws_;
  std::mutex mu_;
  // Tasks whose lease is inferred here (team, id): guarded by mu_.
  std::set<std::pair<std::string, int64_t>> inferred_;
};

}  // namespace mates::host
