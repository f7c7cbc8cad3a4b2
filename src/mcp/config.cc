#include "mcp/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "core/config_yaml.h"
#include "core/files.h"
#include "core/secrets.h"
#include "core/log.h"

namespace mates::mcp {
namespace {


// A server's name becomes part of tool names (mcp__<server>__<tool>).
Status CheckServerName(const std::string& name, const std::string& origin) {
  bool ok = !name.empty() && name.size() <= 40 && name.find("__") == std::string::npos;
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (ok) return Status::Ok();
  return Status::InvalidArgument(origin + ": server name '" + name +
                                 "' must be 1-40 letters, digits, '_' or '-' (no '__'): it becomes part of tool names");
}

// ${VAR} and ${VAR:-default}, as Claude Code expands them — only in a
// trusted file (`expand`; otherwise as written), and never to an API key.
Result<std::string> Expand(const std::string& s, const std::string& where, bool expand) {
  if (!expand) return s;
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t open = s.find("${", i);
    if (open == std::string::npos) {
      out += s.substr(i);
      break;
    }
    size_t close = s.find('}', open);
    if (close == std::string::npos) return Status::InvalidArgument(where + ": '${' without '}'");
    out += s.substr(i, open - i);
    std::string inner = s.substr(open + 2, close - open - 2);
    std::string name = inner, fallback;
    bool has_fallback = false;
    if (size_t d = inner.find(":-"); d != std::string::npos) {
      name = inner.substr(0, d);
      fallback = inner.substr(d + 2);
      has_fallback = true;
    }
    for (const char* key : Secrets::kNames) {
      if (name == key || name == std::string(key) + "_FILE") {
        return Status::InvalidArgument(where + ": ${" + name + "} is mates' API key, which is never passed on");
      }
    }
    const char* v = std::getenv(name.c_str());
    if (v != nullptr) {
      out += v;
    } else if (has_fallback) {
      out += fallback;
    } else {
      return Status::InvalidArgument(where + ": ${" + name + "} is not set (give it a value, or a default: ${" + name +
                                     ":-…})");
    }
    i = close + 1;
  }
  return out;
}

Result<std::map<std::string, std::string>> StringMap(const Json& server, const char* key, const std::string& where,
                                                     bool expand) {
  std::map<std::string, std::string> out;
  auto it = server.find(key);
  if (it == server.end() || it->is_null()) return out;
  if (!it->is_object()) return Status::InvalidArgument(where + "." + key + ": must be an object of strings");
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) return Status::InvalidArgument(where + "." + key + "." + k + ": must be a string");
    MATES_ASSIGN_OR_RETURN(out[k], Expand(v.get<std::string>(), where + "." + key + "." + k, expand));
  }
  return out;
}

Result<ServerConfig> ServerFromJson(const std::string& name, const Json& s, const std::string& origin, bool expand) {
  const std::string where = origin + ": mcpServers." + name;
  MATES_RETURN_IF_ERROR(CheckServerName(name, origin));
  if (!s.is_object()) return Status::InvalidArgument(where + ": must be an object");
  ServerConfig c;
  c.name = name;
  std::string type = "stdio";
  if (s.contains("type")) {
    if (!s["type"].is_string()) return Status::InvalidArgument(where + ".type: must be a string");
    type = s["type"];
  } else if (s.contains("url") && !s.contains("command")) {
    type = "http";
  }
  static const std::set<std::string> kKnown = {"type", "command", "args", "env", "url", "headers"};
  for (const auto& [k, v] : s.items()) {
    if (kKnown.count(k) == 0) LogWarning(where + "." + k + ": unknown key, ignored");
  }
  if (type == "stdio") {
    c.transport = ServerConfig::Transport::kStdio;
    if (!s.contains("command") || !s["command"].is_string() || s["command"].get_ref<const std::string&>().empty()) {
      return Status::InvalidArgument(where + ": a stdio server needs \"command\" (a program to run)");
    }
    MATES_ASSIGN_OR_RETURN(std::string command, Expand(s["command"], where + ".command", expand));
    c.argv.push_back(command);
    if (s.contains("args") && !s["args"].is_null()) {
      if (!s["args"].is_array()) return Status::InvalidArgument(where + ".args: must be an array of strings");
      for (const auto& a : s["args"]) {
        if (!a.is_string()) return Status::InvalidArgument(where + ".args: must be an array of strings");
        MATES_ASSIGN_OR_RETURN(std::string arg, Expand(a, where + ".args", expand));
        c.argv.push_back(arg);
      }
    }
    MATES_ASSIGN_OR_RETURN(c.env, StringMap(s, "env", where, expand));
  } else if (type == "http" || type == "sse") {
    c.transport = type == "http" ? ServerConfig::Transport::kHttp : ServerConfig::Transport::kSse;
    if (!s.contains("url") || !s["url"].is_string()) {
      return Status::InvalidArgument(where + ": an " + type + " server needs \"url\"");
    }
    MATES_ASSIGN_OR_RETURN(c.url, Expand(s["url"], where + ".url", expand));
    if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0) {
      return Status::InvalidArgument(where + ".url: must start with http:// or https://");
    }
    MATES_ASSIGN_OR_RETURN(c.headers, StringMap(s, "headers", where, expand));
  } else {
    return Status::InvalidArgument(where + ".type: unknown type '" + type +
                                   "' (mates speaks \"stdio\", \"http\" (streamable HTTP) and \"sse\" (HTTP+SSE))");
  }
  return c;
}

