#include "tmux/cli_usage.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "core/files.h"
#include "core/json.h"

namespace mates::tmux {
namespace {

namespace fs = std::filesystem;

// A session file longer than this is passed over (a CLI's record of one
// session; Codex's of a long day is some megabytes).
constexpr size_t kMaxSessionBytes = 256u << 20;

// A count another program wrote: 0 if it is none, at most 2^53 (the sum
// of two cannot overflow; llm::Usage's sums saturate).
int64_t Count(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  return std::clamp<int64_t>(it->get<int64_t>(), 0, int64_t{1} << 53);
}

const Json& Member(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

bool HasAll(std::string_view text, const std::vector<std::string>& markers) {
  return std::all_of(markers.begin(), markers.end(),
                     [&](const std::string& m) { return text.find(m) != std::string_view::npos; });
}

// Each whole JSON line of `text`.
void EachLine(std::string_view text, const std::function<void(const Json&)>& each) {
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.empty()) continue;
    if (auto j = ParseJson(line); j.ok() && j->is_object()) each(*j);
  }
}

// Claude Code: an assistant line per content block, each with its call's
// usage so far; a call counts once, by its message id, as its last line says.
CliUsage ClaudeUsage(std::string_view text) {
  CliUsage out;
  std::map<std::string, llm::Usage> calls;
  int unnamed = 0;
  EachLine(text, [&](const Json& j) {
    if (StringOr(j, "type") != "assistant") return;
    const Json& msg = Member(j, "message");
    const Json& usage = Member(msg, "usage");
    if (!usage.is_object()) return;
    auto report = llm::ParseUsage(usage, llm::kAnthropicUsageKeys);
    if (!report.ok()) return;
    std::string id = StringOr(msg, "id");
    if (id.empty()) id = "#" + std::to_string(++unnamed);
    calls[id] = report->usage;
    if (std::string model = StringOr(msg, "model"); !model.empty() && model != "<synthetic>") out.model = model;
  });
  for (const auto& [id, u] : calls) out.usage += u;
  out.calls = static_cast<int>(calls.size());
  return out;
}

// Codex: token_count events carry the session's running total (input
// counts the cached part too); a call is a token_usage_record (0.171), or
// where there are none, a token_count with a last call's usage.
CliUsage CodexUsage(std::string_view text) {
  CliUsage out;
  int records = 0, counts = 0;
  EachLine(text, [&](const Json& j) {
    const std::string type = StringOr(j, "type");
    const Json& p = Member(j, "payload");
    if (type == "turn_context") {
      if (std::string model = StringOr(p, "model"); !model.empty()) out.model = model;
    } else if (type == "token_usage_record") {
      ++records;
    } else if (type == "event_msg" && StringOr(p, "type") == "token_count") {
      const Json& info = Member(p, "info");
      const Json& total = Member(info, "total_token_usage");
      if (!total.is_object()) return;
      if (Member(info, "last_token_usage").is_object()) ++counts;
      const int64_t cached = Count(total, "cached_input_tokens"), written = Count(total, "cache_write_input_tokens");
      out.usage.input_tokens = std::max<int64_t>(0, Count(total, "input_tokens") - cached - written);
      out.usage.cache_read_input_tokens = cached;
      out.usage.cache_creation_input_tokens = written;
      out.usage.output_tokens = Count(total, "output_tokens");
    }
  });
  out.calls = records > 0 ? records : counts;
  return out;
}

// Gemini CLI: a line per message (or a "$set" of them); a gemini message
// is a call, once by id. Its input counts the cached part; thoughts are
// output it is paid for.
CliUsage GeminiUsage(std::string_view text) {
  CliUsage out;
  std::map<std::string, llm::Usage> calls;
  int unnamed = 0;
  auto message = [&](const Json& m) {
    if (StringOr(m, "type") != "gemini") return;
    const Json& t = Member(m, "tokens");
    if (!t.is_object()) return;
    llm::Usage u;
    const int64_t cached = Count(t, "cached");
    u.input_tokens = std::max<int64_t>(0, Count(t, "input") - cached) + Count(t, "tool");
    u.cache_read_input_tokens = cached;
    u.output_tokens = Count(t, "output") + Count(t, "thoughts");
    std::string id = StringOr(m, "id");
    if (id.empty()) id = "#" + std::to_string(++unnamed);
    calls[id] = u;
    if (std::string model = StringOr(m, "model"); !model.empty()) out.model = model;
  };
  auto messages = [&](const Json& list) {
    if (!list.is_array()) return;
    for (const auto& m : list) message(m);
  };
  EachLine(text, [&](const Json& j) {
    messages(Member(Member(j, "$set"), "messages"));
    messages(Member(j, "messages"));  // a whole session file of older versions
    message(j);
  });
  for (const auto& [id, u] : calls) out.usage += u;
  out.calls = static_cast<int>(calls.size());
  return out;
}

std::string EnvPath(const std::function<std::string(const std::string&)>& env, const char* name) {
  std::string v = env(name);
  return v.empty() || v.front() != '/' ? "" : v;
}

// A read-only connection to a SQLite file, closed with it.
class Sqlite {
 public:
  explicit Sqlite(const fs::path& file) {
    const std::string uri = "file:" + file.string() + "?mode=ro";
    if (sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
      error_ = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    } else {
      sqlite3_busy_timeout(db_, 2000);  // OpenCode writes as it works
    }
  }
  ~Sqlite() { sqlite3_close(db_); }
  Sqlite(const Sqlite&) = delete;
  Sqlite& operator=(const Sqlite&) = delete;

