#include "team/teammate.h"

#include "tools/hook_calls.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "agent/frames.h"
#include "agent/prompts.h"
#include "core/clock.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/text.h"
#include "git/submit.h"
#include "git/worktrees.h"
#include "store/board.h"
#include "store/claim_line.h"
#include "store/mailbox.h"
#include "store/merges.h"
#include "store/messenger.h"
#include "store/requests.h"
#include "store/watcher.h"

namespace mates::team {

namespace {

// What a teammate is told of a task it takes: the subject and description
// are anyone's text, so they cannot forge a frame (DESIGN §19).
std::string TaskNotice(const Task& t) {
  return "Task #" + std::to_string(t.id) + ": " + agent::NeutraliseFrames(t.subject) +
         (t.description.empty() ? "" : "\n" + agent::NeutraliseFrames(t.description));
}

}  // namespace

namespace {
constexpr int kMaxFailedTurns = 3;
}  // namespace

// Forwards events to the shared output, and notices shutdown requests as
// they are delivered.
class Teammate::EventsTap : public agent::AgentEvents {
 public:
  EventsTap(Teammate* owner, agent::AgentEvents* to) : owner_(owner), to_(to) {}
  void OnText(const std::string& a, std::string_view d) override { if (to_) to_->OnText(a, d); }
  void OnTextEnd(const std::string& a) override { if (to_) to_->OnTextEnd(a); }
  void OnToolCall(const std::string& a, const llm::ContentBlock& c) override { if (to_) to_->OnToolCall(a, c); }
  void OnToolResult(const std::string& a, const llm::ContentBlock& c, const tools::ToolResult& r) override {
    if (to_) to_->OnToolResult(a, c, r);
  }
  void OnRetry(const std::string& a, int n, const Status& w, double d) override { if (to_) to_->OnRetry(a, n, w, d); }
  void OnCompact(const std::string& a, int64_t b, int64_t f, const std::string& t) override {
    if (to_) to_->OnCompact(a, b, f, t);
  }
  void OnNotice(const std::string& a, const std::string& t) override { if (to_) to_->OnNotice(a, t); }
  void OnMessages(const std::string& a, const std::vector<Message>& delivered) override {
    bool shutdown = false;
    {
      std::lock_guard<std::mutex> lock(owner_->mu_);
      for (const auto& m : delivered) {
        if (m.type == MessageType::kShutdownRequest && !m.request_id.empty()) {
          owner_->shutdown_requests_.insert(m.request_id);
          shutdown = true;
        }
      }
    }
    if (shutdown) owner_->env_.hooks.OnShutdownDelivered(owner_->name());
    if (to_) to_->OnMessages(a, delivered);
  }