Result<double> Seconds(const YAML::Node& n, const std::string& where, double fallback) {
  if (!n) return fallback;
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    return Status::InvalidArgument(where + ": must be a number of seconds");
  }
  if (!std::isfinite(v) || v <= 0 || v > 86400) return Status::InvalidArgument(where + ": must be > 0 and <= 86400");
  return v;
}

Result<ElicitationPolicy> Elicitation(const YAML::Node& n, const std::string& where, ElicitationPolicy fallback) {
  if (!n) return fallback;
  std::string text;
  try {
    text = n.as<std::string>();
  } catch (const YAML::Exception&) {
    return Status::InvalidArgument(where + ": must be ask, accept_defaults or decline");
  }
  auto p = ParseElicitationPolicy(text);
  if (!p.ok()) return Status::InvalidArgument(where + ": " + p.status().message());
  return *p;
}

// serve | decline.
Result<bool> Sampling(const YAML::Node& n, const std::string& where, bool fallback) {
  if (!n) return fallback;
  std::string text;
  try {
    text = n.as<std::string>();
  } catch (const YAML::Exception&) {
    return Status::InvalidArgument(where + ": must be serve or decline");
  }
  if (text == "serve") return true;
  if (text == "decline") return false;
  return Status::InvalidArgument(where + ": must be serve or decline, not '" + text + "'");
}

// How far an elicitation policy lets a server's question go without a
// person: accept_defaults answers it, ask puts it to a person, decline.
int Openness(ElicitationPolicy p) {
  switch (p) {
    case ElicitationPolicy::kAcceptDefaults: return 2;
    case ElicitationPolicy::kAsk: return 1;
    case ElicitationPolicy::kDecline: return 0;
  }
  return 2;
}

// What an untrusted file may set: only what narrows (DESIGN §26: trust
// covers every section). Each change refused is named in `left_out`.
class Narrowing {
 public:
  Narrowing(bool trusted, std::vector<std::string>* left_out) : trusted_(trusted), left_out_(left_out) {}
  void Seconds(double* field, double wanted, const std::string& what) {
    Take(field, wanted, wanted <= *field, what);
  }
  void Elicitation(ElicitationPolicy* field, ElicitationPolicy wanted, const std::string& what) {
    Take(field, wanted, Openness(wanted) <= Openness(*field), what);
  }
  void Sampling(bool* field, bool wanted, const std::string& what) { Take(field, wanted, !wanted || *field, what); }

 private:
  template <typename T>
  void Take(T* field, const T& wanted, bool narrows, const std::string& what) {
    if (trusted_ || narrows) {
      *field = wanted;
    } else if (std::find(left_out_->begin(), left_out_->end(), what) == left_out_->end()) {
      left_out_->push_back(what);
    }
  }
  const bool trusted_;
  std::vector<std::string>* left_out_;
};

