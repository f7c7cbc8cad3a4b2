// See agent_sockets.h.
#include "sandbox/agent_sockets.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/unix_socket.h"
#include "sandbox/net_proxy.h"

namespace mates::sandbox {

AgentSockets::AgentSockets(fs::path dir, int backlog, Admit admit, Handle handle)
    : dir_(std::move(dir)), backlog_(backlog), admit_(std::move(admit)), handle_(std::move(handle)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_r_.reset(fds[0]);
    wake_w_.reset(fds[1]);
  }
  thread_ = std::thread([this] { Serve(); });
}

AgentSockets::~AgentSockets() {
  stop_ = true;
  if (wake_w_.valid()) (void)!::write(wake_w_.get(), "x", 1);
  thread_.join();
  std::vector<Worker> workers;
  {
    std::lock_guard<std::mutex> l(mu_);
    workers.swap(workers_);
    for (auto& ls : listeners_) ::unlink(ls->path.c_str());
  }
  for (auto& w : workers) w.thread.join();
}

Result<fs::path> AgentSockets::SocketFor(const std::string& team, const std::string& agent) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& ls : listeners_) {
    if (ls->who.team == team && ls->who.agent == agent) return ls->path;
  }
  MATES_RETURN_IF_ERROR(EnsureDir(dir_));
  ::chmod(dir_.c_str(), 0700);
  auto ls = std::make_unique<Listener>();
  ls->who = {team, agent};
  ls->path = dir_ / SocketDirName(team, agent) / "s";
  MATES_RETURN_IF_ERROR(EnsureDir(ls->path.parent_path()));
  ::chmod(ls->path.parent_path().c_str(), 0700);
  MATES_ASSIGN_OR_RETURN(ls->fd, ListenUnix(ls->path, backlog_));
  listeners_.push_back(std::move(ls));
  if (wake_w_.valid()) (void)!::write(wake_w_.get(), "x", 1);
  return listeners_.back()->path;
}

void AgentSockets::ReapLocked() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void AgentSockets::Serve() {
  while (!stop_.load()) {
    std::vector<struct pollfd> fds;
    std::vector<Caller> who;
    fds.push_back({wake_r_.get(), POLLIN, 0});
    {
      std::lock_guard<std::mutex> l(mu_);
      for (auto& ls : listeners_) {
        fds.push_back({ls->fd.get(), POLLIN, 0});
        who.push_back(ls->who);
      }
      ReapLocked();
    }
    int rc = ::poll(fds.data(), fds.size(), 1000);
    if (rc < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      char drain[64];
      while (::read(wake_r_.get(), drain, sizeof drain) > 0) {
      }
    }
    for (size_t i = 1; i < fds.size() && !stop_.load(); ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      int c = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ScopedFd conn(c);
      std::lock_guard<std::mutex> l(mu_);
      ReapLocked();
      if (std::string refused = admit_(who[i - 1], workers_.size()); !refused.empty()) {
        (void)SendAllTo(conn.get(), refused);
        continue;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      workers_.push_back({std::thread([this, done, caller = who[i - 1], conn = std::move(conn)]() mutable {
                            handle_(std::move(conn), caller);
                            done->store(true);
                          }),
                          done});
    }
  }
}

}  // namespace mates::sandbox
