// Roster: a team's config.json (DESIGN §2) — who is on the team, their role,
// status, colour and backend. Every change is a read-modify-write under
// `config.lock` ending in an atomic replace, so concurrent joins and status
// updates from threads and processes never lose one another.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "store/workspace.h"

namespace mates {

enum class MemberStatus { kActive, kIdle, kShutdown };
std::string_view MemberStatusName(MemberStatus s);
Result<MemberStatus> ParseMemberStatus(std::string_view name);

enum class MemberRole { kLead, kTeammate };
std::string_view MemberRoleName(MemberRole r);  // "lead" | "teammate"
// Where a member runs: a thread of a mates host, an agent CLI in a tmux
// pane (a cluster's router hosts it), or anything else that joined.
enum class MemberBackend { kInProcess, kTmux, kExternal };
std::string_view MemberBackendName(MemberBackend b);  // "in-process" | "tmux" | "external"
Result<MemberBackend> ParseMemberBackend(std::string_view name);

struct Member {
  std::string name;
  std::string agent_id;  // "name@team"
  MemberRole role = MemberRole::kTeammate;
  // A seed roster's own word for a teammate's role ("coder"), kept as
  // written; "" when it said "teammate".
  std::string role_title;
  MemberStatus status = MemberStatus::kIdle;
  std::string color;    // "" for the lead; cyan, yellow, magenta, green, blue
  MemberBackend backend = MemberBackend::kInProcess;
  std::string model;
  bool plan_mode_required = false;
  std::string prompt;
  double joined_at = 0;
  // Works in its own git worktree (DESIGN §12): W/.mates/worktrees/<team>/
  // <name> on branch mates/<name>@<team>, both derived from the names.
  bool worktree = false;
  // Token budgets (DESIGN §15), 0 = none: every token it reads or writes
  // counts against budget_tokens (over it: it stops, reason `budget`);
  // context_budget is where its conversation is compacted.
  int64_t budget_tokens = 0;
  int64_t context_budget = 0;
  // A member of another system's team (Claude Code's, DESIGN §24): the
  // fields of its roster entry mates does not read, as a JSON object
  // ("" for mates' own members). Shown, never dropped.
  std::string foreign_json;
};

// How a team's work comes together (DESIGN §12). A team that never asked
// for isolation has no target branch and shares W's checkout.
enum class Isolation { kShared, kWorktree };
std::string_view IsolationName(Isolation i);  // "shared" | "worktree"
Result<Isolation> ParseIsolation(std::string_view name);

// The remote a team on a shared store uses unless told (--git-remote).
inline constexpr const char* kDefaultGitRemote = "origin";

struct TeamGit {
  Isolation isolation = Isolation::kShared;  // for teammates spawned without a choice
  std::string target_branch;                 // "" = not set up (no teammate isolated yet)
  std::string merge_check;                   // a shell command run on each merge; "" = none
  double merge_timeout_s = 600;
  bool merge_review = false;                 // checked merges wait for a decision
  // "" = the target is W's branch (one machine); else the git remote every
  // machine of the team fetches from and pushes to (a team on a shared
  // store, DESIGN §13): the remote's target is the truth, and teammates'
  // branches travel through it to the merge queue.
  std::string remote;
  // The merge queue's record of the target (DESIGN §19): the commit it
  // last left it at ("" = not known yet: taken as first found), the one it
  // is moving it to (a host killed between the move and this record left
  // it there: its own), and once the target is found anywhere else, that
  // commit and since when — the queue merges nothing onto it until `mates
  // merges resume` takes it as it is.
  std::string target_at;
  std::string target_moving_to;
  std::string held_found;
  double held_since = 0;
  bool configured() const { return !target_branch.empty(); }
  bool held() const { return !held_found.empty(); }
  // Takes the queue's record from `before` if it names the same target:
  // a team set up again (a new run) does not forget a move it was held at.
  void KeepRecordOf(const TeamGit& before) {
    if (before.target_branch != target_branch || before.remote != remote) return;
    target_at = before.target_at;
    target_moving_to = before.target_moving_to;
    held_found = before.held_found;
    held_since = before.held_since;
  }
  // What merged work is read from: W's branch, or the remote's as last
  // fetched; and how it is named to an agent or a person.
  std::string target_ref() const {
    return remote.empty() ? "refs/heads/" + target_branch : "refs/remotes/" + remote + "/" + target_branch;
  }
  std::string target_name() const { return remote.empty() ? target_branch : remote + "/" + target_branch; }
};

// What a team's agents spent on one model (TeamStore::Spent): the sums of
// their journals' usage lines.
struct ModelSpend {
  std::string model;
  int64_t calls = 0;
  int64_t input = 0, output = 0, cache_write = 0, cache_read = 0;
};

// What the whole team may spend (DESIGN §15); 0 = no limit. Over it, no
// agent of the team calls the model.
struct TeamBudget {
  int64_t tokens = 0;
  double usd = 0;
  // A team a lead made in a session under a budget shares that budget: it
  // counts what the session had spent before it (in team `from`) with its
  // own journals. Empty and 0 for a budget given to the team itself.
  std::string from;
  int64_t spent_before_tokens = 0;
  double spent_before_usd = 0;
  // What this team's sessions spent in the teams they made (recorded as
  // each such team is deleted, and at the session's end): it counts here
  // too, so that a budget is not new again in the team's next session.
  int64_t spent_in_made_tokens = 0;
  double spent_in_made_usd = 0;
  bool any() const { return tokens > 0 || usd > 0; }
  // A budget given to the team itself (`run --budget-*`, `mates budget
  // set|clear`): what is given replaces its part; it counts this team's
  // spending (and its sessions' in the teams they made), no longer that of
  // a session that made it.
  void Give(std::optional<int64_t> new_tokens, std::optional<double> new_usd) {
    if (new_tokens) tokens = *new_tokens;
    if (new_usd) usd = *new_usd;
    from.clear();
    spent_before_tokens = 0;
    spent_before_usd = 0;
  }
  // Tokens and dollars counted against it besides the team's own journals.
  int64_t counted_tokens() const { return spent_before_tokens + spent_in_made_tokens; }
  double counted_usd() const { return spent_before_usd + spent_in_made_usd; }
};

// A session that worked in the team (DESIGN §31): when it began, how
// (run, up, demo, teammates; "made" for a team a lead made in one), and
// the commit the workspace's checkout was at then ("" outside git): where
// a replay starts from.
struct TeamSession {
  double started_at = 0;
  std::string how;
  std::string commit;
  std::string branch;
};
inline constexpr size_t kMaxTeamSessions = 16;  // the latest kept

struct TeamConfig {
  std::string name;
  std::string description;
  std::string lead;  // the lead member's name
  double created_at = 0;
  std::vector<Member> members;
  TeamGit git;
  TeamBudget budget;
  std::vector<TeamSession> sessions;  // oldest first, the latest kMaxTeamSessions

