#include "pg/listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "core/log.h"

namespace mates::pg {

std::string InboxKey(const std::string& team, const std::string& member) { return "i/" + team + "/" + member; }
std::string BoardKey(const std::string& team) { return "b/" + team; }
std::string TeamKey(const std::string& team) { return "t/" + team; }
std::string LogKey(const std::string& team) { return "l/" + team; }
std::string ActivityKey(const std::string& team) { return "a/" + team; }
std::string ForecastKey(const std::string& team) { return "f/" + team; }
std::string JournalKey(const std::string& team) { return "j/" + team; }
std::string MergeKey(const std::string& team) { return "m/" + team; }

std::string ChannelOf(const std::string& key) {
  // FNV-1a, 64 bits: a collision only wakes a waiter for nothing.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "mates_%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Listener::~Listener() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  Signal();
  if (thread_.joinable()) thread_.join();
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void Listener::Signal() {
  if (stop_fd_ < 0) return;
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
}

Status Listener::ConnectLocked(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  auto c = Connection::Open(target_, 10);
  lock.lock();
  if (!c.ok()) return c.status();
  conn_ = std::move(*c);
  listening_.clear();
  return Status::Ok();
}

void Listener::Run() {
  double backoff = 0.05;
  bool tried = false;       // a first attempt was made: later ones back off
  bool wake_all = false;    // the connection was lost: all look once it is back
  bool woke_down = false;   // since the loss, waiters were woken at a failed reconnect
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!conn_.ok()) {
      if (tried) {
        lock.unlock();
        pollfd p{stop_fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(backoff * 1000)) > 0 && (p.revents & POLLIN) != 0) {
          // A signal meant for a listening thread (a new subscription, say):
          // drained, or it would cut every later wait short and the thread
          // would retry without pause for as long as the server is away.
          uint64_t v = 0;
          (void)!::read(stop_fd_, &v, sizeof v);
        }
        lock.lock();
        if (stop_) break;
      }
      tried = true;
      if (Status s = ConnectLocked(lock); !s.ok()) {
        LogDebug("pg listener: " + s.message());
        ++failures_;
        cv_.notify_all();
        if (wake_all && !woke_down) {
          // The server is away for certain now. A waiter woken at the loss
          // may have looked while its own connection still answered (the
          // server shutting down ends its sessions one by one), and would
          // wait on without knowing: all look once more, and learn it.
          woke_down = true;
          ++told_all_;
          for (auto& [id, e] : subs_) e.notify(1);
        }
        backoff = std::min(backoff * 2, 2.0);
        continue;
      }
      if (wake_all) reconnects_.fetch_add(1);
      backoff = 0.05;
    }
    // LISTEN to what is wanted, UNLISTEN what is not any more.
    bool lost = false;
    for (const auto& [channel, n] : wanted_) {
      if (listening_.count(channel) > 0) continue;
      if (!conn_.ExecScript("LISTEN " + channel).ok()) {
        lost = true;
        break;
      }
      listening_.insert(channel);
    }
    for (auto it = listening_.begin(); !lost && it != listening_.end();) {
      if (wanted_.count(*it) > 0) {
        ++it;
        continue;
      }
      lost = !conn_.ExecScript("UNLISTEN " + *it).ok();
      it = listening_.erase(it);
    }
    if (lost || !conn_.ok()) {
      conn_ = Connection();
      wake_all = true;
      woke_down = false;
      continue;
    }
    // What arrived while those statements ran was queued by libpq as it
    // read their answers: the socket will not say so again.
    WakeLocked(conn_.TakeNotifications());
    cv_.notify_all();
    if (wake_all) {
      // Listening again after a loss: whatever was sent meanwhile is found
      // by a look.
      wake_all = false;
      ++told_all_;
      for (auto& [id, e] : subs_) e.notify(1);
    }
    lock.unlock();
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {conn_.socket(), POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (fds[0].revents & POLLIN) {
      uint64_t v = 0;
      (void)!::read(stop_fd_, &v, sizeof v);
    }
    Status s = Status::Ok();
    std::vector<Connection::Notification> received;
    if (n > 0 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      s = conn_.ConsumeInput();
      received = conn_.TakeNotifications();
    }
    lock.lock();
    WakeLocked(received);
    if (!s.ok() || !conn_.ok()) {
      LogDebug("pg listener: " + (s.ok() ? std::string("connection lost") : s.message()));
      conn_ = Connection();
      wake_all = true;
      woke_down = false;
      // Waiters look now (and learn that the store is unreachable), and
      // again once the connection is back.
      ++told_all_;
      for (auto& [id, e] : subs_) e.notify(1);
    }
  }
}

