// mates mcp [--team T] [--as NAME] [--store URL]: the team as an MCP server
// on stdio (DESIGN §14). One JSON-RPC message per line in and out; stdout
// carries nothing else (diagnostics go to stderr). Ends when stdin does. On
// a PostgreSQL store (DESIGN §13) agents on different machines are members
// of one team: their messages and board are the database's.
// mates mcp list [--json]: the MCP servers the workspace's agents use
// (W/.mcp.json), started to show their state and tools.
// mates mcp call SERVER [TOOL [ARGUMENTS]]: mates' client, by hand — a
// server of .mcp.json or an http(s) URL; its tools, or one call's result.
// mates mcp login SERVER / logout SERVER: an OAuth grant for a remote
// server (mcp/oauth.h), kept for the agents' sessions, or forgotten.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/run_options.h"
#include "cli/store_choice.h"
#include "core/files.h"
#include "core/names.h"
#include "core/process_tree.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "core/write_all.h"
#include "mcp/config.h"
#include "mcp/http_serve.h"
#include "mcp/hub.h"
#include "mcp/oauth.h"
#include "mcp/team_tools.h"
#include "sandbox/sandbox.h"
#include "trust/trust.h"
#include "store/messenger.h"

namespace mates::cli {
namespace {

struct McpArgs {
  std::string as;
  bool json = false;
  bool http = false;
  int port = 0;
  // call
  std::string server;
  std::string tool;
  std::string arguments = "{}";
  std::string elicitation;
  std::vector<std::string> headers;
  bool sse = false;
  double timeout_s = 120;
  // OAuth (login, and call --login)
  bool login = false;
  std::string client_id, client_secret, client_key, client_metadata_url, scope;
  bool client_credentials = false;
  int callback_port = 0;
  double login_timeout_s = 300;
};

// How the person logs in from this terminal: the URL printed on stderr,
// and opened with $BROWSER when it is set (a command, its words split on
// spaces, given the URL); the browsers started are waited for when this
// goes.
class TerminalLogin {
 public:
  explicit TerminalLogin(const McpArgs& a) {
    o_.client_id = a.client_id;
    o_.client_secret = a.client_secret;
    o_.client_key_file = a.client_key;
    o_.client_metadata_url = a.client_metadata_url;
    o_.scope = a.scope;
    o_.client_credentials = a.client_credentials;
    o_.callback_port = a.callback_port;
    o_.timeout_s = a.login_timeout_s;
    o_.open = [this](const std::string& url) { Open(url); };
  }
  ~TerminalLogin() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& b : browsers_) (void)b.Wait();
  }
  TerminalLogin(const TerminalLogin&) = delete;
  TerminalLogin& operator=(const TerminalLogin&) = delete;
  const mcp::oauth::LoginOptions& options() const { return o_; }

 private:
  void Open(const std::string& url) {
    std::cerr << "To log in, open this URL in a browser:\n  " << ForTerminal(url) << std::endl;
    const char* browser = std::getenv("BROWSER");
    if (browser == nullptr || browser[0] == '\0') return;
    SubprocessOptions so;
    std::istringstream words(browser);
    for (std::string w; words >> w;) so.argv.push_back(w);
    so.argv.push_back(url);
    so.timeout_s = o_.timeout_s;
    auto p = Subprocess::Start(so);
    if (!p.ok()) {
      std::cerr << "mates: $BROWSER: " << p.status().message() << std::endl;
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    browsers_.push_back(std::move(*p));
  }

  mcp::oauth::LoginOptions o_;
  std::mutex mu_;
  std::vector<Subprocess> browsers_;  // guarded by mu_
};

// Writes all of `data` to `fd`; false once the reader is gone.
bool WriteAll(int fd, const std::string& data) { return WriteFully(fd, data) == 0; }

// The same tools over streamable HTTP on 127.0.0.1 (mcp/http_serve.h),
// until SIGINT, SIGTERM or SIGHUP.
int ServeHttp(Globals& g, const McpArgs& a, mcp::TeamIdentity& who) {
  // Blocked before any thread starts, so that every thread inherits the
  // mask and sigwait below takes them.
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, sig);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  mcp::HttpServeOptions o;
  o.port = a.port;
  o.make_session = [&who](std::function<void(const std::string&)> write, std::function<void(const Json&)> unanswered) {
    mcp::Server::Options options;
    options.version = MATES_VERSION;
    options.instructions = mcp::TeamInstructions(who);
    options.on_unanswered = std::move(unanswered);
    return std::make_unique<mcp::Server>(options, mcp::TeamTools(who), std::move(write));
  };
  auto served = mcp::HttpServe::Start(std::move(o));
  if (!served.ok()) return Fail(served.status());
  std::cout << "serving team " << g.team << " as " << who.name << " over MCP (streamable HTTP): " << (*served)->url()
            << "\n  Claude Code: claude mcp add --transport http mates '" << (*served)->url() << "'" << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  (*served)->Stop();
  return 0;
}

