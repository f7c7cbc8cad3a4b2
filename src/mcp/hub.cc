#include "mcp/hub.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/files.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/process_tree.h"
#include "core/trace_context.h"
#include "mcp/config.h"

namespace mates::mcp {
namespace {

// Tool names models accept: letters, digits, '_' and '-', at most 64.
std::string ToolName(const std::string& server, const std::string& tool) {
  std::string name = "mcp__" + server + "__";
  for (char c : tool) name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  if (name.size() > 64) name.resize(64);
  return name;
}

// Cuts `text` to kMaxResultBytes on a UTF-8 boundary, saying so.
std::string Bounded(std::string text) {
  if (text.size() <= kMaxResultBytes) return text;
  size_t end = kMaxResultBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  size_t cut = text.size() - end;
  text.resize(end);
  return text + "\n[… " + std::to_string(cut) + " more bytes cut]";
}

class McpTool : public tools::Tool {
 public:
  McpTool(std::shared_ptr<Hub> hub, std::string name, std::string server, RemoteTool remote)
      : hub_(std::move(hub)), name_(std::move(name)), server_(std::move(server)), remote_(std::move(remote)) {}
  std::string name() const override { return name_; }
  std::string description() const override {
    std::string d = remote_.description.empty() ? "(no description)" : remote_.description;
    return d + " [tool '" + remote_.name + "' of MCP server '" + server_ + "']";
  }
  std::string input_schema() const override { return DumpJson(remote_.input_schema); }
  tools::ToolResult Run(const Json& input, tools::ToolContext& ctx) const override {
    return hub_->Call(server_, remote_.name, input, ctx.cancel, ctx.progress);
  }

 private:
  std::shared_ptr<Hub> hub_;
  std::string name_, server_;
  RemoteTool remote_;
};

bool SameTools(const std::vector<RemoteTool>& a, const std::vector<RemoteTool>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const RemoteTool& x, const RemoteTool& y) {
    return x.name == y.name && x.description == y.description && x.input_schema == y.input_schema;
  });
}

// An agent's view of the hub's tools: built again only when they changed.
class HubTools : public tools::ToolSource {
 public:
  HubTools(std::shared_ptr<Hub> hub, std::string agent, bool is_lead)
      : hub_(std::move(hub)), agent_(std::move(agent)), is_lead_(is_lead) {}
  std::vector<std::shared_ptr<const tools::Tool>> Tools() override {
    hub_->Refresh();
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t now = hub_->generation();
    if (!built_ || now != generation_) {
      tools_.clear();
      for (auto& t : hub_->ToolsFor(agent_, is_lead_)) tools_.push_back(std::move(t));
      generation_ = now;
      built_ = true;
    }
    return tools_;
  }

 private:
  const std::shared_ptr<Hub> hub_;
  const std::string agent_;
  const bool is_lead_;
  std::mutex mu_;
  bool built_ = false;                                 // guarded by mu_
  uint64_t generation_ = 0;                            // guarded by mu_
  std::vector<std::shared_ptr<const tools::Tool>> tools_;  // guarded by mu_
};

}  // namespace

Result<std::shared_ptr<Hub>> Hub::Load(const Workspace& ws, const trust::TrustStore& trust,
                                       std::shared_ptr<const sandbox::Sandbox> sandbox) {
  MATES_ASSIGN_OR_RETURN(std::vector<ServerConfig> servers, LoadServerConfigs(ws, trust));
  return std::make_shared<Hub>(ws, std::move(servers), std::move(sandbox));
}

Hub::Hub(Workspace ws, std::vector<ServerConfig> servers, std::shared_ptr<const sandbox::Sandbox> sandbox)
    : ws_(std::move(ws)), sandbox_(std::move(sandbox)) {
  for (auto& c : servers) {
    auto s = std::make_unique<Server>();
    s->config = std::move(c);
    servers_.push_back(std::move(s));
  }
}

Hub::~Hub() = default;  // each client's session stops its server

