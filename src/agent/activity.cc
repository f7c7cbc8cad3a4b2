#include "agent/activity.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/usage.h"
#include "core/clock.h"
#include "core/guarded.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/text.h"

namespace mates::agent {
namespace {

constexpr size_t kMaxDoingBytes = 90;

Result<ActivityState> ParseState(const std::string& s) {
  for (ActivityState st : {ActivityState::kThinking, ActivityState::kTool, ActivityState::kIdle,
                           ActivityState::kStopped, ActivityState::kRetrying, ActivityState::kError}) {
    if (ActivityStateName(st) == s) return st;
  }
  return Status::InvalidArgument("unknown activity state '" + s + "'");
}

}  // namespace

std::string_view ActivityStateName(ActivityState s) {
  switch (s) {
    case ActivityState::kThinking: return "thinking";
    case ActivityState::kTool: return "tool";
    case ActivityState::kIdle: return "idle";
    case ActivityState::kStopped: return "stopped";
    case ActivityState::kRetrying: return "retrying";
    case ActivityState::kError: return "error";
  }
  return "idle";
}

std::string DescribeCall(const llm::ContentBlock& call) {
  auto input = ParseJson(call.input_json);
  Json in = input.ok() && input->is_object() ? *input : Json::object();
  auto str = [&](const char* k) { return in.contains(k) && in[k].is_string() ? in[k].get<std::string>() : ""; };
  auto id = [&](const char* k) {
    return in.contains(k) ? "#" + (in[k].is_string() ? in[k].get<std::string>() : DumpJson(in[k])) : std::string();
  };
  std::string what;
  if (call.name == "bash") {
    what = str("command");
  } else if (call.name == "read_file" || call.name == "write_file" || call.name == "edit_file") {
    what = str("path");
  } else if (call.name == "TaskCreate") {
    what = str("subject");
  } else if (call.name == "TaskUpdate") {
    what = id("task_id");
    if (in.contains("status")) what += " " + str("status");
    if (in.contains("owner")) what += " owner=" + str("owner");
  } else if (call.name == "TaskGet") {
    what = id("task_id");
  } else if (call.name == "SendMessage") {
    std::string type = str("type").empty() ? "message" : str("type");
    std::string to = str("recipient");
    if (to.empty()) {
      // Without a recipient a response goes to whoever asked, a plan to the lead.
      to = type == "plan_approval_response" || type == "shutdown_response"  ? "the requester"
           : type == "plan_approval_request"                                 ? "the lead"
                                                                             : "?";
    }
    what = type == "broadcast" ? "everyone" : to;
    if (type != "message") what += ", " + type;
    std::string text = str("summary").empty() ? str("content") : str("summary");
    if (!text.empty()) what += ": " + text;
  } else if (call.name == "Task") {
    what = !str("name").empty() ? "teammate " + str("name") : str("description").empty() ? str("prompt") : str("description");
  } else if (call.name == "TeamCreate" || call.name == "TeamDelete" || call.name == "Skill") {
    what = str("name");
  } else if (call.name == "TaskOutput" || call.name == "TaskStop") {
    what = str("task_id");
  } else if (call.name != "TaskList") {
    what = call.input_json;
  }
  for (char& c : what) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return call.name + "(" + CutUtf8(what, kMaxDoingBytes) + ")";
}

// The latest state for one file, and whether it still has to be written.
struct ActivityFile::Slot {
  fs::path path, spare;
  std::string agent;
  std::function<void(const std::string&)> also;  // set before the first post
  Activity latest;                               // guarded by the writer's mutex
  bool queued = false;                           // guarded by the writer's mutex
};

namespace {

// One thread per process writes activity files, latest state first-come.
// Owned by a function-local static: joined at exit (a host that _exits
// calls FlushAll first).
//
// A change is written kSettle after the first change of its burst, with
// everything that came meanwhile: an agent's states come in bursts (a
// reply, its usage, a tool, the next call within a millisecond), and so do
// a team's (a level of tasks ending together). Written at once, each
// burst's dozens of file replacements took the CPU at the very moment the
// next claims and model calls were starting (a sixth of the process's CPU
// in team_bench). A person does not see 10 ms; Flush does not wait them out.
// A document is made from the latest state when it is written, on this
// thread: not at every change, on the agent's.
// Between bursts it sleeps until a change wakes it: a team that went
// idle costs nothing.
class ActivityWriter {
 public:
  using Slot = ActivityFile::Slot;
  static constexpr auto kSettle = ActivityFile::kSettle;

  static ActivityWriter& Get() {
    static ActivityWriter writer;
    return writer;
  }