// The mcp section of W/.mates/config.yaml, applied to `servers`: whole
// when the person trusts the file as it is, else only what narrows.
Status ApplyMatesConfig(const fs::path& file, bool trusted, std::vector<ServerConfig>& servers) {
  MATES_ASSIGN_OR_RETURN(YAML::Node root, ReadConfigYaml(file));
  if (root.IsNull()) return Status::Ok();
  const std::string origin = file.string();
  YAML::Node mcp = root["mcp"];
  if (!mcp || mcp.IsNull()) return Status::Ok();
  if (!mcp.IsMap()) return Status::InvalidArgument(origin + ": mcp: must be a map");
  // (Read with the defaults as fallbacks: a key that is absent changes nothing.)
  ServerConfig defaults;
  MATES_ASSIGN_OR_RETURN(double startup, Seconds(mcp["startup_timeout"], origin + ": mcp.startup_timeout",
                                                 defaults.startup_timeout_s));
  MATES_ASSIGN_OR_RETURN(double call, Seconds(mcp["call_timeout"], origin + ": mcp.call_timeout", defaults.call_timeout_s));
  MATES_ASSIGN_OR_RETURN(ElicitationPolicy elicitation,
                         Elicitation(mcp["elicitation"], origin + ": mcp.elicitation", defaults.elicitation));
  MATES_ASSIGN_OR_RETURN(double asking, Seconds(mcp["elicitation_timeout"], origin + ": mcp.elicitation_timeout",
                                                defaults.elicitation_timeout_s));
  MATES_ASSIGN_OR_RETURN(bool sampling, Sampling(mcp["sampling"], origin + ": mcp.sampling", defaults.sampling));
  std::vector<std::string> left_out;
  Narrowing narrow(trusted, &left_out);
  for (auto& s : servers) {
    narrow.Seconds(&s.startup_timeout_s, startup, "mcp.startup_timeout");
    narrow.Seconds(&s.call_timeout_s, call, "mcp.call_timeout");
    narrow.Elicitation(&s.elicitation, elicitation, "mcp.elicitation");
    narrow.Seconds(&s.elicitation_timeout_s, asking, "mcp.elicitation_timeout");
    narrow.Sampling(&s.sampling, sampling, "mcp.sampling");
  }
  YAML::Node per = mcp["servers"];
  if (per && !per.IsNull()) {
    if (!per.IsMap()) return Status::InvalidArgument(origin + ": mcp.servers: must be a map of server names");
    for (const auto& kv : per) {
      std::string name;
      try {
        name = kv.first.as<std::string>();
      } catch (const YAML::Exception&) {
        return Status::InvalidArgument(origin + ": mcp.servers: a name is not a string");
      }
      const std::string where = origin + ": mcp.servers." + name;
      auto it = std::find_if(servers.begin(), servers.end(), [&](const ServerConfig& s) { return s.name == name; });
      if (it == servers.end()) return Status::InvalidArgument(where + ": no such server in .mcp.json");
      const YAML::Node& v = kv.second;
      if (!v.IsMap()) return Status::InvalidArgument(where + ": must be a map");
      if (YAML::Node roles = v["roles"]; roles) {  // a list of who may use it only narrows
        if (!roles.IsSequence()) return Status::InvalidArgument(where + ".roles: must be a list (lead, teammate, names)");
        for (const auto& r : roles) {
          try {
            it->roles.push_back(r.as<std::string>());
          } catch (const YAML::Exception&) {
            return Status::InvalidArgument(where + ".roles: must be a list of strings");
          }
        }
      }
      const std::string key = "mcp.servers." + name;
      MATES_ASSIGN_OR_RETURN(double up, Seconds(v["startup_timeout"], where + ".startup_timeout", it->startup_timeout_s));
      MATES_ASSIGN_OR_RETURN(double calls, Seconds(v["call_timeout"], where + ".call_timeout", it->call_timeout_s));
      MATES_ASSIGN_OR_RETURN(ElicitationPolicy asks, Elicitation(v["elicitation"], where + ".elicitation", it->elicitation));
      MATES_ASSIGN_OR_RETURN(double waits, Seconds(v["elicitation_timeout"], where + ".elicitation_timeout",
                                                   it->elicitation_timeout_s));
      MATES_ASSIGN_OR_RETURN(bool samples, Sampling(v["sampling"], where + ".sampling", it->sampling));
      narrow.Seconds(&it->startup_timeout_s, up, key + ".startup_timeout");
      narrow.Seconds(&it->call_timeout_s, calls, key + ".call_timeout");
      narrow.Elicitation(&it->elicitation, asks, key + ".elicitation");
      narrow.Seconds(&it->elicitation_timeout_s, waits, key + ".elicitation_timeout");
      narrow.Sampling(&it->sampling, samples, key + ".sampling");
    }
  }
  if (!left_out.empty()) {
    std::string what;
    for (const auto& w : left_out) what += (what.empty() ? "" : ", ") + w;
    LogWarning(origin + " would widen what MCP servers may do (" + what +
               ") but is not trusted: left out; run `mates trust` in " + file.parent_path().parent_path().string() +
               " to use it");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ServerConfig>> ParseMcpJson(std::string_view text, const std::string& origin, bool expand) {
  auto doc = ParseJson(text);
  if (!doc.ok()) return Status::InvalidArgument(origin + ": not JSON: " + doc.status().message());
  if (!doc->is_object()) return Status::InvalidArgument(origin + ": must be an object with \"mcpServers\"");
  std::vector<ServerConfig> out;
  auto servers = doc->find("mcpServers");
  if (servers == doc->end() || servers->is_null()) return out;
  if (!servers->is_object()) return Status::InvalidArgument(origin + ": \"mcpServers\" must be an object");
  for (const auto& [name, s] : servers->items()) {
    MATES_ASSIGN_OR_RETURN(ServerConfig c, ServerFromJson(name, s, origin, expand));
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const ServerConfig& a, const ServerConfig& b) { return a.name < b.name; });
  return out;
}

std::string UntrustedReason(const trust::FileState& f, const fs::path& root) {
  const std::string file = (root / f.file).string();
  return f.trust == trust::FileTrust::kChanged
             ? file + " changed since this workspace was trusted: run `mates trust` to use its servers again"
             : file + " is not trusted: run `mates trust` in " + root.string() + " to use its servers";
}

Result<std::vector<ServerConfig>> LoadServerConfigs(const Workspace& ws, const trust::TrustStore& trust) {
  const fs::path file = ws.root() / ".mcp.json";
  auto text = ReadFilePrefix(file, kMaxConfigBytes + 1);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::vector<ServerConfig>{};
    return text.status();
  }
  if (text->size() > kMaxConfigBytes) return Status::InvalidArgument(file.string() + ": larger than 1 MiB");
  // The file's servers run commands and reach URLs: only once the person
  // trusted it as it is (DESIGN §19). Otherwise they are listed, as
  // written, and skipped.
  MATES_ASSIGN_OR_RETURN(trust::FileState state, trust.CheckFile(ws.root(), ".mcp.json"));
  const bool trusted = state.trust == trust::FileTrust::kTrusted;
  MATES_ASSIGN_OR_RETURN(std::vector<ServerConfig> servers, ParseMcpJson(*text, file.string(), trusted));
  if (!trusted) {
    for (auto& s : servers) s.skipped = UntrustedReason(state, ws.root());
  }
  MATES_ASSIGN_OR_RETURN(trust::FileState config, trust.CheckFile(ws.root(), ".mates/config.yaml"));
  MATES_RETURN_IF_ERROR(ApplyMatesConfig(ws.root() / ".mates" / "config.yaml",
                                         config.trust == trust::FileTrust::kTrusted, servers));
  return servers;
}

bool ServesRole(const ServerConfig& c, const std::string& agent, bool is_lead) {
  if (c.roles.empty()) return true;
  for (const auto& r : c.roles) {
    if (r == agent || (is_lead && r == "lead") || (!is_lead && r == "teammate")) return true;
  }
  return false;
}

}  // namespace mates::mcp
