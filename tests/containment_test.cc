// Containment, second round (DESIGN §26), tried as the round's hostile
// tester did: each class of escape it found, against the real parts — a
// real tmux server of "the person's", real git repositories and worktrees,
// the real proxy, the real CLI. Every test here fails without its fix (the
// comment over each says how it got through before).
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "core/secrets.h"
#include "core/subprocess.h"
#include "core/unix_socket.h"
#include "git/git.h"
#include "git/worktrees.h"
#include "host/agent_gate.h"
#include "sandbox/net_proxy.h"
#include "sandbox/sandbox.h"
#include "store/roster.h"
#include "store/team_store.h"
#include "support/test_env.h"
#include "tools/builtin_tools.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

std::string GitIn(const fs::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-C", dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = testing::Run(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return r.out;
}

// `command` by bash in the sandbox of (team, agent) at `root`: its output.
std::string RunInside(const sandbox::Sandbox& box, const fs::path& root, const std::string& team,
                      const std::string& agent, const std::string& command) {
  SubprocessOptions o;
  o.argv = {"/bin/bash", "-c", command};
  o.cwd = root.string();
  o.merge_stderr = true;
  o.timeout_s = 60;
  auto confined = box.Wrap({root, team, agent}, std::move(o));
  if (!confined.ok()) return "wrap: " + confined.status().message();
  auto r = RunSubprocess(confined->options);
  return r.ok() ? r->out : "run: " + r.status().message();
}

std::shared_ptr<sandbox::Sandbox> MakeBox(const fs::path& ws, const fs::path& runtime) {
  sandbox::Settings s;
  s.mode = sandbox::Mode::kWorkspace;
  auto box = sandbox::Sandbox::Make(ws, s, runtime);
  EXPECT_TRUE(box.ok()) << box.status().message();
  return box.ok() ? *box : nullptr;
}

// A tmux server of "the person's", on a socket of its own.
class PersonsTmux {
 public:
  explicit PersonsTmux(fs::path socket) : socket_(std::move(socket)) {
    auto r = testing::Run({"tmux", "-S", socket_.string(), "new-session", "-d", "sleep 600"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  ~PersonsTmux() { (void)testing::Run({"tmux", "-S", socket_.string(), "kill-server"}); }
  const fs::path& socket() const { return socket_; }

 private:
  fs::path socket_;
};

class ContainmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!sandbox::WhatIsMissing().empty()) GTEST_SKIP() << sandbox::WhatIsMissing();
    fs::create_directories(ws_);
    fs::create_directories(outside_);
  }
  TempDir tmp_;  // under /tmp, as a person's tmux folder is
  const fs::path ws_ = tmp_.path() / "w";
  const fs::path outside_ = tmp_.path() / "outside";
};

// Before: a command whose text began with an existing path under /tmp
// (`/tmp/tmux-0/../../W/x.sh`) had that /tmp folder bound read-only, and a
// socket on a read-only bind still answers: the person's tmux ran the
// command outside. Now nothing a model writes decides a mount, and every
// socket of the host's still in sight (here, one in W itself) is covered.
TEST_F(ContainmentTest, NoSocketOfThePersonsIsReachableWhateverTheCommandNames) {
  TempDir tmux_dir;  // /tmp/…: where tmux keeps its socket
  PersonsTmux in_tmp(tmux_dir.path() / "default");
  PersonsTmux in_ws(ws_ / "dev.sock");  // a server the person runs in W
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  const fs::path marker = outside_ / "ran-outside";
  WriteAll(ws_ / "escape.sh",
           "#!/bin/bash\n"
           "for s in '" + in_tmp.socket().string() + "' '" + in_ws.socket().string() + "'; do\n"
           "  if tmux -S \"$s\" run-shell 'touch " + marker.string() + "' 2>/dev/null; then echo \"row reached $s\";"
           " else echo \"row refused $s\"; fi\n"
           "done\n");
  fs::permissions(ws_ / "escape.sh", fs::perms::owner_all);
  // The text names the tmux folder first: `/tmp/…/../..` + W.
  std::string via = tmux_dir.str();
  for (auto it = tmux_dir.path().begin(); it != tmux_dir.path().end(); ++it) {
    if (it->string() != "/") via += "/..";
  }
  via += (ws_ / "escape.sh").string();
  ASSERT_TRUE(fs::exists(via)) << via;
  // Named so, the folder is not mounted: inside, the path does not exist.
  const std::string named = RunInside(*box, ws_, "t", "lead", via);
  EXPECT_EQ(named.find("row reached"), std::string::npos) << named;
  EXPECT_FALSE(fs::exists(marker)) << "the person's tmux ran a command for the sandbox: " << named;
  // Run as it is, the script finds neither socket.
  const std::string out = RunInside(*box, ws_, "t", "lead", "bash " + (ws_ / "escape.sh").string());
  EXPECT_NE(out.find("row refused " + in_tmp.socket().string()), std::string::npos) << out;
  EXPECT_NE(out.find("row refused " + in_ws.socket().string()), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(marker)) << "the person's tmux ran a command for the sandbox: " << out;
  // The probe proves itself: unsandboxed, the same script reaches both.
  auto off = testing::Run({"/bin/bash", "-c", via});
  EXPECT_NE(off.out.find("row reached " + in_ws.socket().string()), std::string::npos) << off.out << off.err;
  EXPECT_TRUE(fs::exists(marker));
}

