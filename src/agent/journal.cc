#include "agent/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "agent/prices.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/names.h"

namespace mates::agent {

Result<Journal> Journal::Open(const fs::path& path) {
  MATES_RETURN_IF_ERROR(EnsureDir(path.parent_path()));
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno("open journal " + path.string(), errno);
  // A process killed mid-append leaves a line without its newline: cut it,
  // or the next line would be glued to it.
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
    auto data = ReadFile(path);
    if (data.ok() && data->back() != '\n') {
      size_t keep = data->rfind('\n');
      keep = keep == std::string::npos ? 0 : keep + 1;
      LogWarning("journal " + path.string() + ": dropping a torn last line");
      if (::ftruncate(fd.get(), static_cast<off_t>(keep)) != 0) {
        return Status::FromErrno("truncate " + path.string(), errno);
      }
    }
  }
  return Journal(path, std::move(fd));
}

Status Journal::Append(const std::string& line, bool send) {
  // A write that fails part way (a full disk) leaves no part of its line:
  // the next line, once there is room, would be glued to it.
  struct stat st {};
  const bool sized = ::fstat(fd_.get(), &st) == 0;
  if (Status w = WriteAll(fd_.get(), line + "\n", path_.c_str()); !w.ok()) {
    if (sized && ::ftruncate(fd_.get(), st.st_size) != 0) {
      return Status::IOError(w.message() + "; the part written stays: " + std::strerror(errno));
    }
    return w;
  }
  if (copy_) {
    unsent_.push_back(line);
    if (send) SendToCopy();
  }
  return Status::Ok();
}

void Journal::CopyTo(std::unique_ptr<JournalCopy> copy, int64_t held) {
  copy_ = std::move(copy);
  copied_ = held;
  unsent_.clear();
  copy_lagging_ = false;
}

void Journal::SendToCopy() {
  Status s = copy_->Put(copied_, unsent_);
  if (s.ok()) {
    copied_ += static_cast<int64_t>(unsent_.size());
    unsent_.clear();
    if (copy_lagging_) LogInfo("journal " + path_.string() + ": the store's copy caught up");
    copy_lagging_ = false;
    return;
  }
  if (!copy_lagging_) {
    LogWarning("journal " + path_.string() + ": the store's copy lags (" + s.message() +
               "); its lines go there with the next one");
  }
  copy_lagging_ = true;
}

namespace {

// Each line of `text` ended by a newline (a torn tail is not a line).
template <typename F>
void ForEachWholeLine(std::string_view text, F&& each) {
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    if (end == std::string_view::npos) return;
    each(text.substr(start, end - start));
    start = end + 1;
  }
}

// Keys are written sorted: a usage line starts with its kind.
bool IsUsageLine(std::string_view line) { return line.rfind(R"({"kind":"usage")", 0) == 0; }


// The file's whole lines (a torn last one is not a line).
Result<std::vector<std::string>> FileLines(const fs::path& path) {
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return std::vector<std::string>{};
    return data.status();
  }
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = data->find('\n', start)) != std::string::npos; start = end + 1) {
    lines.emplace_back(*data, start, end - start);
  }
  return lines;
}

bool StartsWith(const std::vector<std::string>& all, const std::vector<std::string>& start) {
  return start.size() <= all.size() && std::equal(start.begin(), start.end(), all.begin());
}

}  // namespace

Result<int64_t> Journal::Reconcile(const fs::path& path, JournalCopy& copy) {
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> held, copy.Lines());
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> local, FileLines(path));
  if (StartsWith(local, held)) {
    // This machine wrote on while the copy could not be reached.
    std::vector<std::string> later(local.begin() + static_cast<std::ptrdiff_t>(held.size()), local.end());
    MATES_RETURN_IF_ERROR(copy.Put(static_cast<int64_t>(held.size()), later));
    return static_cast<int64_t>(local.size());
  }
  if (!StartsWith(held, local)) {
    fs::path aside = path;
    aside += ".superseded-" + std::to_string(static_cast<int64_t>(WallSeconds()));
    std::error_code ec;
    fs::rename(path, aside, ec);
    if (ec) return Status::IOError("move " + path.string() + " aside: " + ec.message());
    LogWarning("journal " + path.string() + " differs from the store's copy, which another host wrote: resuming "
               "from the copy (the file is kept as " + aside.filename().string() + ")");
  }
  // Another host went on with the agent: its lines come here.
  MATES_RETURN_IF_ERROR(EnsureDir(path.parent_path()));
  std::string text;
  for (const auto& l : held) text += l + "\n";
  MATES_RETURN_IF_ERROR(WriteFileAtomic(path, text));
  return static_cast<int64_t>(held.size());
}

