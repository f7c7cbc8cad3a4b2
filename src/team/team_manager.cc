#include "team/team_manager.h"

#include <nlohmann/json.hpp>

#include "core/file_lock.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "core/clock.h"
#include "git/git.h"
#include "git/worktrees.h"
#include "team/shutdown.h"
#include "store/archive.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/messenger.h"
#include "store/requests.h"
#include "store/watcher.h"
#include "team/teammate.h"

namespace mates::team {
TeamManager::TeamManager(Workspace ws, llm::Provider* provider, agent::AgentEvents* events,
                         TeamOptions options, agent::AgentLoop* lead, tools::ToolContext* lead_ctx,
                         std::function<void(const Member&)> on_spawn)
    : ws_(std::move(ws)),
      provider_(provider),
      events_(events),
      options_(options),
      on_spawn_(std::move(on_spawn)),
      store_(lead_ctx->store()),
      place_(ws_, store_, lead, lead_ctx),
      news_(options.naive_baseline),
      statuses_(store_),
      host_(options.shutdown_timeout_s),
      adopter_(
          store_, [this] { return place_.team(); }, [this] { return LookAfterTeam(); }) {}

TeamManager::~TeamManager() { StopAll(); }

void TeamManager::StopAll() {
  adopter_.Stop();  // first: nobody is adopted once the others stop
  host_.StopAll();
}

void TeamManager::InterruptAll(const std::string& why) {
  adopter_.Interrupt();
  host_.InterruptAll(why);
}

void TeamManager::StartLookingAfter(double every_s, bool adopt, bool respawn,
                                    std::function<void(const std::string&)> said) {
  adopt_.store(adopt);
  respawn_.store(respawn);
  adopter_.Start(every_s, std::move(said));
}

std::vector<std::string> TeamManager::LookAfterTeam() {
  std::vector<std::string> said;
  if (adopt_.load()) {
    auto resumed = ResumeTeam();
    if (resumed.ok() && !resumed->empty()) {
      std::string list;
      for (const auto& n : *resumed) list += (list.empty() ? "" : ", ") + n;
      said.push_back("resumed teammates of team " + place_.team() + " that no host had: " + list);
    }
  }
  if (respawn_.load()) {
    if (std::string s = RespawnForWork(); !s.empty()) said.push_back(std::move(s));
  }
  return said;
}

std::string TeamManager::RespawnForWork() {
  constexpr double kFirstWaitS = 30, kLongestWaitS = 600;
  const std::string team = place_.team();
  auto c = store_.LoadTeam(team);
  if (!c.ok()) return "";
  std::vector<Member> stopped;
  for (const auto& m : c->members) {
    if (m.role == MemberRole::kLead || m.backend != MemberBackend::kInProcess) continue;
    // A live teammate takes what waits (or is the lead's to direct).
    if (Running(m.name) || store_.IsHosted(team, m.name)) return "";
    // One a circuit breaker paused waits for a person (`mates restart`).
    if (auto t = host_.Find(m.name); t != nullptr && t->stop_reason() == StopReason::kPaused) continue;
    if (m.status == MemberStatus::kShutdown) stopped.push_back(m);
  }
  if (stopped.empty()) return "";
  std::unique_ptr<TaskBoard> board = store_.Board(team);
  const auto now = SteadyClock::now();
  for (const Member& m : stopped) {
    auto last = respawned_.find(m.name);
    if (last != respawned_.end() &&
        now < last->second.at + std::chrono::duration_cast<SteadyClock::duration>(
                                    std::chrono::duration<double>(last->second.wait_s))) {
      continue;
    }
    auto next = board->NextClaimable(m.name);
    if (!next.ok() || !next->has_value()) continue;
    auto held = HostMember(team, m.name);
    if (!held.ok()) continue;
    // Stopping again soon after a respawn (its provider still down, say)
    // doubles the wait before the next.
    const bool soon = last != respawned_.end() && now - last->second.at < std::chrono::seconds(600);
    respawned_[m.name] = {now, soon ? std::min(kLongestWaitS, std::max(kFirstWaitS, 2 * last->second.wait_s))
                                    : kFirstWaitS};
    const std::string id = std::to_string(**next);
    Status s = StartTeammate(m,
                             "You were brought back by your host: task #" + id +
                                 " waits, and no teammate was running to take it. Go on with your work: your "
                                 "tasks in progress, your messages, then the board.",
                             /*resume=*/true, /*new_prompt=*/true, std::move(*held));
    if (!s.ok()) return "could not respawn " + m.name + " for task #" + id + ": " + s.message();
    return "respawned " + m.name + " of team " + team + " for task #" + id +
           ": it waited, and no teammate was running to take it (--respawn on-work)";
  }
  return "";
}

void TeamManager::OnStatus(const std::string& name, MemberStatus status, const std::string& detail) {
  // The lead is woken when nobody is working any more (or someone stopped).
  news_.OnStatus(name, status, detail, host_.AnyActiveWith(name, status));
  status_waker_->Notify();
}

void TeamManager::OnShutdownDelivered(const std::string& name) { host_.OnShutdownDelivered(name); }

void TeamManager::OnShutdownDone(const std::string& name) { host_.OnShutdownDone(name); }

void TeamManager::WakeWaiters() {
  status_waker_->Notify();
  news_.waker()->Notify();
}

void TeamManager::SetBusyElsewhere(std::function<bool()> busy) {
  std::lock_guard<std::mutex> lock(mu_);
  busy_elsewhere_ = std::move(busy);
}

bool TeamManager::AnyActive() {
  std::function<bool()> busy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy = busy_elsewhere_;
  }
  if (busy && busy()) return true;  // called unlocked: it may ask for place_.team()
  std::vector<std::string> idle;
  for (const auto& t : host_.All()) {
    if (t->finished() && !t->reported()) return true;  // its news is on the way
    if (t->finished()) continue;
    if (t->working()) return true;
    idle.push_back(t->name());
  }
  const std::string team = place_.team();
  // An idle teammate with something to do is about to be active again.
  for (const auto& n : idle) {
    if (store_.InboxOf(team, n)->MayHavePending()) return true;
    auto next = store_.Board(team)->NextClaimable(n);
    if (next.ok() && next->has_value()) return true;
  }
  // A task claimed while we looked: its claimer is working (or still
  // claiming) now.
  for (const auto& t : host_.All()) {
    if (!t->finished() && t->working()) return true;
  }
  return false;
}