Result<std::shared_ptr<Client>> Hub::StartLocked(Server& s) {
  // What it may ask of us: the workspace as its root, and its policy for
  // questions.
  auto services = std::make_shared<ClientServices>();
  {
    std::lock_guard<std::mutex> lock(services_mu_);
    *services = services_;
  }
  services->roots = {ws_.root()};
  services->elicitation = s.config.elicitation;
  services->elicitation_timeout_s = s.config.elicitation_timeout_s;
  if (!s.config.sampling) services->sample = nullptr;  // not offered
  if (s.config.transport != ServerConfig::Transport::kStdio) {
    MATES_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, OpenHttpClient(s.config, services));
    return std::shared_ptr<Client>(std::move(client));
  }
  const fs::path logs = ws_.root() / ".mates" / "mcp";
  MATES_RETURN_IF_ERROR(EnsureDir(logs));
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                         StartStdioSession(s.config, ws_.root(), logs / (s.config.name + ".log"), NewProcessTag(),
                                           *sandbox_, services));
  MATES_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Open(s.config, std::move(session), *services));
  return std::shared_ptr<Client>(std::move(client));
}

void Hub::Start() {
  std::vector<std::thread> starting;
  // Each server starts in the caller's span (DESIGN §29: its TRACEPARENT).
  const TraceContext caller = CurrentTrace();
  for (auto& s : servers_) {
    if (!s->config.skipped.empty()) continue;  // never started: not trusted
    starting.emplace_back([this, server = s.get(), caller] {
      ScopedTrace in(caller);
      RunGuarded("starting mcp server " + server->config.name, [&] {
        std::lock_guard<std::mutex> lock(server->mu);
        auto c = StartLocked(*server);
        if (!c.ok()) {
          server->error = c.status().message();
          server->failures = 1;
          server->retry_at = DeadlineIn(1);
          LogWarning("mcp: " + server->error + " (its tools are missing; see .mates/mcp/" + server->config.name +
                     ".log)");
          return;
        }
        server->client = *c;
        server->tools = (*c)->tools();
        generation_++;
        server->error.clear();
      });
    });
  }
  for (auto& t : starting) t.join();
}

Result<std::shared_ptr<Client>> Hub::Running(Server& s) {
  if (!s.config.skipped.empty()) return Status::FailedPrecondition("MCP server '" + s.config.name + "' is skipped: " + s.config.skipped);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.client != nullptr && s.client->alive()) return s.client;
  if (s.client != nullptr) {
    s.error = s.client->why();
    s.client.reset();  // its session reaps what is left of it
  }
  if (s.retry_at && !Expired(s.retry_at)) {
    return Status::Unavailable("MCP server '" + s.config.name + "' is down (" + s.error + "); it is tried again shortly");
  }
  auto c = StartLocked(s);
  if (!c.ok()) {
    s.error = c.status().message();
    s.failures++;
    s.retry_at = DeadlineIn(std::min(30.0, static_cast<double>(1 << std::min(s.failures - 1, 5))));
    return Status::Unavailable("MCP server '" + s.config.name + "' could not be restarted: " + s.error);
  }
  // As it lists now: a server may come back with other tools.
  if (!SameTools(s.tools, (*c)->tools())) {
    s.tools = (*c)->tools();
    generation_++;
  }
  s.client = *c;
  s.restarts++;
  s.failures = 0;
  s.retry_at.reset();
  s.error.clear();
  LogInfo("mcp: server " + s.config.name + " restarted");
  return s.client;
}

void Hub::Forget(Server& s, const std::shared_ptr<Client>& dead) {
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.client != dead) return;  // another call restarted it already
  s.error = "it stopped reading its input";
  s.client.reset();
}

