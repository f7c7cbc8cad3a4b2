// See claude_team.h.
#include "claude/claude_team.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "core/ids.h"
#include "core/text.h"
#include "claude/claude_files.h"

namespace mates::claude {

namespace {

constexpr size_t kMaxConfigBytes = 4u << 20;
constexpr size_t kMaxTasks = 10000;
constexpr size_t kMaxTranscriptLine = 8u << 20;  // a longer line is passed over
constexpr size_t kTranscriptChunk = 16u << 20;   // read per look, at most
// A file that does not parse may be caught mid-write: read again this
// often, this far apart, before it counts as broken.
constexpr int kReadAttempts = 5;
constexpr auto kReadPause = std::chrono::milliseconds(20);

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double Millis(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() / 1000.0 : 0;
}

double IsoOr0(const Json& j, const char* key) { return ParseIsoTime(Str(j, key)).value_or(0); }

std::vector<std::string> Strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
    else if (v.is_number_integer()) out.push_back(std::to_string(v.get<int64_t>()));
  }
  return out;
}

// `j` without `known`: what a reader does not use, kept to be shown.
Json Extra(const Json& j, std::initializer_list<const char*> known) {
  Json out = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }) == known.end()) {
      out[it.key()] = it.value();
    }
  }
  return out;
}


uint64_t Fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The value of attribute `name` in the tag text `tag` (`name="…"`).
std::string Attribute(std::string_view tag, std::string_view name) {
  const std::string key = " " + std::string(name) + "=\"";
  size_t at = tag.find(key);
  if (at == std::string_view::npos) return "";
  at += key.size();
  size_t end = tag.find('"', at);
  if (end == std::string_view::npos) return "";
  return std::string(tag.substr(at, end - at));
}

// Unescapes what Claude Code's attribute quoting escapes (&quot; &amp; &lt; &gt;).
std::string Unescape(std::string s) {
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEntities) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + std::strlen(to))) {
      s.replace(at, std::strlen(from), to);
    }
  }
  return s;
}

// A protocol message's type and document, if `text` is one.
void ReadProtocol(Message* m) {
  if (m->text.empty() || m->text.front() != '{') return;
  auto j = ParseJson(m->text);
  if (!j.ok() || !j->is_object()) return;
  std::string type = Str(*j, "type");
  if (type.empty()) return;
  m->protocol = type;
  m->document = std::move(*j);
}

bool ProcessIsSession(pid_t pid, const std::string& proc_start) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno != EPERM) return false;
  if (proc_start.empty()) return true;
  auto stat = ReadFilePrefix("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok()) return false;
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos) return false;
  // Field 22 (starttime); the fields after the command are 3 onwards.
  size_t at = paren + 2;
  for (int field = 3; field < 22 && at != std::string::npos; ++field) {
    at = stat->find(' ', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos) return false;
  return stat->substr(at, stat->find(' ', at) - at) == proc_start;
}


// "Bash(make test)": a tool call in one short line.
std::string CallOf(const Json& block) {
  std::string name = Str(block, "name");
  std::string arg;
  auto in = block.find("input");
  if (in != block.end() && in->is_object()) {
    for (const char* k : {"command", "file_path", "pattern", "to", "subject", "description", "prompt", "url"}) {
      arg = Str(*in, k);
      if (!arg.empty()) break;
    }
    if (name == "SendMessage" && !arg.empty()) arg += ": " + Str(*in, "summary");
  }
  for (char& c : arg) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return CutUtf8(name + (arg.empty() ? "" : "(" + arg + ")"), 90);
}

}  // namespace

Result<Json> ReadJsonFile(const fs::path& path, size_t max_bytes) {
  Status last;
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kReadPause);
    auto text = ReadFilePrefix(path, max_bytes + 1);
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound) return text.status();
      last = text.status();
      continue;
    }
    if (text->size() > max_bytes) {
      return Status::Corrupt(path.string() + " is larger than " + std::to_string(max_bytes >> 10) + " KiB");
    }
    auto j = ParseJson(*text);
    if (j.ok()) return j;
    last = Status::Corrupt(path.string() + ": " + j.status().message());
  }
  return last;
}

