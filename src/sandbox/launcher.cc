#include "sandbox/launcher.h"

#include <poll.h>
#include <sys/eventfd.h>

#include <cstdlib>

#include "core/guarded.h"
#include "core/log.h"
#include "core/text.h"
#include "sandbox/launcher_wire.h"

namespace mates::sandbox {

namespace wire = launcher;

namespace {
// An answer holds two outputs of at most 1 MiB each, escaped (× 2).
constexpr size_t kMaxAnswer = 8u << 20;
// How long past its own timeout a job's answer may take (the launcher
// kills at the timeout, then sweeps: ~100 ms), and past a kill.
constexpr double kAnswerGrace = 5;
}  // namespace

// One job's caller, woken by the reader through `ready` (an eventfd, so
// that it can wait on its cancel token's too).
struct Launcher::Waiting {
  ScopedFd ready{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  std::optional<Result<SubprocessResult>> answer;  // guarded by Launcher::mu_
};

Result<std::shared_ptr<Launcher>> Launcher::Start(const Sandbox& box, const Place& place, const std::string& cwd) {
  SubprocessOptions o;
  o.argv = {box.relay().string(), "--launcher"};
  o.env = std::vector<std::string>{};  // each job brings its own; the sandbox adds its variables
  o.cwd = cwd;
  o.interactive = true;
  Sight sight;
  // Its sandbox's pid 1 (or, with a network, the relay's child: the
  // relay is pid 1 then, and ends as it ends). A command cannot kill it,
  // and when it ends, the kernel ends everything inside: nothing a
  // command left can hold the host's pipes, nor run on unanswered.
  MATES_ASSIGN_OR_RETURN(Confined c, box.Wrap(place, std::move(o), &sight, Sandbox::Init::kCommandIsInit));
  MATES_ASSIGN_OR_RETURN(Subprocess p, Subprocess::Start(c.options));
  c.keep.reset();
  std::shared_ptr<Launcher> l(new Launcher(std::move(p), std::move(sight)));
  l->reader_ = std::thread([raw = l.get()] {
    NameThisThread("mates-launcher");
    raw->ReadAnswers();
  });
  return l;
}

Launcher::Launcher(Subprocess proc, Sight sight) : proc_(std::move(proc)), sight_(std::move(sight)) {}

Launcher::~Launcher() {
  {
    // The end of its input ends it: it kills what it runs, then itself,
    // and the reader sees the end of its output.
    std::lock_guard<std::mutex> lock(write_mu_);
    proc_.CloseStdin();
  }
  if (reader_.joinable()) reader_.join();
}

bool Launcher::broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !broken_.empty();
}

void Launcher::Break(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  BreakLocked(why);
}

void Launcher::BreakLocked(const std::string& why) {
  if (broken_.empty()) broken_ = why;
  for (auto& [id, w] : waiting_) {
    if (w->answer) continue;
    w->answer = Status::Internal("the sandbox's launcher " + broken_);
    uint64_t one = 1;
    (void)!::write(w->ready.get(), &one, sizeof one);
  }
}

void Launcher::ReadAnswers() {
  for (;;) {
    auto line = proc_.ReadLine(std::nullopt, kMaxAnswer);
    if (!line.ok()) {
      Break(line.status().code() == StatusCode::kNotFound ? "ended" : "failed: " + line.status().message());
      return;
    }
    const auto f = wire::Fields(*line);
    const std::string id_text = f.size() == 7 ? std::string(f[0]) : "";
    char* end = nullptr;
    const uint64_t id = std::strtoull(id_text.c_str(), &end, 10);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = id > 0 && *end == '\0' ? waiting_.find(id) : waiting_.end();
    if (it == waiting_.end() || it->second->answer) {
      // Only the launcher writes here, and only what was asked: anything
      // else and nothing it says can be believed.
      BreakLocked("answered what was not asked: " + CutUtf8(*line, 200));
      return;
    }
    SubprocessResult r;
    r.exit_code = std::atoi(std::string(f[1]).c_str());
    r.term_signal = std::atoi(std::string(f[2]).c_str());
    r.timed_out = f[3] == "1";
    r.out_dropped = static_cast<size_t>(std::strtoull(std::string(f[4]).c_str(), nullptr, 10));
    r.out = wire::Unescape(f[5]);
    r.err = wire::Unescape(f[6]);
    it->second->answer = std::move(r);
    uint64_t one = 1;
    (void)!::write(it->second->ready.get(), &one, sizeof one);
  }
}

Status Launcher::Send(const std::string& line) {
  std::lock_guard<std::mutex> lock(write_mu_);
  return proc_.WriteStdin(line, DeadlineIn(kAnswerGrace));
}

Result<SubprocessResult> Launcher::Run(const Job& job, const CancelToken* cancel) {
  auto w = std::make_shared<Waiting>();
  if (w->ready.get() < 0) return Status::Unavailable("no eventfd for the launcher's answer");
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.empty()) return Status::Unavailable("the sandbox's launcher " + broken_);
    id = ++next_id_;
    waiting_[id] = w;
  }
  struct Unlist {
    Launcher* l;
    uint64_t id;
    ~Unlist() {
      std::lock_guard<std::mutex> lock(l->mu_);
      l->waiting_.erase(id);
    }
  } unlist{this, id};

  std::string env;
  for (const auto& e : job.env) {
    if (!env.empty()) env += '\0';
    env += e;
  }
  std::string flags = std::string(job.bash ? "b" : "") + (job.merge_stderr ? "m" : "") + (job.cut_middle ? "c" : "");
  if (flags.empty()) flags = "-";
  const auto ms = static_cast<int64_t>(std::max(0.001, job.timeout_s) * 1000);
  const std::string request = std::to_string(id) + "\t" + std::to_string(ms) + "\t" + std::to_string(job.max_output) +
                              "\t" + flags + "\t" + wire::Escape(env) + "\t" + wire::Escape(job.command) + "\t" +
                              wire::Escape(job.input) + "\n";
  if (Status sent = Send(request); !sent.ok()) {
    Break("took no request: " + sent.message());
    return Status::Unavailable("not sent to the sandbox's launcher: " + sent.message());
  }
  bool killed = false;
  Deadline deadline = DeadlineIn(job.timeout_s + kAnswerGrace);
  for (;;) {
    pollfd p[2] = {{w->ready.get(), POLLIN, 0}, {cancel != nullptr ? cancel->wake_fd() : -1, POLLIN, 0}};
    const int n = cancel != nullptr && !killed && cancel->wake_fd() >= 0 ? 2 : 1;
    const double left = std::chrono::duration<double>(*deadline - SteadyClock::now()).count();
    if (left <= 0) {
      Break("did not answer within " + std::to_string(static_cast<int>(job.timeout_s + kAnswerGrace)) + " s");
      break;
    }
    (void)::poll(p, n, static_cast<int>(std::min(left * 1000 + 1, 1e9)));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (w->answer) break;
    }
    if (!killed && cancel != nullptr && cancel->cancelled()) {
      killed = true;
      (void)Send(std::to_string(id) + "\tkill\n");
      deadline = DeadlineIn(kAnswerGrace);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Result<SubprocessResult> r = std::move(*w->answer);
  if (r.ok() && killed) r->cancelled = true;
  return r;
}

}  // namespace mates::sandbox
