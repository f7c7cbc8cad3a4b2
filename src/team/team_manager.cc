#include "team/team_manager.h"
#include "team/teammate.h"

#include <nlohmann/json.hpp>

#include "core/file_lock.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/message_log.h"
#include "store/messenger.h"
#include "store/requests.h"
#include "store/watcher.h"
#include "team/teammate.h"

namespace mates::team {
namespace {

fs::path HostLockPath(const Workspace& ws, const std::string& team, const std::string& name) {
  return ws.AgentsDir(team) / (name + ".lock");
}

}  // namespace

TeamManager::TeamManager(Workspace ws, llm::Provider* provider, agent::AgentEvents* events,
                         TeamOptions options, agent::AgentLoop* lead, tools::ToolContext* lead_ctx,
                         std::function<void(const Member&)> on_spawn)
    : ws_(std::move(ws)),
      provider_(provider),
      events_(events),
      options_(options),
      lead_(lead),
      lead_ctx_(lead_ctx),
      home_team_(lead_ctx->team),
      on_spawn_(std::move(on_spawn)),
      lead_team_(lead_ctx->team) {
  watchdog_ = std::thread([this] { RunGuarded("the shutdown watchdog", [this] { WatchdogLoop(); }); });
}

TeamManager::~TeamManager() {
  StopAll();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void TeamManager::StopAll() {
  std::vector<std::shared_ptr<Teammate>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, t] : teammates_) all.push_back(t);
  }
  for (auto& t : all) t->Stop(/*force=*/true, StopReason::kHostStopped, "its host stopped");
  for (auto& t : all) t->Join();
}

void TeamManager::InterruptAll(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, t] : teammates_) t->Stop(/*force=*/true, StopReason::kHostStopped, why);
}

std::string TeamManager::lead_team() {
  std::lock_guard<std::mutex> lock(mu_);
  return lead_team_;
}

void TeamManager::OnStatus(const std::string& name, MemberStatus status, const std::string& detail) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status == MemberStatus::kActive) {
      news_.erase(name);  // no longer idle: nothing to tell
    } else if (status == MemberStatus::kIdle) {
      news_[name] = detail.empty() ? name + " is idle" : name + " is idle (" + detail + ")";
    } else {
      news_[name] = name + " stopped" + (detail.empty() ? "" : " (" + detail + ")");
      news_wakes_lead_ = true;
    }
    // The lead is woken when nobody is working any more.
    bool anyone_working = false;
    for (const auto& [n, t] : teammates_) {
      if (!t->finished() && (n == name ? status : t->status()) == MemberStatus::kActive) anyone_working = true;
    }
    if (!anyone_working && !news_.empty()) news_wakes_lead_ = true;
  }
  cv_.notify_all();
  status_waker_->Notify();
  lead_waker_->Notify();
}

void TeamManager::WakeWaiters() {
  status_waker_->Notify();
  lead_waker_->Notify();
}

bool TeamManager::AnyActive() {
  std::vector<std::string> idle;
  std::string team;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, t] : teammates_) {
      if (t->finished() && !t->reported()) return true;  // its news is on the way
      if (t->finished()) continue;
      if (t->working()) return true;
      idle.push_back(n);
    }
    team = lead_team_;
  }
  // An idle teammate with something to do is about to be active again.
  for (const auto& n : idle) {
    if (Mailbox(ws_.TeamDir(team), n).MayHavePending()) return true;
    auto next = SharedBoard(ws_.TasksDir(team))->NextClaimable(n);
    if (next.ok() && next->has_value()) return true;
  }
  // A task claimed while we looked: its claimer is working (or still
  // claiming) now.
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [n, t] : teammates_) {
    if (!t->finished() && t->working()) return true;
  }
  return false;
}

bool TeamManager::HasNewsForLead() {
  std::lock_guard<std::mutex> lock(mu_);
  return news_wakes_lead_ && !news_.empty();
}

