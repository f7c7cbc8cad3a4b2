#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "core/log.h"
#include "core/files.h"
#include "core/secrets.h"
#include "core/sha256.h"
#include "sandbox/launcher.h"
#include "sandbox/seccomp_filter.h"

namespace mates::sandbox {
namespace {

// What a hidden secret, the private tmp and the rules below are made of.
enum class Kind { kReadOnly, kWritable, kHideDir, kHideFile, kTmp, kGate, kProxy };

// A teammate's own object folder, in its worktree's admin folder.
constexpr const char* kQuarantineDir = "mates-objects";

// Where the agent's gate (Place::speaks) and its proxy are inside: their
// folders, bound read-only (a socket answers connect() on a read-only
// mount; one the host makes later, as a cluster's router does, shows up).
constexpr const char* kGateDirInside = "/tmp/.mates-gate";
constexpr const char* kProxyDirInside = "/tmp/.mates-net";

struct Mount {
  fs::path path;
  Kind kind;
};

// Of `rules`, the deepest whose path (`path_of`) is `p` or above it; null
// if none is. What decides how `p` looks inside (Mounts, Sight).
template <typename Rules, typename PathOf>
const typename Rules::value_type* Deepest(const Rules& rules, const fs::path& p, PathOf path_of) {
  const typename Rules::value_type* best = nullptr;
  long best_depth = -1;
  for (const auto& r : rules) {
    const fs::path& path = path_of(r);
    auto [end, at] = std::mismatch(path.begin(), path.end(), p.begin(), p.end());
    if (end != path.end()) continue;
    const long depth = std::distance(path.begin(), path.end());
    if (depth > best_depth) {
      best = &r;
      best_depth = depth;
    }
  }
  return best;
}

// The mounts of one process: the later rule for a path wins, and they are
// made parents first, so that a rule for a folder inside another's wins
// over it (W writable, W/.teams read-only, W/.mates/worktrees/t/w1
// writable again).
class Mounts {
 public:
  void Add(const fs::path& p, Kind k) {
    for (auto& m : list_) {
      if (m.path == p) {
        m.kind = k;
        return;
      }
    }
    list_.push_back({p, k});
  }
  // The rule that decides what `p` is inside: the deepest one at or above
  // it (nullptr: only `/`, read-only, covers it).
  const Mount* Covering(const fs::path& p) const {
    return Deepest(list_, p, [](const Mount& m) -> const fs::path& { return m.path; });
  }
  std::vector<Mount> Ordered() const {
    std::vector<Mount> out = list_;
    auto depth = [](const fs::path& p) { return std::distance(p.begin(), p.end()); };
    std::stable_sort(out.begin(), out.end(), [&](const Mount& a, const Mount& b) { return depth(a.path) < depth(b.path); });
    return out;
  }

