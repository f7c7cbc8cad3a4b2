// See claude_store.h.
#include "claude/claude_store.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include "agent/activity.h"
#include "agent/prices.h"
#include "claude/claude_team.h"
#include "core/text.h"
#include "store/requests.h"
#include "store/watcher.h"

namespace mates::claude {

namespace {

constexpr const char* kScheme = "claude:";
constexpr size_t kMaxJournalLine = 1u << 20;

Status ReadOnly(const std::string& what) {
  return Status::FailedPrecondition("Claude Code's team: " + what +
                                    " is Claude Code's to do (mates sends messages and creates tasks; the rest is "
                                    "read-only here)");
}

std::string StrOf(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t NumericId(const std::string& id) {
  if (id.empty() || id.size() > 18 || !std::all_of(id.begin(), id.end(), ::isdigit)) return 0;
  return std::stoll(id);
}

// Claude Code's message as mates' (store/message.h): the protocol's
// requests and answers as mates' own types, the rest plain messages.
mates::Message ToMates(const Message& c) {
  mates::Message m;
  m.id = c.id;
  m.sender = c.from;
  m.recipient = c.to;
  m.content = c.text;
  m.summary = Gist(c);
  m.timestamp = c.timestamp;
  m.read = c.read;
  m.protocol = c.protocol;
  const Json& d = c.document;
  if (c.protocol == "shutdown_request") m.type = MessageType::kShutdownRequest;
  if (c.protocol == "shutdown_approved" || c.protocol == "shutdown_rejected") {
    m.type = MessageType::kShutdownResponse;
    m.approve = c.protocol == "shutdown_approved";
  }
  if (c.protocol == "plan_approval_request") m.type = MessageType::kPlanApprovalRequest;
  if (c.protocol == "plan_approval_response") {
    m.type = MessageType::kPlanApprovalResponse;
    auto ok = d.find("approved");
    m.approve = ok != d.end() && ok->is_boolean() && ok->get<bool>();
    m.feedback = StrOf(d, "feedback");
  }
  if (!c.protocol.empty()) m.request_id = StrOf(d, "requestId");
  if (!c.extra.empty()) m.foreign_json = DumpJson(c.extra);
  return m;
}

Json Raw(const Json& extra, const Json& metadata) {
  Json out = metadata.is_object() ? metadata : Json::object();
  if (!extra.empty()) out["claude_code"] = extra;  // what mates does not read, as written
  return out;
}

mates::Task ToMates(const Task& c) {
  mates::Task t;
  t.id = NumericId(c.id);
  t.subject = c.subject;
  t.description = c.description;
  t.active_form = c.active_form;
  auto status = ParseTaskStatus(c.status);
  t.status = status.ok() ? *status : TaskStatus::kPending;
  Json extra = c.extra;
  if (!status.ok()) extra["status"] = c.status;
  t.owner = c.owner;
  for (const auto& b : c.blocked_by) t.blocked_by.push_back(NumericId(b));
  for (const auto& b : c.blocks) t.blocks.push_back(NumericId(b));
  t.metadata_json = DumpJson(Raw(extra, c.metadata));
  t.created_at = t.updated_at = c.updated_at;
  return t;
}

// The activity document (agent/activity.h) a transcript makes.
std::string ActivityDocument(const std::string& name, const Activity& a, bool hosted,
                             const agent::PriceTable& prices) {
  agent::Activity doc;
  doc.agent = name;
  doc.state = a.state == "thinking" ? agent::ActivityState::kThinking
              : a.state == "tool"   ? agent::ActivityState::kTool
                                    : agent::ActivityState::kIdle;
  if (!hosted) doc.state = agent::ActivityState::kStopped;
  doc.doing = a.doing;
  doc.since = a.since;
  doc.updated_at = a.since;
  doc.model = a.model;
  doc.calls = a.calls;
  doc.tokens = a.tokens;
  doc.cost_usd = prices.Cost(a.model, a.tokens);
  return DumpJson(agent::ActivityToJson(doc));
}

// A transcript's line as mates' journal has it (agent/journal.h): its
// turns as messages, each model call's usage once.
void JournalLines(const std::string& line, std::string* last_call, std::string* out) {
  auto j = ParseJson(line);
  if (!j.ok() || !j->is_object()) return;
  const std::string type = StrOf(*j, "type");
  if (type != "user" && type != "assistant") return;
  auto msg = j->find("message");
  if (msg == j->end() || !msg->is_object()) return;
  Json content = Json::array();
  auto c = msg->find("content");
  if (c != msg->end() && c->is_string()) content.push_back({{"type", "text"}, {"text", *c}});
  if (c != msg->end() && c->is_array()) {
    for (const auto& b : *c) {
      const std::string t = b.is_object() ? StrOf(b, "type") : "";
      if (t == "text") content.push_back({{"type", "text"}, {"text", StrOf(b, "text")}});
      if (t == "tool_use") {
        content.push_back({{"type", "tool_use"}, {"id", StrOf(b, "id")}, {"name", StrOf(b, "name")},
                           {"input", b.contains("input") && b["input"].is_object() ? b["input"] : Json::object()}});
      }
      if (t == "tool_result") {
        std::string text;
        auto r = b.find("content");
        if (r != b.end() && r->is_string()) text = *r;
        if (r != b.end() && r->is_array()) {
          for (const auto& part : *r) {
            if (part.is_object() && StrOf(part, "type") == "text") text += StrOf(part, "text");
          }
        }
        auto err = b.find("is_error");
        content.push_back({{"type", "tool_result"}, {"tool_use_id", StrOf(b, "tool_use_id")}, {"content", text},
                           {"is_error", err != b.end() && err->is_boolean() && err->get<bool>()}});
      }
    }
  }
  if (content.empty()) return;
  *out += DumpJson(Json{{"kind", "message"}, {"message", {{"role", type}, {"content", content}}}}) + "\n";
  const std::string id = StrOf(*msg, "id");
  auto usage = msg->find("usage");
  if (type == "assistant" && usage != msg->end() && usage->is_object() && id != *last_call) {
    *last_call = id;
    Json u = Json::object();
    for (const char* k : {"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}) {
      if (usage->contains(k) && (*usage)[k].is_number_integer()) u[k] = (*usage)[k];
    }
    *out += DumpJson(Json{{"kind", "usage"}, {"usage", u}, {"model", StrOf(*msg, "model")},
                          {"at", ParseIsoTime(StrOf(*j, "timestamp")).value_or(0)}}) +
            "\n";
  }
}

// The shutdown and plan requests among a team's messages, answered or not.
std::vector<ProtocolRequest> RequestsIn(const std::vector<Message>& messages) {
  std::vector<ProtocolRequest> out;
  for (const auto& m : messages) {
    const std::string id = StrOf(m.document, "requestId");
    if (id.empty()) continue;
    if (m.protocol == "shutdown_request" || m.protocol == "plan_approval_request") {
      if (std::any_of(out.begin(), out.end(), [&](const ProtocolRequest& r) { return r.id == id; })) continue;
      ProtocolRequest r;
      r.id = id;
      r.kind = m.protocol == "shutdown_request" ? RequestKind::kShutdown : RequestKind::kPlanApproval;
      r.requester = m.from;
      r.responder = m.to;
      r.content = m.protocol == "shutdown_request" ? StrOf(m.document, "reason") : StrOf(m.document, "planContent");
      r.created_at = m.timestamp;
      out.push_back(std::move(r));
    }
  }
  for (const auto& m : messages) {
    const std::string id = StrOf(m.document, "requestId");
    const bool answer = m.protocol == "shutdown_approved" || m.protocol == "shutdown_rejected" ||
                        m.protocol == "plan_approval_response";
    if (id.empty() || !answer) continue;
    for (auto& r : out) {
      if (r.id != id || r.status != RequestState::kPending) continue;
      bool yes = m.protocol == "shutdown_approved";
      if (m.protocol == "plan_approval_response") {
        auto ok = m.document.find("approved");
        yes = ok != m.document.end() && ok->is_boolean() && ok->get<bool>();
        r.response = StrOf(m.document, "feedback");
      } else {
        r.response = StrOf(m.document, "reason");
      }
      r.status = yes ? RequestState::kApproved : RequestState::kRejected;
      r.resolved_at = m.timestamp;
    }
  }
  return out;
}

// Several watches held as one.
struct Watches : Hold {
  std::vector<Watcher::Subscription> subs;
};

class ClaudeStore;

class ClaudeBoard : public TaskBoard {
 public:
  ClaudeBoard(std::shared_ptr<ClaudeHome> home, std::string team) : home_(std::move(home)), team_(std::move(team)) {}
  Result<mates::Task> Create(const TaskDraft& draft) override {
    std::vector<std::string> blocked;
    for (int64_t b : draft.blocked_by) blocked.push_back(std::to_string(b));
    MATES_ASSIGN_OR_RETURN(Task t, home_->CreateTask(team_, draft.subject, draft.description, blocked));
    return ToMates(t);
  }
  Result<mates::Task> Get(int64_t id) override {
    MATES_ASSIGN_OR_RETURN(auto all, List(false));
    for (auto& t : all) {
      if (t.id == id) return t;
    }
    return NoTask(id);
  }
  Result<std::vector<mates::Task>> List(bool /*include_deleted*/) override {
    MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, home_->Tasks(team_));
    std::vector<mates::Task> out;
    for (const auto& t : tasks) {
      if (NumericId(t.id) > 0) out.push_back(ToMates(t));
    }
    return out;
  }
  Result<mates::Task> Update(int64_t, const TaskPatch&, const Caller&) override { return ReadOnly("updating a task"); }
  Result<mates::Task> Claim(int64_t, const std::string&) override { return ReadOnly("claiming a task"); }
  Result<std::optional<mates::Task>> ClaimNext(const std::string&, ClaimOutlook*) override {
    return ReadOnly("claiming a task");
  }

 private:
  std::shared_ptr<ClaudeHome> home_;
  const std::string team_;
};

class NoMerges : public MergeBook {
 public:
  Result<MergeRequest> Create(MergeRequest) override { return ReadOnly("merging"); }
  Result<MergeRequest> Get(int64_t id) const override {
    return Status::NotFound("no merge request " + std::to_string(id) + ": Claude Code's teams have none");
  }
  Result<std::vector<MergeRequest>> List() const override { return std::vector<MergeRequest>(); }
  Result<MergeRequest> Update(int64_t, const std::function<Status(MergeRequest&)>&) override {
    return ReadOnly("merging");
  }
};

class ClaudeMail : public TeamMail {
 public:
  ClaudeMail(std::shared_ptr<ClaudeHome> home, std::string team) : home_(std::move(home)), team_(std::move(team)) {}
  const std::string& team() const override { return team_; }
  Result<mates::TeamConfig> LoadTeam() override;
  // Into the member's inbox, as Claude Code's SendMessage puts it there.
  Status Deliver(const std::string& member, const mates::Message& m) override {
    if (m.type != MessageType::kMessage && m.type != MessageType::kBroadcast) {
      return ReadOnly("sending a " + std::string(MessageTypeName(m.type)));
    }
    return home_->Send(team_, m.sender, member, m.content, m.summary).status();
  }
  Result<std::vector<mates::Message>> Peek(const std::string& member) override {
    MATES_ASSIGN_OR_RETURN(std::vector<Message> inbox, home_->Inbox(team_, member));
    std::vector<mates::Message> out;
    for (const auto& m : inbox) out.push_back(ToMates(m));
    return out;
  }
  // Claude Code keeps no log: a message is in the transcripts once delivered.
  Status Log(const mates::Message&) override { return Status::Ok(); }
  Result<std::optional<mates::Message>> FindLogged(const std::string&) override {
    return std::optional<mates::Message>();
  }
  Status CreateRequest(const ProtocolRequest&) override { return ReadOnly("asking for a shutdown or a plan"); }
  Result<ProtocolRequest> GetRequest(const std::string& id) override {
    MATES_ASSIGN_OR_RETURN(auto all, ListRequests());
    for (auto& r : all) {
      if (r.id == id) return r;
    }
    return Status::NotFound("no request " + id + " in Claude Code team '" + team_ + "'");
  }
  Result<std::vector<ProtocolRequest>> ListRequests() override {
    MATES_ASSIGN_OR_RETURN(auto s, home_->Look(team_));
    return RequestsIn(s.messages);
  }
  Result<ProtocolRequest> ResolveRequest(const std::string&, bool, const std::string&) override {
    return ReadOnly("answering a request");
  }

 private:
  std::shared_ptr<ClaudeHome> home_;
  const std::string team_;
};

class ClaudeInbox : public Inbox {
 public:
  ClaudeInbox(std::shared_ptr<ClaudeHome> home, Watcher& watcher, std::string team, std::string member)
      : home_(std::move(home)), watcher_(watcher), team_(std::move(team)), member_(std::move(member)) {}
  Result<std::vector<mates::Message>> Peek() override {
    return ClaudeMail(home_, team_).Peek(member_);
  }
  Result<size_t> PendingCount() override {
    MATES_ASSIGN_OR_RETURN(auto inbox, home_->Inbox(team_, member_));
    return inbox.size();
  }
  bool MayHavePending() override {
    auto n = PendingCount();
    return n.ok() && *n > 0;
  }
  Result<Taken> Take(const std::function<bool(const std::vector<mates::Message>&)>&, const AlreadyDelivered&) override {
    return ReadOnly("taking a member's mail");
  }
  Result<std::unique_ptr<Watch>> WatchWith(std::shared_ptr<Waker> waker) override {
    const fs::path dir = home_->FilesOf(team_).inboxes;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return Status::NotFound(dir.string() + " is not there yet");
    MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub,
                           watcher_.Subscribe(dir, FileNameOf(member_) + ".json", std::move(waker)));
    return Holding(std::move(sub));
  }

 private:
  std::shared_ptr<ClaudeHome> home_;
  Watcher& watcher_;
  const std::string team_, member_;
};

class ClaudeStore : public TeamStore {
 public:
  ClaudeStore(fs::path home, Workspace ws, const Env& env)
      : home_(std::make_shared<ClaudeHome>(std::move(home))),
        ws_(std::move(ws)),
        watcher_(env.watcher),
        prices_(env.prices) {}