std::string TeamManager::TakeNewsForLead() {
  std::lock_guard<std::mutex> lock(mu_);
  news_wakes_lead_ = false;
  if (news_.empty()) return "";
  std::string text;
  for (const auto& [name, line] : news_) text += (text.empty() ? "" : "; ") + line;
  news_.clear();
  return "<team-update>" + text + "</team-update>";
}

void TeamManager::OnShutdownDelivered(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_deadlines_.count(name) == 0) {
      shutdown_deadlines_[name] =
          SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(options_.shutdown_timeout_s));
    }
  }
  cv_.notify_all();
}

void TeamManager::OnShutdownDone(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_deadlines_.erase(name);
}

void TeamManager::WatchdogLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (shutdown_deadlines_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !shutdown_deadlines_.empty(); });
      continue;
    }
    auto next = std::min_element(shutdown_deadlines_.begin(), shutdown_deadlines_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (SteadyClock::now() < next->second) {
      cv_.wait_until(lock, next->second);
      continue;
    }
    std::string name = next->first;
    shutdown_deadlines_.erase(next);
    auto it = teammates_.find(name);
    if (it == teammates_.end() || it->second->finished()) continue;
    std::shared_ptr<Teammate> t = it->second;  // kept alive while unlocked
    lock.unlock();
    t->Stop(/*force=*/true, StopReason::kShutdownUnanswered,
            "did not answer the shutdown request within " +
                std::to_string(static_cast<int>(options_.shutdown_timeout_s)) + " s");
    lock.lock();
  }
}

Status TeamManager::StartTeammate(const Member& m, const std::string& prompt, bool resume,
                                  bool new_prompt) {
  MATES_RETURN_IF_ERROR(EnsureDir(ws_.AgentsDir(lead_ctx_->team)));
  auto host = FileLock::TryAcquire(HostLockPath(ws_, lead_ctx_->team, m.name));
  if (!host.ok()) {
    return Status::FailedPrecondition("teammate '" + m.name + "' is already running in another process");
  }
  Teammate::Config cfg;
  cfg.team = lead_ctx_->team;
  cfg.name = m.name;
  cfg.prompt = prompt;
  cfg.model = m.model;
  cfg.plan_mode = m.plan_mode_required;
  cfg.resume = resume;
  cfg.new_prompt = new_prompt;
  if (resume) {
    // What the teammate's last host left running dies before it resumes
    // (it would work on beside the resumed conversation).
    auto left = ProcessJournal(ws_.AgentsDir(lead_ctx_->team) / (m.name + ".procs")).KillLeftovers();
    if (left.ok() && *left > 0) {
      LogInfo(m.name + ": stopped " + std::to_string(*left) + " process tree(s) its last host left running");
    }
  }
  auto t = std::make_shared<Teammate>(cfg, this, std::move(*host));
  // A teammate of that name that has just finished is joined first, with
  // the lock free: its thread's last steps take it.
  std::shared_ptr<Teammate> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = teammates_.find(m.name);
    if (it != teammates_.end()) {
      if (!it->second->finished()) return Status::AlreadyExists("teammate '" + m.name + "' is already running");
      old = it->second;
    }
  }
  if (old) old->Join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = teammates_.find(m.name);
    if (it != teammates_.end() && it->second != old) {
      return Status::AlreadyExists("teammate '" + m.name + "' is already running");
    }
    teammates_[m.name] = t;
  }
  if (on_spawn_) on_spawn_(m);
  t->Start();
  return Status::Ok();
}

Result<std::string> TeamManager::CreateTeam(const std::string& name, const std::string& description) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", name));
  const std::string current = lead_ctx_->team;
  if (current != home_team_) {
    auto c = Roster(ws_).Load(current);
    if (c.ok()) {
      for (const auto& m : c->members) {
        if (m.role != MemberRole::kLead && m.status != MemberStatus::kShutdown) {
          return Status::FailedPrecondition("you lead team '" + current + "' already (one team at a time); "
                                            "TeamDelete it first");
        }
      }
    }
  }
  MATES_ASSIGN_OR_RETURN(TeamConfig c, Roster(ws_).CreateTeam(name, lead_name(), description));
  MoveLeadTo(name);
  return "Created team '" + name + "'; you are its lead ('" + lead_name() +
         "'). Your task board, messages and inbox are now this team's. Add tasks with TaskCreate "
         "and spawn teammates with Task(team_name=\"" + name + "\", name=…, prompt=…).";
}

