#include "git/git.h"

#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "core/subprocess.h"
#include "git/in_process.h"

namespace mates::git {

std::vector<std::string> ChildEnvironment(bool c_locale) {
  std::vector<std::string> env;
  static const char* const kAllowed[] = {"HOME", "USER", "LOGNAME", "TZ", "TMPDIR", "PATH"};
  for (const char* k : kAllowed) {
    const char* v = std::getenv(k);
    if (v != nullptr) env.push_back(std::string(k) + "=" + v);
  }
  if (std::getenv("PATH") == nullptr) env.push_back("PATH=/usr/local/bin:/usr/bin:/bin");
  if (c_locale) {
    env.push_back("LC_ALL=C");
  } else {
    for (const char* k : {"LANG", "LC_ALL", "LC_CTYPE"}) {
      const char* v = std::getenv(k);
      if (v != nullptr) env.push_back(std::string(k) + "=" + v);
    }
  }
  env.push_back("GIT_TERMINAL_PROMPT=0");
  env.push_back("GIT_CONFIG_NOSYSTEM=1");
  return env;
}

namespace {

// What a repository's own config may set that makes git run a command (or
// reach elsewhere): each such key found in the repository's files is given
// a harmless value on the command line, which wins over every file. A
// teammate can write .git/config (until the sandbox makes it read-only,
// DESIGN §18), and the host runs git there (DESIGN §19).
std::optional<std::string> HarmlessValue(const std::string& key) {
  auto dot = key.find('.');
  auto last = key.rfind('.');
  const std::string section = key.substr(0, dot);
  const std::string var = key.substr(last + 1);
  const bool sub = dot != last;  // section.<subsection>.var
  if (section == "core" && !sub) {
    if (var == "fsmonitor") return "false";
    if (var == "sshcommand") return "ssh";
    if (var == "gitproxy") return "none";
    if (var == "askpass") return "";
    if (var == "editor") return "true";
    if (var == "pager") return "cat";
    return std::nullopt;
  }
  if (section == "sequence" && var == "editor") return "true";
  if (section == "pager") return "false";
  if (section == "credential" && var == "helper") return "";
  if (section == "diff" && (var == "external" || var == "command")) return "";
  if (section == "diff" && var == "textconv") return "cat";
  if (section == "filter" && (var == "clean" || var == "smudge")) return "cat";
  if (section == "filter" && var == "process") return "";
  if (section == "filter" && var == "required") return "false";
  if (section == "merge" && sub && var == "driver") return "false";
  if (section == "remote" && var == "uploadpack") return "git-upload-pack";
  if (section == "remote" && var == "receivepack") return "git-receive-pack";
  if (section == "gpg" && var == "program") return "gpg";
  return std::nullopt;  // nothing to neutralise
}

struct Stamp {
  std::string path;
  int64_t mtime_ns = -1;
  int64_t size = -1;
  ino_t ino = 0;
  bool operator==(const Stamp&) const = default;
};

Stamp StampOf(const fs::path& dir, const std::string& file) {
  Stamp s;
  s.path = file;
  struct stat st {};
  const fs::path p = fs::path(file).is_absolute() ? fs::path(file) : dir / file;
  if (::stat(p.c_str(), &st) == 0) {
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    s.size = st.st_size;
    s.ino = st.st_ino;
  }
  return s;
}

struct Scan {
  std::vector<Stamp> files;            // the repository's config files, as scanned
  std::vector<std::string> overrides;  // "-c", "key=value", ...
};

// The overrides for the repository at `dir`, scanned again whenever one of
// its config files changed (a stat each; the scan is a git process).
std::vector<std::string> RepositoryOverrides(const fs::path& dir) {
  static std::mutex mu;
  static std::map<std::string, Scan> scans;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = scans.find(dir.string());
    if (it != scans.end()) {
      bool same = true;
      for (const Stamp& s : it->second.files) same = same && StampOf(dir, s.path) == s;
      if (same) return it->second.overrides;
    }
  }
  SubprocessOptions o;
  o.argv = {"git", "-C", dir.string(), "config", "--list", "--show-scope", "--show-origin", "-z"};
  o.env = ChildEnvironment(/*c_locale=*/true);
  o.timeout_s = kGitQuickS;
  o.max_output = 4 << 20;
  Scan scan;
  auto r = RunSubprocess(o);
  if (r.ok() && r->exit_code == 0) {
    // scope NUL origin NUL key LF value NUL, for every setting.
    std::vector<std::string> fields;
    size_t from = 0;
    for (size_t at; (at = r->out.find('\0', from)) != std::string::npos; from = at + 1) {
      fields.push_back(r->out.substr(from, at - from));
    }
    std::set<std::string> seen_files;
    for (size_t i = 0; i + 2 < fields.size(); i += 3) {
      const std::string& scope = fields[i];
      if (scope != "local" && scope != "worktree") continue;
      if (fields[i + 1].rfind("file:", 0) == 0 && seen_files.insert(fields[i + 1].substr(5)).second) {
        scan.files.push_back(StampOf(dir, fields[i + 1].substr(5)));
      }
      const std::string key = fields[i + 2].substr(0, fields[i + 2].find('\n'));
      if (auto value = HarmlessValue(key)) scan.overrides.insert(scan.overrides.end(), {"-c", key + "=" + *value});
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  scans[dir.string()] = scan;
  return scan.overrides;
}

}  // namespace

Result<GitOutput> Git::Run(const std::vector<std::string>& args, double timeout_s,
                           const CancelToken* cancel) const {
  SubprocessOptions o;
  o.argv = {"git", "-C", dir_.string()};
  // The repository's own command-running settings first: what follows wins.
  for (auto& a : RepositoryOverrides(dir_)) o.argv.push_back(std::move(a));
  o.argv.insert(o.argv.end(), {"-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "-c",
                               "protocol.ext.allow=never", "-c", "user.name=" + who_.name, "-c",
                               "user.email=" + who_.email, "-c", "core.quotePath=false",
                               // Checkouts (a new worktree, the scratch one) on every core.
                               "-c", "checkout.workers=0"});
  // Whatever any config says, here or in a repository git would descend
  // into (these reach child gits too, through GIT_CONFIG_PARAMETERS): no
  // fsmonitor program, no pager or editor, and no submodule entered — an
  // embedded repository's config is its author's.
  static const char* const kFixed[] = {
      "core.fsmonitor=false",          "core.untrackedCache=false", "core.pager=cat",
      "core.editor=true",              "core.askPass=",             "submodule.recurse=false",
      "diff.ignoreSubmodules=all",     "status.submoduleSummary=false", "fetch.recurseSubmodules=false",
      "push.recurseSubmodules=no",
      // No housekeeping started by mates' own commands: `git commit`, `merge`
      // and `fetch` would each run `git maintenance run --auto` (or `gc
      // --auto`) and wait for it, a process per commit and merge on the
      // merge train's path (DESIGN §30). The person's own git keeps it.
      "gc.auto=0", "maintenance.auto=false"};
  for (const char* kv : kFixed) o.argv.insert(o.argv.end(), {"-c", kv});
  // (Without the global config, the folder mates runs git in is the safe one.)
  std::error_code ec;
  o.argv.insert(o.argv.end(), {"-c", "safe.directory=" + fs::absolute(dir_, ec).lexically_normal().string()});
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = ChildEnvironment(/*c_locale=*/true);
  // No global config (the person's ~/.gitconfig may name filters or an
  // fsmonitor that would run on a teammate's files) but for the commands
  // that reach the team's remote.
  if (reach_ == Reach::kLocal) o.env->push_back("GIT_CONFIG_GLOBAL=/dev/null");
  if (!index_.empty()) o.env->push_back("GIT_INDEX_FILE=" + index_.string());
  if (!who_.date.empty()) o.env->insert(o.env->end(), {"GIT_AUTHOR_DATE=" + who_.date, "GIT_COMMITTER_DATE=" + who_.date});
  // A team's remote (DESIGN §13) reached over ssh with the user's agent.
  // Git's alone: a merge check runs code a model wrote.
  if (const char* agent = std::getenv("SSH_AUTH_SOCK")) o.env->push_back(std::string("SSH_AUTH_SOCK=") + agent);
  o.timeout_s = timeout_s;
  o.max_output = max_output_;
  auto r = RunSubprocess(o, cancel);
  if (!r.ok()) return Status::FailedPrecondition("cannot run git: " + r.status().message());
  if (r->timed_out) return Status::Timeout("git " + args.front() + " timed out");
  if (r->cancelled) return Status::Cancelled("git " + args.front() + " was interrupted");
  GitOutput out;
  out.exit_code = r->term_signal != 0 ? 128 + r->term_signal : r->exit_code;
  out.out = std::move(r->out);
  out.err = std::move(r->err);
  out.out_cut = r->out_dropped;
  return out;
}

Result<std::string> Git::Ok(const std::vector<std::string>& args, double timeout_s,
                            const CancelToken* cancel) const {
  MATES_ASSIGN_OR_RETURN(GitOutput r, Run(args, timeout_s, cancel));
  if (r.exit_code != 0) {
    std::string cmd = "git";
    for (const auto& a : args) cmd += " " + a;
    std::string why = r.err.empty() ? r.out : r.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    if (why.size() > 2000) why = "…" + why.substr(why.size() - 2000);
    return Status::FailedPrecondition(cmd + ": " + (why.empty() ? "exit " + std::to_string(r.exit_code) : why));
  }
  if (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return r.out;
}

bool IsCommitId(const std::string& s) {
  if (s.size() != 40 && s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status CheckGitVersion() {
  auto v = Git(".").Ok({"--version"}, 30);
  if (!v.ok()) return Status::FailedPrecondition("worktree isolation needs git: " + v.status().message());
  // "git version 2.39.5"
  int major = 0, minor = 0;
  if (std::sscanf(v->c_str(), "git version %d.%d", &major, &minor) != 2) {
    return Status::FailedPrecondition("cannot read git's version from '" + *v + "'");
  }
  if (major < 2 || (major == 2 && minor < 38)) {
    return Status::FailedPrecondition("worktree isolation needs git 2.38 or newer (merge-tree --write-tree); this is " +
                                      *v);
  }
  return Status::Ok();
}

Result<fs::path> RepoTop(const fs::path& dir) {
  auto top = Git(dir).Run({"rev-parse", "--show-toplevel"}, 30);
  if (!top.ok()) return top.status();
  if (top->exit_code != 0 || top->out.empty()) {
    return Status::FailedPrecondition(dir.string() + " is not a git repository (worktree isolation needs one: git init, "
                                      "and commit something)");
  }
  std::string t = top->out;
  if (t.back() == '\n') t.pop_back();
  return fs::path(t);
}

Result<std::string> ResolveCommit(const Git& g, const std::string& ref) {
  if (auto repo = InProcessRepo::Open(g.dir()); repo.ok()) {
    if (auto at = repo->Resolve(ref); at.ok()) return at;
  }
  MATES_ASSIGN_OR_RETURN(GitOutput r, g.Run({"rev-parse", "--verify", "--quiet", ref + "^{commit}"}, 30));
  if (r.exit_code != 0) return std::string();
  std::string c = r.out;
  if (!c.empty() && c.back() == '\n') c.pop_back();
  return c;
}

Status ValidateBranchName(const std::string& name) {
  if (name.empty() || name.size() > 200 || name[0] == '-') {
    return Status::InvalidArgument("'" + name + "' is not a valid branch name");
  }
  // A name git accepted once is valid for good (the rule is git's, not a
  // repository's): the queue asks for every request, a process each.
  static std::mutex mu;
  static std::set<std::string> valid;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (valid.count(name) != 0) return Status::Ok();
  }
  auto r = Git(".").Run({"check-ref-format", "--branch", name}, 30);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::InvalidArgument("'" + name + "' is not a valid branch name");
  std::lock_guard<std::mutex> lock(mu);
  if (valid.size() < 4096) valid.insert(name);
  return Status::Ok();
}

Checkout CheckoutAt(const fs::path& dir) {
  Checkout at;
  std::error_code ec;
  if (!fs::exists(dir / ".git", ec)) return at;  // not a repository's top: no git process at all
  const Git g(dir);
  auto head = g.Run({"rev-parse", "--verify", "-q", "HEAD"}, kGitQuickS);
  if (!head.ok() || head->exit_code != 0) return at;
  at.commit = head->out.substr(0, head->out.find('\n'));
  auto branch = g.Run({"symbolic-ref", "--short", "-q", "HEAD"}, kGitQuickS);
  if (branch.ok() && branch->exit_code == 0) at.branch = branch->out.substr(0, branch->out.find('\n'));
  return at;
}

}  // namespace mates::git