// Frames from stdin, a line each, to `server` until the client is gone.
// Lines of at most kMaxFrameBytes; a longer one is answered with one
// error and skipped to its end.
void ServeLines(mcp::Server& server, const std::atomic<bool>& client_gone) {
  std::string line;
  bool skipping = false;
  char buf[64 << 10];
  while (!client_gone.load()) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buf[i] != '\n') continue;
      if (!skipping) {
        line.append(buf + start, i - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) server.HandleFrame(line);
      }
      line.clear();
      skipping = false;
      start = i + 1;
    }
    if (!skipping) {
      line.append(buf + start, static_cast<size_t>(n) - start);
      if (line.size() > mcp::kMaxFrameBytes) {
        server.HandleFrame(line);  // answered: too long
        line.clear();
        line.shrink_to_fit();
        skipping = true;
      }
    }
  }
  // A last message without its newline is still one.
  if (!skipping && !line.empty() && !client_gone.load()) server.HandleFrame(line);
}

int Serve(Globals& g, const McpArgs& a) {
  if (a.port != 0 && !a.http) return Usage("--port is for --http");
  if (g.team.empty()) return Usage("which team? give --team or set MATES_TEAM");
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  auto opened = OpenChosenStore(g, g.store, g.ws());
  if (!opened.ok()) return Fail(opened.status());
  std::unique_ptr<TeamStore> store = std::move(*opened);
  std::string as = a.as;
  if (as.empty()) {
    // An agent's shell has MATES_AGENT_NAME; otherwise the team's lead.
    auto team = store->LoadTeam(g.team);
    if (!team.ok()) return Fail(team.status());
    as = DefaultMember(*team);
  }
  if (as != kUserName) {
    if (Status s = ValidateName("member name", as); !s.ok()) return Fail(s);
  }
  // The server serves a member of the team, and hosts it (DESIGN §13,
  // §19): it holds the member's liveness while it runs, so the team sees
  // the agent as there (not offline), and a second server for the same
  // member, on any machine, is refused. A pane agent (backend tmux) is its
  // cluster router's to host: its server only speaks for it.
  std::unique_ptr<Hold> hosting;
  if (as != kUserName) {
    auto team = store->LoadTeam(g.team);
    if (!team.ok()) return Fail(team.status());
    const Member* member = team->Find(as);
    if (member == nullptr) return Fail(Status::NotFound("'" + as + "' is not a member of team '" + g.team + "'"));
    if (member->backend != MemberBackend::kTmux) {
      auto held = store->HoldLiveness(g.team, as);
      if (!held.ok()) {
        if (held.status().code() != StatusCode::kConflict) return Fail(held.status());
        return Fail(Status::Conflict("'" + as + "' of team '" + g.team + "' is served already (another "
                                     "mates mcp --as " + as + ", or a host running it, on this machine or another)"));
      }
      hosting = std::move(*held);
    }
  }
  // A client that goes away mid-answer is an ended session, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  mcp::TeamIdentity who{g.ws(), g.team, as, *store};
  if (a.http) return ServeHttp(g, a, who);
  std::atomic<bool> client_gone{false};
  mcp::Server::Options options;
  options.version = MATES_VERSION;
  options.instructions = mcp::TeamInstructions(who);
  mcp::Server server(options, mcp::TeamTools(who), [&](const std::string& frame) {
    if (!WriteAll(STDOUT_FILENO, frame + "\n")) client_gone.store(true);
  });
  ServeLines(server, client_gone);
  server.Shutdown();
  return 0;
}