Result<std::unique_ptr<Hold>> TeamManager::HostMember(const std::string& team, const std::string& name) {
  auto held = store_.HoldLiveness(team, name);
  if (!held.ok() && held.status().code() == StatusCode::kConflict) {
    return Status::FailedPrecondition("teammate '" + name + "' is already running in another process" +
                                      store_.ElsewhereWords());
  }
  return held;
}

Status TeamManager::StartTeammate(const Member& m, const std::string& prompt, bool resume, bool new_prompt,
                                  std::unique_ptr<Hold> held) {
  const std::string team = place_.team();
  MATES_RETURN_IF_ERROR(EnsureDir(ws_.AgentsDir(team)));  // its journal's folder
  if (!held) {
    MATES_ASSIGN_OR_RETURN(held, HostMember(team, m.name));
  }
  if (resume) {
    // What the teammate's last host left running dies before it resumes
    // (it would work on beside the resumed conversation).
    auto left = ProcessJournal(ws_.AgentsDir(team) / (m.name + ".procs")).KillLeftovers();
    if (left.ok() && *left > 0) {
      LogInfo(m.name + ": stopped " + std::to_string(*left) + " process tree(s) its last host left running");
    }
  }
  Teammate::Config cfg;
  if (m.worktree) {
    auto c = store_.LoadTeam(team);
    if (!c.ok()) return c.status();
    MATES_ASSIGN_OR_RETURN(TeamGit g, EnsureTarget(team, *c));
    MATES_ASSIGN_OR_RETURN(cfg.work_root, git::EnsureTeammateWorktree(ws_, team, m.name, g));
    cfg.git = g;
  }
  cfg.team = team;
  cfg.name = m.name;
  cfg.prompt = prompt;
  cfg.model = m.model;
  cfg.plan_mode = m.plan_mode_required;
  cfg.resume = resume;
  cfg.new_prompt = new_prompt;
  cfg.budget_tokens = m.budget_tokens;
  cfg.context_budget = m.context_budget;
    TeammateEnv env{ws_, *provider_, events_, options_, store_, statuses_, place_.lead_name(), *this};
  auto t = std::make_shared<Teammate>(cfg, std::move(env), std::move(held));
  MATES_RETURN_IF_ERROR(host_.Add(t));
  if (on_spawn_) on_spawn_(m);
  t->Start();
  return Status::Ok();
}