 private:
  Teammate* owner_;
  agent::AgentEvents* to_;
};

Teammate::Teammate(Config config, TeammateEnv env, std::unique_ptr<Hold> host_lock)
    : config_(std::move(config)),
      env_(std::move(env)),
      host_lock_(std::move(host_lock)),
      ctx_(env_.ws, env_.store) {
  // Given instructions, it is working from the moment it exists: a lead
  // looking between the spawn and its thread's first step must not take it
  // for idle (and end a run before it began).
  if (config_.new_prompt) status_.store(MemberStatus::kActive);
  ctx_.work_root = config_.work_root;
  ctx_.team = config_.team;
  ctx_.agent = config_.name;
  ctx_.is_lead = false;
  ctx_.plan_mode = config_.plan_mode;
  ctx_.sandbox = env_.options.sandbox;
  ctx_.hooks = env_.options.hooks;
  tools_ = tools::MakeToolRegistry(tools::Scope::kTeammate);
  if (env_.options.extra_tools) env_.options.extra_tools(*tools_, config_.name);
  events_ = std::make_unique<EventsTap>(this, env_.events);
  agent::PromptFacts facts;
  facts.ws = ctx_.ws;
  facts.team = config_.team;
  facts.name = config_.name;
  facts.lead = env_.lead;
  facts.role_prompt = config_.prompt;
  facts.plan_mode = config_.plan_mode;
  facts.work_root = config_.work_root;
  facts.target_branch = config_.git.target_name();
  agent::AgentSpec spec;
  spec.name = config_.name;
  spec.system = agent::TeammateSystemPrompt(facts);
  spec.identity = agent::TeammateIdentity(facts);
  spec.model = config_.model;
  spec.max_calls = env_.options.teammate_max_calls;
  spec.breaker.stall_calls = env_.options.stall_calls;
  spec.turn_costs = env_.options.turn_costs;
  spec.pacer = env_.options.pacer;
  spec.read_inbox = true;
  spec.context.budget_tokens =
      config_.context_budget > 0 ? config_.context_budget : env_.options.context_budget;
  spec.budget_tokens = config_.budget_tokens;
  spec.team_spend = env_.options.spend;
  spec.metrics = env_.options.metrics;
  spec.tracer = env_.options.tracer;
  spec.host_env = env_.options.host_env;
  spec.cache = !env_.options.naive_baseline;
  spec.after_failure = "tries again in a moment; after " + std::to_string(kMaxFailedTurns) +
                       " failed turns in a row it stops and the lead is told";
  loop_ = std::make_unique<agent::AgentLoop>(spec, &env_.provider, tools_.get(), &ctx_, events_.get());
  ctx_.cancel = loop_->cancel_token();
  loop_->SetBeforeCall([this] { CheckPlanApproval(); });
  if (env_.options.pacer) {
    env_.options.pacer->SetNudge(config_.name, this, [loop = loop_.get(), waker = waker_](const std::string& note) {
      if (!note.empty()) loop->AddNotice(note);
      waker->Notify();
    });
  }
  // No tool runs for a teammate another host has taken over (its stop
  // interrupts the loop, which then skips the tool).
  loop_->SetBeforeTool([this] { (void)StillHosted(); });
  if (env_.options.after_tool) {
    loop_->SetAfterTool([this](const llm::ContentBlock& call, const tools::ToolResult& result) {
      env_.options.after_tool(config_.team, config_.name, call, result);
    });
  }
}

Teammate::~Teammate() {
  if (env_.options.pacer) env_.options.pacer->SetNudge(config_.name, this, {});
  Stop(/*force=*/true, StopReason::kHostStopped, "its host is shutting down");
  Join();
  host_lock_.reset();  // first: a loss reported now would find the rest gone
}

void Teammate::Start() {
  // Hosted by another process now (its liveness lost with a connection and
  // taken meanwhile): it stops at once, and writes nothing of its status.
  if (host_lock_) {
    host_lock_->OnLost([this] {
      taken_over_.store(true);
      Stop(/*force=*/true, StopReason::kTakenOver,
           "another host took it over (its lease ended unrenewed, or with its session)");
    });
  }
  thread_ = std::thread([this] {
    NameThisThread(config_.name);
    RunGuarded("teammate " + config_.name, [this] { Main(); });
    starting_.store(false);
    // Whatever ended the thread, it is finished: nobody waits for it.
    if (!finished_.load()) {
      finished_.store(true);
      reported_.store(true);
      env_.hooks.WakeWaiters();
    }
  });
}

void Teammate::SetStopReason(StopReason reason, const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_reason_ != StopReason::kNone) return;
  stop_reason_ = reason;
  stop_detail_ = detail;
}

void Teammate::Stop(bool force, StopReason reason, const std::string& why) {
  SetStopReason(reason, why);
  stop_.store(true);
  if (force) loop_->Interrupt(CancelToken::kForGood);
  waker_->Notify();
}

void Teammate::Join() {
  if (thread_.joinable()) thread_.join();
}

void Teammate::SetStatus(MemberStatus s, const std::string& detail) {
  // Whoever waits on status_ (the lead's AnyActive) must find the roster
  // saying the same: working is announced here first (the roster follows
  // off the handoff path), resting on disk first.
  if (!StillHosted()) {
    status_.store(s);  // here only: the roster is the other host's to write
  } else if (s == MemberStatus::kActive) {
    status_.store(s);
    env_.statuses.Post(config_.team, config_.name, s);
  } else {
    Status st = env_.statuses.Write(config_.team, config_.name, s);
    status_.store(s);
    if (!st.ok()) LogDebug(config_.name + ": status: " + st.message());
  }
  env_.hooks.OnStatus(config_.name, s, detail);
}

