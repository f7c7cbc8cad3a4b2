// Git in this process (git/in_process.h) against the `git` command, on
// real repositories: what libgit2 makes is byte for byte what git makes
// (the same tree and commit ids), what only git decides is left to it,
// and a repository libgit2 cannot open still merges, through git.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "git/git.h"
#include "git/in_process.h"
#include "git/merge_tree.h"
#include "git/provenance.h"
#include "support/test_util.h"

namespace mates::git {
namespace {

using mates::testing::TempDir;
using mates::testing::WriteAll;

// A repository at `dir` with `git`, its commits by a fixed identity at a
// fixed date (the same work is the same commit id, whoever makes it).
struct Repo {
  TempDir tmp;
  fs::path dir = tmp.path() / "r";
  Identity who{"tester", "tester@localhost", "1700000000 +0100"};

  explicit Repo(const std::vector<std::string>& init = {}) {
    fs::create_directories(dir);
    std::vector<std::string> args = {"init", "-q", "-b", "main"};
    args.insert(args.end(), init.begin(), init.end());
    Must(args);
  }
  std::string Must(const std::vector<std::string>& args) {
    auto r = Git(dir, who).Ok(args);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : "";
  }
  // Writes `files` (path → text; "" deletes it) on branch `on` and commits.
  std::string Commit(const std::string& on, const std::vector<std::pair<std::string, std::string>>& files,
                     const std::string& message) {
    if (Must({"symbolic-ref", "--short", "HEAD"}) != on) Must({"checkout", "-q", on});
    for (const auto& [path, text] : files) {
      if (text.empty()) {
        Must({"rm", "-q", "--", path});
      } else {
        WriteAll(dir / path, text);
        Must({"add", "--", path});
      }
    }
    Must({"commit", "-q", "--no-verify", "-m", message});
    return Must({"rev-parse", "HEAD"});
  }
  // What `git merge-tree --write-tree` says: the tree, or "" on a conflict.
  std::string GitMerge(const std::string& ours, const std::string& theirs) {
    auto r = Git(dir, who).Run({"merge-tree", "--write-tree", ours, theirs});
    EXPECT_TRUE(r.ok());
    if (!r.ok() || r->exit_code != 0) return "";
    return r->out.substr(0, r->out.find('\n'));
  }
  InProcessRepo Open() {
    auto repo = InProcessRepo::Open(dir);
    EXPECT_TRUE(repo.ok()) << repo.status().message();
    return std::move(*repo);
  }
};

// A base with two files and a folder, and two branches from it.
struct TwoSides : Repo {
  std::string base;
  TwoSides() {
    base = Commit("main", {{"a.txt", "one\ntwo\nthree\n"}, {"dir/b.txt", "b\n"}, {"gone.txt", "g\n"}}, "base");
    Must({"branch", "ours"});
    Must({"branch", "theirs"});
  }
};

TEST(InProcessGitTest, AUnionOfTwoSidesIsTheTreeAndCommitGitMakes) {
  TwoSides r;
  const std::string ours = r.Commit("ours", {{"a.txt", "ONE\ntwo\nthree\n"}, {"dir/c.txt", "c\n"}}, "ours");
  // Theirs: a new folder, a changed file beside one ours added, an
  // executable and a symbolic link.
  WriteAll(r.dir / "run.sh", "#!/bin/sh\n");
  fs::permissions(r.dir / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  r.Must({"checkout", "-q", "theirs"});
  WriteAll(r.dir / "run.sh", "#!/bin/sh\n");
  fs::permissions(r.dir / "run.sh", fs::perms::owner_all, fs::perm_options::add);
  fs::create_symlink("a.txt", r.dir / "link");
  r.Must({"add", "run.sh", "link"});
  const std::string theirs = r.Commit("theirs", {{"x/y/z.txt", "z\n"}, {"dir/b.txt", "B\n"}}, "theirs");

  auto repo = r.Open();
  auto tree = repo.MergeUnion(ours, theirs);
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  ASSERT_TRUE(tree->has_value());
  EXPECT_EQ(**tree, r.GitMerge(ours, theirs));
  // Either way round.
  auto back = repo.MergeUnion(theirs, ours);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ(**back, r.GitMerge(theirs, ours));

  // The merge commit: the id `git commit-tree` gives the same input.
  auto made = repo.CommitTree(**tree, {ours, theirs}, r.who, "Merge task #1: x (w1)");
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(*made, r.Must({"commit-tree", **tree, "-p", ours, "-p", theirs, "-m", "Merge task #1: x (w1)"}));
  // And through the queue's own call.
  auto merged = MergeTree(Git(r.dir, r.who), ours, theirs);
  ASSERT_TRUE(merged.ok());
  EXPECT_TRUE(merged->clean);
  EXPECT_EQ(merged->tree, **tree);

  // A side that is the other's ancestor: the other's tree.
  auto ff = repo.MergeUnion(r.base, theirs);
  ASSERT_TRUE(ff.ok() && ff->has_value());
  EXPECT_EQ(**ff, r.GitMerge(r.base, theirs));
  auto up_to_date = repo.MergeUnion(theirs, r.base);
  ASSERT_TRUE(up_to_date.ok() && up_to_date->has_value());
  EXPECT_EQ(**up_to_date, r.GitMerge(theirs, r.base));
}

// Each case is git's to decide: MergeUnion declines it, and MergeTree
// answers as git does.
TEST(InProcessGitTest, WhatOnlyGitDecidesIsLeftToGit) {
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> ours, theirs;
    bool git_clean;
  };
  const std::vector<Case> cases = {
      // Lines apart in one file: git merges it, but it is a content merge.
      {"one file, two places", {{"a.txt", "ONE\ntwo\nthree\n"}}, {{"a.txt", "one\ntwo\nTHREE\n"}}, true},
      {"one line, two ways", {{"a.txt", "uno\ntwo\nthree\n"}}, {{"a.txt", "eins\ntwo\nthree\n"}}, false},
      {"the same file added twice", {{"n.txt", "1\n"}}, {{"n.txt", "2\n"}}, false},
      {"theirs deletes", {{"a.txt", "ONE\ntwo\nthree\n"}}, {{"gone.txt", ""}}, true},
      {"changed here, deleted there", {{"gone.txt", ""}}, {{"gone.txt", "G\n"}}, false},
      // A folder renamed on one side, a file added to it on the other:
      // git finds the rename and asks (merge.directoryRenames=conflict).
      {"a folder renamed, a file added to it", {{"dir/b.txt", ""}, {"moved/b.txt", "b\n"}},
       {{"dir/new.txt", "n\n"}}, false},
      {"a file where the other adds a folder", {{"thing", "file\n"}}, {{"thing/inner.txt", "i\n"}}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TwoSides r;
    const std::string ours = r.Commit("ours", c.ours, "ours");
    const std::string theirs = r.Commit("theirs", c.theirs, "theirs");
    auto repo = r.Open();
    auto tree = repo.MergeUnion(ours, theirs);
    ASSERT_TRUE(tree.ok()) << tree.status().message();
    EXPECT_FALSE(tree->has_value()) << "decided in process";
    const std::string by_git = r.GitMerge(ours, theirs);
    EXPECT_EQ(!by_git.empty(), c.git_clean);
    auto merged = MergeTree(Git(r.dir, r.who), ours, theirs);
    ASSERT_TRUE(merged.ok()) << merged.status().message();
    EXPECT_EQ(merged->clean, c.git_clean);
    if (c.git_clean) {
      EXPECT_EQ(merged->tree, by_git);
    }
  }
}

TEST(InProcessGitTest, ACrissCrossOrNoCommonHistoryIsGitsToo) {
  TwoSides r;
  const std::string o1 = r.Commit("ours", {{"o.txt", "o\n"}}, "o1");
  const std::string t1 = r.Commit("theirs", {{"t.txt", "t\n"}}, "t1");
  // Each side merges the other's first commit: two merge bases.
  r.Must({"checkout", "-q", "ours"});
  r.Must({"merge", "-q", "--no-edit", t1});
  r.Must({"checkout", "-q", "theirs"});
  r.Must({"merge", "-q", "--no-edit", o1});
  const std::string o2 = r.Commit("ours", {{"o2.txt", "o\n"}}, "o2");
  const std::string t2 = r.Commit("theirs", {{"t2.txt", "t\n"}}, "t2");
  auto repo = r.Open();
  auto criss = repo.MergeUnion(o2, t2);
  ASSERT_TRUE(criss.ok());
  EXPECT_FALSE(criss->has_value());
  auto merged = MergeTree(Git(r.dir, r.who), o2, t2);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->tree, r.GitMerge(o2, t2));

  r.Must({"checkout", "-q", "--orphan", "alone"});
  r.Must({"rm", "-rq", "--cached", "."});
  const std::string alone = r.Commit("alone", {{"solo.txt", "s\n"}}, "alone");
  auto apart = repo.MergeUnion(o2, alone);
  ASSERT_TRUE(apart.ok());
  EXPECT_FALSE(apart->has_value());
  EXPECT_FALSE(MergeTree(Git(r.dir, r.who), o2, alone).ok()) << "git refuses unrelated histories";
}

TEST(InProcessGitTest, RefsNotesAndAncestryReadAsGitReadsThem) {
  TwoSides r;
  const std::string ours = r.Commit("ours", {{"o.txt", "o\n"}}, "ours");
  auto repo = r.Open();
  EXPECT_EQ(*repo.Resolve("refs/heads/ours"), ours);
  EXPECT_EQ(*repo.Resolve("HEAD"), ours);
  EXPECT_EQ(*repo.Resolve(r.base), r.base);
  EXPECT_EQ(*repo.Resolve("refs/heads/nothing"), "");
  EXPECT_EQ(*ResolveCommit(Git(r.dir), "refs/heads/nothing"), "");
  EXPECT_TRUE(*repo.IsAncestor(r.base, ours));
  EXPECT_TRUE(*repo.IsAncestor(ours, ours));
  EXPECT_FALSE(*repo.IsAncestor(ours, r.base));
  EXPECT_FALSE(repo.IsAncestor("not-an-id", ours).ok());

  // A compare-and-swap: moved from where it is, not from where it was.
  auto moved = repo.MoveRef("refs/heads/main", ours, r.base, "mates: merge task #1");
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_TRUE(*moved);
  EXPECT_EQ(r.Must({"rev-parse", "main"}), ours);
  EXPECT_FALSE(*repo.MoveRef("refs/heads/main", r.base, r.base, "stale"));
  EXPECT_EQ(r.Must({"rev-parse", "main"}), ours);
  EXPECT_FALSE(*repo.MoveRef("refs/heads/none", ours, r.base, "no such branch"));
  EXPECT_NE(r.Must({"reflog", "show", "--format=%gs", "main"}).find("mates: merge task #1"), std::string::npos);

  // A note, replaced: git reads the last, as mates' JSON.
  ASSERT_TRUE(WriteNote(Git(r.dir, r.who), ours, Json{{"first", 1}}).ok());
  ASSERT_TRUE(WriteNote(Git(r.dir, r.who), ours, Json{{"mates", "merge/1"}, {"task", 7}}).ok());
  EXPECT_EQ(r.Must({"notes", "--ref", kNotesRef, "show", ours}), R"({"mates":"merge/1","task":7})");
  auto read = ReadNote(Git(r.dir), ours);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ((*read)["task"], 7);
  EXPECT_EQ(r.Must({"log", "-1", "--format=%an", kNotesRef}), "tester");
}

// A teammate's commit: HEAD read into a private index, `git add -A`
// there, then committed in process — the commit `git commit` makes.
TEST(InProcessGitTest, AnIndexIsCommittedAsGitCommitsIt) {
  Repo r;
  const std::string base = r.Commit("main", {{"a.txt", "a\n"}, {"old.txt", "o\n"}}, "base");
  const fs::path index = r.tmp.path() / "private-index";
  auto repo = r.Open();
  ASSERT_TRUE(repo.ReadHeadInto(index).ok());
  const Git staged = Git(r.dir, r.who).WithIndex(index);
  EXPECT_EQ(*repo.CommitIndex(index, r.who, "nothing"), "") << "HEAD's own tree is no commit";
  WriteAll(r.dir / "a.txt", "A\n");
  WriteAll(r.dir / "new/b.txt", "b\n");
  fs::remove(r.dir / "old.txt");
  ASSERT_TRUE(staged.Ok({"add", "-A", "--", "."}).ok());
  // git's whitespace clean-up of a message it is given.
  const std::string message = "Task #1: write   \n\n\n\nwith a body  \n\n";
  auto made = repo.CommitIndex(index, r.who, message);
  ASSERT_TRUE(made.ok()) << made.status().message();
  ASSERT_FALSE(made->empty());
  EXPECT_EQ(r.Must({"rev-parse", "main"}), *made) << "HEAD's branch moves";
  ASSERT_TRUE(r.Must({"update-ref", "refs/heads/main", base}).empty());
  ASSERT_TRUE(staged.Ok({"commit", "--quiet", "--no-verify", "-m", message}).ok());
  EXPECT_EQ(r.Must({"rev-parse", "main"}), *made) << "git made another commit of the same";

  // A repository inside: git decides what is left out, nothing is written.
  Repo inner;
  inner.Commit("main", {{"i.txt", "i\n"}}, "inner");
  fs::rename(inner.dir, r.dir / "embedded");
  ASSERT_TRUE(staged.Ok({"add", "-A", "--", "."}).ok());
  auto refused = repo.CommitIndex(index, r.who, "with a gitlink");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(r.Must({"rev-parse", "main"}), *made);
}

// A host killed while libgit2 held the branch's lock left its lock file:
// one older than this process (or than 30 s) is a dead host's and goes; a
// fresh one is another git's at work, and the commit is refused (the
// caller runs git, which says so).
TEST(InProcessGitTest, ALockFileAKilledHostLeftIsClearedAFreshOneIsNot) {
  Repo r;
  r.Commit("main", {{"a.txt", "a\n"}}, "base");
  const fs::path index = r.tmp.path() / "private-index";
  auto repo = r.Open();
  ASSERT_TRUE(repo.ReadHeadInto(index).ok());
  WriteAll(r.dir / "a.txt", "A\n");
  ASSERT_TRUE(Git(r.dir, r.who).WithIndex(index).Ok({"add", "-A", "--", "."}).ok());
  const fs::path lock = r.dir / ".git/refs/heads/main.lock";
  WriteAll(lock, "");
  EXPECT_FALSE(repo.CommitIndex(index, r.who, "fresh lock").ok());
  EXPECT_TRUE(fs::exists(lock));
  fs::last_write_time(lock, fs::file_time_type::clock::now() - std::chrono::seconds(60));
  auto made = repo.CommitIndex(index, r.who, "stale lock");
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_FALSE(fs::exists(lock));
  EXPECT_EQ(r.Must({"rev-parse", "main"}), *made);
}

// An owner's worktree taking the new target: a fast-forward in process
// leaves it as `git merge --ff-only` would, and refuses what git refuses.
TEST(InProcessGitTest, AWorktreeIsFastForwardedAsGitWouldOrLeftToGit) {
  Repo r;
  const std::string base = r.Commit("main", {{"a.txt", "a\n"}, {"old.txt", "o\n"}, {"keep.txt", "k\n"}}, "base");
  const fs::path wt = r.tmp.path() / "wt";
  r.Must({"worktree", "add", "-q", "-b", "mine", wt.string(), base});
  r.Commit("main", {{"a.txt", "A\n"}, {"d/new.txt", "n\n"}, {"old.txt", ""}}, "target moves");
  const std::string target = r.Must({"rev-parse", "main"});
  const Git g(wt, r.who);
  auto open = [&] {
    auto repo = InProcessRepo::Open(wt);
    EXPECT_TRUE(repo.ok()) << repo.status().message();
    return std::move(*repo);
  };
  auto head = [&] { return *g.Ok({"rev-parse", "HEAD"}); };

  // In the way: a change to a file the target changes, or an untracked
  // file where it adds one. git refuses both; so does this, changing nothing.
  WriteAll(wt / "a.txt", "mine\n");
  EXPECT_FALSE(*open().FastForward("refs/heads/main", "ff"));
  EXPECT_NE(g.Run({"merge", "--ff-only", "--quiet", "refs/heads/main"})->exit_code, 0);
  EXPECT_EQ(head(), base);
  EXPECT_EQ(mates::testing::ReadAll(wt / "a.txt"), "mine\n");
  ASSERT_TRUE(g.Ok({"checkout", "--", "a.txt"}).ok());
  WriteAll(wt / "d/new.txt", "untracked\n");
  EXPECT_FALSE(*open().FastForward("refs/heads/main", "ff"));
  EXPECT_EQ(head(), base);
  EXPECT_EQ(mates::testing::ReadAll(wt / "d/new.txt"), "untracked\n");
  fs::remove_all(wt / "d");

  // A change elsewhere stays, as git keeps it; the rest is the target's.
  WriteAll(wt / "keep.txt", "local\n");
  auto ff = open().FastForward("refs/heads/main", "merge main: Fast-forward");
  ASSERT_TRUE(ff.ok()) << ff.status().message();
  EXPECT_TRUE(*ff);
  EXPECT_EQ(head(), target);
  EXPECT_EQ(r.Must({"rev-parse", "mine"}), target);
  EXPECT_EQ(*g.Ok({"status", "--porcelain"}), " M keep.txt") << "git sees the worktree at the target";
  EXPECT_EQ(mates::testing::ReadAll(wt / "a.txt"), "A\n");
  EXPECT_EQ(mates::testing::ReadAll(wt / "d/new.txt"), "n\n");
  EXPECT_FALSE(fs::exists(wt / "old.txt"));
  EXPECT_TRUE(*open().FastForward("refs/heads/main", "again")) << "at the target already";

  // Diverged: no fast-forward, git's to merge.
  const std::string mine = Git(wt, r.who).Ok({"commit", "-q", "-a", "--no-verify", "-m", "mine"}).ok()
                               ? head() : "";
  r.Commit("main", {{"z.txt", "z\n"}}, "target moves again");
  EXPECT_FALSE(*open().FastForward("refs/heads/main", "ff"));
  EXPECT_EQ(head(), mine);
}

// A symlink an agent planted in its worktree (DESIGN §26) is never
// written through: untracked, ignored, or the target turning a committed
// one into a folder, the fast-forward refuses or replaces the link, and
// nothing lands outside the worktree.
TEST(InProcessGitTest, AFastForwardNeverWritesThroughASymlink) {
  struct Case {
    std::string name;
    bool ignored;    // the link is in the worktree's .gitignore
    bool committed;  // the link is in HEAD, the target makes it a folder
  };
  for (const Case& c : {Case{"untracked", false, false}, Case{"ignored", true, false}, Case{"committed", false, true}}) {
    SCOPED_TRACE(c.name);
    Repo r;
    const fs::path outside = r.tmp.path() / "outside";
    fs::create_directories(outside);
    const std::string base = r.Commit("main", {{"a.txt", "a\n"}}, "base");
    const fs::path wt = r.tmp.path() / "wt";
    r.Must({"worktree", "add", "-q", "-b", "mine", wt.string(), base});
    const Git g(wt, r.who);
    if (c.ignored) WriteAll(wt / ".gitignore", "d\n");  // the agent's, not committed
    fs::create_directory_symlink(outside, wt / "d");
    if (c.committed) {
      ASSERT_TRUE(g.Ok({"add", "d"}).ok());
      ASSERT_TRUE(g.Ok({"commit", "-q", "--no-verify", "-m", "a link"}).ok());
      r.Must({"merge", "-q", "--ff-only", "mine"});
      r.Must({"rm", "-q", "d"});
    }
    r.Commit("main", {{"d/new.txt", "n\n"}}, "a folder where the link is");
    auto repo = InProcessRepo::Open(wt);
    ASSERT_TRUE(repo.ok()) << repo.status().message();
    auto ff = repo->FastForward("refs/heads/main", "ff");
    EXPECT_TRUE(fs::is_empty(outside)) << "written through the link";
    if (ff.ok() && *ff) {
      EXPECT_FALSE(fs::is_symlink(wt / "d"));
      EXPECT_EQ(mates::testing::ReadAll(wt / "d/new.txt"), "n\n");
      EXPECT_EQ(*g.Ok({"rev-parse", "HEAD"}), r.Must({"rev-parse", "main"}));
    } else {
      EXPECT_TRUE(fs::is_symlink(wt / "d")) << "refused, it changed nothing";
    }
  }
}

// A repository libgit2 cannot open (SHA-256 objects) merges through git.
TEST(InProcessGitTest, ARepositoryLibgit2CannotOpenMergesThroughGit) {
  Repo r({"--object-format=sha256"});
  const std::string base = r.Commit("main", {{"a.txt", "a\n"}}, "base");
  ASSERT_EQ(base.size(), 64u);
  r.Must({"branch", "side"});
  const std::string ours = r.Commit("main", {{"o.txt", "o\n"}}, "ours");
  const std::string theirs = r.Commit("side", {{"t.txt", "t\n"}}, "theirs");
  EXPECT_EQ(*ResolveCommit(Git(r.dir), "refs/heads/side"), theirs);
  auto merged = MergeTree(Git(r.dir, r.who), ours, theirs);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_TRUE(merged->clean);
  EXPECT_EQ(merged->tree, r.GitMerge(ours, theirs));
  auto made = CommitMerge(Git(r.dir, r.who), merged->tree, ours, theirs, "Merge");
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(made->size(), 64u);
  EXPECT_TRUE(WriteNote(Git(r.dir, r.who), *made, Json{{"n", 1}}).ok());
}

// What a repository's config or attributes name is never run in process:
// a hook, an fsmonitor, a filter driver.
TEST(InProcessGitTest, NothingTheRepositoryNamesRunsInProcess) {
  TwoSides r;
  const fs::path marker = r.tmp.path() / "ran";
  const std::string touch = "touch " + marker.string();
  r.Must({"config", "core.fsmonitor", touch});
  r.Must({"config", "filter.evil.clean", touch});
  r.Must({"config", "filter.evil.smudge", touch});
  r.Must({"config", "core.hooksPath", (r.tmp.path() / "hooks").string()});
  for (const char* hook : {"post-commit", "reference-transaction", "post-rewrite"}) {
    WriteAll(r.tmp.path() / "hooks" / hook, "#!/bin/sh\n" + touch + "\n");
    fs::permissions(r.tmp.path() / "hooks" / hook, fs::perms::owner_all, fs::perm_options::add);
  }
  WriteAll(r.dir / ".gitattributes", "* filter=evil\n");
  const std::string ours = r.Commit("ours", {{"o.txt", "o\n"}}, "ours");
  const std::string theirs = r.Commit("theirs", {{"t.txt", "t\n"}}, "theirs");
  std::error_code ec;
  fs::remove(marker, ec);  // the test's own `git commit` ran them
  auto repo = r.Open();
  auto tree = repo.MergeUnion(ours, theirs);
  ASSERT_TRUE(tree.ok() && tree->has_value());
  auto made = repo.CommitTree(**tree, {ours, theirs}, r.who, "m");
  ASSERT_TRUE(made.ok());
  ASSERT_TRUE(repo.WriteNote(kNotesRef, *made, "{}", r.who).ok());
  ASSERT_TRUE(*repo.MoveRef("refs/heads/ours", *made, ours, "m"));
  EXPECT_EQ(*repo.Resolve("refs/heads/ours"), *made);
  EXPECT_FALSE(fs::exists(marker)) << "something the repository names ran";
}

}  // namespace
}  // namespace mates::git