Result<TeamGit> TeamManager::EnsureTarget(const std::string& team, const TeamConfig& c) {
  if (c.git.configured()) return c.git;
  TeamGit wanted = options_.git;
  wanted.isolation = c.git.isolation;
  if (wanted.remote.empty()) wanted.remote = store_.DefaultGitRemote();
  MATES_ASSIGN_OR_RETURN(TeamGit g, git::PrepareTarget(ws_, team, wanted));
  MATES_RETURN_IF_ERROR(store_.UpdateTeam(team, [&](TeamConfig& cfg) {
    if (!cfg.git.configured()) cfg.git = g;
    g = cfg.git;
    return Status::Ok();
  }).status());
  return g;
}

Result<Member> TeamManager::LeverTarget(const std::string& name, const char* verb) {
  const std::string team = place_.team();
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store_.LoadTeam(team));
  const Member* m = c.Find(name);
  if (m == nullptr) {
    std::string names;
    for (const auto& x : c.members) names += (names.empty() ? "" : ", ") + x.name;
    return Status::NotFound("team '" + team + "' has no member '" + name + "' (its members: " + names + ")");
  }
  if (m->role == MemberRole::kLead && std::string_view(verb) != "interrupt") {
    return Status::FailedPrecondition("'" + name + "' is the team's lead: it runs as long as its host (`mates down` "
                                      "stops it, `mates up` brings it back)");
  }
  if (m->backend != MemberBackend::kInProcess) {
    return Status::FailedPrecondition("'" + name + "' is a " + std::string(MemberBackendName(m->backend)) +
                                      " member: its own program runs it, not this host, which cannot " + verb +
                                      " it");
  }
  return *m;
}

Result<std::string> TeamManager::StopTeammate(const std::string& name, const std::string& why) {
  MATES_ASSIGN_OR_RETURN(Member m, LeverTarget(name, "stop"));
  const bool here = Running(name);
  if (!here && !store_.IsHosted(place_.team(), name)) {
    return Status::FailedPrecondition("'" + name + "' is not running (" + std::string(MemberStatusName(m.status)) +
                                      "); `mates restart --team " + place_.team() + " " + name + "` brings it back");
  }
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store_.LoadTeam(place_.team()));
  std::vector<std::string> asked =
      AskToShutDown(store_, c, why, [&](const Member& x) { return x.name == name; });
  if (asked.empty()) return Status::Unavailable("the shutdown request to '" + name + "' could not be sent");
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g s", options_.shutdown_timeout_s);
  return "asked '" + name + "' to stop: it wraps up and answers, or is stopped in " + secs;
}

Result<std::string> TeamManager::PullLever(const std::string& action, const std::string& name) {
  if (action == "restart") return RestartTeammate(name, "the lead (TeammateControl)");
  if (action == "interrupt") {
    return InterruptTeammate(name, "The lead interrupted your last turn (TeammateControl)");
  }
  return Status::InvalidArgument("action must be restart or interrupt, not '" + action + "'");
}

