// See hook_calls.h.
#include "tools/hook_calls.h"

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "tools/builtin_tools.h"

namespace mates::tools {
namespace {

struct Renamed {
  const char* mates;
  const char* claude;
};
constexpr Renamed kRenamed[] = {
    {"bash", "Bash"}, {"read_file", "Read"}, {"write_file", "Write"}, {"edit_file", "Edit"}};

std::string ClaudeName(const std::string& tool) {
  for (const auto& r : kRenamed) {
    if (tool == r.mates) return r.claude;
  }
  return tool;
}

// The file tools' other keys: mates' name, Claude Code's.
constexpr std::pair<const char*, const char*> kFileKeys[] = {
    {"content", "content"}, {"old_text", "old_string"}, {"new_text", "new_string"},
    {"replace_all", "replace_all"}, {"offset", "offset"}, {"limit", "limit"}};

// A key of `from` copied to `to` under another name, if there.
void Move(const Json& from, const char* key, Json& to, const char* as) {
  auto it = from.find(key);
  if (it != from.end()) to[as] = *it;
}

}  // namespace

std::vector<std::string> HookToolNames(const std::string& tool) {
  // Either name given (`mates hooks test` takes Claude Code's too): the
  // call is mates' tool.
  for (const auto& r : kRenamed) {
    if (tool == r.claude) return {r.claude, r.mates};
  }
  const std::string claude = ClaudeName(tool);
  if (claude == tool) return {tool};
  return {claude, tool};
}

namespace {

// A file or shell tool's input from one side's shape to the other's.
Json Translate(const std::string& tool, const Json& input, const ToolContext& ctx, bool to_claude) {
  if (!input.is_object()) return input;
  const fs::path root = ctx.WorkRoot().root();
  if (tool == "bash") {
    Json out = Json::object();
    Move(input, "command", out, "command");
    // Claude Code's Bash counts its timeout in milliseconds, mates' in seconds.
    auto t = input.find("timeout");
    if (t != input.end() && t->is_number()) {
      out["timeout"] = to_claude ? Json(static_cast<int64_t>(t->get<double>() * 1000)) : Json(t->get<double>() / 1000);
    }
    return out;
  }
  if (tool != "read_file" && tool != "write_file" && tool != "edit_file") return input;
  Json out = Json::object();
  auto p = input.find(to_claude ? "path" : "file_path");
  if (p != input.end() && p->is_string()) {
    fs::path path = fs::path(p->get<std::string>()).lexically_normal();
    if (to_claude) {
      out["file_path"] = (path.is_absolute() ? path : (root / path).lexically_normal()).string();
    } else {
      // Back to the work root's terms where it is under it; else as given
      // (the tool refuses what is outside).
      fs::path rel = path.lexically_relative(root);
      out["path"] = path.is_absolute() && !rel.empty() && *rel.begin() != ".." ? rel.string() : path.string();
    }
  }
  for (const auto& [mates, claude] : kFileKeys) {
    if (to_claude) {
      Move(input, mates, out, claude);
    } else {
      Move(input, claude, out, mates);
    }
  }
  return out;
}

}  // namespace

Json ClaudeToolInput(const std::string& tool, const Json& input, const ToolContext& ctx) {
  return Translate(tool, input, ctx, /*to_claude=*/true);
}

Json MatesToolInput(const std::string& tool, const Json& input, const ToolContext& ctx) {
  return Translate(tool, input, ctx, /*to_claude=*/false);
}

Json HookInput(const ToolContext& ctx) {
  Json in = Json::object();
  const std::string team = ctx.team.empty() ? "none" : ctx.team;
  in["session_id"] = ctx.agent + "@" + team;
  in["transcript_path"] = ctx.team.empty() ? "" : ctx.ws.JournalPath(ctx.team, ctx.agent).string();
  in["cwd"] = ctx.WorkRoot().root().string();
  in["permission_mode"] = ctx.plan_mode ? "plan" : "default";
  in["team_name"] = ctx.team;
  in["agent_name"] = ctx.agent;
  return in;
}

hooks::Launch HookLaunch(const ToolContext& ctx) {
  hooks::Launch l;
  l.sandbox = ctx.sandbox;
  l.place = ctx.Place();
  l.env = BashEnvironment(ctx);
  // Claude Code's name for the project's root, which its hooks use.
  l.env.push_back("CLAUDE_PROJECT_DIR=" + ctx.ws.root().string());
  l.cwd = ctx.WorkRoot().root();
  return l;
}

hooks::Outcome RunHooks(const ToolContext& ctx, hooks::Event e, const std::vector<std::string>& subjects,
                        Json input) {
  if (!ctx.hooks || !ctx.hooks->Wants(e, subjects)) return {};
  hooks::Outcome o = ctx.hooks->Run(e, subjects, std::move(input), HookLaunch(ctx));
  for (const auto& err : o.errors) {
    LogWarning(ctx.agent + ": " + std::string(hooks::EventName(e)) + ": " + err);
  }
  return o;
}

}  // namespace mates::tools
