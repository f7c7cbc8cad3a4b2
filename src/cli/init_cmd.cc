// mates init (DESIGN §21): makes the workspace ready — what mates writes
// there (.teams/, .tasks/, .mates/ but its config.yaml) ignored by git,
// and a commented .mates/config.yaml that says what can be set. Nothing
// already there is overwritten; a second run changes nothing.
#include <iostream>

#include "cli/cli_common.h"
#include "core/files.h"

namespace mates::cli {
namespace {

// The lines mates adds to .gitignore: its state, not the workspace's
// config, which a repository may share (and which is used only once the
// person trusts it, DESIGN §19).
constexpr const char* kIgnored[] = {".teams/", ".tasks/", ".mates/*", "!.mates/config.yaml"};

constexpr const char* kConfig =
    R"(# mates: this workspace's settings (mates(1), docs/design.md). Everything is commented
# out: mates' defaults hold until you set something. A repository may ship
# this file; the parts that run commands or widen the sandbox are used only
# once you trust it as it is (`mates trust`).

# Where teams are kept: file: (this folder, the default) or a PostgreSQL
# database shared by hosts on several machines (`mates store init` first).
# store: postgres://mates@db.example/mates

# The sandbox of agents' tools: off | workspace (the default) | strict.
# sandbox:
#   mode: workspace
#   allow_write: [~/.cache/pip]
#   deny_read: [~/.config/acme]
#   network: {allow: [registry.npmjs.org]}

# Hooks, as Claude Code's (PreToolUse, PostToolUse, UserPromptSubmit,
# SessionStart, Stop, MergeQueued, MergeDecided, ...). `mates hooks list`
# shows what runs; `mates hooks test EVENT` tries one.
# hooks:
#   PreToolUse:
#     - matcher: bash
#       hooks:
#         - {type: command, command: ./scripts/check-command.sh, timeout: 10}

# MCP servers come from .mcp.json; their timeouts from here.
# mcp:
#   startup_timeout: 30
#   call_timeout: 120
)";

struct InitArgs {
  bool no_gitignore = false;
};

int Init(Globals& g, const InitArgs& a) {
  const Workspace ws = g.ws();
  std::error_code ec;
  if (!fs::is_directory(ws.root(), ec))
    return Fail(Status::NotFound("no folder " + ws.root().string()));
  if (!a.no_gitignore) {
    const fs::path file = ws.root() / ".gitignore";
    std::string text;
    if (auto had = ReadFilePrefix(file, 1 << 20); had.ok()) {
      text = *had;
    } else if (had.status().code() != StatusCode::kNotFound) {
      return Fail(had.status());
    }
    std::vector<std::string> lines;
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      lines.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
      at = nl == std::string::npos ? text.size() : nl + 1;
    }
    std::string added;
    for (const char* want : kIgnored) {
      if (std::find(lines.begin(), lines.end(), want) == lines.end())
        added += std::string(want) + "\n";
    }
    if (added.empty()) {
      std::cout << "  .gitignore: has mates' lines already\n";
    } else {
      if (!text.empty() && text.back() != '\n') text += "\n";
      text += (text.empty() ? "" : "\n") + std::string("# mates' state (mates init)\n") + added;
      if (Status s = WriteFileAtomic(file, text); !s.ok()) return Fail(s);
      std::cout << "  .gitignore: added .teams/, .tasks/ and .mates/ (but .mates/config.yaml)\n";
    }
  }
  const fs::path config = ws.root() / ".mates" / "config.yaml";
  if (fs::exists(config, ec)) {
    std::cout << "  .mates/config.yaml: there already, left as it is\n";
  } else {
    if (Status s = EnsureDir(config.parent_path()); !s.ok()) return Fail(s);
    if (Status s = WriteFileAtomic(config, kConfig); !s.ok()) return Fail(s);
    std::cout << "  .mates/config.yaml: written, every setting commented out\n";
  }
  std::cout << "ready: " << ws.root().string() << "\nnext: " << g.Mates()
            << " doctor                      # checks the provider, git, tmux, the sandbox\n      " << g.Mates()
            << " run \"say what you want done\"   # a lead, and the team it makes, work on it\n";
  return 0;
}

}  // namespace

void AddInitCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<InitArgs>();
  CLI::App* cmd =
      app.add_subcommand("init",
                         "Make this workspace ready: .gitignore lines for mates' state and a "
                         "commented .mates/config.yaml");
  cmd->add_flag("--no-gitignore", a->no_gitignore, "Leave .gitignore as it is");
  cmd->callback([&g, a] { g.action = [&g, a] { return Init(g, *a); }; });
}

}  // namespace mates::cli