// An agent's bash commands start from a launcher kept in its sandbox (a
// fork there, not a bubblewrap each: sandbox/launcher.h), the same one
// command after command. A socket the person binds in W after it started
// was made after its sandbox covered W's sockets: the next command comes
// from a new launcher, which covers it (without that check the person's
// tmux ran the command outside).
TEST_F(ContainmentTest, ASocketBoundAfterTheAgentsLauncherStartedIsNotReachable) {
  TempDir run;
  sandbox::Settings settings;
  settings.mode = sandbox::Mode::kWorkspace;
  settings.relay = MATES_RELAY;
  auto box = sandbox::Sandbox::Make(ws_, settings, run.path() / "sb");
  ASSERT_TRUE(box.ok()) << box.status().message();
  Workspace ws(ws_);
  auto store = FileTeamStore(ws, testing::TestEnv());
  tools::ToolContext ctx(ws, *store);
  ctx.team = "t";
  ctx.agent = "lead";
  ctx.sandbox = *box;
  auto bash = tools::MakeBashTool();
  const auto run_bash = [&](const std::string& command) {
    auto r = bash->Run(Json{{"command", command}}, ctx);
    return r.content;
  };
  const auto launchers = [&] { return testing::ProcessesIn("^[^ ]*mates-relay --launcher$", ws_); };
  EXPECT_NE(run_bash("tr '\\0' ' ' < /proc/$PPID/cmdline").find("mates-relay --launcher"), std::string::npos);
  ASSERT_EQ(launchers().size(), 1u);
  const std::string first = launchers()[0];
  EXPECT_EQ(run_bash("echo hi"), "hi\n");
  ASSERT_EQ(launchers().size(), 1u);
  EXPECT_EQ(launchers()[0], first) << "a launcher per command";

  PersonsTmux late(ws_ / "late.sock");
  const fs::path marker = outside_ / "ran-outside";
  const std::string out = run_bash("if tmux -S late.sock run-shell 'touch " + marker.string() +
                                   "' 2>/dev/null; then echo reached; else echo refused; fi");
  EXPECT_EQ(out, "refused\n");
  EXPECT_FALSE(fs::exists(marker)) << "the person's tmux ran a command for the sandbox";
  EXPECT_TRUE(testing::WaitUntil([&] {
    auto now = launchers();
    return now.size() == 1 && now[0] != first;
  }, 10)) << "the old launcher is still there";
  // The probe proves itself: unsandboxed, it reaches the server.
  auto off = testing::Run({"tmux", "-S", (ws_ / "late.sock").string(), "run-shell", "touch " + marker.string()});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_TRUE(fs::exists(marker));
  fs::remove(marker);

  // A server the person restarts binds a new socket where its old one was
  // (covered then): the new one is not covered by that mount.
  auto again = std::make_unique<PersonsTmux>(ws_ / "again.sock");
  EXPECT_EQ(run_bash("echo $((1+1))"), "2\n");  // a launcher that covered again.sock
  again.reset();
  // (Its server gone: nothing listens there any more.)
  const auto listening = [&](const fs::path& path) {
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return !listening(ws_ / "again.sock"); }, 10));
  again = std::make_unique<PersonsTmux>(ws_ / "again.sock");
  EXPECT_EQ(run_bash("if tmux -S again.sock run-shell 'touch " + marker.string() +
                     "' 2>/dev/null; then echo reached; else echo refused; fi"),
            "refused\n");
  EXPECT_FALSE(fs::exists(marker)) << "the person's restarted tmux ran a command for the sandbox";
}

// A sandbox with the launcher, and a lead's bash tool in it.
struct LaunchedBash {
  LaunchedBash(const fs::path& ws, const fs::path& runtime) : workspace(ws), store(FileTeamStore(workspace, testing::TestEnv())) {
    sandbox::Settings settings;
    settings.mode = sandbox::Mode::kWorkspace;
    settings.relay = MATES_RELAY;
    auto made = sandbox::Sandbox::Make(ws, settings, runtime);
    EXPECT_TRUE(made.ok()) << made.status().message();
    ctx.team = "t";
    ctx.agent = "lead";
    ctx.cancel = &cancel;
    if (made.ok()) ctx.sandbox = *made;
  }
  tools::ToolResult Run(const std::string& command, double timeout = 60) {
    return bash->Run(Json{{"command", command}, {"timeout", timeout}}, ctx);
  }
  Workspace workspace;
  std::unique_ptr<TeamStore> store;
  tools::ToolContext ctx{workspace, *store};
  llm::CancelToken cancel;
  std::unique_ptr<tools::Tool> bash = tools::MakeBashTool();
};

// From the launcher, bash keeps the tool's contract: its timeout, the
// middle of a long output cut, nothing it left running survives it (in
// its group or not), and an interrupt ends it at once.
TEST_F(ContainmentTest, BashFromTheLauncherKeepsTheToolsContract) {
  TempDir run;
  LaunchedBash b(ws_, run.path() / "sb");
  const std::string tag = "mates-left-" + std::to_string(::getpid());
  auto r = b.Run("(exec -a " + tag + "-a sleep 300) & setsid bash -c 'exec -a " + tag + "-b sleep 300' & "
                 "echo started; exit 3");
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(r.content, "started\n[exit code 3]");
  EXPECT_TRUE(testing::Run({"pgrep", "-f", tag}).out.empty()) << "what the command left outlived it";
  r = b.Run("head -c 100000 /dev/zero | tr '\\0' a; echo; echo the-end");
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.content.rfind("aaaa", 0), 0u);
  EXPECT_NE(r.content.find("the-end\n\n[output was 100009 characters; the middle was cut]"), std::string::npos)
      << r.content.substr(r.content.size() - 200);
  const auto started = SteadyClock::now();
  r = b.Run("echo before; sleep 30", 1);
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(r.content, "before\n[timed out after 1 s; the command and everything it started were killed]");
  EXPECT_LT(SteadyClock::now() - started, std::chrono::seconds(5));
  // An interrupt, once the command has begun (it says so in a file).
  std::thread interrupter([&] {
    testing::WaitUntil([&] { return fs::exists(ws_ / "begun"); }, 30);
    b.cancel.Cancel();
  });
  const auto begun = SteadyClock::now();
  r = b.Run("touch begun; sleep 30");
  interrupter.join();
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(r.content.find("[interrupted; the command was killed]"), std::string::npos) << r.content;
  EXPECT_LT(SteadyClock::now() - begun, std::chrono::seconds(5));
  b.cancel.Reset();
  EXPECT_EQ(b.Run("echo again").content, "again\n");
}