int List(Globals& g, const McpArgs& a) {
  if (Status s = AdmitWorkspaceFiles(g.ws()); !s.ok()) return Fail(s);
  // The servers run as a host would run them: in its sandbox (DESIGN §18).
  auto box = HostsSandbox(g.ws(), "mcp-list");
  if (!box.ok()) return Fail(box.status());
  auto hub = mcp::Hub::Load(g.ws(), trust::TrustStore(), *box);
  if (!hub.ok()) return Fail(hub.status());
  if ((*hub)->empty()) {
    if (a.json) {
      std::cout << "[]" << std::endl;
    } else {
      std::cout << "no MCP servers (add them to " << (g.ws().root() / ".mcp.json").string()
                << ", Claude Code's format)" << std::endl;
    }
    return 0;
  }
  (*hub)->Start();
  int failed = 0;
  Json out = Json::array();
  for (const auto& s : (*hub)->States()) {
    failed += s.run == mcp::ServerRun::kRunning || s.run == mcp::ServerRun::kSkipped ? 0 : 1;
    if (a.json) {
      Json tools = Json::array();
      for (const auto& t : s.tools) tools.push_back(Json{{"name", t.name}, {"description", t.description}});
      out.push_back(Json{{"name", s.name},
                         {"transport", s.transport},
                         {"state", s.state},
                         {"roles", s.roles.empty() ? Json("all") : Json(s.roles)},
                         {"tools", tools}});
      continue;
    }
    std::cout << s.name << " (" << s.transport << ", for " << (s.roles.empty() ? "everyone" : JoinWords(s.roles))
              << "): " << s.state << "\n";
    for (const auto& t : s.tools) {
      std::string d = t.description.substr(0, t.description.find('\n'));
      if (d.size() > 90) d = d.substr(0, 87) + "...";
      std::cout << "  mcp__" << s.name << "__" << t.name << (d.empty() ? "" : "  " + d) << "\n";
    }
  }
  if (a.json) std::cout << DumpJsonPretty(out) << std::endl;
  std::cout.flush();
  return failed > 0 ? 1 : 0;
}

std::string StringOr(const Json& j, const char* key, const std::string& fallback) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

// An elicitation put to the person at the terminal: accept (each field
// asked, Enter for its default) or decline. Without a terminal, declined.
Result<Json> AskAtTerminal(const std::string& server, const Json& params, double /*timeout_s*/,
                           const CancelToken& /*stop*/) {
  if (::isatty(STDIN_FILENO) != 1) return Status::FailedPrecondition("nobody at a terminal to ask");
  std::cerr << "server " << server << " asks: " << ForTerminal(StringOr(params, "message", "")) << "\n";
  std::cerr << "answer it? [y/N] " << std::flush;
  std::string line;
  if (!std::getline(std::cin, line) || (line != "y" && line != "yes")) return Json{{"action", "decline"}};
  Json content = Json::object();
  const Json schema = params.contains("requestedSchema") ? params["requestedSchema"] : Json::object();
  if (schema.is_object() && schema.contains("properties") && schema["properties"].is_object()) {
    for (const auto& [name, prop] : schema["properties"].items()) {
      const std::string type = StringOr(prop, "type", "string");
      std::cerr << "  " << ForTerminal(name, 200) << " (" << ForTerminal(type, 40)
                << (prop.is_object() && prop.contains("default")
                        ? ", Enter for " + ForTerminal(DumpJson(prop["default"]), 200)
                        : "")
                << "): " << std::flush;
      if (!std::getline(std::cin, line)) return Json{{"action", "cancel"}};
      if (line.empty()) continue;  // its default, if any, is filled in
      if (type == "string") {
        content[name] = line;
      } else {
        auto v = ParseJson(line);
        if (!v.ok()) return Status::InvalidArgument(name + ": '" + line + "' is not a " + type);
        content[name] = *v;
      }
    }
  }
  return Json{{"action", "accept"}, {"content", content}};
}

