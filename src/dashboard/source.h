// Source: where a dashboard (dashboard.h) reads its team and sends what a
// person says (DESIGN §11, §13): a TeamStore — the files of a workspace, or
// a database that hosts on other machines share — and what the page needs
// of it: the view, the log a page at a time, the board, requests, merges
// and journals, and which of them changed.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/waker.h"
#include "git/merge_hooks.h"
#include "store/merges.h"
#include "store/team_store.h"
#include "view/team_view.h"

namespace mates::dashboard {

// What the page can be told changed, each followed by its own refetch.
enum Kind { kTeam, kActivity, kTasks, kMessages, kRequests, kTranscripts, kMerges, kKinds };
inline constexpr const char* kKindNames[kKinds] = {"team",     "activity",    "tasks", "messages",
                                                   "requests", "transcripts", "merges"};
using KindWakers = std::array<std::shared_ptr<Waker>, kKinds>;
using KindFlags = std::array<bool, kKinds>;

class Source {
 public:
  // `store` outlives the source; `merge_hooks`: raised when a person
  // decides a merge here.
  Source(TeamStore& store, std::string team, git::MergeHooks merge_hooks = {});
  ~Source();
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;

  // Where the team is kept, as said to a person: "" for this workspace's
  // files.
  std::string where() const;
  TeamStore& store() { return *store_; }
  Result<view::TeamView> View();

  // The last `n` messages (about `max_bytes` of them at most, the last one
  // at least); `next` (opaque to the page) is taken before them, so what is
  // logged meanwhile comes again after it (the page drops ids it has).
  Result<LogPage> LastMessages(size_t n, size_t max_bytes);
  // What follows `after`, about `max_bytes` of it (one message at least).
  Result<LogPage> MessagesAfter(uint64_t after, size_t max_bytes);

  Result<std::vector<Task>> Tasks();
  Result<std::vector<ProtocolRequest>> Requests();
  Result<Task> CreateTask(const TaskDraft& draft);
  Result<std::vector<MergeRequest>> Merges();
  Result<MergeRequest> DecideMerge(int64_t id, bool approve, const std::string& feedback);
  // `agent`'s journal as text, unless it is over `max_bytes`; NotFound if
  // it has none.
  Result<JournalText> Journal(const std::string& agent, size_t max_bytes);

  // From now on `wakers[k]` is notified when kind k may have changed, and
  // `any` with each. A part that cannot be watched yet (a folder not
  // there, a server out of reach) is tried again by Tick.
  void Subscribe(const KindWakers& wakers, std::shared_ptr<Waker> any);
  // Called every second (by one thread): the kinds to announce for what
  // nothing notifies — liveness (a dead host's locks just go free), and
  // everything once a watch that could not be made is.
  KindFlags Tick();

 private:
  struct Watch {
    TeamPart part;
    Kind kind;
    std::unique_ptr<Hold> sub;
    std::unique_ptr<Hold> any;
  };
  // Watches not made yet are tried again: whether one was made now.
  bool RetrySubscriptions();
  // The host and who is hosted, as one string to compare.
  std::string LivenessSignature();

  TeamStore* const store_;
  const std::string team_;
  const git::MergeHooks merge_hooks_;
  // The watch thread's after Subscribe.
  KindWakers wakers_;
  std::shared_ptr<Waker> any_;
  std::vector<Watch> watches_;
  std::string liveness_;  // the last signature Tick saw
};

}  // namespace mates::dashboard