  // Runs `sql` with text parameters `texts` then integer `number`; `row`
  // gets each row's text columns.
  Status Query(const std::string& sql, const std::vector<std::string>& texts, int64_t number,
               const std::function<void(const std::vector<std::string_view>&)>& row) {
    if (!error_.empty()) return Status::Unavailable(error_);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
      return Status::Unavailable(sqlite3_errmsg(db_));
    }
    int i = 1;
    for (const auto& t : texts) sqlite3_bind_text(st, i++, t.c_str(), static_cast<int>(t.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, i, number);
    int rc;
    const int n = sqlite3_column_count(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<std::string_view> cols;
      for (int c = 0; c < n; ++c) {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
        cols.emplace_back(p != nullptr ? p : "", p != nullptr ? static_cast<size_t>(sqlite3_column_bytes(st, c)) : 0);
      }
      row(cols);
    }
    Status s = rc == SQLITE_DONE ? Status::Ok() : Status::Unavailable(sqlite3_errmsg(db_));
    sqlite3_finalize(st);
    return s;
  }

 private:
  sqlite3* db_ = nullptr;
  std::string error_;
};

}  // namespace

fs::path RecordsOf(std::string_view cli, const std::function<std::string(const std::string&)>& env) {
  const std::string home = EnvPath(env, "HOME");
  auto under = [&](const char* var, const std::string& fallback) -> fs::path {
    std::string v = EnvPath(env, var);
    if (!v.empty()) return v;
    return home.empty() ? fs::path() : fs::path(home) / fallback;
  };
  fs::path base;
  if (cli == "claude") base = under("CLAUDE_CONFIG_DIR", ".claude");
  if (cli == "codex") base = under("CODEX_HOME", ".codex");
  if (cli == "gemini") base = under("GEMINI_CLI_HOME", "");
  if (cli == "opencode") base = under("XDG_DATA_HOME", ".local/share");
  if (base.empty()) return {};
  if (cli == "claude") return base / "projects";
  if (cli == "codex") return base / "sessions";
  if (cli == "gemini") return base / ".gemini" / "tmp";
  return base / "opencode" / "opencode.db";
}

std::string RecordsName(std::string_view cli) {
  if (cli == "claude") return "Claude Code's transcripts";
  if (cli == "codex") return "Codex's session rollouts";
  if (cli == "gemini") return "Gemini CLI's chat logs";
  if (cli == "opencode") return "OpenCode's database";
  return "";
}

std::optional<CliUsage> SessionUsage(std::string_view cli, std::string_view text,
                                     const std::vector<std::string>& markers) {
  if (!HasAll(text, markers)) return std::nullopt;
  if (cli == "claude") return ClaudeUsage(text);
  if (cli == "codex") return CodexUsage(text);
  if (cli == "gemini") return GeminiUsage(text);
  return std::nullopt;
}

CliUsageReader::CliUsageReader(std::string cli, fs::path records, std::vector<std::string> markers, double since)
    : cli_(std::move(cli)), records_(std::move(records)), markers_(std::move(markers)), since_(since) {}

std::vector<fs::path> CliUsageReader::Candidates(const fs::path& dir, int depth) const {
  std::vector<fs::path> sessions, subagents;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it.depth() >= depth) it.disable_recursion_pending();
    const fs::path& path = it->path();
    const std::string folder = path.parent_path().filename().string();
    const bool ours = cli_ == "gemini" ? folder == "chats" && (path.extension() == ".jsonl" || path.extension() == ".json")
                                       : path.extension() == ".jsonl";
    if (!ours || !it->is_regular_file(ec)) continue;
    auto t = it->last_write_time(ec);
    if (ec) continue;
    const double written =
        std::chrono::duration<double>(std::chrono::file_clock::to_sys(t).time_since_epoch()).count();
    if (written < since_ - 60) continue;
    (folder == "subagents" ? subagents : sessions).push_back(path);
  }
  // A session before its subagents' files, which are counted as its.
  std::sort(sessions.begin(), sessions.end());
  std::sort(subagents.begin(), subagents.end());
  sessions.insert(sessions.end(), subagents.begin(), subagents.end());
  return sessions;
}

