// See http_server.h: the front door's epoll thread, the inline task queue
// that hands it the library's accepted connections, and the Stream a
// worker serves one request over.
#include "llm/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "core/guarded.h"

namespace mates::llm {
namespace {

using SteadyClock = std::chrono::steady_clock;

void CloseConnection(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// A short answer to a connection that never got to a worker; best effort
// (the socket may be full or gone), then closed.
void AnswerAndClose(int fd, const char* status_line) {
  const std::string answer =
      std::string("HTTP/1.1 ") + status_line + "\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  (void)!::send(fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  CloseConnection(fd);
}

// How long an answered connection's late bytes are dropped before it closes.
constexpr std::chrono::milliseconds kLinger{2000};

bool HeadIsWhole(const std::string& read) { return read.find("\r\n\r\n") != std::string::npos; }

int MillisecondsOf(std::chrono::microseconds d) {
  return static_cast<int>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(d).count()));
}

// What a worker reads a request from: first the bytes the front door read,
// then the socket; a peer that has hung up is not writable.
class ReplayStream final : public httplib::Stream {
 public:
  ReplayStream(int fd, std::string read, std::chrono::microseconds read_timeout,
               std::chrono::microseconds write_timeout)
      : fd_(fd), pending_(std::move(read)), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  bool is_readable() const override { return offset_ < pending_.size() || Poll(POLLIN, read_timeout_); }

  bool is_writable() const override {
    pollfd p{fd_, POLLOUT | POLLRDHUP, 0};
    int n;
    do {
      n = ::poll(&p, 1, MillisecondsOf(write_timeout_));
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0 && (p.revents & POLLOUT) != 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (offset_ >= pending_.size()) {
      pending_.clear();
      offset_ = 0;
      if (!Poll(POLLIN, read_timeout_)) return -1;
      char buf[4096];
      ssize_t n;
      do {
        n = ::recv(fd_, buf, sizeof buf, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pending_.assign(buf, static_cast<size_t>(n));
    }
    const size_t n = std::min(size, pending_.size() - offset_);
    std::memcpy(ptr, pending_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!head_done_) NoteHead(ptr, size);
    if (!Poll(POLLOUT, write_timeout_)) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

  // What was read past this request: the start of the next one.
  std::string TakeUnread() { return pending_.substr(offset_); }
  // Whether the connection ends with this response: it said so, or it is
  // a 400 (after a request the library could not parse, where the next one
  // would begin is unknown).
  bool AnsweredClose() const {
    std::string head = head_;
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
    return head.find("\r\nconnection: close\r\n") != std::string::npos || head.rfind("http/1.1 400 ", 0) == 0;
  }

 private:
  bool Poll(short events, std::chrono::microseconds timeout) const {
    pollfd p{fd_, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, MillisecondsOf(timeout));
    } while (n < 0 && errno == EINTR);
    return n > 0;
  }

  // The final response's head, kept (to 16 KiB) until its blank line. An
  // interim one (`100 Continue`, written before a body is read) is passed
  // over: were it taken for the answer, a 413's `Connection: close` after
  // it would go unseen, and the refused body's rest be read as the next
  // request (then closed on unread, a reset the client could meet before
  // its 413).
  void NoteHead(const char* ptr, size_t size) {
    head_.append(ptr, std::min(size, (16u << 10) - std::min<size_t>(head_.size(), 16u << 10)));
    for (;;) {
      const size_t end = head_.find("\r\n\r\n");
      if (end != std::string::npos && head_.rfind("HTTP/1.1 1", 0) == 0) {
        head_.erase(0, end + 4);
        continue;
      }
      head_done_ = end != std::string::npos || head_.size() >= (16u << 10);
      return;
    }
  }

  template <typename F>
  void Address(F name_of, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = 0;
    if (name_of(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      port = ntohs(in->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* in = reinterpret_cast<const sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
      port = ntohs(in->sin6_port);
    }
    ip = text;
  }

  const int fd_;
  std::string pending_;
  size_t offset_ = 0;
  const std::chrono::microseconds read_timeout_;
  const std::chrono::microseconds write_timeout_;
  std::string head_;
  bool head_done_ = false;
};

}  // namespace

class HttpServer::FrontDoor {
 private:
  struct Waiting {
    int fd;
    std::string read;
    size_t served;  // requests this connection has had
    SteadyClock::time_point deadline;
    bool started;  // its head has begun (a kept-alive one waits idle until then)
    bool closing;  // answered and ending: what it sends is dropped (Linger)
  };

 public:
  FrontDoor(HttpServer& server, const FrontDoorLimits& limits)
      : server_(server), limits_(limits), pool_(std::max<size_t>(1, limits.workers)) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = wake_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &e);
    thread_ = std::thread([this] {
      NameThisThread("mates-http-door");
      RunGuarded("the HTTP front door", [this] { Main(); });
    });
  }

  ~FrontDoor() { Shutdown(); }

  // A connection whose next request starts with `read` (the library's
  // accepted one: empty, `served` 0). Closed if the door is shut.
  void Add(int fd, std::string read, size_t served) { Take(Waiting{fd, std::move(read), served, {}, false, false}); }

  // A connection whose answer said it ends, though its client may still be
  // sending (a body refused unread): its write side is shut, and what
  // comes is read and dropped for a moment before it is closed, so that
  // the client reads the answer rather than a reset (a close with unread
  // data sends RST, which can overtake the answer).
  void Linger(int fd) {
    ::shutdown(fd, SHUT_WR);
    Take(Waiting{fd, {}, 0, {}, true, true});
  }

  void Take(Waiting w) {
    int fd = w.fd;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopping_) {
        incoming_.push_back(std::move(w));
        fd = -1;
      }
    }
    if (fd >= 0) {
      CloseConnection(fd);
      return;
    }
    Wake();
  }