void Teammate::CheckPlanApproval() {
  if (!ctx_.plan_mode) return;
  auto requests = env_.store.Mail(config_.team)->ListRequests();
  if (!requests.ok()) return;
  for (const auto& r : *requests) {
    if (r.kind == RequestKind::kPlanApproval && r.requester == config_.name && r.status == RequestState::kApproved) {
      ctx_.plan_mode = false;
      events_->OnNotice(config_.name, "plan approved by " + r.responder + ": plan mode lifted");
      return;
    }
  }
}

bool Teammate::ShutdownApproved() {
  std::set<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ids = shutdown_requests_;
  }
  std::unique_ptr<TeamMail> mail = env_.store.Mail(config_.team);
  for (const auto& id : ids) {
    auto r = mail->GetRequest(id);
    if (!r.ok()) continue;
    if (r->status == RequestState::kApproved) return true;
    if (r->status == RequestState::kRejected) {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_requests_.erase(id);  // the lead has the reason; go on
      env_.hooks.OnShutdownDone(config_.name);
    }
  }
  return false;
}

bool Teammate::ShutdownPending() {
  std::lock_guard<std::mutex> lock(mu_);
  return !shutdown_requests_.empty();
}

Status Teammate::RemindOfTasksInProgress() {
  // The board keeps tasks claimed by a host that died in_progress under our
  // name; nobody else may claim them, so we must finish them.
  std::unique_ptr<TaskBoard> board = env_.store.Board(config_.team);
  auto tasks = board->List(false);
  if (!tasks.ok()) return tasks.status();
  std::string text, waiting;
  std::vector<int64_t> unsubmitted;  // in progress, not in the merge queue
  std::unique_ptr<MergeBook> merges = config_.work_root.empty() ? nullptr : env_.store.Merges(config_.team);
  std::optional<std::vector<MergeRequest>> requests;  // listed once, if a task is ours
  for (Task t : *tasks) {
    if (t.owner != config_.name || t.status != TaskStatus::kInProgress) continue;
    if (merges) {
      MATES_ASSIGN_OR_RETURN(t, git::LinkUnrecordedMerge(*board, *merges, std::move(t), &requests));
    }
    auto m = merges ? git::WaitingMerge(*merges, t) : std::nullopt;
    if (!m && merges) m = git::LandedMerge(*merges, t);  // merged: the queue completes it
    if (m) {
      // Submitted before the host died: redoing it would only leave the
      // worktree changed under the next task.
      waiting += "\n#" + std::to_string(t.id) + " (" + agent::NeutraliseFrames(t.subject) + "): merge request " + std::to_string(m->id) + ", " +
                 std::string(MergeStateName(m->status));
      continue;
    }
    text += "\n" + TaskNotice(t);
    unsubmitted.push_back(t.id);
    // Sent back while no host ran it, or between the bounce and its
    // message: the reminder says why in merge-queue's words, lest the
    // task be redone and resubmitted unchanged (and for a message that
    // could not be sent, it is the only word of it).
    if (auto m = merges ? git::BouncedMerge(*merges, t) : std::nullopt) {
      text += "\nIt came back from the merge queue (merge request " + std::to_string(m->id) + "):\n" +
              agent::NeutraliseFrames(git::BounceLine(*m)) +
              "\nYour worktree is as you left it: do what that asks, then mark the task completed again.";
    }
  }
  if (text.empty() && waiting.empty()) return Status::Ok();
  if (text.empty()) {
    loop_->AddNotice("Your host process stopped while you worked; you are resumed from your journal. Your tasks "
                     "in progress were submitted and wait in the merge queue; there is nothing to do for them "
                     "unless merge-queue sends one back:" +
                     waiting);
    return Status::Ok();
  }
  if (!waiting.empty()) {
    text += "\n(Submitted already, waiting in the merge queue: nothing to do for them unless merge-queue sends "
            "one back:" +
            waiting + ")";
  }
  // Taken up on another machine than its last, its worktree lacks what it
  // did there: said, and each task's first completion refused (TaskUpdate).
  const std::string before = loop_->journaled_place();
  if (!config_.work_root.empty() && !before.empty() && before != Place()) {
    ctx_.work_not_here.insert(unsubmitted.begin(), unsubmitted.end());
    // The journal's word (another machine may have written it): one line,
    // bounded, without control characters or frames.
    const auto shown = [](const std::string& place) {
      std::string s = ForTerminal(place, 300);
      std::replace(s.begin(), s.end(), '\n', ' ');
      return agent::NeutraliseFrames(s);
    };
    text += "\nYou worked on them at " + shown(before) + "; you are now at " + shown(Place()) +
            ", and what you did there did not come with you: your worktree here (" + config_.work_root.string() +
            ") has only what was merged or left in it before. Check it, do again what is missing, then mark them "
            "completed.";
  }
  // Its host may have died between a claim and the refresh that follows
  // it (TakeTask): the task would then be worked on without what it
  // builds on. A worktree with work begun in it is left as it is.
  loop_->AddNotice("Your host process stopped while you worked; you are resumed from your journal. "
                   "These tasks are yours and still in progress (finish them, then mark them completed):" +
                   text + RefreshWorktree());
  return Status::Ok();
}

