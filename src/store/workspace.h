// Workspace: where a team's files live (DESIGN §2). Every path mates reads or
// writes under W is built here, from names that were validated first.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mates {

namespace fs = std::filesystem;

class Workspace {
 public:
  // `root` is made absolute, so that paths compare equal wherever built.
  explicit Workspace(const fs::path& root);

  const fs::path& root() const { return root_; }
  fs::path TeamsDir() const { return root_ / ".teams"; }
  fs::path TeamDir(std::string_view team) const { return TeamsDir() / team; }
  fs::path ConfigPath(std::string_view team) const { return TeamDir(team) / "config.json"; }
  fs::path ConfigLockPath(std::string_view team) const { return TeamDir(team) / "config.lock"; }
  fs::path MessagesLogPath(std::string_view team) const {
    return TeamDir(team) / "messages.jsonl";
  }
  fs::path MessagesLockPath(std::string_view team) const {
    return TeamDir(team) / "messages.lock";
  }
  fs::path RequestsDir(std::string_view team) const { return TeamDir(team) / "requests"; }
  fs::path AgentsDir(std::string_view team) const { return TeamDir(team) / "agents"; }
  // A member's journal (its transcript, DESIGN §4).
  fs::path JournalPath(std::string_view team, std::string_view member) const {
    return AgentsDir(team) / (std::string(member) + ".jsonl");
  }
  fs::path MergesDir(std::string_view team) const { return TeamDir(team) / "merges"; }
  // Teammates' git worktrees (DESIGN §12), and the merge queue's scratch one.
  fs::path WorktreesDir(std::string_view team) const { return root_ / ".mates" / "worktrees" / team; }
  fs::path TasksDir(std::string_view team) const { return root_ / ".tasks" / team; }

  // Inbox file names: "<member>_inbox.jsonl" and friends.
  static std::string InboxFileName(std::string_view member) {
    return std::string(member) + "_inbox.jsonl";
  }

 private:
  fs::path root_;
};

// The workspace of the CLI: --workspace, else $MATES_WORKSPACE, else the
// current directory.
Workspace WorkspaceFrom(const std::string& flag);

}  // namespace mates