Result<int64_t> Journal::Republish(const fs::path& path, JournalCopy& copy) {
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> local, FileLines(path));
  MATES_RETURN_IF_ERROR(copy.Replace(local));
  return static_cast<int64_t>(local.size());
}

Status Journal::AppendMessage(const llm::ChatMessage& m, const std::vector<std::string>& delivered) {
  // Set and moved, not an initializer list (which copies the message once
  // more): a line is journaled for every message of every turn.
  Json line = JsonObject(4);
  line["kind"] = "message";
  line["ts"] = WallSeconds();
  line["message"] = llm::MessageToJson(m);
  if (!delivered.empty()) line["delivered"] = delivered;
  return Append(DumpJson(line));
}

Status Journal::AppendCompaction(const std::vector<llm::ChatMessage>& messages,
                                 const std::string& transcript_path) {
  Json arr = Json::array();
  for (const auto& m : messages) arr.push_back(llm::MessageToJson(m));
  Json line = JsonObject(4);
  line["kind"] = "compact";
  line["ts"] = WallSeconds();
  line["transcript"] = transcript_path;
  line["messages"] = std::move(arr);
  return Append(DumpJson(line));
}

Status Journal::AppendDelivered(const std::vector<std::string>& ids) {
  return Append(DumpJson(Json{{"kind", "delivered"}, {"ids", ids}}));
}

Status Journal::AppendMoved(const std::string& team) {
  return Append(DumpJson(Json{{"kind", "moved"}, {"team", team}}));
}

Status Journal::AppendPlace(const std::string& place) {
  return Append(DumpJson(Json{{"kind", "place"}, {"place", place}}));
}

Status Journal::AppendTurnEnd(std::string_view end, const std::string& why, std::string_view in) {
  Json line = JsonObject(5);
  line["kind"] = "turn_end";
  line["end"] = end;
  line["why"] = why;
  if (!in.empty()) line["in"] = in;
  line["ts"] = WallSeconds();
  return Append(DumpJson(line));
}

Status Journal::AppendUsage(const llm::Usage& u, const std::string& model, bool send) {
  // Usually the reply it counts follows at once: the copy gets both in one
  // go (one round trip less before each tool runs).
  return Append(
      DumpJson(Json{{"kind", "usage"}, {"usage", llm::UsageToJson(u)}, {"model", model}, {"ts", WallSeconds()}}),
      send);
}

std::vector<UsagePoint> Journal::UsageSeries(std::string_view text, size_t max_points, const PriceTable& prices) {
  std::vector<UsagePoint> all;
  double last_ts = 0;
  int64_t tokens = 0;
  std::optional<double> cost = 0.0;
  ForEachWholeLine(text, [&](std::string_view line) {
    const bool usage = IsUsageLine(line);
    // Only what is needed is parsed: a usage line whole, another for its time.
    if (!usage && line.find(R"("ts":)") == std::string_view::npos) return;
    auto j = ParseJson(line);
    if (!j.ok() || !j->is_object()) return;
    if (auto ts = j->find("ts"); ts != j->end() && ts->is_number()) last_ts = ts->get<double>();
    if (!usage) return;
    auto u = j->find("usage");
    if (u == j->end() || !u->is_object()) return;
    const llm::Usage one = llm::UsageFromJson(*u);
    auto model = j->find("model");
    const std::string name = model != j->end() && model->is_string() ? model->get<std::string>() : "";
    tokens += TotalTokens(one);
    const std::optional<double> priced = prices.Cost(name, one);
    cost = cost && priced ? std::optional<double>(*cost + *priced) : std::nullopt;
    all.push_back({last_ts, tokens, cost});
  });
  if (all.size() <= max_points || max_points < 2) return all;
  std::vector<UsagePoint> picked;
  const double step = static_cast<double>(all.size() - 1) / static_cast<double>(max_points - 1);
  for (size_t i = 0; i < max_points; ++i) picked.push_back(all[static_cast<size_t>(std::llround(i * step))]);
  return picked;
}