  std::string where() const override { return "Claude Code's " + home_->path().string(); }
  std::string foreign() const override { return "Claude Code"; }
  bool spans_machines() const override { return false; }
  Result<std::vector<std::string>> ListTeams() override { return home_->ListTeams(); }
  Status DeleteTeam(const std::string&) override { return ReadOnly("deleting a team"); }
  Result<mates::TeamConfig> LoadTeam(const std::string& team) override {
    MATES_ASSIGN_OR_RETURN(auto s, home_->Look(team));
    return Roster(s);
  }
  Result<mates::TeamConfig> CreateTeam(const std::string&, const std::string&, const std::string&) override {
    return ReadOnly("making a team");
  }
  Result<mates::Member> AddMember(const std::string&, mates::Member) override { return ReadOnly("adding a member"); }
  Result<mates::TeamConfig> UpdateTeam(const std::string&, const std::function<Status(mates::TeamConfig&)>&) override {
    return ReadOnly("changing the roster");
  }
  Result<std::unique_ptr<Hold>> HoldLiveness(const std::string&, const std::string&) override {
    return ReadOnly("hosting a member");
  }

  Result<std::unique_ptr<Hold>> Watch(const std::string& team, TeamPart part,
                                      std::shared_ptr<Waker> waker) override {
    const TeamFiles files = home_->FilesOf(team);
    auto held = std::make_unique<Watches>();
    auto add = [&](const fs::path& dir, const std::string& pattern) -> Status {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) return Status::NotFound(dir.string() + " is not there yet");
      MATES_ASSIGN_OR_RETURN(Watcher::Subscription sub, watcher_.Subscribe(dir, pattern, waker));
      held->subs.push_back(std::move(sub));
      return Status::Ok();
    };
    switch (part) {
      case TeamPart::kRoster: MATES_RETURN_IF_ERROR(add(files.config.parent_path(), "config.json")); break;
      case TeamPart::kBoard: MATES_RETURN_IF_ERROR(add(files.tasks, "*.json")); break;
      case TeamPart::kHost:
      case TeamPart::kMerges:
      case TeamPart::kForecasts: break;  // Claude Code has none: nothing changes
      case TeamPart::kLog:
      case TeamPart::kRequests:
        MATES_RETURN_IF_ERROR(add(files.inboxes, "*.json"));
        MATES_RETURN_IF_ERROR(AddTranscripts(team, add));
        break;
      case TeamPart::kActivity:
      case TeamPart::kJournals: MATES_RETURN_IF_ERROR(AddTranscripts(team, add)); break;
    }
    return std::unique_ptr<Hold>(std::move(held));
  }