std::string Teammate::Place() const {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "%s", "?");
  return std::string(host) + ":" + ctx_.ws.root().string();
}

std::string Teammate::RefreshWorktree() {
  if (config_.work_root.empty()) return "";
  std::string stale = git::RefreshWorktree(ctx_.ws, config_.team, config_.name, config_.git);
  if (stale.empty()) return "";
  return "\n(Your worktree does not have the latest " + config_.git.target_name() + ": " + stale + ".)";
}

void Teammate::TakeTask(const Task& t) {
  // What the task builds on was merged onto the target: bring it in.
  loop_->AddNotice(TaskNotice(t) + LeaseOverlapNotice(t) + RefreshWorktree());
  SetStatus(MemberStatus::kActive);
}

// A claim passes over a task whose lease overlaps one in progress while
// another is ready (DESIGN §30); one taken all the same (nothing else was
// ready, or it was assigned) is said: the claimer is told whose work it
// meets, and the lead, from merge-queue, so that it can sequence them.
std::string Teammate::LeaseOverlapNotice(const Task& t) {
  if (t.paths.empty()) return "";
  auto tasks = board_->List(false);
  if (!tasks.ok()) return "";
  // When a task went in progress last (its history), to tell which of two
  // overlapping claims came second: the one made with the other in progress.
  const double now = WallSeconds();
  auto since = [&](const Task& task) {
    auto windows = WorkWindows(task, task.owner, now);
    return windows.empty() ? now : windows.back().first;
  };
  double ours = now;
  for (const auto& task : *tasks) {
    if (task.id == t.id) ours = since(task);
  }
  std::string mine, lead;
  for (const auto& other : *tasks) {
    if (other.id == t.id || other.status != TaskStatus::kInProgress || other.paths.empty() ||
        !LeasesOverlap(t.paths, other.paths)) {
      continue;
    }
    const std::string who = other.owner.empty() ? "nobody yet" : other.owner;
    mine += "\n#" + std::to_string(other.id) + " (" + agent::NeutraliseFrames(other.subject) + "), " + who + ": " +
            agent::NeutraliseFrames(JoinWords(other.paths));
    if (since(other) < ours) lead += (lead.empty() ? "" : ", ") + ("#" + std::to_string(other.id) + " (" + who + ")");
  }
  if (mine.empty()) return "";
  if (!lead.empty() && !env_.lead.empty() && env_.lead != config_.name) {
    SendRequest s;
    s.sender = kMergeQueueName;
    s.recipient = env_.lead;
    s.summary = "lease overlap: #" + std::to_string(t.id);
    s.content = config_.name + " took task #" + std::to_string(t.id) + " (" + JoinWords(t.paths) +
                "), whose files overlap task " + lead +
                " in progress: nothing else was ready for it. Their work may conflict when it is merged; "
                "sequence them (a dependency) if it should wait.";
    if (auto sent = Messenger(*env_.store.Mail(config_.team)).Send(s); !sent.ok()) {
      LogWarning(config_.name + ": telling the lead of a lease overlap: " + sent.status().message());
    }
  }
  return "\nIts files (" + agent::NeutraliseFrames(JoinWords(t.paths)) + ") overlap tasks in progress; agree with their owners (SendMessage) who "
         "changes what:" + mine;
}

bool Teammate::Unrenewed() {
  // A lost lock found now stops it (OnLost) before StillHosted returns.
  return !StillHosted() && !taken_over_.load() && !stop_.load();
}