// The server `a.server` names: an http(s) URL (the person's to trust), or
// one of .mcp.json's (which must be trusted); `box` is made for a stdio one.
Result<mcp::ServerConfig> NamedServer(Globals& g, const McpArgs& a, std::shared_ptr<sandbox::Sandbox>* box) {
  mcp::ServerConfig c;
  if (a.server.rfind("http://", 0) == 0 || a.server.rfind("https://", 0) == 0) {
    // A server the person names here: theirs to trust.
    c.name = "cli";
    c.transport = a.sse ? mcp::ServerConfig::Transport::kSse : mcp::ServerConfig::Transport::kHttp;
    c.url = a.server;
    for (const auto& h : a.headers) {
      size_t colon = h.find(':');
      if (colon == std::string::npos || colon == 0) {
        return Status::InvalidArgument("--header takes 'Name: value', not '" + h + "'");
      }
      std::string v = h.substr(colon + 1);
      v.erase(0, v.find_first_not_of(' '));
      c.headers[h.substr(0, colon)] = v;
    }
  } else {
    if (!a.headers.empty()) {
      return Status::InvalidArgument("--header is for a server given by its URL; .mcp.json says a named one's");
    }
    MATES_RETURN_IF_ERROR(AdmitWorkspaceFiles(g.ws()));
    MATES_ASSIGN_OR_RETURN(auto configs, mcp::LoadServerConfigs(g.ws(), trust::TrustStore()));
    auto it = std::find_if(configs.begin(), configs.end(), [&](const auto& s) { return s.name == a.server; });
    if (it == configs.end()) {
      return Status::NotFound("no server '" + a.server + "' in " + (g.ws().root() / ".mcp.json").string() +
                              " (or give its http(s) URL)");
    }
    if (!it->skipped.empty()) return Status::FailedPrecondition("server " + a.server + ": " + it->skipped);
    c = *it;
    if (c.transport == mcp::ServerConfig::Transport::kStdio && box != nullptr) {
      MATES_ASSIGN_OR_RETURN(*box, HostsSandbox(g.ws(), "mcp-call"));
    }
  }
  return c;
}

// mates mcp login SERVER: a grant for the server at its URL, kept for
// every session of this user (mcp/oauth.h).
int Login(Globals& g, const McpArgs& a) {
  auto c = NamedServer(g, a, nullptr);
  if (!c.ok()) return c.status().code() == StatusCode::kInvalidArgument ? Usage(c.status().message()) : Fail(c.status());
  if (c->transport == mcp::ServerConfig::Transport::kStdio) {
    return Usage("server " + a.server + " runs on this machine (stdio): there is nothing to log in to");
  }
  TerminalLogin login(a);
  auto grant = mcp::oauth::Login(c->url, {}, login.options());
  if (!grant.ok()) return Fail(grant.status().WithContext("logging in to " + c->url));
  mcp::oauth::GrantStore store;
  if (Status s = store.Save(*grant); !s.ok()) return Fail(s);
  std::cout << "Logged in to " << c->url << (grant->scope.empty() ? "" : " (scope: " + grant->scope + ")")
            << "; the grant is kept in " << store.file().string() << std::endl;
  return 0;
}