  std::unique_ptr<TaskBoard> Board(const std::string& team) override {
    return std::make_unique<ClaudeBoard>(home_, team);
  }
  Result<std::unique_ptr<TaskBoard>> CheckedBoard(const std::string& team) override {
    MATES_RETURN_IF_ERROR(home_->LoadTeam(team).status());
    return Board(team);
  }
  std::unique_ptr<MergeBook> Merges(const std::string&) override { return std::make_unique<NoMerges>(); }
  std::unique_ptr<TeamMail> Mail(const std::string& team) override {
    return std::make_unique<ClaudeMail>(home_, team);
  }
  std::unique_ptr<Inbox> InboxOf(const std::string& team, const std::string& member) override {
    return std::make_unique<ClaudeInbox>(home_, watcher_, team, member);
  }
  // A member runs while its lead's Claude Code does (teammates in its
  // process, or in panes it started) and it is on the roster.
  bool IsHosted(const std::string& team, const std::string& member) override {
    auto c = home_->LoadTeam(team);
    return c.ok() && c->Find(member) != nullptr && home_->SessionAlive(c->lead_session_id);
  }
  Result<std::vector<mates::Message>> LastMessages(const std::string& team, size_t n) override {
    MATES_ASSIGN_OR_RETURN(LogPage page, TailLog(team, n, 0));
    return page.messages;
  }
  Status ReadLog(const std::string& team, const std::function<void(const mates::Message&)>& each) override {
    MATES_ASSIGN_OR_RETURN(auto s, home_->Look(team));
    for (const auto& m : s.messages) each(ToMates(m));
    return Status::Ok();
  }
  // The cursor counts what this store has seen change: each message gets
  // the next number when it is first seen and again when it is read, so a
  // page asking for what follows its cursor gets the new ones and those
  // read since (it replaces them by id). Messages are timed by the
  // transcript that delivered them, which another transcript's write may
  // have passed: a cursor of time would miss them.
  Result<LogPage> TailLog(const std::string& team, size_t n, size_t max_bytes) override {
    MATES_ASSIGN_OR_RETURN(auto s, home_->Look(team));
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t top = Number(team, s.messages);
    LogPage page;
    size_t bytes = 0;
    for (size_t i = s.messages.size(); i > 0 && page.messages.size() < n; --i) {
      const Message& m = s.messages[i - 1];
      if (max_bytes > 0 && bytes > 0 && bytes + m.text.size() > max_bytes) break;
      bytes += m.text.size();
      page.messages.push_back(ToMates(m));
    }
    std::reverse(page.messages.begin(), page.messages.end());
    page.next = top;
    return page;
  }
  Result<LogPage> LogAfter(const std::string& team, uint64_t after, size_t max_bytes) override {
    MATES_ASSIGN_OR_RETURN(auto s, home_->Look(team));
    std::lock_guard<std::mutex> lock(mu_);
    Number(team, s.messages);
    const auto& seen = feeds_[team];
    std::vector<std::pair<uint64_t, const Message*>> changed;
    for (const auto& m : s.messages) {
      auto it = seen.find(m.id);
      if (it != seen.end() && it->second.first > after) changed.emplace_back(it->second.first, &m);
    }
    std::sort(changed.begin(), changed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    LogPage page;
    page.next = after;
    size_t bytes = 0;
    for (const auto& [n, m] : changed) {
      if (max_bytes > 0 && bytes > 0 && bytes + m->text.size() > max_bytes) {
        page.more = true;
        break;
      }
      bytes += m->text.size();
      page.messages.push_back(ToMates(*m));
      page.next = n;
    }
    return page;
  }
  Result<ArchivedTeam> Archive(const std::string&) override { return ReadOnly("archiving a team"); }
  Result<std::vector<std::pair<std::string, std::string>>> Activities(const std::string& team) override {
    MATES_ASSIGN_OR_RETURN(auto s, home_->Look(team));
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [name, a] : s.activity) {
      if (s.config.Find(name) == nullptr) continue;
      out.emplace_back(name, ActivityDocument(name, a, s.lead_alive, prices_));
    }
    return out;
  }
  Result<JournalText> ReadJournal(const std::string& team, const std::string& member, size_t max_bytes) override {
    MATES_ASSIGN_OR_RETURN(fs::path file, home_->TranscriptOf(team, member));
    JournalText out;
    out.where = file.string();
    MATES_ASSIGN_OR_RETURN(auto st, StatPath(file));
    if (static_cast<size_t>(st.st_size) > max_bytes) {
      out.too_large = true;
      return out;
    }
    MATES_ASSIGN_OR_RETURN(std::string text, ReadFilePrefix(file, max_bytes));
    std::string last_call;
    size_t at = 0;
    while (at < text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) break;  // a line being written
      if (nl - at <= kMaxJournalLine) JournalLines(text.substr(at, nl - at), &last_call, &out.text);
      at = nl + 1;
    }
    return out;
  }
  std::optional<HostInfo> LiveHost(const std::string&) override { return std::nullopt; }
  Status PutForecasts(const std::string&, const std::vector<ConflictForecast>&) override {
    return ReadOnly("forecasting conflicts");
  }
  std::vector<ConflictForecast> Forecasts(const std::string&) override { return {}; }

