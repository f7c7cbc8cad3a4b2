#include "git/merge_tree.h"

#include <optional>

#include "git/in_process.h"

namespace mates::git {

namespace {

// git's files and messages can be long; what a person reads of them.
constexpr size_t kMaxMessages = 8000;
constexpr size_t kMaxConflicts = 10000;

}  // namespace

Result<TreeMerge> MergeTree(const Git& g, const std::string& ours, const std::string& theirs,
                            const CancelToken* cancel) {
  if (!IsCommitId(ours) || !IsCommitId(theirs)) {
    return Status::InvalidArgument("merge-tree takes commit ids");
  }
  // Two sides' changes to different files: their union, in this process.
  if (auto repo = InProcessRepo::Open(g.dir()); repo.ok()) {
    if (auto tree = repo->MergeUnion(ours, theirs); tree.ok() && tree->has_value()) {
      TreeMerge m;
      m.clean = true;
      m.tree = **tree;
      return m;
    }
  }
  // -z: NUL after the tree and after each file (names may hold newlines);
  // an empty field ends the files, then git's messages.
  MATES_ASSIGN_OR_RETURN(GitOutput r, g.Run({"merge-tree", "--write-tree", "--name-only", "-z", ours, theirs},
                                            kGitTreeS, cancel));
  if (r.exit_code != 0 && r.exit_code != 1) {
    std::string why = r.err.empty() ? r.out : r.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return Status::FailedPrecondition("git merge-tree: " + (why.empty() ? "exit " + std::to_string(r.exit_code) : why));
  }
  TreeMerge m;
  m.clean = r.exit_code == 0;
  size_t at = r.out.find('\0');
  m.tree = r.out.substr(0, at == std::string::npos ? r.out.find('\n') : at);
  while (!m.tree.empty() && (m.tree.back() == '\n' || m.tree.back() == '\r')) m.tree.pop_back();
  if (!IsCommitId(m.tree)) return Status::FailedPrecondition("git merge-tree wrote no tree");
  if (at == std::string::npos) return m;
  size_t from = at + 1;
  while (from < r.out.size()) {
    size_t end = r.out.find('\0', from);
    if (end == std::string::npos) end = r.out.size();
    if (end == from) {  // the empty field: messages follow
      from = end + 1;
      break;
    }
    if (m.conflicts.size() < kMaxConflicts) m.conflicts.push_back(r.out.substr(from, end - from));
    from = end + 1;
  }
  // Messages, each "<n> NUL <path>… NUL <type> NUL <text> NUL"; the
  // conflicts' texts are what a person reads of why.
  auto field = [&]() -> std::optional<std::string> {
    if (from >= r.out.size()) return std::nullopt;
    size_t end = r.out.find('\0', from);
    if (end == std::string::npos) end = r.out.size();
    std::string f = r.out.substr(from, end - from);
    from = end + 1;
    return f;
  };
  while (!m.clean && m.messages.size() < kMaxMessages) {
    auto n = field();
    if (!n || n->empty() || n->size() > 6 || n->find_first_not_of("0123456789") != std::string::npos) break;
    for (int i = std::stoi(*n); i > 0; --i) (void)field();
    auto type = field();
    auto text = field();
    if (!type || !text) break;
    if (text->rfind("CONFLICT", 0) == 0) m.messages += *text + (text->empty() || text->back() != '\n' ? "\n" : "");
  }
  return m;
}

Result<std::string> CommitMerge(const Git& g, const std::string& tree, const std::string& ours,
                                const std::string& theirs, const std::string& message, const CancelToken* cancel) {
  if (!IsCommitId(tree) || !IsCommitId(ours) || !IsCommitId(theirs)) {
    return Status::InvalidArgument("commit-tree takes object ids");
  }
  if (auto repo = InProcessRepo::Open(g.dir()); repo.ok()) {
    if (auto made = repo->CommitTree(tree, {ours, theirs}, g.who(), message); made.ok()) return made;
  }
  MATES_ASSIGN_OR_RETURN(std::string id,
                         g.Ok({"commit-tree", tree, "-p", ours, "-p", theirs, "-m", message}, kGitQuickS, cancel));
  if (!IsCommitId(id)) return Status::FailedPrecondition("git commit-tree wrote no commit");
  return id;
}

}  // namespace mates::git