// mates mcp logout SERVER: its grant forgotten.
int Logout(Globals& g, const McpArgs& a) {
  auto c = NamedServer(g, a, nullptr);
  if (!c.ok()) return c.status().code() == StatusCode::kInvalidArgument ? Usage(c.status().message()) : Fail(c.status());
  auto forgot = mcp::oauth::GrantStore().Forget(c->url);
  if (!forgot.ok()) return Fail(forgot.status());
  std::cout << (*forgot ? "Logged out of " : "There was no login for ") << c->url << std::endl;
  return 0;
}

int Call(Globals& g, const McpArgs& a) {
  std::shared_ptr<sandbox::Sandbox> box;
  auto named = NamedServer(g, a, &box);
  if (!named.ok()) return named.status().code() == StatusCode::kInvalidArgument ? Usage(named.status().message())
                                                                                 : Fail(named.status());
  mcp::ServerConfig c = *named;
  if (!a.elicitation.empty()) {
    auto p = mcp::ParseElicitationPolicy(a.elicitation);
    if (!p.ok()) return Usage("--elicitation: " + p.status().message());
    c.elicitation = *p;
  }
  auto args = ParseJson(a.arguments);
  if (!args.ok() || !args->is_object()) return Usage("ARGUMENTS must be a JSON object, not '" + a.arguments + "'");
  auto services = std::make_shared<mcp::ClientServices>();
  services->roots = {g.ws().root()};
  services->elicitation = c.elicitation;
  services->ask = AskAtTerminal;
  std::optional<TerminalLogin> login;
  if (a.login) {
    login.emplace(a);
    services->login = login->options();
  }
  auto client = [&]() -> Result<std::unique_ptr<mcp::Client>> {
    if (c.transport != mcp::ServerConfig::Transport::kStdio) return mcp::OpenHttpClient(c, services);
    const fs::path logs = g.ws().root() / ".mates" / "mcp";
    MATES_RETURN_IF_ERROR(EnsureDir(logs));
    MATES_ASSIGN_OR_RETURN(std::unique_ptr<mcp::Session> session,
                           mcp::StartStdioSession(c, g.ws().root(), logs / (c.name + ".log"), NewProcessTag(), *box, services));
    return mcp::Client::Open(c, std::move(session), *services);
  }();
  if (!client.ok()) return Fail(client.status());
  if (a.tool.empty()) {
    Json tools = Json::array();
    for (const auto& t : (*client)->tools()) tools.push_back(Json{{"name", t.name}, {"description", t.description}});
    if (a.json) {
      std::cout << DumpJsonPretty(Json{{"server", (*client)->server_name()},
                                       {"protocol_version", (*client)->protocol_version()},
                                       {"tools", tools}})
                << std::endl;
      return 0;
    }
    std::cout << "server " << (*client)->server_name() << ", MCP " << (*client)->protocol_version() << ", "
              << tools.size() << " tool" << (tools.size() == 1 ? "" : "s") << "\n";
    for (const auto& t : (*client)->tools()) {
      std::string d = t.description.substr(0, t.description.find('\n'));
      std::cout << "  " << t.name << (d.empty() ? "" : "  " + d) << "\n";
    }
    std::cout.flush();
    return 0;
  }
  auto r = (*client)->Call(a.tool, *args, a.timeout_s, nullptr);
  if (!r.ok()) return Fail(r.status().WithContext("calling " + a.tool));
  if (a.json) {
    std::cout << DumpJson(Json{{"text", r->text}, {"is_error", r->is_error}}) << std::endl;
  } else {
    std::cout << r->text << std::endl;
  }
  return r->is_error ? 1 : 0;
}

}  // namespace