Journal::Spend Journal::SpendWithin(std::string_view text, const std::vector<std::pair<double, double>>& windows,
                                     const PriceTable& prices) {
  Spend spend;
  if (windows.empty()) return spend;
  ForEachWholeLine(text, [&](std::string_view line) {
    if (!IsUsageLine(line)) return;
    auto j = ParseJson(line);
    if (!j.ok() || !j->is_object()) return;
    auto ts = j->find("ts");
    auto u = j->find("usage");
    if (ts == j->end() || !ts->is_number() || u == j->end() || !u->is_object()) return;
    const double at = ts->get<double>();
    if (std::none_of(windows.begin(), windows.end(), [at](const auto& w) { return at >= w.first && at < w.second; })) {
      return;
    }
    const llm::Usage one = llm::UsageFromJson(*u);
    auto model = j->find("model");
    const std::string name = model != j->end() && model->is_string() ? model->get<std::string>() : "";
    spend.usage += one;
    ++spend.calls;
    if (!name.empty() && spend.models.size() < 16) spend.models.insert(name);
    const std::optional<double> priced = prices.Cost(name, one);
    spend.cost_usd = spend.cost_usd && priced ? std::optional<double>(*spend.cost_usd + *priced) : std::nullopt;
  });
  return spend;
}

Status UsageJournal::Append(const fs::path& path, const CopyOf& copy_of, const llm::Usage& u,
                            const std::string& model) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!journal_ || journal_->path() != path) {
    journal_.reset();
    std::unique_ptr<JournalCopy> copy = copy_of ? copy_of() : nullptr;
    int64_t held = 0;
    if (copy) {
      auto r = Journal::Reconcile(path, *copy);
      if (r.ok()) {
        held = *r;
      } else {
        LogWarning("journal " + path.string() + ": no copy in the store (" + r.status().message() + ")");
        copy.reset();
      }
    }
    MATES_ASSIGN_OR_RETURN(Journal j, Journal::Open(path));
    if (copy) j.CopyTo(std::move(copy), held);
    journal_.emplace(std::move(j));
  }
  return journal_->AppendUsage(u, model, /*send=*/true);
}

namespace {

// One usage line into `st`'s counts.
Status AddUsageLine(const Json& j, JournalState* st);

// Rebuilds a conversation message by message, as the API would take it.
class Replay {
 public:
  explicit Replay(JournalState* st) : st_(st) {}

  Status Add(llm::ChatMessage m) {
    if (m.content.empty()) return Status::InvalidArgument("an empty message");
    auto& msgs = st_->messages;
    if (msgs.empty() && m.role != llm::Role::kUser) {
      return Status::InvalidArgument("the conversation starts with the assistant");
    }
    const bool merge = !msgs.empty() && msgs.back().role == m.role;
    if (m.role == llm::Role::kAssistant) {
      for (const auto& b : m.content) {
        if (b.type == llm::BlockType::kToolResult) return Status::InvalidArgument("a tool_result from the assistant");
        if (b.type != llm::BlockType::kToolUse) continue;
        if (!seen_tool_ids_.insert(b.id).second) {
          return Status::InvalidArgument("tool_use id " + b.id + " appears twice");
        }
      }
    } else {
      // Each tool_result answers a tool_use of the assistant message just
      // before, once.
      std::set<std::string> asked;
      size_t prev = merge ? msgs.size() - 2 : msgs.size() - 1;
      if (!msgs.empty() && (merge ? msgs.size() >= 2 : true) && msgs[prev].role == llm::Role::kAssistant) {
        for (const auto& b : msgs[prev].content) {
          if (b.type == llm::BlockType::kToolUse) asked.insert(b.id);
        }
      }
      if (!merge) answered_.clear();
      for (const auto& b : m.content) {
        if (b.type == llm::BlockType::kToolUse) return Status::InvalidArgument("a tool_use from the user");
        if (b.type != llm::BlockType::kToolResult) continue;
        if (asked.count(b.tool_use_id) == 0) {
          return Status::InvalidArgument("a tool_result for " + b.tool_use_id +
                                         ", which the message before did not ask for");
        }
        if (!answered_.insert(b.tool_use_id).second) {
          return Status::InvalidArgument("a second tool_result for " + b.tool_use_id);
        }
      }
    }
    if (merge) {
      for (auto& b : m.content) msgs.back().content.push_back(std::move(b));
    } else {
      // An assistant turn after an unanswered call: the calls were never
      // answered (the API refuses that).
      if (m.role == llm::Role::kAssistant && !msgs.empty()) {
        size_t calls = 0;
        if (msgs.size() >= 2) {
          for (const auto& b : msgs[msgs.size() - 2].content) calls += b.type == llm::BlockType::kToolUse ? 1 : 0;
        }
        if (answered_.size() < calls) return Status::InvalidArgument("a tool_use left unanswered before the next reply");
      }
      msgs.push_back(std::move(m));
    }
    return Status::Ok();
  }

