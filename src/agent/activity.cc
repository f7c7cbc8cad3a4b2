#include "agent/activity.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "agent/usage.h"
#include "core/clock.h"
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


ActivityFile::ActivityFile(fs::path path, std::string agent, std::string model, SettledWriter& writer,
                           const PriceTable& prices, std::function<void(const std::string& document)> also)
    : path_(std::move(path)), writer_(writer), prices_(prices), slot_(std::make_shared<SettledWriter::Slot>()) {
  slot_->also = std::move(also);
  a_.agent = std::move(agent);
  a_.model = std::move(model);
  a_.pid = ::getpid();
  a_.since = a_.updated_at = WallSeconds();  // idle since it began
  slot_->path = path_;
  slot_->spare = SpareIn(fs::path(path_).parent_path(), fs::path(path_).filename().string());
  slot_->what = "the activity file of " + a_.agent;
}

ActivityFile::~ActivityFile() { writer_.Flush(); }

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
  a_.cost_usd = prices_.Cost(a_.model, total);
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
  a_.cost_usd = prices_.Cost(a_.model, total);
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
  // Turned into text by the writer, the latest only.
  writer_.Post(slot_, [a = a_] { return DumpJson(ActivityToJson(a)) + "\n"; });
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