  // Records `s`, dropping the oldest past the bound.
  void NoteSession(TeamSession s);
  const Member* Find(std::string_view member) const;
  Member* Find(std::string_view member);
  bool IsLead(std::string_view member) const { return member == lead; }
};

Json TeamConfigToJson(const TeamConfig& c);
// {tokens, usd[, from, spent_before: {tokens, usd}][, spent_in_teams_made:
// {tokens, usd}]}, as config.json keeps it.
Json TeamBudgetToJson(const TeamBudget& b);
Result<TeamConfig> TeamConfigFromJson(const Json& j);

// The colour palette of seed v8, cycled over teammates.
const std::vector<std::string>& TeammateColors();

// A name for a new member: a valid name (ValidateName) and not `user`,
// which is reserved for people (DESIGN §11).
Status ValidateMemberName(std::string_view name);

// A sender named by a person or a client (`mates send --from`, `mcp
// --as`): not a name only mates speaks as (merge-queue, hooks, in any
// case or spelling), not `user` misspelt, and not one that reads as a
// member of `team` without being it (`Lead` for `lead`).
Status ValidateSenderName(std::string_view name, const TeamConfig& team);

// The rules of a roster, whatever stores it (the files here, PostgreSQL in
// src/pg): a new team's config, holding its lead; a member added (agent id
// and colour filled in; AlreadyExists if the name is taken).
TeamConfig NewTeamConfig(std::string_view team, std::string_view lead, std::string_view description, double now);
Result<Member> AddMemberTo(TeamConfig& c, Member member);
// The members named in `changes` given their statuses; others passed over.
void SetStatusesIn(TeamConfig& c, const std::vector<std::pair<std::string, MemberStatus>>& changes);

class Watcher;

class Roster {
 public:
  // `local`: whose subscribers a write wakes at once (this process's
  // watcher); without one they hear it from the kernel.
  explicit Roster(Workspace ws, Watcher* local = nullptr) : ws_(std::move(ws)), local_(local) {}

  // Creates .teams/<team>/ with a config holding the lead. AlreadyExists
  // if the team exists.
  Result<TeamConfig> CreateTeam(std::string_view team, std::string_view lead = "lead",
                                std::string_view description = "");
  // NotFound if there is no such team.
  Result<TeamConfig> Load(std::string_view team) const;
  Result<std::vector<std::string>> ListTeams() const;
  // Adds a member: agent_id and colour are filled in. AlreadyExists if the
  // name is taken.
  Result<Member> AddMember(std::string_view team, Member member);
  Status SetStatus(std::string_view team, std::string_view member, MemberStatus status);
  // Several members' statuses in one write; members not in the roster are
  // passed over, and nothing is written if nothing changes.
  Status SetStatuses(std::string_view team,
                     const std::vector<std::pair<std::string, MemberStatus>>& changes);
  // Read-modify-write under the config lock; `mutate` may refuse.
  Result<TeamConfig> Update(std::string_view team,
                            const std::function<Status(TeamConfig&)>& mutate);
  // Removes the team's folder and its task board. NotFound if absent.
  Status DeleteTeam(std::string_view team);

  const Workspace& workspace() const { return ws_; }

 private:
  Result<TeamConfig> LoadUnlocked(std::string_view team) const;
  // Update's work, with config.lock held.
  Result<TeamConfig> UpdateLocked(std::string_view team,
                                  const std::function<Status(TeamConfig&)>& mutate);
  // `c` written as the team's roster, with config.lock held; watchers told.
  Status WriteLocked(std::string_view team, const TeamConfig& c);

  Workspace ws_;
  Watcher* local_;
};

}  // namespace mates