std::vector<std::string> ListDir(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<fs::path> DefaultClaudeHome() {
  if (const char* dir = std::getenv("CLAUDE_CONFIG_DIR"); dir != nullptr && *dir != '\0') return fs::path(dir);
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return fs::path(home) / ".claude";
  return Status::FailedPrecondition("neither CLAUDE_CONFIG_DIR nor HOME is set: where is Claude Code's state?");
}

std::string TeamFolderName(std::string_view team) {
  std::string out(team);
  for (char& c : out) c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return out;
}

std::string FileNameOf(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '-';
  }
  return out;
}

std::string TeamConfig::lead() const {
  for (const auto& m : members) {
    if (m.agent_id == lead_agent_id) return m.name;
  }
  return members.empty() ? std::string() : members.front().name;
}

const Member* TeamConfig::Find(std::string_view name) const {
  for (const auto& m : members) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

Result<TeamConfig> TeamConfigFromJson(const Json& j) {
  if (!j.is_object()) return Status::Corrupt("a team's config.json is not a JSON object");
  TeamConfig c;
  c.name = Str(j, "name");
  c.created_at = Millis(j, "createdAt");
  c.lead_agent_id = Str(j, "leadAgentId");
  c.lead_session_id = Str(j, "leadSessionId");
  c.extra = Extra(j, {"name", "createdAt", "leadAgentId", "leadSessionId", "members"});
  auto members = j.find("members");
  if (members != j.end() && members->is_array()) {
    for (const auto& mj : *members) {
      if (!mj.is_object() || Str(mj, "name").empty()) continue;
      Member m;
      m.name = Str(mj, "name");
      m.agent_id = Str(mj, "agentId");
      m.agent_type = Str(mj, "agentType");
      m.model = Str(mj, "model");
      m.color = Str(mj, "color");
      m.prompt = Str(mj, "prompt");
      m.cwd = Str(mj, "cwd");
      m.backend = Str(mj, "backendType");
      m.joined_at = Millis(mj, "joinedAt");
      auto plan = mj.find("planModeRequired");
      m.plan_mode_required = plan != mj.end() && plan->is_boolean() && plan->get<bool>();
      m.extra = Extra(mj, {"name", "agentId", "agentType", "model", "color", "prompt", "cwd", "backendType",
                           "joinedAt", "planModeRequired"});
      c.members.push_back(std::move(m));
    }
  }
  return c;
}

Message MessageFromInbox(const Json& j, const std::string& to) {
  Message m;
  m.from = Str(j, "from");
  m.to = to;
  m.text = Str(j, "text");
  m.summary = Str(j, "summary");
  m.color = Str(j, "color");
  m.timestamp = IsoOr0(j, "timestamp");
  auto read = j.find("read");
  m.read = read != j.end() && read->is_boolean() && read->get<bool>();
  m.extra = Extra(j, {"from", "text", "summary", "color", "timestamp", "read", "type"});
  std::string type = Str(j, "type");
  if (!type.empty() && type != "message") m.extra["type"] = type;
  ReadProtocol(&m);
  return m;
}

Task TaskFromJson(const Json& j) {
  Task t;
  t.id = Str(j, "id");
  t.subject = Str(j, "subject");
  t.description = Str(j, "description");
  t.active_form = Str(j, "activeForm");
  t.status = Str(j, "status");
  t.owner = Str(j, "owner");
  t.blocks = Strings(j, "blocks");
  t.blocked_by = Strings(j, "blockedBy");
  auto meta = j.find("metadata");
  if (meta != j.end() && meta->is_object()) t.metadata = *meta;
  t.extra = Extra(j, {"id", "subject", "description", "activeForm", "status", "owner", "blocks", "blockedBy",
                      "metadata"});
  return t;
}

std::vector<Message> MessagesInTurn(std::string_view text, const std::string& to, double at) {
  static constexpr std::string_view kOpen = "<teammate-message";
  static constexpr std::string_view kClose = "</teammate-message>";
  std::vector<Message> out;
  size_t pos = 0;
  while ((pos = text.find(kOpen, pos)) != std::string_view::npos) {
    size_t tag_end = text.find('>', pos);
    if (tag_end == std::string_view::npos) break;
    size_t close = text.find(kClose, tag_end);
    if (close == std::string_view::npos) break;
    std::string_view tag = text.substr(pos, tag_end - pos);
    Message m;
    m.from = Unescape(Attribute(tag, "teammate_id"));
    m.color = Unescape(Attribute(tag, "color"));
    m.summary = Unescape(Attribute(tag, "summary"));
    m.to = to;
    m.timestamp = at;
    m.read = true;
    std::string_view body = text.substr(tag_end + 1, close - tag_end - 1);
    if (!body.empty() && body.front() == '\n') body.remove_prefix(1);
    if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
    m.text = std::string(body);
    ReadProtocol(&m);
    if (!m.from.empty()) out.push_back(std::move(m));
    pos = close + kClose.size();
  }
  return out;
}

std::string Gist(const Message& m) {
  if (m.protocol.empty()) return m.summary;
  const Json& d = m.document;
  if (m.protocol == "idle_notification") {
    std::string why = Str(d, "idleReason");
    std::string s = "idle" + (why.empty() ? "" : " (" + why + ")");
    std::string sum = Str(d, "summary");
    return sum.empty() ? s : s + ": " + sum;
  }
  if (m.protocol == "shutdown_request") return "asks to shut down" + (Str(d, "reason").empty() ? "" : ": " + Str(d, "reason"));
  if (m.protocol == "shutdown_approved") return "shutdown approved";
  if (m.protocol == "shutdown_rejected") return "shutdown rejected" + (Str(d, "reason").empty() ? "" : ": " + Str(d, "reason"));
  if (m.protocol == "plan_approval_request") return "asks to approve a plan";
  if (m.protocol == "plan_approval_response") {
    auto ok = d.find("approved");
    bool approved = ok != d.end() && ok->is_boolean() && ok->get<bool>();
    return std::string(approved ? "plan approved" : "plan rejected") +
           (Str(d, "feedback").empty() ? "" : ": " + Str(d, "feedback"));
  }
  return m.protocol;
}

// ---------------------------------------------------------------------------
// Transcripts

// One transcript, read as it grows: what it has said so far.
struct Transcript {
  fs::path path;
  dev_t dev = 0;
  ino_t ino = 0;
  uint64_t offset = 0;  // up to the end of its last whole line
  Activity activity;
  std::vector<Message> delivered;
  std::string last_call_id;  // the message id of the last call
  llm::Usage before_last;    // the calls before it
  llm::Usage last_call;

  void Reset() {
    offset = 0;
    activity = Activity{};
    activity.transcript = path.string();
    delivered.clear();
    last_call_id.clear();
    before_last = last_call = llm::Usage{};
  }

  void Line(const Json& j, const std::string& owner) {
    if (!j.is_object()) return;
    const std::string type = Str(j, "type");
    if (type != "user" && type != "assistant") return;
    const double at = IsoOr0(j, "timestamp");
    auto msg = j.find("message");
    if (msg == j.end() || !msg->is_object()) return;
    activity.since = std::max(activity.since, at);
    if (type == "assistant") {
      // Each content block is a line of its own, with the call's usage on
      // each: a call counts once, by its message id.
      const std::string id = Str(*msg, "id");
      llm::Usage u;
      auto usage = msg->find("usage");
      if (usage != msg->end() && usage->is_object()) {
        if (auto report = llm::ParseUsage(*usage, llm::kAnthropicUsageKeys); report.ok()) u = report->usage;
      }
      if (id.empty() || id != last_call_id) {
        ++activity.calls;
        before_last += last_call;
      }
      last_call_id = id;
      last_call = u;
      activity.tokens = before_last;
      activity.tokens += u;
      if (std::string model = Str(*msg, "model"); !model.empty()) activity.model = model;
      auto content = msg->find("content");
      std::string call;
      if (content != msg->end() && content->is_array()) {
        for (const auto& b : *content) {
          if (b.is_object() && Str(b, "type") == "tool_use") call = CallOf(b);
        }
      }
      if (!call.empty()) {
        activity.state = "tool";
        activity.doing = call;
      } else if (Str(*msg, "stop_reason") == "tool_use") {
        activity.state = "tool";
      } else {
        activity.state = "idle";
        activity.doing.clear();
      }
      return;
    }
    activity.state = "thinking";
    activity.doing.clear();
    auto content = msg->find("content");
    if (content == msg->end() || !content->is_string()) return;
    const std::string& text = content->get_ref<const std::string&>();
    auto found = MessagesInTurn(text, owner, at);
    if (!found.empty()) {
      for (auto& m : found) delivered.push_back(std::move(m));
      return;
    }
    // Plain text in a user turn is the person's: what they typed to the
    // lead, or sent a member from outside (Claude Code hands a message
    // from `user` over as it is). Claude Code's own notes (meta lines,
    // compaction summaries, command output in tags) are not mail.
    auto flag = [&](const char* k) {
      auto it = j.find(k);
      return it != j.end() && it->is_boolean() && it->get<bool>();
    };
    if (!flag("isMeta") && !flag("isCompactSummary") && !flag("isVisibleInTranscriptOnly") && !text.empty() &&
        text.front() != '<') {
      Message m;
      m.from = "user";
      m.to = owner;
      m.text = text;
      m.timestamp = at;
      m.read = true;
      delivered.push_back(std::move(m));
    }
  }

  // Reads what was appended since the last look (a file replaced or cut
  // is read from its start); a partial last line waits for the next look.
  Status Update(const std::string& owner) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Status::NotFound(path.string() + " is gone");
    if (st.st_dev != dev || st.st_ino != ino || static_cast<uint64_t>(st.st_size) < offset) {
      dev = st.st_dev;
      ino = st.st_ino;
      Reset();
    }
    while (offset < static_cast<uint64_t>(st.st_size)) {
      auto chunk = ReadFileRange(path, offset, kTranscriptChunk);
      if (!chunk.ok()) return chunk.status();
      if (chunk->empty()) break;
      size_t consumed = 0;
      while (true) {
        size_t nl = chunk->find('\n', consumed);
        if (nl == std::string::npos) break;
        std::string_view line(chunk->data() + consumed, nl - consumed);
        consumed = nl + 1;
        if (line.empty() || line.size() > kMaxTranscriptLine) continue;
        auto j = ParseJson(line);
        if (j.ok()) Line(*j, owner);
      }
      if (consumed == 0) {
        // No whole line in a full chunk: a line too long to keep; pass it.
        if (chunk->size() < kTranscriptChunk) break;
        consumed = chunk->size();
      }
      offset += consumed;
      if (chunk->size() < kTranscriptChunk) break;
    }
    return Status::Ok();
  }
};