Result<std::string> TeamManager::RestartTeammate(const std::string& name, const std::string& by) {
  MATES_ASSIGN_OR_RETURN(Member m, LeverTarget(name, "restart"));
  if (Running(name)) {
    const std::string of = " --team " + place_.team() + " " + name;
    return Status::FailedPrecondition("'" + name + "' is running; `mates interrupt" + of + "` ends its turn, `mates stop" +
                                      of + "` stops it");
  }
  // Its liveness: refused while another process hosts it.
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<Hold> held, HostMember(place_.team(), name));
  const std::string was(MemberStatusName(m.status));
  MATES_RETURN_IF_ERROR(StartTeammate(
      m,
      "You were restarted by " + by + "; you were " + was +
          ". Go on with your work: your tasks in progress, your messages, then the board.",
      /*resume=*/true, /*new_prompt=*/true, std::move(held)));
  return "restarted '" + name + "' (was " + was + "), from its journal";
}

Result<std::string> TeamManager::InterruptTeammate(const std::string& name, const std::string& by) {
  MATES_ASSIGN_OR_RETURN(Member m, LeverTarget(name, "interrupt"));
  auto t = host_.Find(name);
  if (t == nullptr || t->finished()) {
    return Status::FailedPrecondition("'" + name + "' is not running here (" +
                                      std::string(MemberStatusName(m.status)) + "): nothing to interrupt");
  }
  if (!t->Interrupt(by + ": what you were doing was stopped. Wait for their message before you go on.")) {
    return Status::FailedPrecondition("'" + name + "' is idle: nothing to interrupt");
  }
  return "interrupted '" + name + "': its turn ends now, and it waits for a message";
}

bool TeamManager::Running(const std::string& name) {
  auto t = host_.Find(name);
  return t != nullptr && !t->finished();
}

std::string TeamManager::CleanUpWorktree(const std::string& team, const std::string& name) {
  auto c = store_.LoadTeam(team);
  if (!c.ok() || !c->git.configured()) return "";
  return git::CleanUpTeammate(ws_, team, name, c->git, /*final=*/false);
}

Result<std::string> TeamManager::CreateTeam(const std::string& name, const std::string& description,
                                            const std::string& isolation) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", name));
  Isolation iso = options_.git.isolation;
  if (!isolation.empty()) {
    MATES_ASSIGN_OR_RETURN(iso, ParseIsolation(isolation));
  }
  TeamGit prepared;
  if (iso == Isolation::kWorktree) {
    TeamGit wanted = options_.git;
    wanted.isolation = iso;
    // On a shared store the work travels through a remote (DESIGN §13).
    if (wanted.remote.empty()) wanted.remote = store_.DefaultGitRemote();
    MATES_ASSIGN_OR_RETURN(prepared, git::PrepareTarget(ws_, name, wanted));
  }
  const std::string current = place_.team();
  if (current != place_.home()) {
    auto c = store_.LoadTeam(current);
    if (c.ok()) {
      for (const auto& m : c->members) {
        if (m.role != MemberRole::kLead && m.status != MemberStatus::kShutdown) {
          return Status::FailedPrecondition("you lead team '" + current + "' already (one team at a time); "
                                            "TeamDelete it first");
        }
      }
    }
  }
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store_.CreateTeam(name, place_.lead_name(), description));
  const git::Checkout at = git::CheckoutAt(ws_.root());
  MATES_RETURN_IF_ERROR(store_.UpdateTeam(name, [&](TeamConfig& cfg) {
    if (iso == Isolation::kWorktree) cfg.git = prepared;
    if (spend()) cfg.budget = spend()->ForNewTeam();  // the session's budget covers its new team
    cfg.NoteSession({WallSeconds(), "made", at.commit, at.branch});  // where its work starts (DESIGN §31)
    return Status::Ok();
  }).status());
  place_.MoveTo(name);
  return "Created team '" + name + "'; you are its lead ('" + place_.lead_name() +
         "'). Your task board, messages and inbox are now this team's. Add tasks with TaskCreate "
         "and spawn teammates with Task(team_name=\"" +
         name + "\", name=…, prompt=…). What is sent to you in team '" + place_.home() +
         "' still reaches you (marked team=\"" + place_.home() +
         "\"), and what you send to user goes there too." +
         (iso == Isolation::kWorktree
              ? " Each teammate works in its own git worktree; a completed task is merged onto " +
                    prepared.target_name() + " by the merge queue" +
                    (prepared.merge_check.empty()
                         ? ""
                         : " after its check (" + prepared.merge_check + ") passes") +
                    ", and only then counts as completed."
              : "");
}