void AddMcpCommands(CLI::App& app, Globals& g) {
  auto a = std::make_shared<McpArgs>();
  CLI::App* mcp = app.add_subcommand(
      "mcp", "Serve the team to an external agent over MCP (stdio, or --http): messages and the task board as tools");
  AddTeamOption(mcp, g);
  mcp->add_option("--as", a->as, "The member the agent is (default: $MATES_AGENT_NAME, else the team's lead)");
  mcp->add_flag("--http", a->http,
                "Serve over streamable HTTP on 127.0.0.1 (the URL printed carries its token) instead of stdio");
  mcp->add_option("--port", a->port, "The port for --http (default: any free one)")->check(CLI::Range(0, 65535));
  AddStoreOption(mcp, g);
  CLI::App* list = mcp->add_subcommand("list", "The MCP servers of .mcp.json: started, with their state and tools");
  list->add_flag("--json", a->json, "One JSON document");
  list->callback([&g, a] { g.action = [&g, a] { return List(g, *a); }; });
  CLI::App* call = mcp->add_subcommand(
      "call", "Talk to an MCP server as mates' agents do: its tools, or one tool's result (exit 1 if it failed)");
  call->add_option("SERVER", a->server, "A server of .mcp.json, or an http(s) URL")->required();
  call->add_option("TOOL", a->tool, "The tool to call (none: list the tools)");
  call->add_option("ARGUMENTS", a->arguments, "Its arguments, a JSON object (default {})");
  call->add_option("--elicitation", a->elicitation,
                   "How the server's questions are answered: ask (at this terminal), accept_defaults or decline "
                   "(default: mcp.elicitation of .mates/config.yaml, else ask)");
  call->add_option("--header", a->headers, "'Name: value' sent to a server given by its URL (repeatable)");
  call->add_flag("--sse", a->sse, "The URL speaks the older HTTP+SSE transport (MCP 2024-11-05)");
  call->add_option("--timeout", a->timeout_s, "Seconds the call may take")->check(CLI::Range(0.001, 86400.0));
  call->add_flag("--json", a->json, "One JSON document");
  call->add_flag("--login", a->login, "Log in (OAuth) when the server asks for it, as `mcp login` does");
  call->callback([&g, a] { g.action = [&g, a] { return Call(g, *a); }; });
  CLI::App* login = mcp->add_subcommand(
      "login", "Log in to a remote MCP server (OAuth 2.1): prints the URL to open ($BROWSER opens it), takes the "
               "redirect on 127.0.0.1, keeps the grant for the agents");
  login->add_option("SERVER", a->server, "A server of .mcp.json, or an http(s) URL")->required();
  CLI::App* logout = mcp->add_subcommand("logout", "Forget the login to a remote MCP server");
  logout->add_option("SERVER", a->server, "A server of .mcp.json, or an http(s) URL")->required();
  for (CLI::App* with : {call, login}) {
    with->add_option("--client-id", a->client_id, "A client registered with the authorization server beforehand");
    with->add_option("--client-secret", a->client_secret, "Its secret, if it has one");
    with->add_option("--client-key", a->client_key,
                     "A PEM private key (EC P-256 or RSA) the client signs its assertions with (private_key_jwt)");
    with->add_option("--client-metadata-url", a->client_metadata_url,
                     "The https URL of mates' client ID metadata document, for servers that take those");
    with->add_flag("--client-credentials", a->client_credentials,
                   "Log in as a machine (the client_credentials grant, with --client-id and --client-secret)");
    with->add_option("--scope", a->scope, "Scopes to ask for beyond those the server names (space-separated)");
    with->add_option("--callback-port", a->callback_port, "The redirect's port on 127.0.0.1 (default: any free one)")
        ->check(CLI::Range(0, 65535));
    with->add_option("--login-timeout", a->login_timeout_s, "Seconds to wait for the person to log in (default 300)")
        ->check(CLI::Range(1.0, 86400.0));
  }
  login->callback([&g, a] { g.action = [&g, a] { return Login(g, *a); }; });
  logout->callback([&g, a] { g.action = [&g, a] { return Logout(g, *a); }; });
  mcp->callback([&g, a] {
    if (!g.action) g.action = [&g, a] { return Serve(g, *a); };
  });
}

}  // namespace mates::cli