bool Teammate::StillHosted() {
  if (taken_over_.load()) return false;
  // A lost lock found now calls OnLost's stop (taken_over_) before this returns.
  return host_lock_ == nullptr || host_lock_->StillHeld();
}

std::optional<bool> Teammate::IdleEnds() {
  if (stop_.load()) return false;
  // Before a claim: not one for a teammate another host has taken over.
  if (!StillHosted()) return false;
  if (std::string over = loop_->OverBudget(); !over.empty()) {
    SetStopReason(StopReason::kBudget, over);
    return false;
  }
  if (loop_->HasPendingInput()) return true;
  return std::nullopt;
}

bool Teammate::IdleTimedOut(const Deadline& deadline) {
  if (!Expired(deadline)) return false;
  const double timeout = env_.options.idle_timeout_s;
  SetStopReason(StopReason::kIdleTimeout, "no work for " + std::to_string(static_cast<int>(timeout)) + " s");
  return true;
}

bool Teammate::BoardGoneAfterMiss(const Status& claim) {
  claiming_.store(false);
  env_.hooks.WakeWaiters();  // whoever saw us claiming must look again
  if (claim.code() != StatusCode::kNotFound) return false;
  SetStopReason(StopReason::kTeamGone, "its team's task board is gone");
  return true;
}

// The watches it waits on, made at its first idle wait and kept to its end
// (made at every wait, they were made and unmade at every task, on the path
// from a completion to the next claim): its inbox's, and the board's
// through the store's claim line for the team where it has one (a change
// wakes one idle teammate of this process, whose look wakes as many more as
// it left work), else a watch of its own. Without them it looks once a
// second (the seeds' interval), not at the idle timeout.
bool Teammate::WatchForWork() {
  TeamStore& store = env_.store;
  if (!inbox_watch_) {
    auto inbox = store.InboxOf(config_.team, config_.name)->WatchWith(waker_);
    if (inbox.ok()) {
      inbox_watch_ = std::move(*inbox);
    } else {
      LogWarning(config_.name + ": cannot watch its inbox (" + inbox.status().message() +
                 "); looking every second instead");
    }
  }
  if (!line_ && !board_watch_) {
    auto line = store.ClaimLineOf(config_.team);
    Status failed = line.status();
    if (line.ok() && *line) {
      line_ = std::move(*line);
    } else if (line.ok()) {
      auto watch = store.WatchBoard(config_.team, waker_);
      if (watch.ok()) board_watch_ = std::move(*watch);
      failed = watch.status();
    }
    if (!failed.ok()) {
      LogWarning(config_.name + ": cannot watch the task board (" + failed.message() +
                 "); looking every second instead");
    }
  }
  if (!board_) board_ = store.Board(config_.team);
  return inbox_watch_ && (line_ || board_watch_);
}

// The person's TeammateIdle hooks (DESIGN §22), as the teammate is about to
// go idle: a block keeps it working, the hook's words its next input. At
// most kMaxIdleBlocks times in a row: a hook that always blocks would keep
// the model busy for nothing.
bool Teammate::IdleHookKeepsWorking(int* blocks) {
  constexpr int kMaxIdleBlocks = 5;
  if (!ctx_.hooks || !ctx_.hooks->Wants(hooks::Event::kTeammateIdle)) return false;
  Json in = tools::HookInput(ctx_);
  in["teammate_name"] = config_.name;
  hooks::Outcome o = tools::RunHooks(ctx_, hooks::Event::kTeammateIdle, {}, std::move(in));
  if (!o.blocked) return false;
  if (*blocks >= kMaxIdleBlocks) {
    LogWarning(config_.name + ": a TeammateIdle hook blocked " + std::to_string(kMaxIdleBlocks) +
               " times in a row; it goes idle");
    return false;
  }
  ++*blocks;
  loop_->ReportBlocked("TeammateIdle", "going idle: " + o.reason);
  loop_->AddNotice("[TeammateIdle hook] Not done yet:\n" + o.reason);
  return true;
}

