#include "agent/activity.h"

#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/usage.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/log.h"

namespace mates::agent {
namespace {

constexpr size_t kMaxDoingBytes = 90;

// `s` cut to at most `max` bytes, never inside a UTF-8 sequence, with "…"
// when cut.
std::string Cut(std::string s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  s.resize(end);
  return s + "…";
}

Result<ActivityState> ParseState(const std::string& s) {
  for (ActivityState st : {ActivityState::kThinking, ActivityState::kTool, ActivityState::kIdle,
                           ActivityState::kStopped}) {
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
  return call.name + "(" + Cut(std::move(what), kMaxDoingBytes) + ")";
}

ActivityFile::ActivityFile(fs::path path, std::string agent, std::string model) : path_(std::move(path)) {
  a_.agent = std::move(agent);
  a_.model = std::move(model);
  a_.pid = ::getpid();
}

void ActivityFile::Thinking() { Enter(ActivityState::kThinking, ""); }
void ActivityFile::Tool(const llm::ContentBlock& call) { Enter(ActivityState::kTool, DescribeCall(call)); }
void ActivityFile::Idle() { Enter(ActivityState::kIdle, ""); }
void ActivityFile::Stopped(const std::string& why) { Enter(ActivityState::kStopped, Cut(why, 200)); }

void ActivityFile::SetUsage(const llm::Usage& total, int calls) {
  std::lock_guard<std::mutex> lock(mu_);
  a_.tokens = total;
  a_.calls = calls;
  a_.cost_usd = CostUsd(a_.model, total);
  WriteLocked();
}

void ActivityFile::Enter(ActivityState state, std::string doing) {
  std::lock_guard<std::mutex> lock(mu_);
  if (a_.since == 0 || a_.state != state || a_.doing != doing) a_.since = WallSeconds();
  a_.state = state;
  a_.doing = std::move(doing);
  WriteLocked();
}

void ActivityFile::WriteLocked() {
  a_.updated_at = WallSeconds();
  // What is shown is not worth failing an agent over: a warning says why
  // the status is stale.
  WarnIfFailed(WriteFileAtomic(path_, DumpJson(ActivityToJson(a_)) + "\n"), "the activity file of " + a_.agent);
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
  return a;
}

Result<Activity> ReadActivity(const fs::path& path) {
  MATES_ASSIGN_OR_RETURN(std::string text, ReadFilePrefix(path, 64 << 10));
  auto j = ParseJson(text);
  if (!j.ok()) return Status::InvalidArgument(path.string() + ": " + j.status().message());
  auto a = ActivityFromJson(*j);
  if (!a.ok()) return Status::InvalidArgument(path.string() + ": " + a.status().message());
  return a;
}

}  // namespace mates::agent
