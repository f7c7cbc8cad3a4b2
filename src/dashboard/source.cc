// See source.h.
#include "dashboard/source.h"

#include "git/submit.h"
#include "store/liveness.h"
#include "store/messenger.h"
#include "store/requests.h"

namespace mates::dashboard {

Source::Source(TeamStore& store, std::string team, git::MergeHooks merge_hooks)
    : store_(&store), team_(std::move(team)), merge_hooks_(std::move(merge_hooks)) {}

Source::~Source() = default;

std::string Source::where() const { return store_->spans_machines() ? store_->where() : ""; }

Result<view::TeamView> Source::View() { return view::LookAtTeam(*store_, team_, 0); }

Result<LogPage> Source::LastMessages(size_t n, size_t max_bytes) { return store_->TailLog(team_, n, max_bytes); }

Result<LogPage> Source::MessagesAfter(uint64_t after, size_t max_bytes) {
  return store_->LogAfter(team_, after, max_bytes);
}

Result<std::vector<Task>> Source::Tasks() { return store_->Board(team_)->List(false); }

Result<Task> Source::CreateTask(const TaskDraft& draft) { return store_->Board(team_)->Create(draft); }

Result<std::vector<ProtocolRequest>> Source::Requests() { return store_->Mail(team_)->ListRequests(); }

Result<std::vector<MergeRequest>> Source::Merges() { return store_->Merges(team_)->List(); }

Result<MergeRequest> Source::DecideMerge(int64_t id, bool approve, const std::string& feedback) {
  return git::DecideMerge(*store_, team_, id, approve, feedback, kUserName, merge_hooks_);
}

Result<JournalText> Source::Journal(const std::string& agent, size_t max_bytes) {
  return store_->ReadJournal(team_, agent, max_bytes);
}

void Source::Subscribe(const KindWakers& wakers, std::shared_ptr<Waker> any) {
  wakers_ = wakers;
  any_ = std::move(any);
  const std::pair<TeamPart, Kind> parts[] = {
      {TeamPart::kRoster, kTeam},       {TeamPart::kHost, kTeam},           {TeamPart::kLog, kMessages},
      {TeamPart::kActivity, kActivity}, {TeamPart::kJournals, kTranscripts}, {TeamPart::kBoard, kTasks},
      {TeamPart::kRequests, kRequests}, {TeamPart::kMerges, kMerges},     {TeamPart::kForecasts, kTeam},
  };
  for (const auto& [part, kind] : parts) watches_.push_back(Watch{part, kind, nullptr, nullptr});
  RetrySubscriptions();
}

bool Source::RetrySubscriptions() {
  bool added = false;
  for (auto& w : watches_) {
    if (w.sub) continue;
    auto s = store_->Watch(team_, w.part, wakers_[w.kind]);
    auto a = store_->Watch(team_, w.part, any_);
    if (s.ok() && a.ok()) {
      w.sub = std::move(*s);
      w.any = std::move(*a);
      added = true;
    }
  }
  return added;
}

// No notification says that a host died: its locks just went free.
std::string Source::LivenessSignature() {
  auto team = store_->LoadTeam(team_);
  if (!team.ok()) return "?";
  auto host = store_->LiveHost(team_);
  std::string sig = host ? std::to_string(host->pid) : "-";
  for (const auto& m : team->members) {
    sig += "," + m.name + ":" +
           std::string(ShownStatus(m, m.status == MemberStatus::kShutdown || store_->IsHosted(team_, m.name)));
  }
  return sig;
}

KindFlags Source::Tick() {
  KindFlags bump{};
  if (RetrySubscriptions()) bump.fill(true);
  std::string sig = LivenessSignature();
  if (sig != liveness_) {
    liveness_ = std::move(sig);
    bump[kTeam] = true;
  }
  return bump;
}

}  // namespace mates::dashboard