Result<std::string> TeamManager::SpawnTeammate(const tools::TeammateSpec& spec) {
  const std::string& team = spec.team;
  const std::string& name = spec.name;
  const std::string& prompt = spec.prompt;
  const bool plan_mode_required = spec.plan_mode_required;
  const std::string& model = spec.model;
  const std::string& isolation = spec.isolation;
  MATES_RETURN_IF_ERROR(ValidateName("teammate name", name));
  if (spend() && spend()->budget().usd > 0) {
    std::string m = model.empty() ? provider_->default_model() : model;
    if (!spend()->prices().Find(m)) {
      return Status::FailedPrecondition("the team has a budget in dollars and model '" + m +
                                        "' has no price (mates --prices FILE gives one); choose a priced model");
    }
  }
  std::optional<Isolation> iso;
  if (!isolation.empty()) {
    MATES_ASSIGN_OR_RETURN(iso, ParseIsolation(isolation));
  }
  if (team != place_.team()) {
    return Status::FailedPrecondition("you can spawn teammates only into your own team '" + place_.team() +
                                      "' (create a team with TeamCreate first)");
  }
  if (name == place_.lead_name()) return Status::InvalidArgument("'" + name + "' is you, the lead");
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store_.LoadTeam(team));
  const bool isolated = iso.value_or(c.git.isolation) == Isolation::kWorktree;
  if (isolated) MATES_RETURN_IF_ERROR(EnsureTarget(team, c).status());
  const Member* existing = c.Find(name);
  if (existing != nullptr) {
    if (auto running = host_.Find(name); running != nullptr && !running->finished()) {
      return Status::AlreadyExists("teammate '" + name + "' is already working in team '" + team + "'");
    }
    if (existing->role == MemberRole::kLead) return Status::InvalidArgument("'" + name + "' is the lead");
  }
  // Hosted before it is in the roster: another host adopting the team's
  // unhosted teammates (AdoptTeammates) never takes one being spawned.
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<Hold> held, HostMember(team, name));
  Member m;
  bool revive = false;
  if (existing != nullptr) {
    m = *existing;
    revive = true;
    MATES_RETURN_IF_ERROR(store_.UpdateTeam(team, [&](TeamConfig& cfg) {
      Member* mm = cfg.Find(name);
      mm->plan_mode_required = plan_mode_required;
      if (!model.empty()) mm->model = model;
      mm->prompt = prompt;
      mm->backend = MemberBackend::kInProcess;
      mm->worktree = isolated;
      mm->budget_tokens = spec.budget_tokens;
      mm->context_budget = spec.context_budget;
      m = *mm;
      return Status::Ok();
    }).status());
  } else {
    m.name = name;
    m.role = MemberRole::kTeammate;
    m.backend = MemberBackend::kInProcess;
    m.model = model;
    m.plan_mode_required = plan_mode_required;
    m.prompt = prompt;
    m.worktree = isolated;
    m.budget_tokens = spec.budget_tokens;
    m.context_budget = spec.context_budget;
    MATES_ASSIGN_OR_RETURN(m, store_.AddMember(team, m));
  }
  // A teammate that existed goes on with its earlier conversation, the new
  // instructions as its next message.
  MATES_RETURN_IF_ERROR(StartTeammate(m, prompt, /*resume=*/revive, /*new_prompt=*/true, std::move(held)));
  return "Spawned teammate '" + name + "' (" + m.agent_id + ", " + m.color + ")" +
         (isolated ? " in its own worktree on " + git::TeammateBranch(team, name) : "") +
         (plan_mode_required ? " in plan mode: it will send you its plan for approval" : "") +
         (spec.budget_tokens > 0 ? ", with a budget of " + agent::HumanCount(spec.budget_tokens) + " tokens" : "") +
         ". It works from the task board and messages; idle, it claims unblocked tasks on its own.";
}