 private:
  // Numbers what `messages` shows new or newly read (mu_ held); the
  // highest number given.
  uint64_t Number(const std::string& team, const std::vector<Message>& messages) {
    auto& seen = feeds_[team];
    uint64_t& top = tops_[team];
    for (const auto& m : messages) {
      auto it = seen.find(m.id);
      if (it == seen.end()) {
        seen.emplace(m.id, std::make_pair(++top, m.read));
      } else if (it->second.second != m.read) {
        it->second = {++top, m.read};
      }
    }
    return top;
  }

  template <typename Add>
  Status AddTranscripts(const std::string& team, Add& add) {
    MATES_ASSIGN_OR_RETURN(TeamConfig c, home_->LoadTeam(team));
    std::set<fs::path> dirs;
    for (const auto& m : c.members) {
      auto f = home_->TranscriptOf(team, m.name);
      // A member with no transcript yet: its folder comes; watch again then.
      if (!f.ok()) return f.status();
      dirs.insert(f->parent_path());
    }
    for (const auto& d : dirs) MATES_RETURN_IF_ERROR(add(d, "*.jsonl"));
    return Status::Ok();
  }

  static mates::TeamConfig Roster(const ClaudeHome::Snapshot& s) {
    mates::TeamConfig t;
    t.name = s.config.name;
    t.lead = s.config.lead();
    t.created_at = s.config.created_at;
    t.description = "Claude Code agent team";
    std::set<std::string> stopped;
    for (const auto& m : s.messages) {
      if (m.protocol == "shutdown_approved") stopped.insert(m.from);
    }
    for (const auto& c : s.config.members) {
      mates::Member m;
      m.name = c.name;
      m.agent_id = c.agent_id;
      m.role = c.name == t.lead ? MemberRole::kLead : MemberRole::kTeammate;
      m.role_title = c.agent_type == c.name || c.agent_type == "team-lead" ? "" : c.agent_type;
      m.color = c.color;
      m.model = c.model;
      m.prompt = c.prompt;
      m.plan_mode_required = c.plan_mode_required;
      m.joined_at = c.joined_at;
      m.backend = c.backend == "tmux" ? MemberBackend::kTmux : MemberBackend::kInProcess;
      auto a = s.activity.find(c.name);
      const bool busy = a != s.activity.end() && (a->second.state == "thinking" || a->second.state == "tool");
      m.status = stopped.count(c.name) > 0 ? MemberStatus::kShutdown : busy ? MemberStatus::kActive : MemberStatus::kIdle;
      if (m.model.empty() && a != s.activity.end()) m.model = a->second.model;
      if (!c.extra.empty()) m.foreign_json = DumpJson(c.extra);
      t.members.push_back(std::move(m));
    }
    return t;
  }

