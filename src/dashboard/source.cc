// See source.h.
#include "dashboard/source.h"

#include <sys/stat.h>

#include "core/files.h"
#include "core/log.h"
#include "git/submit.h"
#include "pg/listener.h"
#include "pg/store.h"
#include "store/board.h"
#include "store/host_info.h"
#include "store/liveness.h"
#include "store/message_log.h"
#include "store/messenger.h"
#include "store/requests.h"
#include "store/watcher.h"

namespace mates::dashboard {
namespace {

// ------------------------------------------------------------ the files

class Files final : public Source {
 public:
  Files(Workspace ws, std::string team) : ws_(std::move(ws)), team_(std::move(team)), store_(FileTeamStore(ws_)) {}

  std::string where() const override { return ""; }
  TeamStore& store() override { return *store_; }
  Result<view::TeamView> View() override { return view::LookAtTeam(ws_, team_, 0); }

  Result<LogPage> LastMessages(size_t n, size_t /*max_bytes*/) override {
    // (Tail reads a bounded stretch of the file's end already.)
    MessageLog log(ws_, team_);
    LogPage page;
    // The size first: what is appended meanwhile comes again after it.
    struct stat st {};
    page.next = ::stat(log.path().c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    MATES_ASSIGN_OR_RETURN(page.messages, log.Tail(n));
    return page;
  }

  Result<LogPage> MessagesAfter(uint64_t after, size_t max_bytes) override {
    MessageLog log(ws_, team_);
    LogPage page;
    MATES_ASSIGN_OR_RETURN(page.messages, log.ReadFrom(after, &page.next, max_bytes));
    struct stat st {};
    page.more = ::stat(log.path().c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) > page.next &&
                page.next > after;
    return page;
  }

  Result<std::vector<Task>> Tasks() override {
    std::error_code ec;
    if (!fs::exists(ws_.TasksDir(team_), ec)) return std::vector<Task>();  // no board yet
    return SharedBoard(ws_.TasksDir(team_))->List(false);
  }

  Result<Task> CreateTask(const TaskDraft& draft) override {
    MATES_RETURN_IF_ERROR(EnsureDir(ws_.TasksDir(team_)));
    return SharedBoard(ws_.TasksDir(team_))->Create(draft);
  }

  Result<std::vector<ProtocolRequest>> Requests() override {
    std::error_code ec;
    if (!fs::exists(ws_.RequestsDir(team_), ec)) return std::vector<ProtocolRequest>();
    return RequestStore(ws_, team_).List();
  }

  Result<std::vector<MergeRequest>> Merges() override { return MergeStore(ws_, team_).List(); }

  Result<MergeRequest> DecideMerge(int64_t id, bool approve, const std::string& feedback) override {
    return git::DecideMerge(*store_, team_, id, approve, feedback, kUserName);
  }

  Result<JournalText> Journal(const std::string& agent, size_t max_bytes) override {
    const fs::path path = ws_.AgentsDir(team_) / (agent + ".jsonl");
    JournalText j;
    j.where = path.string();
    MATES_ASSIGN_OR_RETURN(j.text, ReadFilePrefix(path, max_bytes + 1));
    if (j.text.size() > max_bytes) {
      j.too_large = true;
      j.text.clear();
    }
    return j;
  }

  // Which files mean which kind. A folder that does not exist yet (no
  // board, no request so far) is looked for again every second.
  void Subscribe(const KindWakers& wakers, std::shared_ptr<Waker> any) override {
    wakers_ = wakers;
    any_ = std::move(any);
    auto add = [this](fs::path dir, const char* pattern, Kind kind) {
      watches_.push_back(Watch{std::move(dir), pattern, kind, {}, {}});
    };
    add(ws_.TeamDir(team_), "config.json", kTeam);
    add(ws_.TeamDir(team_), "host.json", kTeam);
    add(ws_.TeamDir(team_), "messages.jsonl", kMessages);
    add(ws_.AgentsDir(team_), "*.status.json", kActivity);
    add(ws_.AgentsDir(team_), "*.jsonl", kTranscripts);
    add(ws_.TasksDir(team_), "", kTasks);
    add(ws_.RequestsDir(team_), "", kRequests);
    add(ws_.MergesDir(team_), "*.json", kMerges);
    RetrySubscriptions();
  }

 private:
  struct Watch {
    fs::path dir;
    const char* pattern;
    Kind kind;
    Watcher::Subscription sub;
    Watcher::Subscription any;
  };

  bool RetrySubscriptions() override {
    bool added = false;
    for (auto& w : watches_) {
      if (w.sub.active()) continue;
      std::error_code ec;
      if (!fs::is_directory(w.dir, ec)) continue;
      auto s = Watcher::Default().Subscribe(w.dir, w.pattern, wakers_[w.kind]);
      auto a = Watcher::Default().Subscribe(w.dir, w.pattern, any_);
      if (s.ok() && a.ok()) {
        w.sub = std::move(*s);
        w.any = std::move(*a);
        added = true;
      }
    }
    return added;
  }

  // The host and each member's shown state.
  std::string LivenessSignature() override {
    std::string sig;
    auto host = ReadLiveHost(ws_, team_);
    sig += host ? std::to_string(host->pid) : "-";
    auto team = Roster(ws_).Load(team_);
    if (team.ok()) {
      for (const auto& m : team->members) sig += "," + std::string(ShownStatus(ws_, team_, m));
    }
    return sig;
  }

  const Workspace ws_;
  const std::string team_;
  const std::unique_ptr<TeamStore> store_;
  // Set by Subscribe; the watch thread's after that.
  KindWakers wakers_;
  std::shared_ptr<Waker> any_;
  std::vector<Watch> watches_;
};

// ------------------------------------------------------- PostgreSQL

class InDatabase final : public Source {
 public:
  InDatabase(pg::Store& db, Workspace ws, std::string team)
      : db_(db), ws_(std::move(ws)), team_(std::move(team)), store_(pg::StoreTeams(db_)) {}

