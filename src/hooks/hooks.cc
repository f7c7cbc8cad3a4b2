// See hooks.h.
#include "hooks/hooks.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/bounded_regex.h"
#include "core/clock.h"
#include "core/config_yaml.h"
#include "core/files.h"
#include "core/log.h"
#include "core/process_tree.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "sandbox/launcher.h"

namespace mates::hooks {
namespace {

constexpr size_t kMaxHookOutput = 1 << 20;  // each stream
constexpr size_t kMaxReason = 16 << 10;     // what one hook tells the model
constexpr size_t kMaxHooksPerEvent = 32;

struct EventEntry {
  Event event;
  std::string_view name;
};
constexpr EventEntry kEvents[] = {
    {Event::kPreToolUse, "PreToolUse"},     {Event::kPostToolUse, "PostToolUse"},
    {Event::kUserPromptSubmit, "UserPromptSubmit"}, {Event::kSessionStart, "SessionStart"},
    {Event::kStop, "Stop"},                 {Event::kSubagentStop, "SubagentStop"},
    {Event::kTeammateIdle, "TeammateIdle"}, {Event::kTaskCreated, "TaskCreated"},
    {Event::kTaskCompleted, "TaskCompleted"}, {Event::kMergeQueued, "MergeQueued"},
    {Event::kMergeDecided, "MergeDecided"},
};

std::string Trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string Shown(const std::string& command) { return "`" + CutUtf8(command, 80) + "`"; }

}  // namespace

std::string_view EventName(Event e) {
  for (const auto& x : kEvents) {
    if (x.event == e) return x.name;
  }
  return "?";
}

std::optional<Event> EventOf(std::string_view name) {
  for (const auto& x : kEvents) {
    if (x.name == name) return x.event;
  }
  return std::nullopt;
}

const std::vector<Event>& AllEvents() {
  static const std::vector<Event> all = [] {
    std::vector<Event> v;
    for (const auto& x : kEvents) v.push_back(x.event);
    return v;
  }();
  return all;
}

bool HookGroup::Matches(const std::vector<std::string>& subjects) const {
  if (!pattern) return true;
  if (subjects.empty()) return true;  // an event without a subject: matchers do not apply
  return std::any_of(subjects.begin(), subjects.end(),
                     [&](const std::string& s) { return std::regex_match(s, *pattern); });
}

bool HookSet::Empty() const {
  for (const auto& s : sources) {
    if (s.trusted && !s.events.empty()) return false;
  }
  return true;
}

namespace {

// One hook of a group, `hw` where it is (YAML's exceptions are the
// caller's).
Result<HookCommand> ParseHookCommand(const YAML::Node& h, const std::string& hw) {
  if (!h.IsMap()) return Status::InvalidArgument(hw + ": must be {type: command, command: …}");
  HookCommand c;
  // The kind first: Claude Code's other kinds (prompt, agent,
  // http) have settings of their own.
  const std::string type = h["type"] && h["type"].IsScalar() ? h["type"].as<std::string>() : "";
  if (type != "command") {
    return Status::InvalidArgument(hw + ".type: '" + type + "': mates runs command hooks only");
  }
  for (const auto& hk : h) {
    const std::string k = hk.first.as<std::string>();
    if (!hk.second.IsScalar()) return Status::InvalidArgument(hw + "." + k + ": must be a scalar");
    if (k == "type") {
      continue;
    } else if (k == "command") {
      c.command = hk.second.as<std::string>();
    } else if (k == "timeout") {
      double t = 0;
      try {
        t = hk.second.as<double>();
      } catch (const YAML::Exception&) {
        return Status::InvalidArgument(hw + ".timeout: must be a number of seconds");
      }
      if (!(t > 0) || t > kMaxTimeoutS) {
        return Status::InvalidArgument(hw + ".timeout: must be more than 0 and at most 3600 seconds");
      }
      c.timeout_s = t;
    } else if (k == "statusMessage" || k == "description") {
      // Claude Code's words for people: accepted, not needed here.
    } else {
      return Status::InvalidArgument(hw + "." + k + ": not a setting (type, command, timeout)");
    }
  }
  if (Trimmed(c.command).empty()) return Status::InvalidArgument(hw + ".command: is empty");
  if (c.command.size() > 64 * 1024) return Status::InvalidArgument(hw + ".command: longer than 64 KiB");
  return c;
}

}  // namespace

Result<std::map<Event, std::vector<HookGroup>>> ParseHooksSection(const std::string& text, const std::string& origin) {
  std::map<Event, std::vector<HookGroup>> out;
  MATES_ASSIGN_OR_RETURN(YAML::Node root, ParseConfigYaml(text, origin));
  if (root.IsNull()) return out;
  YAML::Node section = root["hooks"];
  if (!section || section.IsNull()) return out;
  const std::string at = origin + ": hooks";
  if (!section.IsMap()) return Status::InvalidArgument(at + ": must be a map of events (PreToolUse: [...], …)");
  try {
    for (const auto& ev : section) {
      const std::string name = ev.first.as<std::string>();
      const std::string where = at + "." + name;
      auto event = EventOf(name);
      if (!event) {
        std::string names;
        for (const auto& x : kEvents) names += (names.empty() ? "" : ", ") + std::string(x.name);
        return Status::InvalidArgument(where + ": not an event (" + names + ")");
      }
      if (!ev.second.IsSequence()) {
        return Status::InvalidArgument(where + ": must be a list of {matcher, hooks: [{type: command, command}]}");
      }
      std::vector<HookGroup>& groups = out[*event];
      size_t i = 0;
      for (const auto& g : ev.second) {
        const std::string gw = where + "[" + std::to_string(i++) + "]";
        if (!g.IsMap()) return Status::InvalidArgument(gw + ": must be a map with matcher and hooks");
        HookGroup group;
        for (const auto& kv : g) {
          const std::string key = kv.first.as<std::string>();
          if (key == "matcher") {
            if (!kv.second.IsScalar()) return Status::InvalidArgument(gw + ".matcher: must be a string");
            group.matcher = kv.second.as<std::string>();
          } else if (key == "hooks") {
            if (!kv.second.IsSequence()) return Status::InvalidArgument(gw + ".hooks: must be a list");
            size_t j = 0;
            for (const auto& h : kv.second) {
              const std::string hw = gw + ".hooks[" + std::to_string(j++) + "]";
              MATES_ASSIGN_OR_RETURN(HookCommand c, ParseHookCommand(h, hw));
              group.hooks.push_back(std::move(c));
            }
          } else {
            return Status::InvalidArgument(gw + "." + key + ": not a setting (matcher, hooks)");
          }
        }
        if (group.matcher != "" && group.matcher != "*") {
          auto re = CompileBoundedRegex(group.matcher);
          if (!re.ok()) return Status::InvalidArgument(gw + ".matcher: " + re.status().message());
          group.pattern = std::make_shared<const std::regex>(std::move(*re));
        }
        size_t total = 0;
        for (const auto& other : groups) total += other.hooks.size();
        if (total + group.hooks.size() > kMaxHooksPerEvent) {
          return Status::InvalidArgument(where + ": more than " + std::to_string(kMaxHooksPerEvent) + " hooks");
        }
        groups.push_back(std::move(group));
      }
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(at + ": " + e.what());
  }
  return out;
}

Result<HookSet> LoadHooks(const fs::path& workspace, const fs::path& user_config, bool workspace_trusted) {
  HookSet set;
  const auto read = [&](const fs::path& file, bool trusted) -> Status {
    auto text = ReadFilePrefix(file, kMaxConfigBytes + 1);
    if (!text.ok()) return text.status().code() == StatusCode::kNotFound ? Status::Ok() : text.status();
    auto events = ParseHooksSection(*text, file.string());
    if (!events.ok()) {
      // An untrusted file's mistakes are not this run's: it is not used.
      if (!trusted) {
        set.notes.push_back(file.string() + ": its hooks are not used (" + events.status().message() + ")");
        return Status::Ok();
      }
      return events.status();
    }
    if (events->empty()) return Status::Ok();
    if (!trusted) {
      set.notes.push_back(file.string() + " has hooks, not run: the workspace is not trusted as it is (mates trust)");
    }
    set.sources.push_back({file, trusted, std::move(*events)});
    return Status::Ok();
  };
  MATES_RETURN_IF_ERROR(read(user_config, true));
  MATES_RETURN_IF_ERROR(read(workspace / ".mates" / "config.yaml", workspace_trusted));
  return set;
}

bool Runner::Wants(Event e, const std::vector<std::string>& subjects) const {
  for (const auto& s : set_.sources) {
    if (!s.trusted) continue;
    auto it = s.events.find(e);
    if (it == s.events.end()) continue;
    for (const auto& g : it->second) {
      if (!g.hooks.empty() && g.Matches(subjects)) return true;
    }
  }
  return false;
}

void ReadReply(Event e, int exit_code, bool timed_out, const std::string& out, const std::string& err,
               const std::string& command, Outcome* into) {
  const auto block = [&](const std::string& why) {
    into->blocked = true;
    const std::string said = CutUtf8(Trimmed(why), kMaxReason);
    into->reason += (into->reason.empty() ? "" : "\n") + (said.empty() ? "blocked by the hook " + Shown(command) : said);
  };
  if (timed_out) {
    into->errors.push_back("the hook " + Shown(command) + " took too long and was killed with all it started");
    return;
  }
  if (exit_code == 2) {
    block(err);
    return;
  }
  if (exit_code != 0) {
    const std::string tail = Trimmed(err.size() > 2000 ? err.substr(err.size() - 2000) : err);
    into->errors.push_back("the hook " + Shown(command) + (exit_code < 0 ? " was killed" : " exited " + std::to_string(exit_code)) +
                           (tail.empty() ? "" : ": " + tail));
    return;
  }
  const std::string text = Trimmed(out);
  if (text.empty()) return;
  if (text.front() != '{') {
    // Plain output is context where Claude Code takes it so.
    if (e == Event::kSessionStart || e == Event::kUserPromptSubmit) {
      into->context += (into->context.empty() ? "" : "\n") + CutUtf8(text, kMaxReason);
    }
    return;
  }
  auto j = ParseJson(text);
  if (!j.ok() || !j->is_object()) {
    into->errors.push_back("the hook " + Shown(command) + " answered what is not a JSON object: " +
                           CutUtf8(text, 200));
    return;
  }
  const auto str = [](const Json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (auto c = j->find("continue"); c != j->end() && c->is_boolean() && !c->get<bool>()) {
    block(str(*j, "stopReason").empty() ? "a hook stopped this" : str(*j, "stopReason"));
  }
  if (str(*j, "decision") == "block") block(str(*j, "reason"));
  if (auto h = j->find("hookSpecificOutput"); h != j->end() && h->is_object()) {
    const std::string decision = str(*h, "permissionDecision");
    const std::string why = str(*h, "permissionDecisionReason");
    if (decision == "deny") block(why);
    // Nobody here is asked: what a hook would put to a person is refused.
    if (decision == "ask") block("a hook asks a person to approve this" + (why.empty() ? "" : ": " + why));
    if (auto u = h->find("updatedInput"); u != h->end() && u->is_object()) into->updated_input = *u;
    const std::string more = str(*h, "additionalContext");
    if (!more.empty()) into->context += (into->context.empty() ? "" : "\n") + CutUtf8(more, kMaxReason);
  }
}

Runner::Runner(HookSet set) : set_(std::move(set)) {}
Runner::~Runner() = default;

Outcome Runner::Run(Event e, const std::vector<std::string>& subjects, Json input, const Launch& launch) const {
  Outcome outcome;
  std::vector<const HookCommand*> chosen;
  for (const auto& s : set_.sources) {
    if (!s.trusted) continue;
    auto it = s.events.find(e);
    if (it == s.events.end()) continue;
    for (const auto& g : it->second) {
      if (!g.Matches(subjects)) continue;
      for (const auto& h : g.hooks) chosen.push_back(&h);
    }
  }
  if (chosen.empty()) return outcome;
  input["hook_event_name"] = std::string(EventName(e));
  const std::string stdin_data = DumpJson(input);
  std::vector<Result<SubprocessResult>> ran(chosen.size(), Status::Internal("not run"));
  // In a sandbox, from the agent's hook launcher (a launcher of hooks
  // only: a model's command never shares one with them).
  std::shared_ptr<sandbox::Launcher> launcher = launch.sandbox->LauncherFor("hooks", launch.place, launch.cwd.string());
  // At once, each with its own timeout; killed with all it started when
  // that runs out.
  std::vector<std::thread> threads;
  for (size_t i = 0; i < chosen.size(); ++i) {
    threads.emplace_back([&, i] {
      const std::string input = stdin_data.empty() ? std::string("{}") : stdin_data;
      if (launcher != nullptr) {
        sandbox::Launcher::Job job;
        job.command = chosen[i]->command;
        job.input = input;
        job.env = launch.env;
        job.timeout_s = chosen[i]->timeout_s;
        job.max_output = kMaxHookOutput;
        ran[i] = launcher->Run(job);
        // Not sent: it did not run, and runs in a sandbox of its own.
        // Sent and unanswered: it may have run; never twice.
        if (ran[i].ok() || ran[i].status().code() != StatusCode::kUnavailable) {
          if (!ran[i].ok()) ran[i] = Status::Internal("the agent's hook launcher failed: " + ran[i].status().message());
          return;
        }
      }
      SubprocessOptions o;
      // Claude Code's shell form on Linux: `sh -c` (so a hook written for
      // it parses the same; bash-only syntax needs `bash -c` there too).
      o.argv = {"/bin/sh", "-c", chosen[i]->command};
      o.env = launch.env;
      o.cwd = launch.cwd.string();
      o.stdin_data = input;
      o.timeout_s = chosen[i]->timeout_s;
      o.max_output = kMaxHookOutput;
      // What a hook starts dies with it: in a sandbox, with its pid
      // namespace; without one, by its tag (a look through /proc, ~3 ms a
      // hook: bench/sandbox_bench hooks).
      if (launch.sandbox->mode() == sandbox::Mode::kOff) o.tag = NewProcessTag();
      auto confined = launch.sandbox->Wrap(launch.place, std::move(o));
      if (!confined.ok()) {
        ran[i] = confined.status();
        return;
      }
      ran[i] = RunSubprocess(confined->options);
      confined->keep.reset();
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < chosen.size(); ++i) {
    ++outcome.ran;
    const auto& r = ran[i];
    if (!r.ok()) {
      outcome.errors.push_back("the hook " + Shown(chosen[i]->command) + " could not start: " + r.status().message());
      continue;
    }
    const int code = r->term_signal != 0 ? -1 : r->exit_code;
    ReadReply(e, code, r->timed_out, r->out, r->err, chosen[i]->command, &outcome);
  }
  return outcome;
}

}  // namespace mates::hooks