// The commands run beside their launcher, as the same user: they cannot
// write an answer of their own on its line to the host (it is not
// dumpable: its descriptors are closed to them), nor end it (it is their
// pid 1).
TEST_F(ContainmentTest, ACommandCannotSpeakForItsLauncher) {
  TempDir run;
  LaunchedBash b(ws_, run.path() / "sb");
  auto r = b.Run("printf '2\\t0\\t0\\t0\\t0\\tforged\\t\\n' > /proc/$PPID/fd/1 && echo wrote; echo done");
  EXPECT_EQ(r.content.find("wrote"), std::string::npos) << r.content;
  EXPECT_NE(r.content.find("done"), std::string::npos) << r.content;
  EXPECT_EQ(b.Run("echo next").content, "next\n") << "a forged answer was taken";
  // Nor can they end it: it is their sandbox's pid 1.
  const std::string first = testing::ProcessesIn("^[^ ]*mates-relay --launcher$", ws_).at(0);
  r = b.Run("echo $PPID; kill -9 $PPID 1; echo still here");
  EXPECT_EQ(r.content, "1\nstill here\n");
  EXPECT_EQ(testing::ProcessesIn("^[^ ]*mates-relay --launcher$", ws_).at(0), first);
  EXPECT_EQ(b.Run("echo after").content, "after\n");
}

// An MCP server the person configured under /tmp still sees its folder:
// the binds come from the configuration (Place::programs), not the text.
TEST_F(ContainmentTest, APersonsProgramUnderTmpIsSeenAModelsTextBindsNothing) {
  TempDir scratch;
  WriteAll(scratch.path() / "pkg/lib/data.txt", "beside it\n");
  WriteAll(scratch.path() / "pkg/run.sh", "cat \"$(dirname \"$0\")/lib/data.txt\"\n");
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  const std::string script = (scratch.path() / "pkg/run.sh").string();
  auto run_as = [&](std::vector<std::string> argv, std::vector<fs::path> programs) {
    SubprocessOptions o;
    o.argv = std::move(argv);
    o.cwd = ws_.string();
    o.merge_stderr = true;
    o.timeout_s = 30;
    auto confined = box->Wrap({ws_, "", "mcp-x", false, std::move(programs)}, std::move(o));
    EXPECT_TRUE(confined.ok());
    auto r = RunSubprocess(confined->options);
    return r.ok() ? r->out : r.status().message();
  };
  const std::vector<std::string> argv = {"/bin/bash", script};
  EXPECT_NE(run_as(argv, sandbox::ProgramFolders(argv)).find("beside it"), std::string::npos);
  // The same argv without the configuration's say: nothing bound.
  EXPECT_EQ(run_as(argv, {}).find("beside it"), std::string::npos);
}

// Before: team `a` member `b.c` and team `a.b` member `c` shared
// `tmp/a.b.c` — one private /tmp (and one gate folder) for two agents.
TEST_F(ContainmentTest, TwoAgentsWhoseNamesSpellAlikeShareNoTmp) {
  EXPECT_NE(sandbox::SocketDirName("a", "b.c"), sandbox::SocketDirName("a.b", "c"));
  EXPECT_NE(sandbox::SocketDirName("", "x"), sandbox::SocketDirName("x", ""));
  const std::string long_team(64, 't'), long_agent(64, 'a');
  EXPECT_NE(sandbox::SocketDirName(long_team, long_agent), sandbox::SocketDirName(long_team, long_agent + "b"));
  EXPECT_LE(sandbox::SocketDirName(long_team, long_agent).size(), 64u);
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(RunInside(*box, ws_, "a", "b.c", "echo secret-of-b.c > /tmp/note; cat /tmp/note"), "secret-of-b.c\n");
  const std::string other = RunInside(*box, ws_, "a.b", "c", "cat /tmp/note 2>&1 || echo no-note");
  EXPECT_NE(other.find("no-note"), std::string::npos) << other;
}

// Before: a host run as root mapped to uid 0 inside, which owns
// /proc/sys: a sysctl could be written from the sandbox.
TEST_F(ContainmentTest, TheKernelsKnobsAreReadOnlyEvenForARootHost) {
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  // The same value written back: harmless if it got through.
  const std::string knob = "/proc/sys/kernel/printk_ratelimit_burst";
  const std::string write = "cat " + knob + " > /tmp/v && cat /tmp/v > " + knob + " && echo wrote || echo refused";
  EXPECT_NE(RunInside(*box, ws_, "t", "lead", write).find("refused"), std::string::npos);
  EXPECT_NE(RunInside(*box, ws_, "t", "lead", "echo 1 > /sys/kernel/x 2>/dev/null && echo wrote || echo refused")
                .find("refused"),
            std::string::npos);
  if (::geteuid() == 0) {
    auto off = testing::Run({"/bin/bash", "-c", "cat " + knob + " > " + knob + " && echo wrote"});
    EXPECT_NE(off.out.find("wrote"), std::string::npos) << "the probe proves nothing here: " << off.err;
  }
  // The machine's root-only files: a root host's sandbox is uid 0 too, so
  // their modes protect nothing; they are hidden by name. (Before: a root
  // host's agent read /etc/shadow.)
  const std::string shadow = RunInside(*box, ws_, "t", "lead", "cat /etc/shadow /etc/gshadow 2>/dev/null | wc -c");
  EXPECT_EQ(shadow, "0\n");
  if (::geteuid() == 0) {
    auto off = testing::Run({"/bin/bash", "-c", "cat /etc/shadow /etc/gshadow 2>/dev/null | wc -c"});
    EXPECT_NE(off.out, "0\n") << "the probe proves nothing here: " << off.err;
  }
}