  void Post(const std::shared_ptr<Slot>& slot, const Activity& a) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot->latest = a;
      if (!slot->queued) {
        if (queue_.empty()) burst_start_ = SteadyClock::now();
        slot->queued = true;
        queue_.push_back(slot);
      }
      if (!thread_.joinable())
        thread_ = std::thread([this] {
          NameThisThread("mates-activity");
          RunGuarded("the activity writer", [this] { Main(); });
        });
      wake = waiting_for_work_;
    }
    if (wake) work_cv_.notify_one();
  }

  void Flush() {
    std::unique_lock<std::mutex> lock(mu_);
    ++flushing_;
    work_cv_.notify_one();  // a settle under way ends
    idle_cv_.wait(lock, [this] { return queue_.empty() && writing_ == 0; });
    --flushing_;
  }

  ~ActivityWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Main() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (queue_.empty()) {
        if (stop_) return;  // all written
        waiting_for_work_ = true;
        work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        waiting_for_work_ = false;
        continue;
      }
      // A burst, written kSettle after its first change; posts meanwhile
      // join it (they do not wake the writer: waiting_for_work_ is false).
      work_cv_.wait_until(lock, burst_start_ + kSettle, [this] { return stop_ || flushing_ > 0; });
      while (!queue_.empty()) WriteOne(lock);
      idle_cv_.notify_all();
    }
  }

  // Writes the queue's first file; `lock` holds mu_, and holds it again after.
  void WriteOne(std::unique_lock<std::mutex>& lock) {
    std::shared_ptr<Slot> slot = std::move(queue_.front());
    queue_.pop_front();
    slot->queued = false;
    Activity latest = slot->latest;
    ++writing_;
    lock.unlock();
    // Whatever throws here (the store's copy, say) must not end the
    // writer: every later change of every agent, and every flush, depend
    // on it.
    RunGuarded("writing the activity of " + slot->agent, [&] {
      std::string doc = DumpJson(ActivityToJson(latest)) + "\n";
      Status s = ReplaceFileViaSpare(slot->path, doc, slot->spare);
      // A team archived or deleted under its agents: nothing to show any more.
      if (!s.ok() && s.code() != StatusCode::kNotFound && fs::exists(slot->path.parent_path())) {
        LogWarning("the activity file of " + slot->agent + ": " + s.message());
      }
      if (slot->also) slot->also(doc);
    });
    lock.lock();
    --writing_;
  }

  std::mutex mu_;
  // The writer waits on work_cv_ (woken only when it waits for work, by a
  // Flush or by the end); Flush waits on idle_cv_.
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::shared_ptr<Slot>> queue_;  // guarded by mu_
  int writing_ = 0;                          // guarded by mu_
  int flushing_ = 0;                         // guarded by mu_
  bool waiting_for_work_ = false;            // guarded by mu_: a post wakes it
  SteadyClock::time_point burst_start_;      // guarded by mu_: the queue's first change
  bool stop_ = false;                        // guarded by mu_
  std::thread thread_;
};

}  // namespace

ActivityFile::ActivityFile(fs::path path, std::string agent, std::string model,
                           std::function<void(const std::string& document)> also)
    : path_(std::move(path)), slot_(std::make_shared<Slot>()) {
  slot_->also = std::move(also);
  a_.agent = std::move(agent);
  a_.model = std::move(model);
  a_.pid = ::getpid();
  a_.since = a_.updated_at = WallSeconds();  // idle since it began
  slot_->path = path_;
  slot_->spare = SpareIn(fs::path(path_).parent_path(), fs::path(path_).filename().string());
  slot_->agent = a_.agent;
}

ActivityFile::~ActivityFile() { ActivityWriter::Get().Flush(); }

void ActivityFile::FlushAll() { ActivityWriter::Get().Flush(); }

void ActivityFile::Thinking() { Enter(ActivityState::kThinking, ""); }
void ActivityFile::Tool(const llm::ContentBlock& call) {
  std::lock_guard<std::mutex> lock(mu_);
  tool_call_ = DescribeCall(call);
  EnterLocked(ActivityState::kTool, tool_call_);
}
void ActivityFile::Progress(const std::string& note) {
  std::lock_guard<std::mutex> lock(mu_);
  if (a_.state != ActivityState::kTool) return;  // it ended meanwhile
  // A server's words: one line, nothing a terminal would obey (`status`).
  std::string line = ForTerminal(note, 200);
  std::replace(line.begin(), line.end(), '\n', ' ');
  a_.doing = tool_call_ + " — " + line;
  PostLocked();
}
void ActivityFile::Idle(const std::string& doing) {
  std::lock_guard<std::mutex> lock(mu_);
  a_.error.reset();
  EnterLocked(ActivityState::kIdle, doing);
}
void ActivityFile::Retrying(int attempt, int of, double delay_s, const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = WallSeconds();
  // One post with the state and its attempt together: a reader between two posts saw "retrying" with no detail.
  a_.state = ActivityState::kRetrying;
  a_.doing.clear();
  a_.since = now;
  a_.retry = Retry{attempt, of, now + std::max(0.0, delay_s), CutUtf8(cause, 300)};
  PostLocked();
}
void ActivityFile::Failed(const std::string& reason, const std::string& next) {
  std::lock_guard<std::mutex> lock(mu_);
  a_.error = TurnFailure{CutUtf8(reason, 500), WallSeconds(), CutUtf8(next, 200)};
  EnterLocked(ActivityState::kError, "");
}
void ActivityFile::Away(const std::string& where) {
  Enter(ActivityState::kIdle, CutUtf8(where, 200));
}
void ActivityFile::Stopped(const std::string& why) {
  Enter(ActivityState::kStopped, CutUtf8(why, 200));
}