Result<std::vector<std::string>> TeamManager::ResumeTeam(double grace_s) {
  std::vector<std::string> resumed;
  const std::string team = place_.team();
  const Deadline grace = DeadlineIn(grace_s);
  auto c = store_.LoadTeam(team);
  if (!c.ok()) return c.status();
  for (const auto& m : c->members) {
    if (m.role == MemberRole::kLead || m.backend != MemberBackend::kInProcess ||
        m.status == MemberStatus::kShutdown) {
      continue;
    }
    // Here still, or let go here a moment ago for what this host could not
    // write: another host is to have it first (its adopter, woken by the
    // roster's change, takes it within a second); after 10 s, when none
    // did, this one tries again (its disk may have room by then).
    if (auto here = host_.Find(m.name); here != nullptr && (!here->finished() || here->HandedOffWithin(10))) {
      continue;
    }
    // A cheap look first (taking it may connect), which allows for a host
    // that died a moment ago.
    if (StillHostedAt(store_, team, m.name, grace)) continue;
    auto held = HoldLivenessAllowingForTheDead(store_, team, m.name, grace);
    if (!held.ok()) {
      // Another host has it: nothing to say.
      if (held.status().code() != StatusCode::kConflict) LogInfo("not resuming " + m.name + ": " + held.status().message());
      continue;
    }
    Status s = StartTeammate(m, m.prompt, /*resume=*/true, /*new_prompt=*/false, std::move(*held));
    if (s.ok()) {
      resumed.push_back(m.name);
    } else {
      LogInfo("not resuming " + m.name + ": " + s.message());
    }
  }
  return resumed;
}

bool TeamManager::StoppedFor(const std::string& team, const std::string& name) {
  if (auto t = host_.Find(name)) return t->finished();
  // Hosted elsewhere (or nowhere): the roster says.
  return StoppedByRoster(store_, team, name);
}

std::string TeamManager::HowItStopped(const std::string& team, const std::string& name) {
  auto t = host_.Find(name);
  if (t != nullptr && !t->finished()) {
    t->Stop(/*force=*/true, StopReason::kShutdownUnanswered,
            "did not answer the shutdown request within " +
                std::to_string(static_cast<int>(options_.shutdown_timeout_s)) + " s");
    t->Join();
    return name + " (stopped: no answer in time)";
  }
  if (t != nullptr) t->Join();
  if (!StoppedFor(team, name)) return name + " (hosted elsewhere; did not confirm)";
  std::string how = "approved";
  auto req = store_.Mail(team)->ListRequests();
  if (req.ok()) {
    for (const auto& r : *req) {
      if (r.kind == RequestKind::kShutdown && r.responder == name && r.status == RequestState::kApproved &&
          !r.response.empty()) {
        how = "approved: " + r.response.substr(0, 120);
      }
    }
  }
  return name + " (" + how + ")";
}