// Before: the default list missed mates' own MCP logins, Claude Code's,
// Codex's and Gemini CLI's credentials, and the key file mates was given.
TEST_F(ContainmentTest, EverySecretOnTheListAndTheKeyFileAreHidden) {
  TempDir home;
  const std::vector<std::string> files = {
      ".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".local/share/opencode/auth.json",
      ".config/glab-cli/config.yml", ".config/mates/mcp-auth.json", ".config/google-chrome/Default/Cookies",
      ".mozilla/firefox/x/logins.json", ".cargo/credentials.toml", ".vault-token", ".config/op/config"};
  for (const auto& f : files) WriteAll(home.path() / f, "SECRET-MARK\n");
  WriteAll(home.path() / "keys/anthropic.key", "sk-ant-this-is-a-key-0123456789\n");
  ::setenv("HOME", home.str().c_str(), 1);
  ::unsetenv("XDG_CONFIG_HOME");
  ::setenv("ANTHROPIC_API_KEY_FILE", (home.path() / "keys/anthropic.key").c_str(), 1);
  ASSERT_TRUE(Secrets::Load().ok());
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ::unsetenv("ANTHROPIC_API_KEY_FILE");
  ASSERT_NE(box, nullptr);
  std::string probe;
  for (const auto& f : files) probe += "grep -q SECRET-MARK \"$HOME/" + f + "\" && echo \"row read " + f + "\";";
  probe += "grep -q sk-ant \"$HOME/keys/anthropic.key\" && echo 'row read the key file'; echo end";
  const std::string out = RunInside(*box, ws_, "t", "lead", "HOME=" + home.str() + "; " + probe);
  EXPECT_EQ(out.find("row read"), std::string::npos) << out;
  EXPECT_NE(out.find("end"), std::string::npos) << out;
  auto off = testing::Run({"/bin/bash", "-c", "HOME=" + home.str() + "; " + probe});
  EXPECT_NE(off.out.find("row read the key file"), std::string::npos) << off.out;
  ASSERT_TRUE(Secrets::Load().ok());  // (the key gone again for the tests after)
}

// Before: only the key's exact bytes were redacted; its base64 (as in a
// Basic header or a dumped config), hex or URL form passed to the model.
TEST(SecretFormsTest, AKeyIsRedactedInItsCommonEncodings) {
  const std::string key = "sk-test-Zq9/+key=with&odd?bytes_0123";
  Secrets::Add("TEST_KEY", key);
  auto b64 = [](std::string_view in, bool url) {
    static const char* std_a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char* url_a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char* a = url ? url_a : std_a;
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : in) {
      acc = acc << 8 | c;
      bits += 8;
      while (bits >= 6) out += a[(acc >> (bits -= 6)) & 63];
    }
    if (bits > 0) out += a[(acc << (6 - bits)) & 63];
    while (out.size() % 4 != 0) out += '=';
    return out;
  };
  std::string hex;
  for (unsigned char c : key) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
  std::string upper_hex = hex;
  for (auto& c : upper_hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& shown :
       {b64(key, false), b64("Authorization: Bearer " + key, false), b64("u:" + key, false), b64("x" + key + "y", true),
        hex, upper_hex, std::string("key=sk-test-Zq9%2F%2Bkey%3Dwith%26odd%3Fbytes_0123")}) {
    const std::string red = Secrets::Redact("before " + shown + " after");
    EXPECT_NE(red.find("[redacted]"), std::string::npos) << shown;
    // Nothing left that still spells a run of the key's own encoding.
    for (const std::string& form : {b64(key, false).substr(4, 16), hex.substr(8, 24)}) {
      EXPECT_EQ(red.find(form), std::string::npos) << shown << " -> " << red;
    }
  }
  EXPECT_EQ(Secrets::Redact("an ordinary sentence"), "an ordinary sentence");
  Secrets::Add("TEST_KEY", "");
}