void ActivityFile::SetUsage(const llm::Usage& total, int calls) {
  std::lock_guard<std::mutex> lock(mu_);
  a_.tokens = total;
  a_.calls = calls;
  a_.cost_usd = CostUsd(a_.model, total);
  PostLocked();
}

void ActivityFile::SetCliUsage(const std::string& from, const std::string& model, const llm::Usage& total,
                               int calls, std::optional<double> priced) {
  std::lock_guard<std::mutex> lock(mu_);
  a_.usage_from = CutUtf8(from, 200);
  a_.usage_unknown.clear();
  a_.model = CutUtf8(model, 200);
  a_.tokens = total;
  a_.calls = calls;
  a_.cost_usd = CostUsd(a_.model, total);
  if (!a_.cost_usd) a_.cost_usd = priced;
  PostLocked();
}

void ActivityFile::SetUsageUnknown(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  a_.usage_unknown = CutUtf8(why, 200);
  PostLocked();
}

void ActivityFile::Denied(const llm::ContentBlock& call, const std::string& why) {
  std::lock_guard<std::mutex> l(mu_);
  a_.denials.push_back({WallSeconds(), CutUtf8(DescribeCall(call) + ": " + why, 300)});
  if (a_.denials.size() > kMaxDenials) a_.denials.erase(a_.denials.begin());
  PostLocked();
}

void ActivityFile::Blocked(const std::string& event, const std::string& what) {
  std::lock_guard<std::mutex> l(mu_);
  a_.hook_blocks.push_back({WallSeconds(), event, CutUtf8(what, 300)});
  if (a_.hook_blocks.size() > kMaxDenials) a_.hook_blocks.erase(a_.hook_blocks.begin());
  PostLocked();
}

void ActivityFile::Enter(ActivityState state, std::string doing) {
  std::lock_guard<std::mutex> lock(mu_);
  EnterLocked(state, std::move(doing));
}

void ActivityFile::EnterLocked(ActivityState state, std::string doing) {
  if (a_.since == 0 || a_.state != state || a_.doing != doing) a_.since = WallSeconds();
  a_.state = state;
  a_.doing = std::move(doing);
  if (state != ActivityState::kRetrying) a_.retry.reset();
  PostLocked();
}

void ActivityFile::PostLocked() {
  a_.updated_at = WallSeconds();
  ActivityWriter::Get().Post(slot_, a_);  // turned into text by the writer, the latest only
}

Json ActivityToJson(const Activity& a) {
  Json j;
  j["agent"] = a.agent;
  j["state"] = std::string(ActivityStateName(a.state));
  j["doing"] = a.doing;
  j["since"] = a.since;
  j["updated_at"] = a.updated_at;
  j["pid"] = a.pid;
  j["model"] = a.model;
  j["calls"] = a.calls;
  j["tokens"] = {{"input", a.tokens.input_tokens},
                 {"output", a.tokens.output_tokens},
                 {"cache_write", a.tokens.cache_creation_input_tokens},
                 {"cache_read", a.tokens.cache_read_input_tokens}};
  j["cost_usd"] = a.cost_usd ? Json(*a.cost_usd) : Json(nullptr);
  if (!a.usage_from.empty()) j["usage_from"] = a.usage_from;
  if (!a.usage_unknown.empty()) j["usage_unknown"] = a.usage_unknown;
  if (!a.denials.empty()) {
    j["denials"] = Json::array();
    for (const auto& d : a.denials) j["denials"].push_back({{"at", d.at}, {"what", d.what}});
  }
  if (!a.hook_blocks.empty()) {
    j["hook_blocks"] = Json::array();
    for (const auto& b : a.hook_blocks) j["hook_blocks"].push_back({{"at", b.at}, {"event", b.event}, {"what", b.what}});
  }
  if (a.retry) j["retry"] = {{"attempt", a.retry->attempt}, {"of", a.retry->of}, {"at", a.retry->at},
                             {"cause", a.retry->cause}};
  if (a.error) j["error"] = {{"reason", a.error->reason}, {"at", a.error->at}, {"next", a.error->next}};
  return j;
}