 private:
  std::vector<Mount> list_;
};

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool IsDir(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool Exists(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// A path made absolute and free of symlinks where it exists (a bind of a
// symlink would bind its target, and rules compare paths).
fs::path Real(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : r;
}

std::string HomeDir() {
  const char* h = std::getenv("HOME");
  return h != nullptr && *h == '/' ? h : "";
}

std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t at = 0;
  while (at <= p.size()) {
    size_t end = p.find(':', at);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(at, end - at);
    at = end + 1;
    if (dir.empty() || dir[0] != '/') continue;
    fs::path c = fs::path(dir) / name;
    if (::access(c.c_str(), X_OK) == 0) return c.string();
  }
  return "";
}

const Result<std::string>& Filter() {
  static const Result<std::string> filter = BuildSeccompFilter();
  return filter;
}

// A pipe whose read end holds `data` (written whole, the write end closed).
Result<ScopedFd> PipeOf(const std::string& data) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  ScopedFd r(fds[0]), w(fds[1]);
  if (data.size() > 65536) return Status::Internal("the seccomp filter does not fit a pipe");
  MATES_RETURN_IF_ERROR(WriteAll(w.get(), data, "the seccomp filter"));
  return r;
}

// The namespace and privilege flags every sandboxed process gets. The
// kernel's knobs in /proc stay read-only: a fresh /proc is writable, and
// a host run as root maps to uid 0 inside, which owns /proc/sys (every
// capability is dropped, but many sysctls check only the file's mode).
// /sys is part of the read-only `/`.
std::vector<std::string> BaseArgs(const std::string& bwrap) {
  return {bwrap,          "--unshare-user", "--unshare-pid",  "--unshare-ipc", "--unshare-uts",
          "--unshare-cgroup-try", "--unshare-net", "--new-session", "--cap-drop", "ALL",
          "--ro-bind",    "/",              "/",              "--dev",         "/dev",
          "--proc",       "/proc",          "--ro-bind",      "/proc/sys",     "/proc/sys",
          "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger", "--ro-bind-try", "/proc/irq", "/proc/irq",
          "--ro-bind-try", "/proc/bus",    "/proc/bus",      "--ro-bind-try", "/proc/fs",  "/proc/fs"};
}

// The unix sockets bound in this machine's network namespace: each one's
// inode and path (/proc/net/unix: "Num RefCount Protocol Flags Type St
// Inode Path"), sorted. Abstract ones (@…) are not here: a sandbox's own
// network namespace has none of the host's. A socket bound again where
// one was (a server restarted) has a new inode.
std::vector<std::pair<uint64_t, fs::path>> BoundSocketEntries() {
  std::vector<std::pair<uint64_t, fs::path>> out;
  auto text = ReadFilePrefix("/proc/net/unix", 8 << 20);
  if (!text.ok()) return out;
  size_t at = text->find('\n');  // the header
  while (at != std::string::npos && at + 1 < text->size()) {
    const size_t from = at + 1;
    at = text->find('\n', from);
    const std::string_view line(text->data() + from, (at == std::string::npos ? text->size() : at) - from);
    // Seven fields, then the path, which may hold spaces.
    size_t field = 0, i = 0, inode_at = 0;
    while (i < line.size() && field < 7) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (field == 6) inode_at = i;
      while (i < line.size() && line[i] != ' ') ++i;
      ++field;
    }
    if (field < 7 || i + 1 >= line.size() || line[i + 1] != '/') continue;
    const uint64_t inode = std::strtoull(std::string(line.substr(inode_at, i - inode_at)).c_str(), nullptr, 10);
    out.emplace_back(inode, std::string(line.substr(i + 1)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Whether bwrap can make a sandbox here: "" if so, else why not.
std::string Probe(const std::string& bwrap, const std::string& filter) {
  auto fd = PipeOf(filter);
  if (!fd.ok()) return fd.status().message();
  SubprocessOptions o;
  o.argv = BaseArgs(bwrap);
  o.argv.insert(o.argv.end(), {"--seccomp", std::to_string(fd->get()), "--", "/bin/true"});
  o.keep_fds = {fd->get()};
  o.timeout_s = 30;
  auto r = RunSubprocess(o);
  if (!r.ok()) return r.status().message();
  if (r->exit_code != 0) {
    std::string why = Trim(r->err.empty() ? r->out : r->err);
    return "bubblewrap could not make a sandbox (" + (why.empty() ? "exit " + std::to_string(r->exit_code) : why) +
           "): the kernel must allow user namespaces for this user";
  }
  return "";
}

struct Machine {
  std::string bwrap;
  std::string missing;  // "" = it can
};

const Machine& ThisMachine() {
  static const Machine m = [] {
    Machine out;
    out.bwrap = FindProgram("bwrap");
    if (out.bwrap.empty()) {
      out.missing = "bubblewrap (bwrap) is not installed (scripts/setup installs it; Debian: apt-get install bubblewrap)";
      return out;
    }
    const auto& filter = Filter();
    if (!filter.ok()) {
      out.missing = "seccomp: " + filter.status().message();
      return out;
    }
    out.missing = Probe(out.bwrap, *filter);
    return out;
  }();
  return m;
}

// The folder where git keeps a linked worktree's own state (its index and
// HEAD), if `root` is a worktree of the repository whose common folder is
// `git_dir`. Read from the worktree's `.git` file, which the worktree's
// agent can write, and believed only if that folder (which it cannot
// write) points back at this worktree.
fs::path WorktreeAdminDir(const fs::path& git_dir, const fs::path& root) {
  auto text = ReadFilePrefix(root / ".git", 4096);
  if (!text.ok()) return {};
  std::string t = Trim(*text);
  if (t.rfind("gitdir: ", 0) != 0) return {};
  fs::path admin = Real(fs::path(t.substr(8)));
  if (admin.parent_path() != git_dir / "worktrees") return {};
  auto back = ReadFilePrefix(admin / "gitdir", 4096);
  if (!back.ok() || Real(fs::path(Trim(*back))) != Real(root / ".git")) return {};
  return admin;
}


// The repository's folder read-only; in a teammate's own worktree (`root`
// not `ws`) its index and objects writable, its HEAD and the files naming
// its repository not, and its new objects in a quarantine of its own
// (`*quarantine`).
Status GitMounts(const fs::path& git_dir, const fs::path& root, const fs::path& ws, Mounts& m,
                 fs::path* quarantine) {
  if (git_dir.empty()) return Status::Ok();
  m.Add(git_dir, Kind::kReadOnly);
  if (root != ws) {
    // A teammate's own worktree: its index and the object store may be
    // written (git add, git stash); its HEAD and the files naming where
    // its repository is may not, nor may any ref.
    if (fs::path admin = WorktreeAdminDir(git_dir, root); !admin.empty()) {
      // Its new objects go to a quarantine of its own, the shared store
      // read through alternates: it cannot rewrite an object that a ref
      // of the host's reaches (DESIGN §26). The host never takes objects
      // from there: it hashes the worktree's files itself (worktrees.h).
      *quarantine = admin / kQuarantineDir;
      if (::mkdir(quarantine->c_str(), 0700) != 0 && errno != EEXIST) {
        return Status::FromErrno("mkdir " + quarantine->string(), errno);
      }
      m.Add(admin, Kind::kWritable);
      for (const char* f : {"HEAD", "commondir", "gitdir", "config.worktree"}) {
        if (Exists(admin / f)) m.Add(admin / f, Kind::kReadOnly);
      }
    }
    if (Exists(root / ".git")) m.Add(root / ".git", Kind::kReadOnly);
  }
  return Status::Ok();
}

// Every unix socket of the host's that would still be in sight (in W,
// HOME, a folder of allow_write or anywhere else `/` shows): connecting
// to one on a read-only mount still works, and a person's tmux server,
// ssh-agent or container engine there runs what it is told, outside.
// Each is covered by /dev/null. Those under a hidden folder (the private
// /tmp, /run, this host's runtime folder) are out of sight already.
// A socket bound after it starts is not covered (/run and /tmp, where
// services put theirs, stay hidden whole): a long-lived sandbox that
// runs what a model wrote (a launcher) is given up once one comes into
// its sight (Sight, Sandbox::LauncherFor).
void CoverSockets(Mounts& m, Sight* sight) {
  if (sight != nullptr) {
    sight->rules.clear();
    for (const Mount& mt : m.Ordered()) {
      sight->rules.emplace_back(mt.path, mt.kind == Kind::kHideDir || mt.kind == Kind::kTmp || mt.kind == Kind::kHideFile);
    }
  }
  std::vector<std::pair<uint64_t, fs::path>> sockets = BoundSocketEntries();
  for (const auto& [inode, sock] : sockets) {
    const fs::path p = Real(sock);
    const Mount* cover = m.Covering(p);
    if (cover != nullptr && (cover->kind == Kind::kHideDir || cover->kind == Kind::kTmp)) continue;
    if (cover != nullptr && cover->kind == Kind::kHideFile) continue;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    m.Add(p, Kind::kHideFile);
  }
  if (sight != nullptr) sight->sockets = std::move(sockets);
}

// The machine's service and session folders, the host's own runtime
// folder (every agent's tmp and gate), and every secret hidden.
void HideWhatIsNotTheirs(const fs::path& runtime_dir, const std::vector<fs::path>& deny_read, Mounts& m) {
  // The runtime folders of the machine's services and sessions: D-Bus,
  // the user's session sockets, container engines, systemd.
  for (const char* run : {"/run", "/var/run"}) {
    if (IsDir(run)) m.Add(run, Kind::kHideDir);  // (/var/run is a link to /run on Debian: not a folder)
  }
  if (std::string home = HomeDir(); !home.empty() && home != "/" && IsDir(home)) m.Add(Real(home), Kind::kReadOnly);
  // The host's own folder: every agent's tmp and gate (a socket answers
  // connect() on a read-only mount: another agent's gate must be out of
  // sight, wherever $TMPDIR put it).
  m.Add(runtime_dir, Kind::kHideDir);
  std::vector<fs::path> secrets = DefaultSecrets();
  secrets.insert(secrets.end(), deny_read.begin(), deny_read.end());
  for (const auto& s : secrets) {
    fs::path p = Real(s);
    if (!Exists(p)) continue;
    m.Add(p, IsDir(p) ? Kind::kHideDir : Kind::kHideFile);
  }
}

// The mounts as bwrap's options, in order.
void AppendMounts(const Mounts& m, const fs::path& tmp, const fs::path& gate, const fs::path& proxy,
                  std::vector<std::string>* argv_out) {
  std::vector<std::string>& argv = *argv_out;
  for (const Mount& mt : m.Ordered()) {
    const std::string p = mt.path.string();
    switch (mt.kind) {
      case Kind::kReadOnly: argv.insert(argv.end(), {"--ro-bind", p, p}); break;
      case Kind::kWritable: argv.insert(argv.end(), {"--bind", p, p}); break;
      case Kind::kHideDir: argv.insert(argv.end(), {"--tmpfs", p, "--remount-ro", p}); break;
      case Kind::kHideFile: argv.insert(argv.end(), {"--ro-bind", "/dev/null", p}); break;
      case Kind::kTmp: argv.insert(argv.end(), {"--bind", tmp.string(), p}); break;
      // Bound over a folder of the private /tmp: it cannot be removed or
      // replaced, nor anything put in it.
      case Kind::kGate: argv.insert(argv.end(), {"--ro-bind", gate.parent_path().string(), p}); break;
      case Kind::kProxy: argv.insert(argv.end(), {"--ro-bind", proxy.parent_path().string(), p}); break;
    }
  }
}

// Every HTTP client's proxy variables, naming the relay inside.
void AppendProxyEnv(std::vector<std::string>* argv) {
  const std::string url = "http://127.0.0.1:" + std::to_string(kRelayPort);
  for (const char* var : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy",
                          "npm_config_https_proxy"}) {
    argv->insert(argv->end(), {"--setenv", var, url});
  }
  for (const char* var : {"NO_PROXY", "no_proxy"}) argv->insert(argv->end(), {"--setenv", var, "localhost,127.0.0.1,::1"});
}

}  // namespace

std::string PolicyDigest(const Settings& s) {
  // One line per rule, each list sorted: the same policy, whatever order
  // it was written in, has one digest.
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  std::vector<std::string> write, hide;
  for (const auto& p : s.allow_write) write.push_back(p.string());
  for (const auto& p : s.deny_read) hide.push_back(p.string());
  std::string text = "mode " + std::string(ModeName(s.mode)) + "\n";
  for (const auto& p : sorted(write)) text += "write " + p + "\n";
  for (const auto& p : sorted(hide)) text += "hide " + p + "\n";
  for (const auto& h : sorted(s.network_allow)) text += "net " + h + "\n";
  return "sha256:" + Sha256Hex(text);
}

std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kOff: return "off";
    case Mode::kWorkspace: return "workspace";
    case Mode::kStrict: return "strict";
  }
  return "?";
}

Result<Mode> ParseMode(std::string_view s) {
  if (s == "off") return Mode::kOff;
  if (s == "workspace") return Mode::kWorkspace;
  if (s == "strict") return Mode::kStrict;
  return Status::InvalidArgument("sandbox mode '" + std::string(s) + "' is not off, workspace or strict");
}

std::vector<fs::path> DefaultSecrets() {
  std::vector<fs::path> out;
  const std::string home = HomeDir();
  auto env_dir = [](const char* var) {
    const char* v = std::getenv(var);
    return v != nullptr && *v == '/' ? fs::path(v) : fs::path();
  };
  if (!home.empty()) {
    // Keys and logins of the tools people use: ssh and gpg, the cloud and
    // forge CLIs, package registries, agent CLIs, password stores and
    // keyrings, browser profiles (their cookies are logins).
    static const char* const kInHome[] = {
        ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/glab-cli", ".config/hub",
        ".kube", ".docker", ".config/containers/auth.json", ".netrc", ".git-credentials", ".config/git/credentials",
        ".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
        ".m2/settings.xml", ".gradle/gradle.properties", ".composer/auth.json", ".oci", ".config/doctl",
        ".terraform.d/credentials.tfrc.json", ".config/hcloud", ".fly", ".vault-token", ".s3cfg", ".boto",
        ".databrickscfg", ".config/rclone", ".config/op", ".password-store", ".local/share/keyrings", ".pki",
        // Agent CLIs: Claude Code, Codex, Gemini CLI, OpenCode.
        ".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json",
        ".gemini/google_accounts.json", ".gemini/.env", ".local/share/opencode/auth.json",
        // Browsers.
        ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
        ".config/vivaldi", ".config/opera", "snap/chromium", "snap/firefox", ".thunderbird"};
    for (const char* p : kInHome) out.push_back(fs::path(home) / p);
  }
  if (fs::path d = env_dir("CLAUDE_CONFIG_DIR"); !d.empty()) out.push_back(d / ".credentials.json");
  if (fs::path d = env_dir("CODEX_HOME"); !d.empty()) out.push_back(d / "auth.json");
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  fs::path config = xdg != nullptr && *xdg == '/' ? fs::path(xdg) : home.empty() ? fs::path() : fs::path(home) / ".config";
  if (!config.empty()) {
    // mates' own: what it trusts, and its MCP logins.
    out.push_back(config / "mates" / "trust.json");
    out.push_back(config / "mates" / "mcp-auth.json");
  }
  // The key files mates was given (ANTHROPIC_API_KEY_FILE, …).
  for (const auto& f : Secrets::KeyFiles()) out.push_back(f);
  // The machine's own, which only root reads: for a host run as root the
  // sandbox is uid 0 too (without capabilities; bubblewrap cannot map it
  // to another uid and keep the work root writable, which takes idmapped
  // mounts), so its file modes protect nothing there.
  for (const char* f : {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private",
                        "/etc/sudoers", "/etc/sudoers.d", "/root/.ssh", "/var/lib/sss/secrets"}) {
    out.push_back(f);
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/etc/ssh", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("ssh_host_", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == "_key") out.push_back(e.path());
  }
  return out;
}

std::string WhatIsMissing() { return ThisMachine().missing; }

std::vector<fs::path> ProgramFolders(const std::vector<std::string>& argv) {
  std::vector<fs::path> out;
  for (size_t i = 0; i < argv.size() && i <= 64; ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("/tmp/", 0) != 0 || arg.size() <= 5 || !Exists(arg)) continue;
    const fs::path top = Real(arg.substr(0, arg.find('/', 5)));
    if (IsDir(top) && top.string().rfind("/tmp/", 0) == 0) out.push_back(top);
  }
  return out;
}