bool Teammate::RestWait() {
  const bool watched = WatchForWork();
  const double timeout = env_.options.idle_timeout_s;
  Deadline deadline = timeout > 0 ? DeadlineIn(timeout) : std::nullopt;
  SetStatus(MemberStatus::kIdle, "interrupted");
  for (;;) {
    uint64_t seen = waker_->generation();
    if (Unrenewed()) {
      waker_->WaitChange(seen, DeadlineIn(1.0));
      continue;
    }
    if (auto ends = IdleEnds()) return *ends;
    if (IdleTimedOut(deadline)) return false;
    Deadline wait = deadline;
    if (!watched) {
      Deadline tick = DeadlineIn(1.0);
      if (!wait || *tick < *wait) wait = tick;
    }
    waker_->WaitChange(seen, wait);
  }
}

Result<std::optional<Task>> Teammate::LookForTask(ClaimLine::Place& place, bool in_line, bool* handed) {
  // Replayed, it claims only where its record did (agent/pacer.h).
  if (env_.options.pacer && !env_.options.pacer->MayClaim(config_.name)) return std::optional<Task>();
  ClaimLine::Place::Look look;
  if (in_line) look = place.BeginLook();
  if (look.handed) {
    *handed = true;
    return look.handed;
  }
  ClaimOutlook outlook;
  outlook.count_up_to = look.others;
  auto claimed = board_->ClaimNext(config_.name, in_line ? &outlook : nullptr);
  if (in_line) place.Looked(look.bumps, outlook);
  return claimed;
}

bool Teammate::IdleWait() {
  if (loop_->resting()) return RestWait();
  const bool watched = WatchForWork();
  const bool seed_polling = env_.options.seed_polling;
  const bool in_line = line_ && watched && !seed_polling;
  // Between a claim (ours, or one made for us by a hand-out) and the status
  // going back to active, `claiming_` keeps the teammate counted as working
  // (TeamManager::AnyActive).
  ClaimLine::Place place;
  if (in_line) place = line_->Join(config_.name, waker_, &claiming_);
  // Leaving the line, with a task handed to us meanwhile: taken if we go on
  // working, else given back.
  auto leave = [&](bool go_on) {
    if (auto handed = place.Leave()) {
      if (go_on) {
        TakeTask(*handed);
      } else {
        line_->GiveBack(config_.name, *handed);
      }
    }
    claiming_.store(false);
    env_.hooks.WakeWaiters();
    return go_on;
  };
  const double timeout = env_.options.idle_timeout_s;
  Deadline deadline = timeout > 0 ? DeadlineIn(timeout) : std::nullopt;
  bool said_idle = false;
  for (;;) {
    uint64_t seen = waker_->generation();
    if (Unrenewed()) {
      waker_->WaitChange(seen, DeadlineIn(1.0));
      continue;
    }
    if (auto ends = IdleEnds()) return leave(*ends);
    claiming_.store(true);
    bool handed = false;
    auto claimed = LookForTask(place, in_line, &handed);
    if (handed) {
      TakeTask(**claimed);
      claiming_.store(false);
      return true;
    }
    if (claimed.ok() && claimed->has_value() && !StillHosted()) {
      GiveBackClaim(**claimed);
      if (taken_over_.load() || stop_.load()) return leave(false);
      continue;  // unrenewed: it waits, above
    }
    if (claimed.ok() && claimed->has_value()) {
      // One task at a time: one handed to us since our look goes back.
      if (auto extra = place.Leave()) line_->GiveBack(config_.name, *extra);
      TakeTask(**claimed);
      claiming_.store(false);
      return true;
    }
    if (BoardGoneAfterMiss(claimed.status())) {
      if (in_line) line_->WakeAll();  // the others in the line learn it too
      return leave(false);
    }
    if (!claimed.ok()) {
      // A store out of reach (a server restarting, say) is waited for,
      // idle, as long as the idle timeout allows.
      if (claimed.status().code() != StatusCode::kUnavailable) {
        LogWarning(config_.name + ": claiming: " + claimed.status().message());
      }
      if (WaitOutOutage(claimed.status(), *waker_, seen, deadline)) continue;
    }
    // Idle only now that there is certainly nothing to do (not between turns).
    if (!said_idle) {
      SetStatus(MemberStatus::kIdle);
      said_idle = true;
      // Look once more: work may have come while we said so. In the line,
      // after a look that was answered, what came since it began has woken
      // one of the line (us, or another who looks for us): a look is a
      // statement on a database's server, and going idle made two.
      if (!in_line || !claimed.ok()) continue;
    }
    if (IdleTimedOut(deadline)) return leave(false);
    WaitIdle(seen, deadline, seed_polling, watched);
  }
}