  std::string where() const override { return db_.target().shown; }
  TeamStore& store() override { return *store_; }
  Result<view::TeamView> View() override { return view::LookAtTeam(db_, ws_, team_, 0); }

  // The cursor is the log's sequence number: a team's messages become
  // visible in its order (pg::Store::LogMessage).
  Result<LogPage> LastMessages(size_t n, size_t max_bytes) override {
    LogPage page;
    int64_t cursor = 0;
    MATES_ASSIGN_OR_RETURN(page.messages, db_.TailLog(team_, n, &cursor, max_bytes));
    page.next = static_cast<uint64_t>(cursor);
    return page;
  }

  Result<LogPage> MessagesAfter(uint64_t after, size_t max_bytes) override {
    if (after > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("after: past the end of the log");
    LogPage page;
    int64_t cursor = static_cast<int64_t>(after);
    MATES_ASSIGN_OR_RETURN(page.messages, db_.ReadLog(team_, &cursor, kPageRows, max_bytes));
    page.next = static_cast<uint64_t>(cursor);
    // Cut short, by rows or bytes: the page asks again at once.
    if (page.next > after) {
      int64_t probe = cursor;
      auto beyond = db_.ReadLog(team_, &probe, 1);
      page.more = beyond.ok() && probe > cursor;
    }
    return page;
  }

  Result<std::vector<Task>> Tasks() override { return db_.ListTasks(team_); }
  Result<Task> CreateTask(const TaskDraft& draft) override { return db_.CreateTask(team_, draft); }
  Result<std::vector<ProtocolRequest>> Requests() override { return db_.ListRequests(team_); }

  Result<std::vector<MergeRequest>> Merges() override { return db_.ListMerges(team_); }
  Result<MergeRequest> DecideMerge(int64_t id, bool approve, const std::string& feedback) override {
    return git::DecideMerge(*store_, team_, id, approve, feedback, kUserName);
  }

  // The store's copy: every machine's agents, whichever hosts them.
  Result<JournalText> Journal(const std::string& agent, size_t max_bytes) override {
    JournalText j;
    j.where = "the journal copy of '" + agent + "' in " + db_.target().shown + " (mates store export writes it out)";
    MATES_ASSIGN_OR_RETURN(uint64_t size, db_.JournalBytes(team_, agent));
    if (size > max_bytes) {
      j.too_large = true;
      return j;
    }
    MATES_ASSIGN_OR_RETURN(std::vector<std::string> lines, db_.JournalLines(team_, agent));
    if (lines.empty()) return Status::NotFound("no journal for '" + agent + "'");
    for (const auto& l : lines) {
      j.text += l;
      j.text += '\n';
    }
    return j;
  }

  void Subscribe(const KindWakers& wakers, std::shared_ptr<Waker> any) override {
    const std::vector<std::pair<std::string, std::vector<Kind>>> keys = {
        {pg::TeamKey(team_), {kTeam}},
        {pg::BoardKey(team_), {kTasks}},
        // Requests are made and answered by messages, each logged.
        {pg::LogKey(team_), {kMessages, kRequests}},
        {pg::ActivityKey(team_), {kActivity}},
        {pg::JournalKey(team_), {kTranscripts}},
        {pg::MergeKey(team_), {kMerges}},
    };
    for (const auto& [key, kinds] : keys) {
      for (Kind k : kinds) Listen(key, wakers[k]);
      Listen(key, any);
    }
  }

 private:
  // A subscription the server refused (it was out of reach).
  bool RetrySubscriptions() override {
    if (missing_.empty()) return false;
    auto missing = std::move(missing_);
    missing_.clear();
    for (auto& [key, waker] : missing) Listen(key, waker);
    return missing_.size() < missing.size();
  }

  static constexpr size_t kPageRows = 1000;

  void Listen(const std::string& key, const std::shared_ptr<Waker>& waker) {
    auto s = db_.listener().Subscribe(key, waker);
    if (s.ok()) {
      subs_.push_back(std::move(*s));
    } else {
      missing_.emplace_back(key, waker);
    }
  }

  // Who is hosted, and the host this workspace has: no NOTIFY says that a
  // host died (its locks just went free).
  std::string LivenessSignature() override {
    auto team = db_.LoadTeam(team_);
    if (!team.ok()) return "?";
    auto host = ReadLiveHost(ws_, team_, *store_);
    std::string sig = host ? std::to_string(host->pid) : "-";
    for (const auto& m : team->members) {
      auto hosted = db_.IsHosted(team_, m.name);
      sig += "," + m.name + (hosted.ok() ? (*hosted ? "+" : "-") : "?");
    }
    return sig;
  }

  pg::Store& db_;
  const Workspace ws_;
  const std::string team_;
  const std::unique_ptr<TeamStore> store_;
  // The watch thread's after Subscribe.
  std::vector<pg::Listener::Subscription> subs_;
  std::vector<std::pair<std::string, std::shared_ptr<Waker>>> missing_;
};

}  // namespace

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

std::unique_ptr<Source> FileSource(Workspace ws, std::string team) {
  return std::make_unique<Files>(std::move(ws), std::move(team));
}

std::unique_ptr<Source> StoreSource(pg::Store& db, Workspace ws, std::string team) {
  return std::make_unique<InDatabase>(db, std::move(ws), std::move(team));
}

}  // namespace mates::dashboard