void TeamManager::SummarizeWork(const std::string& team, TeamSummary* summary) {
  Status read = store_.ReadLog(team, [&](const Message& m) {
    summary->messages_by_type[std::string(MessageTypeName(m.type))]++;
  });
  if (!read.ok()) LogWarning("the log of team " + team + ": " + read.message());
  auto tasks = store_.Board(team)->List(false);
  if (tasks.ok()) {
    for (const auto& t : *tasks) summary->tasks_by_owner[t.owner.empty() ? "(unowned)" : t.owner].push_back(t.id);
  }
}

Result<std::string> TeamManager::DeleteTeam(const std::string& name) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", name));
  MATES_ASSIGN_OR_RETURN(TeamConfig c, store_.LoadTeam(name));
  if (name == place_.home() && name == place_.team() && c.members.size() <= 1) {
    return Status::FailedPrecondition("team '" + name + "' is the one this run started in; nothing to disband");
  }
  // Ask everyone still there to wrap up, wait (bounded), stop who did not.
  std::vector<std::string> asked =
      AskToShutDown(store_, c,
                    "The team '" + name + "' is being disbanded: wrap up, answer with shutdown_response "
                    "(approve and a summary of your work), then stop.");
  // Woken by our teammates' status changes and by the roster (hosts in
  // other processes write it).
  WaitForShutdowns(store_, name, asked, [&](const std::string& n) { return StoppedFor(name, n); },
                   DeadlineIn(options_.shutdown_timeout_s), status_waker_);
  TeamSummary summary;
  summary.team = name;
  for (const auto& n : asked) summary.stopped.push_back(HowItStopped(name, n));
  // What the team did, before its files go.
  SummarizeWork(name, &summary);
  // Worktrees go; unmerged work stays on its branch (DESIGN §12).
  std::vector<std::string> kept = git::CleanUpTeam(ws_, c);
  if (place_.team() == name) place_.MoveTo(place_.home());
  news_.Forget(asked);
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_deleted_ = summary;
  }
  // Archived, not destroyed (DESIGN §11): its log and board stay readable.
  MATES_ASSIGN_OR_RETURN(ArchivedTeam archived, store_.Archive(name));
  {
    std::lock_guard<std::mutex> lock(mu_);
    deleted_teams_.push_back(name);
  }
  RecordSpendElsewhere();
  std::string out = "Team '" + name + "' deleted; its files are archived in " +
                    fs::relative(archived.root, ws_.root()).string() + ".";
  if (!summary.stopped.empty()) {
    out += " Teammates:";
    for (const auto& s : summary.stopped) out += "\n- " + s;
  }
  for (const auto& k : kept) out += "\n- " + k;
  if (place_.team() != name) out += "\nYou are back in team '" + place_.team() + "'.";
  return out;
}

void TeamManager::RecordSpendElsewhere() {
  if (!spend()) return;
  auto [tokens, usd] = spend()->TakeSpentElsewhere();
  if (!spend()->budget().any()) return;  // recorded for a budget only
  if (tokens == 0) return;
  auto updated =
      store_.UpdateTeam(spend()->team(), [&, tokens = tokens, usd = usd](TeamConfig& c) {
        c.budget.spent_in_made_tokens += tokens;
        c.budget.spent_in_made_usd += usd;
        return Status::Ok();
      });
  // Not recorded, the next session of that team counts less: say so.
  if (!updated.ok()) {
    LogWarning("the spending in teams made from team " + spend()->team() + " (" +
               agent::HumanCount(tokens) +
               " tokens) is not recorded in its budget: " + updated.status().message());
  }
}

std::optional<TeamSummary> TeamManager::last_deleted() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_deleted_;
}

std::vector<std::string> TeamManager::deleted_teams() {
  std::lock_guard<std::mutex> lock(mu_);
  return deleted_teams_;
}

std::string TeamManager::UsageSummary(const agent::PriceTable& prices) {
  std::string out;
  for (const auto& t : host_.All()) {
    if (t->usage().calls() == 0) continue;
    out += (out.empty() ? "" : "\n") + t->name() + ": " + t->usage().Summary(t->model(), prices);
  }
  return out;
}

}  // namespace mates::team
