#include "store/watcher.h"

#include "core/guarded.h"

#include <dirent.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "core/log.h"

namespace mates {
namespace {

// IN_MOVE_SELF: a team's folder moved away whole (archived).
constexpr uint32_t kInotifyMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

Watcher::Options Watcher::OptionsFromVariables() {
  Watcher::Options o;
  const char* mode = std::getenv("MATES_WATCH");
  if (mode != nullptr && std::string_view(mode) == "poll") o.mode = Watcher::Mode::kPoll;
  const char* ms = std::getenv("MATES_POLL_MS");
  if (ms != nullptr) {
    long v = std::strtol(ms, nullptr, 10);
    if (v > 0) o.poll_interval = std::chrono::milliseconds(v);
  }
  return o;
}

namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

uint64_t StatSignature(const struct stat& st) {
  uint64_t h = Mix(0, st.st_ino);
  h = Mix(h, static_cast<uint64_t>(st.st_size));
  h = Mix(h, static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL +
                 static_cast<uint64_t>(st.st_mtim.tv_nsec));
  h = Mix(h, static_cast<uint64_t>(st.st_ctim.tv_sec) * 1000000000ULL +
                 static_cast<uint64_t>(st.st_ctim.tv_nsec));
  return h;
}

}  // namespace

Watcher::Subscription& Watcher::Subscription::operator=(Subscription&& o) noexcept {
  if (this != &o) {
    Reset();
    watcher_ = o.watcher_;
    id_ = o.id_;
    o.watcher_ = nullptr;
  }
  return *this;
}

void Watcher::Subscription::Reset() {
  if (watcher_ != nullptr) watcher_->Unsubscribe(id_);
  watcher_ = nullptr;
}

Watcher::Watcher(Options options) : mode_(options.mode), poll_interval_(options.poll_interval) {
  if (mode_ == Mode::kInotify) {
    inotify_fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!inotify_fd_.valid() || !stop_fd_.valid()) {
      LogWarning(std::string("inotify unavailable (") + std::strerror(errno) +
                 "); falling back to polling every " +
                 std::to_string(poll_interval_.count()) + " ms");
      mode_ = Mode::kPoll;
    }
  }
}

// At the first subscription, not before: a process that watches nothing (a
// command that sends and ends) has no thread of it, and a thread started
// before the process chose how to take its signals (`attach` takes SIGINT
// in sigwait) would get them.
void Watcher::StartLocked() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    NameThisThread("mates-watcher");
    RunGuarded("the file watcher", [this] { mode_ == Mode::kInotify ? InotifyLoop() : PollLoop(); });
  });
}

Watcher::~Watcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (stop_fd_.valid()) {
    uint64_t one = 1;
    ssize_t n = ::write(stop_fd_.get(), &one, sizeof one);
    (void)n;
  }
  if (thread_.joinable()) thread_.join();
}

bool Watcher::Matches(const std::string& pattern, std::string_view name) {
  if (pattern.empty()) return true;
  if (pattern[0] == '*') {
    std::string_view suffix = std::string_view(pattern).substr(1);
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  }
  return name == pattern;
}

void Watcher::Target::Fire() const {
  if (waker) waker->Notify();
  if (call) {
    try {
      (*call)();
    } catch (const std::exception& e) {
      LogWarning(std::string("a change subscriber failed: ") + e.what());
    }
  }
}

Result<Watcher::Subscription> Watcher::Subscribe(const fs::path& dir, std::string pattern,
                                                 std::shared_ptr<Waker> waker) {
  return Add(dir, std::move(pattern), Target{std::move(waker), nullptr});
}

Result<Watcher::Subscription> Watcher::Subscribe(const fs::path& dir, std::string pattern,
                                                 std::function<void()> call) {
  return Add(dir, std::move(pattern), Target{nullptr, std::make_shared<const std::function<void()>>(std::move(call))});
}

Result<Watcher::Subscription> Watcher::Add(const fs::path& dir, std::string pattern, Target target) {
  std::string key = dir.lexically_normal().string();
  std::lock_guard<std::mutex> lock(mu_);
  StartLocked();
  Dir& d = dirs_[key];
  if (mode_ == Mode::kInotify && d.wd < 0) {
    int wd = ::inotify_add_watch(inotify_fd_.get(), key.c_str(), kInotifyMask);
    if (wd < 0) {
      int err = errno;
      if (d.subs.empty()) dirs_.erase(key);
      if (err == ENOENT) return Status::NotFound("folder " + key + " does not exist");
      return Status::FromErrno("watch " + key, err);
    }
    d.wd = wd;
    wd_dirs_[wd] = key;
  }
  uint64_t id = next_id_++;
  Sub sub{key, std::move(pattern), std::move(target), 0};
  if (mode_ == Mode::kPoll) sub.poll_signature = Signature(sub.dir, sub.pattern);
  subs_.emplace(id, std::move(sub));
  d.subs.push_back(id);
  return Subscription(this, id);
}