// Before: a name allowed by a rule was refused only when it resolved to
// 127/8 — "0" (0.0.0.0) and other classes reached the host and its network.
TEST(ProxyAddressTest, EveryNonPublicClassIsRefusedForANameButALiteralRuleOpensIt) {
  auto v4 = [](const char* text) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, text, &a.sin_addr);
    return sandbox::NonPublicClass(reinterpret_cast<sockaddr*>(&a));
  };
  auto v6 = [](const char* text) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, text, &a.sin6_addr);
    return sandbox::NonPublicClass(reinterpret_cast<sockaddr*>(&a));
  };
  for (const char* bad : {"127.0.0.1", "127.9.9.9", "0.0.0.0", "0.1.2.3", "10.1.2.3", "172.16.0.1", "172.31.255.255",
                          "192.168.1.1", "169.254.169.254", "100.64.0.1", "224.0.0.1", "255.255.255.255"}) {
    EXPECT_NE(v4(bad), "") << bad;
  }
  for (const char* good : {"8.8.8.8", "172.32.0.1", "100.128.0.1", "1.1.1.1"}) EXPECT_EQ(v4(good), "") << good;
  for (const char* bad : {"::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1",
                          "fe80::1", "fc00::1", "fd12::1", "ff02::1"}) {
    EXPECT_NE(v6(bad), "") << bad;
  }
  for (const char* good : {"2606:4700::1111", "::ffff:8.8.8.8"}) EXPECT_EQ(v6(good), "") << good;

  // The proxy itself: a listener on every address of this machine.
  int srv = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  ASSERT_EQ(::bind(srv, reinterpret_cast<sockaddr*>(&any), sizeof any), 0);
  socklen_t len = sizeof any;
  ::getsockname(srv, reinterpret_cast<sockaddr*>(&any), &len);
  const int port = ntohs(any.sin_port);
  ASSERT_EQ(::listen(srv, 8), 0);
  std::atomic<int> accepted{0};
  std::thread acceptor([&] {
    for (int c; (c = ::accept4(srv, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
      ++accepted;
      ::close(c);
    }
  });
  TempDir run;
  std::vector<sandbox::NetRule> rules;
  // "0" and "2130706433" are names to a rule, and resolve to 0.0.0.0 and 127.0.0.1.
  for (const std::string host : {"0", "2130706433", "127.0.0.1"}) rules.push_back({host, port});
  {
    sandbox::NetProxy proxy(rules, run.path() / "net", nullptr);
    auto sock = proxy.SocketFor("t", "a");
    ASSERT_TRUE(sock.ok()) << sock.status().message();
    auto ask = [&](const std::string& host) {
      auto c = ConnectUnix(*sock);
      EXPECT_TRUE(c.ok());
      const std::string req = "CONNECT " + host + ":" + std::to_string(port) + " HTTP/1.1\r\n\r\n";
      (void)!::send(c->get(), req.data(), req.size(), MSG_NOSIGNAL);
      std::string reply;
      char buf[1024];
      for (ssize_t n; reply.find("\r\n\r\n") == std::string::npos && (n = ::read(c->get(), buf, sizeof buf)) > 0;) {
        reply.append(buf, static_cast<size_t>(n));
      }
      // (A 502's body follows its head.)
      for (ssize_t n; reply.find("HTTP/1.1 502") == 0 && (n = ::read(c->get(), buf, sizeof buf)) > 0;) {
        reply.append(buf, static_cast<size_t>(n));
      }
      return reply;
    };
    const std::string zero = ask("0");
    EXPECT_NE(zero.find("502"), std::string::npos) << zero;
    EXPECT_NE(zero.find("unspecified"), std::string::npos) << zero;
    const std::string decimal = ask("2130706433");
    EXPECT_NE(decimal.find("loopback"), std::string::npos) << decimal;
    EXPECT_EQ(accepted.load(), 0) << "a name reached this machine";
    // A person who wrote the address itself meant it.
    EXPECT_NE(ask("127.0.0.1").find("200 Connection Established"), std::string::npos);
  }
  EXPECT_TRUE(testing::WaitUntil([&] { return accepted.load() == 1; }, 10));
  ::shutdown(srv, SHUT_RDWR);
  ::close(srv);
  acceptor.join();
}

// A repository with a teammate's worktree, as the host makes them.
class TeammateWorkTest : public ContainmentTest {
 protected:
  void SetUp() override {
    ContainmentTest::SetUp();
    if (IsSkipped()) return;
    GitIn(ws_, {"init", "-q", "-b", "main"});
    WriteAll(ws_ / "README", "the project\n");
    GitIn(ws_, {"add", "README"});
    GitIn(ws_, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "initial"});
    TeamGit wanted;
    wanted.isolation = Isolation::kWorktree;
    auto g = git::PrepareTarget(Workspace(ws_), "wt", wanted);
    ASSERT_TRUE(g.ok()) << g.status().message();
    tg_ = *g;
    auto tree = git::EnsureTeammateWorktree(Workspace(ws_), "wt", "w1", tg_);
    ASSERT_TRUE(tree.ok()) << tree.status().message();
    tree_ = *tree;
  }
  // A scenario, at tmp/s.yaml: the lead spawns w1 in its worktree on
  // "Go"; w1 runs `command` for task #1 ("Task #N: `task`") and completes
  // it once a result says `done_when`.
  fs::path WorkerScenario(const std::string& task, const std::string& command, const std::string& done_when) {
    const fs::path path = tmp_.path() / "s.yaml";
    WriteAll(path, R"Y(
rules:
  - agent: lead
    when: "Go"
    reply:
      - {type: tool_use, name: Task, input: {team_name: box, name: w1, isolation: worktree, prompt: "Work."}}
  - {agent: lead, once: false, reply: [{type: text, text: "Noted."}]}
  - agent: w1
    when: "Task #(\\d+): )Y" + task + R"Y("
    reply:
      - {type: tool_use, name: bash, input: {command: )Y" + Json(command).dump() + R"Y(}}
  - agent: w1
    when: ")Y" + done_when + R"Y("
    reply:
      - {type: tool_use, name: TaskUpdate, input: {task_id: "1", status: completed}}
  - {agent: w1, once: false, reply: [{type: text, text: "Done."}]}
)Y");
    return path;
  }
  TeamGit tg_;
  fs::path tree_;
};

// Before: the host's `git add -A` took a repository the teammate made
// inside its worktree as a gitlink, and the host's next git there
// descended into it and ran its core.fsmonitor, unsandboxed. The person's
// global config's programs did not matter to it either.
TEST_F(TeammateWorkTest, TheHostsGitRunsNothingATeammateWrote) {
  const fs::path marker = outside_ / "fsmonitor-ran";
  // What the teammate writes, from its sandbox: its work, and a repository
  // of its own whose config names a program.
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  const std::string made = RunInside(
      *box, tree_, "wt", "w1",
      "echo work > work.txt && mkdir -p sub && cd sub && unset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES && "
      "git init -q && git config core.fsmonitor 'touch " +
          marker.string() + "; echo' && echo inner > inner.txt && git add inner.txt && "
          "git -c user.name=x -c user.email=x@x commit -q -m inner && echo made-inner");
  ASSERT_NE(made.find("made-inner"), std::string::npos) << made;
  // The person's own global config names one too: not run on the teammate's files.
  TempDir home;
  WriteAll(home.path() / ".gitconfig", "[core]\n\tfsmonitor = \"touch " + marker.string() + "-global; echo\"\n");
  ::setenv("HOME", home.str().c_str(), 1);
  auto done = git::CommitTeammateWork(Workspace(ws_), "wt", "w1", 1, "the work", tg_);
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_TRUE(done->ahead);
  ASSERT_EQ(done->left_out, std::vector<std::string>{"sub"});
  const std::string files = GitIn(ws_, {"ls-tree", "-r", "--name-only", done->commit});
  EXPECT_NE(files.find("work.txt"), std::string::npos) << files;
  EXPECT_EQ(files.find("sub"), std::string::npos) << "an embedded repository was committed: " << files;
  // The host's later git in that worktree: status, refresh, clean-up.
  EXPECT_EQ(git::RefreshWorktree(Workspace(ws_), "wt", "w1", tg_), "");
  (void)git::CleanUpTeammate(Workspace(ws_), "wt", "w1", tg_, /*final=*/true);
  EXPECT_FALSE(fs::exists(marker)) << "the host ran a program a teammate configured";
  EXPECT_FALSE(fs::exists(marker.string() + "-global")) << "the host ran its global config's fsmonitor";
  // The teammate's own index is the host's: its status is clean but for the repository left out.
  if (fs::exists(tree_)) {
    EXPECT_EQ(GitIn(tree_, {"status", "--porcelain", "--ignore-submodules=all"}), "?? sub/");
  }
}

