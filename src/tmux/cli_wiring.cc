#include "tmux/cli_wiring.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"

namespace mates::tmux {
namespace {

std::string EnvOr(const std::map<std::string, std::string>& env, const std::string& name, const std::string& dflt) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? dflt : it->second;
}

// The file `dir/NAME.SUFFIX` holding `j`.
Result<std::string> WriteConfig(const std::filesystem::path& dir, const AgentConfig& a, const std::string& suffix,
                                const Json& j) {
  const std::filesystem::path file = dir / (a.name + "." + suffix);
  MATES_RETURN_IF_ERROR(WriteFileAtomic(file, DumpJsonPretty(j)));
  return file.string();
}

Json McpServerJson(const std::vector<std::string>& mcp_server) {
  return {{"command", mcp_server[0]},
          {"args", std::vector<std::string>(mcp_server.begin() + 1, mcp_server.end())}};
}

std::string TomlArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += (out.size() > 1 ? ", " : "") + TomlString(s);
  return out + "]";
}

}  // namespace

std::string McpToolName(CliPreset cli, std::string_view tool) {
  switch (cli) {
    case CliPreset::kGemini: return "mcp_mates_" + std::string(tool);
    case CliPreset::kOpenCode: return "mates_" + std::string(tool);
    default: return "mcp__mates__" + std::string(tool);
  }
}

std::string TomlString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04X", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::vector<std::string> CodexTelemetryArgs(const telemetry::OtlpConfig& otlp) {
  std::vector<std::string> args;
  // {otlp-http = {endpoint = "…", protocol = "binary", headers = {…}}}
  auto exporter = [&](const std::string& url) {
    std::string headers;
    for (const auto& line : otlp.headers) {
      const size_t colon = line.find(':');
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      headers += (headers.empty() ? "" : ", ") + TomlString(line.substr(0, colon)) + " = " + TomlString(value);
    }
    return "{otlp-http = {endpoint = " + TomlString(url) + ", protocol = " +
           TomlString(otlp.json ? "json" : "binary") + ", headers = {" + headers + "}}}";
  };
  for (const auto& [key, url] : {std::pair{"otel.exporter", &otlp.logs_url},
                                 std::pair{"otel.trace_exporter", &otlp.traces_url},
                                 std::pair{"otel.metrics_exporter", &otlp.metrics_url}}) {
    if (url->empty()) continue;
    args.push_back("-c");
    args.push_back(std::string(key) + "=" + exporter(*url));
  }
  return args;
}

namespace {

// Gemini CLI's settings come from its home's .gemini/settings.json: the
// system file it also reads is refused under any folder others may write
// (/tmp), so the agent gets a home of its own (its API key from the
// environment; a Google sign-in is not carried over).
Status WireGemini(const AgentConfig& a, const std::vector<std::string>& mcp_server, const std::filesystem::path& dir,
                  CliWiring* w) {
  const bool mcp = !mcp_server.empty();
  const std::string& url = a.model_url;
  Json settings = Json::object();
  if (mcp) {
    Json server = McpServerJson(mcp_server);
    server["trust"] = true;
    settings["mcpServers"] = {{"mates", server}};
  }
  const char* key = std::getenv("GEMINI_API_KEY");
  if (!url.empty() || a.env.count("GEMINI_API_KEY") > 0 || (key != nullptr && *key != '\0')) {
    settings["security"] = {{"auth", {{"selectedType", "gemini-api-key"}}}};
  }
  const std::filesystem::path home = dir / (a.name + ".gemini-home");
  std::error_code ec;
  std::filesystem::create_directories(home / ".gemini", ec);
  if (ec) return Status::FromErrno("create " + (home / ".gemini").string(), ec.value());
  MATES_RETURN_IF_ERROR(WriteFileAtomic(home / ".gemini" / "settings.json", DumpJsonPretty(settings)));
  w->env["GEMINI_CLI_HOME"] = home.string();
  if (!url.empty()) w->env["GOOGLE_GEMINI_BASE_URL"] = url;
  // Its first-run question: whether the folder is trusted.
  w->env["GEMINI_CLI_TRUST_WORKSPACE"] = "true";
  return Status::Ok();
}

}  // namespace

Result<CliWiring> WireCli(const AgentConfig& a, const std::vector<std::string>& mcp_server,
                          const std::filesystem::path& dir) {
  CliWiring w;
  const bool mcp = !mcp_server.empty();
  const std::string& url = a.model_url;
  switch (a.cli) {
    case CliPreset::kNone:
    case CliPreset::kClaude:
    case CliPreset::kQwen: {
      const bool qwen = a.cli == CliPreset::kQwen;
      if (mcp) {
        Json server = McpServerJson(mcp_server);
        if (qwen) server["trust"] = true;
        MATES_ASSIGN_OR_RETURN(std::string file, WriteConfig(dir, a, "mcp.json", Json{{"mcpServers", {{"mates", server}}}}));
        w.args.push_back("--mcp-config=" + file);
        if (!qwen) w.args.push_back("--allowedTools=mcp__mates");
      }
      // A command of the person's own is not told of a model server: which
      // variable it reads is its own business.
      if (!url.empty() && a.cli != CliPreset::kNone) {
        w.env[qwen ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL"] = qwen ? url + "/v1" : url;
      }
      break;
    }
    case CliPreset::kCodex: {
      auto set = [&](const std::string& key, const std::string& toml) {
        w.args.push_back("-c");
        w.args.push_back(key + "=" + toml);
      };
      if (mcp) {
        set("mcp_servers.mates.command", TomlString(mcp_server[0]));
        set("mcp_servers.mates.args", TomlArray({mcp_server.begin() + 1, mcp_server.end()}));
        set("mcp_servers.mates.default_tools_approval_mode", TomlString("approve"));
      }
      if (!url.empty()) {
        // Its model there: $OPENAI_MODEL, else one whose tools Codex sends as
        // the Responses API's function tools (its newest put them behind a
        // code-running tool of its own).
        set("model", TomlString(EnvOr(a.env, "OPENAI_MODEL", "gpt-5-codex")));
        set("model_provider", TomlString("mates"));
        set("model_providers.mates.name", TomlString("mates"));
        set("model_providers.mates.base_url", TomlString(url + "/v1"));
        set("model_providers.mates.wire_api", TomlString("responses"));
        set("model_providers.mates.env_key", TomlString("OPENAI_API_KEY"));
      }
      break;
    }
    case CliPreset::kGemini:
      MATES_RETURN_IF_ERROR(WireGemini(a, mcp_server, dir, &w));
      break;
    case CliPreset::kOpenCode: {
      Json config = {{"instructions", Json::array({a.personality_file.string()})}};
      if (mcp) {
        config["mcp"] = {{"mates", {{"type", "local"}, {"enabled", true}, {"command", mcp_server}}}};
      }
      if (!url.empty()) {
        const std::string model = EnvOr(a.env, "OPENAI_MODEL", "default");
        config["provider"] = {{"mates",
                               {{"npm", "@ai-sdk/openai-compatible"},
                                {"name", "mates"},
                                {"options", {{"baseURL", url + "/v1"}, {"apiKey", "{env:OPENAI_API_KEY}"}}},
                                {"models", {{model, {{"name", model}}}}}}}};
        config["model"] = "mates/" + model;
      }
      MATES_ASSIGN_OR_RETURN(std::string file, WriteConfig(dir, a, "opencode.json", config));
      w.env["OPENCODE_CONFIG"] = file;
      break;
    }
  }
  return w;
}

}  // namespace mates::tmux