std::shared_ptr<const Sandbox> Sandbox::Off() {
  static const std::shared_ptr<const Sandbox> off(new Sandbox(fs::path(), Settings{Mode::kOff, {}, {}, {}}, fs::path()));
  return off;
}

Sandbox::Sandbox(fs::path ws, Settings settings, fs::path runtime_dir)
    : ws_(std::move(ws)), settings_(std::move(settings)), runtime_dir_(std::move(runtime_dir)) {}

Sandbox::~Sandbox() {
  {
    std::lock_guard<std::mutex> lock(launchers_mu_);
    launchers_.clear();  // before the proxy and the runtime folder they use
  }
  proxy_.reset();
  if (!runtime_dir_.empty() && serving_ == Serving::kHere) {
    std::error_code ec;
    fs::remove_all(runtime_dir_, ec);  // symlinks in it are removed, never followed
  }
}

Result<std::shared_ptr<Sandbox>> Sandbox::Make(const fs::path& ws, Settings settings, fs::path runtime_dir,
                                               Serving serving) {
  if (settings.mode == Mode::kOff) {
    return std::shared_ptr<Sandbox>(new Sandbox(Real(ws), std::move(settings), fs::path()));
  }
  const Machine& m = ThisMachine();
  if (!m.missing.empty()) {
    return Status::FailedPrecondition("--sandbox " + std::string(ModeName(settings.mode)) + " cannot be made here: " +
                                      m.missing + "; run with --sandbox off to go without it");
  }
  MATES_RETURN_IF_ERROR(EnsureDir(runtime_dir));
  ::chmod(runtime_dir.c_str(), 0700);
  std::shared_ptr<Sandbox> s(new Sandbox(Real(ws), std::move(settings), Real(runtime_dir)));
  s->serving_ = serving;
  s->bwrap_ = m.bwrap;
  s->filter_ = *Filter();
  std::error_code ec;
  s->self_dir_ = Real(fs::read_symlink("/proc/self/exe", ec).parent_path());
  s->relay_ = !s->settings_.relay.empty() ? Real(s->settings_.relay) : s->self_dir_ / "mates-relay";
  // workspace: the hosts of network.allow through the host's proxy;
  // strict: no network at all.
  if (s->settings_.mode == Mode::kWorkspace && !s->settings_.network_allow.empty()) {
    for (const auto& entry : s->settings_.network_allow) {
      MATES_ASSIGN_OR_RETURN(NetRule r, ParseNetRule(entry));
      s->rules_.push_back(std::move(r));
    }
    if (::access(s->relay_.c_str(), X_OK) != 0) {
      return Status::FailedPrecondition("sandbox.network.allow needs mates-relay beside mates (" + s->relay_.string() +
                                        " is missing: reinstall mates)");
    }
    if (serving == Serving::kHere) {
      s->proxy_ = std::make_unique<NetProxy>(s->rules_, s->NetDir(), nullptr);
      s->proxy_of_ = [proxy = s->proxy_.get()](const std::string& team, const std::string& agent) {
        return proxy->SocketFor(team, agent);
      };
    }
  }
  // The repository's shared state: its common folder, when W is one.
  fs::path dotgit = s->ws_ / ".git";
  if (IsDir(dotgit)) {
    s->git_dir_ = dotgit;
  } else if (Exists(dotgit)) {
    auto text = ReadFilePrefix(dotgit, 4096);
    std::string t = text.ok() ? Trim(*text) : "";
    if (t.rfind("gitdir: ", 0) == 0) {
      // W is itself a linked worktree: its common folder is two up.
      fs::path admin = Real(s->ws_ / t.substr(8));
      s->git_dir_ = admin.parent_path().parent_path();
    }
  }
  return s;
}

