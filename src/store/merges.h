// Merge requests (DESIGN §12): .teams/<team>/merges/<id>.json, one per
// submitted task, written under the folder's lock so ids are unique across
// processes. The queue in the host moves them through their states:
//
//   queued -> checking -> merged
//                      -> review -> merged | rejected   (--merge review)
//                      -> conflict | failed             (bounced to the owner)
//
// A request found `checking` by a new host was interrupted (its host died
// mid-merge); the target had not moved, so it is simply taken again.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "store/workspace.h"

namespace mates {

enum class MergeState { kQueued, kChecking, kReview, kMerged, kConflict, kFailed, kRejected };
std::string_view MergeStateName(MergeState s);
Result<MergeState> ParseMergeState(std::string_view name);
// Still to be decided by the queue or a reviewer.
inline bool MergeOpen(MergeState s) {
  return s == MergeState::kQueued || s == MergeState::kChecking || s == MergeState::kReview;
}

// A check the queue ran on a request's merge (DESIGN §30's provenance).
struct CheckRun {
  std::string command;
  std::string commit;     // what it ran on: the request's merge, or a train's last (DESIGN §30)
  int exit_code = 0;
  int signal = 0;         // killed by it (0: none)
  bool timed_out = false;
  double duration_s = 0;
  std::string output_sha256;  // of what it wrote (stdout and stderr)
};

// Hooks that ran on a request before it landed: `ran` of the event's.
struct HookRun {
  std::string event;
  int ran = 0;
  bool blocked = false;
};

struct MergeRequest {
  int64_t id = 0;
  int64_t task = 0;
  std::string subject;            // the task's, for people reading the list
  std::string owner;
  std::string branch;             // mates/<team>/<owner>
  std::string commit;             // the owner's commit submitted
  MergeState status = MergeState::kQueued;
  std::string output;             // the check's output tail, or what went wrong
  std::vector<std::string> files; // conflicting files
  std::string target;             // the target branch
  std::string merged_commit;      // what the target moved to (merged), or awaits review
  std::string checked_on;         // the target commit it was checked, and merged, on
  bool approved = false;          // a reviewer approved it (review mode)
  std::string decided_by;         // who approved or rejected
  std::string feedback;           // a reviewer's words
  std::vector<CheckRun> checks;   // run on merged_commit (the latest merge checked)
  std::vector<HookRun> hooks;     // MergeQueued hooks that ran on it
  double created_at = 0;
  double updated_at = 0;
};

// What one request may hold, as stored: outputs are tails, file lists cut.
inline constexpr size_t kMaxMergeBytes = 1 << 20;

Json MergeRequestToJson(const MergeRequest& m);
Json CheckRunToJson(const CheckRun& c);
Json HookRunToJson(const HookRun& h);
Result<MergeRequest> MergeRequestFromJson(const Json& j);

// A team's merge requests wherever they are kept (DESIGN §13): the files
// below (MergeStore) or the PostgreSQL store's table.
class MergeBook {
 public:
  virtual ~MergeBook() = default;
  // Assigns the next id (from 1) and the times; returns the stored request.
  virtual Result<MergeRequest> Create(MergeRequest m) = 0;
  // NotFound "no merge request N in team T".
  virtual Result<MergeRequest> Get(int64_t id) const = 0;
  // Sorted by id; what cannot be read is skipped (and logged).
  virtual Result<std::vector<MergeRequest>> List() const = 0;
  // Read-modify-write as one change; `mutate` may refuse. updated_at is set.
  virtual Result<MergeRequest> Update(int64_t id, const std::function<Status(MergeRequest&)>& mutate) = 0;
};

class MergeStore : public MergeBook {
 public:
  MergeStore(const Workspace& ws, std::string_view team);

  Result<MergeRequest> Create(MergeRequest m) override;
  Result<MergeRequest> Get(int64_t id) const override;
  // Sorted by id; files that do not parse are skipped (and logged).
  Result<std::vector<MergeRequest>> List() const override;
  // Under the folder's lock.
  Result<MergeRequest> Update(int64_t id, const std::function<Status(MergeRequest&)>& mutate) override;

  // `m` as it is (its id and times kept): `mates store export`.
  Status Import(const MergeRequest& m);

  const fs::path& dir() const { return dir_; }

 private:
  Result<MergeRequest> GetUnlocked(int64_t id) const;
  Status Write(const MergeRequest& m) const;

  std::string team_;
  fs::path dir_;
  fs::path lock_;
};

}  // namespace mates
