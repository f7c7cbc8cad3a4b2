#include "git/git.h"

#include <cstdlib>
#include <sstream>

#include "core/subprocess.h"

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

Result<GitOutput> Git::Run(const std::vector<std::string>& args, double timeout_s,
                           const CancelToken* cancel) const {
  SubprocessOptions o;
  o.argv = {"git", "-C", dir_.string(), "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false",
            "-c", "user.name=" + who_.name, "-c", "user.email=" + who_.email, "-c", "core.quotePath=false",
            // Checkouts (a new worktree, the scratch one) on every core.
            "-c", "checkout.workers=0"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = ChildEnvironment(/*c_locale=*/true);
  // A team's remote (DESIGN §13) reached over ssh with the user's agent.
  // Git's alone: a merge check runs code a model wrote.
  if (const char* agent = std::getenv("SSH_AUTH_SOCK")) o.env->push_back(std::string("SSH_AUTH_SOCK=") + agent);
  o.timeout_s = timeout_s;
  o.max_output = 4 << 20;
  auto r = RunSubprocess(o, cancel);
  if (!r.ok()) return Status::FailedPrecondition("cannot run git: " + r.status().message());
  if (r->timed_out) return Status::Timeout("git " + args.front() + " timed out");
  if (r->cancelled) return Status::Cancelled("git " + args.front() + " was interrupted");
  GitOutput out;
  out.exit_code = r->term_signal != 0 ? 128 + r->term_signal : r->exit_code;
  out.out = std::move(r->out);
  out.err = std::move(r->err);
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
  if (major < 2 || (major == 2 && minor < 20)) {
    return Status::FailedPrecondition("worktree isolation needs git 2.20 or newer; this is " + *v);
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
  auto r = Git(".").Run({"check-ref-format", "--branch", name}, 30);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::InvalidArgument("'" + name + "' is not a valid branch name");
  return Status::Ok();
}

}  // namespace mates::git