// Taken over between the look and the claim (the other host's lock came
// after our connection was cut, so the claim sees it): the claim was not
// this host's to make.
void Teammate::GiveBackClaim(const Task& t) {
  TaskPatch back;
  back.status = TaskStatus::kPending;
  back.owner = "";
  auto given = board_->Update(t.id, back, Caller{config_.name, false});
  if (!given.ok()) {
    LogWarning(config_.name + ": giving back a task claimed while taken over: " + given.status().message());
  }
}

// Idle until something changes (`seen`: the waker's generation at the
// look), the deadline, or a second when nothing wakes it.
void Teammate::WaitIdle(uint64_t seen, const Deadline& deadline, bool seed_polling, bool watched) {
  if (seed_polling) {
    // The seeds' idle loop: look again in a second.
    Deadline tick = DeadlineIn(1.0);
    if (deadline && *deadline < *tick) tick = deadline;
    std::this_thread::sleep_until(*tick);
    return;
  }
  Deadline wait = deadline;
  if (!watched) {
    Deadline tick = DeadlineIn(1.0);
    if (!wait || *tick < *wait) wait = tick;
  }
  waker_->WaitChange(seen, wait);
}

void Teammate::Main() {
  fs::path journal = ctx_.ws.JournalPath(config_.team, config_.name);
  // Ends it before its first turn: for a later host (or this one, once the
  // store is back) when `reason` is resumable, else for good. Its lease
  // goes with it, as at the end of Main: held by nobody, it is another
  // host's to take.
  auto give_up = [&](StopReason reason, const std::string& what, const Status& s) {
    SetStopReason(reason, what + ": " + s.message());
    finished_.store(true);
    SetStatus(Resumable(reason) ? MemberStatus::kIdle : MemberStatus::kShutdown, what);
    starting_.store(false);
    host_lock_.reset();
    reported_.store(true);
    env_.hooks.WakeWaiters();
  };
  Status s = loop_->AttachJournal(journal, config_.resume, env_.store.JournalOf(config_.team, config_.name));
  if (!s.ok()) {
    events_->OnNotice(config_.name, "cannot resume: " + s.message());
    // A store that cannot be reached now leaves it for later; a journal
    // this host cannot write (a full disk) leaves it to another host, as a
    // turn that cannot be journaled does (below); a journal that cannot be
    // read ends it.
    if (s.code() == StatusCode::kUnavailable) {
      give_up(StopReason::kHostStopped, "its journal's copy could not be reached", s);
    } else if (s.code() == StatusCode::kIOError && host_lock_ != nullptr) {
      handed_off_at_.store(std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count());
      give_up(StopReason::kHandedOff, "this host cannot write its journal; another host may take it over", s);
    } else {
      give_up(StopReason::kJournal, "its journal could not be replayed", s);
    }
    return;
  }
  if (config_.resume) {
    // A board that cannot be read now (its server restarting) is asked
    // again: without the reminder a task in progress under its name would
    // wait for it forever (the fault harness stalled so once). After 30 s
    // it is left for later, as a journal's copy out of reach is.
    Status reminded = RemindOfTasksInProgress();
    for (int i = 0; !reminded.ok() && i < 30 && !stop_.load(); ++i) {
      const uint64_t g = waker_->generation();
      waker_->WaitChange(g, DeadlineIn(1));
      reminded = RemindOfTasksInProgress();
    }
    if (!reminded.ok()) {
      events_->OnNotice(config_.name, "cannot resume: its board: " + reminded.message());
      give_up(StopReason::kHostStopped, "its board could not be read", reminded);
      return;
    }
  }
  // Where it is taken up, for the next host to compare (above). Not fatal:
  // a journal this host cannot write fails the first turn, which says so.
  if (!config_.work_root.empty()) {
    if (Status placed = loop_->JournalPlace(Place()); !placed.ok()) {
      LogWarning(config_.name + ": its place was not journaled: " + placed.message());
    }
  }
  SetStatus(MemberStatus::kActive);
  starting_.store(false);
  Result<agent::TurnResult> r = agent::TurnResult{};
  if (config_.new_prompt) {
    r = loop_->Run(config_.prompt);
  } else if (loop_->HasPendingInput()) {
    r = loop_->Continue();  // a resumed conversation with work pending
  }
  bool reminded = false;
  int failures = 0;     // turns failed in a row
  int idle_blocks = 0;  // times in a row a TeammateIdle hook kept it working
  for (;;) {
    if (!r.ok()) {
      // The provider has already retried what can be retried: what fails
      // here (a refused request, retries exhausted) fails again at once. A
      // pause, then a few more tries; then the teammate stops and the lead
      // hears why, instead of spinning.
      events_->OnNotice(config_.name, "turn failed: " + r.status().message());
      // This host cannot write what the turn must keep (its journal: a
      // full disk, a failing one). On a store that spans machines another
      // host can: it lets the teammate go (its lease with its thread, its
      // status idle) instead of holding it, and its tasks, while it fails.
      if (r.status().code() == StatusCode::kIOError && host_lock_ != nullptr) {
        handed_off_at_.store(std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count());
        SetStopReason(StopReason::kHandedOff,
                      "this host cannot write for it (" + r.status().message() + "): another host may take it over");
        break;
      }
      if (++failures >= kMaxFailedTurns) {
        SetStopReason(StopReason::kTurnsFailing, "its turns keep failing: " + r.status().message());
        break;
      }
      uint64_t g = waker_->generation();
      if (!stop_.load()) waker_->WaitChange(g, DeadlineIn(0.5 * failures));
    } else {
      failures = 0;
      if (r->end == agent::TurnEnd::kBudget) {
        // It finished the tool it was in; no further model call.
        SetStopReason(StopReason::kBudget, r->why);
        break;
      }
      if (r->end == agent::TurnEnd::kBreaker) {
        SetStopReason(StopReason::kPaused, r->why);
        break;
      }
    }
    if (stop_.load()) break;
    if (ShutdownApproved()) {
      SetStopReason(StopReason::kShutdownApproved, "approved the shutdown request");
      break;
    }
    if (ShutdownPending()) {
      if (reminded) {
        SetStopReason(StopReason::kShutdownUnanswered, "did not answer the shutdown request");
        break;
      }
      // The wrap-up turn ended without an answer: one reminder.
      reminded = true;
      loop_->AddNotice("You have not answered the lead's shutdown_request. Answer it now with "
                       "SendMessage(type=\"shutdown_response\", request_id=…, approve=true and a "
                       "summary of your work, or approve=false and the reason).");
      r = loop_->Continue();
      continue;
    }
    if (r.ok() && IdleHookKeepsWorking(&idle_blocks)) {
      r = loop_->Continue();
      continue;
    }
    idle_blocks = 0;
    if (!IdleWait()) break;
    if (status_.load() != MemberStatus::kActive) SetStatus(MemberStatus::kActive);
    r = loop_->Continue();
  }
  inbox_watch_.reset();
  line_.reset();
  board_.reset();
  StopReason reason;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reason = stop_reason_;
    why = stop_detail_;
  }
  // A host going away leaves the teammate resumable (idle); anything else
  // ends it.
  bool resumable = Resumable(reason);
  if (!resumable && !config_.work_root.empty() && reason != StopReason::kTakenOver) {
    std::string kept = env_.hooks.CleanUpWorktree(config_.team, config_.name);
    if (!kept.empty()) why += (why.empty() ? "" : "; ") + kept;
  }
  // Its activity says `stopped: budget: …` (DESIGN §20).
  loop_->ReportStopped(reason == StopReason::kBudget ? "budget: " + why : why);
  env_.hooks.OnShutdownDone(config_.name);
  // Finished before the last status goes out: whoever that status wakes
  // must see this teammate as done.
  finished_.store(true);
  SetStatus(resumable ? MemberStatus::kIdle : MemberStatus::kShutdown, why);
  // Its liveness goes with its thread, not with the object its host keeps:
  // a restart (`mates restart`, the lead's Task) may take it at once.
  host_lock_.reset();
  // The lead's news has it now: it may stop waiting for this teammate.
  reported_.store(true);
  env_.hooks.WakeWaiters();
}

}  // namespace mates::team