TranscriptSummary SummarizeTranscript(std::string_view text, const std::string& owner) {
  Transcript t;
  t.Reset();
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) break;
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.empty() || line.size() > kMaxTranscriptLine) continue;
    if (auto j = ParseJson(line); j.ok()) t.Line(*j, owner);
  }
  return {t.activity, std::move(t.delivered)};
}

// The transcripts of one team's members, found and followed.
class TeamReader {
 public:
  explicit TeamReader(fs::path home) : home_(std::move(home)) {}

  // `member`'s transcript under the lead's session `session` ("" if none).
  fs::path Locate(const TeamConfig& c, const std::string& member) {
    auto known = where_.find(member);
    if (known != where_.end() && fs::exists(known->second)) return known->second;
    if (c.lead_session_id.empty()) return {};
    const fs::path projects = home_ / "projects";
    const std::string session = FileNameOf(c.lead_session_id);
    for (const auto& project : ListDir(projects)) {
      const fs::path dir = projects / project;
      if (member == c.lead()) {
        fs::path f = dir / (session + ".jsonl");
        if (fs::exists(f)) return where_[member] = f;
        continue;
      }
      const fs::path subagents = dir / session / "subagents";
      for (const auto& name : ListDir(subagents)) {
        if (name.size() < 10 || name.compare(name.size() - 10, 10, ".meta.json") != 0) continue;
        auto meta = ReadJsonFile(subagents / name, kMaxTaskBytes);
        if (!meta.ok() || !meta->is_object()) continue;
        if (Str(*meta, "name") != member || (Str(*meta, "teamName") != c.name && !Str(*meta, "teamName").empty())) {
          continue;
        }
        fs::path f = subagents / (name.substr(0, name.size() - 10) + ".jsonl");
        if (fs::exists(f)) return where_[member] = f;
      }
    }
    return {};
  }