// Before: a teammate's sandbox could write the shared object store, and
// rewriting a loose object changed `main` for the host and the queue
// without a ref moving. Now its objects go to a quarantine, and what the
// host commits it hashes from the files itself.
TEST_F(TeammateWorkTest, ATeammateCannotRewriteHistoryThroughTheObjectStore) {
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  const std::string readme = GitIn(ws_, {"rev-parse", "main:README"});
  const fs::path loose = ws_ / ".git/objects" / readme.substr(0, 2) / readme.substr(2);
  ASSERT_TRUE(fs::exists(loose));
  const std::string before = ReadAll(loose);
  const std::string out = RunInside(
      *box, tree_, "wt", "w1",
      "o='" + loose.string() + "'; (rm -f \"$o\" && cp /dev/null \"$o\") 2>/dev/null && echo rewrote || echo refused; "
      "echo changed > README && git add README && echo added; git cat-file -p :README");
  EXPECT_NE(out.find("refused"), std::string::npos) << out;
  EXPECT_NE(out.find("added"), std::string::npos) << "git add in a worktree must work: " << out;
  EXPECT_NE(out.find("changed"), std::string::npos) << out;
  EXPECT_EQ(ReadAll(loose), before);
  EXPECT_EQ(GitIn(ws_, {"cat-file", "-p", "main:README"}), "the project");
  // The teammate's index names a blob only its quarantine has; a lie about
  // a file's content in it changes nothing the host commits.
  WriteAll(tree_ / "README", "what the file says\n");
  auto done = git::CommitTeammateWork(Workspace(ws_), "wt", "w1", 1, "readme", tg_);
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(GitIn(ws_, {"cat-file", "-p", done->commit + ":README"}), "what the file says");
  EXPECT_EQ(GitIn(ws_, {"fsck", "--connectivity-only", "--no-dangling"}), "");
}

// Before: `-fw DIR` (a short-option cluster) slipped `-w DIR` past the
// gate's patterns, and the host read another workspace for the agent.
TEST(GateParsingTest, TheGateJudgesWhatTheCliParsesNotPatterns) {
  TempDir ws, other, run;
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "t"}).exit_code, 0);
  ASSERT_EQ(testing::RunMates(other.path(), {"team", "create", "t"}).exit_code, 0);
  ASSERT_EQ(testing::RunMates(other.path(), {"--team", "t", "tasks", "create", "other-workspace-task"}).exit_code, 0);
  host::AgentGate gate({Workspace(ws.path()), "", run.path() / "gate", testing::MatesBinary()});
  auto sock = gate.SocketFor("t", "a");
  ASSERT_TRUE(sock.ok());
  auto ask = [&](const std::vector<std::string>& argv) {
    auto c = ConnectUnix(*sock);
    EXPECT_TRUE(c.ok());
    const std::string line = DumpJson(Json{{"argv", argv}}) + "\n";
    (void)!::send(c->get(), line.data(), line.size(), MSG_NOSIGNAL);
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::read(c->get(), buf, sizeof buf)) > 0;) reply.append(buf, static_cast<size_t>(n));
    return reply;
  };
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"log", "-fw", other.str()},
           {"tasks", "list", "-w" + other.str()},
           {"tasks", "--workspace=" + other.str(), "list"},
           {"tasks", "list", "--store=file"},
           {"team", "delete", "t"},
           {"tasks", "list", "--", "-w", other.str()}}) {
    const std::string reply = ask(argv);
    EXPECT_EQ(reply.find("other-workspace-task"), std::string::npos) << argv[1] << ": " << reply;
    EXPECT_NE(reply.find("\"exit\":2"), std::string::npos) << argv[1] << ": " << reply;
  }
  EXPECT_NE(ask({"tasks", "list"}).find("\"exit\":0"), std::string::npos);
}

// Before: a `mates log -f` a tool left behind ran on with the host's
// rights, and the host waited 300 s for it at exit.
TEST(GateParsingTest, AGateCommandEndsWithTheToolThatAskedForIt) {
  TempDir ws, run;
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "t"}).exit_code, 0);
  host::AgentGate gate({Workspace(ws.path()), "", run.path() / "gate", testing::MatesBinary()});
  auto sock = gate.SocketFor("t", "a");
  ASSERT_TRUE(sock.ok());
  {
    auto c = ConnectUnix(*sock);
    ASSERT_TRUE(c.ok());
    const std::string line = R"({"argv": ["log", "-f"]})" "\n";
    ASSERT_EQ(::send(c->get(), line.data(), line.size(), MSG_NOSIGNAL), static_cast<ssize_t>(line.size()));
    ASSERT_TRUE(testing::WaitUntil([&] { return !testing::ProcessesIn("log -f", ws.path()).empty(); }, 20));
  }  // the asker goes
  EXPECT_TRUE(testing::WaitUntil([&] { return testing::ProcessesIn("log -f", ws.path()).empty(); }, 20))
      << "an abandoned gate command kept running";
}