namespace {

// A notification's payload as a count of waiters to wake: 1 to
// Listener::kMaxWanted, 1 for anything else (most are sent empty).
int64_t WantedOf(std::string_view payload) {
  int64_t n = 0;
  auto [end, ec] = std::from_chars(payload.data(), payload.data() + payload.size(), n);
  if (ec != std::errc() || end != payload.data() + payload.size() || n < 1) return 1;
  return std::min(n, Listener::kMaxWanted);
}

}  // namespace

void Listener::WakeLocked(const std::vector<Connection::Notification>& received) {
  if (received.empty()) return;
  // Per channel, one call for what came together.
  std::map<std::string_view, int64_t> wanted;
  for (const auto& n : received) {
    int64_t& w = wanted[n.channel];
    w = std::min(w + WantedOf(n.payload), kMaxWanted);
  }
  // Counted before anyone is told (Told).
  for (const auto& [channel, w] : wanted) {
    auto it = told_.find(channel);
    if (it == told_.end()) it = told_.emplace(std::string(channel), 0).first;
    ++it->second;
  }
  for (auto& [id, e] : subs_) {
    if (auto it = wanted.find(e.channel); it != wanted.end()) e.notify(it->second);
  }
}

uint64_t Listener::Told(const std::string& key) {
  const std::string channel = ChannelOf(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = told_.find(channel);
  return told_all_ + (it == told_.end() ? 0 : it->second);
}

Result<Listener::Subscription> Listener::Subscribe(const std::string& key, std::shared_ptr<Waker> waker) {
  return Subscribe(key, [waker = std::move(waker)](int64_t) { waker->Notify(); });
}

Result<Listener::Subscription> Listener::Subscribe(const std::string& key, Notify notify) {
  std::string channel = ChannelOf(key);
  std::unique_lock<std::mutex> lock(mu_);
  if (!thread_.joinable()) {
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) return Status::FromErrno("eventfd", errno);
    thread_ = std::thread([this] { Run(); });
  }
  uint64_t id = next_id_++;
  subs_[id] = Entry{channel, std::move(notify)};
  ++wanted_[channel];
  uint64_t failures = failures_;
  Signal();
  bool listening = cv_.wait_for(lock, std::chrono::seconds(10), [&] {
    return listening_.count(channel) > 0 || failures_ > failures || stop_;
  });
  if (!listening || listening_.count(channel) == 0) {
    subs_.erase(id);
    if (--wanted_[channel] == 0) wanted_.erase(channel);
    return Status::Unavailable("cannot listen for wake-ups on " + target_.shown +
                               (listening ? ": the server cannot be reached" : ": no answer within 10 s"));
  }
  return Subscription(this, id);
}

void Listener::Unsubscribe(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = subs_.find(id);
    if (it == subs_.end()) return;
    if (--wanted_[it->second.channel] == 0) wanted_.erase(it->second.channel);
    subs_.erase(it);
  }
  Signal();
}

Listener::Subscription& Listener::Subscription::operator=(Subscription&& o) noexcept {
  if (this != &o) {
    if (l_ != nullptr) l_->Unsubscribe(id_);
    l_ = o.l_;
    id_ = o.id_;
    o.l_ = nullptr;
  }
  return *this;
}

Listener::Subscription::~Subscription() {
  if (l_ != nullptr) l_->Unsubscribe(id_);
}

}  // namespace mates::pg