  void Reset() {
    st_->messages.clear();
    seen_tool_ids_.clear();
    answered_.clear();
  }

 private:
  JournalState* st_;
  std::set<std::string> seen_tool_ids_;
  std::set<std::string> answered_;  // tool_results of the current user message
};

void AddIds(const Json* ids, std::set<std::string>* into) {
  if (ids == nullptr) return;
  for (const auto& id : *ids) {
    if (id.is_string()) into->insert(id.get<std::string>());
  }
}

// Applies one journal line; a problem means replay stops before it, and
// nothing of the line was applied (every check comes before any change).
Status ApplyLine(const Json& j, JournalState* st, Replay* replay) {
  MATES_ASSIGN_OR_RETURN(std::string kind, JsonString(j, "kind", true));
  if (kind == "message") {
    MATES_ASSIGN_OR_RETURN(const Json* jm, JsonObjectField(j, "message", true));
    MATES_ASSIGN_OR_RETURN(const Json* delivered, JsonArrayField(j, "delivered", false));
    MATES_ASSIGN_OR_RETURN(llm::ChatMessage m, llm::MessageFromJson(*jm));
    MATES_RETURN_IF_ERROR(replay->Add(std::move(m)));
    AddIds(delivered, &st->delivered);
    st->moved_to.clear();  // it went on here
    return Status::Ok();
  }
  if (kind == "moved") {
    MATES_ASSIGN_OR_RETURN(std::string team, JsonString(j, "team", true));
    MATES_RETURN_IF_ERROR(ValidateName("moved-to team name", team));
    st->moved_to = std::move(team);
    return Status::Ok();
  }
  if (kind == "compact") {
    MATES_ASSIGN_OR_RETURN(const Json* msgs, JsonArrayField(j, "messages", true));
    JournalState scratch;
    Replay fresh(&scratch);
    for (const auto& jm : *msgs) {
      MATES_ASSIGN_OR_RETURN(llm::ChatMessage m, llm::MessageFromJson(jm));
      MATES_RETURN_IF_ERROR(fresh.Add(std::move(m)));
    }
    replay->Reset();
    for (auto& m : scratch.messages) MATES_RETURN_IF_ERROR(replay->Add(std::move(m)));
    ++st->compactions;
    st->moved_to.clear();  // the conversation came (back) here
    return Status::Ok();
  }
  if (kind == "delivered") {
    MATES_ASSIGN_OR_RETURN(const Json* ids, JsonArrayField(j, "ids", true));
    AddIds(ids, &st->delivered);
    return Status::Ok();
  }
  if (kind == "usage") return AddUsageLine(j, st);
  if (kind == "place") {
    MATES_ASSIGN_OR_RETURN(std::string place, JsonString(j, "place", true));
    st->place = std::move(place);
    return Status::Ok();
  }
  return Status::Ok();  // a kind from a later version: nothing to replay
}

Status AddUsageLine(const Json& j, JournalState* st) {
  MATES_ASSIGN_OR_RETURN(const Json* u, JsonObjectField(j, "usage", true));
  llm::Usage one = llm::UsageFromJson(*u);
  st->usage += one;
  ++st->calls;
  auto model = j.find("model");
  std::string name = model != j.end() && model->is_string() ? model->get<std::string>() : "";
  if (name.size() > 200) name.clear();  // not a model name
  if (st->usage_by_model.size() < 64 || st->usage_by_model.count(name) > 0) {
    st->usage_by_model[name] += one;
  } else {
    st->usage_by_model[""] += one;  // a journal naming countless models: priced as unknown
  }
  return Status::Ok();
}

// The usage lines of a journal's text, each added to `st` as it is read;
// returned are those that held usage (a torn tail is not a line).
std::vector<std::string_view> UsageLines(std::string_view text, JournalState* st) {
  std::vector<std::string_view> lines;
  ForEachWholeLine(text, [&](std::string_view line) {
    if (!IsUsageLine(line)) return;
    auto j = ParseJson(line);
    if (j.ok() && j->is_object() && AddUsageLine(*j, st).ok()) lines.push_back(line);
  });
  return lines;
}

}  // namespace