// Before: `Lead` joined beside `lead`, and the person's `--from
// merge-queue` spoke as the merge queue.
TEST(ReservedNamesTest, NamesThatReadAsAnotherAreRefusedEverywhere) {
  TeamConfig c = NewTeamConfig("t", "lead", "", 0);
  Member m;
  m.name = "Lead";
  EXPECT_EQ(AddMemberTo(c, m).status().code(), StatusCode::kAlreadyExists);
  m.name = "w_1";
  ASSERT_TRUE(AddMemberTo(c, m).ok());
  m.name = "W1";
  EXPECT_FALSE(AddMemberTo(c, m).ok());
  TempDir ws;
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "t"}).exit_code, 0);
  for (const char* from : {"merge-queue", "Merge_Queue", "HOOKS", "Lead", "USER"}) {
    auto r = testing::RunMates(ws.path(), {"--team", "t", "send", "--from", from, "--to", "lead", "forged"});
    EXPECT_EQ(r.exit_code, 2) << from << ": " << r.err;
  }
  EXPECT_EQ(testing::RunMates(ws.path(), {"--team", "t", "send", "--from", "user", "--to", "lead", "hi"}).exit_code, 0);
  EXPECT_EQ(ReadAll(ws.path() / ".teams/t/messages.jsonl").find("forged"), std::string::npos);
}

// Before: a task subject a sandboxed agent made reached `tasks list` raw
// (a title change, a cleared screen). One filter now covers every output.
TEST(TerminalTest, StoredTextReachesNoTerminalWithAControlSequence) {
  TempDir ws;
  ASSERT_EQ(testing::RunMates(ws.path(), {"team", "create", "t"}).exit_code, 0);
  const std::string evil = "fix\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\r\x9b\xc2\x9b end";
  ASSERT_EQ(testing::RunMates(ws.path(), {"--team", "t", "tasks", "create", evil, "--description", evil}).exit_code, 0);
  ASSERT_EQ(testing::RunMates(ws.path(), {"--team", "t", "send", "--to", "lead", evil}).exit_code, 0);
  for (const auto& cmd : std::vector<std::vector<std::string>>{{"tasks", "list"},
                                                               {"tasks", "get", "1"},
                                                               {"log"},
                                                               {"inbox", "lead", "--peek"},
                                                               {"status"}}) {
    std::vector<std::string> args = {"--team", "t"};
    args.insert(args.end(), cmd.begin(), cmd.end());
    auto r = testing::RunMates(ws.path(), args);
    const std::string all = r.out + r.err;
    EXPECT_NE(all.find("fix"), std::string::npos) << cmd[0] << ": " << all;
    for (const std::string bad : {"\x1b]", "\x07", "\x1b[2J", "\r", "\xc2\x9b"}) {
      EXPECT_EQ(all.find(bad), std::string::npos) << cmd[0] << " printed a control sequence";
    }
  }
}

}  // namespace
}  // namespace mates

namespace mates {
namespace {

// The same, end to end through the CLI: a teammate in its worktree (its
// bash in the sandbox) makes a repository of its own with an fsmonitor
// and completes its task; the host commits, the queue merges, and nothing
// it configured ran — and it was told what was left out.
TEST_F(TeammateWorkTest, ThroughTheCliAnEmbeddedRepositoryIsLeftOutAndSaid) {
  const fs::path marker = outside_ / "fsmonitor-ran";
  WorkerScenario("embed",
                 "echo work > work.txt && mkdir sub && cd sub && unset GIT_OBJECT_DIRECTORY "
                 "GIT_ALTERNATE_OBJECT_DIRECTORIES && git init -q && git config core.fsmonitor 'touch " +
                     marker.string() +
                     "; echo' && echo in > in.txt && git add in.txt && git -c user.name=x -c user.email=x@x commit "
                     "-qm in && echo end-of-w1",
                 "end-of-w1");
  ASSERT_EQ(testing::RunMates(ws_, {"team", "create", "box"}).exit_code, 0);
  ASSERT_EQ(testing::RunMates(ws_, {"tasks", "--team", "box", "create", "embed"}).exit_code, 0);
  auto r = testing::RunMates(ws_, {"run", "--team", "box", "--provider", "scripted", "--scenario",
                                   (tmp_.path() / "s.yaml").string(), "--isolation", "worktree", "--idle-timeout",
                                   "0", "Go"},
                             {}, "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string journal = ReadAll(ws_ / ".teams/box/agents/w1.jsonl");
  EXPECT_NE(journal.find("end-of-w1"), std::string::npos) << journal;
  EXPECT_NE(journal.find("Not committed: sub"), std::string::npos) << journal;
  EXPECT_FALSE(fs::exists(marker)) << "the host ran a program a teammate configured";
  const std::string merged = GitIn(ws_, {"ls-tree", "-r", "--name-only", "mates/box"});
  EXPECT_NE(merged.find("work.txt"), std::string::npos) << merged;
  EXPECT_EQ(merged.find("sub"), std::string::npos) << merged;
}

}  // namespace
}  // namespace mates

namespace mates {
namespace {

// Before: a Claude Code member's name reached `mates claude status` raw.
TEST(TerminalTest, AClaudeCodeMembersNameReachesNoTerminalRaw) {
  TempDir home, ws;
  fs::copy(fs::path(MATES_SOURCE_DIR) / "tests/fixtures/claude_team", home.path() / "claude",
           fs::copy_options::recursive);
  const fs::path config = home.path() / "claude/teams/session-5e55e55e/config.json";
  std::string text = ReadAll(config);
  const std::string evil = R"(alpha\u001b]0;pwned\u0007\u001b[2J\r)";
  text.replace(text.find("\"name\": \"alpha\""), 15, "\"name\": \"" + evil + "\"");
  WriteAll(config, text);
  auto r = testing::RunMates(ws.path(), {"claude", "status", "session-5e55e55e", "--home",
                                         (home.path() / "claude").string()});
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("alpha"), std::string::npos) << all;
  for (const std::string bad : {"\x1b]", "\x07", "\x1b[2J", "\r"}) {
    EXPECT_EQ(all.find(bad), std::string::npos) << "claude status printed a control sequence:\n" << all;
  }
}

}  // namespace
}  // namespace mates