Result<fs::path> Sandbox::TmpFor(const Place& place) const {
  // One folder a (team, agent) pair: SocketDirName is injective.
  fs::path tmp = runtime_dir_ / "tmp" / SocketDirName(place.team, place.agent);
  MATES_RETURN_IF_ERROR(EnsureDir(tmp));
  ::chmod(tmp.c_str(), 0700);
  return tmp;
}

Result<Confined> Sandbox::Wrap(const Place& place, SubprocessOptions o, Sight* sight, Init init) const {
  Confined c;
  if (!on()) {
    c.options = std::move(o);
    return c;
  }
  auto fd = PipeOf(filter_);
  if (!fd.ok()) return fd.status();
  MATES_ASSIGN_OR_RETURN(o.argv,
                         Args(place, o.argv, o.cwd, /*long_lived=*/o.interactive, std::to_string(fd->get()), sight, init));
  o.keep_fds.push_back(fd->get());
  c.options = std::move(o);
  c.keep = std::move(*fd);
  return c;
}

Result<std::vector<std::string>> Sandbox::WrapPane(const Place& place, const std::vector<std::string>& argv,
                                                   const std::string& cwd) const {
  if (!on()) return argv;
  // tmux starts the pane, so no descriptor of ours reaches bwrap: the
  // filter goes by file, opened as fd 3 by the shell that execs bwrap.
  const fs::path filter = runtime_dir_ / "seccomp.bpf";
  MATES_RETURN_IF_ERROR(WriteFileAtomic(filter, filter_, 0600));
  MATES_ASSIGN_OR_RETURN(std::vector<std::string> args, Args(place, argv, cwd, /*long_lived=*/true, "3"));
  std::vector<std::string> out = {"/bin/sh", "-c", "exec \"$@\" 3<\"$0\"", filter.string()};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

fs::path Sandbox::GateDirOf(const fs::path& runtime_dir, const std::string& team, const std::string& agent) {
  return runtime_dir / "gate" / SocketDirName(team, agent);
}

fs::path Sandbox::NetDir() const { return runtime_dir_ / "net"; }

Result<std::vector<std::string>> Sandbox::Args(const Place& place, const std::vector<std::string>& command,
                                               const std::string& cwd, bool long_lived,
                                               const std::string& seccomp_fd, Sight* sight, Init init) const {
  const fs::path root = place.work_root.empty() ? ws_ : Real(place.work_root);
  MATES_ASSIGN_OR_RETURN(fs::path tmp, TmpFor(place));
  fs::path quarantine;  // a worktree's own object folder
  // Team state exists before any tool runs, so that no tool can make one
  // of its folders a symlink the host would then write through.
  static const char* const kTeamState[] = {".teams", ".tasks", ".mates"};
  for (const char* d : kTeamState) MATES_RETURN_IF_ERROR(EnsureDir(ws_ / d));

  Mounts m;
  m.Add("/tmp", Kind::kTmp);
  fs::path gate;  // the socket; its folder is what is bound
  if (place.speaks && gate_ && !place.team.empty() && !place.agent.empty()) {
    MATES_ASSIGN_OR_RETURN(gate, gate_(place.team, place.agent));
    MATES_RETURN_IF_ERROR(EnsureDir(gate.parent_path()));
    m.Add(kGateDirInside, Kind::kGate);
  }
  fs::path proxy;
  if (proxy_of_ && !rules_.empty()) {
    MATES_ASSIGN_OR_RETURN(proxy, proxy_of_(place.team, place.agent));
    MATES_RETURN_IF_ERROR(EnsureDir(proxy.parent_path()));
    m.Add(kProxyDirInside, Kind::kProxy);
  }
  // What the private /tmp would hide when it lives under /tmp: the
  // workspace, HOME, mates itself (the `mates` a tool runs, and the relay
  // beside it), and the folders the person's configuration says the
  // process runs from (Place::programs: an MCP server under /tmp). Nothing
  // here comes from the command: a model's text never decides a mount.
  m.Add(ws_, Kind::kReadOnly);
  std::vector<fs::path> programs = {self_dir_, relay_.parent_path()};
  programs.insert(programs.end(), place.programs.begin(), place.programs.end());
  for (const fs::path& p : programs) {
    const fs::path dir = Real(p);
    if (dir.empty() || dir.string().rfind("/tmp/", 0) != 0 || !IsDir(dir)) continue;
    // Never a folder holding the hosts' runtime folders (their gates).
    if (runtime_dir_.string().rfind(dir.string() + "/", 0) == 0) continue;
    m.Add(dir, Kind::kReadOnly);
  }
  HideWhatIsNotTheirs(runtime_dir_, settings_.deny_read, m);
  m.Add(root, Kind::kWritable);
  for (const auto& w : settings_.allow_write) {
    fs::path p = Real(w);
    if (IsDir(p) || Exists(p)) m.Add(p, Kind::kWritable);
  }
  for (const char* d : kTeamState) m.Add(ws_ / d, Kind::kReadOnly);
  // A tmux cluster's state (its panes, which its router types into).
  if (IsDir(ws_ / ".mates-cluster")) m.Add(ws_ / ".mates-cluster", Kind::kReadOnly);
  MATES_RETURN_IF_ERROR(GitMounts(git_dir_, root, ws_, m, &quarantine));

  CoverSockets(m, sight);

  std::vector<std::string> argv = BaseArgs(bwrap_);
  if (!long_lived) argv.push_back("--die-with-parent");  // a long-lived server's spawning thread may end first
  if (init == Init::kCommandIsInit) argv.push_back("--as-pid-1");
  AppendMounts(m, tmp, gate, proxy, &argv);
  argv.insert(argv.end(), {"--setenv", "TMPDIR", "/tmp", "--setenv", "MATES_SANDBOX", std::string(ModeName(mode()))});
  if (!quarantine.empty()) {
    argv.insert(argv.end(), {"--setenv", "GIT_OBJECT_DIRECTORY", quarantine.string(), "--setenv",
                             "GIT_ALTERNATE_OBJECT_DIRECTORIES", (git_dir_ / "objects").string()});
  }
  if (!gate.empty()) {
    argv.insert(argv.end(), {"--setenv", "MATES_HOST_SOCKET", std::string(kGateDirInside) + "/" + gate.filename().string()});
  }
  argv.insert(argv.end(), {"--chdir", cwd.empty() ? root.string() : cwd});
  if (!proxy.empty()) AppendProxyEnv(&argv);
  argv.insert(argv.end(), {"--seccomp", seccomp_fd, "--"});
  if (!proxy.empty()) {
    // The relay first: it serves the proxy inside and runs the command.
    std::string ports = std::to_string(kRelayPort);
    for (int port : LoopbackPorts(rules_)) ports += "," + std::to_string(port);
    argv.insert(argv.end(), {relay_.string(), std::string(kProxyDirInside) + "/" + proxy.filename().string(), ports, "--"});
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

bool Sight::ShowsANewSocket() const {
  for (const auto& entry : BoundSocketEntries()) {
    if (std::binary_search(sockets.begin(), sockets.end(), entry)) continue;
    const fs::path& sock = entry.second;
    const fs::path p = Real(sock);
    const auto* rule = Deepest(rules, p, [](const auto& r) -> const fs::path& { return r.first; });
    const bool hidden = rule != nullptr && rule->second;
    struct stat st {};
    if (!hidden && ::lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return true;
  }
  return false;
}

std::shared_ptr<Launcher> Sandbox::LauncherFor(const std::string& purpose, const Place& place,
                                               const std::string& cwd) const {
  std::error_code ec;
  if (!on() || !fs::is_regular_file(relay_, ec)) return nullptr;
  std::string key = purpose + "\n" + place.work_root.string() + "\n" + place.team + "\n" + place.agent + "\n" +
                    (place.speaks ? "1" : "0") + "\n" + cwd;
  for (const auto& p : place.programs) key += "\n" + p.string();
  std::shared_ptr<Launcher> old;  // ends once its last caller lets go, outside the lock
  {
    std::lock_guard<std::mutex> lock(launchers_mu_);
    auto it = launchers_.find(key);
    if (it != launchers_.end()) {
      if (!it->second->broken() && !it->second->SeesANewSocket()) return it->second;
      old = std::move(it->second);
      launchers_.erase(it);
    }
  }
  // Started unlocked (a bubblewrap: milliseconds), so that agents starting
  // together do not wait for each other's; the first one kept wins.
  auto started = Launcher::Start(*this, place, cwd);
  if (!started.ok()) {
    LogDebug("sandbox: no launcher for " + purpose + ", a sandbox per command: " + started.status().message());
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(launchers_mu_);
  return launchers_.emplace(key, *started).first->second;
}

std::string Sandbox::Explain(std::string_view output, const Place& place) const {
  if (!on()) return "";
  const std::string name(ModeName(mode()));
  const std::string root = (place.work_root.empty() ? ws_ : place.work_root).string();
  if (output.find("Read-only file system") != std::string_view::npos) {
    return "[sandbox " + name + ": only " + root +
           ", /tmp and the folders of sandbox.allow_write can be written; team state (.teams, .tasks, .mates) "
           "and the repository's git refs, config and hooks are read-only. A person can allow a folder with "
           "sandbox.allow_write in ~/.config/mates/config.yaml]";
  }
  if (output.find("is not in sandbox.network.allow") != std::string_view::npos ||
      output.find("CONNECT tunnel failed, response 403") != std::string_view::npos) {
    return "[sandbox " + name +
           ": the host was refused by the sandbox's proxy: only the hosts of sandbox.network.allow are reached. "
           "A person can allow it in ~/.config/mates/config.yaml]";
  }
  static const std::string_view kNoNetwork[] = {"Could not resolve host", "Temporary failure in name resolution",
                                               "Network is unreachable", "getaddrinfo", "EAI_AGAIN", "ENETUNREACH",
                                               "Name or service not known"};
  for (auto sign : kNoNetwork) {
    if (output.find(sign) == std::string_view::npos) continue;
    return "[sandbox " + name + ": no network here" +
           std::string(name == "strict" ? "" : " but the hosts of sandbox.network.allow, through the proxy") +
           ". A person can allow a host with sandbox.network.allow in ~/.config/mates/config.yaml" +
           std::string(name == "strict" ? " and --sandbox workspace" : "") + "]";
  }
  if (output.find("Operation not permitted") != std::string_view::npos) {
    return "[sandbox " + name +
           ": refused — no mount, namespace change, ptrace, kernel keyring or BPF, and no signal to a process "
           "outside this command]";
  }
  return "";
}

}  // namespace mates::sandbox
