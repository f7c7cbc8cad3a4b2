// ForwardingTeamStore: a TeamStore that passes every operation to another,
// for a store that changes a few of them — a test's store that is slow or
// watched at one operation, and (DESIGN §19, §22) a store that stamps or
// checks what passes through. A new store operation is forwarded here once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/team_store.h"

namespace mates {

class ForwardingTeamStore : public TeamStore {
 public:
  explicit ForwardingTeamStore(std::unique_ptr<TeamStore> inner) : inner_(std::move(inner)) {}
  TeamStore& inner() { return *inner_; }

  std::string where() const override { return inner_->where(); }
  bool spans_machines() const override { return inner_->spans_machines(); }
  std::string foreign() const override { return inner_->foreign(); }
  std::string ElsewhereWords() const override { return inner_->ElsewhereWords(); }
  std::string DefaultGitRemote() const override { return inner_->DefaultGitRemote(); }
  bool WorktreesHere() const override { return inner_->WorktreesHere(); }
  bool FilesHere() const override { return inner_->FilesHere(); }
  bool HostsApart() const override { return inner_->HostsApart(); }
  Result<std::vector<std::string>> ListTeams() override { return inner_->ListTeams(); }
  Status DeleteTeam(const std::string& t) override { return inner_->DeleteTeam(t); }
  Result<TeamConfig> LoadTeam(const std::string& t) override { return inner_->LoadTeam(t); }
  Status HasTeam(const std::string& t) override { return inner_->HasTeam(t); }
  Result<TeamConfig> CreateTeam(const std::string& t, const std::string& lead, const std::string& d) override {
    return inner_->CreateTeam(t, lead, d);
  }
  Result<Member> AddMember(const std::string& t, Member m) override { return inner_->AddMember(t, std::move(m)); }
  Result<TeamConfig> UpdateTeam(const std::string& t, const std::function<Status(TeamConfig&)>& mutate) override {
    return inner_->UpdateTeam(t, mutate);
  }
  Status SetStatuses(const std::string& t, const std::vector<std::pair<std::string, MemberStatus>>& c) override {
    return inner_->SetStatuses(t, c);
  }
  Result<std::unique_ptr<Hold>> HoldLiveness(const std::string& t, const std::string& m) override {
    return inner_->HoldLiveness(t, m);
  }
  Result<std::unique_ptr<Hold>> Watch(const std::string& t, TeamPart part, std::shared_ptr<Waker> w) override {
    return inner_->Watch(t, part, std::move(w));
  }
  Result<std::shared_ptr<ClaimLine>> ClaimLineOf(const std::string& t) override { return inner_->ClaimLineOf(t); }
  std::unique_ptr<TaskBoard> Board(const std::string& t) override { return inner_->Board(t); }
  Result<std::unique_ptr<TaskBoard>> CheckedBoard(const std::string& t) override { return inner_->CheckedBoard(t); }
  std::unique_ptr<MergeBook> Merges(const std::string& t) override { return inner_->Merges(t); }
  std::unique_ptr<TeamMail> Mail(const std::string& t) override { return inner_->Mail(t); }
  std::unique_ptr<Inbox> InboxOf(const std::string& t, const std::string& m) override { return inner_->InboxOf(t, m); }
  bool IsHosted(const std::string& t, const std::string& m) override { return inner_->IsHosted(t, m); }
  Result<std::vector<AgentLease>> Leases(const std::string& t) override { return inner_->Leases(t); }
  Result<std::vector<Message>> LastMessages(const std::string& t, size_t n) override {
    return inner_->LastMessages(t, n);
  }
  Status ReadLog(const std::string& t, const std::function<void(const Message&)>& each) override {
    return inner_->ReadLog(t, each);
  }
  Result<LogPage> TailLog(const std::string& t, size_t n, size_t max_bytes) override {
    return inner_->TailLog(t, n, max_bytes);
  }
  Result<LogPage> LogAfter(const std::string& t, uint64_t after, size_t max_bytes) override {
    return inner_->LogAfter(t, after, max_bytes);
  }
  Result<ArchivedTeam> Archive(const std::string& t) override { return inner_->Archive(t); }
  Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& t) override {
    return inner_->Activities(t);
  }
  Result<JournalText> ReadJournal(const std::string& t, const std::string& m, size_t max_bytes) override {
    return inner_->ReadJournal(t, m, max_bytes);
  }
  std::optional<HostInfo> LiveHost(const std::string& t) override { return inner_->LiveHost(t); }
  Status PutForecasts(const std::string& t, const std::vector<ConflictForecast>& f) override {
    return inner_->PutForecasts(t, f);
  }
  std::vector<ConflictForecast> Forecasts(const std::string& t) override { return inner_->Forecasts(t); }
  void WaitOutOutages(double seconds) override { inner_->WaitOutOutages(seconds); }
  void StopWaiting() override { inner_->StopWaiting(); }
  std::unique_ptr<JournalCopy> JournalOf(const std::string& t, const std::string& m) override {
    return inner_->JournalOf(t, m);
  }
  Result<std::optional<std::vector<ModelSpend>>> Spent(const std::string& t) override { return inner_->Spent(t); }
  ActivitySink ActivityOf(const std::string& t, const std::string& m) override { return inner_->ActivityOf(t, m); }

 private:
  const std::unique_ptr<TeamStore> inner_;
};

}  // namespace mates