tools::ToolResult Hub::Call(const std::string& server, const std::string& tool, const Json& arguments,
                            const CancelToken* cancel, const std::function<void(const std::string&)>& progress) {
  auto it = std::find_if(servers_.begin(), servers_.end(), [&](const auto& s) { return s->config.name == server; });
  if (it == servers_.end()) return tools::ToolResult::Error("no MCP server '" + server + "'");
  Server& s = **it;
  auto client = Running(s);
  if (!client.ok()) return tools::ToolResult::Error(client.status().message());
  auto out = (*client)->Call(tool, arguments, s.config.call_timeout_s, cancel, progress);
  if (!out.ok() && out.status().code() == StatusCode::kIOError) {
    // Not sent: the server died before it could read the call (its end is
    // on the way to the reader). Sent once more, to a new one.
    Forget(s, *client);
    client = Running(s);
    if (!client.ok()) return tools::ToolResult::Error(client.status().message());
    out = (*client)->Call(tool, arguments, s.config.call_timeout_s, cancel, progress);
  }
  if (!out.ok()) {
    std::string why = out.status().message();
    if (out.status().code() == StatusCode::kTimeout) {
      why = "MCP tool '" + tool + "' of server '" + server + "' did not answer within " +
            std::to_string(static_cast<long>(s.config.call_timeout_s)) + " s (it was told to stop)";
    } else if (!(*client)->alive()) {
      why = "MCP server '" + server + "' went away during the call (" + why + "); it is restarted for the next call";
    }
    return tools::ToolResult::Error(why);
  }
  return {Bounded(std::move(out->text)), out->is_error};
}

std::vector<std::unique_ptr<tools::Tool>> Hub::ToolsFor(const std::string& agent, bool is_lead) {
  std::vector<std::unique_ptr<tools::Tool>> out;
  std::set<std::string> names;
  // Each tool holds the hub: it lives as long as an agent has its tools.
  std::shared_ptr<Hub> self = shared_from_this();
  for (auto& s : servers_) {
    if (!ServesRole(s->config, agent, is_lead)) continue;
    std::vector<RemoteTool> tools;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      tools = s->tools;
    }
    for (auto& t : tools) {
      std::string name = ToolName(s->config.name, t.name);
      if (!names.insert(name).second) {
        LogWarning("mcp: server " + s->config.name + ": tool '" + t.name + "' is named like another (" + name +
                   "); left out");
        continue;
      }
      out.push_back(std::make_unique<McpTool>(self, name, s->config.name, t));
    }
  }
  return out;
}

std::shared_ptr<tools::ToolSource> Hub::SourceFor(const std::string& agent, bool is_lead) {
  return std::make_shared<HubTools>(shared_from_this(), agent, is_lead);
}

void Hub::Refresh() {
  for (auto& s : servers_) {
    std::shared_ptr<Client> client;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      client = s->client;
    }
    // Listed outside `mu`: calls to it go on meanwhile.
    std::lock_guard<std::mutex> refreshing(s->refresh_mu);
    if (client == nullptr || !client->alive() || !client->TakeToolsChanged()) continue;
    auto listed = client->ListTools(DeadlineIn(s->config.startup_timeout_s));
    if (!listed.ok()) {
      LogWarning("mcp: server " + s->config.name + " said its tools changed, but " + listed.status().message() +
                 " (its tools are as they were)");
      continue;
    }
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->client != client || SameTools(s->tools, *listed)) continue;  // restarted meanwhile, or no change
    s->tools = std::move(*listed);
    generation_++;
    LogInfo("mcp: server " + s->config.name + " now has " + std::to_string(s->tools.size()) + " tools");
  }
}

std::vector<ServerState> Hub::States() const {
  std::vector<ServerState> out;
  for (const auto& s : servers_) {
    std::lock_guard<std::mutex> lock(s->mu);
    ServerState st;
    st.name = s->config.name;
    st.transport = s->config.transport == ServerConfig::Transport::kStdio ? "stdio"
                   : s->config.transport == ServerConfig::Transport::kSse ? "sse"
                                                                           : "http";
    if (!s->config.skipped.empty()) {
      st.run = ServerRun::kSkipped;
      st.why = s->config.skipped;
      st.state = "skipped: " + st.why;
    } else if (s->client != nullptr && s->client->alive()) {
      st.run = ServerRun::kRunning;
      st.state = "running";
    } else if (s->client != nullptr) {
      st.run = ServerRun::kDown;
      st.why = s->client->why();
      st.state = "down: " + st.why;
    } else {
      st.run = ServerRun::kFailed;
      st.why = s->error;
      st.state = "failed: " + st.why;
    }
    st.roles = s->config.roles;
    st.tools = s->tools;
    st.restarts = s->restarts;
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace mates::mcp