Result<JournalState> Journal::Load(const fs::path& path) {
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return JournalState{};
    return data.status();
  }
  return ReplayText(*data, path.string());
}

JournalState Journal::UsageOf(std::string_view text) {
  JournalState st;
  (void)UsageLines(text, &st);
  return st;
}

std::string ToolResultText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const auto& c : content) {
      if (StringOr(c, "type") == "text") out += StringOr(c, "text");
    }
  }
  return out;
}

Result<JournalState> Journal::LoadUsage(const fs::path& path) {
  // Read in pieces, keeping only the usage line at hand: a journal of any
  // size (a gigabyte, DESIGN §31) costs a megabyte. A usage line is short;
  // one over kMaxUsageLine is not one.
  constexpr size_t kChunk = 1 << 20, kMaxUsageLine = 64 << 10;
  constexpr std::string_view kPrefix = R"({"kind":"usage")";
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::NotFound("no journal " + path.string());
    return Status::FromErrno("open " + path.string(), errno);
  }
  JournalState st;
  std::string line;       // the start of the line at hand, while it may be a usage line
  bool skipping = false;  // the line at hand is not one
  std::vector<char> buf(kChunk);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read " + path.string(), errno);
    if (n == 0) break;
    for (std::string_view chunk(buf.data(), static_cast<size_t>(n)); !chunk.empty();) {
      const size_t nl = chunk.find('\n');
      if (!skipping) {
        line.append(chunk.substr(0, nl));
        const size_t k = std::min(line.size(), kPrefix.size());
        skipping = line.size() > kMaxUsageLine || line.compare(0, k, kPrefix.substr(0, k)) != 0;
        if (skipping) line.clear();
      }
      if (nl == std::string_view::npos) break;
      if (!skipping && line.size() >= kPrefix.size()) {
        auto j = ParseJson(line);
        if (j.ok() && j->is_object()) (void)AddUsageLine(*j, &st);
      }
      line.clear();
      skipping = false;
      chunk.remove_prefix(nl + 1);
    }
  }
  return st;  // a torn last line is not a line
}

JournalState Journal::ReplayText(std::string_view text, const std::string& name) {
  JournalState st;
  const std::string_view* data = &text;
  const std::string path = name;
  Replay replay(&st);
  size_t start = 0, line_no = 0;
  while (start < data->size()) {
    size_t end = data->find('\n', start);
    if (end == std::string::npos) break;  // torn tail
    ++line_no;
    std::string_view line(data->data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto j = ParseJson(line);
    if (!j.ok() || !j->is_object()) {
      LogWarning("journal " + path + ":" + std::to_string(line_no) + ": skipping a line that is not a JSON object");
      continue;
    }
    Status s = ApplyLine(*j, &st, &replay);
    if (!s.ok()) {
      st.problem = JournalProblem{line_no, s.message()};
      break;
    }
  }
  return st;
}

Result<fs::path> Journal::Rewrite(const fs::path& path, const JournalState& state) {
  fs::path aside = path;
  aside += ".unreplayable-" + std::to_string(static_cast<int64_t>(WallSeconds()));
  std::error_code ec;
  fs::rename(path, aside, ec);
  if (ec) return Status::IOError("move " + path.string() + " aside: " + ec.message());
  MATES_ASSIGN_OR_RETURN(Journal j, Open(path));
  MATES_RETURN_IF_ERROR(j.AppendCompaction(state.messages, aside.string()));
  if (!state.delivered.empty()) {
    MATES_RETURN_IF_ERROR(j.AppendDelivered(std::vector<std::string>(state.delivered.begin(), state.delivered.end())));
  }
  // What was spent stays spent: every usage line comes along, those past
  // the line replay stopped at too (budgets and `mates usage` count them).
  auto old = ReadFile(aside);
  if (!old.ok()) return old.status();
  JournalState spent;
  for (std::string_view line : UsageLines(*old, &spent)) MATES_RETURN_IF_ERROR(j.Append(std::string(line)));
  return aside;
}

}  // namespace mates::agent
