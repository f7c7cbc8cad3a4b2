// An agent's journal: attached (resumed, reconciled with the store's copy,
// a broken tail set aside) and moved with the agent between teams (see
// agent_loop.h, journal.h).
#include "agent/agent_loop.h"
#include "core/log.h"

namespace mates::agent {

void AgentLoop::JournalTurnEnd(const Result<TurnResult>& r) {
  if (!journal_) return;
  Status said = Status::Ok();
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kCancelled) return;  // stopped: not an ending of its own
    said = journal_->AppendTurnEnd("failed", r.status().message(), model_failed_ ? "model" : "");
  } else if (r->end != TurnEnd::kEndTurn) {
    said = journal_->AppendTurnEnd(r->stop_reason, r->why, "");
  }
  if (!said.ok()) LogWarning(spec_.name + ": the end of its turn was not journaled: " + said.message());
}

Status AgentLoop::AttachJournal(const fs::path& path, bool resume, std::unique_ptr<JournalCopy> copy,
                                std::optional<int64_t> reconciled) {
  int64_t copied = reconciled.value_or(0);
  if (copy && !reconciled) {
    MATES_ASSIGN_OR_RETURN(copied, Journal::Reconcile(path, *copy));
  }
  if (resume) {
    MATES_ASSIGN_OR_RETURN(JournalState st, Journal::Load(path));
    if (st.problem) {
      // Not a dead end (every later run would fail the same way): the
      // valid prefix goes on, the whole file is kept, and the way out is said.
      MATES_ASSIGN_OR_RETURN(fs::path aside, Journal::Rewrite(path, st));
      if (copy) {
        MATES_ASSIGN_OR_RETURN(copied, Journal::Republish(path, *copy));
      }
      std::string said = "journal " + path.string() + ":" + std::to_string(st.problem->line) + ": " +
                         st.problem->what + "; resuming with the " + std::to_string(st.messages.size()) +
                         " message(s) before it (the whole journal is kept as " + aside.filename().string() +
                         "; --fresh starts the lead over)";
      LogWarning(said);
      if (events_ != nullptr) events_->OnNotice(spec_.name, said);
      // Its spending, all of it (the rewritten journal carries every usage line).
      MATES_ASSIGN_OR_RETURN(JournalState spent, Journal::LoadUsage(path));
      st.usage = spent.usage;
      st.calls = spent.calls;
    }
    conversation_.Reset(std::move(st.messages));
    delivered_ = std::move(st.delivered);
    compactions_ = st.compactions;
    journaled_place_ = std::move(st.place);
    // What it spent before counts against its budget, and is reported.
    usage_.Restore(st.usage, st.calls);
    in_team_.Restore(st.usage, st.calls);
  }
  MATES_ASSIGN_OR_RETURN(Journal j, Journal::Open(path));
  if (copy) j.CopyTo(std::move(copy), copied);
  journal_.emplace(std::move(j));
  AttachActivity(path.parent_path());
  if (resume && !conversation_.PendingToolUses().empty()) {
    // The process died while running these tools: say so to the model.
    std::vector<llm::ContentBlock> results;
    for (const auto& id : conversation_.PendingToolUses()) {
      results.push_back(llm::ContentBlock::ToolResult(
          id, "interrupted: the agent was restarted before this tool call finished; check its "
              "effect before repeating it", true));
    }
    MATES_RETURN_IF_ERROR(AddUser(std::move(results)));
  }
  StartSession(resume && !conversation_.empty() ? "resume" : "startup");
  return Status::Ok();
}

Status AgentLoop::JournalPlace(const std::string& place) {
  if (!journal_ || place == journaled_place_) return Status::Ok();
  MATES_RETURN_IF_ERROR(journal_->AppendPlace(place));
  journaled_place_ = place;
  return Status::Ok();
}

Status AgentLoop::MoveJournal(const fs::path& path, std::unique_ptr<JournalCopy> copy,
                              const std::string& to, bool back_home) {
  int64_t copied = 0;
  if (copy) {
    MATES_ASSIGN_OR_RETURN(copied, Journal::Reconcile(path, *copy));
  }
  // What it spent in that team before (a lead back in the team it began
  // in): its activity there shows that team's spending, as the journal does.
  // (Unreadable, it only shows less: the journal itself is opened below.)
  auto before = Journal::LoadUsage(path);
  if (!before.ok() && before.status().code() != StatusCode::kNotFound) {
    LogWarning(spec_.name + ": its spending in " + path.string() +
               " is not shown: " + before.status().message());
  }
  in_team_.Restore(before.ok() ? before->usage : llm::Usage{}, before.ok() ? before->calls : 0);
  MATES_ASSIGN_OR_RETURN(Journal j, Journal::Open(path));
  if (copy) j.CopyTo(std::move(copy), copied);
  MATES_RETURN_IF_ERROR(j.AppendCompaction(conversation_.messages(),
                                           journal_ ? journal_->path().string() : ""));
  if (!delivered_.empty()) {
    // The ids delivered so far travel with the conversation.
    std::vector<std::string> ids(delivered_.begin(), delivered_.end());
    MATES_RETURN_IF_ERROR(j.AppendDelivered(ids));
  }
  // A session resumed from the journal it leaves goes on in the new one
  // (not when it goes home: the team it leaves is being deleted).
  if (journal_ && !to.empty() && !back_home) {
    Status said = journal_->AppendMoved(to);
    if (!said.ok())
      LogWarning(spec_.name + ": " + said.message() +
                 " (a resumed session would begin where it was)");
  }
  journal_.emplace(std::move(j));
  if (activity_) {
    if (to.empty()) {
      activity_->Stopped("moved to another team");
    } else if (back_home) {
      activity_->Stopped("back in team " + to);
    } else {
      activity_->Away("working in team " + to);
    }
  }
  AttachActivity(path.parent_path());
  return Status::Ok();
}

void AgentLoop::AttachActivity(const fs::path& dir) {
  if (spec_.host_env == nullptr) return;
  // On a shared store people on other machines see it too.
  TeamStore::ActivitySink also;
  if (!ctx_->team.empty()) also = ctx_->store().ActivityOf(ctx_->team, spec_.name);
  activity_ = std::make_unique<ActivityFile>(dir / (spec_.name + ".status.json"), spec_.name, model(),
                                             spec_.host_env->files, spec_.host_env->prices,
                                             std::move(also));
  activity_->SetUsage(in_team_.total(), in_team_.calls());  // also the first write: idle
}

}  // namespace mates::agent