Result<std::optional<CliUsage>> CliUsageReader::ReadFiles(const fs::path& dir, int depth) {
  std::optional<CliUsage> sum;
  std::set<std::string> ours;  // the member's sessions' files
  for (const auto& file : Candidates(dir, depth)) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    const auto mtime = fs::last_write_time(file, ec);
    if (ec || size > kMaxSessionBytes) continue;
    Seen& seen = seen_[file];
    if (seen.size != size || seen.mtime != mtime || size == 0) {
      auto text = ReadFilePrefix(file, kMaxSessionBytes);
      if (!text.ok()) continue;  // gone meanwhile
      seen.size = size;
      seen.mtime = mtime;
      // A subagent's transcript is its session's (…/<session>/subagents/).
      const fs::path parent = file.parent_path();
      const bool subagent = cli_ == "claude" && parent.filename() == "subagents" &&
                            ours.count(parent.parent_path().string() + ".jsonl") > 0;
      seen.usage = subagent ? std::optional<CliUsage>(ClaudeUsage(*text)) : SessionUsage(cli_, *text, markers_);
    }
    if (!seen.usage) continue;
    ours.insert(file.string());
    if (!sum) sum.emplace();
    sum->usage += seen.usage->usage;
    sum->calls += seen.usage->calls;
    if (!seen.usage->model.empty()) sum->model = seen.usage->model;
    ++sum->sessions;
  }
  return sum;
}

Result<std::optional<CliUsage>> CliUsageReader::ReadOpenCode() {
  std::error_code ec;
  if (!fs::exists(records_, ec)) return std::optional<CliUsage>();
  Sqlite db(records_);
  // The member's sessions: those with a part holding every marker (its
  // handshake), updated since the cluster came up.
  std::string sql =
      "SELECT m.session_id, m.data FROM message m WHERE m.session_id IN (SELECT s.id FROM session s WHERE "
      "s.time_updated >= ?" + std::to_string(markers_.size() + 1) +
      " AND EXISTS (SELECT 1 FROM part p WHERE p.session_id = s.id";
  for (size_t i = 0; i < markers_.size(); ++i) sql += " AND instr(p.data, ?" + std::to_string(i + 1) + ") > 0";
  sql += ")) ORDER BY m.time_created";
  std::optional<CliUsage> sum;
  std::set<std::string> sessions;
  double priced = 0;
  bool all_priced = true;
  Status s = db.Query(sql, markers_, static_cast<int64_t>((since_ - 60) * 1000), [&](const auto& row) {
    auto j = ParseJson(row[1]);
    if (!j.ok() || StringOr(*j, "role") != "assistant") return;
    const Json& t = Member(*j, "tokens");
    if (!t.is_object()) return;
    if (!sum) sum.emplace();
    sessions.insert(std::string(row[0]));
    const Json& cache = Member(t, "cache");
    llm::Usage u;
    u.input_tokens = Count(t, "input");
    u.output_tokens = Count(t, "output") + Count(t, "reasoning");
    u.cache_read_input_tokens = Count(cache, "read");
    u.cache_creation_input_tokens = Count(cache, "write");
    sum->usage += u;
    ++sum->calls;
    if (std::string model = StringOr(*j, "modelID"); !model.empty()) sum->model = model;
    const Json& cost = Member(*j, "cost");
    if (cost.is_number() && cost.get<double>() > 0) {
      priced += cost.get<double>();
    } else {
      all_priced = false;
    }
  });
  if (!s.ok()) return s.WithContext("reading " + records_.string());
  if (sum) {
    sum->sessions = static_cast<int>(sessions.size());
    if (all_priced) sum->cost_usd = priced;
  }
  return sum;
}

Result<std::optional<CliUsage>> CliUsageReader::Read() {
  if (records_.empty()) return std::optional<CliUsage>();
  if (cli_ == "opencode") return ReadOpenCode();
  // Claude Code: projects/<cwd>/<session>.jsonl and <session>/subagents/…;
  // Codex: sessions/Y/M/D/…; Gemini CLI: tmp/<project>/chats/….
  return ReadFiles(records_, cli_ == "codex" ? 4 : 3);
}

}  // namespace mates::tmux