namespace mates {
namespace {

// Typing into the person's terminal (TIOCSTI) or pasting on a console
// (TIOCLINUX), tried on a real pty handed to the sandboxed command as its
// stdin: refused by the sandbox's filter (EPERM); outside, TIOCSTI works
// on the same pty and TIOCLINUX fails only for want of a console.
TEST_F(ContainmentTest, ARealTerminalCannotBeTypedInto) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ScopedFd m(master);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  ScopedFd slave(::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_TRUE(slave.valid());
  TempDir run;
  auto box = MakeBox(ws_, run.path() / "sb");
  ASSERT_NE(box, nullptr);
  auto probe = [&](const std::string& what, bool sandboxed) {
    SubprocessOptions o;
    o.argv = {"/bin/bash", "-c",
              "\"$0\" " + what + " <&" + std::to_string(slave.get()), testing::SandboxProbe()};
    o.cwd = ws_.string();
    o.merge_stderr = true;
    o.timeout_s = 30;
    o.keep_fds = {slave.get()};
    if (!sandboxed) {
      auto r = RunSubprocess(o);
      return r.ok() ? std::to_string(r->exit_code) + ":" + r->out : r.status().message();
    }
    auto confined = box->Wrap({ws_, "t", "lead"}, std::move(o));
    EXPECT_TRUE(confined.ok());
    auto r = RunSubprocess(confined->options);
    return r.ok() ? std::to_string(r->exit_code) + ":" + r->out : r.status().message();
  };
  const std::string typed = probe("tiocsti", true);
  EXPECT_EQ(typed.rfind("1:", 0), 0u) << typed;
  EXPECT_NE(typed.find("Operation not permitted"), std::string::npos) << typed;
  const std::string pasted = probe("tioclinux", true);
  EXPECT_NE(pasted.find("Operation not permitted"), std::string::npos) << pasted;
  // The probes prove themselves outside (as root, TIOCSTI works on any tty).
  if (::geteuid() == 0) {
    const std::string outside = probe("tiocsti", false);
    EXPECT_EQ(outside.rfind("0:", 0), 0u) << outside;
  }
  const std::string console = probe("tioclinux", false);
  EXPECT_EQ(console.find("Operation not permitted"), std::string::npos) << console;
}

}  // namespace
}  // namespace mates

namespace mates {
namespace {

// The person's sockets from every place that runs commands: a teammate's
// bash in its worktree, a hook (PostToolUse, the person's own config), and
// a merge check in the scratch worktree. Each prints a row per socket.
TEST_F(TeammateWorkTest, NoSocketIsReachableFromATeammateAHookOrAMergeCheck) {
  TempDir tmux_dir, config;
  PersonsTmux in_tmp(tmux_dir.path() / "default");
  PersonsTmux in_ws(ws_ / "dev.sock");
  const fs::path marker = outside_ / "ran-outside";
  WriteAll(ws_ / "probe/escape.sh",
           "for s in '" + in_tmp.socket().string() + "' '" + in_ws.socket().string() + "'; do\n"
           "  if tmux -S \"$s\" run-shell 'touch " + marker.string() + "' 2>/dev/null; then echo \"$1-row reached $s\";"
           " else echo \"$1-row refused $s\"; fi\n"
           "done\n");
  WriteAll(config.path() / "mates/config.yaml",
           "hooks:\n  PostToolUse:\n    - matcher: Bash\n      hooks:\n        - {type: command, command: 'bash " +
               (ws_ / "probe/escape.sh").string() + " hook >&2; exit 2'}\n");
  WorkerScenario("probe", "bash " + (ws_ / "probe/escape.sh").string() + " bash; echo x > work.txt", "hook-row");
  const std::vector<std::string> env = {"XDG_CONFIG_HOME=" + config.str()};
  ASSERT_EQ(testing::RunMates(ws_, {"team", "create", "box"}, env).exit_code, 0);
  ASSERT_EQ(testing::RunMates(ws_, {"tasks", "--team", "box", "create", "probe"}, env).exit_code, 0);
  auto r = testing::RunMates(ws_, {"run", "--team", "box", "--provider", "scripted", "--scenario",
                                   (tmp_.path() / "s.yaml").string(), "--isolation", "worktree", "--idle-timeout",
                                   "0", "--merge-check", "bash " + (ws_ / "probe/escape.sh").string() + " check; exit 1",
                                   "Go"},
                             env, "", 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string journal = ReadAll(ws_ / ".teams/box/agents/w1.jsonl");
  auto merges = testing::RunMates(ws_, {"merges", "--team", "box", "show", "1"}, env);
  for (const std::string where : {"bash", "hook", "check"}) {
    const std::string& text = where == "check" ? merges.out : journal;
    for (const auto& s : {in_tmp.socket(), in_ws.socket()}) {
      EXPECT_NE(text.find(where + "-row refused " + s.string()), std::string::npos) << where << "\n" << text;
    }
    EXPECT_EQ(text.find(where + "-row reached"), std::string::npos) << where << "\n" << text;
  }
  EXPECT_FALSE(fs::exists(marker)) << "the person's tmux ran a command for a sandboxed process";
}

}  // namespace
}  // namespace mates
