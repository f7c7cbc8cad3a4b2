// `mates trust [--list | --revoke] [--json]` (DESIGN §19), and the question
// `run`, `up` and `mcp list` put before a workspace's own files may start
// anything (AdmitWorkspaceFiles).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/clock.h"
#include "core/json.h"
#include "hooks/hooks.h"
#include "mcp/config.h"
#include "trust/trust.h"

namespace mates::cli {
namespace {

struct TrustArgs {
  bool list = false;
  bool revoke = false;
  bool json = false;
};

// The hooks `.mates/config.yaml` would run, a line each: "EVENT [matcher]: command".
std::vector<std::string> HooksItRuns(const std::string& text, const std::string& origin) {
  auto events = hooks::ParseHooksSection(text, origin);
  if (!events.ok()) return {"(" + events.status().message() + ")"};
  std::vector<std::string> out;
  for (const auto& [event, groups] : *events) {
    for (const auto& g : groups) {
      for (const auto& h : g.hooks) {
        out.push_back("hook " + std::string(hooks::EventName(event)) + (g.matcher.empty() ? "" : " [" + g.matcher + "]") +
                      ": " + h.command);
      }
    }
  }
  return out;
}

// What a file would start, in one line each: a person decides on this.
std::vector<std::string> WhatItRuns(const Workspace& ws, const trust::FileState& f) {
  std::vector<std::string> out;
  auto text = ReadFilePrefix(ws.root() / f.file, 1 << 20);
  if (!text.ok()) return out;
  if (f.file == ".mates/config.yaml") return HooksItRuns(*text, f.file);
  if (f.file != ".mcp.json") return out;
  auto servers = mcp::ParseMcpJson(*text, f.file, /*expand=*/false);
  if (!servers.ok()) return {"(" + servers.status().message() + ")"};
  for (const auto& s : *servers) {
    std::string line = s.name + ": ";
    if (s.transport == mcp::ServerConfig::Transport::kStdio) {
      for (const auto& a : s.argv) line += (line.back() == ' ' ? "" : " ") + a;
      for (const auto& [k, v] : s.env) line += " [env " + k + "=" + v + "]";
    } else {
      line += s.url;
      for (const auto& [k, v] : s.headers) line += " [header " + k + ": " + v + "]";
    }
    out.push_back(line);
  }
  return out;
}

int Trust(Globals& g, const TrustArgs& a) {
  trust::TrustStore store;
  if (a.list) {
    auto all = store.List();
    if (!all.ok()) return Fail(all.status());
    Json out = Json::array();
    for (const auto& t : *all) {
      Json files = Json::object();
      std::string shown;
      for (const auto& [name, hash] : t.files) {
        auto now = store.CheckFile(t.root, name);
        const std::string state = now.ok() ? std::string(trust::FileTrustName(now->trust)) : "gone";
        files[name] = Json{{"sha256", hash}, {"now", state}};
        shown += (shown.empty() ? "" : ", ") + name + (state == "trusted" ? "" : " (" + state + ")");
      }
      out.push_back(Json{{"workspace", t.root}, {"trusted_at", t.trusted_at}, {"files", files}});
      if (!a.json) std::cout << t.root << "  " << (shown.empty() ? "(no files)" : shown) << "\n";
    }
    if (a.json) std::cout << DumpJsonPretty(out) << "\n";
    if (!a.json && all->empty()) std::cout << "no workspace is trusted (" << store.file().string() << ")\n";
    return 0;
  }
  if (a.revoke) {
    if (Status s = store.Revoke(g.ws().root()); !s.ok()) return Fail(s);
    std::cout << "no longer trusted: " << fs::canonical(g.ws().root()).string() << "\n";
    return 0;
  }
  auto before = store.Check(g.ws().root());
  if (!before.ok()) return Fail(before.status());
  auto t = store.Trust(g.ws().root());
  if (!t.ok()) return Fail(t.status());
  std::cout << "trusted: " << t->root << "\n";
  for (const auto& f : *before) {
    if (f.trust == trust::FileTrust::kAbsent) continue;
    std::cout << "  " << f.file << " (sha256 " << f.sha256.substr(0, 12) << "…)\n";
    for (const auto& line : WhatItRuns(g.ws(), f)) std::cout << "    " << line << "\n";
  }
  if (t->files.empty()) std::cout << "  (it has no .mcp.json or .mates/config.yaml yet: those will be asked about)\n";
  return 0;
}

}  // namespace

Status AdmitWorkspaceFiles(const Workspace& ws) {
  trust::TrustStore store;
  // The files that would run something, not trusted as they are now.
  struct Asked {
    trust::FileState file;
    std::vector<std::string> runs;
  };
  std::vector<Asked> asked;
  for (const char* name : {".mcp.json", ".mates/config.yaml"}) {
    MATES_ASSIGN_OR_RETURN(trust::FileState f, store.CheckFile(ws.root(), name));
    if (f.trust == trust::FileTrust::kAbsent || f.trust == trust::FileTrust::kTrusted) continue;
    std::vector<std::string> runs = WhatItRuns(ws, f);
    // A config that runs nothing is not worth a question (what else it
    // asks for is refused where it is read, and said there).
    if (f.file == ".mcp.json" || !runs.empty()) asked.push_back({std::move(f), std::move(runs)});
  }
  if (asked.empty()) return Status::Ok();
  if (::isatty(STDIN_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1) {
    for (const auto& [f, runs] : asked) {
      std::cerr << (ws.root() / f.file).string()
                << (f.trust == trust::FileTrust::kChanged ? " changed since you trusted this workspace."
                                                          : " is not trusted yet.")
                << (f.file == ".mcp.json" ? " It would start these MCP servers:\n"
                                          : " It would run these hooks (on your agents' events):\n");
      for (const auto& line : runs) std::cerr << "  " << line << "\n";
    }
    std::cerr << "Trust this workspace's files and run them? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer == "y" || answer == "Y" || answer == "yes") {
      MATES_RETURN_IF_ERROR(store.Trust(ws.root()).status());
      std::cerr << "trusted (mates trust --revoke takes it back)\n";
      return Status::Ok();
    }
  }
  // (What a config's hooks are not run for is said where they are read.)
  for (const auto& [f, runs] : asked) {
    if (f.file != ".mcp.json") continue;
    std::cerr << "mates: warning: " << mcp::UntrustedReason(f, ws.root()) << " (" << runs.size()
              << " server(s) skipped)" << std::endl;
  }
  return Status::Ok();
}

void AddTrustCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<TrustArgs>();
  CLI::App* cmd = app.add_subcommand(
      "trust", "Trust this workspace's own files (.mcp.json, .mates/config.yaml) as they are now, so they may run");
  auto* list = cmd->add_flag("--list", a->list, "The trusted workspaces, and whether their files changed since");
  auto* revoke = cmd->add_flag("--revoke", a->revoke, "Trust this workspace no longer");
  list->excludes(revoke);
  cmd->add_flag("--json", a->json, "With --list: one JSON document");
  cmd->callback([&g, a] { g.action = [&g, a] { return Trust(g, *a); }; });
}

}  // namespace mates::cli