void Watcher::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = subs_.find(id);
  if (it == subs_.end()) return;
  auto dit = dirs_.find(it->second.dir);
  subs_.erase(it);
  if (dit == dirs_.end()) return;
  auto& ids = dit->second.subs;
  std::erase(ids, id);
  if (ids.empty()) {
    if (dit->second.wd >= 0) {
      ::inotify_rm_watch(inotify_fd_.get(), dit->second.wd);
      wd_dirs_.erase(dit->second.wd);
    }
    dirs_.erase(dit);
  }
}

void Watcher::NotifyLocal(const fs::path& dir, std::string_view name) {
  std::vector<Target> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto dit = dirs_.find(dir.lexically_normal().string());
    if (dit == dirs_.end()) return;
    for (uint64_t id : dit->second.subs) {
      const Sub& s = subs_.at(id);
      if (Matches(s.pattern, name)) wake.push_back(s.target);
    }
  }
  for (const auto& w : wake) w.Fire();
}

void Watcher::InotifyLoop() {
  alignas(struct inotify_event) char buf[64 * 1024];
  struct pollfd fds[2] = {{inotify_fd_.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
  for (;;) {
    int r = ::poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      LogWarning(std::string("watcher poll failed: ") + std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    std::vector<Target> wake;
    for (;;) {
      ssize_t n = ::read(inotify_fd_.get(), buf, sizeof buf);
      if (n <= 0) break;  // EAGAIN: drained
      std::lock_guard<std::mutex> lock(mu_);
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<struct inotify_event*>(p);
        p += sizeof(struct inotify_event) + ev->len;
        if ((ev->mask & IN_Q_OVERFLOW) != 0) {
          // Events were lost: wake everyone so they rescan.
          for (auto& [id, s] : subs_) wake.push_back(s.target);
          continue;
        }
        auto wit = wd_dirs_.find(ev->wd);
        if (wit == wd_dirs_.end()) continue;
        auto dit = dirs_.find(wit->second);
        if (dit == dirs_.end()) continue;
        if ((ev->mask & IN_MOVE_SELF) != 0) {
          // The watch would follow the folder to where it went: end it. The
          // IN_IGNORED that follows wakes its waiters, as for a deletion.
          ::inotify_rm_watch(inotify_fd_.get(), ev->wd);
          continue;
        }
        if ((ev->mask & IN_IGNORED) != 0) {
          // The folder itself went away (team deleted): wake its waiters so
          // they notice, and forget the dead watch descriptor.
          for (uint64_t id : dit->second.subs) wake.push_back(subs_.at(id).target);
          dit->second.wd = -1;
          wd_dirs_.erase(wit);
          continue;
        }
        std::string_view name = ev->len > 0 ? std::string_view(ev->name) : std::string_view();
        for (uint64_t id : dit->second.subs) {
          const Sub& s = subs_.at(id);
          if (Matches(s.pattern, name)) wake.push_back(s.target);
        }
      }
      if (InotifyDrained(n, sizeof buf)) break;
    }
    for (const auto& w : wake) w.Fire();
  }
}

uint64_t Watcher::Signature(const std::string& dir, const std::string& pattern) {
  if (!pattern.empty() && pattern[0] != '*') {
    struct stat st {};
    if (::stat((dir + "/" + pattern).c_str(), &st) != 0) return 1;  // absent
    return StatSignature(st);
  }
  uint64_t h = 7;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 1;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == ".." || !Matches(pattern, name)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, 0) != 0) continue;
    // Order-independent combination: readdir order is not stable.
    h += Mix(std::hash<std::string_view>{}(name), StatSignature(st));
  }
  ::closedir(d);
  return h;
}

void Watcher::PollLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, poll_interval_, [this] { return stopping_; });
    if (stopping_) return;
    std::vector<std::pair<uint64_t, std::pair<std::string, std::string>>> watched;
    watched.reserve(subs_.size());
    for (const auto& [id, s] : subs_) watched.push_back({id, {s.dir, s.pattern}});
    lock.unlock();
    std::vector<std::pair<uint64_t, uint64_t>> sigs;
    sigs.reserve(watched.size());
    for (const auto& [id, dp] : watched) sigs.emplace_back(id, Signature(dp.first, dp.second));
    std::vector<Target> wake;
    lock.lock();
    for (const auto& [id, sig] : sigs) {
      auto it = subs_.find(id);
      if (it == subs_.end() || it->second.poll_signature == sig) continue;
      it->second.poll_signature = sig;
      wake.push_back(it->second.target);
    }
    lock.unlock();
    for (const auto& w : wake) w.Fire();
    lock.lock();
  }
}

}  // namespace mates
