// Source: where a dashboard (dashboard.h) reads its team and sends what a
// person says (DESIGN §11, §13) — the files of a workspace, or a PostgreSQL
// store that hosts on other machines share. The page and its API are the
// same on both; what differs is here: how the log is paged (a byte offset
// into messages.jsonl, or the log's sequence numbers), where journals are
// read (the file, or the store's copy, which has every machine's agents),
// and what tells of a change (inotify, or LISTEN/NOTIFY).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/waker.h"
#include "dashboard/team_view.h"
#include "store/merges.h"
#include "store/team_store.h"
#include "store/workspace.h"

namespace mates::pg {
class Store;
}

namespace mates::dashboard {

// What the page can be told changed, each followed by its own refetch.
enum Kind { kTeam, kActivity, kTasks, kMessages, kRequests, kTranscripts, kMerges, kKinds };
inline constexpr const char* kKindNames[kKinds] = {"team",     "activity",    "tasks", "messages",
                                                   "requests", "transcripts", "merges"};
using KindWakers = std::array<std::shared_ptr<Waker>, kKinds>;
using KindFlags = std::array<bool, kKinds>;

class Source {
 public:
  virtual ~Source() = default;
  // Where the team is kept, as said to a person: "" for this workspace's
  // files.
  virtual std::string where() const = 0;
  // The roster, board and mail of every store (sends, tasks, answers).
  virtual TeamStore& store() = 0;
  virtual Result<view::TeamView> View() = 0;

  // A page of the message log and the cursor (opaque to the page) that
  // what follows it starts from; `more` if the page was cut short.
  struct LogPage {
    std::vector<Message> messages;
    uint64_t next = 0;
    bool more = false;
  };
  // The last `n` messages (about `max_bytes` of them at most, the last one
  // at least); `next` is taken before them, so what is logged meanwhile
  // comes again after it (the page drops ids it has).
  virtual Result<LogPage> LastMessages(size_t n, size_t max_bytes) = 0;
  // What follows `after`, about `max_bytes` of it (one message at least).
  virtual Result<LogPage> MessagesAfter(uint64_t after, size_t max_bytes) = 0;

  virtual Result<std::vector<Task>> Tasks() = 0;
  virtual Result<std::vector<ProtocolRequest>> Requests() = 0;
  virtual Result<Task> CreateTask(const TaskDraft& draft) = 0;
  virtual Result<std::vector<MergeRequest>> Merges() = 0;
  virtual Result<MergeRequest> DecideMerge(int64_t id, bool approve, const std::string& feedback) = 0;
  // `agent`'s journal as text, unless it is over `max_bytes`; NotFound if
  // it has none.
  struct JournalText {
    std::string text;
    bool too_large = false;
    std::string where;  // where it is, for a person
  };
  virtual Result<JournalText> Journal(const std::string& agent, size_t max_bytes) = 0;

  // From now on `wakers[k]` is notified when kind k may have changed, and
  // `any` with each.
  virtual void Subscribe(const KindWakers& wakers, std::shared_ptr<Waker> any) = 0;
  // Called every second (by one thread): the kinds to announce for what
  // nothing notifies — liveness (a dead host's locks just go free), and
  // everything once a subscription that could not be made is.
  KindFlags Tick();

 protected:
  // Subscriptions not made yet (a folder not there, a server out of reach)
  // are tried again: whether one was made now.
  virtual bool RetrySubscriptions() = 0;
  // Who is hosted, as one string to compare.
  virtual std::string LivenessSignature() = 0;

 private:
  std::string liveness_;  // the last signature Tick saw
};

// The team's files under `ws`.
std::unique_ptr<Source> FileSource(Workspace ws, std::string team);
// The team in `db` (which outlives the Source), hosted from `ws` if at all
// (its host.json, and so the host's pid and dashboard, are that
// workspace's).
std::unique_ptr<Source> StoreSource(pg::Store& db, Workspace ws, std::string team);

}  // namespace mates::dashboard