  // The member's transcript as read now; null if it has none.
  const Transcript* Follow(const TeamConfig& c, const std::string& member, std::vector<std::string>* problems) {
    fs::path f = Locate(c, member);
    if (f.empty()) return nullptr;
    Transcript& t = transcripts_[member];
    if (t.path != f) {
      t = Transcript{};
      t.path = f;
      t.Reset();
    }
    Status s = t.Update(member);
    if (!s.ok()) {
      problems->push_back(s.message());
      where_.erase(member);
      return nullptr;
    }
    return &t;
  }

 private:
  const fs::path home_;
  std::map<std::string, fs::path> where_;
  std::map<std::string, Transcript> transcripts_;
};

// ---------------------------------------------------------------------------
// ClaudeHome

ClaudeHome::ClaudeHome(fs::path home) : home_(std::move(home)) {}
ClaudeHome::~ClaudeHome() = default;

TeamFiles ClaudeHome::FilesOf(std::string_view team) const {
  const fs::path dir = home_ / "teams" / TeamFolderName(team);
  return {dir / "config.json", dir / "inboxes", home_ / "tasks" / FileNameOf(team)};
}

Result<std::vector<std::string>> ClaudeHome::ListTeams() const {
  std::vector<std::string> out;
  for (const auto& name : ListDir(home_ / "teams")) {
    if (fs::exists(home_ / "teams" / name / "config.json")) out.push_back(name);
  }
  return out;
}