Result<Activity> ActivityFromJson(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("an activity must be a JSON object");
  Activity a;
  MATES_ASSIGN_OR_RETURN(a.agent, JsonString(j, "agent", true));
  MATES_ASSIGN_OR_RETURN(std::string state, JsonString(j, "state", true));
  MATES_ASSIGN_OR_RETURN(a.state, ParseState(state));
  MATES_ASSIGN_OR_RETURN(a.doing, JsonString(j, "doing", false));
  MATES_ASSIGN_OR_RETURN(a.since, JsonNumber(j, "since", 0));
  MATES_ASSIGN_OR_RETURN(a.updated_at, JsonNumber(j, "updated_at", 0));
  MATES_ASSIGN_OR_RETURN(a.pid, JsonInt(j, "pid", false));
  MATES_ASSIGN_OR_RETURN(a.model, JsonString(j, "model", false));
  MATES_ASSIGN_OR_RETURN(int64_t calls, JsonInt(j, "calls", false));
  a.calls = static_cast<int>(std::clamp<int64_t>(calls, 0, 1 << 30));
  MATES_ASSIGN_OR_RETURN(const Json* t, JsonObjectField(j, "tokens", false));
  if (t != nullptr) {
    MATES_ASSIGN_OR_RETURN(a.tokens.input_tokens, JsonInt(*t, "input", false));
    MATES_ASSIGN_OR_RETURN(a.tokens.output_tokens, JsonInt(*t, "output", false));
    MATES_ASSIGN_OR_RETURN(a.tokens.cache_creation_input_tokens, JsonInt(*t, "cache_write", false));
    MATES_ASSIGN_OR_RETURN(a.tokens.cache_read_input_tokens, JsonInt(*t, "cache_read", false));
  }
  auto cost = j.find("cost_usd");
  if (cost != j.end() && cost->is_number()) a.cost_usd = cost->get<double>();
  for (auto [key, field] : {std::pair{"usage_from", &a.usage_from}, std::pair{"usage_unknown", &a.usage_unknown}}) {
    if (auto it = j.find(key); it != j.end() && it->is_string()) *field = CutUtf8(it->get<std::string>(), 200);
  }
  // Read like input: at most kMaxDenials, each cut short.
  if (auto d = j.find("denials"); d != j.end() && d->is_array()) {
    for (const auto& e : *d) {
      if (a.denials.size() >= kMaxDenials) break;
      if (!e.is_object() || !e.contains("what") || !e["what"].is_string()) continue;
      Denial one;
      one.at = e.contains("at") && e["at"].is_number() ? e["at"].get<double>() : 0;
      one.what = CutUtf8(e["what"].get<std::string>(), 300);
      a.denials.push_back(std::move(one));
    }
  }
  // The same: a shape it does not expect is left out, a text cut short.
  auto text = [](const Json& o, const char* key, size_t max) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? CutUtf8(it->get<std::string>(), max) : std::string();
  };
  auto number = [](const Json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  if (auto r = j.find("retry"); r != j.end() && r->is_object()) {
    Retry retry;
    retry.attempt = static_cast<int>(std::clamp(number(*r, "attempt"), 0.0, 1000.0));
    retry.of = static_cast<int>(std::clamp(number(*r, "of"), 0.0, 1000.0));
    retry.at = number(*r, "at");
    retry.cause = text(*r, "cause", 300);
    a.retry = std::move(retry);
  }
  if (auto hb = j.find("hook_blocks"); hb != j.end() && hb->is_array()) {
    for (const auto& b : *hb) {
      if (a.hook_blocks.size() >= kMaxDenials) break;
      if (!b.is_object()) continue;
      a.hook_blocks.push_back({number(b, "at"), text(b, "event", 40), text(b, "what", 300)});
    }
  }
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    a.error = TurnFailure{text(*e, "reason", 500), number(*e, "at"), text(*e, "next", 200)};
  }
  return a;
}

Result<Activity> ReadActivity(const fs::path& path) {
  MATES_ASSIGN_OR_RETURN(std::string text, ReadReplacedFile(path, 64 << 10));
  auto j = ParseJson(text);
  if (!j.ok()) return Status::InvalidArgument(path.string() + ": " + j.status().message());
  auto a = ActivityFromJson(*j);
  if (!a.ok()) return Status::InvalidArgument(path.string() + ": " + a.status().message());
  return a;
}

}  // namespace mates::agent