  void Dispatch(int fd, std::string read, size_t served) {
    pool_.enqueue([this, fd, read = std::move(read), served]() mutable {
      server_.ServeOne(fd, std::move(read), served);
    });
  }

  // Waiting connections closed, then the workers finish what they serve.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    Wake();
    if (thread_.joinable()) thread_.join();
    pool_.shutdown();
    ::close(epoll_);
    ::close(wake_);
  }

  size_t waiting() const { return waiting_.load(); }

 private:
  void Wake() {
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  void Main() {
    std::unordered_map<int, Waiting> open;
    epoll_event events[64];
    for (;;) {
      int timeout = -1;
      const auto now = SteadyClock::now();
      for (const auto& [fd, w] : open) {
        const int ms = MillisecondsOf(std::chrono::duration_cast<std::chrono::microseconds>(w.deadline - now)) + 1;
        timeout = timeout < 0 ? ms : std::min(timeout, ms);
      }
      const int n = ::epoll_wait(epoll_, events, 64, timeout);
      std::deque<Waiting> arrived;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) {
          for (auto& w : incoming_) CloseConnection(w.fd);
          incoming_.clear();
          break;
        }
        arrived.swap(incoming_);
      }
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_) {
          uint64_t count;
          (void)!::read(wake_, &count, sizeof count);
          continue;
        }
        auto it = open.find(fd);
        if (it != open.end() && ReadMore(it->second)) open.erase(it);
      }
      for (auto& w : arrived) Enter(open, std::move(w));
      const auto later = SteadyClock::now();
      for (auto it = open.begin(); it != open.end();) {
        if (it->second.deadline > later) {
          ++it;
          continue;
        }
        Waiting& w = it->second;
        ::epoll_ctl(epoll_, EPOLL_CTL_DEL, w.fd, nullptr);
        if (w.closing || (w.read.empty() && w.served > 0)) {
          CloseConnection(w.fd);  // lingered enough, or an idle keep-alive ended as the library would
        } else {
          AnswerAndClose(w.fd, "408 Request Timeout");
        }
        it = open.erase(it);
      }
      waiting_.store(static_cast<size_t>(
          std::count_if(open.begin(), open.end(), [](const auto& kv) { return !kv.second.closing; })));
    }
    for (auto& [fd, w] : open) CloseConnection(fd);
    waiting_.store(0);
  }

  // A new or returning connection: served at once if its head is here,
  // else watched (making room by closing the one waiting longest).
  void Enter(std::unordered_map<int, Waiting>& open, Waiting w) {
    const auto now = SteadyClock::now();
    w.started = !w.read.empty() || w.served == 0;
    w.deadline = now + (w.closing ? kLinger : w.started ? limits_.head_deadline : limits_.idle_keep_alive);
    if (!w.closing && HeadIsWhole(w.read)) {
      Dispatch(w.fd, std::move(w.read), w.served);
      return;
    }
    if (open.size() >= std::max<size_t>(1, limits_.max_waiting)) {
      auto oldest = std::min_element(open.begin(), open.end(), [](const auto& a, const auto& b) {
        return a.second.deadline < b.second.deadline;
      });
      ::epoll_ctl(epoll_, EPOLL_CTL_DEL, oldest->first, nullptr);
      AnswerAndClose(oldest->first, "408 Request Timeout");
      open.erase(oldest);
    }
    epoll_event e{};
    e.events = EPOLLIN | EPOLLRDHUP;
    e.data.fd = w.fd;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, w.fd, &e) != 0) {
      CloseConnection(w.fd);
      return;
    }
    const int fd = w.fd;
    open.emplace(fd, std::move(w));
  }

  // Reads what is there; true when the connection leaves the door (its
  // head is whole and given to a worker, or it was closed).
  bool ReadMore(Waiting& w) {
    char buf[16 << 10];
    // A lingering client may send without pause: a turn of the loop reads
    // a bounded share of it, and the others get theirs.
    size_t dropped = 0;
    for (;;) {
      if (w.closing && dropped >= (256u << 10)) break;
      const ssize_t n = ::recv(w.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        Drop(w);
        CloseConnection(w.fd);
        return true;
      }
      if (w.closing) {
        dropped += static_cast<size_t>(n);
        continue;
      }
      if (!w.started) {
        w.started = true;
        w.deadline = SteadyClock::now() + limits_.head_deadline;
      }
      w.read.append(buf, static_cast<size_t>(n));
      if (HeadIsWhole(w.read)) {
        Drop(w);
        Dispatch(w.fd, std::move(w.read), w.served);
        return true;
      }
      if (w.read.size() > limits_.max_head_bytes) {
        Drop(w);
        AnswerAndClose(w.fd, "431 Request Header Fields Too Large");
        return true;
      }
    }
    return false;
  }

  void Drop(const Waiting& w) { ::epoll_ctl(epoll_, EPOLL_CTL_DEL, w.fd, nullptr); }

  HttpServer& server_;
  const FrontDoorLimits limits_;
  httplib::ThreadPool pool_;
  int epoll_ = -1;
  int wake_ = -1;
  std::thread thread_;
  std::atomic<size_t> waiting_{0};

  std::mutex mu_;
  std::deque<Waiting> incoming_;  // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
};