Result<TeamConfig> ClaudeHome::LoadTeam(std::string_view team) const {
  const fs::path file = FilesOf(team).config;
  auto j = ReadJsonFile(file, kMaxConfigBytes);
  if (!j.ok() && j.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("no Claude Code team '" + std::string(team) + "' in " + (home_ / "teams").string());
  }
  if (!j.ok()) return j.status();
  MATES_ASSIGN_OR_RETURN(TeamConfig c, TeamConfigFromJson(*j));
  if (c.name.empty()) c.name = std::string(team);
  return c;
}

Result<std::vector<Message>> ClaudeHome::Inbox(std::string_view team, std::string_view member) const {
  const fs::path file = FilesOf(team).inboxes / (FileNameOf(member) + ".json");
  auto j = ReadJsonFile(file, kMaxInboxBytes);
  if (!j.ok() && j.status().code() == StatusCode::kNotFound) return std::vector<Message>();
  if (!j.ok()) return j.status();
  if (!j->is_array()) return Status::Corrupt(file.string() + " is not a JSON array");
  std::vector<Message> out;
  for (const auto& e : *j) {
    if (!e.is_object()) continue;
    Message m = MessageFromInbox(e, std::string(member));
    if (!m.read) out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<Task>> ClaudeHome::Tasks(std::string_view team) const {
  const fs::path dir = FilesOf(team).tasks;
  std::vector<Task> out;
  for (const auto& name : ListDir(dir)) {
    if (name.size() < 6 || name.front() == '.' || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    if (out.size() >= kMaxTasks) break;
    auto j = ReadJsonFile(dir / name, kMaxTaskBytes);
    if (!j.ok() && j.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
    if (!j.ok()) return j.status();
    if (!j->is_object()) return Status::Corrupt((dir / name).string() + " is not a JSON object");
    Task t = TaskFromJson(*j);
    if (t.id.empty()) t.id = name.substr(0, name.size() - 5);
    if (auto st = StatPath(dir / name); st.ok()) {
      t.updated_at = static_cast<double>(st->st_mtim.tv_sec) + st->st_mtim.tv_nsec / 1e9;
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const Task& a, const Task& b) {
    char* end = nullptr;
    const long long x = std::strtoll(a.id.c_str(), &end, 10), y = std::strtoll(b.id.c_str(), &end, 10);
    return x != y ? x < y : a.id < b.id;
  });
  return out;
}

bool ClaudeHome::SessionAlive(std::string_view session_id) const {
  if (session_id.empty()) return false;
  for (const auto& name : ListDir(home_ / "sessions")) {
    auto j = ReadJsonFile(home_ / "sessions" / name, kMaxTaskBytes);
    if (!j.ok() || !j->is_object() || Str(*j, "sessionId") != session_id) continue;
    auto pid = j->find("pid");
    if (pid == j->end() || !pid->is_number_integer()) continue;
    if (ProcessIsSession(static_cast<pid_t>(pid->get<int64_t>()), Str(*j, "procStart"))) return true;
  }
  return false;
}

TeamReader& ClaudeHome::ReaderOf(std::string_view team) {
  auto& r = readers_[std::string(team)];
  if (!r) r = std::make_unique<TeamReader>(home_);
  return *r;
}

Result<fs::path> ClaudeHome::TranscriptOf(std::string_view team, std::string_view member) {
  MATES_ASSIGN_OR_RETURN(TeamConfig c, LoadTeam(team));
  std::lock_guard<std::mutex> lock(mu_);
  fs::path f = ReaderOf(team).Locate(c, std::string(member));
  if (f.empty()) return Status::NotFound(std::string(member) + " of Claude Code team '" + std::string(team) +
                                         "' has no transcript yet");
  return f;
}

Result<ClaudeHome::Snapshot> ClaudeHome::Look(std::string_view team) {
  Snapshot s;
  MATES_ASSIGN_OR_RETURN(s.config, LoadTeam(team));
  auto tasks = Tasks(team);
  if (tasks.ok()) s.tasks = std::move(*tasks);
  else s.problems.push_back(tasks.status().message());

  // Every member's inbox, and any inbox of a name no longer in the roster.
  std::vector<std::string> names;
  for (const auto& m : s.config.members) names.push_back(m.name);
  for (const auto& f : ListDir(FilesOf(team).inboxes)) {
    if (f.size() > 5 && f.compare(f.size() - 5, 5, ".json") == 0) {
      std::string n = f.substr(0, f.size() - 5);
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  }
  std::vector<Message> pending;
  for (const auto& n : names) {
    auto inbox = Inbox(team, n);
    if (!inbox.ok()) {
      s.problems.push_back(inbox.status().message());
      continue;
    }
    s.unread[n] = inbox->size();
    for (auto& m : *inbox) pending.push_back(std::move(m));
  }

  std::vector<Message> delivered;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TeamReader& reader = ReaderOf(team);
    for (const auto& m : s.config.members) {
      const Transcript* t = reader.Follow(s.config, m.name, &s.problems);
      if (t == nullptr) continue;
      s.activity[m.name] = t->activity;
      delivered.insert(delivered.end(), t->delivered.begin(), t->delivered.end());
    }
  }
  // A message still in an inbox and already in its recipient's transcript
  // (between the two writes of a delivery) is shown once, as delivered.
  for (const auto& p : pending) {
    bool seen = std::any_of(delivered.begin(), delivered.end(), [&](const Message& d) {
      return d.to == p.to && d.from == p.from && d.text == p.text && d.timestamp + 1 >= p.timestamp;
    });
    if (!seen) s.messages.push_back(p);
    else if (s.unread[p.to] > 0) --s.unread[p.to];
  }
  s.messages.insert(s.messages.end(), delivered.begin(), delivered.end());
  std::stable_sort(s.messages.begin(), s.messages.end(),
                   [](const Message& a, const Message& b) { return a.timestamp < b.timestamp; });
  // Ids that stay the same from inbox to transcript: what it says, and
  // which of the same it is.
  std::map<uint64_t, int> seen;
  for (auto& m : s.messages) {
    uint64_t h = Fnv1a(m.text, Fnv1a(m.from + '\n', Fnv1a(m.to + '\n')));
    m.id = "cc-" + Hex(h).substr(0, 12) + "-" + std::to_string(seen[h]++);
  }
  s.lead_alive = SessionAlive(s.config.lead_session_id);
  return s;
}

}  // namespace mates::claude
