// cpp-httplib's server with a front door (DESIGN §19): a request's head is
// read, for every connection at once, by one thread with a deadline for
// the whole head, and only a complete head reaches a worker.
//
// cpp-httplib 0.11 (Debian's) hands each accepted connection to a worker
// at once, and the worker reads the head under a timeout that starts again
// with every byte: sixteen sockets sending a header line now and then held
// all of the dashboard's workers for as long as they liked, token or not.
// Upgrading the library would not help (no release bounds the head as a
// whole), and writing a server would throw away a tested parser. So this
// class keeps the library's parsing, routing and responses and replaces
// only the step between accept and parse: the library's accept loop gives
// every connection to FrontDoor (the overridden process_and_close_socket,
// run at once by an inline TaskQueue), whose thread waits on all of them
// with epoll, answers 408 at the deadline and 431 past the size bound,
// and passes a complete head to a worker pool, which runs the library's
// process_request for exactly one request over a Stream that first gives
// back what FrontDoor read. A connection kept alive returns to FrontDoor
// between requests. So a worker is held only by a request that has
// arrived whole (its body is then read under the route's own bounds, after
// the route's checks), and a connection that sends nothing useful costs a
// file descriptor among at most `max_waiting`, the oldest of which gives
// way to a new one.
//
// A stream's is_writable() also says false once the peer has gone (a
// closed browser tab), so a long response can end at once rather than at
// its next write. Used by the dashboard and `mates mock-llm`.
#pragma once

#include <httplib.h>

#include <thread>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace mates::llm {

struct FrontDoorLimits {
  size_t workers = 16;                               // requests served at once
  std::chrono::milliseconds head_deadline{5000};     // from connect (or the next request's first byte) to a whole head
  std::chrono::milliseconds idle_keep_alive{5000};   // a kept-alive connection's wait for its next request
  size_t max_head_bytes = 64 << 10;                  // 431 past it
  size_t max_waiting = 256;                          // connections whose head is still coming
};

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(FrontDoorLimits limits = {});
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // As the library's, with a listen backlog of SOMAXCONN (the library's is 5).
  bool bind_to_port(const std::string& host, int port, int socket_flags = 0);
  int bind_to_any_port(const std::string& host, int socket_flags = 0);
  // Connections waiting for their heads now (for tests and status).
  size_t waiting() const;
  // Serves what was bound on a thread named `name` (its failures logged as
  // `what`'s), returned once the listen loop runs: cpp-httplib 0.11's
  // stop() does nothing before that, so a Stop() right after a start
  // would leave it running forever (a few microseconds; the library
  // offers no signal).
  std::thread ServeInThread(const char* name, const char* what);

  class FrontDoor;

 private:
  bool process_and_close_socket(socket_t sock) override;
  // One request over `sock` whose first bytes `read` holds; back to the
  // front door if the connection stays open.
  void ServeOne(socket_t sock, std::string read, size_t served);

  std::shared_ptr<FrontDoor> door() const;

  const FrontDoorLimits limits_;
  mutable std::mutex door_mu_;
  std::shared_ptr<FrontDoor> door_;  // guarded by door_mu_; set by the listen thread
};

}  // namespace mates::llm