namespace {

// The library's task queue: runs each accepted connection's task at once,
// on the accept thread; the task (process_and_close_socket) only hands
// the connection to the front door. Shutting it down shuts the door.
class DoorQueue final : public httplib::TaskQueue {
 public:
  explicit DoorQueue(std::shared_ptr<HttpServer::FrontDoor> door) : door_(std::move(door)) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { door_->Shutdown(); }

 private:
  std::shared_ptr<HttpServer::FrontDoor> door_;
};

}  // namespace

HttpServer::HttpServer(FrontDoorLimits limits) : limits_(limits) {
  new_task_queue = [this] {
    auto door = std::make_shared<FrontDoor>(*this, limits_);
    {
      std::lock_guard<std::mutex> lock(door_mu_);
      door_ = door;
    }
    return new DoorQueue(std::move(door));
  };
}

// The library listens with a backlog of 5: a page's burst of connections
// past it waited a second for SYN to be sent again. Raised where it was
// bound, before the listen thread starts (a second listen() on the listen
// thread raced stop()'s close, as ThreadSanitizer said).
bool HttpServer::bind_to_port(const std::string& host, int port, int socket_flags) {
  if (!httplib::Server::bind_to_port(host, port, socket_flags)) return false;
  ::listen(svr_sock_, SOMAXCONN);
  return true;
}

int HttpServer::bind_to_any_port(const std::string& host, int socket_flags) {
  const int port = httplib::Server::bind_to_any_port(host, socket_flags);
  if (port > 0) ::listen(svr_sock_, SOMAXCONN);
  return port;
}

HttpServer::~HttpServer() {
  std::shared_ptr<FrontDoor> door;
  {
    std::lock_guard<std::mutex> lock(door_mu_);
    door.swap(door_);
  }
  if (door) door->Shutdown();
}

std::shared_ptr<HttpServer::FrontDoor> HttpServer::door() const {
  std::lock_guard<std::mutex> lock(door_mu_);
  return door_;
}

size_t HttpServer::waiting() const {
  auto d = door();
  return d ? d->waiting() : 0;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  std::shared_ptr<FrontDoor> door = this->door();
  if (!door) {
    CloseConnection(sock);
    return false;
  }
  door->Add(sock, {}, 0);
  return true;
}

void HttpServer::ServeOne(socket_t sock, std::string read, size_t served) {
  using std::chrono::microseconds;
  using std::chrono::seconds;
  ReplayStream stream(sock, std::move(read), seconds(read_timeout_sec_) + microseconds(read_timeout_usec_),
                      seconds(write_timeout_sec_) + microseconds(write_timeout_usec_));
  const bool last = served + 1 >= keep_alive_max_count_;
  bool closed = false;
  const bool ok = process_request(stream, last, closed, nullptr);
  std::shared_ptr<FrontDoor> door = this->door();
  if (!ok || !door || !is_running()) {
    CloseConnection(sock);
    return;
  }
  if (closed || last || stream.AnsweredClose()) {
    door->Linger(sock);
    return;
  }
  door->Add(sock, stream.TakeUnread(), served + 1);
}

std::thread HttpServer::ServeInThread(const char* name, const char* what) {
  std::thread t([this, name, what] {
    NameThisThread(name);
    RunGuarded(what, [this] { listen_after_bind(); });
  });
  while (!is_running()) std::this_thread::yield();
  return t;
}

}  // namespace mates::llm