  std::shared_ptr<ClaudeHome> home_;
  const Workspace ws_;
  Watcher& watcher_;
  const agent::PriceTable& prices_;
  std::mutex mu_;
  // Per team: each message's number and whether it was read then.
  std::map<std::string, std::map<std::string, std::pair<uint64_t, bool>>> feeds_;
  std::map<std::string, uint64_t> tops_;
};

Result<mates::TeamConfig> ClaudeMail::LoadTeam() {
  MATES_ASSIGN_OR_RETURN(auto c, home_->LoadTeam(team_));
  mates::TeamConfig t;
  t.name = c.name;
  t.lead = c.lead();
  for (const auto& cm : c.members) {
    mates::Member m;
    m.name = cm.name;
    m.role = cm.name == t.lead ? MemberRole::kLead : MemberRole::kTeammate;
    t.members.push_back(std::move(m));
  }
  return t;
}

}  // namespace

bool IsClaudeStoreUrl(const std::string& url) { return url.rfind(kScheme, 0) == 0; }

Result<std::unique_ptr<TeamStore>> OpenClaudeStore(const std::string& url, const Workspace& ws, const Env& env) {
  if (!IsClaudeStoreUrl(url)) return Status::InvalidArgument("not a Claude Code store: " + url);
  std::string dir = url.substr(std::string(kScheme).size());
  fs::path home;
  if (dir.empty()) {
    MATES_ASSIGN_OR_RETURN(home, DefaultClaudeHome());
  } else {
    home = dir;
  }
  std::error_code ec;
  if (!fs::is_directory(home, ec)) {
    return Status::NotFound("no Claude Code home at " + home.string() +
                            " (Claude Code keeps it in $CLAUDE_CONFIG_DIR, else ~/.claude)");
  }
  return std::unique_ptr<TeamStore>(std::make_unique<ClaudeStore>(home, ws, env));
}

}  // namespace mates::claude