void TeamManager::MoveLeadTo(const std::string& team) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    lead_team_ = team;
  }
  lead_ctx_->team = team;
  Status s = lead_->MoveJournal(ws_.AgentsDir(team) / (lead_name() + ".jsonl"));
  if (!s.ok()) LogWarning("lead journal: " + s.message());
}

Result<std::string> TeamManager::SpawnTeammate(const std::string& team, const std::string& name,
                                               const std::string& prompt, bool plan_mode_required,
                                               const std::string& model) {
  MATES_RETURN_IF_ERROR(ValidateName("teammate name", name));
  if (team != lead_ctx_->team) {
    return Status::FailedPrecondition("you can spawn teammates only into your own team '" + lead_ctx_->team +
                                      "' (create a team with TeamCreate first)");
  }
  if (name == lead_name()) return Status::InvalidArgument("'" + name + "' is you, the lead");
  Roster roster(ws_);
  MATES_ASSIGN_OR_RETURN(TeamConfig c, roster.Load(team));
  const Member* existing = c.Find(name);
  Member m;
  bool revive = false;
  if (existing != nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = teammates_.find(name);
      if (it != teammates_.end() && !it->second->finished()) {
        return Status::AlreadyExists("teammate '" + name + "' is already working in team '" + team + "'");
      }
    }
    if (existing->role == MemberRole::kLead) return Status::InvalidArgument("'" + name + "' is the lead");
    m = *existing;
    revive = true;
    MATES_RETURN_IF_ERROR(roster.Update(team, [&](TeamConfig& cfg) {
      Member* mm = cfg.Find(name);
      mm->plan_mode_required = plan_mode_required;
      if (!model.empty()) mm->model = model;
      mm->prompt = prompt;
      mm->backend = MemberBackend::kInProcess;
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
    MATES_ASSIGN_OR_RETURN(m, roster.AddMember(team, m));
  }
  // A teammate that existed goes on with its earlier conversation, the new
  // instructions as its next message.
  MATES_RETURN_IF_ERROR(StartTeammate(m, prompt, /*resume=*/revive, /*new_prompt=*/true));
  return "Spawned teammate '" + name + "' (" + m.agent_id + ", " + m.color + ")" +
         (plan_mode_required ? " in plan mode: it will send you its plan for approval" : "") +
         ". It works from the task board and messages; idle, it claims unblocked tasks on its own.";
}

Result<std::vector<std::string>> TeamManager::ResumeTeam() {
  std::vector<std::string> resumed;
  auto c = Roster(ws_).Load(lead_ctx_->team);
  if (!c.ok()) return c.status();
  for (const auto& m : c->members) {
    if (m.role == MemberRole::kLead || m.backend != MemberBackend::kInProcess ||
        m.status == MemberStatus::kShutdown) {
      continue;
    }
    Status s = StartTeammate(m, m.prompt, /*resume=*/true, /*new_prompt=*/false);
    if (s.ok()) {
      resumed.push_back(m.name);
    } else {
      LogInfo("not resuming " + m.name + ": " + s.message());
    }
  }
  return resumed;
}

Result<std::string> TeamManager::DeleteTeam(const std::string& name) {
  MATES_RETURN_IF_ERROR(ValidateName("team name", name));
  Roster roster(ws_);
  MATES_ASSIGN_OR_RETURN(TeamConfig c, roster.Load(name));
  if (name == home_team_ && name == lead_ctx_->team && c.members.size() <= 1) {
    return Status::FailedPrecondition("team '" + name + "' is the one this run started in; nothing to disband");
  }
  // Ask everyone still there to wrap up.
  std::vector<std::string> asked;
  for (const auto& m : c.members) {
    if (m.role == MemberRole::kLead || m.status == MemberStatus::kShutdown) continue;
    SendRequest r;
    r.type = MessageType::kShutdownRequest;
    r.sender = c.lead;
    r.recipient = m.name;
    r.content = "The team '" + name + "' is being disbanded: wrap up, answer with shutdown_response "
                "(approve and a summary of your work), then stop.";
    auto sent = Messenger(ws_, name).Send(r);
    if (sent.ok()) asked.push_back(m.name);
  }
  // Wait (bounded) for them to stop.
  TeamSummary summary;
  summary.team = name;
  Deadline deadline = DeadlineIn(options_.shutdown_timeout_s);
  auto member_done = [&](const std::string& n) {
    auto it = teammates_.find(n);
    if (it != teammates_.end()) return it->second->finished();
    // Hosted elsewhere (or nowhere): the roster says.
    auto cfg = Roster(ws_).Load(name);
    const Member* m = cfg.ok() ? cfg->Find(n) : nullptr;
    return m == nullptr || m->status == MemberStatus::kShutdown;
  };
  // Woken by our teammates' status changes and by the roster file (hosts
  // in other processes write it).
  auto sub = Watcher::Default().Subscribe(ws_.TeamDir(name), "config.json", status_waker_);
  Deadline until = deadline;
  for (;;) {
    uint64_t g = status_waker_->generation();
    bool all = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& n : asked) all = all && member_done(n);
    }
    if (all || Expired(until)) break;
    status_waker_->WaitChange(g, until);
  }
  for (const auto& n : asked) {
    std::shared_ptr<Teammate> t;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = teammates_.find(n);
      if (it != teammates_.end()) t = it->second;
    }
    bool done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done = member_done(n);
    }
    if (t != nullptr && !done) {
      t->Stop(/*force=*/true, StopReason::kShutdownUnanswered,
              "did not answer the shutdown request within " +
                  std::to_string(static_cast<int>(options_.shutdown_timeout_s)) + " s");
      t->Join();
      summary.stopped.push_back(n + " (stopped: no answer in time)");
    } else if (!done) {
      summary.stopped.push_back(n + " (hosted elsewhere; did not confirm)");
    } else {
      auto req = RequestStore(ws_, name).List();
      std::string how = "approved";
      if (req.ok()) {
        for (const auto& r : *req) {
          if (r.kind == RequestKind::kShutdown && r.responder == n && r.status == RequestState::kApproved &&
              !r.response.empty()) {
            how = "approved: " + r.response.substr(0, 120);
          }
        }
      }
      summary.stopped.push_back(n + " (" + how + ")");
    }
    if (t != nullptr) t->Join();
  }
  // What the team did, before its files go.
  uint64_t next = 0;
  auto log = MessageLog(ws_, name).ReadFrom(0, &next);
  if (log.ok()) {
    for (const auto& m : *log) summary.messages_by_type[std::string(MessageTypeName(m.type))]++;
  }
  auto tasks = SharedBoard(ws_.TasksDir(name))->List(false);
  if (tasks.ok()) {
    for (const auto& t : *tasks) summary.tasks_by_owner[t.owner.empty() ? "(unowned)" : t.owner].push_back(t.id);
  }
  if (lead_ctx_->team == name) MoveLeadTo(home_team_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& n : asked) news_.erase(n);
    last_deleted_ = summary;
  }
  MATES_RETURN_IF_ERROR(roster.DeleteTeam(name));
  std::string out = "Team '" + name + "' deleted.";
  if (!summary.stopped.empty()) {
    out += " Teammates:";
    for (const auto& s : summary.stopped) out += "\n- " + s;
  }
  if (lead_ctx_->team != name) out += "\nYou are back in team '" + lead_ctx_->team + "'.";
  return out;
}

std::optional<TeamSummary> TeamManager::last_deleted() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_deleted_;
}

std::string TeamManager::UsageSummary() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, t] : teammates_) {
    if (t->usage().calls() == 0) continue;
    out += (out.empty() ? "" : "\n") + name + ": " + t->usage().Summary(t->model());
  }
  return out;
}

}  // namespace mates::team
